//! The order routes: checkout, the buyer's orders and after-sale, and the admin order routes.

use super::*;

#[utoipa::path(post, path = "/orders", tag = "orders", operation_id = "createOrder",
    params(("Idempotency-Key" = String, Header, description = "One per checkout; a retry sends the same key",
            pattern = "^[!-~]{1,128}$")),
    request_body = CreateOrderRequest,
    responses(
        (status = 201, description = "Order created (or, with header Idempotent-Replayed, the same order again)",
         body = OrderView),
        (status = 202, description = "RECORDED: every line is of a BACKORDER SKU and the store was out of reach; \
         the checkout is recorded and written as an order under order_id once the store answers (GET \
         /orders/{order_id} is 404 until then; a retry with the same Idempotency-Key answers the order once it is \
         written)", body = RecordedCheckoutView),
        (status = 400, description = "Not JSON, or no Idempotency-Key", body = ProblemBody,
         content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write (`message`), or a queued campaign's item without \
         a valid admission token, or an admission_token that is no valid waitlist token of this buyer for a line's \
         SKU (docs/waitlist.md): admission_required, admission_invalid (a problem)",
         content((GatewayError = "application/json"), (ProblemBody = "application/problem+json"))),
        (status = 409, description = "insufficient_stock, purchase_limit_exceeded, stock_too_fragmented, \
                                      reservation_expired, too_many_pending_orders, admission_used, or a campaign's \
                                      campaign_quota_exhausted, sale_not_started, sale_ended, sale_paused",
         body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body, unknown SKU or campaign, SKU not in the campaign, or \
                                      Idempotency-Key reused with another body",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 429, description = "busy: the store is throttling this SKU; rate_limited: the SKU's or campaign \
         item's admission rate is used up this second (nothing was touched). Retry after Retry-After seconds",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry with the same Idempotency-Key; sales_closed: the sales switch is not OPEN",
         body = ProblemBody, content_type = "application/problem+json"),
    ))]
pub(super) fn create_order() {}

#[utoipa::path(get, path = "/orders", tag = "orders", operation_id = "listOrders",
    params(
        ("limit" = Option<u32>, Query, description = "Page size, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "The caller's orders, newest first", body = OrderList),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 422, description = "Invalid limit or cursor", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn list_orders() {}

#[utoipa::path(get, path = "/orders/{order_id}", tag = "orders", operation_id = "getOrder",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "The order", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn get_order() {}

#[utoipa::path(get, path = "/orders/{order_id}/codes", tag = "orders", operation_id = "orderCodes",
    description = "The codes of the caller's paid order (vouchers, gift cards). Never cached (`no-store`).",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "The order's codes (empty when it has no code pool line)", body = OrderCodes),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "not_paid: codes are shown once the order is paid; invalid_transition: the \
                                      codes went back to the pool (refunded)",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn order_codes() {}

#[utoipa::path(post, path = "/orders/{order_id}/cancel", tag = "orders", operation_id = "cancelOrder",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "Cancelled (or already cancelled); its stock is released", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not pending payment", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn cancel_order() {}

#[utoipa::path(post, path = "/orders/{order_id}/payments", tag = "orders", operation_id = "startPayment",
    params(("order_id" = String, Path)),
    request_body(content = StartPaymentRequest, description = "Optional; an empty body uses the configured provider"),
    responses(
        (status = 201, description = "A payment was created at the provider; the order is PAYING", body = PaymentStarted),
        (status = 200, description = "The order's open payment, again", body = PaymentStarted),
        (status = 400, description = "Malformed JSON", body = ProblemBody, content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not payable (paid, closed, past its \
                                      deadline); too_many_payments: too many attempts", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "validation_failed: unknown provider", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 502, description = "provider_refused: the provider refused to create the payment", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry (the provider did not answer)", body = ProblemBody,
         content_type = "application/problem+json"),
    ))]
pub(super) fn start_payment() {}

