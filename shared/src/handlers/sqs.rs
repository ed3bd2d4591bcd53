//! The shape every SQS consumer shares: each message in its own span, failures reported item by
//! item (`ReportBatchItemFailures`), so one bad message neither blocks nor replays the others.

use crate::faults::InjectedCrash;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use std::future::Future;
use tracing::Instrument;

/// What happened to one message.
pub enum Handled {
    Done,
    /// Acknowledged without processing (fault injection: the message is lost).
    Dropped,
}

/// Fault checks of one consumer (all false in builds without fault injection).
#[derive(Default)]
pub struct ConsumerFaults {
    /// Acknowledge the message unprocessed (it is lost).
    pub drop: bool,
    /// Fail the invocation after the first message was processed (the batch comes again).
    pub crash: Option<&'static str>,
    /// Report every message failed, unprocessed (retried into the DLQ).
    pub fail: bool,
}

/// Runs `process` over the batch, applying the consumer's faults.
pub async fn each<F, Fut>(
    function: &str,
    ev: SqsEvent,
    faults: impl Fn() -> ConsumerFaults,
    process: F,
) -> anyhow::Result<SqsBatchResponse>
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = anyhow::Result<Handled>>,
{
    let mut failures = Vec::new();
    for (i, m) in ev.records.into_iter().enumerate() {
        let id = m.message_id.clone().unwrap_or_default();
        let f = faults();
        if f.drop {
            tracing::warn!(message_id = id, "fault injection: message dropped");
            continue;
        }
        if f.fail {
            failures.push(BatchItemFailure { item_identifier: id });
            continue;
        }
        let span = tracing::info_span!("message", function, message_id = %id);
        match process(m).instrument(span).await {
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(message_id = id, error = format!("{e:#}"), "message failed; left for retry");
                failures.push(BatchItemFailure { item_identifier: id });
            }
        }
        if let (0, Some(point)) = (i, f.crash) {
            return Err(InjectedCrash(point).into());
        }
    }
    Ok(SqsBatchResponse { batch_item_failures: failures })
}

/// Parses one of Holdfast's own queue messages; anything unknown is refused (and so retried
/// until it lands in the DLQ, never applied).
pub fn parse_message(m: &SqsMessage) -> anyhow::Result<crate::ports::Message> {
    let body = m.body.as_deref().unwrap_or("");
    let msg: crate::ports::Message =
        serde_json::from_str(body).map_err(|e| anyhow::anyhow!("rejected message: {e}"))?;
    let schema = match &msg {
        crate::ports::Message::PaymentTimeout { schema, .. }
        | crate::ports::Message::ReservationCheck { schema, .. }
        | crate::ports::Message::ReconcileWork { schema, .. }
        | crate::ports::Message::SupplierPoll { schema, .. } => *schema,
    };
    if schema != 1 {
        anyhow::bail!("rejected message: unknown schema {schema}");
    }
    Ok(msg)
}
