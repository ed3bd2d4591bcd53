//! The invariants of docs/architecture.md, "Invariants", as pure checks over a snapshot. Reconcile runs
//! [`check_stock`]; test suites and the demo run [`check_all`] at quiescence.

use super::kind::Kind;
use super::order::{Order, OrderRecord, PaymentOutcome};
use super::reservation::{CodeFate, LockStatus, Reservation};
use super::{CampaignId, OrderId, Sku, UserId};
use std::collections::HashMap;

pub use backlog::check_backlogs;

mod backlog;
mod links;
mod order_record;
mod redeemed;
mod supplier_codes;
mod warehouses;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardCounts {
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkuSnapshot {
    pub sku: Sku,
    /// Net units ever added through adjustments: the SKU's total must equal it.
    pub stocked: i64,
    pub shards: Vec<ShardCounts>,
    pub per_user_limit: Option<u32>,
}

impl SkuSnapshot {
    pub fn totals(&self) -> ShardCounts {
        self.shards.iter().fold(ShardCounts::default(), |a, s| ShardCounts {
            available: a.available + s.available,
            locked: a.locked + s.locked,
            sold: a.sold + s.sold,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Invariant 1: a counter below zero.
    NegativeCounter {
        sku: Sku,
        shard: usize,
    },
    /// Invariant 1: `available + locked + sold` differs from what was stocked.
    TotalMismatch {
        sku: Sku,
        total: i64,
        stocked: i64,
    },
    /// Invariant 2: `locked` differs from the sum of FROZEN lock quantities.
    LockedMismatch {
        sku: Sku,
        locked: i64,
        frozen: i64,
    },
    /// Invariant 2 for sales: `sold` differs from the sum of SOLD lock quantities (each cell:
    /// a SKU, a calendar date, a bundle's child).
    SoldMismatch {
        sku: Sku,
        sold: i64,
        locks: i64,
    },
    /// Invariant 2: a FROZEN lock nobody will resolve.
    StrandedLock {
        reservation: String,
    },
    /// Invariant 3: an order's state and its lock disagree.
    OrderLockMismatch {
        order: String,
        status: String,
        lock: Option<LockStatus>,
    },
    /// Invariant 4: a payment id applied more than once, or a late payment refunded ≠ once.
    PaymentAppliedTwice {
        payment_id: String,
    },
    RefundCount {
        payment_id: String,
        count: usize,
    },
    /// Invariant 5: a user holds more than the per-user limit, or the counter is off.
    UserLimit {
        sku: Sku,
        user: UserId,
        holds: i64,
        counter: i64,
        limit: u32,
    },
    /// Campaign identity: a quota counter below zero, `available + locked + sold` ≠ quota, or
    /// `locked` ≠ Σ FROZEN campaign pieces.
    CampaignQuota {
        campaign: CampaignId,
        sku: Sku,
        detail: String,
    },
    /// A buyer holds more than a campaign item's per-user limit, or that counter is off.
    CampaignUserLimit {
        campaign: CampaignId,
        sku: Sku,
        user: UserId,
        holds: i64,
        counter: i64,
    },
    /// An order was shipped though its lock is not SOLD (or restocked after a return), or its
    /// stock was lost (oversold, pay-time short): goods out that the counters never sold.
    ShippedWithoutStock {
        order: String,
        lock: Option<LockStatus>,
    },
    /// A buyer's pending-checkout counter differs from their FROZEN checkouts that charged it.
    PendingCount {
        user: UserId,
        frozen: i64,
        counter: i64,
    },
    /// Code pool identity (docs/code-pools.md): a ring disagrees with its shard's `available`,
    /// uploads ≠ stocked, a held code is missing or unclaimed, or a code is held (or pooled)
    /// twice. The detail names fingerprints and positions, never a code.
    CodePool {
        sku: Sku,
        detail: String,
    },
    /// A closed (cancelled, expired, failed) SUPPLIER order still holds a booking at its
    /// supplier (CONFIRMED or PENDING, never cancelled), or a FAILED order holds stock.
    SupplierBookingHeld {
        order: String,
        sku: Sku,
        status: String,
    },
    /// docs/suppliers.md, "Codes issued by the supplier": codes issued for an order never paid,
    /// a wrong count, a paid order with no issue started, or one code in two orders.
    SupplierCodes {
        order: String,
        detail: String,
    },
    /// A paid SUPPLIER order whose stock went back on sale (refunded before service, or returned
    /// with restock: its lock restocks) still holds a booking at its supplier (CONFIRMED or
    /// PENDING, never cancelled).
    RefundedSupplierBookingHeld {
        order: String,
        /// The order's status (REFUNDING, REFUNDED, RETURNED).
        order_status: String,
        sku: Sku,
        /// The booking's status.
        status: String,
    },
    /// docs/order-record.md: the log ends at the status; a discount < amount; paid its pay amount.
    OrderRecord {
        order: String,
        detail: String,
    },
    /// A BACKORDER SKU's backlog disagrees with its locks, or a backorder line holds other than
    /// its quantity less what waits (docs/inventory-models.md, "Backorders (oversell allowed)").
    Backlog {
        sku: Sku,
        detail: String,
    },
    /// A warehoused line's draws are not its own SKU's warehouse cells, do not add up to its
    /// quantity, or sit beside units of the SKU itself (docs/inventory-models.md, "Warehouses").
    WarehouseAllocation {
        reservation: String,
        sku: Sku,
        detail: String,
    },
}

/// The counting half of the code pool identity (what reconcile checks without reading codes or
/// locks): each shard's ring holds exactly its `available` codes, and codes uploaded − codes
/// retired because they expired = stocked.
pub fn check_ring_identity(snap: &SkuSnapshot, rings: &[super::codes::Ring]) -> Vec<Violation> {
    let bad = |detail: String| Violation::CodePool { sku: snap.sku.clone(), detail };
    let mut out = Vec::new();
    for (i, sh) in snap.shards.iter().enumerate() {
        let g = rings.get(i).copied().unwrap_or_default();
        if g.available() != sh.available {
            out.push(bad(format!("shard {i}: ring holds {} codes, available = {}", g.available(), sh.available)));
        }
    }
    let uploaded: i64 = rings.iter().map(|g| g.uploaded as i64).sum();
    let expired: i64 = rings.iter().map(|g| g.expired as i64).sum();
    if uploaded - expired != snap.stocked {
        out.push(bad(format!("{uploaded} codes uploaded, {expired} retired expired, but stocked = {}", snap.stocked)));
    }
    out
}

/// Every code pool's rings and the fingerprint at each ring position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodePools {
    pub pools: Vec<Sku>,
    pub rings: HashMap<(Sku, u16), super::codes::Ring>,
    pub slots: HashMap<(Sku, u16, u64), String>,
    /// The slots whose code was redeemed (docs/code-pools.md, "Redemption").
    pub redeemed: std::collections::HashSet<(Sku, u16, u64)>,
}

/// Code pool identity: for every pool, each shard's ring holds exactly its `available` codes;
/// codes uploaded = stocked (so = available + locked + sold); every code a FROZEN, SOLD or
/// RESTOCKED lock holds is stored at a position before its ring's head; and no code (by
/// fingerprint) is held twice, pooled twice, or both held and pooled.
pub fn check_code_pools(skus: &[SkuSnapshot], c: &CodePools, locks: &[Reservation]) -> Vec<Violation> {
    let mut out = Vec::new();
    for p in &c.pools {
        let bad = |detail: String| Violation::CodePool { sku: p.clone(), detail };
        let Some(snap) = skus.iter().find(|s| &s.sku == p) else { continue };
        let ring = |i: u16| c.rings.get(&(p.clone(), i)).copied().unwrap_or_default();
        let rings: Vec<_> = (0..snap.shards.len()).map(|i| ring(i as u16)).collect();
        out.extend(check_ring_identity(snap, &rings));
        let mut seen: HashMap<&str, &'static str> = HashMap::new();
        for (i, g) in rings.iter().enumerate() {
            for pos in g.head..g.tail {
                match c.slots.get(&(p.clone(), i as u16, pos)) {
                    None => out.push(bad(format!("shard {i}: pooled position {pos} is empty"))),
                    Some(fp) => {
                        if seen.insert(fp.as_str(), "pooled").is_some() {
                            out.push(bad(format!("fingerprint {fp} is pooled twice")));
                        }
                    }
                }
            }
        }
        // shown codes are the buyer's for good: their lock is never released (a reveal needs a
        // SOLD lock, and a SOLD lock is only ever restocked, which leaves codes sold)
        let shown =
            |r: &Reservation| matches!(r.code_fate, Some(CodeFate::Revealed | CodeFate::Voided | CodeFate::Redeemed));
        for r in locks.iter().filter(|r| shown(r) && r.status == LockStatus::Released) {
            out.push(bad(format!("lock {}: its codes were shown, yet it is released", r.id)));
        }
        out.extend(redeemed::check_redeemed(p, c, locks));
        for r in locks.iter().filter(|r| r.status != LockStatus::Released) {
            for l in r.lines.iter().filter(|l| &l.sku == p) {
                for g in l.codes.iter().flatten() {
                    let head = ring(g.shard).head;
                    for pos in g.from..g.from + u64::from(g.count) {
                        if pos >= head {
                            out.push(bad(format!("lock {}: position {pos} of shard {} is not claimed", r.id, g.shard)));
                        }
                        match c.slots.get(&(p.clone(), g.shard, pos)) {
                            None => {
                                out.push(bad(format!("lock {}: no code at shard {} position {pos}", r.id, g.shard)))
                            }
                            Some(fp) => {
                                if let Some(was) = seen.insert(fp.as_str(), "held") {
                                    out.push(bad(format!("fingerprint {fp} is held by lock {} and {was}", r.id)));
                                }
                            }
                        }
                    }
                }
            }
        }
        // a released lock's codes went back to the ring: each is pooled again, or held by the
        // next buyer — never lost, never still bound to the released lock alone
        for r in locks.iter().filter(|r| r.status == LockStatus::Released) {
            for l in r.lines.iter().filter(|l| &l.sku == p) {
                for g in l.codes.iter().flatten() {
                    for pos in g.from..g.from + u64::from(g.count) {
                        if let Some(fp) = c.slots.get(&(p.clone(), g.shard, pos)) {
                            if !seen.contains_key(fp.as_str()) {
                                out.push(bad(format!(
                                    "lock {} (released): fingerprint {fp} is neither pooled nor held",
                                    r.id
                                )));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// One campaign item's quota shards, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignItemSnapshot {
    pub campaign: CampaignId,
    pub sku: Sku,
    pub quota: i64,
    pub per_user_limit: Option<u32>,
    /// Every quota shard of the item, over all its waves.
    pub shards: Vec<ShardCounts>,
    /// A waved item's net quota per wave (`quota + rolled_in - rolled_out`), each held by its
    /// own `shards.len() / waves.len()` shards; empty without waves (docs/campaigns.md, "Waves").
    pub waves: Vec<i64>,
}

/// Campaign quotas and the anti-hoarding counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CampaignCounters {
    pub items: Vec<CampaignItemSnapshot>,
    pub user_counters: Vec<(CampaignId, Sku, UserId, i64)>,
    pub pending: Vec<(UserId, i64)>,
}

/// The campaign identity `quota = available + locked + sold`, every counter ≥ 0 (what reconcile
/// checks on its own: it needs no lock records).
pub fn check_quota_identity(items: &[CampaignItemSnapshot]) -> Vec<Violation> {
    let mut out = Vec::new();
    for item in items {
        let bad = |detail: String| Violation::CampaignQuota {
            campaign: item.campaign.clone(),
            sku: item.sku.clone(),
            detail,
        };
        if item.shards.iter().any(|s| s.available < 0 || s.locked < 0 || s.sold < 0) {
            out.push(bad("a quota shard counter is negative".into()));
        }
        let total: i64 = item.shards.iter().map(|s| s.available + s.locked + s.sold).sum();
        if total != item.quota {
            out.push(bad(format!("available+locked+sold = {total} but quota = {}", item.quota)));
        }
        // per wave: what its own shards hold is its quota, plus what rolled in, minus what rolled out
        let per = item.shards.len().checked_div(item.waves.len()).unwrap_or(0).max(1);
        for (w, (net, shards)) in item.waves.iter().zip(item.shards.chunks(per)).enumerate() {
            let held: i64 = shards.iter().map(|s| s.available + s.locked + s.sold).sum();
            if held != *net {
                out.push(bad(format!("wave {w}: available+locked+sold = {held} but its quota (net of rolls) = {net}")));
            }
        }
    }
    out
}

/// The campaign identity per item (with `locked` = Σ FROZEN campaign pieces) and the
/// anti-hoarding counters.
pub fn check_campaigns(c: &CampaignCounters, reservations: &[Reservation]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut frozen: HashMap<(&CampaignId, &Sku), i64> = HashMap::new();
    let mut holds: HashMap<(&CampaignId, &Sku, &UserId), i64> = HashMap::new();
    let mut pending: HashMap<&UserId, i64> = HashMap::new();
    for r in reservations {
        for l in &r.lines {
            let Some(cl) = &l.campaign else { continue };
            if r.status == LockStatus::Frozen {
                *frozen.entry((&cl.campaign_id, &l.sku)).or_default() += i64::from(l.quantity);
            }
            if let (true, Some(u), true) = (cl.limited, &r.user, keeps_allowance(r, l)) {
                *holds.entry((&cl.campaign_id, &l.sku, u)).or_default() += i64::from(l.quantity);
            }
        }
        if let (true, Some(u), LockStatus::Frozen) = (r.pending, &r.user, r.status) {
            *pending.entry(u).or_default() += 1;
        }
    }
    out.extend(check_quota_identity(&c.items));
    for item in &c.items {
        let locked: i64 = item.shards.iter().map(|s| s.locked).sum();
        let f = frozen.get(&(&item.campaign, &item.sku)).copied().unwrap_or(0);
        if f != locked {
            out.push(Violation::CampaignQuota {
                campaign: item.campaign.clone(),
                sku: item.sku.clone(),
                detail: format!("locked = {locked} but FROZEN campaign pieces hold {f}"),
            });
        }
    }
    let limits: HashMap<(&CampaignId, &Sku), u32> =
        c.items.iter().filter_map(|i| i.per_user_limit.map(|l| ((&i.campaign, &i.sku), l))).collect();
    let counters: HashMap<(&CampaignId, &Sku, &UserId), i64> =
        c.user_counters.iter().map(|(cid, s, u, n)| ((cid, s, u), *n)).collect();
    let mut keys: Vec<_> = holds.keys().chain(counters.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let h = holds.get(&k).copied().unwrap_or(0);
        let n = counters.get(&k).copied().unwrap_or(0);
        let over = limits.get(&(k.0, k.1)).is_some_and(|l| h > i64::from(*l));
        if over || h != n {
            out.push(Violation::CampaignUserLimit {
                campaign: k.0.clone(),
                sku: k.1.clone(),
                user: k.2.clone(),
                holds: h,
                counter: n,
            });
        }
    }
    let counted: HashMap<&UserId, i64> = c.pending.iter().map(|(u, n)| (u, *n)).collect();
    let mut users: Vec<&UserId> = pending.keys().chain(counted.keys()).copied().collect();
    users.sort();
    users.dedup();
    for u in users {
        let f = pending.get(u).copied().unwrap_or(0);
        let n = counted.get(u).copied().unwrap_or(0);
        if f != n {
            out.push(Violation::PendingCount { user: u.clone(), frozen: f, counter: n });
        }
    }
    out
}

/// Whether a line of `r` still counts against its buyer's allowance: a released lock gives
/// it back, a restocked one too unless its kind keeps it (codes stay sold, so their allowance
/// stays used — docs/inventory-models.md).
fn keeps_allowance(r: &Reservation, l: &super::reservation::ReservedLine) -> bool {
    match r.status {
        LockStatus::Released => false,
        LockStatus::Restocked => !Kind::of_line(l).rules().allowance_back,
        LockStatus::Frozen | LockStatus::Sold => true,
    }
}

/// Units each cell holds for locks in `status`: a pay-time line holds nothing while FROZEN; a
/// code line of a RESTOCKED lock stays sold (its codes are never handed out again).
fn held_by_cell(locks: &[Reservation], status: LockStatus) -> HashMap<Sku, i64> {
    let mut out: HashMap<Sku, i64> = HashMap::new();
    let codes_stay = |r: &Reservation| status == LockStatus::Sold && r.status == LockStatus::Restocked;
    for r in locks.iter().filter(|r| r.status == status || codes_stay(r)) {
        let lines = r.lines.iter().filter(|l| !(l.at_payment && status == LockStatus::Frozen));
        for l in lines.filter(|l| r.status == status || l.codes.is_some()) {
            for c in l.cells() {
                *out.entry(c.cell).or_default() += i64::from(c.quantity);
            }
        }
    }
    out
}

/// `sold = Σ SOLD` for every cell (all locks must be given: a check over all reservations).
pub fn check_sold(skus: &[SkuSnapshot], locks: &[Reservation]) -> Vec<Violation> {
    let sold = held_by_cell(locks, LockStatus::Sold);
    skus.iter()
        .filter_map(|s| {
            let (have, want) = (s.totals().sold, sold.get(&s.sku).copied().unwrap_or(0));
            (have != want).then(|| Violation::SoldMismatch { sku: s.sku.clone(), sold: have, locks: want })
        })
        .collect()
}

/// Invariant 1 and the `locked = Σ FROZEN` half of invariant 2 for the given SKUs.
pub fn check_stock(skus: &[SkuSnapshot], frozen: &[Reservation]) -> Vec<Violation> {
    let frozen_by_sku = held_by_cell(frozen, LockStatus::Frozen);
    let mut out = Vec::new();
    for s in skus {
        for (i, c) in s.shards.iter().enumerate() {
            if c.available < 0 || c.locked < 0 || c.sold < 0 {
                out.push(Violation::NegativeCounter { sku: s.sku.clone(), shard: i });
            }
        }
        let t = s.totals();
        let total = t.available + t.locked + t.sold;
        if total != s.stocked {
            out.push(Violation::TotalMismatch { sku: s.sku.clone(), total, stocked: s.stocked });
        }
        let f = frozen_by_sku.get(&s.sku).copied().unwrap_or(0);
        if f != t.locked {
            out.push(Violation::LockedMismatch { sku: s.sku.clone(), locked: t.locked, frozen: f });
        }
    }
    out
}

/// Everything a quiescent system must satisfy.
pub struct Snapshot {
    pub skus: Vec<SkuSnapshot>,
    pub reservations: Vec<Reservation>,
    pub orders: Vec<(OrderId, OrderRecord)>,
    pub user_counters: Vec<(Sku, UserId, i64)>,
    pub now_s: i64,
    /// A FROZEN lock younger than this may still be waiting for its order (docs/architecture.md, "Events and self-healing", invariant 2).
    pub check_delay_s: i64,
    pub campaigns: CampaignCounters,
    pub codes: CodePools,
    /// Each BACKORDER SKU's backlog item, as stored (a SKU never short has none).
    pub backlogs: Vec<(Sku, super::backorder::Backlog)>,
}

/// All five invariants of docs/architecture.md, "Invariants"
pub fn check_all(s: &Snapshot) -> Vec<Violation> {
    let mut out = check_stock(&s.skus, &s.reservations);
    out.extend(check_sold(&s.skus, &s.reservations));
    out.extend(check_campaigns(&s.campaigns, &s.reservations));
    out.extend(check_code_pools(&s.skus, &s.codes, &s.reservations));
    out.extend(links::check_stranded_locks(s));
    out.extend(links::check_orders_against_locks(s));
    out.extend(links::check_user_limits(s));
    out.extend(supplier_codes::check(&s.orders));
    out.extend(warehouses::check_allocations(&s.reservations));
    out.extend(check_backlogs(&s.backlogs, &s.reservations));
    out
}

/// A closed SUPPLIER order, or a refunded one (its lock restocks), holds nothing at its
/// supplier: every booking it made is FAILED or was CANCELLED (its lock, checked above, is
/// RELEASED, or RESTOCKED).
fn check_bookings(o: &Order, out: &mut Vec<Violation>) {
    use super::supplier::BookingStatus;
    if !super::events::releases_bookings(o) {
        return;
    }
    for b in o.supplier.iter().filter(|b| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending)) {
        let (order, sku, status) = (o.id.to_string(), b.sku.clone(), b.status.as_str().to_owned());
        out.push(if o.status.is_closed_unpaid() {
            Violation::SupplierBookingHeld { order, sku, status }
        } else {
            Violation::RefundedSupplierBookingHeld { order, order_status: o.status.as_str().to_owned(), sku, status }
        });
    }
}

fn check_payments<'a>(o: &'a Order, applied: &mut HashMap<&'a str, usize>, out: &mut Vec<Violation>) {
    let mut refunds: HashMap<&str, usize> = HashMap::new();
    for p in &o.payments {
        match p.outcome {
            PaymentOutcome::Applied => *applied.entry(p.payment_id.as_str()).or_default() += 1,
            PaymentOutcome::RefundRequested => *refunds.entry(p.payment_id.as_str()).or_default() += 1,
            _ => {}
        }
    }
    for (p, n) in refunds {
        if n != 1 {
            out.push(Violation::RefundCount { payment_id: p.to_owned(), count: n });
        }
    }
}

mod shipment;
#[cfg(test)]
mod tests;
