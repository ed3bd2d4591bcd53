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
use super::plan::{Action, CounterMove, Op, Target};
use super::reservation::{LockStatus, Reservation, ReservedLine};
use super::{ReservationId, Sku};
use serde::{Deserialize, Serialize};

/// Whether a SKU may be sold short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Oversell {
    /// Never: a short checkout is refused (409 insufficient_stock). The default.
    #[default]
    Strict,
    /// A short checkout is accepted; the shortfall waits for a restock (backordered).
    Backorder,
}

impl Oversell {
    pub fn is_strict(&self) -> bool {
        *self == Oversell::Strict
    }
}

/// Whether a model may declare `oversell: BACKORDER`: counted units of the SKU's own, taken at
/// order (a date, a bundle's children, codes, a supplier's or unlimited stock cannot be filled
/// later by a restock of the SKU; pay-time and at-shipment stock move at another step).
pub fn may_backorder(m: &super::model::InventoryModel) -> bool {
    use super::model::{Deduct, Management, Unit};
    m.management == Management::Quantity && m.unit == Unit::Single && m.deduct == Deduct::AtOrder
}

/// The backorder part of an order line of a BACKORDER SKU (present on every such line, `short`
/// 0 when the stock covered it): `short` units were missing at order, `filled` of them have
/// since been taken from a restock (the line's `pieces` hold `quantity − short + filled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BackorderLine {
    pub short: u32,
    #[serde(default)]
    pub filled: u32,
}

impl BackorderLine {
    /// Units still waiting for a restock.
    pub fn open(&self) -> u32 {
        self.short.saturating_sub(self.filled)
    }
}

/// Units of the line still waiting for a restock.
pub fn open_units(l: &ReservedLine) -> u32 {
    l.backorder.map_or(0, |b| b.open())
}

/// Units the lock holds for `sku` still waiting.
pub fn open_of(r: &Reservation, sku: &Sku) -> u32 {
    r.lines.iter().filter(|l| &l.sku == sku).map(open_units).sum()
}

/// The lock's fill version: units filled over all its lines. Every lock move is conditional on
/// it (a move planned from a copy read before a fill would write the old pieces back).
pub fn fill_version(r: &Reservation) -> u64 {
    r.lines.iter().filter_map(|l| l.backorder).map(|b| u64::from(b.filled)).sum()
}

/// A lock that still waits for a restock: live (FROZEN or SOLD) with open units.
pub fn waits(r: &Reservation) -> bool {
    matches!(r.status, LockStatus::Frozen | LockStatus::Sold) && r.lines.iter().any(|l| open_units(l) > 0)
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

fn step(sku: &Sku, s: BacklogStep) -> Action {
    Action { target: Target::Backlog { sku: sku.clone() }, op: Op::Backlog(s) }
}

/// SKUs of the lock's lines with a shortfall (each once, in line order).
fn short_skus(r: &Reservation) -> Vec<Sku> {
    let mut out: Vec<Sku> = Vec::new();
    for l in r.lines.iter().filter(|l| l.backorder.is_some_and(|b| b.short > 0)) {
        if !out.contains(&l.sku) {
            out.push(l.sku.clone());
        }
    }
    out
}

/// The freeze's backlog writes: each short SKU's `ordered` grows by the lock's shortfall and
/// the order is listed.
pub fn freeze_steps(r: &Reservation) -> Vec<Action> {
    short_skus(r)
        .iter()
        .map(|sku| {
            let short = r.lines.iter().filter(|l| &l.sku == sku).filter_map(|l| l.backorder).map(|b| b.short).sum();
            step(sku, BacklogStep { ordered: short, list: Some(true), ..BacklogStep::default() })
        })
        .collect()
}

/// A release or restock's backlog writes: what was still open is cancelled and the order
/// unlisted (its filled units go back with its pieces, as any unit of the lock).
pub fn cancel_steps(r: &Reservation) -> Vec<Action> {
    short_skus(r)
        .iter()
        .map(|sku| step(sku, BacklogStep { cancelled: open_of(r, sku), list: Some(false), ..BacklogStep::default() }))
        .collect()
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

/// A fill of `n` units of `sku` into lock `r` from `pieces`: the lock as it will be stored
/// (its lines' pieces grown, `filled` counted, oldest lines first) and the counter writes —
/// each shard `available → locked` for a FROZEN lock (`→ sold` for a SOLD one), the backlog's
/// `filled`, and the order unlisted once nothing of it waits. `None` when the lock does not wait
/// for `n` units of the SKU or is not live.
pub fn fill(r: &Reservation, sku: &Sku, pieces: &[Piece], n: u32) -> Option<(Reservation, Vec<Action>)> {
    let how = match r.status {
        LockStatus::Frozen => CounterMove::Freeze,
        LockStatus::Sold => CounterMove::Retake,
        _ => return None,
    };
    if n == 0 || open_of(r, sku) < n || pieces.iter().map(|p| p.quantity).sum::<u32>() != n {
        return None;
    }
    let mut after = r.clone();
    let mut left = n;
    let mut given: Vec<Piece> = pieces.to_vec();
    for l in after.lines.iter_mut().filter(|l| &l.sku == sku) {
        let Some(b) = l.backorder.as_mut() else { continue };
        let take = b.open().min(left);
        if take == 0 {
            continue;
        }
        b.filled += take;
        left -= take;
        let mut need = take;
        for p in given.iter_mut().filter(|p| p.quantity > 0) {
            let t = p.quantity.min(need);
            match l.pieces.iter_mut().find(|q| q.shard == p.shard) {
                Some(q) => q.quantity += t,
                None => l.pieces.push(Piece { shard: p.shard, quantity: t }),
            }
            p.quantity -= t;
            need -= t;
            if need == 0 {
                break;
            }
        }
    }
    let mut actions: Vec<Action> = pieces
        .iter()
        .map(|p| Action {
            target: Target::Shard { sku: sku.clone(), shard: p.shard },
            op: Op::Move { how, quantity: p.quantity, ring: None },
        })
        .collect();
    let unlist = open_of(&after, sku) == 0;
    actions.push(step(sku, BacklogStep { filled: n, list: unlist.then_some(false), ..BacklogStep::default() }));
    Some((after, actions))
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
