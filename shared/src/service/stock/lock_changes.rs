//! A lock's changes after the freeze: confirm, release and restock, the pay-time take, the
//! shipment's take of a lock held until shipment, the retake of a released lock, and the
//! oversell they may find.

use super::replanning::replan;
use super::FREEZE_ATTEMPTS;
use crate::context::App;
use crate::domain::allocation::{start_shard, MAX_SHARDS};
use crate::domain::events::{EventDetail, EventKind, EventLine, OrderEvent, SCHEMA_VERSION};
use crate::domain::kind::{held_until_shipment, Kind, PauseBy};
use crate::domain::reservation::{plan_move, LockMove, LockStatus, Reservation};
use crate::domain::{ReservationId, Sku};
use crate::ports::MoveRejection;
use crate::telemetry::names;

/// What a confirm or release did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockChange {
    Moved(Reservation),
    /// Already in the target status: a duplicate.
    Unchanged(Reservation),
    /// (Confirm) the lock had been released; the units were taken again.
    Retaken(Reservation),
    /// (Confirm) the lock had been released and the units were gone: recorded as an oversell.
    Oversold(Reservation),
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("no such reservation")]
    NotFound,
    #[error("the reservation is {}", .0.as_str())]
    InvalidTransition(LockStatus),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// FROZEN → RELEASED: units back on sale, per-user counters given back.
pub async fn release(app: &App, id: &ReservationId) -> Result<LockChange, LockError> {
    change(app, id, LockStatus::Released, OnReleased::Refuse, Sale::Now).await
}

/// SOLD → RESTOCKED: the units back on sale after a refund before shipping or a return
/// (docs/after-sale.md, "Restock"). Idempotent: a RESTOCKED lock is left as it is. A lock held
/// until shipment that never shipped is still FROZEN: its refund releases it (FROZEN →
/// RELEASED, the held units back to available; docs/inventory-models.md, "Deduction at shipment").
pub async fn restock(app: &App, id: &ReservationId) -> Result<LockChange, LockError> {
    for attempt in 1..=FREEZE_ATTEMPTS {
        let r = app.locks.get_reservation(id).await?.ok_or(LockError::NotFound)?;
        match r.status {
            LockStatus::Frozen | LockStatus::Released if held_until_shipment(&r) => {
                match change(app, id, LockStatus::Released, OnReleased::Refuse, Sale::Now).await {
                    Ok(LockChange::Moved(r)) => {
                        app.count(names::SHIPMENT_HOLDS_RELEASED, 1);
                        tracing::info!(reservation = %r.id, "hold released by a refund before shipping");
                        return Ok(LockChange::Moved(r));
                    }
                    // a shipment took the units meanwhile (its order write lost to this refund):
                    // read again, and restock them as sold
                    Err(LockError::InvalidTransition(LockStatus::Sold)) => continue,
                    other => return other,
                }
            }
            LockStatus::Restocked => return Ok(LockChange::Unchanged(r)),
            LockStatus::Sold => match app.locks.restock(&r).await? {
                Ok(()) => {
                    app.count(names::RESTOCKS, 1);
                    tracing::info!(reservation = %r.id, "lock restocked");
                    let mut moved = r;
                    moved.status = LockStatus::Restocked;
                    return Ok(LockChange::Moved(moved));
                }
                Err(MoveRejection::ShardShort) => {
                    return Err(LockError::Store(anyhow::anyhow!(
                        "lock {id}: its shards hold fewer sold units than it"
                    )))
                }
                Err(_) => super::super::backoff(attempt).await,
            },
            // the confirm has not run yet (events arrive in any order): retry after it
            LockStatus::Frozen => {
                return Err(LockError::Store(anyhow::anyhow!(
                    "lock {id} is not sold yet; the restock waits for the confirm"
                )))
            }
            other => return Err(LockError::InvalidTransition(other)),
        }
    }
    Err(LockError::Store(anyhow::anyhow!("lock {id} kept changing under us")))
}

