//! The function registry: every Lambda function by name and how it is invoked. Pure data, so the
//! composition root (SDK budgets per trigger), the Lambda runtime and the local runner can all
//! read it without depending on the handlers.

/// How a function is invoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `HttpApi` events (API Gateway HTTP API, payload v2).
    Http,
    /// An `SQS` event source with partial batch responses.
    Sqs,
    /// A `DynamoDB` stream event source with partial batch responses.
    Stream,
    /// A `Schedule` / `ScheduleV2` event.
    Schedule,
}

/// Every function: (name = the binary and `functions/<name>` crate, trigger).
pub const FUNCTIONS: &[(&str, Trigger)] = &[
    ("create-order", Trigger::Http),
    ("orders-api", Trigger::Http),
    ("payment-callback", Trigger::Http),
    ("queue-api", Trigger::Http),
    ("reservations", Trigger::Http),
    ("stock-api", Trigger::Http),
    ("stock-read", Trigger::Http),
    ("publish-events", Trigger::Stream),
    ("stock-journal", Trigger::Stream),
    ("stock-events", Trigger::Sqs),
    ("payment-timeout", Trigger::Sqs),
    ("reservation-check", Trigger::Sqs),
    ("reconcile", Trigger::Schedule),
    ("reconcile-worker", Trigger::Sqs),
    ("refunds", Trigger::Sqs),
    // the WebSocket API's routes too (handlers::push_api::WS_ROUTES; docs/push.md)
    ("push-api", Trigger::Sqs),
];

pub fn trigger_of(name: &str) -> Option<Trigger> {
    FUNCTIONS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
