//! DynamoDB as it is under load, in memory (docs/architecture.md, "DynamoDB as it is under
//! load"; DESIGN §23): a decorator over any stock store that adds, each behind its own switch
//! and all off by default, what the in-memory store (and moto) never do:
//!
//! - **conflicts**: a transaction touching an item that another transaction committed less
//!   than `W` ms ago is cancelled for that item (`FreezeRejection::Conflict`,
//!   `MoveRejection::Conflict`), as DynamoDB cancels a `TransactWriteItems` whose item another
//!   transaction is still touching (`TransactionConflict`);
//! - **throttle**: each item has a token bucket at the partition rate (1,000 WCU/s, a
//!   transactional write costing 2 WCU, 100 ms of burst); a transaction with an item whose
//!   bucket is empty is refused with the store's throttled error ([`crate::ports::Throttled`],
//!   what the DynamoDB adapter makes of `ThrottlingError` cancellation reasons);
//! - **index lag**: the frozen-by-age sparse index (`frozen_before`) sees a freeze, and a lock
//!   leaving FROZEN, only `L` ms after it committed;
//! - **latency**: every lock transaction takes `rtt` ms (model time when tokio's clock is
//!   paused: the contention benchmark and the tests);
//! - **stream-split**: not the store's but its stream's: records split into random batches and
//!   interleaved across items ([`stream`], applied by the local stack's stream poller).
//!
//! The switches' clock is tokio's: under a paused runtime every figure is model time and the
//! runs are deterministic. The same switches, by the same names, are the emulator's
//! (`HOLDFAST_EMULATE`, infra/emulator/launcher.py).

use crate::domain::campaign::Campaign;
use crate::domain::codes::{BatchResult, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::plan::{self, Target};
use crate::domain::queue::{Room, Ticket};
use crate::domain::reservation::{CodeFate, CodeRange, LockStatus, Reservation};
use crate::domain::{CampaignId, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, AdminStamp, CampaignAdjustment, Campaigns, Catalogue, CodePools, CodeUpload, Counter,
    FreezeLimits, FreezeRejection, Locks, MoveRejection, Shards, SkuMeta, Stamped, StockStore, Throttled,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// A partition's write ceiling (write units per second).
pub const PARTITION_WCU_PER_S: u32 = 1_000;
/// Write units a transactional write of one item (under 1 KB) costs.
pub const TRANSACTIONAL_WCU: u32 = 2;
/// The conflict window when `conflicts` is given without one (ms).
pub const DEFAULT_CONFLICT_WINDOW_MS: u64 = 5;
/// The index lag when `index-lag` is given without one (ms).
pub const DEFAULT_INDEX_LAG_MS: u64 = 1_000;

/// Seeds the generator the services' jitter and re-plans draw from (`fastrand`'s, per thread):
/// a model-time run on a current-thread runtime is then the same run every time.
pub fn seed_model(seed: u64) {
    fastrand::seed(seed);
}

/// Which behaviours are on, and their parameters. `Default`: all off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    /// `conflicts[=W]`: the per-item conflict window, ms.
    pub conflict_window_ms: Option<u64>,
    /// `throttle[=R]`: each item's write units per second.
    pub throttle_wcu_per_s: Option<u32>,
    /// `index-lag[=L]`: how long a sparse index trails its table, ms.
    pub index_lag_ms: Option<u64>,
    /// `rtt=N`: how long each lock transaction takes, ms (0: at once).
    pub rtt_ms: u64,
    /// `stream-split`: stream records split into random batches and interleaved across items,
    /// each item's order kept (the stream poller's; [`stream`]).
    pub stream_split: bool,
}

impl Switches {
    /// Parses `HOLDFAST_EMULATE`'s syntax: a comma-separated list of `conflicts[=W]`,
    /// `throttle[=R]`, `index-lag[=L]`, `rtt=N`, `stream-split`; empty = all off.
    pub fn parse(spec: &str) -> anyhow::Result<Switches> {
        let mut s = Switches::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = match part.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (part, None),
            };
            let num = |d: u64| -> anyhow::Result<u64> {
                value.map_or(Ok(d), |v| v.parse::<u64>().map_err(|_| anyhow::anyhow!("{name}={v}: not a number")))
            };
            match name {
                "conflicts" => s.conflict_window_ms = Some(num(DEFAULT_CONFLICT_WINDOW_MS)?),
                "throttle" => s.throttle_wcu_per_s = Some(u32::try_from(num(u64::from(PARTITION_WCU_PER_S))?)?),
                "index-lag" => s.index_lag_ms = Some(num(DEFAULT_INDEX_LAG_MS)?),
                "rtt" => s.rtt_ms = num(0)?,
                "stream-split" => s.stream_split = true,
                other => anyhow::bail!(
                    "HOLDFAST_EMULATE: unknown switch {other:?} (conflicts, throttle, index-lag, rtt, stream-split)"
                ),
            }
        }
        Ok(s)
    }
}

