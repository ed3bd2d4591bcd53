//! reconcile-worker: one reconcile work item per message (docs/runbook.md, "Reconcile"). An
//! item not finished inside the budget is sent back with its cursor; a crash leaves the
//! message to be redelivered, and the redone page repairs nothing twice.

use super::sqs::{each, parse_message, ConsumerFaults, Handled};
use crate::app::App;
use crate::clock;
use crate::ports::Message;
use crate::service::reconcile::{self, WORK_BUDGET};
use crate::telemetry::names;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

pub async fn handle(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    let r = each(
        &app.function,
        ev,
        // one item at a time, bounded by its own work budget (service/reconcile)
        std::time::Duration::from_secs(3600),
        || ConsumerFaults { drop: false, crash: None, fail: false },
        |m| async move {
            let Message::ReconcileWork { sweep_ms, item, .. } =
                parse_message(&m).inspect_err(|_| app.count(names::REJECTED_MESSAGES, 1))?
            else {
                app.count(names::REJECTED_MESSAGES, 1);
                anyhow::bail!("rejected message: not a reconcile work item");
            };
            let out = reconcile::work(app, &item, WORK_BUDGET).await?;
            if let Some(next) = &out.next {
                // A sweep still going after one interval has fallen behind its schedule: the
                // next sweep starts before this one is done. Said in a metric, not hidden.
                let late = clock::now_ms() - sweep_ms > app.config.reconcile_interval_s.saturating_mul(1000);
                if late {
                    app.count(names::SWEEP_INCOMPLETE, 1);
                    tracing::warn!(?next, sweep_ms, "reconcile sweep overran its interval");
                }
                let msg = Message::ReconcileWork { schema: 1, sweep_ms, item: next.clone() };
                app.messages.send(&msg, 0).await?;
            }
            tracing::info!(?item, report = ?out.report, "reconcile work item done");
            Ok(Handled::Done)
        },
    )
    .await;
    // violations found by this batch reach the console's machinery page
    crate::service::sale::flush(app, true).await;
    r
}
