//! The reconcile scale run (docs/runbook.md, "Reconcile"): the fanned-out sweep over the
//! in-memory ports at the sources' scale — by default 100,000 SKUs and 1,000,000 FROZEN locks,
//! every lock an orphan past the stale age (the worst case: each one is fenced and released),
//! plus `--live-locks` (default as many) young FROZEN locks of checkouts still in progress,
//! which no repair touches and `locked = Σ FROZEN` must sum. Every counter write goes to the
//! stock journal (as the stream consumer would write it), so every check is on: sweep 1
//! repairs while the checks run beside it; sweep 2, a quiet minute later, is the steady state
//! (journals read from their checkpoints, every SKU judged by the lock sum).
//!
//! Workers run the real `service::reconcile::work` on the real work items, `--concurrency` at a
//! time like Lambda's SQS poller, continuations going back on the queue. Every port call is
//! counted and priced with DynamoDB's on-demand rules, and waits the latency it would have
//! from Lambda (reads 6 ms, writes 8 ms, transactions 15 ms; `--no-latency` turns that off),
//! so the wall time is the sweep's, with its real concurrency (a model of AWS latency, not a
//! measurement of it).
//!
//! The first `--campaign-items` SKUs (default 1,000) are items of campaigns (10 each) and
//! their locks draw on the quota too, so the lock sum is checked per campaign item as well.
//!
//! `cargo run --release -p holdfast-bench --bin reconcile-scale -- [--skus N] [--locks N]
//! [--live-locks N] [--campaign-items N] [--concurrency N] [--no-latency]`

use async_trait::async_trait;
use holdfast::adapters::memory::MemoryJournal;
use holdfast::adapters::sweep::PortSweep;
use holdfast::app::memory_app;
use holdfast::config::Config;
use holdfast::domain::allocation::Piece;
use holdfast::domain::campaign::Campaign;
use holdfast::domain::events::OrderEvent;
use holdfast::domain::invariants::ShardCounts;
use holdfast::domain::journal::{self, Cause, Counted, Image};
use holdfast::domain::order::{Order, OrderRecord};
use holdfast::domain::reservation::{LockStatus, Reservation, ReservationKind, ReservedLine};
use holdfast::domain::{CampaignId, Currency, OrderId, ReservationId, Sku, UserId};
use holdfast::ports::*;
use holdfast::service::reconcile::{self, ReconcileReport, WORK_BUDGET};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Port calls of one kind: how many, and how many items they carried.
struct Meter {
    calls: HashMap<&'static str, (AtomicU64, AtomicU64)>,
    /// Each call waits as long as it would take against DynamoDB/SQS from Lambda, so the
    /// run's wall time is the sweep's wall time with its real concurrency.
    latency: bool,
}

const KINDS: &[&str] = &[
    "Query",
    "BatchGet(reservations)",
    "BatchGet(sku meta)",
    "BatchGet(shards)",
    "GetItem(order)",
    "GetItem(reservation)",
    "PutItem(VOID)",
    "PutItem(order)",
    "Transact(lock move)",
    "SendMessage",
    "GetItem(campaign)",
    "BatchGet(quota shards)",
    "Query(journal)",
    "GetItem(checkpoint)",
    "PutItem(checkpoint)",
];

impl Meter {
    fn new(latency: bool) -> Self {
        Meter { calls: KINDS.iter().map(|k| (*k, Default::default())).collect(), latency }
    }
    async fn add(&self, kind: &'static str, items: usize) {
        if let Some((c, i)) = self.calls.get(kind) {
            c.fetch_add(1, Relaxed);
            i.fetch_add(items as u64, Relaxed);
        }
        if self.latency {
            let ms = match kind {
                "Transact(lock move)" => MS_TRANSACT,
                "PutItem(VOID)" | "PutItem(order)" | "SendMessage" | "PutItem(checkpoint)" => MS_WRITE,
                _ => MS_READ,
            };
            tokio::time::sleep(Duration::from_micros((ms * 1000.0) as u64)).await;
        }
    }
    /// A read that fans out over `n` requests in parallel: `n` calls, one round trip.
    async fn add_parallel(&self, kind: &'static str, n: u16, items: usize) {
        if let Some((c, _)) = self.calls.get(kind) {
            c.fetch_add(u64::from(n.saturating_sub(1)), Relaxed);
        }
        self.add(kind, items).await;
    }
    fn get(&self, kind: &str) -> (u64, u64) {
        self.calls.get(kind).map(|(c, i)| (c.load(Relaxed), i.load(Relaxed))).unwrap_or_default()
    }
    fn snapshot(&self) -> HashMap<&'static str, (u64, u64)> {
        KINDS.iter().map(|k| (*k, self.get(k))).collect()
    }
}

/// The stock table's stream and the stock-journal consumer, in one: every counter write of the
/// wrapped store becomes journal entries (before and after of each shard it touched).
struct Journaler {
    journal: Arc<MemoryJournal>,
    lock: tokio::sync::Mutex<()>,
    seq: AtomicU64,
}

/// The stock port counted, with its counter writes journaled when `2` is set.
struct Stock(Arc<dyn StockStore>, Arc<Meter>, Option<Arc<Journaler>>);