/// What the switches did so far.
#[derive(Debug, Default)]
pub struct EmulateStats {
    pub conflicts: AtomicU64,
    pub throttles: AtomicU64,
    pub transactions: AtomicU64,
    /// Freeze transactions asked for (committed, cancelled or refused).
    pub freezes_tried: AtomicU64,
}

impl EmulateStats {
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }
    pub fn throttles(&self) -> u64 {
        self.throttles.load(Ordering::Relaxed)
    }
    pub fn transactions(&self) -> u64 {
        self.transactions.load(Ordering::Relaxed)
    }
    pub fn freezes_tried(&self) -> u64 {
        self.freezes_tried.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
struct State {
    /// Each item's last commit (ms on the switches' clock), by its key.
    committed: HashMap<String, u64>,
    /// Each item's token bucket: (tokens, last refill ms).
    buckets: HashMap<String, (f64, u64)>,
    /// Locks whose index entry trails: when they froze, when they left FROZEN (ms), and their
    /// creation time (the index's range key).
    index: HashMap<ReservationId, IndexEntry>,
}

#[derive(Debug, Clone, Copy)]
struct IndexEntry {
    created_at_ms: i64,
    frozen_at: Option<u64>,
    left_at: Option<u64>,
}

/// A stock store with DynamoDB's behaviours under load switched on (see the module docs).
pub struct Emulated<S: ?Sized> {
    inner: Arc<S>,
    switches: Switches,
    start: Instant,
    state: Mutex<State>,
    pub stats: EmulateStats,
}

/// Why a transaction was refused before it reached the store.
enum Refused {
    Conflict,
    Throttled(String),
}

fn key(t: &Target) -> String {
    format!("{t:?}")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S: StockStore + ?Sized> Emulated<S> {
    pub fn new(inner: Arc<S>, switches: Switches) -> Self {
        Emulated {
            inner,
            switches,
            start: Instant::now(),
            state: Mutex::new(State::default()),
            stats: Default::default(),
        }
    }

    pub fn switches(&self) -> Switches {
        self.switches
    }

    /// The switches' clock: ms since this store was made (model time under a paused runtime).
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn latency(&self) {
        if self.switches.rtt_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.switches.rtt_ms)).await;
        }
    }

    /// Admits a transaction over `items` now or says why not: throttled first (an item's
    /// bucket is empty: nothing is taken from any bucket), then conflicts (an item committed
    /// less than the window ago). An admitted transaction pays its write units.
    fn admit(&self, items: &[String]) -> Result<(), Refused> {
        let now = self.now();
        let mut s = lock(&self.state);
        if let Some(rate) = self.switches.throttle_wcu_per_s {
            let rate = f64::from(rate.max(1));
            let burst = rate / 10.0;
            let cost = f64::from(TRANSACTIONAL_WCU);
            let mut levels = Vec::with_capacity(items.len());
            for k in items {
                let (tokens, at) = s.buckets.get(k).copied().unwrap_or((burst, now));
                let level = (tokens + (now.saturating_sub(at)) as f64 * rate / 1000.0).min(burst);
                if level < cost {
                    self.stats.throttles.fetch_add(1, Ordering::Relaxed);
                    return Err(Refused::Throttled(k.clone()));
                }
                levels.push(level);
            }
            for (k, level) in items.iter().zip(levels) {
                s.buckets.insert(k.clone(), (level - cost, now));
            }
        }
        if let Some(w) = self.switches.conflict_window_ms {
            if items.iter().any(|k| s.committed.get(k).is_some_and(|&at| now < at + w)) {
                self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::Conflict);
            }
        }
        Ok(())
    }

    fn committed(&self, items: &[String]) {
        self.stats.transactions.fetch_add(1, Ordering::Relaxed);
        if self.switches.conflict_window_ms.is_none() {
            return;
        }
        let now = self.now();
        let mut s = lock(&self.state);
        for k in items {
            s.committed.insert(k.clone(), now);
        }
    }

    fn index_note(&self, r: &Reservation, froze: bool) {
        if self.switches.index_lag_ms.is_none() {
            return;
        }
        let now = self.now();
        let mut s = lock(&self.state);
        let e = s.index.entry(r.id.clone()).or_insert(IndexEntry {
            created_at_ms: r.created_at_ms,
            frozen_at: None,
            left_at: None,
        });
        if froze {
            e.frozen_at = Some(now);
        } else {
            e.left_at = Some(now);
        }
    }

    /// The items a lock move's transaction writes: the lock record and its plan's targets.
    fn move_items(r: &Reservation, from: LockStatus, to: LockStatus) -> Vec<String> {
        let mut items = vec![format!("Reservation({})", r.id)];
        items.extend(plan::lock_move(r, from, to, &[]).unwrap_or_default().iter().map(|a| key(&a.target)));
        items
    }

    async fn lock_tx<F, Fut>(&self, items: Vec<String>, run: F) -> anyhow::Result<Result<(), MoveRejection>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Result<(), MoveRejection>>>,
    {
        self.latency().await;
        match self.admit(&items) {
            Err(Refused::Conflict) => return Ok(Err(MoveRejection::Conflict)),
            Err(Refused::Throttled(k)) => return Err(anyhow::Error::new(Throttled(format!("emulated: {k}")))),
            Ok(()) => {}
        }
        let out = run().await?;
        if out.is_ok() {
            self.committed(&items);
        }
        Ok(out)
    }
}

