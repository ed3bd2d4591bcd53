//! reconcile: the scheduled sweep (docs/architecture.md, "Events and self-healing"). The schedule only seeds the sweep's work items
//! onto the work queue; `reconcile-worker` does the work (docs/runbook.md, "Reconcile").

use crate::app::App;
use crate::faults::{self, InjectedCrash};
use crate::service::reconcile;

pub async fn handle(app: &App, _ev: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if crate::fault!(app.faults, faults::RECONCILE_CRASH) {
        return Err(InjectedCrash(faults::RECONCILE_CRASH).into());
    }
    Ok(serde_json::to_value(reconcile::seed(app).await?)?)
}
