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
    /// Items that could not be handled this run (retried next run).
    pub errors: usize,
}

/// Wall-clock budget of one run: the Lambda timeout is 60 s; what is left over waits for the
/// next run (every step is idempotent, so a cut-short run loses nothing).
const BUDGET: std::time::Duration = std::time::Duration::from_secs(45);

pub async fn run(app: &App) -> anyhow::Result<ReconcileReport> {
    let started = std::time::Instant::now();
    let mut rep = ReconcileReport::default();
    let now_ms = clock::now_ms();
    let stale_ms = app.config.stale_lock_s * 1000;

    // Each part runs on its own, and one item's failure is counted, not fatal: a lock that
    // fails every time must not stop the sweep behind it.
    match app.stock.frozen_before(now_ms - stale_ms).await {
        Ok(stale) => {
            rep.stale_locks = stale.len();
            // oldest first would replay the same failures first every run; shuffle instead
            let mut stale = stale;
            fastrand::shuffle(&mut stale);
            for chunk in stale.chunks(100) {
                if started.elapsed() > BUDGET {
                    break;
                }
                let locks = match app.stock.get_reservations(chunk).await {
                    Ok(l) => l,
                    Err(e) => {
                        rep.errors += 1;
                        tracing::warn!(error = format!("{e:#}"), "reconcile: reading stale locks failed");
                        continue;
                    }
                };
                for r in locks {
                    match resolve_frozen(app, &r, true).await {
                        Ok(CheckOutcome::Released) => rep.locks_released += 1,
                        Ok(_) => {}
                        Err(e) => {
                            rep.errors += 1;
                            tracing::warn!(reservation = %r.id, error = format!("{e:#}"), "reconcile: lock not resolved");
                        }
                    }
                }
            }
        }
        Err(e) => {
            rep.errors += 1;
            tracing::warn!(error = format!("{e:#}"), "reconcile: stale-lock index unreadable");
        }
    }

    match app.orders.pending_due(now_ms / 1000 - app.config.stale_lock_s).await {
        Ok(overdue) => {
            rep.overdue_orders = overdue.len();
            for id in overdue {
                if started.elapsed() > BUDGET {
                    break;
                }
                match expire_overdue(app, &id).await {
                    Ok(true) => rep.orders_expired += 1,
                    Ok(false) => {}
                    Err(e) => {
                        rep.errors += 1;
                        tracing::warn!(order_id = %id, error = format!("{e:#}"), "reconcile: order not expired");
                    }
                }
            }
        }
        Err(e) => {
            rep.errors += 1;
            tracing::warn!(error = format!("{e:#}"), "reconcile: pending index unreadable");
        }
    }

    // A violation must survive a second look a moment later: the frozen set comes from an
    // eventually consistent index, and a freeze in flight can make one reading disagree.
    let first = check_all_skus(app, &mut rep).await?;
    let mut violations = if first.is_empty() {
        first
    } else {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let mut again = ReconcileReport::default();
        let second = check_all_skus(app, &mut again).await?;
        first.into_iter().filter(|v| second.contains(v)).collect()
    };
    match super::campaigns::check_quotas(app).await {
        Ok(v) => violations.extend(v),
        Err(e) => {
            rep.errors += 1;
            tracing::warn!(error = format!("{e:#}"), "reconcile: campaign check failed");
        }
    }
    app.count(names::INVARIANT_VIOLATIONS, violations.len() as u64);
    for v in &violations {
        tracing::error!(violation = ?v, "invariant violated");
    }
    rep.violations = violations.iter().map(|v| format!("{v:?}")).collect();
    tracing::info!(report = ?rep, "reconcile done");
    Ok(rep)
}

async fn expire_overdue(app: &App, id: &crate::domain::OrderId) -> anyhow::Result<bool> {
    if let Some(OrderRecord::Order(o)) = app.orders.get(id).await? {
        if o.status == OrderStatus::PendingPayment && expire(app, &o).await? {
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %id, "reconcile expired an overdue order");
            return Ok(true);
        }
    }
    Ok(false)
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