#[async_trait]
impl<S: StockStore + ?Sized> Locks for Emulated<S> {
    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        let mut items = vec![format!("Reservation({})", r.id)];
        items.extend(plan::freeze(r, limits).iter().map(|a| key(&a.target)));
        self.stats.freezes_tried.fetch_add(1, Ordering::Relaxed);
        self.latency().await;
        match self.admit(&items) {
            Err(Refused::Conflict) => return Ok(Err(FreezeRejection::Conflict)),
            Err(Refused::Throttled(k)) => return Err(anyhow::Error::new(Throttled(format!("emulated: {k}")))),
            Ok(()) => {}
        }
        let out = self.inner.put_frozen(r, limits).await?;
        if out.is_ok() {
            self.committed(&items);
            self.index_note(r, true);
        }
        Ok(out)
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        self.inner.get_reservation(id).await
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        self.inner.get_reservations(ids).await
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        let out = self.lock_tx(Self::move_items(r, LockStatus::Frozen, to), || self.inner.move_lock(r, to)).await?;
        if out.is_ok() {
            self.index_note(r, false);
        }
        Ok(out)
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        self.lock_tx(Self::move_items(r, LockStatus::Released, LockStatus::Sold), || self.inner.retake(r)).await
    }

    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        self.lock_tx(Self::move_items(r, LockStatus::Sold, LockStatus::Restocked), || self.inner.restock(r)).await
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        self.inner.mark_oversold(r).await
    }

    async fn fill_backorder(
        &self,
        before: &Reservation,
        after: &Reservation,
        actions: &[plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>> {
        let mut items = vec![format!("Reservation({})", before.id)];
        items.extend(actions.iter().map(|a| key(&a.target)));
        self.lock_tx(items, || self.inner.fill_backorder(before, after, actions)).await
    }

    async fn read_backlog(&self, sku: &crate::domain::Sku) -> anyhow::Result<crate::domain::backorder::Backlog> {
        self.inner.read_backlog(sku).await
    }

    /// The index as it stands `L` ms ago: a lock frozen less than `L` ago is not in it yet, a
    /// lock that left FROZEN less than `L` ago still is.
    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        let current = self.inner.frozen_before(before_ms).await?;
        let Some(lag) = self.switches.index_lag_ms else { return Ok(current) };
        let now = self.now();
        let s = lock(&self.state);
        let recent = |at: Option<u64>| at.is_some_and(|t| now < t + lag);
        let mut out: Vec<ReservationId> =
            current.into_iter().filter(|id| !s.index.get(id).is_some_and(|e| recent(e.frozen_at))).collect();
        let mut trailing: Vec<(&i64, &ReservationId)> = s
            .index
            .iter()
            .filter(|(id, e)| recent(e.left_at) && e.created_at_ms < before_ms && !out.contains(id))
            .map(|(id, e)| (&e.created_at_ms, id))
            .collect();
        trailing.sort();
        out.extend(trailing.into_iter().map(|(_, id)| id.clone()));
        Ok(out)
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        self.inner.read_counters(counters).await
    }
}

#[async_trait]
impl<S: StockStore + ?Sized> Catalogue for Emulated<S> {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        self.inner.get_skus(skus).await
    }
    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        self.inner.get_skus_public(skus).await
    }
    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.inner.put_sku(meta, expected_version).await
    }
    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        self.inner.put_sku_as(meta, expected_version, by).await
    }
    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        self.inner.set_sku_paused(meta, expected_version).await
    }
    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        self.inner.set_sku_paused_as(meta, expected_version, by).await
    }
    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        self.inner.list_skus().await
    }
    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        self.inner.admin_stamp(of).await
    }
}

