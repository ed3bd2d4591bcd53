//! The invariants that tie orders, locks and per-user counters together (docs/architecture.md,
//! "Invariants"): no FROZEN lock is stranded, each order's lock is where its status says, and
//! each user's limit counter equals what that user's locks hold.

use super::shipment::{awaits_shipment, shipment_hold_fits};
use super::{check_bookings, check_payments, keeps_allowance, order_record, Snapshot, Violation};
use crate::kind::held_until_shipment;
use crate::order::{Order, OrderRecord};
use crate::refund::RefundReason;
use crate::reservation::{LockStatus, Reservation, ReservationKind};
use crate::{Sku, UserId};
use std::collections::HashMap;

/// A FROZEN lock is stranded unless its hold is still live: an external one before its
/// deadline, an order's while the order is open and unpaid (or paid and held until shipment),
/// or any lock younger than the reservation-check delay (its order may still be on the way).
pub(super) fn check_stranded_locks(s: &Snapshot) -> Vec<Violation> {
    let orders: HashMap<&str, &OrderRecord> = s.orders.iter().map(|(id, o)| (id.as_str(), o)).collect();
    let mut out = Vec::new();
    for r in s.reservations.iter().filter(|r| r.status == LockStatus::Frozen) {
        let young = s.now_s * 1000 - r.created_at_ms < s.check_delay_s * 1000;
        let ok = match r.kind {
            ReservationKind::External => r.expires_at >= s.now_s,
            // a paid order held until shipment keeps its lock FROZEN: held, not stranded
            ReservationKind::Order => {
                young
                    || matches!(orders.get(r.id.as_str()),
                        Some(OrderRecord::Order(o)) if o.status.is_open_unpaid()
                            || (held_until_shipment(r) && awaits_shipment(o)))
            }
        };
        if !ok {
            out.push(Violation::StrandedLock { reservation: r.id.to_string() });
        }
    }
    out
}

/// Each order's lock is in the state its status says (with the oversold and held-until-shipment
/// exceptions), goods shipped only from stock that was sold, and each order's payments,
/// bookings and record are consistent; no payment is applied to two orders.
pub(super) fn check_orders_against_locks(s: &Snapshot) -> Vec<Violation> {
    let locks: HashMap<&str, &Reservation> = s.reservations.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut out = Vec::new();
    let mut applied: HashMap<&str, usize> = HashMap::new();
    for (id, rec) in &s.orders {
        let lock = locks.get(id.as_str()).copied();
        let oversold = lock_fits(id.as_str(), rec, lock, &mut out);
        if let OrderRecord::Order(o) = rec {
            check_shipped_from_stock(id.as_str(), o, lock.map(|r| r.status), oversold, &mut out);
            check_payments(o, &mut applied, &mut out);
            check_bookings(o, &mut out);
            order_record::check(o, &mut out);
        }
    }
    for (p, n) in applied {
        if n > 1 {
            out.push(Violation::PaymentAppliedTwice { payment_id: p.to_owned() });
        }
    }
    out
}

/// Whether the order's lock is where its status says (else an `OrderLockMismatch`); answers
/// whether the order is a paid one whose stock was oversold (its lock released, its money on
/// the way back).
fn lock_fits(id: &str, rec: &OrderRecord, r: Option<&Reservation>, out: &mut Vec<Violation>) -> bool {
    let lock = r.map(|r| r.status);
    let (status, want): (&str, Option<LockStatus>) = match rec {
        OrderRecord::Void => ("VOID", Some(LockStatus::Released)),
        OrderRecord::Order(o) if o.restocks() => (o.status.as_str(), Some(LockStatus::Restocked)),
        OrderRecord::Order(o) if o.status.is_paid_or_later() => (o.status.as_str(), Some(LockStatus::Sold)),
        OrderRecord::Order(o) if o.status.is_closed_unpaid() => (o.status.as_str(), Some(LockStatus::Released)),
        OrderRecord::Order(o) => (o.status.as_str(), Some(LockStatus::Frozen)),
    };
    // a VOID whose freeze never happened has no lock at all, which is fine; a paid order
    // whose stock was gone at payment (an oversell, or a pay-time line short) has a released
    // lock flagged oversold and its money on the way back — by the oversell's refund, or by
    // the buyer's refund asked before the confirm ran (one refund per payment either way;
    // simulator finding F1)
    let oversold = matches!(rec, OrderRecord::Order(o) if o.status.is_paid_or_later()
        && lock == Some(LockStatus::Released)
        && r.is_some_and(|r| r.oversold)
        && o.applied_payment().is_some_and(|p| o.refunds.iter().any(|f| f.payment_id == p.payment_id)));
    let held = r.is_some_and(held_until_shipment);
    let shipment_hold = matches!(rec, OrderRecord::Order(o) if held && shipment_hold_fits(o, lock));
    let fine = lock == want || oversold || shipment_hold || (matches!(rec, OrderRecord::Void) && lock.is_none());
    if !fine {
        out.push(Violation::OrderLockMismatch { order: id.to_string(), status: status.into(), lock });
    }
    oversold
}

/// Goods left the warehouse only from a sold lock whose stock was not lost.
fn check_shipped_from_stock(id: &str, o: &Order, lock: Option<LockStatus>, oversold: bool, out: &mut Vec<Violation>) {
    let lost = oversold || o.refunds.iter().any(|f| f.reason == RefundReason::Oversold);
    let held = matches!(lock, Some(LockStatus::Sold | LockStatus::Restocked));
    if o.shipment.is_some() && (lost || !held) {
        out.push(Violation::ShippedWithoutStock { order: id.to_owned(), lock });
    }
}

/// Each user's limit counter of a SKU equals the units that user's locks keep of its allowance,
/// and stays within the SKU's limit.
pub(super) fn check_user_limits(s: &Snapshot) -> Vec<Violation> {
    let limits: HashMap<&Sku, u32> = s.skus.iter().filter_map(|k| k.per_user_limit.map(|l| (&k.sku, l))).collect();
    let mut holds: HashMap<(&Sku, &UserId), i64> = HashMap::new();
    for r in &s.reservations {
        if let Some(u) = &r.user {
            for l in r.lines.iter().filter(|l| l.limited && keeps_allowance(r, l)) {
                *holds.entry((&l.sku, u)).or_default() += i64::from(l.quantity);
            }
        }
    }
    let counters: HashMap<(&Sku, &UserId), i64> = s.user_counters.iter().map(|(k, u, n)| ((k, u), *n)).collect();
    let mut keys: Vec<(&Sku, &UserId)> = holds.keys().chain(counters.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (sku, user) in keys {
        // a limit removed since keeps its counters exact (a later limit starts from them)
        let limit = limits.get(sku).copied();
        let h = holds.get(&(sku, user)).copied().unwrap_or(0);
        let c = counters.get(&(sku, user)).copied().unwrap_or(0);
        if limit.is_some_and(|l| h > i64::from(l)) || h != c {
            let limit = limit.unwrap_or(0);
            out.push(Violation::UserLimit { sku: sku.clone(), user: user.clone(), holds: h, counter: c, limit });
        }
    }
    out
}