impl Stock {
    /// The shards a lock's lines touch, per cell (calendar cells have their own journal).
    fn cells_of(r: &Reservation) -> Vec<(Sku, u16)> {
        let mut out: Vec<(Sku, u16)> = Vec::new();
        for l in &r.lines {
            for c in l.cells() {
                let n = c.pieces.iter().map(|p| p.shard + 1).max().unwrap_or(0);
                match out.iter_mut().find(|(s, _)| *s == c.cell) {
                    Some((_, m)) => *m = (*m).max(n),
                    None => out.push((c.cell, n)),
                }
            }
        }
        out
    }

    async fn journaled<T>(
        &self,
        cells: Vec<(Sku, u16)>,
        created: bool,
        write: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        let Some(j) = &self.2 else { return write.await };
        let _one_at_a_time = j.lock.lock().await;
        let mut before = Vec::new();
        for (sku, n) in &cells {
            before.push(if created { None } else { Some(self.0.read_shards(sku, *n).await?) });
        }
        let out = write.await?;
        let now = holdfast::clock::now_ms();
        let mut entries = Vec::new();
        for ((sku, n), b) in cells.iter().zip(before) {
            let after = self.0.read_shards(sku, *n).await?;
            for (i, counts) in after.iter().enumerate().take(usize::from(*n)) {
                let old = b.as_ref().map(|v| Image { counts: v.get(i).copied().unwrap_or_default(), cause: None });
                let new = Image { counts: *counts, cause: Some(Cause::new("bench", None, "move")) };
                let item = Counted::Shard { sku: sku.clone(), shard: i as u16 };
                let seq = format!("{:020}", j.seq.fetch_add(1, Relaxed));
                entries.extend(journal::entry(&item, old.as_ref(), Some(&new), now, &seq));
            }
        }
        j.journal.put(&entries).await?;
        Ok(out)
    }
}
struct Orders(Arc<dyn OrderStore>, Arc<Meter>);
struct Msgs(Arc<Meter>, Arc<Mutex<Vec<Message>>>);

/// The waiting rooms: passed through unmetered (the sweep never reads them).
#[async_trait]
impl Queues for Stock {
    async fn next_number(&self, c: &CampaignId, k: u16) -> anyhow::Result<u64> {
        self.0.next_number(c, k).await
    }
    async fn put_ticket(
        &self,
        c: &CampaignId,
        u: &UserId,
        t: &holdfast::domain::queue::Ticket,
    ) -> anyhow::Result<bool> {
        self.0.put_ticket(c, u, t).await
    }
    async fn ticket(&self, c: &CampaignId, u: &UserId) -> anyhow::Result<Option<holdfast::domain::queue::Ticket>> {
        self.0.ticket(c, u).await
    }
    async fn counters(&self, c: &CampaignId, n: u16) -> anyhow::Result<Vec<u64>> {
        self.0.counters(c, n).await
    }
    async fn room(&self, c: &CampaignId) -> anyhow::Result<holdfast::domain::queue::Room> {
        self.0.room(c).await
    }
    async fn put_room(&self, c: &CampaignId, r: &holdfast::domain::queue::Room) -> anyhow::Result<bool> {
        self.0.put_room(c, r).await
    }
    async fn spent(&self, c: &CampaignId, n: u64) -> anyhow::Result<bool> {
        self.0.spent(c, n).await
    }
}

#[async_trait]
impl Catalogue for Stock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        self.1.add("BatchGet(sku meta)", skus.len()).await;
        self.0.get_skus(skus).await
    }
    async fn put_sku(&self, meta: &SkuMeta, v: Option<u64>) -> anyhow::Result<bool> {
        self.journaled(vec![(meta.sku.clone(), meta.slots)], v.is_none(), self.0.put_sku(meta, v)).await
    }
    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        self.0.list_skus().await
    }
    async fn set_sku_paused(&self, meta: &SkuMeta, v: u64) -> anyhow::Result<bool> {
        self.0.set_sku_paused(meta, v).await
    }
}

#[async_trait]
impl Shards for Stock {
    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.1.add("BatchGet(shards)", usize::from(slots)).await;
        self.0.read_shards(sku, slots).await
    }
    async fn rebalance(
        &self,
        m: &SkuMeta,
        v: u64,
        old: &[ShardCounts],
        new: &[i64],
        cause: &holdfast::domain::journal::Cause,
    ) -> anyhow::Result<bool> {
        self.0.rebalance(m, v, old, new, cause).await
    }
    async fn adjust(&self, adj: &Adjustment, v: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        let n = adj.pieces.iter().map(|(s, _)| s + 1).max().unwrap_or(0);
        self.journaled(vec![(adj.sku.clone(), n)], false, self.0.adjust(adj, v)).await
    }
    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.0.adjust_pair(out, into).await
    }
}

