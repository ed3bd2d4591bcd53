//! The OpenAPI 3.1 document of the HTTP API, generated from the types in [`crate::api`]. The
//! committed copy is `docs/openapi.json` (a test keeps it equal to this; `make openapi` rewrites
//! it), the local stack serves it at `GET /openapi.json`, and a test checks that its routes and
//! their security equal the handlers' route tables and `template.yaml`.
//!
//! Each operation below documents every status the route can answer with, including the API
//! Gateway authorizer's 401/403, whose body is `{"message"}` rather than a problem.

#![allow(dead_code)] // the functions exist only to carry their `#[utoipa::path]` operation

use super::after_sale::{
    AdminOrderView, LockLineView, LockView, PaymentView, ReasonRequest, RefundView, RefundWebhook, RefundWebhookAnswer,
    RefundWebhookStatus, ReturnReceivedRequest, ShipRequest,
};
use super::campaigns::{
    Availability, CampaignAdjustmentRequest, CampaignItemRequest, CampaignItemView, CampaignRequest, CampaignViewBody,
};
use super::orders::{
    CreateOrderRequest, ItemRequest, OrderCode, OrderCodes, OrderItem, OrderList, OrderView, SupplierBookingView,
};
use super::payments::{CallbackAnswer, CallbackResult, PaymentCallback, PaymentStatus};
use super::reservations::{ReservationRequest, ReservationView, ReservedItem};
use super::stock::{
    AdjustmentRequest, CalendarDate, CalendarView, CodeBatchRequest, CodeBatchView, CodePoolView, CountersBody,
    JournalEntryBody, JournalPage, PutSkuRequest, SkuView,
};
use super::stripe::{StripeAnswer, StripeEvent, StripeEventData, StripeResult};
use crate::domain::model::{BundleChild, Deduct, InventoryModel, Management, Unit};
use crate::domain::supplier::{BookingStatus, SimOutcome, SupplierAdapter, SupplierConfig};
use crate::http::{Code, ProblemBody};
use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// What API Gateway itself answers when its JWT authorizer refuses a request.
#[derive(Debug, Serialize, ToSchema)]
pub struct GatewayError {
    pub message: String,
}

/// Name of the JWT bearer scheme (API Gateway's JWT authorizer; scopes from the `scope` claim).
pub const JWT: &str = "jwt";
/// Name of the webhook-signature scheme (`X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`).
pub const SIGNATURE: &str = "webhook_signature";
/// Name of Stripe's signature scheme (`Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`).
pub const STRIPE_SIGNATURE: &str = "stripe_signature";

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let c = doc.components.get_or_insert_with(Default::default);
        c.add_security_scheme(
            JWT,
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
        c.add_security_scheme(
            SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Signature",
                "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<raw body>\")>; at most 300 s old",
            ))),
        );
        c.add_security_scheme(
            STRIPE_SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Stripe-Signature",
                "Stripe's webhook signature: t=<unix seconds>,v1=<hex HMAC-SHA256(endpoint secret, \"<t>.<raw body>\")>, \
                 one or more v1 (any may match; other schemes ignored); within 300 s of now either way",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Holdfast",
        description = "Orders and stock reservations that never oversell. Errors are RFC 9457 \
                       application/problem+json with a stable `code`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(put_sku, adjust_sku, pause_sku, resume_sku, sku_journal, upload_codes, code_pool, get_sku, availability, calendar, my_availability, put_campaign,
          adjust_campaign, pause_campaign, resume_campaign, get_campaign, create_order, list_orders, get_order, order_codes, cancel_order, payment_callback,
          stripe_webhook,
          refund_order, confirm_receipt, return_order, admin_get_order, admin_ship_order, admin_return_received,
          admin_cancel_order, refund_webhook,
          create_reservation, confirm_reservation, release_reservation),
    components(schemas(Code, ProblemBody, GatewayError, ItemRequest, CreateOrderRequest, OrderItem, OrderView,
                       OrderList, PutSkuRequest, AdjustmentRequest, SkuView, ReservationRequest, ReservedItem,
                       ReservationView, PaymentCallback, PaymentStatus, CallbackAnswer, CallbackResult,
                       StripeEvent, StripeEventData, StripeAnswer, StripeResult,
                       CampaignItemRequest, CampaignRequest, CampaignAdjustmentRequest, CampaignItemView,
                       CampaignViewBody, Availability, ReasonRequest, ShipRequest, ReturnReceivedRequest,
                       RefundWebhook, RefundWebhookStatus, RefundWebhookAnswer, AdminOrderView, LockView,
                       LockLineView, PaymentView, RefundView,
                       JournalPage, JournalEntryBody, CountersBody, CalendarView, CalendarDate,
                       InventoryModel, Management, Unit, Deduct, BundleChild,
                       CodeBatchRequest, CodeBatchView, CodePoolView, OrderCode, OrderCodes,
                       SupplierConfig, SupplierAdapter, SimOutcome, SupplierBookingView, BookingStatus)),
    modifiers(&Security),
    tags((name = "stock"), (name = "campaigns"), (name = "orders"), (name = "payments"), (name = "reservations")),
)]
pub struct ApiDoc;

