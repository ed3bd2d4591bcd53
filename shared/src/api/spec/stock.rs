//! The stock routes: SKUs, adjustments, stop-sale, the journal, code pools and the public reads.

use super::*;

#[utoipa::path(put, path = "/admin/skus/{sku}", tag = "stock", operation_id = "putSku",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = PutSkuRequest,
    responses(
        (status = 200, description = "Metadata updated", body = SkuView),
        (status = 201, description = "SKU created, with no stock", body = SkuView),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        TooLarge,
        (status = 422, description = "Invalid body or SKU", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn put_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/adjustments", tag = "stock", operation_id = "adjustSku",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = AdjustmentRequest,
    responses(
        (status = 200, description = "This adjustment_id was applied before; nothing changed", body = SkuView),
        (status = 201, description = "Applied", body = SkuView),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token has neither stock:adjust nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "insufficient_stock: removes more than is available", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body, or adjustment_id reused with another delta", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn adjust_sku() {}

#[utoipa::path(get, path = "/skus/{sku}", tag = "stock", operation_id = "getSku",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "The SKU and its stock", body = SkuView),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn get_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/pause", tag = "stock", operation_id = "pauseSku",
    description = "Stop-sale: no checkout takes the SKU until it is resumed.",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "Paused (or already paused)", body = SkuView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn pause_sku() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/resume", tag = "stock", operation_id = "resumeSku",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "Selling again (or was not paused)", body = SkuView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn resume_sku() {}

#[utoipa::path(get, path = "/admin/skus/{sku}/journal", tag = "stock", operation_id = "skuJournal",
    params(("sku" = String, Path),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Page size, default 50"),
           ("cursor" = Option<String>, Query, description = "next_cursor of the previous page")),
    responses(
        (status = 200, description = "The SKU's stock journal, newest first", body = JournalPage),
        NoValidToken,
        (status = 403, description = "Token has neither stock:adjust nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn sku_journal() {}

#[utoipa::path(post, path = "/admin/skus/{sku}/codes", tag = "stock", operation_id = "uploadCodes",
    description = "Adds a batch of codes to a CODE_POOL SKU, once per batch_id. Codes already in the pool (or \
                   twice in the batch) are refused and counted; codes are stored sealed and never shown here.",
    params(("sku" = String, Path, pattern = "^[A-Za-z0-9._-]{1,64}$")),
    request_body = CodeBatchRequest,
    responses(
        (status = 201, description = "Added (duplicates refused and counted)", body = CodeBatchView),
        (status = 200, description = "A replay of a finished batch: its first answer", body = CodeBatchView),
        (status = 400, description = "Malformed JSON", body = ProblemBody, content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Not a code pool, an empty or oversize batch, a bad code or batch_id, or a \
                                      batch_id reused with other codes",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn upload_codes() {}

#[utoipa::path(get, path = "/admin/skus/{sku}/codes", tag = "stock", operation_id = "codePool",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "The pool's counts", body = CodePoolView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:codes nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Not a code pool", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn code_pool() {}

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
        Retry,
    ))]
pub(super) fn availability() {}

#[utoipa::path(get, path = "/skus/{sku}/calendar", tag = "stock", operation_id = "getCalendar",
    description = "Per-date stock of a SKU sold by date (unit `CALENDAR`), `from` to `to` inclusive, at most \
                   62 days (anonymous view cap); a date never stocked counts zero. Eventually consistent and cached briefly.",
    params(
        ("sku" = String, Path),
        ("from" = String, Query, description = "First date, YYYY-MM-DD", pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
        ("to" = String, Query, description = "Last date, YYYY-MM-DD", pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
    ),
    responses(
        (status = 200, description = "One entry per date", body = CalendarView),
        (status = 404, description = "Unknown SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "Missing or bad dates, a range over 62 days, or a SKU not sold by date",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn calendar() {}

#[utoipa::path(get, path = "/skus/{sku}/availability/me", tag = "stock", operation_id = "getMyAvailability",
    description = "As `/availability`, with the caller's remaining allowance and unpaid checkouts.",
    params(
        ("sku" = String, Path),
        ("quantity" = Option<u32>, Query, description = "Default 1", minimum = 1, maximum = 10000),
        ("campaign_id" = Option<String>, Query, description = "Check the purchase under this campaign",
         pattern = "^[A-Za-z0-9._-]{1,64}$"),
    ),
    responses(
        (status = 200, description = "The answer for the caller", body = Availability),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "Unknown SKU or campaign", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 422, description = "Invalid quantity or campaign_id, or the campaign does not sell the SKU",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn my_availability() {}