/// What confirm does with a lock it finds RELEASED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReleased {
    /// Refuse (`InvalidTransition`): an external hold that lapsed is gone.
    Refuse,
    /// Take the units again, or record an oversell: a paid Holdfast order must get its stock.
    Retake,
}

/// FROZEN → SOLD, the payment's confirm. A lock held until shipment
/// ([`held_until_shipment`]) is left FROZEN: its units stay held until
/// [`take_at_shipment`] (answered `Unchanged`).
pub async fn confirm(app: &App, id: &ReservationId, on_released: OnReleased) -> Result<LockChange, LockError> {
    change(app, id, LockStatus::Sold, on_released, Sale::AtShipmentHeld).await
}

/// FROZEN → SOLD at the order's shipment: the held units are taken (`locked → sold`), in one
/// conditional write on the lock still FROZEN. A released lock is not taken again here (the
/// shipment is refused); a SOLD one is `Unchanged` (a retried shipment, or units retaken at
/// payment).
pub async fn take_at_shipment(app: &App, id: &ReservationId) -> Result<LockChange, LockError> {
    let taken = change(app, id, LockStatus::Sold, OnReleased::Refuse, Sale::Now).await?;
    if let LockChange::Moved(r) = &taken {
        app.count(names::SHIPMENT_TAKES, 1);
        tracing::info!(reservation = %r.id, "held units taken at shipment");
    }
    Ok(taken)
}

/// Whether a move to SOLD may sell a lock held until shipment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sale {
    /// Sell whatever the lock holds (the shipment's take, a release, an external confirm).
    Now,
    /// The payment's confirm: a lock held until shipment stays FROZEN.
    AtShipmentHeld,
}

async fn change(
    app: &App,
    id: &ReservationId,
    to: LockStatus,
    on_released: OnReleased,
    sale: Sale,
) -> Result<LockChange, LockError> {
    for attempt in 1..=FREEZE_ATTEMPTS {
        let r = app.locks.get_reservation(id).await?.ok_or(LockError::NotFound)?;
        match plan_move(r.status, to) {
            LockMove::AlreadyDone => return Ok(LockChange::Unchanged(r)),
            // paid, still held: the shipment takes it (docs/inventory-models.md, "Deduction at shipment")
            LockMove::Apply if to == LockStatus::Sold && sale == Sale::AtShipmentHeld && held_until_shipment(&r) => {
                tracing::info!(reservation = %r.id, "paid; its units stay held until shipment");
                return Ok(LockChange::Unchanged(r));
            }
            LockMove::Apply => {
                let mut r = r;
                let pay_time = to == LockStatus::Sold && r.lines.iter().any(|l| l.takes_at_payment());
                if pay_time && !replan_pay_time(app, &mut r).await? {
                    return pay_time_short(app, r).await;
                }
                match app.locks.move_lock(&r, to).await? {
                    Ok(()) => {
                        for l in &r.lines {
                            tracing::info!(reservation = %r.id, sku = %l.sku, to = to.as_str(), "lock moved");
                        }
                        if pay_time {
                            app.count(names::PAY_TIME_TAKEN, 1);
                        }
                        let mut moved = r;
                        moved.status = to;
                        return Ok(LockChange::Moved(moved));
                    }
                    Err(_) => super::super::backoff(attempt).await,
                }
            }
            // a hold released before shipping was given back by its refund: never taken again
            // by a late confirm (docs/inventory-models.md, "Deduction at shipment")
            LockMove::Conflict if sale == Sale::AtShipmentHeld && held_until_shipment(&r) => {
                return Ok(LockChange::Unchanged(r))
            }
            LockMove::Conflict if to == LockStatus::Sold && on_released == OnReleased::Retake => {
                match retake(app, r, Why::Repair).await? {
                    Some(done) => return Ok(done),
                    // the lock moved under the retake: read it again
                    None => super::super::backoff(attempt).await,
                }
            }
            LockMove::Conflict => return Err(LockError::InvalidTransition(r.status)),
        }
    }
    Err(LockError::Store(anyhow::anyhow!("lock {id} kept changing under us")))
}

