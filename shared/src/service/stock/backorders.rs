//! Backorder fills: a restock of a BACKORDER SKU fills its oldest waiting orders first
//! (docs/inventory-models.md, "Backorders (oversell allowed)").
//!
//! A pass reads the SKU's backlog item (the orders still waiting), their locks and the shards,
//! plans FIFO by order time and writes one conditional transaction per order: the lock's lines
//! (grown pieces, `filled`) on its status and fill version, the shards' `available → locked`
//! (a FROZEN lock) or `→ sold` (a SOLD one), the backlog's `filled`. A pass stopped half-way
//! leaves every order either filled by its transaction or not: the next pass (the next
//! restock, or reconcile's SKU sweep) goes on from what is stored, and a lock already filled
//! or given back is never filled again (its condition fails, or it no longer waits).

use crate::clock;
use crate::context::App;
use crate::domain::backorder::{self, Backlog};
use crate::domain::reservation::Reservation;
use crate::domain::Sku;
use crate::ports::MoveRejection;
use crate::telemetry::names;

/// Passes one fill may take before it leaves the rest to the next (a lock moved under it).
const PASSES: u32 = 4;

/// What a fill did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filled {
    /// Units filled into waiting orders by this call.
    pub units: u32,
    /// Orders that received units.
    pub orders: usize,
    /// The backlog as read after the fill.
    pub backlog: Backlog,
}

/// Fills `sku`'s waiting backorders from its available units, oldest order first.
pub async fn fill(app: &App, sku: &Sku) -> anyhow::Result<Filled> {
    let mut out = Filled::default();
    for _ in 0..PASSES {
        let backlog = app.locks.read_backlog(sku).await?;
        if backlog.open.is_empty() {
            break;
        }
        let locks = read_locks(app, &backlog.open).await?;
        let Some(meta) = app.catalogue.get_skus(std::slice::from_ref(sku)).await?.remove(sku) else { break };
        let mut available: Vec<i64> =
            app.shards.read_shards(sku, meta.shard_slots()).await?.iter().map(|c| c.available).collect();
        let plan = backorder::fifo(sku, &locks, available.iter().sum());
        if plan.is_empty() || meta.paused {
            break;
        }
        let mut moved = false;
        for (id, n) in plan {
            let Some(r) = locks.iter().find(|r| r.id == id) else { continue };
            let Some(pieces) = backorder::pieces_from(&available, n) else { break };
            let Some((after, actions)) = crate::domain::plan::backorder_steps::fill(r, sku, &pieces, n) else {
                continue;
            };
            match app.locks.fill_backorder(r, &after, &actions).await? {
                Ok(()) => {
                    for p in &pieces {
                        available[usize::from(p.shard)] -= i64::from(p.quantity);
                    }
                    out.units += n;
                    out.orders += 1;
                    app.count(names::BACKORDER_UNITS_FILLED, u64::from(n));
                    tracing::info!(reservation = %r.id, sku = %sku, units = n, "backorder filled");
                }
                // the lock moved (paid, cancelled, filled by another pass) or a shard was
                // taken meanwhile: read everything again
                Err(MoveRejection::StatusChanged | MoveRejection::ShardShort | MoveRejection::Conflict) => {
                    moved = true;
                    break;
                }
            }
        }
        if !moved {
            break;
        }
    }
    out.backlog = app.locks.read_backlog(sku).await?;
    report(app, sku, &out.backlog).await?;
    Ok(out)
}

/// The locks of the waiting orders (a batch read takes at most 100 keys).
async fn read_locks(app: &App, ids: &[crate::domain::ReservationId]) -> anyhow::Result<Vec<Reservation>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(100) {
        out.extend(app.locks.get_reservations(chunk).await?);
    }
    Ok(out)
}

/// The backlog's gauges: units waiting and the age of the oldest waiting order.
async fn report(app: &App, sku: &Sku, b: &Backlog) -> anyhow::Result<()> {
    let oldest_ms = if b.open.is_empty() {
        None
    } else {
        let locks = read_locks(app, &b.open).await?;
        locks.iter().filter(|r| backorder::waits(r)).map(|r| r.created_at_ms).min()
    };
    let age_s = oldest_ms.map_or(0.0, |at| ((clock::now_ms() - at).max(0) / 1000) as f64);
    crate::telemetry::measure(&app.function, names::BACKLOG_UNITS, b.waiting() as f64, "Count");
    crate::telemetry::measure(&app.function, names::BACKLOG_OLDEST_AGE, age_s, "Seconds");
    tracing::info!(sku = %sku, waiting = b.waiting(), oldest_age_s = age_s, "backlog");
    Ok(())
}
