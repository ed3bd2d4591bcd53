//! The waiting room's routes (docs/waiting-room.md), served by queue-api.

use super::*;

#[utoipa::path(post, path = "/campaigns/{campaign_id}/queue", tag = "queue", operation_id = "joinQueue",
    description = "Takes the buyer's ticket in a queued campaign's waiting room; a repeat answers the same ticket. \
                   A campaign that can sell nothing more answers state SOLD_OUT and issues no ticket.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The buyer's ticket again, or SOLD_OUT without a ticket", body = QueuePlace),
        (status = 201, description = "A ticket taken now", body = QueuePlace),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "Unknown campaign, or it has no queue", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "campaign_ended", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn join_queue() {}

#[utoipa::path(get, path = "/campaigns/{campaign_id}/queue/me", tag = "queue", operation_id = "myQueuePlace",
    description = "Where the buyer stands: position, state, ETA, and once ADMITTED the admission token that \
                   POST /orders (or POST /campaigns/{campaign_id}/checkout) spends. Writes nothing but the room's \
                   rare clock moves (a halt, a resume, a drawn queue's start).",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The buyer's place", body = QueuePlace),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "Unknown campaign, no queue, or no ticket of this buyer", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn my_queue_place() {}

#[utoipa::path(get, path = "/campaigns/{campaign_id}/queue", tag = "queue", operation_id = "getQueue",
    description = "The queue's public face: rate, the draw's commitment (seed_sha256; the seed and the counters \
                   at the start once it started), tickets taken and positions admitted.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The queue", body = QueuePublic),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "Unknown campaign, or it has no queue", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn get_queue() {}

#[utoipa::path(post, path = "/campaigns/{campaign_id}/checkout", tag = "queue", operation_id = "queuedCheckout",
    description = "POST /orders for a queued campaign's items, served by the waiting room's own function: every \
                   line names this campaign, and the body carries the admission token.",
    params(("campaign_id" = String, Path),
           ("Idempotency-Key" = String, Header, description = "One per checkout; a retry sends the same key",
            pattern = "^[!-~]{1,128}$")),
    request_body = CreateOrderRequest,
    responses(
        (status = 201, description = "Order created (or, with header Idempotent-Replayed, the same order again)",
         body = OrderView),
        (status = 400, description = "Not JSON, or no Idempotency-Key", body = ProblemBody,
         content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "admission_required, admission_invalid (or the token lacks orders:write)",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "Malformed campaign id", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "admission_used, insufficient_stock, campaign_quota_exhausted, sale_not_started, \
                                      sale_ended, sale_paused, too_many_pending_orders", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body, a line of another campaign, unknown SKU or campaign",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 429, description = "busy", body = ProblemBody, content_type = "application/problem+json"),
        (status = 503, description = "Retry with the same Idempotency-Key; sales_closed", body = ProblemBody,
         content_type = "application/problem+json"),
    ))]
pub(super) fn queued_checkout() {}

#[utoipa::path(get, path = "/admin/campaigns/{campaign_id}/queue", tag = "queue", operation_id = "adminQueue",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "Tickets taken, positions admitted, halts, the stock as the room sees it, the \
         tail's ETA", body = QueueStatsView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign, or it has no queue", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn admin_queue() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/queue/pause", tag = "queue", operation_id = "pauseQueue",
    description = "Stops admitting (positions admitted stay admitted) until resumed.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The queue, halted", body = QueueStatsView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign, or it has no queue", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn pause_queue() {}

#[utoipa::path(post, path = "/admin/campaigns/{campaign_id}/queue/resume", tag = "queue", operation_id = "resumeQueue",
    description = "Admits again from the next position, one step of the rate later.",
    params(("campaign_id" = String, Path)),
    responses(
        (status = 200, description = "The queue, admitting", body = QueueStatsView),
        NoValidToken,
        (status = 403, description = "Token has neither stock:catalogue nor stock:admin", body = GatewayError),
        (status = 404, description = "Unknown campaign, or it has no queue", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn resume_queue() {}
