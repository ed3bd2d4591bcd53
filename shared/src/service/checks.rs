//! The fenced reservation check (docs/architecture.md, "Orphan check"): an orphan freeze (no order) is released only
//! after a VOID tombstone claims its order id, so no create-order can appear for released stock.
//! External reservations are released at their deadline.

use super::stock::{self, LockChange, LockError};
use crate::clock;
use crate::context::App;
use crate::domain::order::{Order, OrderRecord};
use crate::domain::reservation::{LockStatus, Reservation, ReservationKind};
use crate::domain::{OrderId, ReservationId};
use crate::ports::{Message, MAX_DELAY_SECONDS};
use crate::telemetry::names;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    /// Nothing frozen, or the order exists: nothing to do.
    Fine,
    /// Not due yet: sent again with the remaining delay.
    ReArmed,
    /// Released (orphan or expired external hold).
    Released,
}

pub async fn reservation_check(
    app: &App,
    id: &ReservationId,
    kind: ReservationKind,
    due_at: i64,
) -> anyhow::Result<CheckOutcome> {
    let now = clock::now_s();
    if now < due_at {
        let msg = Message::ReservationCheck { schema: 1, reservation_id: id.to_string(), kind, due_at };
        app.messages.send(&msg, (due_at - now).min(MAX_DELAY_SECONDS) as u32).await?;
        return Ok(CheckOutcome::ReArmed);
    }
    let Some(r) = app.locks.get_reservation(id).await? else { return Ok(CheckOutcome::Fine) };
    if r.status != LockStatus::Frozen {
        return Ok(CheckOutcome::Fine);
    }
    resolve_frozen(app, &r, false).await
}

/// Whether the lock is younger than the reservation-check delay (its own check is not due).
fn young(app: &App, r: &Reservation) -> bool {
    clock::now_ms() < r.created_at_ms.saturating_add(app.config.reservation_check_delay_s.saturating_mul(1000))
}

/// Resolves one FROZEN reservation by what its order says. `sweep` = called by reconcile
/// (also confirms paid orders, restocks refunded ones, and counts repairs).
pub async fn resolve_frozen(app: &App, r: &Reservation, sweep: bool) -> anyhow::Result<CheckOutcome> {
    Ok(resolve(app, r, sweep).await?.outcome)
}

/// What the sweep's resolution of one stale FROZEN lock did, and the order it read for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swept {
    pub outcome: CheckOutcome,
    /// The lock of a paid order that was refunded before it was confirmed (its order restocks):
    /// confirmed, then restocked.
    pub restocked: bool,
    /// The order the lock stands for, as read (the sweep's cheap checks look at it).
    pub order: Option<Order>,
}

impl Swept {
    fn just(outcome: CheckOutcome) -> Self {
        Swept { outcome, restocked: false, order: None }
    }
}

/// The reconcile sweep's resolution of one stale FROZEN lock ([`resolve_frozen`] with `sweep`).
pub async fn sweep_frozen(app: &App, r: &Reservation) -> anyhow::Result<Swept> {
    resolve(app, r, true).await
}

async fn resolve(app: &App, r: &Reservation, sweep: bool) -> anyhow::Result<Swept> {
    match r.kind {
        ReservationKind::External => resolve_external(app, r).await,
        ReservationKind::Order => {
            let Some(order_id) = r.id.order_id() else { return Ok(Swept::just(CheckOutcome::Fine)) };
            match order_or_void(app, r, &order_id, sweep).await? {
                Some(record) => by_order(app, r, record, sweep).await,
                None => Ok(Swept::just(CheckOutcome::ReArmed)),
            }
        }
    }
}

/// Whether a release (or another move) moved the lock; a lock already moved or gone did not.
fn moved(c: Result<LockChange, LockError>) -> anyhow::Result<bool> {
    match c {
        Ok(LockChange::Moved(_)) => Ok(true),
        Ok(_) | Err(LockError::NotFound) | Err(LockError::InvalidTransition(_)) => Ok(false),
        Err(LockError::Store(e)) => Err(e),
    }
}

/// An external hold is released once its deadline has passed.
async fn resolve_external(app: &App, r: &Reservation) -> anyhow::Result<Swept> {
    if r.expires_at > clock::now_s() {
        return Ok(Swept::just(CheckOutcome::Fine));
    }
    if moved(stock::release(app, &r.id).await)? {
        app.count(names::EXTERNAL_EXPIRED, 1);
        tracing::info!(reservation = %r.id, "external reservation released at its deadline");
        return Ok(Swept::just(CheckOutcome::Released));
    }
    Ok(Swept::just(CheckOutcome::Fine))
}