#[async_trait]
impl Locks for Stock {
    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        self.journaled(Self::cells_of(r), false, self.0.put_frozen(r, limits)).await
    }
    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        self.1.add("GetItem(reservation)", 1).await;
        self.0.get_reservation(id).await
    }
    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        self.1.add("Transact(lock move)", 1 + r.lines.iter().map(|l| l.pieces.len()).sum::<usize>()).await;
        self.journaled(Self::cells_of(r), false, self.0.move_lock(r, to)).await
    }
    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        self.1.add("Transact(lock move)", 1 + r.lines.len()).await;
        self.journaled(Self::cells_of(r), false, self.0.retake(r)).await
    }
    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        self.1.add("Transact(lock move)", 1 + r.lines.iter().map(|l| l.pieces.len()).sum::<usize>()).await;
        self.journaled(Self::cells_of(r), false, self.0.restock(r)).await
    }
    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        self.0.mark_oversold(r).await
    }
    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        self.0.frozen_before(before_ms).await
    }
    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        self.1.add("BatchGet(reservations)", ids.len()).await;
        self.0.get_reservations(ids).await
    }
    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        self.0.read_counters(counters).await
    }
    async fn fill_backorder(
        &self,
        before: &Reservation,
        after: &Reservation,
        actions: &[holdfast::domain::plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>> {
        self.1.add("Transact(backorder fill)", 1 + actions.len()).await;
        self.journaled(Self::cells_of(after), false, self.0.fill_backorder(before, after, actions)).await
    }
    async fn read_backlog(&self, sku: &Sku) -> anyhow::Result<holdfast::domain::backorder::Backlog> {
        self.0.read_backlog(sku).await
    }
}

#[async_trait]
impl Campaigns for Stock {
    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        self.1.add("GetItem(campaign)", 1).await;
        self.0.get_campaign(id, consistent).await
    }
    async fn write_campaign(&self, c: &Campaign, v: Option<u64>) -> anyhow::Result<bool> {
        self.0.write_campaign(c, v).await
    }
    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        self.1.add("BatchGet(quota shards)", usize::from(shards)).await;
        self.0.read_quota_shards(id, sku, shards, consistent).await
    }
    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        v: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.0.adjust_campaign(adj, next, v).await
    }
    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        self.0.list_campaigns().await
    }
}

#[async_trait]
impl CodePools for Stock {
    async fn settle_codes(
        &self,
        id: &ReservationId,
        fate: holdfast::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<holdfast::domain::reservation::CodeFate>> {
        self.0.settle_codes(id, fate).await
    }
    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<holdfast::domain::codes::Ring>> {
        self.0.read_rings(sku, slots).await
    }
    async fn read_codes(
        &self,
        sku: &Sku,
        slots: &[(u16, u64)],
    ) -> anyhow::Result<Vec<Option<holdfast::domain::codes::StoredCode>>> {
        self.0.read_codes(sku, slots).await
    }
    async fn known_codes(&self, sku: &Sku, fps: &[String]) -> anyhow::Result<HashMap<String, String>> {
        self.0.known_codes(sku, fps).await
    }
    async fn add_codes(&self, up: &holdfast::ports::CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.0.add_codes(up).await
    }
    async fn claim_codes(&self, sku: &Sku, shard: u16, q: u32, max: u64) -> anyhow::Result<Option<u64>> {
        self.0.claim_codes(sku, shard, q, max).await
    }
    async fn give_back_codes(
        &self,
        sku: &Sku,
        ranges: &[holdfast::domain::reservation::CodeRange],
    ) -> anyhow::Result<bool> {
        self.0.give_back_codes(sku, ranges).await
    }
    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        self.0.unbound_codes(sku, shard, from, to).await
    }
    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        self.0.mark_checked(sku, shard, from, to).await
    }
    async fn code_batch(&self, sku: &Sku, b: &str) -> anyhow::Result<Option<holdfast::domain::codes::BatchResult>> {
        self.0.code_batch(sku, b).await
    }
    async fn put_code_batch(&self, sku: &Sku, b: &str, r: &holdfast::domain::codes::BatchResult) -> anyhow::Result<()> {
        self.0.put_code_batch(sku, b, r).await
    }
}

#[async_trait]
impl OrderStore for Orders {
    async fn get(&self, id: &OrderId) -> anyhow::Result<Option<OrderRecord>> {
        self.1.add("GetItem(order)", 1).await;
        self.0.get(id).await
    }
    async fn put_new(&self, o: &Order) -> anyhow::Result<bool> {
        self.0.put_new(o).await
    }
    async fn put_void(&self, id: &OrderId) -> anyhow::Result<bool> {
        self.1.add("PutItem(VOID)", 1).await;
        self.0.put_void(id).await
    }
    async fn replace(&self, prev: &Order, next: &Order) -> anyhow::Result<bool> {
        self.1.add("PutItem(order)", 1).await;
        self.0.replace(prev, next).await
    }
    async fn list_for_user(
        &self,
        user: &UserId,
        after: Option<&OrderCursor>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Order>, Option<OrderCursor>)> {
        self.0.list_for_user(user, after, limit).await
    }
    async fn due_in(&self, index: holdfast::ports::OrderIndex, before: i64) -> anyhow::Result<Vec<OrderId>> {
        self.0.due_in(index, before).await
    }
    async fn between(&self, index: holdfast::ports::OrderIndex, from: i64, to: i64) -> anyhow::Result<Vec<OrderId>> {
        self.0.between(index, from, to).await
    }
}