/// The document as pretty JSON with a final newline, exactly as committed.
pub fn openapi_json() -> String {
    let mut s = ApiDoc::openapi().to_pretty_json().unwrap_or_default();
    s.push('\n');
    s
}

#[utoipa::path(put, path = "/admin/skus/{sku}", tag = "stock", operation_id = "putSku",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = PutSkuRequest,
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Metadata updated", body = SkuView),
        (status = 201, description = "SKU created, with no stock", body = SkuView),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body or SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn put_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/adjustments", tag = "stock", operation_id = "adjustSku",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = AdjustmentRequest,
    security(("jwt" = ["stock:adjust"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "This adjustment_id was applied before; nothing changed", body = SkuView),
        (status = 201, description = "Applied", body = SkuView),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:adjust nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "insufficient_stock: removes more than is available", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body, or adjustment_id reused with another delta", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn adjust_sku() {}

#[utoipa::path(get, path = "/skus/{sku}", tag = "stock", operation_id = "getSku",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "The SKU and its stock", body = SkuView),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn get_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/pause", tag = "stock", operation_id = "pauseSku",
    description = "Stop-sale: no checkout takes the SKU until it is resumed.",
    params(("sku" = String, Path)),
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Paused (or already paused)", body = SkuView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn pause_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/resume", tag = "stock", operation_id = "resumeSku",
    params(("sku" = String, Path)),
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Selling again (or was not paused)", body = SkuView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn resume_sku() {}

#[utoipa::path(get, path = "/admin/skus/{sku}/journal", tag = "stock", operation_id = "skuJournal",
    params(("sku" = String, Path),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Page size, default 50"),
           ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    security(("jwt" = ["stock:adjust"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "The SKU's stock journal, newest first", body = JournalPage),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:adjust nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn sku_journal() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/codes", tag = "stock", operation_id = "uploadCodes",
    description = "Adds a batch of codes to a CODE_POOL SKU, once per batch_id. Codes already in the pool (or \
                   twice in the batch) are refused and counted; codes are stored sealed and never shown here.",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = CodeBatchRequest,
    security(("jwt" = ["stock:codes"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 201, description = "Added (duplicates refused and counted)", body = CodeBatchView),
        (status = 200, description = "A replay of a finished batch: its first answer", body = CodeBatchView),
        (status = 400, description = "Malformed JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Not a code pool, an empty or oversize batch, a bad code or batch_id, or a \
                                      batch_id reused with other codes",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn upload_codes() {}

#[utoipa::path(get, path = "/admin/skus/{sku}/codes", tag = "stock", operation_id = "codePool",
    params(("sku" = String, Path)),
    security(("jwt" = ["stock:codes"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "The pool's counts", body = CodePoolView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Not a code pool", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn code_pool() {}

#[utoipa::path(get, path = "/skus/{sku}/availability", tag = "stock", operation_id = "getAvailability",
    description = "Whether `quantity` units could be checked out now. Eventually consistent and cached briefly.",
    params(
        ("sku" = String, Path),
        ("quantity" = Option<u32>, Query, description = "Default 1", minimum = 1, maximum = 10000),
        ("campaign_id" = Option<String>, Query, description = "Check the purchase under this campaign",
         pattern = "^[A-Za-z0-9._-]{1,64}$"),
    ),
    responses(
        (status = 200, description = "The answer and its first reason", body = Availability),
        (status = 404, description = "Unknown SKU or campaign", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 422, description = "Invalid quantity or campaign_id, or the campaign does not sell the SKU",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn availability() {}

#[utoipa::path(get, path = "/skus/{sku}/calendar", tag = "stock", operation_id = "getCalendar",
    description = "Per-date stock of a SKU sold by date (unit `CALENDAR`), `from` to `to` inclusive, at most \
                   366 days; a date never stocked counts zero. Eventually consistent and cached briefly.",
    params(
        ("sku" = String, Path),
        ("from" = String, Query, description = "First date, YYYY-MM-DD", pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
        ("to" = String, Query, description = "Last date, YYYY-MM-DD", pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
    ),
    responses(
        (status = 200, description = "One entry per date", body = CalendarView),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Missing or bad dates, a range over 366 days, or a SKU not sold by date",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn calendar() {}

#[utoipa::path(get, path = "/skus/{sku}/availability/me", tag = "stock", operation_id = "getMyAvailability",
    description = "As `/availability`, with the caller's remaining allowance and unpaid checkouts.",
    params(
        ("sku" = String, Path),
        ("quantity" = Option<u32>, Query, description = "Default 1", minimum = 1, maximum = 10000),
        ("campaign_id" = Option<String>, Query, description = "Check the purchase under this campaign",
         pattern = "^[A-Za-z0-9._-]{1,64}$"),
    ),
    security(("jwt" = ["orders:read"])),
    responses(
        (status = 200, description = "The answer for the caller", body = Availability),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "Unknown SKU or campaign", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 422, description = "Invalid quantity or campaign_id, or the campaign does not sell the SKU",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn my_availability() {}

#[utoipa::path(put, path = "/admin/campaigns/{campaign_id}", tag = "campaigns", operation_id = "putCampaign",
    params(("campaign_id" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = CampaignRequest,
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Updated", body = CampaignViewBody),
        (status = 201, description = "Created", body = CampaignViewBody),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 409, description = "campaign_locked_field: the update changes what is fixed at creation",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body or unknown SKU", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn put_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/adjustments", tag = "campaigns",
    operation_id = "adjustCampaign",
    params(("campaign_id" = String, Path)),
    request_body = CampaignAdjustmentRequest,
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "This adjustment_id was applied before; nothing changed", body = CampaignViewBody),
        (status = 201, description = "Applied", body = CampaignViewBody),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "insufficient_stock: removes more quota than is available", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body, SKU not in the campaign, or adjustment_id reused",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn adjust_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/pause", tag = "campaigns", operation_id = "pauseCampaign",
    params(("campaign_id" = String, Path)),
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Paused (or already paused)", body = CampaignViewBody),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn pause_campaign() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/resume", tag = "campaigns",
    operation_id = "resumeCampaign",
    params(("campaign_id" = String, Path)),
    security(("jwt" = ["stock:catalogue"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "Selling again (or was not paused)", body = CampaignViewBody),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn resume_campaign() {}

#[utoipa::path(get, path = "/campaigns/{campaign_id}", tag = "campaigns", operation_id = "getCampaign",
    description = "Eventually consistent and cached briefly; `status` always follows the clock.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The campaign", body = CampaignViewBody),
        (status = 404, description = "Unknown campaign", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn get_campaign() {}

#[utoipa::path(post, path = "/orders", tag = "orders", operation_id = "createOrder",
    params(("Idempotency-Key" = String, Header, description = "One per checkout; a retry sends the same key",
            pattern = "^[!-~]{1,128}$")),
    request_body = CreateOrderRequest,
    security(("jwt" = ["orders:write"])),
    responses(
        (status = 201, description = "Order created (or, with header Idempotent-Replayed, the same order again)",
         body = OrderView),
        (status = 400, description = "Not JSON, or no Idempotency-Key", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 409, description = "insufficient_stock, purchase_limit_exceeded, stock_too_fragmented, \
                                      reservation_expired, too_many_pending_orders, or a campaign's \
                                      campaign_quota_exhausted, sale_not_started, sale_ended, sale_paused",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body, unknown SKU or campaign, SKU not in the campaign, or \
                                      Idempotency-Key reused with another body",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 429, description = "busy: the store is throttling this SKU; retry after Retry-After seconds",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry with the same Idempotency-Key", body = ProblemBody,
         content_type = "application/problem+json"),
    ))]
fn create_order() {}

#[utoipa::path(get, path = "/orders", tag = "orders", operation_id = "listOrders",
    params(
        ("limit" = Option<u32>, Query, description = "Page size, default 20", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "next_cursor of the previous page"),
    ),
    security(("jwt" = ["orders:read"])),
    responses(
        (status = 200, description = "The caller's orders, newest first", body = OrderList),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 422, description = "Invalid limit or cursor", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn list_orders() {}

#[utoipa::path(get, path = "/orders/{order_id}", tag = "orders", operation_id = "getOrder",
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:read"])),
    responses(
        (status = 200, description = "The order", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn get_order() {}

#[utoipa::path(get, path = "/orders/{order_id}/codes", tag = "orders", operation_id = "orderCodes",
    description = "The codes of the caller's paid order (vouchers, gift cards). Never cached (`no-store`).",
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:read"])),
    responses(
        (status = 200, description = "The order's codes (empty when it has no code pool line)", body = OrderCodes),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "not_paid: codes are shown once the order is paid; invalid_transition: the \
                                      codes went back to the pool (refunded)",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn order_codes() {}

#[utoipa::path(post, path = "/orders/{order_id}/cancel", tag = "orders", operation_id = "cancelOrder",
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:write"])),
    responses(
        (status = 200, description = "Cancelled (or already cancelled); its stock is released", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "No such order of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not pending payment", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn cancel_order() {}

#[utoipa::path(post, path = "/payments/callback", tag = "payments", operation_id = "paymentCallback",
    request_body = PaymentCallback,
    security(("webhook_signature" = [])),
    responses(
        (status = 200, description = "What the notice did", body = CallbackAnswer),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "Missing, wrong or stale signature", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 404, description = "Unknown order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch or too_many_payments", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid notice", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn payment_callback() {}

#[utoipa::path(post, path = "/orders/{order_id}/refund", tag = "orders", operation_id = "refundOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:write"])),
    responses(
        (status = 202, description = "REFUNDING: the stock goes back on sale and the payment is refunded", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not PAID (shipped orders are returned instead)", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn refund_order() {}

#[utoipa::path(post, path = "/orders/{order_id}/confirm-receipt", tag = "orders", operation_id = "confirmReceipt",
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:write"])),
    responses(
        (status = 200, description = "COMPLETED", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not SHIPPED", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn confirm_receipt() {}

#[utoipa::path(post, path = "/orders/{order_id}/return", tag = "orders", operation_id = "returnOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:write"])),
    responses(
        (status = 202, description = "RETURN_REQUESTED", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order of the caller's", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not SHIPPED or COMPLETED", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn return_order() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/ship", tag = "orders", operation_id = "adminShipOrder",
    request_body = ShipRequest,
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:admin"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "SHIPPED", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not PAID", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn admin_ship_order() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/return-received", tag = "orders", operation_id = "adminReturnReceived",
    request_body = ReturnReceivedRequest,
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:admin"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "RETURNED; the refund follows", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: no return was asked for", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn admin_return_received() {}

#[utoipa::path(post, path = "/admin/orders/{order_id}/cancel", tag = "orders", operation_id = "adminCancelOrder",
    request_body = ReasonRequest,
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:admin"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "CANCELLED; its stock is released", body = OrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: the order is not pending payment", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn admin_cancel_order() {}

#[utoipa::path(get, path = "/admin/orders/{order_id}", tag = "orders", operation_id = "adminGetOrder",
    params(("order_id" = String, Path)),
    security(("jwt" = ["orders:admin"]), ("jwt" = ["stock:admin"])),
    responses(
        (status = 200, description = "The order, its lock record, payments, refunds and journal entries", body = AdminOrderView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token has neither orders:admin nor stock:admin", body = GatewayError),
        (status = 404, description = "No such order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn admin_get_order() {}

#[utoipa::path(post, path = "/payments/refunds", tag = "payments", operation_id = "refundWebhook",
    request_body = RefundWebhook,
    security(("webhook_signature" = [])),
    responses(
        (status = 200, description = "What the confirmation did", body = RefundWebhookAnswer),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "Missing, wrong or stale signature", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "Unknown order or refund", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch", body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid confirmation", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn refund_webhook() {}

#[utoipa::path(post, path = "/payments/stripe", tag = "payments", operation_id = "stripeWebhook",
    request_body = StripeEvent,
    security(("stripe_signature" = [])),
    responses(
        (status = 200, description = "What the event did (`ignored`: a type Holdfast does not act on, or no \
                                      metadata.order_id)", body = StripeAnswer),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "Missing, wrong, stale or future Stripe-Signature", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 404, description = "Unknown order (or refund)", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch or too_many_payments", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Event over 256 KiB", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "A field Holdfast reads is invalid", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn stripe_webhook() {}

#[utoipa::path(post, path = "/reservations", tag = "reservations", operation_id = "createReservation",
    request_body = ReservationRequest,
    security(("jwt" = ["reservations:write"])),
    responses(
        (status = 200, description = "The same reservation again", body = ReservationView),
        (status = 201, description = "Reserved", body = ReservationView),
        (status = 400, description = "Not JSON", body = ProblemBody, content_type = "application/problem+json"),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 409, description = "insufficient_stock, purchase_limit_exceeded or stock_too_fragmented",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Invalid body, unknown SKU, or order_id reused with another body",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 429, description = "busy: the store is throttling this SKU; retry after Retry-After seconds",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn create_reservation() {}

#[utoipa::path(post, path = "/reservations/{order_id}/confirm", tag = "reservations",
    operation_id = "confirmReservation",
    params(("order_id" = String, Path)),
    security(("jwt" = ["reservations:write"])),
    responses(
        (status = 200, description = "SOLD (or already SOLD)", body = ReservationView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 404, description = "No such reservation of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "reservation_expired or oversold", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn confirm_reservation() {}

#[utoipa::path(post, path = "/reservations/{order_id}/release", tag = "reservations",
    operation_id = "releaseReservation",
    params(("order_id" = String, Path)),
    security(("jwt" = ["reservations:write"])),
    responses(
        (status = 200, description = "RELEASED (or already RELEASED)", body = ReservationView),
        (status = 401, description = "No valid token", body = GatewayError),
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 404, description = "No such reservation of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: already SOLD", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry", body = ProblemBody, content_type = "application/problem+json"),
    ))]
fn release_reservation() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_document_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(committed == openapi_json(), "docs/openapi.json is stale: run `make openapi` and commit it");
    }

    #[test]
    fn the_document_is_openapi_3_1_and_names_every_code() {
        let v: serde_json::Value = serde_json::from_str(&openapi_json()).unwrap();
        assert_eq!(v["openapi"], "3.1.0");
        let codes = &v["components"]["schemas"]["Code"]["enum"];
        for c in Code::ALL {
            assert!(codes.as_array().unwrap().iter().any(|x| x == c.as_str()), "{c:?} missing");
        }
    }
}