#[async_trait]
impl<S: StockStore + ?Sized> Shards for Emulated<S> {
    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.latency().await;
        self.inner.read_shards(sku, slots).await
    }
    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.inner.read_shards_public(sku, slots).await
    }
    async fn read_many_shards_public(&self, cells: &[(Sku, u16)]) -> anyhow::Result<Vec<Vec<ShardCounts>>> {
        self.inner.read_many_shards_public(cells).await
    }
    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &crate::domain::journal::Cause,
    ) -> anyhow::Result<bool> {
        self.inner.rebalance(meta, expected_version, old, new_available, cause).await
    }
    async fn adjust(&self, adj: &Adjustment, meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.inner.adjust(adj, meta_version).await
    }
    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.inner.adjust_pair(out, into).await
    }
}

#[async_trait]
impl<S: StockStore + ?Sized> Campaigns for Emulated<S> {
    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        self.inner.get_campaign(id, consistent).await
    }
    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.inner.write_campaign(c, expected_version).await
    }
    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        self.inner.write_campaign_as(c, expected_version, by).await
    }
    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        self.inner.read_quota_shards(id, sku, shards, consistent).await
    }
    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.inner.adjust_campaign(adj, next, expected_version).await
    }
    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        self.inner.list_campaigns().await
    }
}

#[async_trait]
impl<S: StockStore + ?Sized> CodePools for Emulated<S> {
    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<Ring>> {
        self.inner.read_rings(sku, slots).await
    }
    async fn read_codes(&self, sku: &Sku, slots: &[(u16, u64)]) -> anyhow::Result<Vec<Option<StoredCode>>> {
        self.inner.read_codes(sku, slots).await
    }
    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        self.inner.code_left_slot(sku, shard, pos).await
    }
    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>> {
        self.inner.known_codes(sku, fingerprints).await
    }
    async fn add_codes(&self, upload: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.inner.add_codes(upload).await
    }
    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>> {
        self.inner.claim_codes(sku, shard, quantity, max_head).await
    }
    async fn give_back_codes(&self, sku: &Sku, ranges: &[CodeRange]) -> anyhow::Result<bool> {
        self.inner.give_back_codes(sku, ranges).await
    }
    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        self.inner.unbound_codes(sku, shard, from, to).await
    }
    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        self.inner.mark_checked(sku, shard, from, to).await
    }
    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        self.inner.code_batch(sku, batch_id).await
    }
    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        self.inner.put_code_batch(sku, batch_id, result).await
    }
    async fn settle_codes(&self, id: &ReservationId, fate: CodeFate) -> anyhow::Result<Option<CodeFate>> {
        self.inner.settle_codes(id, fate).await
    }
    async fn redeem_code(&self, id: &ReservationId, sku: &Sku, slot: (u16, u64), at_ms: i64) -> anyhow::Result<bool> {
        self.inner.redeem_code(id, sku, slot, at_ms).await
    }
    async fn retire_codes(
        &self,
        retire: &crate::domain::codes::CodeRetire,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.inner.retire_codes(retire).await
    }
}

#[async_trait]
impl<S: StockStore + crate::ports::Queues + ?Sized> crate::ports::Queues for Emulated<S> {
    async fn next_number(&self, c: &CampaignId, k: u16) -> anyhow::Result<u64> {
        self.inner.next_number(c, k).await
    }
    async fn put_ticket(&self, c: &CampaignId, user: &UserId, t: &Ticket) -> anyhow::Result<bool> {
        self.inner.put_ticket(c, user, t).await
    }
    async fn ticket(&self, c: &CampaignId, user: &UserId) -> anyhow::Result<Option<Ticket>> {
        self.inner.ticket(c, user).await
    }
    async fn counters(&self, c: &CampaignId, counters: u16) -> anyhow::Result<Vec<u64>> {
        self.inner.counters(c, counters).await
    }
    async fn room(&self, c: &CampaignId) -> anyhow::Result<Room> {
        self.inner.room(c).await
    }
    async fn put_room(&self, c: &CampaignId, next: &Room) -> anyhow::Result<bool> {
        self.inner.put_room(c, next).await
    }
    async fn spent(&self, c: &CampaignId, number: u64) -> anyhow::Result<bool> {
        self.inner.spent(c, number).await
    }
}

pub mod stream;
#[cfg(test)]
mod tests;
