//! A plan's backorder steps (docs/inventory-models.md, "Backorders (oversell allowed)"): the
//! backlog writes of a freeze and of a release or restock, and a restock's fill of a waiting
//! lock. The backorder's own arithmetic (what a lock still waits for, FIFO order) is
//! [`crate::backorder`]'s; the writes it leads to are the plan's.

use super::{Action, CounterMove, Op, Target};
use crate::allocation::Piece;
use crate::backorder::{open_of, BacklogStep};
use crate::reservation::{LockStatus, Reservation};
use crate::Sku;

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
