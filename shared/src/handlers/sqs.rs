//! The shape every SQS consumer shares: each message in its own span, failures reported item by
//! item (`ReportBatchItemFailures`), so one bad message neither blocks nor replays the others.

use crate::faults::InjectedCrash;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::stream::{self, StreamExt};
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

/// Messages of one batch in flight at once. Order inside a batch does not matter: a standard
/// queue keeps none, and every consumer checks the message against the current state (the
/// order's status, the lock's) before it writes, conditionally.
pub const BATCH_CONCURRENCY: usize = 4;

/// How long one batch of a queue consumer may run: a second under its request budget, itself
/// under the functions' 10 s timeout (8 s on AWS; scaled like every budget on the slow local
/// emulator), so a slow dependency (a provider answering in 10 s, a supplier down) fails the
/// messages it holds up, each alone, instead of timing the Lambda out and failing the whole
/// batch (review protocol-3 N12). A message still running at the deadline is stopped (a crash
/// at that point, which every consumer already survives) and left for retry.
pub fn batch_budget(app: &crate::context::App) -> std::time::Duration {
    app.budget.request.saturating_sub(std::time::Duration::from_secs(1))
}

/// Runs `process` over the batch, up to [`BATCH_CONCURRENCY`] messages at once, applying the
/// consumer's faults (decided per message, in batch order, before anything runs).
pub async fn each<F, Fut>(
    function: &str,
    ev: SqsEvent,
    budget: std::time::Duration,
    faults: impl Fn() -> ConsumerFaults,
    process: F,
) -> anyhow::Result<SqsBatchResponse>
where
    F: Fn(SqsMessage) -> Fut,
    Fut: Future<Output = anyhow::Result<Handled>>,
{
    let mut failures = Vec::new();
    let mut todo = Vec::new();
    let mut crash = None;
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
        if i == 0 {
            crash = f.crash;
        }
        todo.push((id, m));
    }
    let deadline = tokio::time::Instant::now() + budget;
    let one = |(id, m): (String, SqsMessage)| {
        let span = tracing::info_span!("message", function, message_id = %id);
        let run = process(m).instrument(span);
        async move {
            match tokio::time::timeout_at(deadline, run).await {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => {
                    tracing::warn!(message_id = id, error = format!("{e:#}"), "message failed; left for retry");
                    Some(BatchItemFailure { item_identifier: id })
                }
                Err(_) => {
                    tracing::warn!(message_id = id, "message ran past the batch's budget; left for retry");
                    Some(BatchItemFailure { item_identifier: id })
                }
            }
        }
    };
    if let Some(point) = crash {
        // the crash point fires after the first message, the way a Lambda dies mid-batch
        if let Some(first) = todo.into_iter().next() {
            one(first).await;
        }
        return Err(InjectedCrash(point).into());
    }
    let failed: Vec<_> = stream::iter(todo).map(one).buffer_unordered(BATCH_CONCURRENCY).collect().await;
    failures.extend(failed.into_iter().flatten());
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
        | crate::ports::Message::SupplierPoll { schema, .. }
        | crate::ports::Message::SupplierIssue { schema, .. }
        | crate::ports::Message::RecordedCheckout { schema, .. } => *schema,
    };
    if schema != 1 {
        anyhow::bail!("rejected message: unknown schema {schema}");
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn batch(n: usize) -> SqsEvent {
        let records = (0..n)
            .map(|i| SqsMessage { message_id: Some(format!("m{i}")), body: Some(i.to_string()), ..Default::default() })
            .collect();
        SqsEvent { records }
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_runs_a_bounded_number_at_once_and_reports_only_its_failures() {
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let out = each("t", batch(10), std::time::Duration::from_secs(60), ConsumerFaults::default, |m| {
            let (now, most) = (&now, &most);
            async move {
                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(n, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                match m.body.as_deref() {
                    Some("3" | "7") => anyhow::bail!("no"),
                    _ => Ok(Handled::Done),
                }
            }
        })
        .await
        .unwrap();
        let mut failed: Vec<_> = out.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
        failed.sort();
        assert_eq!(failed, ["m3", "m7"]);
        // several at once, never more than the bound
        const { assert!(BATCH_CONCURRENCY > 1) };
        assert_eq!(most.load(Ordering::SeqCst), BATCH_CONCURRENCY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_past_the_batch_budget_fails_alone_and_the_others_are_reported_done() {
        let out = each("t", batch(4), std::time::Duration::from_secs(8), ConsumerFaults::default, |m| async move {
            // one message waits on a dependency that answers in 10 s
            if m.body.as_deref() == Some("2") {
                tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            }
            Ok(Handled::Done)
        })
        .await
        .unwrap();
        let failed: Vec<_> = out.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
        assert_eq!(failed, ["m2"], "only the slow one is left for retry; the batch returns inside its budget");
    }

    #[tokio::test]
    async fn a_crash_point_fails_the_invocation_after_the_first_message_alone() {
        let seen = AtomicUsize::new(0);
        let faults = || ConsumerFaults { crash: Some("t.crash"), ..Default::default() };
        let out = each("t", batch(5), std::time::Duration::from_secs(60), faults, |_| {
            let seen = &seen;
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(Handled::Done)
            }
        })
        .await;
        assert!(out.unwrap_err().downcast_ref::<InjectedCrash>().is_some());
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }
}
