//! The payment provider's webhooks: the payment callback, refund confirmations and Stripe.

use super::*;

#[utoipa::path(post, path = "/payments/callback", tag = "payments", operation_id = "paymentCallback",
    request_body = PaymentCallback,
    responses(
        (status = 200, description = "What the notice did", body = CallbackAnswer),
        NotJson,
        (status = 401, description = "Missing, wrong or stale signature", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 404, description = "Unknown order", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch or too_many_payments", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid notice", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn payment_callback() {}

#[utoipa::path(post, path = "/payments/refunds", tag = "payments", operation_id = "refundWebhook",
    request_body = RefundWebhook,
    responses(
        (status = 200, description = "What the confirmation did", body = RefundWebhookAnswer),
        NotJson,
        (status = 401, description = "Missing, wrong or stale signature (signed with the refund confirmation key, \
                                      never the payment callback's)", body = ProblemBody, content_type = "application/problem+json"),
        (status = 404, description = "Unknown order or refund", body = ProblemBody, content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch; or invalid_transition: the refund is not ISSUED to this provider \
                                      under this provider_refund_id (nothing changes)", body = ProblemBody,
         content_type = "application/problem+json"),
        TooLarge,
        (status = 422, description = "Invalid confirmation", body = ProblemBody, content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn refund_webhook() {}

#[utoipa::path(post, path = "/payments/stripe", tag = "payments", operation_id = "stripeWebhook",
    request_body = StripeEvent,
    responses(
        (status = 200, description = "What the event did (`ignored`: a type Holdfast does not act on, or no \
                                      metadata.order_id)", body = StripeAnswer),
        NotJson,
        (status = 401, description = "Missing, wrong, stale or future Stripe-Signature", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 404, description = "Unknown order (or refund)", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 409, description = "amount_mismatch or too_many_payments", body = ProblemBody,
         content_type = "application/problem+json"),
        (status = 413, description = "Event over 256 KiB", body = ProblemBody, content_type = "application/problem+json"),
        (status = 422, description = "A field Holdfast reads is invalid", body = ProblemBody,
         content_type = "application/problem+json"),
        Retry,
    ))]
pub(super) fn stripe_webhook() {}
