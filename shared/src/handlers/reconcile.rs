//! reconcile: the scheduled sweep (DESIGN §5).

use crate::app::App;
use crate::faults::{self, InjectedCrash};
use crate::service::reconcile;

pub async fn handle(app: &App, _ev: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if crate::fault!(app.faults, faults::RECONCILE_CRASH) {
        return Err(InjectedCrash(faults::RECONCILE_CRASH).into());
    }
    let report = reconcile::run(app).await?;
    Ok(serde_json::to_value(report)?)
}