/// Re-plans the pieces of a lock's pay-time lines from fresh shard reads, so paying never meets
/// a false shortage on one shard. `false` when a cell as a whole is short.
async fn replan_pay_time(app: &App, r: &mut Reservation) -> Result<bool, LockError> {
    let mut cells: Vec<Sku> =
        r.lines.iter().filter(|l| l.takes_at_payment()).flat_map(|l| l.cells()).map(|c| c.cell).collect();
    cells.sort();
    cells.dedup();
    // a pay-time SKU's stop-sale bites at payment too: its paid order is refunded as short
    // (docs/inventory-models.md, "Stop-sale"); the read is consistent
    let mut skus: Vec<Sku> = r.lines.iter().filter(|l| l.takes_at_payment()).map(|l| l.sku.clone()).collect();
    skus.extend(cells.iter().cloned());
    skus.sort();
    skus.dedup();
    let metas = app.catalogue.get_skus(&skus).await?;
    if let Some(m) =
        r.lines.iter().filter(|l| l.takes_at_payment()).find_map(|l| metas.get(&l.sku).filter(|m| m.paused))
    {
        tracing::warn!(reservation = %r.id, sku = %m.sku, "pay-time SKU paused at payment; the order is refunded");
        return Ok(false);
    }
    for cell in &cells {
        let Some(meta) = metas.get(cell) else { return Ok(false) };
        let counts = app.shards.read_shards(cell, meta.shard_slots()).await?;
        let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
        let start = start_shard(r.id.as_str(), cell, meta.shards.clamp(1, MAX_SHARDS));
        if replan(r, cell, &available, start, |l| l.takes_at_payment()).is_err() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A paid order whose pay-time stock is gone: its lock is released (its other lines give their
/// units back) and the confirm goes the oversell way — flagged, announced, refunded
/// (docs/inventory-models.md, "Pay-time deduction").
async fn pay_time_short(app: &App, r: Reservation) -> Result<LockChange, LockError> {
    match app.locks.move_lock(&r, LockStatus::Released).await? {
        Ok(()) => {}
        Err(MoveRejection::StatusChanged) => {}
        Err(_) => {
            return Err(LockError::Store(anyhow::anyhow!("lock {}: release of a short pay-time lock conflicted", r.id)))
        }
    }
    let released = app.locks.get_reservation(&r.id).await?.ok_or(LockError::NotFound)?;
    match released.status {
        LockStatus::Released => match retake(app, released, Why::PayTime).await? {
            Some(done) => Ok(done),
            None => Err(LockError::Store(anyhow::anyhow!("lock {} changed during a pay-time shortfall", r.id))),
        },
        LockStatus::Sold | LockStatus::Restocked => Ok(LockChange::Unchanged(released)),
        LockStatus::Frozen => Err(LockError::Store(anyhow::anyhow!("lock {} is still frozen; retry", r.id))),
    }
}

/// Confirm of a RELEASED lock (must not happen; defence in depth, docs/architecture.md, "Stock operations").
/// `None` when the lock changed under it (the caller re-reads; bounded by its attempts).
async fn retake(app: &App, r: Reservation, why: Why) -> Result<Option<LockChange>, LockError> {
    if r.oversold {
        // decided already; announce again (the first announcement may have been lost with a
        // crash, and every consumer of it is idempotent)
        publish_oversell(app, &r).await?;
        return Ok(Some(LockChange::Oversold(r)));
    }
    // A kind that may not be retaken (a released code line's codes may be someone else's by
    // now) goes the oversell way: refunded (docs/inventory-models.md).
    // A stopped pay-time SKU is not taken at payment either (its stop-sale bites there).
    let retaken = if r.lines.iter().any(|l| !Kind::of_line(l).rules().retake) || stopped_at_payment(app, &r).await? {
        Err(MoveRejection::ShardShort)
    } else {
        app.locks.retake(&r).await?
    };
    match retaken {
        Ok(()) => {
            match why {
                Why::Repair => {
                    tracing::warn!(reservation = %r.id, "confirm found the lock released; units taken again");
                    app.count(names::REPAIRS, 1);
                }
                Why::PayTime => app.count(names::PAY_TIME_TAKEN, 1),
            }
            let mut sold = r;
            sold.status = LockStatus::Sold;
            Ok(Some(LockChange::Retaken(sold)))
        }
        Err(MoveRejection::StatusChanged) | Err(MoveRejection::Conflict) => Ok(None),
        Err(MoveRejection::ShardShort) => {
            // The decision is the mark, conditional on the lock still RELEASED and unmarked: a
            // concurrent confirm either retook the units first (the mark fails: read again) or
            // finds the mark and retakes nothing. Only then is it announced; a crash in between
            // is healed by the redelivered confirm, which finds the mark and announces again.
            if !app.locks.mark_oversold(&r).await? {
                return Ok(None);
            }
            match why {
                Why::Repair => {
                    tracing::error!(reservation = %r.id, "OVERSELL: paid order whose stock was released and resold")
                }
                Why::PayTime => tracing::warn!(reservation = %r.id, "pay-time stock short at payment; refunded"),
            }
            // a pay-time shortfall is the model's accepted trade-off, not the oversell alarm
            app.count(if why == Why::Repair { names::OVERSELL } else { names::PAY_TIME_SHORT }, 1);
            let mut marked = r;
            marked.oversold = true;
            publish_oversell(app, &marked).await?;
            Ok(Some(LockChange::Oversold(marked)))
        }
    }
}

/// Whether a line whose stop-sale bites at payment (docs/inventory-models.md, "Stop-sale") is
/// paused now, read afresh.
async fn stopped_at_payment(app: &App, r: &Reservation) -> Result<bool, LockError> {
    let mut skus: Vec<Sku> = r
        .lines
        .iter()
        .filter(|l| Kind::of_line(l).rules().pause == PauseBy::FreshMetadata)
        .map(|l| l.sku.clone())
        .collect();
    if skus.is_empty() {
        return Ok(false);
    }
    skus.sort();
    skus.dedup();
    Ok(app.catalogue.get_skus(&skus).await?.values().any(|m| m.paused))
}

async fn publish_oversell(app: &App, r: &Reservation) -> Result<(), LockError> {
    if !app.bus.publish(&[oversell_event(r)]).await?.iter().all(|ok| *ok) {
        return Err(LockError::Store(anyhow::anyhow!("could not publish OversellDetected")));
    }
    Ok(())
}

/// Why a released lock is taken again at confirm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// It should have been FROZEN: a repair, or an oversell when the units are gone.
    Repair,
    /// A pay-time lock released because its stock was short at payment (docs/inventory-models.md).
    PayTime,
}

fn oversell_event(r: &Reservation) -> OrderEvent {
    OrderEvent {
        kind: EventKind::OversellDetected,
        detail: EventDetail {
            schema: SCHEMA_VERSION,
            order_id: r.id.to_string(),
            user_id: r.user.as_ref().map(|u| u.to_string()).unwrap_or_default(),
            status: "OVERSOLD".into(),
            version: 0,
            amount: r.lines.iter().map(|l| l.unit_price.saturating_mul(u64::from(l.units_charged()))).sum(),
            currency: r.lines.first().map(|l| l.currency.to_string()).unwrap_or_default(),
            lines: r.lines.iter().map(|l| EventLine { sku: l.sku.to_string(), quantity: l.quantity }).collect(),
            payment_id: None,
            refund_id: None,
            restock: None,
            correlation_id: crate::telemetry::correlation(),
        },
    }
}