#[async_trait]
impl Messages for Msgs {
    async fn send(&self, msg: &Message, _delay_s: u32) -> anyhow::Result<()> {
        self.0.add("SendMessage", 1).await;
        if let Ok(mut q) = self.1.lock() {
            q.push(msg.clone());
        }
        Ok(())
    }
    async fn reconcile_backlog(&self) -> anyhow::Result<u64> {
        self.0.add("GetQueueAttributes", 1).await;
        Ok(self.1.lock().map(|q| q.len() as u64).unwrap_or(0))
    }
}

struct CountingSweep(Arc<dyn SweepIndex>, Arc<Meter>);

#[async_trait]
impl SweepIndex for CountingSweep {
    async fn frozen_page(&self, b: u32, before: i64, c: Option<&str>, l: usize) -> anyhow::Result<Page<ReservationId>> {
        let p = self.0.frozen_page(b, before, c, l).await?;
        self.1.add("Query", p.items.len()).await;
        Ok(p)
    }
    async fn pending_page(&self, b: u32, before: i64, c: Option<&str>, l: usize) -> anyhow::Result<Page<OrderId>> {
        let p = self.0.pending_page(b, before, c, l).await?;
        self.1.add("Query", p.items.len()).await;
        Ok(p)
    }
    async fn orders_page(
        &self,
        index: holdfast::ports::OrderIndex,
        b: u32,
        before: i64,
        c: Option<&str>,
        l: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        let p = self.0.orders_page(index, b, before, c, l).await?;
        self.1.add("Query", p.items.len()).await;
        Ok(p)
    }
    async fn skus_page(&self, c: Option<&str>, l: usize) -> anyhow::Result<Page<Sku>> {
        let p = self.0.skus_page(c, l).await?;
        self.1.add("Query", p.items.len()).await;
        Ok(p)
    }
}

/// The journal port counted (the reconcile worker's reads and checkpoint writes).
struct CountingJournal(Arc<MemoryJournal>, Arc<Meter>);

#[async_trait]
impl Journal for CountingJournal {
    async fn put(&self, entries: &[journal::Entry]) -> anyhow::Result<()> {
        self.0.put(entries).await
    }
    async fn for_sku(
        &self,
        sku: &Sku,
        spread: u16,
        c: Option<&str>,
        l: usize,
    ) -> anyhow::Result<(Vec<journal::Entry>, Option<String>)> {
        let out = self.0.for_sku(sku, spread, c, l).await?;
        // one Query per partition, and one of the SKU's partition from before the spread
        self.1.add_parallel("Query(journal)", spread + 1, out.0.len()).await;
        Ok(out)
    }
    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<journal::Entry>> {
        self.0.for_cause(reference).await
    }
    async fn since(
        &self,
        sku: &Sku,
        spread: u16,
        after: Option<&str>,
        l: usize,
    ) -> anyhow::Result<(Vec<journal::Entry>, Option<String>)> {
        let out = self.0.since(sku, spread, after, l).await?;
        self.1.add_parallel("Query(journal)", spread + 1, out.0.len()).await;
        Ok(out)
    }
    async fn checkpoint(&self, sku: &Sku) -> anyhow::Result<Option<journal::Checkpoint>> {
        self.1.add("GetItem(checkpoint)", 1).await;
        self.0.checkpoint(sku).await
    }
    async fn put_checkpoint(&self, sku: &Sku, cp: &journal::Checkpoint, v: Option<u64>) -> anyhow::Result<bool> {
        self.1.add("PutItem(checkpoint)", 1).await;
        self.0.put_checkpoint(sku, cp, v).await
    }
}

struct NoBus;

#[async_trait]
impl EventBus for NoBus {
    async fn publish(&self, events: &[OrderEvent]) -> anyhow::Result<Vec<bool>> {
        Ok(vec![true; events.len()])
    }

    async fn publish_stock(&self, _detail_type: &str, _detail: &serde_json::Value) -> anyhow::Result<bool> {
        Ok(true)
    }
}

/// The reconcile sweep at scale on the memory store (docs/runbook.md, "Reconcile").
#[derive(clap::Parser)]
#[command(about)]
struct Args {
    /// SKUs in the table.
    #[arg(long, default_value_t = 100_000)]
    skus: usize,
    /// Closed locks (history the sweep must not read).
    #[arg(long, default_value_t = 1_000_000)]
    locks: usize,
    /// Live locks (default: as many as --locks).
    #[arg(long)]
    live_locks: Option<usize>,
    /// Workers sweeping at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Campaign items (10 per campaign, on the first SKUs).
    #[arg(long, default_value_t = 1_000)]
    campaign_items: usize,
    /// No injected per-call AWS latency (the sweep runs at memory speed).
    #[arg(long)]
    no_latency: bool,
}

