//! The reservation routes for other order systems.

use super::*;

#[utoipa::path(post, path = "/reservations", tag = "reservations", operation_id = "createReservation",
    request_body = ReservationRequest,
    responses(
        (status = 200, description = "The same reservation again", body = ReservationView),
        (status = 201, description = "Reserved", body = ReservationView),
        NotJson,
        NoValidToken,
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 409, description = "insufficient_stock, purchase_limit_exceeded or stock_too_fragmented",
         body = ProblemBody, content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid body, unknown SKU, or order_id reused with another body",
         body = ProblemBody, content_type = "application/problem+json"),
        (status = 429, description = "busy: the store is throttling this SKU; retry after Retry-After seconds",
         body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn create_reservation() {}

#[utoipa::path(post, path = "/reservations/{order_id}/confirm", tag = "reservations",
    operation_id = "confirmReservation",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "SOLD (or already SOLD)", body = ReservationView),
        NoValidToken,
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 404, description = "No such reservation of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "reservation_expired or oversold", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn confirm_reservation() {}

#[utoipa::path(post, path = "/reservations/{order_id}/release", tag = "reservations",
    operation_id = "releaseReservation",
    params(("order_id" = String, Path)),
    responses(
        (status = 200, description = "RELEASED (or already RELEASED)", body = ReservationView),
        NoValidToken,
        (status = 403, description = "Token lacks reservations:write", body = GatewayError),
        (status = 404, description = "No such reservation of the caller's", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "invalid_transition: already SOLD", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        Retry,
    ))]
pub(super) fn release_reservation() {}
