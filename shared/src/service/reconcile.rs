//! The reconcile sweep (DESIGN §5): the second safety net. Reads only the sparse, bucketed
//! indexes (stale FROZEN locks, overdue PENDING orders, the SKU list) — never a table scan.
//! Every repair is a conditional write, so two overlapping runs never repair one thing twice:
//! the loser's condition fails and it counts nothing.

use super::checks::{resolve_frozen, CheckOutcome};
use super::orders::expire;
use crate::app::App;
use crate::clock;
use crate::domain::invariants::{check_stock, SkuSnapshot, Violation};
use crate::domain::order::{OrderRecord, OrderStatus};
use crate::telemetry::names;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReconcileReport {
    pub stale_locks: usize,
    pub locks_released: usize,
    pub overdue_orders: usize,
    pub orders_expired: usize,
    pub skus_checked: usize,
    pub skus_inconclusive: usize,
    pub violations: Vec<String>,
}

pub async fn run(app: &App) -> anyhow::Result<ReconcileReport> {
    let mut rep = ReconcileReport::default();
    let now_ms = clock::now_ms();
    let stale_ms = app.config.stale_lock_s * 1000;

    let stale = app.stock.frozen_before(now_ms - stale_ms).await?;
    rep.stale_locks = stale.len();
    for r in app.stock.get_reservations(&stale).await? {
        if resolve_frozen(app, &r, true).await? == CheckOutcome::Released {
            rep.locks_released += 1;
        }
    }

    let overdue = app.orders.pending_due(now_ms / 1000 - app.config.stale_lock_s).await?;
    rep.overdue_orders = overdue.len();
    for id in overdue {
        if let Some(OrderRecord::Order(o)) = app.orders.get(&id).await? {
            if o.status == OrderStatus::PendingPayment && expire(app, &o).await? {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %id, "reconcile expired an overdue order");
                rep.orders_expired += 1;
            }
        }
    }

    let violations = check_all_skus(app, &mut rep).await?;
    app.count(names::INVARIANT_VIOLATIONS, violations.len() as u64);
    for v in &violations {
        tracing::error!(violation = ?v, "invariant violated");
    }
    rep.violations = violations.iter().map(|v| format!("{v:?}")).collect();
    tracing::info!(report = ?rep, "reconcile done");
    Ok(rep)
}

/// Per-SKU identity and `locked = Σ FROZEN`. Counters are read before and after the frozen
/// set; a SKU whose counters moved in between is skipped as inconclusive (a freeze in flight),
/// so live traffic does not raise false alarms.
async fn check_all_skus(app: &App, rep: &mut ReconcileReport) -> anyhow::Result<Vec<Violation>> {
    let skus = app.stock.list_skus().await?;
    let metas = app.stock.get_skus(&skus).await?;
    let mut before = Vec::new();
    for m in metas.values() {
        before.push(SkuSnapshot {
            sku: m.sku.clone(),
            stocked: m.stocked,
            shards: app.stock.read_shards(&m.sku, m.slots).await?,
            per_user_limit: m.per_user_limit,
        });
    }
    let frozen_ids = app.stock.frozen_before(i64::MAX).await?;
    let frozen = app.stock.get_reservations(&frozen_ids).await?;
    let mut settled = Vec::new();
    for s in before {
        let after = app.stock.read_shards(&s.sku, s.shards.len() as u16).await?;
        if after == s.shards {
            settled.push(s);
        } else {
            rep.skus_inconclusive += 1;
        }
    }
    rep.skus_checked = settled.len();
    Ok(check_stock(&settled, &frozen))
}