/// On-demand prices, us-east-1, 2024-11 list (the same as bench/REPORT.md).
const USD_PER_RRU: f64 = 0.125 / 1e6;
const USD_PER_WRU: f64 = 0.625 / 1e6;
const USD_PER_SQS_REQUEST: f64 = 0.40 / 1e6;
const USD_PER_LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// arm64, per GB-second; the worker has 256 MB.
const USD_PER_GB_S: f64 = 0.0000133334;
/// Modelled latency of one DynamoDB call from Lambda in the same region (p50-ish).
const MS_READ: f64 = 6.0;
const MS_WRITE: f64 = 8.0;
const MS_TRANSACT: f64 = 15.0;

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let (n_skus, n_locks, concurrency) = (args.skus, args.locks, args.concurrency);
    let n_live = args.live_locks.unwrap_or(n_locks);
    // campaign items (10 per campaign, on the first SKUs): the locks of those SKUs draw on them
    let n_items = args.campaign_items.min(n_skus);

    let mut config = Config::from_lookup(&|_| None)?;
    config.sku_cache_ms = 0;
    config.soldout_cache_ms = 0;
    let (plain, world) = memory_app("reconcile-worker", config.clone())?;
    drop(plain);
    let journal = Arc::new(MemoryJournal::new());
    let journaler = Arc::new(Journaler { journal: journal.clone(), lock: Default::default(), seq: AtomicU64::new(1) });
    // seeding goes through the journaling store too (its calls are not counted)
    let seeder = Stock(world.stock.clone(), Arc::new(Meter::new(false)), Some(journaler.clone()));
    let eur = Currency::parse("EUR")?;
    let per_sku = (n_locks + n_live).div_ceil(n_skus.max(1)) as i64 + 1;
    let t = Instant::now();
    for i in 0..n_skus {
        let sku = Sku::parse(&format!("S{i:06}"))?;
        let meta = SkuMeta {
            fences: Vec::new(),
            warehouses: None,
            controls: Default::default(),
            sku,
            name: format!("sku {i}"),
            price: 500,
            currency: eur.clone(),
            shards: 1,
            slots: 1,
            per_user_limit: None,
            stocked: 0,
            version: 1,
            paused: false,
            model: Default::default(),
            bundle: Vec::new(),
            supplier: None,
        };
        // Through the port (put_sku + adjust), as the admin API would: `seed` is a test helper
        // that scans every shard per call.
        let adj = Adjustment {
            sku: meta.sku.clone(),
            adjustment_id: "init".into(),
            delta: per_sku,
            reason: "scale run".into(),
            actor: None,
            at_ms: 0,
            pieces: vec![(0, per_sku)],
        };
        anyhow::ensure!(seeder.put_sku(&meta, None).await?, "put_sku {i}");
        anyhow::ensure!(seeder.adjust(&adj, meta.version).await? == Ok(()), "adjust {i}");
    }
    let campaign_of = |k: usize| CampaignId::parse(&format!("C{:05}", k / 10));
    let now_s = holdfast::clock::now_s();
    for first in (0..n_items).step_by(10) {
        let items = (first..(first + 10).min(n_items))
            .map(|k| {
                Ok(holdfast::domain::campaign::CampaignItem {
                    reserve: false,
                    waves: None,
                    admission_rate: None,
                    sku: Sku::parse(&format!("S{k:06}"))?,
                    price: None,
                    per_user_limit: None,
                    shards: 1,
                    quota: per_sku,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let c = Campaign {
            end_grace_s: 0,
            queue: None,
            id: campaign_of(first)?,
            name: "scale".into(),
            starts_at: now_s - 7_200,
            ends_at: now_s + 7_200,
            paused: false,
            items,
            version: 1,
        };
        anyhow::ensure!(seeder.write_campaign(&c, None).await?, "write_campaign {first}");
    }
    // Orphan freezes an hour old (no order was ever written for any of them), then young
    // FROZEN locks of checkouts in progress (not the sweep's business: their own checks are
    // not due).
    let hour_ago = holdfast::clock::now_ms() - 3_600_000;
    for i in 0..n_locks + n_live {
        let sku = Sku::parse(&format!("S{:06}", i % n_skus.max(1)))?;
        let created_at_ms = if i < n_locks { hour_ago + (i % 1000) as i64 } else { holdfast::clock::now_ms() };
        let r = Reservation {
            id: ReservationId::from_stored(&format!("o{i:031x}"))?,
            kind: ReservationKind::Order,
            status: LockStatus::Frozen,
            user: Some(UserId::parse(&format!("u{i}"))?),
            request_hash: "h".into(),
            created_at_ms,
            expires_at: holdfast::clock::now_s() + if i < n_locks { -1800 } else { 900 },
            lines: vec![ReservedLine {
                sku,
                quantity: 1,
                unit_price: 500,
                currency: eur.clone(),
                limited: false,
                pieces: vec![Piece { shard: 0, quantity: 1 }],
                campaign: (i % n_skus.max(1) < n_items).then(|| campaign_of(i % n_skus.max(1))).transpose()?.map(
                    |campaign_id| holdfast::domain::reservation::CampaignLine {
                        campaign_id,
                        pieces: vec![Piece { shard: 0, quantity: 1 }],
                        limited: false,
                    },
                ),
                dates: Vec::new(),
                draws: Vec::new(),
                at_payment: false,
                at_shipment: false,
                codes: None,
                backorder: None,
            }],
            oversold: false,
            code_fate: None,
            pending: false,
        };
        if seeder.put_frozen(&r, &FreezeLimits::default()).await? != Ok(()) {
            anyhow::bail!("seeding lock {i} failed");
        }
    }
    eprintln!(
        "seeded {n_skus} SKUs, {n_items} campaign items, {n_locks} orphan and {n_live} live FROZEN locks in {:.1?}",
        t.elapsed()
    );

    let meter = Arc::new(Meter::new(!args.no_latency));
    let queue: Arc<Mutex<Vec<Message>>> = Arc::default();
    let stock: Arc<dyn StockStore> = Arc::new(Stock(world.stock.clone(), meter.clone(), Some(journaler)));
    let orders: Arc<dyn OrderStore> = Arc::new(Orders(world.orders.clone(), meter.clone()));
    // One index build per sweep, as a GSI would serve it (workers re-read what they act on).
    let index = |stock: &Arc<dyn StockStore>| {
        Arc::new(CountingSweep(
            Arc::new(PortSweep::new(stock.clone(), orders.clone(), Duration::from_secs(3600))),
            meter.clone(),
        ))
    };
    let app = Arc::new(
        holdfast::app::with_ports(
            "reconcile-worker",
            config.clone(),
            stock.clone(),
            orders.clone(),
            Arc::new(Msgs(meter.clone(), queue.clone())),
            Arc::new(NoBus),
        )?
        .with_sweep(index(&stock))
        .with_journal(Arc::new(CountingJournal(journal.clone(), meter.clone()))),
    );

    let first = sweep(&app, &queue, concurrency).await?;
    let calls_1 = meter.snapshot();
    let left_frozen = world.snapshot(300).reservations.iter().filter(|r| r.status == LockStatus::Frozen).count();

    // A quiet minute later (the lock sum judges SKUs not written for a minute), the next sweep
    // over a fresh index build: nothing to repair, every check on.
    let quiet = Duration::from_millis(reconcile::LOCKED_QUIET_MS as u64 + 2_000);
    eprintln!("sweep 1 done in {:.1?}; waiting {quiet:?} for the second", first.wall);
    tokio::time::sleep(quiet).await;
    let app2 = Arc::new(
        holdfast::app::with_ports(
            "reconcile-worker",
            config,
            stock.clone(),
            orders.clone(),
            Arc::new(Msgs(meter.clone(), queue.clone())),
            Arc::new(NoBus),
        )?
        .with_sweep(index(&stock))
        .with_journal(Arc::new(CountingJournal(journal.clone(), meter.clone()))),
    );
    let second = sweep(&app2, &queue, concurrency).await?;
    let calls_2 = diff(&meter.snapshot(), &calls_1);
    // and straight after it (nothing written since): the steady state of a quiet catalogue
    let third = sweep(&app2, &queue, concurrency).await?;
    let calls_3 = diff(&meter.snapshot(), &meter_sum(&calls_1, &calls_2));

    let out = serde_json::json!({
        "skus": n_skus, "campaign_items": n_items, "orphan_frozen_locks": n_locks, "live_frozen_locks": n_live, "concurrency": concurrency,
        "latency_injected": meter.latency,
        "sweep_1_repairs_and_checks": summary(&first, &calls_1, n_skus, left_frozen),
        "sweep_2_checks_catching_up": summary(&second, &calls_2, n_skus, left_frozen),
        "sweep_3_steady_state": summary(&third, &calls_3, n_skus, left_frozen),
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    let (rep, r2, r3) = (&first.report, &second.report, &third.report);
    anyhow::ensure!(left_frozen == n_live, "{} orphan locks still FROZEN after the sweep", left_frozen - n_live);
    anyhow::ensure!(rep.violations.is_empty() && r2.violations.is_empty() && r3.violations.is_empty(), "violations");
    for r in [r2, r3] {
        anyhow::ensure!(r.locked_skus_judged == n_skus, "judged {} of {n_skus} SKUs", r.locked_skus_judged);
        anyhow::ensure!(r.journals_held == n_skus, "{} of {n_skus} journals held", r.journals_held);
        anyhow::ensure!(
            r.locked_items_judged == n_items,
            "judged {} of {n_items} campaign items",
            r.locked_items_judged
        );
    }
    Ok(())
}

fn diff(
    now: &HashMap<&'static str, (u64, u64)>,
    before: &HashMap<&'static str, (u64, u64)>,
) -> HashMap<&'static str, (u64, u64)> {
    now.iter()
        .map(|(k, (c, i))| {
            let (c0, i0) = before.get(k).copied().unwrap_or_default();
            (*k, (c - c0, i - i0))
        })
        .collect()
}

fn meter_sum(
    a: &HashMap<&'static str, (u64, u64)>,
    b: &HashMap<&'static str, (u64, u64)>,
) -> HashMap<&'static str, (u64, u64)> {
    a.iter()
        .map(|(k, (c, i))| {
            let (c1, i1) = b.get(k).copied().unwrap_or_default();
            (*k, (c + c1, i + i1))
        })
        .collect()
}

/// One sweep's figures, with the checks' requests and cost per 10k SKUs (metadata, shards,
/// journal, checkpoints: SkuInvariants, SkuJournals and the SKU half of LockedTotals) and per
/// 100k FROZEN locks (the lock half of LockedTotals: index pages and lock reads).
fn summary(
    s: &Swept,
    calls: &HashMap<&'static str, (u64, u64)>,
    n_skus: usize,
    frozen_left: usize,
) -> serde_json::Value {
    let r = &s.report;
    let (usd, usd_ddb, rru, wru, call_s) = cost(calls, s.invocations, s.busy_s);
    let g = |k: &str| calls.get(k).copied().unwrap_or_default();
    let per = |x: f64, n: usize, unit: f64| if n > 0 { x * unit / n as f64 } else { 0.0 };
    let sku_kinds =
        ["BatchGet(sku meta)", "BatchGet(shards)", "Query(journal)", "GetItem(checkpoint)", "PutItem(checkpoint)"];
    let sku_reqs: u64 = sku_kinds.iter().map(|k| g(k).0).sum();
    let sku_rru = g("BatchGet(sku meta)").1 as f64
        + g("BatchGet(shards)").1 as f64
        + g("GetItem(checkpoint)").0 as f64
        + 0.5 * g("Query(journal)").0 as f64;
    let sku_wru = g("PutItem(checkpoint)").0 as f64;
    let sku_usd = sku_rru * USD_PER_RRU + sku_wru * USD_PER_WRU;
    let lock_pages = (r.locked_locks_read as u64).div_ceil(reconcile::LOCKED_LOCK_PAGE as u64);
    let lock_batches = (r.locked_locks_read as u64).div_ceil(100);
    let lock_reqs = lock_pages + lock_batches;
    let lock_rru = r.locked_locks_read as f64 + lock_pages as f64;
    serde_json::json!({
        "wall_s": s.wall.as_secs_f64(), "invocations": s.invocations, "continuations": r.continuations,
        "locks_released": r.locks_released, "frozen_left": frozen_left,
        "skus_checked": r.skus_checked, "skus_inconclusive": r.skus_inconclusive,
        "violations": r.violations, "errors": r.errors,
        "journals": {"held": r.journals_held, "behind": r.journals_behind, "incomplete": r.journals_incomplete, "entries_read": r.journal_entries_read},
        "locked_sum": {"skus_judged": r.locked_skus_judged, "skus_moved": r.locked_skus_moved, "locks_read": r.locked_locks_read, "groups_suspect": r.locked_groups_suspect, "runs": r.locked_runs, "campaign_items_judged": r.locked_items_judged, "campaign_items_moved": r.locked_items_moved},
        "item_ms_p50": s.p(0.5), "item_ms_p99": s.p(0.99), "item_ms_max": s.p(1.0),
        "calls": calls.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
        "read_units": rru, "write_units": wru, "usd_dynamodb": usd_ddb, "usd_total": usd,
        "modelled_aws_call_seconds": call_s,
        "usd_per_100k_locks_released": per(usd - sku_usd, r.locks_released, 100_000.0),
        "checks_per_10k_skus": {
            "requests": per(sku_reqs as f64, n_skus, 10_000.0),
            "read_units": per(sku_rru, n_skus, 10_000.0),
            "write_units": per(sku_wru, n_skus, 10_000.0),
            "usd": per(sku_usd, n_skus, 10_000.0),
            // the three SKU chains side by side, 10 calls of a page in flight
            "modelled_s": per(sku_reqs as f64 * MS_READ / 1000.0 / 3.0 / 10.0, n_skus, 10_000.0),
        },
        "lock_sum_per_100k_frozen_locks": {
            "requests": per(lock_reqs as f64, r.locked_locks_read, 100_000.0),
            "read_units": per(lock_rru, r.locked_locks_read, 100_000.0),
            "usd": per(lock_rru * USD_PER_RRU, r.locked_locks_read, 100_000.0),
            // one chain, 10 BatchGets of a page in flight
            "modelled_s": per((lock_pages as f64 + lock_batches as f64 / 10.0) * MS_READ / 1000.0, r.locked_locks_read, 100_000.0),
        },
    })
}

/// One sweep: seeded by the schedule, its items run by `concurrency` workers like Lambda's
/// SQS poller, continuations going back on the queue, until the queue is empty.
struct Swept {
    report: ReconcileReport,
    wall: Duration,
    invocations: u64,
    busy_ms: Vec<f64>,
    busy_s: f64,
}

impl Swept {
    fn p(&self, q: f64) -> f64 {
        self.busy_ms.get(((self.busy_ms.len() as f64 - 1.0) * q) as usize).copied().unwrap_or(0.0)
    }
}

async fn sweep(
    app: &Arc<holdfast::app::App>,
    queue: &Arc<Mutex<Vec<Message>>>,
    concurrency: usize,
) -> anyhow::Result<Swept> {
    let started = Instant::now();
    reconcile::seed(app).await?;
    let invocations = Arc::new(AtomicU64::new(0));
    // Items taken and not yet finished; taken under the queue's lock, so "queue empty and
    // nothing in flight" means the sweep is done.
    let in_flight = Arc::new(AtomicU64::new(0));
    let busy_ms = Arc::new(Mutex::new(Vec::<f64>::new()));
    let total = Arc::new(Mutex::new(ReconcileReport::default()));
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (app, queue, inv, total, busy_ms, in_flight) =
            (app.clone(), queue.clone(), invocations.clone(), total.clone(), busy_ms.clone(), in_flight.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let msg = {
                    let Ok(mut q) = queue.lock() else { return };
                    match q.pop() {
                        Some(m) => {
                            in_flight.fetch_add(1, Relaxed);
                            Some(m)
                        }
                        None if in_flight.load(Relaxed) == 0 => return,
                        None => None,
                    }
                };
                let Some(Message::ReconcileWork { sweep_ms, item, .. }) = msg else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                inv.fetch_add(1, Relaxed);
                let t = Instant::now();
                match reconcile::work(&app, &item, WORK_BUDGET).await {
                    Ok(out) => {
                        if let Some(next) = out.next {
                            let msg = Message::ReconcileWork { schema: 1, sweep_ms, item: next };
                            let _ = app.messages.send(&msg, 0).await;
                        }
                        if let Ok(mut t) = total.lock() {
                            t.merge(out.report);
                        }
                    }
                    Err(e) => {
                        eprintln!("work item failed: {e:#}");
                        if let Ok(mut t) = total.lock() {
                            t.errors += 1;
                        }
                    }
                }
                if let Ok(mut b) = busy_ms.lock() {
                    b.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                in_flight.fetch_sub(1, Relaxed);
            }
        }));
    }
    for w in workers {
        w.await?;
    }
    let wall = started.elapsed();
    let report = total.lock().map(|t| t.clone()).unwrap_or_default();
    let mut busy = busy_ms.lock().map(|b| b.clone()).unwrap_or_default();
    busy.sort_by(|a, b| a.total_cmp(b));
    let busy_s = busy.iter().sum::<f64>() / 1000.0;
    Ok(Swept { report, wall, invocations: invocations.load(Relaxed), busy_ms: busy, busy_s })
}

