//! The stock table in memory, with the conditions and cancellation mapping of
//! [`crate::adapters::dynamo::stock`]. A transaction runs under one lock: every condition is
//! checked first and nothing is written unless all hold.

use super::lock;
use crate::domain::invariants::ShardCounts;
use crate::domain::reservation::{LockStatus, Reservation, MAX_TRANSACTION_ACTIONS};
use crate::domain::{ReservationId, Sku, UserId};
use crate::ports::{AdjustRejection, Adjustment, FreezeRejection, MoveRejection, SkuMeta, StockStore};
use anyhow::anyhow;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

#[derive(Default)]
struct State {
    metas: BTreeMap<Sku, SkuMeta>,
    shards: HashMap<(Sku, u16), ShardCounts>,
    reservations: BTreeMap<ReservationId, Reservation>,
    /// Per-user counters (`LIM#<sku>#<user>`, attribute `n`).
    limits: BTreeMap<(Sku, UserId), i64>,
    adjustments: HashMap<(Sku, String), Adjustment>,
}

impl State {
    fn shard(&self, sku: &Sku, shard: u16) -> Option<&ShardCounts> {
        self.shards.get(&(sku.clone(), shard))
    }

    fn shard_mut(&mut self, sku: &Sku, shard: u16) -> &mut ShardCounts {
        self.shards.entry((sku.clone(), shard)).or_default()
    }

    fn add_to_counter(&mut self, sku: &Sku, user: &UserId, delta: i64) {
        *self.limits.entry((sku.clone(), user.clone())).or_default() += delta;
    }
}

/// DynamoDB refuses a transaction that touches one item twice or has too many actions
/// (`ValidationException`, not a cancellation): an infrastructure error here too.
fn validate_items<'a>(items: impl IntoIterator<Item = (&'a Sku, u16)>, extra_actions: usize) -> anyhow::Result<()> {
    let mut seen = HashSet::new();
    let mut n = extra_actions;
    for (sku, shard) in items {
        n += 1;
        if !seen.insert((sku, shard)) {
            return Err(anyhow!("transaction touches shard {shard} of {sku} twice"));
        }
    }
    if n > MAX_TRANSACTION_ACTIONS {
        return Err(anyhow!("transaction has {n} actions (at most {MAX_TRANSACTION_ACTIONS})"));
    }
    Ok(())
}

fn pieces(r: &Reservation) -> impl Iterator<Item = (&Sku, u16, i64)> {
    r.lines.iter().flat_map(|l| l.pieces.iter().map(move |p| (&l.sku, p.shard, i64::from(p.quantity))))
}

/// The stock table. Also offers direct seeding and synchronous reads for tests and benchmarks.
#[derive(Default)]
pub struct MemoryStock {
    state: Mutex<State>,
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
            s.shards.insert((meta.sku.clone(), i), ShardCounts { available, locked: 0, sold: 0 });
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

    /// Shared by `move_lock` and `retake`: `from` → `to` with the shard and counter updates of
    /// `DynamoStock::lock_move_items`. `Err(codes)` names the failed conditions: `Ok(false)` for
    /// the reservation, `Ok(true)` for a shard.
    fn move_from(&self, r: &Reservation, from: LockStatus, to: LockStatus) -> anyhow::Result<Result<(), bool>> {
        type Cond = fn(&ShardCounts, i64) -> bool;
        let (cond, apply): (Cond, fn(&mut ShardCounts, i64)) = match (from, to) {
            (LockStatus::Frozen, LockStatus::Sold) => (
                |c, q| c.locked >= q,
                |c, q| {
                    c.locked -= q;
                    c.sold += q;
                },
            ),
            (LockStatus::Frozen, LockStatus::Released) => (
                |c, q| c.locked >= q,
                |c, q| {
                    c.locked -= q;
                    c.available += q;
                },
            ),
            (LockStatus::Released, LockStatus::Sold) => (
                |c, q| c.available >= q,
                |c, q| {
                    c.available -= q;
                    c.sold += q;
                },
            ),
            _ => return Err(anyhow!("no lock move {from:?} -> {to:?}")),
        };
        let counters = r.lines.iter().filter(|l| l.limited && r.user.is_some()).count();
        validate_items(pieces(r).map(|(k, i, _)| (k, i)), 1 + counters)?;
        let mut s = lock(&self.state);
        let status_ok = s.reservations.get(&r.id).is_some_and(|st| st.status == from);
        if !status_ok {
            return Ok(Err(false));
        }
        if !pieces(r).all(|(k, i, q)| s.shard(k, i).is_some_and(|c| cond(c, q))) {
            return Ok(Err(true));
        }
        if let Some(stored) = s.reservations.get_mut(&r.id) {
            stored.status = to;
        }
        for (k, i, q) in pieces(r) {
            apply(s.shard_mut(k, i), q);
        }
        if let Some(u) = &r.user {
            for l in r.lines.iter().filter(|l| l.limited) {
                let q = i64::from(l.quantity);
                let delta = if to == LockStatus::Released {
                    -q
                } else if from == LockStatus::Released {
                    q
                } else {
                    0
                };
                if delta != 0 {
                    s.add_to_counter(&l.sku, u, delta);
                }
            }
        }
        Ok(Ok(()))
    }
}

