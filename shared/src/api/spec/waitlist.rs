//! The waitlists' routes (docs/waitlist.md), served by stock-api.

use super::*;

#[utoipa::path(post, path = "/skus/{sku}/waitlist", tag = "waitlist", operation_id = "joinWaitlist",
    description = "Puts the buyer on a sold-out SKU's waitlist (\"notify me\"); a repeat answers the same entry. \
                   When units come back the waitlisted buyers are told in join order, as many as units came back, \
                   each with an admission token for POST /orders. No body.",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "The buyer's entry again", body = WaitlistEntryView),
        (status = 201, description = "Joined now", body = WaitlistEntryView),
        (status = 400, description = "malformed_json: a body was sent that is not JSON (send none, or {})",
         body = ProblemBody, content_type = "application/problem+json"),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "No such SKU", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "not_sold_out (units are available: buy now), waitlist_full, too_many_waitlists",
         body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "not_waitlistable: not a plain stocked SKU (calendar, bundle, code pool, \
                                      unlimited, pay-time, supplier); validation_failed: a bad SKU or a body \
                                      other than {}", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn join_waitlist() {}

#[utoipa::path(delete, path = "/skus/{sku}/waitlist", tag = "waitlist", operation_id = "leaveWaitlist",
    description = "Takes the buyer off the SKU's waitlist; a told buyer's unit goes to the next in line. Leaving \
                   an entry that is already done (used, expired, left) answers 204 too.",
    params(("sku" = String, Path)),
    responses(
        (status = 204, description = "Off the waitlist"),
        NoValidToken,
        (status = 403, description = "Token lacks orders:write", body = GatewayError),
        (status = 404, description = "No such SKU, or the buyer never joined its waitlist", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 422, description = "not_waitlistable, or validation_failed (a bad SKU)", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn leave_waitlist() {}

#[utoipa::path(get, path = "/skus/{sku}/waitlist/me", tag = "waitlist", operation_id = "myWaitlistEntry",
    description = "The buyer's entry: position, state (WAITING, NOTIFIED, USED, EXPIRED, LEFT) and, once NOTIFIED, \
                   the admission token and when it expires. Sent with Cache-Control: private, no-store.",
    params(("sku" = String, Path)),
    responses(
        (status = 200, description = "The buyer's entry", body = WaitlistEntryView),
        NoValidToken,
        (status = 403, description = "Token lacks orders:read", body = GatewayError),
        (status = 404, description = "No such SKU, or the buyer never joined its waitlist", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 422, description = "not_waitlistable, or validation_failed (a bad SKU)", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn my_waitlist_entry() {}