/// Dollars (total, DynamoDB), read and write units, and modelled AWS call seconds of counted calls.
fn cost(calls: &HashMap<&'static str, (u64, u64)>, invocations: u64, busy_s: f64) -> (f64, f64, f64, f64, f64) {
    let g = |k: &str| calls.get(k).copied().unwrap_or_default();
    let (q_calls, _) = g("Query");
    let (bg_res_calls, bg_res_items) = g("BatchGet(reservations)");
    let (bg_meta_calls, bg_meta_items) = g("BatchGet(sku meta)");
    let (bg_shard_calls, bg_shard_items) = g("BatchGet(shards)");
    let (get_order, _) = g("GetItem(order)");
    let (get_res, _) = g("GetItem(reservation)");
    let (put_void, _) = g("PutItem(VOID)");
    let (put_order, _) = g("PutItem(order)");
    let (moves, move_items) = g("Transact(lock move)");
    let (sends, _) = g("SendMessage");
    let (jq, _) = g("Query(journal)");
    let (cp_get, _) = g("GetItem(checkpoint)");
    let (cp_put, _) = g("PutItem(checkpoint)");
    let (get_campaign, _) = g("GetItem(campaign)");
    let (bg_quota_calls, bg_quota_items) = g("BatchGet(quota shards)");
    // Sizes measured on the emulator: a reservation ~300 B, an order ~400 B, SKU meta and a
    // shard ~100 B: one read unit each (strongly consistent); a keys-only index page of 100
    // entries ~8 KB: 1 unit eventually consistent; a journal page of new entries ~0.5 unit
    // (most read a handful), a checkpoint 1 unit to read and write. A lock move is a
    // transaction of (reservation + pieces) items at 2 write units each, plus 1 for the GSI
    // entry it removes.
    let rru = q_calls as f64
        + bg_res_items as f64
        + bg_meta_items as f64
        + bg_shard_items as f64
        + get_order as f64
        + get_res as f64
        + 0.5 * jq as f64
        + cp_get as f64
        + get_campaign as f64
        + bg_quota_items as f64;
    let wru = put_void as f64 + put_order as f64 + 2.0 * move_items as f64 + moves as f64 + cp_put as f64;
    let inv = invocations as f64;
    let calls_ms = (q_calls
        + bg_res_calls
        + bg_meta_calls
        + bg_shard_calls
        + get_order
        + get_res
        + jq
        + cp_get
        + get_campaign
        + bg_quota_calls) as f64
        * MS_READ
        + (put_void + put_order + sends + cp_put) as f64 * MS_WRITE
        + moves as f64 * MS_TRANSACT;
    let usd_ddb = rru * USD_PER_RRU + wru * USD_PER_WRU;
    let usd_other =
        (sends as f64 + 2.0 * inv) * USD_PER_SQS_REQUEST + inv * USD_PER_LAMBDA_REQUEST + busy_s * 0.25 * USD_PER_GB_S;
    (usd_ddb + usd_other, usd_ddb, rru, wru, calls_ms / 1000.0)
}
