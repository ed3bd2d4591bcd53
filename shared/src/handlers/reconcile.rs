//! reconcile: the scheduled sweep (docs/architecture.md, "Events and self-healing"). The schedule only seeds the sweep's work items
//! onto the work queue; `reconcile-worker` does the work (docs/runbook.md, "Reconcile").

use crate::app::App;
use crate::faults::{self, InjectedCrash};
use crate::ports::{Message, WorkItem};
use crate::service::reconcile;

pub async fn handle(app: &App, ev: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if crate::fault!(app.faults, faults::RECONCILE_CRASH) {
        return Err(InjectedCrash(faults::RECONCILE_CRASH).into());
    }
    // the daily schedule's input (template.yaml, `Settlement`): yesterday's settlement, done by
    // a worker like any work item (docs/payments.md, "Settlement")
    if ev.get("settlement").and_then(serde_json::Value::as_bool) == Some(true) {
        let date = crate::service::settlement::yesterday();
        let item = WorkItem::Settlement { date };
        app.messages.send(&Message::ReconcileWork { schema: 1, sweep_ms: crate::clock::now_ms(), item }, 0).await?;
        tracing::info!(%date, "settlement seeded");
        return Ok(serde_json::json!({ "settlement": date.to_string() }));
    }
    Ok(serde_json::to_value(reconcile::seed(app).await?)?)
}
