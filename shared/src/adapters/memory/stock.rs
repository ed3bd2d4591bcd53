//! The stock table in memory, with the conditions and cancellation mapping of
//! [`crate::adapters::dynamo::stock`]. A transaction runs under one lock: every condition is
//! checked first and nothing is written unless all hold.

use super::lock;
use crate::domain::allocation::spread;
use crate::domain::campaign::{gate, Campaign};
use crate::domain::codes::{BatchResult, CodeAppend, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{move_cause, Cause};
use crate::domain::kind::Stocking;
use crate::domain::plan::{self, Action, CounterMove, Op, RingStep, Target};
use crate::domain::reservation::{LockStatus, Reservation, MAX_TRANSACTION_ACTIONS};
use crate::domain::{CampaignId, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, CampaignAdjustment, CodeUpload, Counter, FreezeLimits, FreezeRejection, MoveRejection,
    SkuMeta, StockStore,
};
use crate::ports::{AdminStamp, Stamped};
use anyhow::anyhow;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

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
}

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
                let k = (sku.clone(), *shard, *pos);
                self.code_slots.contains_key(&k) && !self.taken.contains(&k) && !self.given_back.contains(&k)
            }
            (Target::Quota { campaign, sku, shard }, Op::Move { how, quantity, .. }) => {
                self.quota.get(&(campaign.clone(), sku.clone(), *shard)).is_some_and(|q| {
                    move_holds(&q.counts, *how, i64::from(*quantity))
                        && (*how != CounterMove::Freeze || gate(q.starts_at, q.ends_at, q.paused, now_s).is_ok())
                })
            }
            (t, Op::Add { max_before, .. }) => max_before.is_none_or(|m| self.counter(t) <= m),
            _ => false,
        }
    }

    fn apply(&mut self, a: &Action) {
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
            _ => {}
        }
    }

    /// Runs `actions` as one transaction after a status condition on the reservation: every
    /// condition is evaluated first, nothing is written unless all hold. `Err` lists the
    /// targets whose conditions failed (DynamoDB reports each item's code).
    fn transact(&mut self, status_ok: bool, actions: &[Action], now_s: i64) -> Result<(), Vec<Target>> {
        let mut failed: Vec<Target> =
            actions.iter().filter(|a| !self.holds(a, now_s)).map(|a| a.target.clone()).collect();
        if !status_ok {
            failed.insert(0, Target::Reservation);
        }
        if !failed.is_empty() {
            return Err(failed);
        }
        for a in actions {
            self.apply(a);
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

    /// Puts a SKU with `available_per_shard[i]` units on shard `i` (nothing locked or sold),
    /// replacing whatever the SKU had. `slots` is widened to cover every given shard and
    /// `stocked` is set to the sum, so invariant 1 holds.
    pub fn seed(&self, meta: SkuMeta, available_per_shard: &[i64]) {
        let mut s = lock(&self.state);
        let slots = meta.slots.max(meta.shards).max(available_per_shard.len() as u16);
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

    /// Every reservation, by id.
    pub fn reservations(&self) -> Vec<Reservation> {
        lock(&self.state).reservations.values().cloned().collect()
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
                c.items.iter().map(|i| crate::domain::invariants::CampaignItemSnapshot {
                    campaign: c.id.clone(),
                    sku: i.sku.clone(),
                    quota: i.quota,
                    per_user_limit: i.per_user_limit,
                    shards: (0..i.shards)
                        .map(|n| s.quota.get(&(c.id.clone(), i.sku.clone(), n)).map(|q| q.counts).unwrap_or_default())
                        .collect(),
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
        let status_ok = s.reservations.get(&r.id).is_some_and(|st| {
            (st.status == from || crate::mutant!("lock-move-ignores-status"))
                && !(from == LockStatus::Released && st.oversold && !crate::mutant!("retake-oversold"))
        });
        match s.transact(status_ok, &actions, r.created_at_ms / 1000) {
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

#[async_trait]
impl StockStore for MemoryStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        crate::adapters::memory::interleave().await;
        if skus.iter().collect::<HashSet<_>>().len() != skus.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(skus.iter().filter_map(|k| s.metas.get(k).map(|m| (k.clone(), m.clone()))).collect())
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let meta_ok = match (expected_version, s.metas.get(&meta.sku)) {
            (None, None) => true,
            (Some(v), Some(old)) => old.version == v,
            _ => false,
        };
        // A create puts every shard `attribute_not_exists`; an update creates the missing ones.
        let shards_ok = expected_version.is_some() || (0..meta.slots).all(|i| s.shard(&meta.sku, i).is_none());
        if !(meta_ok && shards_ok) {
            return Ok(false);
        }
        // a new shard carries the stop-sale flag of `meta`; an existing one keeps its own
        for i in 0..meta.slots {
            s.create_shard(meta, i);
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..slots).map(|i| s.shard(sku, i).copied().unwrap_or_default()).collect())
    }

    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &Cause,
    ) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        if s.metas.get(&meta.sku).is_none_or(|m| m.version != expected_version) {
            return Ok(false);
        }
        for (i, &av) in new_available.iter().enumerate() {
            let current = s.shard(&meta.sku, i as u16);
            let ok = match old.get(i) {
                Some(o) if o.available == av => true,
                Some(o) => current.is_some_and(|c| c.available == o.available),
                None => current.is_none(),
            };
            if !ok {
                return Ok(false);
            }
        }
        for (i, &av) in new_available.iter().enumerate() {
            if old.get(i).is_none_or(|o| o.available != av) {
                // a new shard carries the stop-sale flag of `meta`
                s.create_shard(meta, i as u16);
                s.shard_mut(&meta.sku, i as u16).available = av;
                s.causes.insert(shard_key(&meta.sku, i as u16), cause.clone());
            }
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    /// Like the DynamoDB adapter, ignores `meta_version` and leaves the metadata version as it is.
    async fn adjust(&self, adj: &Adjustment, _meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2)?;
        let mut s = lock(&self.state);
        if let Err(e) = s.check_adjustment(adj) {
            return Ok(Err(e));
        }
        s.apply_adjustment(adj);
        Ok(Ok(()))
    }

    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        // both in one transaction: 2 + pieces items each
        validate_items(
            out.pieces.iter().map(|(i, _)| (&out.sku, *i)).chain(into.pieces.iter().map(|(i, _)| (&into.sku, *i))),
            4,
        )?;
        let mut s = lock(&self.state);
        if let Err(e) = s.check_adjustment(out).and_then(|()| s.check_adjustment(into)) {
            return Ok(Err(e));
        }
        s.apply_adjustment(out);
        s.apply_adjustment(into);
        Ok(Ok(()))
    }

    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        crate::adapters::memory::interleave().await;
        let actions = plan::freeze(r, limits);
        validate_items(actions.iter().map(|a| &a.target), 1)?;
        let mut s = lock(&self.state);
        let absent = !s.reservations.contains_key(&r.id);
        match s.transact(absent, &actions, r.created_at_ms / 1000) {
            Ok(()) => {
                s.stamp_moves(r, &actions);
                // The item has no `ov` attribute until `mark_oversold`.
                s.reservations.insert(r.id.clone(), Reservation { oversold: false, code_fate: None, ..r.clone() });
                Ok(Ok(()))
            }
            Err(failed) => Ok(Err(plan::freeze_rejection(&failed))),
        }
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).reservations.get(id).cloned())
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Frozen, to)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Released, LockStatus::Sold)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Sold, LockStatus::Restocked)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        Ok(match lock(&self.state).reservations.get_mut(&r.id) {
            Some(stored)
                if !stored.oversold
                    && (stored.status == LockStatus::Released || crate::mutant!("p2-11-mark-any-lock")) =>
            {
                stored.oversold = true;
                true
            }
            _ => false,
        })
    }

    async fn settle_codes(
        &self,
        id: &ReservationId,
        fate: crate::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<crate::domain::reservation::CodeFate>> {
        crate::adapters::memory::interleave().await;
        use crate::domain::reservation::CodeFate;
        let mut s = lock(&self.state);
        let Some(stored) = s.reservations.get_mut(id) else { return Ok(None) };
        let status_ok = match fate {
            CodeFate::Revealed => stored.status == LockStatus::Sold,
            CodeFate::Withdrawn => stored.status != LockStatus::Released,
        };
        if status_ok && stored.code_fate.is_none_or(|f| f == fate) {
            stored.code_fate = Some(fate);
        }
        Ok(stored.code_fate)
    }

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        let mut found: Vec<&Reservation> =
            s.reservations.values().filter(|r| r.status == LockStatus::Frozen && r.created_at_ms < before_ms).collect();
        found.sort_by_key(|r| (r.created_at_ms, r.id.clone()));
        Ok(found.into_iter().map(|r| r.id.clone()).collect())
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        crate::adapters::memory::interleave().await;
        if ids.iter().collect::<HashSet<_>>().len() != ids.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(ids.iter().filter_map(|id| s.reservations.get(id).cloned()).collect())
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).metas.keys().cloned().collect())
    }

    /// As DynamoDB: the metadata conditional on the version, and the flag on every shard
    /// `0..meta.slots`, each conditional on existing (none beyond, no quota shard).
    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        if s.metas.get(&meta.sku).is_none_or(|m| m.version != expected_version) {
            return Ok(false);
        }
        if !(0..meta.slots).all(|i| s.shards.contains_key(&(meta.sku.clone(), i))) {
            return Ok(false);
        }
        for i in 0..meta.slots {
            if let Some(item) = s.shards.get_mut(&(meta.sku.clone(), i)) {
                item.paused = meta.paused;
            }
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        let done = self.put_sku(meta, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Sku(&meta.sku)), by.clone());
        }
        Ok(done)
    }

    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        let done = self.set_sku_paused(meta, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Sku(&meta.sku)), by.clone());
        }
        Ok(done)
    }

    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        let done = self.write_campaign(c, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Campaign(&c.id)), by.clone());
        }
        Ok(done)
    }

    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.stamps).get(&stamp_key(of)).cloned())
    }

    async fn get_campaign(&self, id: &CampaignId, _consistent: bool) -> anyhow::Result<Option<Campaign>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).campaigns.get(id).cloned())
    }

    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let ok = match (expected_version, s.campaigns.get(&c.id)) {
            (None, None) => true,
            (Some(v), Some(old)) => old.version == v,
            _ => false,
        };
        if !ok {
            return Ok(false);
        }
        for item in &c.items {
            let initial = spread(item.quota, item.shards);
            for i in 0..item.shards {
                let q = s.quota.entry((c.id.clone(), item.sku.clone(), i)).or_insert_with(|| QuotaShard {
                    counts: ShardCounts { available: initial[usize::from(i)], locked: 0, sold: 0 },
                    ..QuotaShard::default()
                });
                q.starts_at = c.starts_at;
                q.ends_at = c.ends_at;
                q.paused = c.paused;
            }
        }
        s.campaigns.insert(c.id.clone(), c.clone());
        Ok(true)
    }

    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        _consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..shards)
            .map(|i| s.quota.get(&(id.clone(), sku.clone(), i)).map(|q| q.counts).unwrap_or_default())
            .collect())
    }

    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        validate_items(adj.pieces.iter().map(|(i, _)| *i), 2)?;
        let mut s = lock(&self.state);
        let key = (adj.campaign_id.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.campaign_adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        if s.campaigns.get(&adj.campaign_id).is_none_or(|c| c.version != expected_version) {
            return Ok(Err(AdjustRejection::Conflict));
        }
        let shard_ok = |s: &State, i: u16, d: i64| {
            s.quota
                .get(&(adj.campaign_id.clone(), adj.sku.clone(), i))
                .is_some_and(|q| d >= 0 || q.counts.available >= -d)
        };
        if !adj.pieces.iter().all(|&(i, d)| shard_ok(&s, i, d)) {
            return Ok(Err(AdjustRejection::ShardShort));
        }
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for &(i, d) in &adj.pieces {
            if let Some(q) = s.quota.get_mut(&(adj.campaign_id.clone(), adj.sku.clone(), i)) {
                q.counts.available += d;
                s.causes.insert(quota_key(&adj.campaign_id, &adj.sku, i), cause.clone());
            }
        }
        s.campaigns.insert(next.id.clone(), next.clone());
        s.campaign_adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).campaigns.keys().cloned().collect())
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(counters
            .iter()
            .map(|c| {
                let t = match c {
                    Counter::Limit(sku, user) => Target::Limit { sku: sku.clone(), user: user.clone() },
                    Counter::CampaignLimit(id, sku, user) => {
                        Target::CampaignLimit { campaign: id.clone(), sku: sku.clone(), user: user.clone() }
                    }
                    Counter::Pending(user) => Target::Pending { user: user.clone() },
                };
                (c.clone(), s.counter(&t))
            })
            .collect())
    }

    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<Ring>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..slots).map(|i| s.rings.get(&(sku.clone(), i)).copied().unwrap_or_default()).collect())
    }

    async fn read_codes(&self, sku: &Sku, slots: &[(u16, u64)]) -> anyhow::Result<Vec<Option<StoredCode>>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(slots.iter().map(|(shard, pos)| s.code_slots.get(&(sku.clone(), *shard, *pos)).cloned()).collect())
    }

    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        let k = (sku.clone(), shard, pos);
        if s.given_back.contains(&k) {
            return Ok(true);
        }
        if !s.taken.contains(&k) {
            return Ok(false);
        }
        let holds = |r: &&Reservation| {
            r.lines.iter().any(|l| {
                &l.sku == sku
                    && l.codes
                        .iter()
                        .flatten()
                        .any(|g| g.shard == shard && (g.from..g.from + u64::from(g.count)).contains(&pos))
            })
        };
        Ok(s.reservations.values().find(holds).is_some_and(|r| r.status == LockStatus::Released))
    }

    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(fingerprints
            .iter()
            .filter_map(|f| s.fingerprints.get(&(sku.clone(), f.clone())).map(|b| (f.clone(), b.clone())))
            .collect())
    }

    async fn add_codes(&self, up: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        let adj = &up.adjustment;
        let codes: usize = up.appends.iter().map(|a| a.codes.len()).sum();
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2 + 2 * codes)?;
        let mut s = lock(&self.state);
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        // as DynamoDB, where the fingerprint and the code slot are each put `attribute_not_exists`
        let taken = up.appends.iter().any(|a| {
            a.codes.iter().enumerate().any(|(i, c)| {
                s.fingerprints.contains_key(&(adj.sku.clone(), c.fingerprint.clone()))
                    || s.code_slots.contains_key(&(adj.sku.clone(), a.shard, a.tail + i as u64))
            })
        });
        if taken {
            return Ok(Err(AdjustRejection::CodeTaken));
        }
        // the shard's ring (`ctl`) exists only on a code pool's shards
        let rings_ok = up.appends.iter().all(|a| {
            s.rings.get(&(adj.sku.clone(), a.shard)).is_some_and(|r| r.tail == a.tail)
                && s.shard(&adj.sku, a.shard).is_some()
        });
        if !rings_ok || !s.metas.contains_key(&adj.sku) {
            return Ok(Err(AdjustRejection::Conflict));
        }
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for a in &up.appends {
            let n = a.codes.len() as u64;
            s.shard_mut(&adj.sku, a.shard).available += n as i64;
            s.causes.insert(shard_key(&adj.sku, a.shard), cause.clone());
            let r = s.rings.entry((adj.sku.clone(), a.shard)).or_default();
            r.tail += n;
            r.uploaded += n;
            for (i, c) in a.codes.iter().enumerate() {
                s.code_slots.insert((adj.sku.clone(), a.shard, a.tail + i as u64), c.clone());
                s.fingerprints.insert((adj.sku.clone(), c.fingerprint.clone()), up.batch_id.clone());
            }
        }
        if let Some(m) = s.metas.get_mut(&adj.sku) {
            m.stocked += adj.delta;
            m.version += 1;
        }
        s.adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let Some(r) = s.rings.get_mut(&(sku.clone(), shard)) else { return Ok(None) };
        if r.head > max_head {
            return Ok(None);
        }
        let start = r.head;
        r.head += u64::from(quantity);
        r.claimed_at_ms = crate::clock::now_ms();
        Ok(Some(start))
    }

    async fn give_back_codes(
        &self,
        sku: &Sku,
        ranges: &[crate::domain::reservation::CodeRange],
    ) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let keys: Vec<(Sku, u16, u64)> = ranges
            .iter()
            .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (sku.clone(), g.shard, p)))
            .collect();
        // DynamoDB reads the codes before its transaction: a position without one is an error
        if let Some(k) = keys.iter().find(|k| !s.code_slots.contains_key(*k)) {
            return Err(anyhow!("give back: a claimed position of {sku} holds no code ({}, {})", k.1, k.2));
        }
        if keys.iter().any(|k| s.taken.contains(k) || (s.given_back.contains(k) && !crate::mutant!("give-back-twice")))
        {
            return Ok(false);
        }
        for k in keys {
            let code = s.code_slots[&k].clone();
            let r = s.rings.entry((k.0.clone(), k.1)).or_default();
            let tail = r.tail;
            r.tail += 1;
            s.code_slots.insert((k.0.clone(), k.1, tail), code);
            s.given_back.insert(k);
        }
        Ok(true)
    }

    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((from..to)
            .filter(|p| {
                let k = (sku.clone(), shard, *p);
                s.code_slots.contains_key(&k) && !s.taken.contains(&k) && !s.given_back.contains(&k)
            })
            .collect())
    }

    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let r = s.rings.entry((sku.clone(), shard)).or_default();
        if r.checked != from {
            return Ok(false);
        }
        r.checked = to;
        Ok(true)
    }

    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).batches.get(&(sku.clone(), batch_id.to_owned())).cloned())
    }

    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        crate::adapters::memory::interleave().await;
        lock(&self.state).batches.entry((sku.clone(), batch_id.to_owned())).or_insert_with(|| result.clone());
        Ok(())
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
