//! The stock table in memory, with the conditions and cancellation mapping of
//! [`crate::adapters::dynamo::stock`]. A transaction runs under one lock: every condition is
//! checked first and nothing is written unless all hold.

use super::lock;
use crate::domain::backorder::fill_version;
use crate::domain::campaign::{gate, Campaign};
use crate::domain::codes::{lifecycle, BatchResult, CodeAppend, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{move_cause, Cause};
use crate::domain::kind::Stocking;
use crate::domain::plan::{self, Action, CounterMove, Op, RingStep, Target};
use crate::domain::reservation::{LockStatus, Reservation, MAX_TRANSACTION_ACTIONS};
use crate::domain::{CampaignId, ReservationId, Sku, UserId};
use crate::ports::{AdjustRejection, Adjustment, CampaignAdjustment, SkuMeta};
use crate::ports::{AdminStamp, Stamped};
use anyhow::anyhow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

mod campaigns;
mod catalogue;
mod codes;
mod locks;
mod queues;
mod shards;

#[derive(Default)]
struct State {
    metas: BTreeMap<Sku, SkuMeta>,
    /// Product shards with the stop-sale flag copied onto them (as in DynamoDB).
    shards: HashMap<(Sku, u16), ShardItem>,
    reservations: BTreeMap<ReservationId, Reservation>,
    /// Per-user counters (`LIM#<sku>#<user>`, attribute `n`).
    limits: BTreeMap<(Sku, UserId), i64>,
    adjustments: HashMap<(Sku, String), Adjustment>,
    campaigns: BTreeMap<CampaignId, Campaign>,
    /// Quota shards with the window and pause flag copied onto them (as in DynamoDB).
    quota: HashMap<(CampaignId, Sku, u16), QuotaShard>,
    campaign_limits: BTreeMap<(CampaignId, Sku, UserId), i64>,
    pending: BTreeMap<UserId, i64>,
    /// Spent queue admissions (docs/waiting-room.md).
    admissions: BTreeMap<(CampaignId, u64), i64>,
    /// The waiting rooms: ticket counters, tickets by buyer, the rooms' clocks.
    queue_counters: HashMap<(CampaignId, u16), u64>,
    tickets: HashMap<(CampaignId, UserId), crate::domain::queue::Ticket>,
    rooms: HashMap<CampaignId, crate::domain::queue::Room>,
    campaign_adjustments: HashMap<(CampaignId, String), CampaignAdjustment>,
    /// The journal cause (`ref`, `actor`, `why`) last stamped on each counter item, by its
    /// DynamoDB key (`SKU#<sku>#<n>`, `CQ#<campaign>#<sku>#<n>`).
    causes: HashMap<String, Cause>,
    /// Code pools: each shard's ring, the codes at its positions, the fingerprints the pool
    /// holds (with the batch that added each) and finished batches.
    rings: HashMap<(Sku, u16), Ring>,
    code_slots: HashMap<(Sku, u16, u64), StoredCode>,
    fingerprints: HashMap<(Sku, String), String>,
    batches: HashMap<(Sku, String), BatchResult>,
    /// Code slots bound to a reservation (`o`), and slots whose code was given back (`ret`).
    taken: HashSet<(Sku, u16, u64)>,
    given_back: HashSet<(Sku, u16, u64)>,
    /// Claimed code slots retired unsold because they expired (`xpd`; docs/code-pools.md, "Expiry").
    expired: HashSet<(Sku, u16, u64)>,
    /// BACKORDER SKUs' backlog items (`BLOG#<sku>`; `open` kept as a set, in id order).
    backlogs: BTreeMap<Sku, crate::domain::backorder::Backlog>,
    /// The sales switch's item (`SALE#switch`, in the stock table as in DynamoDB): a freeze may
    /// check it; the sale store ([`super::MemorySale::sharing`]) reads and writes it.
    switch: SwitchCell,
}

/// The sales switch item the memory stock and sale stores share.
pub type SwitchCell = std::sync::Arc<Mutex<Option<crate::domain::sale::SalesSwitch>>>;

/// A product shard item (`SKU#<sku>#<n>`): its counters and the stop-sale flag (`ps`) that
/// `set_sku_paused` writes on it and `put_sku`/`rebalance` copy from the metadata onto a new
/// shard. The freeze condition reads the flag here, never from the metadata.
#[derive(Debug, Clone, Copy, Default)]
struct ShardItem {
    counts: ShardCounts,
    paused: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct QuotaShard {
    counts: ShardCounts,
    starts_at: i64,
    ends_at: i64,
    paused: bool,
}

fn shard_key(sku: &Sku, shard: u16) -> String {
    format!("SKU#{sku}#{shard}")
}

fn quota_key(campaign: &CampaignId, sku: &Sku, shard: u16) -> String {
    format!("CQ#{campaign}#{sku}#{shard}")
}

impl State {
    /// Stamps the cause of each counter move of `actions` on its item, as the DynamoDB
    /// adapter's update expressions do.
    fn stamp_moves(&mut self, r: &Reservation, actions: &[Action]) {
        for a in actions {
            let (key, Op::Move { how, .. }) = (
                match &a.target {
                    Target::Shard { sku, shard } => shard_key(sku, *shard),
                    Target::Quota { campaign, sku, shard } => quota_key(campaign, sku, *shard),
                    _ => continue,
                },
                &a.op,
            ) else {
                continue;
            };
            self.causes.insert(key, move_cause(r, *how));
        }
    }

    /// Where a release puts each code line's codes back: the ring tail now, and the codes it took.
    fn code_returns(&self, r: &Reservation) -> Vec<CodeAppend> {
        let mut out: Vec<CodeAppend> = Vec::new();
        for l in &r.lines {
            for range in l.codes.iter().flatten() {
                let codes = (range.from..range.from + u64::from(range.count))
                    .filter_map(|p| self.code_slots.get(&(l.sku.clone(), range.shard, p)).cloned());
                match out.iter_mut().find(|a| a.cell == l.sku && a.shard == range.shard) {
                    Some(a) => a.codes.extend(codes),
                    None => {
                        let tail = self.rings.get(&(l.sku.clone(), range.shard)).map_or(0, |g| g.tail);
                        out.push(CodeAppend { cell: l.sku.clone(), shard: range.shard, tail, codes: codes.collect() });
                    }
                }
            }
        }
        out
    }

    fn shard(&self, sku: &Sku, shard: u16) -> Option<&ShardCounts> {
        self.shards.get(&(sku.clone(), shard)).map(|s| &s.counts)
    }

    fn shard_mut(&mut self, sku: &Sku, shard: u16) -> &mut ShardCounts {
        &mut self.shards.entry((sku.clone(), shard)).or_default().counts
    }

    /// Creates a shard item (empty counters, the pause flag of `meta`, and for a code pool an
    /// empty ring) unless it exists: what `put_sku` and `rebalance` put `attribute_not_exists`.
    fn create_shard(&mut self, meta: &SkuMeta, shard: u16) {
        let key = (meta.sku.clone(), shard);
        if self.shards.contains_key(&key) {
            return;
        }
        self.shards.insert(key.clone(), ShardItem { counts: ShardCounts::default(), paused: meta.paused });
        if Stocking::of(&meta.model).holds_codes() {
            self.rings.entry(key).or_default();
        }
    }

    fn counter(&self, t: &Target) -> i64 {
        match t {
            Target::Limit { sku, user } => self.limits.get(&(sku.clone(), user.clone())).copied().unwrap_or(0),
            Target::CampaignLimit { campaign, sku, user } => {
                self.campaign_limits.get(&(campaign.clone(), sku.clone(), user.clone())).copied().unwrap_or(0)
            }
            Target::Pending { user } => self.pending.get(user).copied().unwrap_or(0),
            Target::Admission { campaign, ticket } => {
                self.admissions.get(&(campaign.clone(), *ticket)).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    fn counter_mut(&mut self, t: &Target) -> Option<&mut i64> {
        Some(match t {
            Target::Limit { sku, user } => self.limits.entry((sku.clone(), user.clone())).or_default(),
            Target::CampaignLimit { campaign, sku, user } => {
                self.campaign_limits.entry((campaign.clone(), sku.clone(), user.clone())).or_default()
            }
            Target::Pending { user } => self.pending.entry(user.clone()).or_default(),
            Target::Admission { campaign, ticket } => self.admissions.entry((campaign.clone(), *ticket)).or_default(),
            _ => return None,
        })
    }

    /// Whether `a`'s condition holds now (`now_s` is the freeze's clock for the sale gates).
    fn holds(&self, a: &Action, now_s: i64) -> bool {
        match (&a.target, &a.op) {
            (Target::Shard { sku, shard }, Op::Move { how, quantity, ring }) => {
                let r = self.rings.get(&(sku.clone(), *shard)).copied().unwrap_or_default();
                // as the DynamoDB conditions: a ring step checks the tail, a freeze (which never
                // carries one) also the stop-sale flag on the shard itself
                let gate_ok = |item: &ShardItem| match ring {
                    Some(RingStep::Append { tail }) => r.tail == *tail,
                    None => *how != CounterMove::Freeze || !item.paused,
                };
                self.shards
                    .get(&(sku.clone(), *shard))
                    .is_some_and(|item| move_holds(&item.counts, *how, i64::from(*quantity)) && gate_ok(item))
            }
            (Target::CodeSlot { sku, shard, pos }, Op::PutCode(_)) => {
                !self.code_slots.contains_key(&(sku.clone(), *shard, *pos))
            }
            (Target::CodeSlot { sku, shard, pos }, Op::TakeCode) => {
                // as DynamoDB: `… AND (attribute_not_exists(xat) OR xat > :nowms)` — an expired
                // code is never handed out (docs/code-pools.md, "Expiry")
                let k = (sku.clone(), *shard, *pos);
                self.code_slots.get(&k).is_some_and(|c| lifecycle::valid_at(c.expires_at_ms, now_s * 1000))
                    && !self.taken.contains(&k)
                    && !self.given_back.contains(&k)
            }
            (Target::Quota { campaign, sku, shard }, Op::Move { how, quantity, .. }) => {
                self.quota.get(&(campaign.clone(), sku.clone(), *shard)).is_some_and(|q| {
                    move_holds(&q.counts, *how, i64::from(*quantity))
                        && (*how != CounterMove::Freeze || gate(q.starts_at, q.ends_at, q.paused, now_s).is_ok())
                })
            }
            (t, Op::Add { max_before, .. }) => max_before.is_none_or(|m| self.counter(t) <= m),
            // unconditional, as its DynamoDB update: the lock's condition decides
            (Target::Backlog { .. }, Op::Backlog(_)) => true,
            // as `attribute_not_exists(pk) OR mode = OPEN`
            (Target::SalesSwitch, Op::Open) => self
                .switch
                .lock()
                .is_ok_and(|s| s.as_ref().is_none_or(|s| s.mode == crate::domain::sale::SalesMode::Open)),
            _ => false,
        }
    }

    /// `ADD bo, bf, bc` and `ADD`/`DELETE q` (a string set: adding a listed id or removing an
    /// absent one changes nothing).
    fn backlog_step(&mut self, sku: &Sku, step: &crate::domain::backorder::BacklogStep, id: &ReservationId) {
        let b = self.backlogs.entry(sku.clone()).or_default();
        b.ordered += i64::from(step.ordered);
        b.filled += i64::from(step.filled);
        b.cancelled += i64::from(step.cancelled);
        match (step.list, b.open.binary_search(id)) {
            (Some(true), Err(at)) => b.open.insert(at, id.clone()),
            (Some(false), Ok(at)) => {
                b.open.remove(at);
            }
            _ => {}
        }
    }

    fn apply(&mut self, a: &Action, id: &ReservationId) {
        match (&a.target, &a.op) {
            (Target::Shard { sku, shard }, Op::Move { how, quantity, ring }) => {
                move_apply(self.shard_mut(sku, *shard), *how, i64::from(*quantity));
                if let Some(RingStep::Append { .. }) = ring {
                    self.rings.entry((sku.clone(), *shard)).or_default().tail += u64::from(*quantity);
                }
            }
            (Target::CodeSlot { sku, shard, pos }, Op::PutCode(c)) => {
                self.code_slots.insert((sku.clone(), *shard, *pos), c.clone());
            }
            (Target::CodeSlot { sku, shard, pos }, Op::TakeCode) => {
                self.taken.insert((sku.clone(), *shard, *pos));
            }
            (Target::Quota { campaign, sku, shard }, Op::Move { how, quantity, .. }) => {
                let q = self.quota.entry((campaign.clone(), sku.clone(), *shard)).or_default();
                move_apply(&mut q.counts, *how, i64::from(*quantity))
            }
            (t, Op::Add { delta, .. }) => {
                if let Some(n) = self.counter_mut(t) {
                    *n += delta;
                }
            }
            (Target::Backlog { sku }, Op::Backlog(step)) => self.backlog_step(sku, step, id),
            _ => {}
        }
    }

    /// Runs `actions` as one transaction after a status condition on the reservation: every
    /// condition is evaluated first, nothing is written unless all hold. `Err` lists the
    /// targets whose conditions failed (DynamoDB reports each item's code).
    fn transact(
        &mut self,
        id: &ReservationId,
        status_ok: bool,
        actions: &[Action],
        now_s: i64,
    ) -> Result<(), Vec<Target>> {
        let mut failed: Vec<Target> =
            actions.iter().filter(|a| !self.holds(a, now_s)).map(|a| a.target.clone()).collect();
        if !status_ok {
            failed.insert(0, Target::Reservation);
        }
        if !failed.is_empty() {
            return Err(failed);
        }
        for a in actions {
            self.apply(a, id);
        }
        Ok(())
    }
}

fn move_holds(c: &ShardCounts, how: CounterMove, q: i64) -> bool {
    match how {
        CounterMove::Freeze | CounterMove::Retake => c.available >= q || crate::mutant!("freeze-skip-available"),
        CounterMove::Sell | CounterMove::Release => c.locked >= q,
        CounterMove::Restock => c.sold >= q,
    }
}

fn move_apply(c: &mut ShardCounts, how: CounterMove, q: i64) {
    match how {
        CounterMove::Freeze => {
            c.available -= q;
            c.locked += q;
        }
        CounterMove::Sell => {
            c.locked -= q;
            c.sold += q;
        }
        CounterMove::Release => {
            c.locked -= q;
            c.available += q;
        }
        CounterMove::Retake => {
            c.available -= q;
            c.sold += q;
        }
        CounterMove::Restock => {
            c.sold -= q;
            c.available += q;
        }
    }
}

/// DynamoDB refuses a transaction that touches one item twice or has too many actions
/// (`ValidationException`, not a cancellation): an infrastructure error here too.
fn validate_items<'a, T: std::hash::Hash + Eq + std::fmt::Debug + 'a>(
    items: impl IntoIterator<Item = T>,
    extra_actions: usize,
) -> anyhow::Result<()> {
    let mut seen = HashSet::new();
    let mut n = extra_actions;
    for it in items {
        n += 1;
        if seen.contains(&it) {
            return Err(anyhow!("transaction touches {it:?} twice"));
        }
        seen.insert(it);
    }
    if n > MAX_TRANSACTION_ACTIONS {
        return Err(anyhow!("transaction has {n} actions (at most {MAX_TRANSACTION_ACTIONS})"));
    }
    Ok(())
}

/// The stock table. Also offers direct seeding and synchronous reads for tests and benchmarks.
#[derive(Default)]
pub struct MemoryStock {
    state: Mutex<State>,
    /// The admin stamp each record carries (security review L7), by its DynamoDB key
    /// (`SKU#<sku>`, `CMP#<id>`): set by the stamped writes (`…_as`).
    stamps: Mutex<HashMap<String, AdminStamp>>,
    /// A store outage for the freezes of these SKUs: their transaction fails as an unanswered
    /// DynamoDB request does (not a throttle, not a refusal), like the emulator's fault rule
    /// that matches a SKU in the request.
    outage: Mutex<Vec<Sku>>,
}

fn stamp_key(of: Stamped<'_>) -> String {
    match of {
        Stamped::Sku(sku) => format!("SKU#{sku}"),
        Stamped::Campaign(id) => format!("CMP#{id}"),
    }
}

impl MemoryStock {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store outage for the freezes of any of `skus` (none: it ends).
    pub fn set_outage(&self, skus: &[Sku]) {
        *lock(&self.outage) = skus.to_vec();
    }

    /// Whether a freeze of `r` meets the outage.
    pub(crate) fn in_outage(&self, r: &Reservation) -> bool {
        let out = lock(&self.outage);
        r.lines.iter().any(|l| out.contains(&l.sku))
    }

    /// The sales switch item, to share with a [`super::MemorySale`].
    pub fn switch_cell(&self) -> SwitchCell {
        lock(&self.state).switch.clone()
    }

    /// Puts a SKU with `available_per_shard[i]` units on shard `i` (nothing locked or sold),
    /// replacing whatever the SKU had. `slots` is widened to cover every given shard and
    /// `stocked` is set to the sum, so invariant 1 holds.
    pub fn seed(&self, meta: SkuMeta, available_per_shard: &[i64]) {
        let mut s = lock(&self.state);
        let slots = meta.shard_slots().max(available_per_shard.len() as u16);
        s.shards.retain(|(sku, _), _| sku != &meta.sku);
        for i in 0..slots {
            let available = available_per_shard.get(usize::from(i)).copied().unwrap_or(0);
            s.create_shard(&meta, i);
            s.shard_mut(&meta.sku, i).available = available;
        }
        let meta = SkuMeta { slots, stocked: available_per_shard.iter().sum(), ..meta };
        s.metas.insert(meta.sku.clone(), meta);
    }

    /// Counters of every existing shard `0..slots` of `sku` (empty for an unknown SKU).
    pub fn shards(&self, sku: &Sku) -> Vec<ShardCounts> {
        let s = lock(&self.state);
        let slots = s.metas.get(sku).map_or(0, |m| m.slots);
        (0..slots).map(|i| s.shard(sku, i).copied().unwrap_or_default()).collect()
    }

    /// The per-user counter of (`sku`, `user`), if one was ever written.
    pub fn user_counter(&self, sku: &Sku, user: &UserId) -> Option<i64> {
        lock(&self.state).limits.get(&(sku.clone(), user.clone())).copied()
    }

    /// Moves a lock's creation back to `created_at_ms` (tests: an order made overdue has the
    /// lock of a checkout that old). `false` for an unknown lock.
    pub fn age_lock(&self, id: &ReservationId, created_at_ms: i64) -> bool {
        let mut s = lock(&self.state);
        s.reservations.get_mut(id).map(|r| r.created_at_ms = created_at_ms).is_some()
    }

    /// Every reservation, by id.
    pub fn reservations(&self) -> Vec<Reservation> {
        lock(&self.state).reservations.values().cloned().collect()
    }

    /// Every backlog item (docs/inventory-models.md, "Backorders (oversell allowed)").
    pub fn backlogs(&self) -> Vec<(Sku, crate::domain::backorder::Backlog)> {
        lock(&self.state).backlogs.iter().map(|(s, b)| (s.clone(), b.clone())).collect()
    }

    /// Every per-user counter.
    pub fn user_counters(&self) -> Vec<(Sku, UserId, i64)> {
        lock(&self.state).limits.iter().map(|((k, u), n)| (k.clone(), u.clone(), *n)).collect()
    }

    /// Every SKU's metadata, by SKU.
    pub fn metas(&self) -> Vec<SkuMeta> {
        lock(&self.state).metas.values().cloned().collect()
    }

    /// Campaign quota shards and the anti-hoarding counters, for the invariants.
    pub fn campaign_counters(&self) -> crate::domain::invariants::CampaignCounters {
        let s = lock(&self.state);
        let items = s
            .campaigns
            .values()
            .flat_map(|c| {
                c.items.iter().map(|i| {
                    crate::domain::invariants::CampaignItemSnapshot::of(&c.id, i, |n| {
                        s.quota.get(&(c.id.clone(), i.sku.clone(), n)).map(|q| q.counts).unwrap_or_default()
                    })
                })
            })
            .collect();
        crate::domain::invariants::CampaignCounters {
            items,
            user_counters: s
                .campaign_limits
                .iter()
                .map(|((c, k, u), n)| (c.clone(), k.clone(), u.clone(), *n))
                .collect(),
            pending: s.pending.iter().map(|(u, n)| (u.clone(), *n)).collect(),
        }
    }

    /// Every code pool's rings and slots, for the invariants.
    pub fn code_pools(&self) -> crate::domain::invariants::CodePools {
        let s = lock(&self.state);
        crate::domain::invariants::CodePools {
            pools: s.metas.values().filter(|m| Stocking::of(&m.model).holds_codes()).map(|m| m.sku.clone()).collect(),
            rings: s.rings.clone(),
            slots: s.code_slots.iter().map(|(k, c)| (k.clone(), c.fingerprint.clone())).collect(),
            redeemed: s.code_slots.iter().filter(|(_, c)| c.redeemed_at_ms.is_some()).map(|(k, _)| k.clone()).collect(),
        }
    }

    /// The journal cause last stamped on a counter item (by its DynamoDB key).
    pub fn cause_of(&self, key: &str) -> Option<Cause> {
        lock(&self.state).causes.get(key).cloned()
    }

    pub fn campaigns(&self) -> Vec<Campaign> {
        lock(&self.state).campaigns.values().cloned().collect()
    }

    /// Shared by `move_lock` and `retake`: `from` → `to` with the writes of [`plan::lock_move`].
    /// `Err(shard)`: `false` when the reservation's status condition failed, `true` for a counter.
    fn move_from(&self, r: &Reservation, from: LockStatus, to: LockStatus) -> anyhow::Result<Result<(), bool>> {
        let mut s = lock(&self.state);
        let returns = if to == LockStatus::Released { s.code_returns(r) } else { Vec::new() };
        let actions =
            plan::lock_move(r, from, to, &returns).ok_or_else(|| anyhow!("no lock move {from:?} -> {to:?}"))?;
        validate_items(actions.iter().map(|a| &a.target), 1)?;
        // a lock marked oversold is decided: never retaken (as the DynamoDB condition)
        // … and as `bfv = :v`: a copy read before a backorder fill never writes the old pieces back
        let status_ok = s.reservations.get(&r.id).is_some_and(|st| {
            (st.status == from || crate::mutant!("lock-move-ignores-status"))
                && fill_version(st) == fill_version(r)
                && !(from == LockStatus::Released && st.oversold && !crate::mutant!("retake-oversold"))
        });
        match s.transact(&r.id, status_ok, &actions, r.created_at_ms / 1000) {
            Ok(()) => {
                s.stamp_moves(r, &actions);
                if let Some(stored) = s.reservations.get_mut(&r.id) {
                    stored.status = to;
                    // a pay-time confirm may have re-planned its pieces
                    stored.lines = r.lines.clone();
                }
                Ok(Ok(()))
            }
            Err(failed) => Ok(Err(!failed.contains(&Target::Reservation))),
        }
    }
}

impl State {
    /// An adjustment's conditions, as DynamoDB judges them: its record absent (else the
    /// duplicate), its metadata present, and each removing piece's shard holding the units.
    fn check_adjustment(&self, adj: &Adjustment) -> Result<(), AdjustRejection> {
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        if let Some(prev) = self.adjustments.get(&key) {
            return Err(AdjustRejection::Duplicate { delta: prev.delta });
        }
        let meta_ok = self.metas.contains_key(&adj.sku);
        let shards_ok =
            adj.pieces.iter().all(|&(i, d)| self.shard(&adj.sku, i).is_some_and(|c| d >= 0 || c.available >= -d));
        if meta_ok && shards_ok {
            Ok(())
        } else {
            Err(AdjustRejection::ShardShort)
        }
    }

    fn apply_adjustment(&mut self, adj: &Adjustment) {
        let s = self;
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for &(i, d) in &adj.pieces {
            s.shard_mut(&adj.sku, i).available += d;
            s.causes.insert(shard_key(&adj.sku, i), cause.clone());
        }
        if let Some(m) = s.metas.get_mut(&adj.sku) {
            m.stocked += adj.delta;
            m.version += 1;
        }
        s.adjustments.insert(key, adj.clone());
    }
}