#[async_trait]
impl StockStore for MemoryStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        if skus.iter().collect::<HashSet<_>>().len() != skus.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(skus.iter().filter_map(|k| s.metas.get(k).map(|m| (k.clone(), m.clone()))).collect())
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
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
        for i in 0..meta.slots {
            s.shard_mut(&meta.sku, i);
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        let s = lock(&self.state);
        Ok((0..slots).map(|i| s.shard(sku, i).copied().unwrap_or_default()).collect())
    }

    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
    ) -> anyhow::Result<bool> {
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
                s.shard_mut(&meta.sku, i as u16).available = av;
            }
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    /// Like the DynamoDB adapter, ignores `meta_version` and leaves the metadata version as it is.
    async fn adjust(&self, adj: &Adjustment, _meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2)?;
        let mut s = lock(&self.state);
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        let meta_ok = s.metas.contains_key(&adj.sku);
        let shards_ok =
            adj.pieces.iter().all(|&(i, d)| s.shard(&adj.sku, i).is_some_and(|c| d >= 0 || c.available >= -d));
        if !(meta_ok && shards_ok) {
            return Ok(Err(AdjustRejection::ShardShort));
        }
        for &(i, d) in &adj.pieces {
            s.shard_mut(&adj.sku, i).available += d;
        }
        if let Some(m) = s.metas.get_mut(&adj.sku) {
            m.stocked += adj.delta;
            m.version += 1;
        }
        s.adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn put_frozen(
        &self,
        r: &Reservation,
        limits: &HashMap<Sku, u32>,
    ) -> anyhow::Result<Result<(), FreezeRejection>> {
        let user = r.user.as_ref();
        let charged: Vec<(&Sku, i64, i64)> = r
            .lines
            .iter()
            .filter(|l| l.limited && user.is_some())
            .filter_map(|l| {
                let limit = limits.get(&l.sku)?;
                Some((&l.sku, i64::from(l.quantity), i64::from(*limit) - i64::from(l.quantity)))
            })
            .collect();
        validate_items(pieces(r).map(|(k, i, _)| (k, i)), 1 + charged.len())?;
        let mut s = lock(&self.state);
        // Every condition is evaluated (DynamoDB reports each item's code), then read in the
        // adapter's order: the reservation, a limit, then short shards.
        let exists = s.reservations.contains_key(&r.id);
        let over_limit = user.and_then(|u| {
            charged
                .iter()
                .find(|(k, _, max)| s.limits.get(&((*k).clone(), u.clone())).is_some_and(|n| n > max))
                .map(|(k, _, _)| (*k).clone())
        });
        let mut short: Vec<Sku> = pieces(r)
            .filter(|(k, i, q)| s.shard(k, *i).is_none_or(|c| c.available < *q))
            .map(|(k, _, _)| k.clone())
            .collect();
        short.dedup();
        if exists {
            return Ok(Err(FreezeRejection::AlreadyExists));
        }
        if let Some(sku) = over_limit {
            return Ok(Err(FreezeRejection::LimitExceeded(sku)));
        }
        if !short.is_empty() {
            return Ok(Err(FreezeRejection::ShardShort(short)));
        }
        for (k, i, q) in pieces(r) {
            let c = s.shard_mut(k, i);
            c.available -= q;
            c.locked += q;
        }
        if let Some(u) = user {
            for (k, q, _) in &charged {
                s.add_to_counter(k, u, *q);
            }
        }
        // The item has no `ov` attribute until `mark_oversold`.
        s.reservations.insert(r.id.clone(), Reservation { oversold: false, ..r.clone() });
        Ok(Ok(()))
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        Ok(lock(&self.state).reservations.get(id).cloned())
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        Ok(self.move_from(r, LockStatus::Frozen, to)?.map_err(|_| MoveRejection::StatusChanged))
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        Ok(self.move_from(r, LockStatus::Released, LockStatus::Sold)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        Ok(match lock(&self.state).reservations.get_mut(&r.id) {
            Some(stored) if !stored.oversold => {
                stored.oversold = true;
                true
            }
            _ => false,
        })
    }

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        let s = lock(&self.state);
        let mut found: Vec<&Reservation> =
            s.reservations.values().filter(|r| r.status == LockStatus::Frozen && r.created_at_ms < before_ms).collect();
        found.sort_by_key(|r| (r.created_at_ms, r.id.clone()));
        Ok(found.into_iter().map(|r| r.id.clone()).collect())
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        if ids.iter().collect::<HashSet<_>>().len() != ids.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(ids.iter().filter_map(|id| s.reservations.get(id).cloned()).collect())
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        Ok(lock(&self.state).metas.keys().cloned().collect())
    }
}
