//! The sweep's repairs: stale locks, overdue orders and the bookings a lost event left held.

use super::*;
use crate::service::paying::DeadlineOutcome;

pub(super) async fn stale_locks(app: &App, ids: &[ReservationId], rep: &mut ReconcileReport) -> anyhow::Result<()> {
    rep.stale_locks += ids.len();
    use futures::StreamExt;
    let locks = app.locks.get_reservations(ids).await?;
    let (first, rest) = locks.split_at(locks.len() / 2);
    for (half, part) in [first, rest].into_iter().enumerate() {
        // A worker that dies here leaves half a page done; the item comes back from the queue
        // and the page is redone from its cursor, where every repair is already a no-op.
        if half == 1 && crate::fault!(app.faults, faults::RECONCILE_WORKER_CRASH) {
            return Err(InjectedCrash(faults::RECONCILE_WORKER_CRASH).into());
        }
        // Locks of one page are independent (each repair is conditional on its own state):
        // resolved a few at a time, so a page costs a few round trips, not a hundred.
        let mut results = futures::stream::iter(part.iter().cloned().map(|r| async move {
            let res = sweep_frozen(app, &r).await;
            (r, res)
        }))
        .buffer_unordered(PAGE_CONCURRENCY);
        let mut read = Vec::new();
        while let Some((r, res)) = results.next().await {
            match res {
                Ok(swept) => {
                    if swept.outcome == CheckOutcome::Released {
                        rep.locks_released += 1;
                    }
                    if swept.restocked {
                        rep.locks_restocked += 1;
                    }
                    read.extend(swept.order);
                }
                Err(e) => {
                    // one lock failing every time must not stop the sweep behind it
                    rep.errors += 1;
                    tracing::warn!(reservation = %r.id, error = format!("{e:#}"), "reconcile: lock not resolved");
                }
            }
        }
        drop(results);
        // the orders those locks stand for were read anyway: their bookings too
        for o in &read {
            held_bookings(app, o, rep).await;
        }
        overdue_orders(app, &awaiting_past_deadline(app, &read), rep).await;
    }
    Ok(())
}

/// The orders among `read` still waiting for their payment past their deadline by
/// `StaleLockSeconds`. They are not in `pending-by-deadline` (core/src/ports.rs): their stale
/// lock is their backstop, and this sweep decides them when their timeout message was lost, as
/// the index's pass decides the orders in it (docs/runbook.md, "Reconcile").
fn awaiting_past_deadline(app: &App, read: &[Order]) -> Vec<OrderId> {
    let before_s = clock::now_s() - app.config.stale_lock_s;
    read.iter().filter(|o| o.status.awaits_payment() && o.pay_expire_at < before_s).map(|o| o.id.clone()).collect()
}

/// A cheap check on an order the sweep has read anyway (docs/suppliers.md, "Reconcile"): a
/// SUPPLIER order that should hold nothing at its supplier ([`releases_bookings`]: closed unpaid,
/// or refunded before service) but still records a CONFIRMED or PENDING booking, unchanged for
/// `StaleLockSeconds` (its `SupplierCancelRequested` was lost, or its compensation gave up), is
/// counted (`Repairs`) and its compensation is run again: once each, as for the event
/// ([`crate::service::supplier::compensate`]). A younger one is left to the event in flight.
pub(super) async fn held_bookings(app: &App, o: &Order, rep: &mut ReconcileReport) {
    let held = o.supplier.iter().any(|b| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending));
    let quiet_since = clock::now_ms().saturating_sub(app.config.stale_lock_s.saturating_mul(1000));
    if !held || !releases_bookings(o) || o.updated_at_ms > quiet_since {
        return;
    }
    rep.supplier_bookings_held += 1;
    app.count(names::REPAIRS, 1);
    tracing::warn!(order_id = %o.id, status = o.status.as_str(), "reconcile: SUPPLIER order still holds bookings; compensating");
    match crate::service::supplier::compensate(app, &o.id).await {
        Ok(n) => rep.supplier_cancels += n,
        Err(e) => {
            rep.errors += 1;
            tracing::warn!(order_id = %o.id, error = format!("{e:#}"), "reconcile: supplier bookings not cancelled");
        }
    }
}

pub(super) async fn overdue_orders(app: &App, ids: &[OrderId], rep: &mut ReconcileReport) {
    use futures::StreamExt;
    rep.overdue_orders += ids.len();
    let mut results = futures::stream::iter(ids.iter().cloned().map(|id| async move {
        let res = expire_overdue(app, &id).await;
        (id, res)
    }))
    .buffer_unordered(PAGE_CONCURRENCY);
    while let Some((id, res)) = results.next().await {
        match res {
            Ok(true) => rep.orders_expired += 1,
            Ok(false) => {}
            Err(e) => {
                rep.errors += 1;
                tracing::warn!(order_id = %id, error = format!("{e:#}"), "reconcile: order not expired");
            }
        }
    }
}

pub(super) async fn expire_overdue(app: &App, id: &OrderId) -> anyhow::Result<bool> {
    if let Some(OrderRecord::Order(o)) = app.orders.get(id).await? {
        if crate::domain::order::codes::sweep_due(&o).is_some_and(|d| d <= clock::now_s()) {
            // its issue message was lost: the sweep starts the attempts again (docs/suppliers.md)
            let outcome = crate::service::codes::supplier::issue(app, id, 1).await?;
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %id, ?outcome, "reconcile ran a paid order's pending supplier code issue");
            return Ok(false);
        }
        if o.status == OrderStatus::AwaitingSupplier && o.deadline_passed(clock::now_ms()) {
            // its poll was lost: one poll past the deadline decides (docs/suppliers.md, "Reconcile")
            let outcome = crate::service::supplier::poll(app, id, 0, o.created_at_ms / 1000).await?;
            let decided = matches!(outcome, PollOutcome::Confirmed | PollOutcome::Failed(_));
            if decided {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %id, ?outcome, "reconcile resolved a SUPPLIER order past its timeout");
            }
            return Ok(decided);
        }
        if o.status != OrderStatus::Paying
            && o.attempts.iter().any(|a| a.state.unsettled())
            && o.deadline_passed(clock::now_ms())
        {
            let n = crate::service::paying::settle_stray_attempts(app, &o).await?;
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %id, attempts = n, "reconcile settled payment attempts left open");
            // a pending order is expired by the next sweep (or its timeout) once they are settled
            return Ok(false);
        }
        if o.status == OrderStatus::Paying && o.deadline_passed(clock::now_ms()) {
            // its timeout message was lost (or its webhook late): the provider decides
            let outcome = crate::service::paying::at_deadline(app, &o).await?;
            let decided = matches!(outcome, DeadlineOutcome::Paid | DeadlineOutcome::Expired);
            if decided {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %id, ?outcome, "reconcile asked the provider about an overdue PAYING order");
            }
            return Ok(decided);
        }
        if o.status == OrderStatus::PendingPayment && expire(app, &o).await? {
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %id, "reconcile expired an overdue order");
            return Ok(true);
        }
    }
    Ok(false)
}