#[utoipa::path(post, path = "/orders/{order_id}/refund", tag = "orders", operation_id = "refundOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    responses(
        (status = 202, description = "REFUNDING: the stock goes back on sale and the payment is refunded", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not PAID (shipped orders are returned instead)", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn refund_order() {}

#[utoipa::path(post, path = "/orders/{order_id}/confirm-receipt", tag = "orders", operation_id = "confirmReceipt",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "COMPLETED", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not SHIPPED", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn confirm_receipt() {}

#[utoipa::path(post, path = "/orders/{order_id}/return", tag = "orders", operation_id = "returnOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    responses(
        (status = 202, description = "RETURN_REQUESTED", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not SHIPPED or COMPLETED", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn return_order() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/ship", tag = "orders", operation_id = "adminShipOrder",
    request_body = ShipRequest,
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "SHIPPED", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not PAID, its stock is not confirmed yet, units of a BACKORDER line still wait for stock, or its supplier has not issued its codes yet; oversold: its stock was lost and its money is refunded", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_ship_order() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/return-received", tag = "orders", operation_id = "adminReturnReceived",
    request_body = ReturnReceivedRequest,
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "RETURNED; the refund follows", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: no return was asked for", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_return_received() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/cancel", tag = "orders", operation_id = "adminCancelOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "CANCELLED; its stock is released", body = OrderView),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        NotJson,
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not pending payment", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_cancel_order() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/refund-decision", tag = "orders", operation_id = "adminRefundDecision",
    params(("order_id" = String, Path)),
    request_body = RefundDecisionRequest,
    responses(
        (status = 200, description = "Decided: REFUNDING (approved; a code order's codes are voided) or PAID \
                                      (rejected); the same decision again answers the order as it is", body = OrderView),
        (status = 400, description = "Malformed JSON", body = ProblemBody, content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "Token lacks orders:admin", body = GatewayError),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: no refund is waiting for review; codes_redeemed: a code \
                                      of the order was redeemed, it is never refunded", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "validation_failed", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_refund_decision() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/codes/redeem", tag = "orders", operation_id = "adminRedeemCode",
    description = "The merchant's system marks one of a paid order's codes redeemed (the gift card was used), \
                   once. A redeemed code's order is never refunded (docs/code-pools.md, \"Redemption\").",
    params(("order_id" = String, Path)),
    request_body = RedeemCodeRequest,
    responses(
        (status = 200, description = "Redeemed now (the code masked)", body = CodeRedemption),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "No such order, or the code is not one of its codes", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "already_redeemed: redeemed before (the detail names when); code_expired: past \
                                      its expire time; codes_voided: refunded after it was shown; invalid_transition: \
                                      never shown to its buyer, refunded before it was shown, or not sold", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "validation_failed: the code is empty, too long or has control characters", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_redeem_code() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/codes/reissue", tag = "orders", operation_id = "adminReissueCodes",
    description = "Asks the supplier once more for a paid SUPPLIER_CODES order's codes, after its automatic \
                   retries (1, 2 and 4 s) were spent. Idempotent at the supplier (one set per booking); nothing \
                   is written unless it issues them (docs/suppliers.md, \"Codes issued by the supplier\").",
    params(("order_id" = String, Path)),
    request_body = ReissueCodesRequest,
    responses(
        (status = 200, description = "Issued now and recorded on the order", body = CodesReissued),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order has no supplier codes, is not PAID, or its \
                                      codes are already issued", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "validation_failed: reason missing, empty or too long", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "temporarily_unavailable: the supplier did not issue them (retry later)",
         body = ProblemBody, content_type = "application/problem+json"),
    ))]
pub(super) fn admin_reissue_codes() {}

#[utoipa::path(get, path = "/admin/orders/{order_id}", tag = "orders", operation_id = "adminGetOrder",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "The order, its lock record, payments, refunds and journal entries", body = AdminOrderView),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_get_order() {}

#[utoipa::path(get, path = "/admin/orders/{order_id}/log", tag = "orders", operation_id = "adminOrderLog",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "Every status change of the order, oldest first, with its actor and cause \
                                      (docs/order-record.md)", body = OrderLogView),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_order_log() {}

#[utoipa::path(get, path = "/admin/refund-reviews", tag = "orders", operation_id = "listRefundReviews",
    params(("limit" = Option<u32>, Query, description = "1..=100, default 20", minimum = 1, maximum = 100),
           ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses(
        (status = 200, description = "Buyers' refunds held for review, oldest request first", body = RefundReviewList),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 422, description = "validation_failed: limit or cursor", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn list_refund_reviews() {}

#[utoipa::path(get, path = "/admin/settlement/{date}", tag = "orders", operation_id = "getSettlement",
    params(("date" = String, Path, description = "YYYY-MM-DD (UTC), not in the future")),
    responses(
        (status = 200, description = "The day compared afresh: matches and every mismatch by kind", body = SettlementReport),
        NoValidToken,
        (status = 403, description = "Token lacks orders:admin", body = GatewayError),
        (status = 422, description = "validation_failed: not a date, or in the future", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry (a provider did not answer)", body = ProblemBody,
         content_type = "application/problem+json"),
    ))]
pub(super) fn get_settlement() {}

#[utoipa::path(post, path = "/admin/settlement/{date}/run", tag = "orders", operation_id = "runSettlement",
    params(("date" = String, Path, description = "YYYY-MM-DD (UTC), not in the future")),
    responses(
        (status = 200, description = "The day settled now; its mismatches are counted (metric and alarm) and logged",
         body = SettlementReport),
        NoValidToken,
        (status = 403, description = "Token lacks orders:admin", body = GatewayError),
        TooLarge,
        (status = 422, description = "validation_failed: not a date, or in the future", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry (a provider did not answer)", body = ProblemBody,
         content_type = "application/problem+json"),
    ))]
pub(super) fn run_settlement() {}

#[utoipa::path(get, path = "/admin/ledger/{date}", tag = "orders", operation_id = "getLedger",
    params(("date" = String, Path, description = "YYYY-MM-DD (UTC), not in the future")),
    responses(
        (status = 200, description = "The day's ledgers compared as of now: totals, and every difference named \
         (a non-empty report counts LedgerDifferences, which is alarmed)", body = LedgerReport),
        NoValidToken,
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 422, description = "validation_failed: not a date, or in the future", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn get_ledger() {}
