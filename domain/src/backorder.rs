//! Backorders: SKUs that may be sold short (docs/inventory-models.md, "Backorders (oversell
//! allowed)").
//!
//! A counted SINGLE SKU taken at order may declare `model.oversell = BACKORDER`. A checkout of
//! it that finds fewer units than it asks for is still accepted: the units that exist are frozen
//! as usual and the shortfall is recorded on the order line (`backorder.short`) and in the SKU's
//! durable backlog item, in the freeze's own transaction. A restock fills the oldest open
//! backorders first (FIFO by order time), one conditional transaction per order. The backlog item
//! keeps three counters that only grow, so its identity is exact:
//! `waiting = ordered − filled − cancelled` = Σ over live locks of `short − filled`.

use super::allocation::Piece;
use super::reservation::{BackorderLine, LockStatus, Reservation, ReservedLine};
use super::{ReservationId, Sku};

/// Units the lock holds for `sku` still waiting.
pub fn open_of(r: &Reservation, sku: &Sku) -> u32 {
    r.lines.iter().filter(|l| &l.sku == sku).map(ReservedLine::open_units).sum()
}

/// The lock's fill version: units filled over all its lines. Every lock move is conditional on
/// it (a move planned from a copy read before a fill would write the old pieces back).
pub fn fill_version(r: &Reservation) -> u64 {
    r.lines.iter().filter_map(|l| l.backorder).map(|b| u64::from(b.filled)).sum()
}

/// A lock that still waits for a restock: live (FROZEN or SOLD) with open units.
pub fn waits(r: &Reservation) -> bool {
    matches!(r.status, LockStatus::Frozen | LockStatus::Sold) && r.lines.iter().any(|l| l.open_units() > 0)
}

/// A SKU's backlog item (`BLOG#<sku>`): counters that only grow, and the orders still open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Backlog {
    pub ordered: i64,
    pub filled: i64,
    pub cancelled: i64,
    pub open: Vec<ReservationId>,
}

impl Backlog {
    /// Units still waiting: ordered − filled − cancelled.
    pub fn waiting(&self) -> i64 {
        self.ordered - self.filled - self.cancelled
    }
}

/// One change of a backlog item: counters added, and the order listed (`Some(true)`) or
/// unlisted (`Some(false)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BacklogStep {
    pub ordered: u32,
    pub filled: u32,
    pub cancelled: u32,
    pub list: Option<bool>,
}

/// FIFO: which of the waiting locks (any order) get how many units of `available`, oldest
/// order first (ties by id). Only live locks are filled.
pub fn fifo(sku: &Sku, locks: &[Reservation], available: i64) -> Vec<(ReservationId, u32)> {
    let mut waiting: Vec<&Reservation> = locks.iter().filter(|r| waits(r) && open_of(r, sku) > 0).collect();
    waiting.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    let mut left = u32::try_from(available.max(0)).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    for r in waiting {
        let n = open_of(r, sku).min(left);
        if n == 0 {
            break;
        }
        out.push((r.id.clone(), n));
        left -= n;
    }
    out
}

/// Takes `n` units from shards with `available` (index = shard), the fullest first.
pub fn pieces_from(available: &[i64], n: u32) -> Option<Vec<Piece>> {
    let mut order: Vec<usize> = (0..available.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(available[i]), i));
    let mut left = i64::from(n);
    let mut out = Vec::new();
    for i in order {
        if left == 0 {
            break;
        }
        let take = available[i].min(left);
        if take > 0 {
            out.push(Piece { shard: u16::try_from(i).ok()?, quantity: u32::try_from(take).ok()? });
            left -= take;
        }
    }
    (left == 0).then_some(out)
}

/// Fits the lock's BACKORDER lines of `sku` into `available` units (line by line, in order):
/// each holds what is left and records the rest as `short`; a line holding nothing has no
/// pieces, one holding something gets a placeholder piece for the caller's re-plan. `false`
/// when the lock has no BACKORDER line of `sku` (a strict SKU is refused as short instead).
pub fn shorten(r: &mut Reservation, sku: &Sku, available: i64) -> bool {
    let mut left = u32::try_from(available.max(0)).unwrap_or(u32::MAX);
    let mut any = false;
    for l in r.lines.iter_mut().filter(|l| &l.sku == sku) {
        let Some(b) = l.backorder.as_mut() else { continue };
        any = true;
        let held = l.quantity.min(left);
        left -= held;
        *b = BackorderLine { short: l.quantity - held, filled: 0 };
        l.pieces = if held == 0 { Vec::new() } else { vec![Piece { shard: 0, quantity: held }] };
    }
    any
}

#[cfg(test)]
mod tests;