/// The record under the lock's order id; a missing order is fenced out with a VOID first. `None`
/// when the lock is too young to judge (the check is sent again with its full delay).
async fn order_or_void(
    app: &App,
    r: &Reservation,
    order_id: &OrderId,
    sweep: bool,
) -> anyhow::Result<Option<OrderRecord>> {
    match app.orders.get(order_id).await? {
        Some(rec) => Ok(Some(rec)),
        None if young(app, r) => {
            // A check sent by an earlier attempt of this checkout (whose freeze failed) can
            // arrive while a later attempt is still writing its order: a lock younger than the
            // check delay gets its own full delay (protocol review #3).
            if !sweep {
                let due_at = r.created_at_ms.div_euclid(1000) + app.config.reservation_check_delay_s;
                let msg =
                    Message::ReservationCheck { schema: 1, reservation_id: r.id.to_string(), kind: r.kind, due_at };
                let wait = (due_at - clock::now_s()).clamp(1, MAX_DELAY_SECONDS) as u32;
                app.messages.send(&msg, wait).await?;
            }
            Ok(None)
        }
        None => {
            // Fence first: after this no create-order can write the order.
            if crate::mutant!("check-skips-void") || app.orders.put_void(order_id).await? {
                tracing::warn!(order_id = %order_id, "orphan freeze: order id voided");
                Ok(Some(OrderRecord::Void))
            } else {
                Ok(Some(app.orders.get(order_id).await?.unwrap_or(OrderRecord::Void)))
            }
        }
    }
}

/// What the lock's order record says to do with it: a VOID's lock is released; in a sweep, a
/// closed unpaid order's lock is released and a paid one's confirmed (and restocked if refunded).
async fn by_order(app: &App, r: &Reservation, record: OrderRecord, sweep: bool) -> anyhow::Result<Swept> {
    match record {
        OrderRecord::Void => {
            if moved(stock::release(app, &r.id).await)? {
                app.count(names::ORPHANS_RELEASED, 1);
                if sweep {
                    app.count(names::REPAIRS, 1);
                }
                return Ok(Swept::just(CheckOutcome::Released));
            }
            Ok(Swept::just(CheckOutcome::Fine))
        }
        OrderRecord::Order(o) if sweep && o.status.is_closed_unpaid() => {
            let mut swept = Swept { order: Some((*o).clone()), ..Swept::just(CheckOutcome::Fine) };
            if moved(stock::release(app, &r.id).await)? {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %o.id, "reconcile released the lock of a closed order");
                swept.outcome = CheckOutcome::Released;
            }
            Ok(swept)
        }
        OrderRecord::Order(o) if sweep && o.status.is_paid_or_later() => {
            let confirmed = stock::confirm(app, &r.id, stock::OnReleased::Retake).await;
            if let Ok(LockChange::Moved(_)) = confirmed {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %o.id, "reconcile confirmed the lock of a paid order");
            }
            // Refunded before the confirm ran: its restock failed on the FROZEN lock (and went
            // to the DLQ); now that the lock is sold, it goes back on sale.
            let restocked = o.restocks()
                && !crate::mutant!("p2-9-sweep-skips-restock")
                && restock_after_confirm(app, &o, &r.id, &confirmed).await?;
            Ok(Swept { outcome: CheckOutcome::Fine, restocked, order: Some(*o) })
        }
        // pending (its own timeout and the pending sweep handle it), or not a sweep
        OrderRecord::Order(o) => Ok(Swept { order: sweep.then_some(*o), ..Swept::just(CheckOutcome::Fine) }),
    }
}

/// The restock of a refunded order's lock the sweep just confirmed (or found confirmed, or
/// took again). `true` if this call moved it SOLD → RESTOCKED (a repair).
async fn restock_after_confirm(
    app: &App,
    o: &Order,
    id: &ReservationId,
    confirmed: &Result<LockChange, LockError>,
) -> anyhow::Result<bool> {
    match confirmed {
        Ok(LockChange::Moved(_) | LockChange::Unchanged(_) | LockChange::Retaken(_)) => {}
        // oversold (released, its money refunded) or not confirmable: nothing sold to put back
        Ok(LockChange::Oversold(_)) | Err(LockError::NotFound | LockError::InvalidTransition(_)) => return Ok(false),
        Err(LockError::Store(e)) => anyhow::bail!("lock {id}: not confirmed, so not restocked: {e:#}"),
    }
    match stock::restock(app, id).await {
        Ok(LockChange::Moved(_)) => {
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %o.id, status = o.status.as_str(), "reconcile restocked the lock of a refunded order");
            Ok(true)
        }
        Ok(_) | Err(LockError::NotFound | LockError::InvalidTransition(_)) => Ok(false),
        Err(LockError::Store(e)) => Err(e),
    }
}
