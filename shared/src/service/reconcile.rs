//! The reconcile sweep (docs/architecture.md, "Events and self-healing"): the second safety net, fanned out so it keeps up at the
//! sources' scale (docs/runbook.md, "Reconcile"). The schedule seeds [`WorkItem`]s — one per
//! index bucket for stale locks and for overdue orders, one for the SKU list, one for the
//! `locked = Σ FROZEN` check — onto the work queue; each worker pages through its item inside
//! [`WORK_BUDGET`] and sends the rest back with a cursor. No step reads a whole index. Every
//! repair is a conditional write, so overlapping workers (or a page redone after a crash) never
//! repair one thing twice: the loser's condition fails and it counts nothing.

use super::after_sale::{self, Caller, Change};
use super::checks::{sweep_frozen, CheckOutcome};
use super::orders::expire;
use super::orders::OrderError;
use super::refunds;
use super::supplier::PollOutcome;
use crate::adapters::dynamo::INDEX_BUCKETS;
use crate::app::App;
use crate::clock;
use crate::domain::events::releases_bookings;
use crate::domain::invariants::{check_stock, SkuSnapshot, Violation};
use crate::domain::journal;
use crate::domain::order::{Order, OrderRecord, OrderStatus};
use crate::domain::reservation::LockStatus;
use crate::domain::supplier::BookingStatus;
use crate::domain::{OrderId, ReservationId, Sku};
use crate::faults::{self, InjectedCrash};
use crate::ports::{LockSums, Message, OrderIndex, WorkItem, LOCK_GROUPS};
use crate::telemetry::names;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReconcileReport {
    pub stale_locks: usize,
    pub locks_released: usize,
    pub overdue_orders: usize,
    pub orders_expired: usize,
    /// Shipped orders completed automatically.
    pub orders_completed: usize,
    /// Refunds left REQUESTED that this sweep issued.
    pub refunds_redriven: usize,
    pub skus_checked: usize,
    pub skus_inconclusive: usize,
    pub violations: Vec<String>,
    /// Items that could not be handled this run (retried next run).
    pub errors: usize,
    /// Work items run, and how many of them handed a continuation on.
    pub items: usize,
    pub continuations: usize,
    /// Always `false` now: `locked = Σ FROZEN` runs at any scale (kept for log readers).
    pub locked_check_skipped: bool,
    /// `locked = Σ FROZEN`: SKUs judged (quiet during the run, in a group with no SKU written
    /// meanwhile), SKUs written during the run (not judged), groups whose sums disagreed (looked
    /// at again per SKU), and runs finished.
    pub locked_skus_judged: usize,
    pub locked_skus_moved: usize,
    pub locked_groups_suspect: usize,
    pub locked_runs: usize,
    /// FROZEN locks read by `locked = Σ FROZEN`.
    pub locked_locks_read: usize,
    /// Journal entries the check read (only those after each SKU's checkpoint).
    pub journal_entries_read: usize,
    /// SKUs whose stock journal was checked against their counters and held, whose journal
    /// is incomplete (the SKU predates the journal: not checked), and whose journal had not
    /// caught up with the last write by the second look (not judged this run).
    pub journals_held: usize,
    pub journals_incomplete: usize,
    pub journals_behind: usize,
    /// Codes a dead checkout had claimed, returned to their pool (docs/code-pools.md).
    pub codes_returned: usize,
    /// Stale locks of refunded orders confirmed and then restocked (their restock had found the
    /// lock still FROZEN and given up).
    pub locks_restocked: usize,
    /// SUPPLIER orders read by the sweep that should hold nothing at their supplier (closed
    /// unpaid, or refunded) and still recorded a CONFIRMED or PENDING booking, quiet for
    /// `StaleLockSeconds`: their compensation was run again (`Repairs`).
    pub supplier_bookings_held: usize,
    /// Supplier cancels those compensations made.
    pub supplier_cancels: usize,
}

impl ReconcileReport {
    /// Adds another item's report to this one.
    pub fn merge(&mut self, o: ReconcileReport) {
        self.stale_locks += o.stale_locks;
        self.codes_returned += o.codes_returned;
        self.locks_released += o.locks_released;
        self.overdue_orders += o.overdue_orders;
        self.orders_expired += o.orders_expired;
        self.orders_completed += o.orders_completed;
        self.refunds_redriven += o.refunds_redriven;
        self.skus_checked += o.skus_checked;
        self.skus_inconclusive += o.skus_inconclusive;
        self.violations.extend(o.violations);
        self.errors += o.errors;
        self.items += o.items;
        self.continuations += o.continuations;
        self.locked_check_skipped |= o.locked_check_skipped;
        self.journals_held += o.journals_held;
        self.journals_incomplete += o.journals_incomplete;
        self.journals_behind += o.journals_behind;
        self.locked_skus_judged += o.locked_skus_judged;
        self.locked_skus_moved += o.locked_skus_moved;
        self.locked_groups_suspect += o.locked_groups_suspect;
        self.locked_runs += o.locked_runs;
        self.locked_locks_read += o.locked_locks_read;
        self.journal_entries_read += o.journal_entries_read;
        self.locks_restocked += o.locks_restocked;
        self.supplier_bookings_held += o.supplier_bookings_held;
        self.supplier_cancels += o.supplier_cancels;
    }
}

/// Time one worker spends on its item before handing the rest on (the worker Lambda's timeout
/// is 60 s; a page is ~100 items, so a page never straddles the limit).
pub const WORK_BUDGET: Duration = Duration::from_secs(20);
/// Locks resolved per page: one BatchGetItem.
pub const LOCK_PAGE: usize = 100;
pub const ORDER_PAGE: usize = 100;
/// SKUs checked per page: two metadata BatchGetItems and two shard reads per SKU.
pub const SKU_PAGE: usize = 100;
/// Items of one page handled at once (independent conditional repairs, or reads).
pub const PAGE_CONCURRENCY: usize = 10;
/// FROZEN locks read per page by `locked = Σ FROZEN` (one index page, 10 BatchGets).
pub const LOCKED_LOCK_PAGE: usize = 1000;
/// A SKU is judged by `locked = Σ FROZEN` only if its journal's newest entry is older than
/// the run's start by this much (the stream's lag; a SKU with no entry was never written since
/// the journal exists).
pub const LOCKED_QUIET_MS: i64 = 60_000;
/// Groups looked at again per SKU after a disagreement (more wait for the next sweep): the
/// focused run carries one sum per SKU with FROZEN locks in them, ~4/1024 of such SKUs (about
/// 100 KB of the 256 KB an SQS message holds at a million of them).
pub const LOCKED_FOCUS_MAX: usize = 4;
/// The sweep before this one may leave this many items queued (a poison item waiting for its
/// next delivery, a slow check's chain) and the next sweep's repairs are still seeded; its
/// checks are seeded only onto an empty queue, so no two chains of one check run at once.
pub const BACKLOG_ALLOWANCE: u64 = 8;

/// What one work item did, and what is left of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkOutcome {
    pub report: ReconcileReport,
    pub next: Option<WorkItem>,
}

/// The items of one sweep started at `now_ms`.
pub fn seed_items(app: &App, now_ms: i64) -> Vec<WorkItem> {
    let mut items = repair_items(app, now_ms);
    items.extend(check_items());
    items
}

/// The repairs of one sweep: stale locks, overdue orders, shipped orders due, unissued refunds.
pub fn repair_items(app: &App, now_ms: i64) -> Vec<WorkItem> {
    let stale_ms = app.config.stale_lock_s.saturating_mul(1000);
    let mut items = Vec::new();
    for bucket in 0..INDEX_BUCKETS {
        items.push(WorkItem::StaleLocks { bucket, before_ms: now_ms - stale_ms, cursor: None });
        items.push(WorkItem::OverdueOrders { bucket, before_s: now_ms / 1000 - app.config.stale_lock_s, cursor: None });
    }
    let redrive_ms = app.config.refund_redrive_after_s.saturating_mul(1000);
    for bucket in 0..INDEX_BUCKETS {
        items.push(WorkItem::ShippedDue { bucket, before_s: now_ms / 1000 + 1, cursor: None });
        items.push(WorkItem::UnissuedRefunds { bucket, before_ms: now_ms - redrive_ms, cursor: None });
    }
    items
}

/// The checks of one sweep (they repair nothing but the code pools' orphans).
pub fn check_items() -> Vec<WorkItem> {
    vec![
        WorkItem::SkuInvariants { cursor: None },
        WorkItem::LockedTotals(Default::default()),
        WorkItem::CampaignQuotas {},
        WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false },
    ]
}

/// What one run of the schedule did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Seeded {
    /// Work items put on the queue: a whole sweep, or 0 when skipped.
    pub items_seeded: usize,
    /// The last sweep's work items still queued: above [`BACKLOG_ALLOWANCE`] this run seeded
    /// nothing; above 0, only the repairs.
    pub backlog: u64,
}

/// The schedule's part: puts one sweep's items on the work queue — unless the last sweep's
/// items are still there. Seeding over an unfinished sweep would add a sweep's worth of work
/// each interval that the workers cannot absorb, so the backlog would grow without bound
/// (and with it the queue's cost and every item's wait); a skipped run is counted
/// (`ReconcileSweepSkipped`) and the sweep in progress does the work. A few items left over
/// ([`BACKLOG_ALLOWANCE`]: a poison item between its deliveries, a long check's chain) do not
/// hold the repairs back (review protocol-2 #7): the repairs are seeded, the checks wait for
/// an empty queue. The queue so never holds more than the allowance and one sweep.
pub async fn seed(app: &App) -> anyhow::Result<Seeded> {
    let backlog = app.messages.reconcile_backlog().await?;
    if backlog > BACKLOG_ALLOWANCE {
        app.count(names::SWEEP_SKIPPED, 1);
        tracing::warn!(backlog, "last reconcile sweep unfinished; no new sweep seeded");
        return Ok(Seeded { items_seeded: 0, backlog });
    }
    let now_ms = clock::now_ms();
    let items = if backlog == 0 {
        seed_items(app, now_ms)
    } else {
        app.count(names::SWEEP_SKIPPED, 1);
        tracing::warn!(backlog, "items of the last sweep still queued: repairs seeded, checks not");
        repair_items(app, now_ms)
    };
    let n = items.len();
    let msgs: Vec<Message> =
        items.into_iter().map(|item| Message::ReconcileWork { schema: 1, sweep_ms: now_ms, item }).collect();
    for chunk in msgs.chunks(16) {
        for r in futures::future::join_all(chunk.iter().map(|m| app.messages.send(m, 0))).await {
            r?;
        }
    }
    tracing::info!(items = n, "reconcile sweep seeded");
    Ok(Seeded { items_seeded: n, backlog })
}

/// A worker's part: one item, for at most `budget`.
pub async fn work(app: &App, item: &WorkItem, budget: Duration) -> anyhow::Result<WorkOutcome> {
    let started = Instant::now();
    let mut rep = ReconcileReport { items: 1, ..Default::default() };
    let next = match item {
        WorkItem::StaleLocks { bucket, before_ms, cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app.sweep.frozen_page(*bucket, *before_ms, cursor.as_deref(), LOCK_PAGE).await?;
                stale_locks(app, &page.items, &mut rep).await?;
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => {
                        break Some(WorkItem::StaleLocks { bucket: *bucket, before_ms: *before_ms, cursor: Some(c) })
                    }
                    Some(c) => cursor = Some(c),
                }
            }
        }
        WorkItem::OverdueOrders { bucket, before_s, cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app.sweep.pending_page(*bucket, *before_s, cursor.as_deref(), ORDER_PAGE).await?;
                overdue_orders(app, &page.items, &mut rep).await;
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => {
                        break Some(WorkItem::OverdueOrders { bucket: *bucket, before_s: *before_s, cursor: Some(c) })
                    }
                    Some(c) => cursor = Some(c),
                }
            }
        }
        WorkItem::ShippedDue { bucket, before_s, cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app
                    .sweep
                    .orders_page(OrderIndex::Shipped, *bucket, *before_s, cursor.as_deref(), ORDER_PAGE)
                    .await?;
                for id in &page.items {
                    match after_sale::apply(app, Caller::Admin, id, Change::AutoComplete).await {
                        Ok(_) => rep.orders_completed += 1,
                        // confirmed by the buyer, returned, or not due after all: nothing to do
                        Err(OrderError::Invalid(_) | OrderError::NotFound | OrderError::Refused(_)) => {}
                        Err(OrderError::Store(e)) => {
                            rep.errors += 1;
                            tracing::warn!(order_id = %id, error = format!("{e:#}"), "auto-complete failed");
                        }
                    }
                }
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => {
                        break Some(WorkItem::ShippedDue { bucket: *bucket, before_s: *before_s, cursor: Some(c) })
                    }
                    Some(c) => cursor = Some(c),
                }
            }
        }
        WorkItem::UnissuedRefunds { bucket, before_ms, cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app
                    .sweep
                    .orders_page(OrderIndex::RefundsRequested, *bucket, *before_ms, cursor.as_deref(), ORDER_PAGE)
                    .await?;
                for id in &page.items {
                    let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else { continue };
                    match refunds::redrive(app, &o, *before_ms).await {
                        Ok(n) => rep.refunds_redriven += n,
                        Err(e) => {
                            rep.errors += 1;
                            tracing::warn!(order_id = %id, error = format!("{e:#}"), "refund re-drive failed");
                        }
                    }
                    // a refunded SUPPLIER order is read here anyway: its bookings too
                    held_bookings(app, &o, &mut rep).await;
                }
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => {
                        break Some(WorkItem::UnissuedRefunds {
                            bucket: *bucket,
                            before_ms: *before_ms,
                            cursor: Some(c),
                        })
                    }
                    Some(c) => cursor = Some(c),
                }
            }
        }
        WorkItem::SkuInvariants { cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app.sweep.skus_page(cursor.as_deref(), SKU_PAGE).await?;
                let v = sku_invariants(app, &page.items, &mut rep).await?;
                report_violations(app, &v, &mut rep);
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => break Some(WorkItem::SkuInvariants { cursor: Some(c) }),
                    Some(c) => cursor = Some(c),
                }
            }
        }
        WorkItem::LockedTotals(sums) => {
            locked_totals(app, sums.clone(), started, budget, &mut rep).await?.map(WorkItem::LockedTotals)
        }
        WorkItem::CampaignQuotas {} => {
            let v = super::campaigns::check_quotas(app).await?;
            report_violations(app, &v, &mut rep);
            None
        }
        WorkItem::SkuJournals { cursor, pending, last_page } => {
            let mut cursor = cursor.clone();
            // SKUs the last invocation left part-read come first, then the pages after `cursor`
            let mut skus: Vec<Sku> = pending.iter().map(|s| Sku::from_stored(s)).collect::<Result<_, _>>()?;
            let mut last = *last_page;
            let mut fetch = skus.is_empty();
            loop {
                if fetch {
                    let page = app.sweep.skus_page(cursor.as_deref(), JOURNAL_SKU_PAGE).await?;
                    skus = page.items;
                    last = page.next.is_none();
                    cursor = page.next;
                }
                fetch = true;
                let stopped = sku_journals(app, &skus, started, budget, &mut rep).await?;
                if !stopped.is_empty() {
                    let pending = stopped.iter().map(|s| s.to_string()).collect();
                    break Some(WorkItem::SkuJournals { cursor, pending, last_page: last });
                }
                if last {
                    break None;
                }
                if started.elapsed() > budget {
                    break Some(WorkItem::SkuJournals { cursor, pending: Vec::new(), last_page: false });
                }
            }
        }
    };
    if next.is_some() {
        rep.continuations += 1;
    }
    Ok(WorkOutcome { report: rep, next })
}

/// The whole sweep in this process, item after item (the local stack's tests and tools; the
/// deployed schedule uses [`seed`] and the workers).
pub async fn run(app: &App) -> anyhow::Result<ReconcileReport> {
    let mut rep = ReconcileReport::default();
    let mut queue = seed_items(app, clock::now_ms());
    while let Some(item) = queue.pop() {
        match work(app, &item, WORK_BUDGET).await {
            Ok(out) => {
                rep.merge(out.report);
                queue.extend(out.next);
            }
            Err(e) => {
                rep.errors += 1;
                tracing::warn!(?item, error = format!("{e:#}"), "reconcile: work item failed");
            }
        }
    }
    tracing::info!(report = ?rep, "reconcile done");
    Ok(rep)
}

async fn stale_locks(app: &App, ids: &[ReservationId], rep: &mut ReconcileReport) -> anyhow::Result<()> {
    rep.stale_locks += ids.len();
    use futures::StreamExt;
    let locks = app.stock.get_reservations(ids).await?;
    let (first, rest) = locks.split_at(locks.len() / 2);
    for (half, part) in [first, rest].into_iter().enumerate() {
        // A worker that dies here leaves half a page done; the item comes back from the queue
        // and the page is redone from its cursor, where every repair is already a no-op.
        if half == 1 && crate::fault!(app.faults, faults::RECONCILE_WORKER_CRASH) {
            return Err(InjectedCrash(faults::RECONCILE_WORKER_CRASH).into());
        }
        // Locks of one page are independent (each repair is conditional on its own state):
        // resolved a few at a time, so a page costs a few round trips, not a hundred.
        let mut results = futures::stream::iter(part.iter().cloned().map(|r| async move {
            let res = sweep_frozen(app, &r).await;
            (r, res)
        }))
        .buffer_unordered(PAGE_CONCURRENCY);
        let mut read = Vec::new();
        while let Some((r, res)) = results.next().await {
            match res {
                Ok(swept) => {
                    if swept.outcome == CheckOutcome::Released {
                        rep.locks_released += 1;
                    }
                    if swept.restocked {
                        rep.locks_restocked += 1;
                    }
                    read.extend(swept.order);
                }
                Err(e) => {
                    // one lock failing every time must not stop the sweep behind it
                    rep.errors += 1;
                    tracing::warn!(reservation = %r.id, error = format!("{e:#}"), "reconcile: lock not resolved");
                }
            }
        }
        drop(results);
        // the orders those locks stand for were read anyway: their bookings too
        for o in &read {
            held_bookings(app, o, rep).await;
        }
    }
    Ok(())
}

/// A cheap check on an order the sweep has read anyway (docs/suppliers.md, "Reconcile"): a
/// SUPPLIER order that should hold nothing at its supplier ([`releases_bookings`]: closed unpaid,
/// or refunded before service) but still records a CONFIRMED or PENDING booking, unchanged for
/// `StaleLockSeconds` (its `SupplierCancelRequested` was lost, or its compensation gave up), is
/// counted (`Repairs`) and its compensation is run again: once each, as for the event
/// ([`super::supplier::compensate`]). A younger one is left to the event in flight.
async fn held_bookings(app: &App, o: &Order, rep: &mut ReconcileReport) {
    let held = o.supplier.iter().any(|b| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending));
    let quiet_since = clock::now_ms().saturating_sub(app.config.stale_lock_s.saturating_mul(1000));
    if !held || !releases_bookings(o) || o.updated_at_ms > quiet_since {
        return;
    }
    rep.supplier_bookings_held += 1;
    app.count(names::REPAIRS, 1);
    tracing::warn!(order_id = %o.id, status = o.status.as_str(), "reconcile: SUPPLIER order still holds bookings; compensating");
    match super::supplier::compensate(app, &o.id).await {
        Ok(n) => rep.supplier_cancels += n,
        Err(e) => {
            rep.errors += 1;
            tracing::warn!(order_id = %o.id, error = format!("{e:#}"), "reconcile: supplier bookings not cancelled");
        }
    }
}

async fn overdue_orders(app: &App, ids: &[OrderId], rep: &mut ReconcileReport) {
    use futures::StreamExt;
    rep.overdue_orders += ids.len();
    let mut results = futures::stream::iter(ids.iter().cloned().map(|id| async move {
        let res = expire_overdue(app, &id).await;
        (id, res)
    }))
    .buffer_unordered(PAGE_CONCURRENCY);
    while let Some((id, res)) = results.next().await {
        match res {
            Ok(true) => rep.orders_expired += 1,
            Ok(false) => {}
            Err(e) => {
                rep.errors += 1;
                tracing::warn!(order_id = %id, error = format!("{e:#}"), "reconcile: order not expired");
            }
        }
    }
}

async fn expire_overdue(app: &App, id: &OrderId) -> anyhow::Result<bool> {
    if let Some(OrderRecord::Order(o)) = app.orders.get(id).await? {
        if o.status == OrderStatus::AwaitingSupplier && o.pay_expire_at <= clock::now_s() {
            // its poll was lost: one poll past the deadline decides (docs/suppliers.md, "Reconcile")
            let outcome = crate::service::supplier::poll(app, id, 0, o.created_at_ms / 1000).await?;
            let decided = matches!(outcome, PollOutcome::Confirmed | PollOutcome::Failed(_));
            if decided {
                app.count(names::REPAIRS, 1);
                tracing::warn!(order_id = %id, ?outcome, "reconcile resolved a SUPPLIER order past its timeout");
            }
            return Ok(decided);
        }
        if o.status == OrderStatus::PendingPayment && expire(app, &o).await? {
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %id, "reconcile expired an overdue order");
            return Ok(true);
        }
    }
    Ok(false)
}

/// Settled snapshots of `skus`: metadata and counters read twice, a SKU whose counters or
/// version moved in between skipped as inconclusive (a write in flight), so live traffic does
/// not raise false alarms.
async fn settled(app: &App, skus: &[Sku], rep: &mut ReconcileReport) -> anyhow::Result<Vec<SkuSnapshot>> {
    use futures::StreamExt;
    let metas = app.stock.get_skus(skus).await?;
    let reads = |slots: Vec<(Sku, u16)>| {
        futures::stream::iter(slots.into_iter().map(|(sku, n)| async move { app.stock.read_shards(&sku, n).await }))
            .buffered(PAGE_CONCURRENCY)
            .collect::<Vec<_>>()
    };
    let metas: Vec<_> = metas.values().collect();
    let before = reads(metas.iter().map(|m| (m.sku.clone(), m.slots)).collect()).await;
    let again = app.stock.get_skus(skus).await?;
    let after = reads(metas.iter().map(|m| (m.sku.clone(), m.slots)).collect()).await;
    let mut out = Vec::new();
    for ((m, shards), after) in metas.into_iter().zip(before).zip(after) {
        let (shards, after) = (shards?, after?);
        let version = m.version;
        if after == shards && again.get(&m.sku).is_some_and(|a| a.version == version) {
            out.push(SkuSnapshot { sku: m.sku.clone(), stocked: m.stocked, shards, per_user_limit: m.per_user_limit });
        } else {
            rep.skus_inconclusive += 1;
        }
    }
    Ok(out)
}

/// Invariant 1 over one page of SKUs: a violation must survive a second look a moment later.
async fn sku_invariants(app: &App, skus: &[Sku], rep: &mut ReconcileReport) -> anyhow::Result<Vec<Violation>> {
    // code pools first: codes a dead checkout claimed go back (docs/code-pools.md, "Crashes")
    let metas = app.stock.get_skus(skus).await?;
    let code_pools: Vec<Sku> = metas
        .values()
        .filter(|m| crate::domain::kind::Stocking::of(&m.model).holds_codes())
        .map(|m| m.sku.clone())
        .collect();
    for m in metas.values().filter(|m| crate::domain::kind::Stocking::of(&m.model).holds_codes()) {
        let quiet = app.config.code_claim_quiet_ms;
        rep.codes_returned += super::codes::repair_orphans(app, m, clock::now_ms(), quiet).await? as usize;
    }
    let identity = |snaps: &[SkuSnapshot]| -> Vec<Violation> {
        check_stock(snaps, &[]).into_iter().filter(|v| !matches!(v, Violation::LockedMismatch { .. })).collect()
    };
    let snaps = settled(app, skus, rep).await?;
    rep.skus_checked += snaps.len();
    let first = identity(&snaps);
    let pools: Vec<SkuSnapshot> = snaps.iter().filter(|s| code_pools.contains(&s.sku)).cloned().collect();
    let first = [first, ring_identity(app, &pools).await?].concat();
    if first.is_empty() {
        return Ok(first);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let suspects: Vec<Sku> = snaps.iter().map(|s| s.sku.clone()).collect();
    let again = settled(app, &suspects, &mut ReconcileReport::default()).await?;
    let pools: Vec<SkuSnapshot> = again.iter().filter(|s| code_pools.contains(&s.sku)).cloned().collect();
    let second = [identity(&again), ring_identity(app, &pools).await?].concat();
    Ok(first.into_iter().filter(|v| second.contains(v)).collect())
}

/// The code pool identity of settled snapshots (their rings read after the counters). A shard
/// is judged only once its head has been still for the orphan quiet period, or the orphan
/// repair has seen every claimed position bound or given back (review protocol-2 #14): a
/// claim in flight, or one a dead checkout (or a retried, non-idempotent claim) left behind,
/// moves the head before the counters, and on a pool with a trickle of sales both looks would
/// see such a difference until the repair returns it.
async fn ring_identity(app: &App, pools: &[SkuSnapshot]) -> anyhow::Result<Vec<Violation>> {
    let mut out = Vec::new();
    for s in pools {
        let rings = app.stock.read_rings(&s.sku, s.shards.len() as u16).await?;
        let judged = settled_rings(s, &rings, clock::now_ms(), app.config.code_claim_quiet_ms);
        out.extend(crate::domain::invariants::check_ring_identity(&judged, &rings));
    }
    Ok(out)
}

/// `snap` with each shard whose ring is not settled (claims younger than `quiet_ms` not yet
/// seen bound or given back) made to agree with its ring: those shards are not judged.
fn settled_rings(snap: &SkuSnapshot, rings: &[crate::domain::codes::Ring], now_ms: i64, quiet_ms: i64) -> SkuSnapshot {
    let mut judged = snap.clone();
    for (sh, g) in judged.shards.iter_mut().zip(rings) {
        let settled = g.head <= g.checked || now_ms - g.claimed_at_ms >= quiet_ms;
        if !settled {
            sh.available = g.available();
        }
    }
    judged
}

/// SKUs whose journal is checked per page.
pub const JOURNAL_SKU_PAGE: usize = 20;
/// Journal entries read per Query (~250 bytes each: a page is at most ~250 KB).
pub const JOURNAL_ENTRY_PAGE: usize = 1000;

/// The stock journal of each SKU against its counters, from the SKU's checkpoint
/// ([`journal::Checkpoint`]: only entries written since the last check are read), the SKUs of
/// a page [`PAGE_CONCURRENCY`] at a time. A journal that has not caught up with the last write
/// (stream lag) is looked at again a moment later; a broken one is an invariant violation and
/// a `JournalMismatch` metric. The budget is honoured inside a SKU: the SKUs it stopped in
/// are returned (their progress saved in their checkpoints).
async fn sku_journals(
    app: &App,
    skus: &[Sku],
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Vec<Sku>> {
    use futures::StreamExt;
    let metas = app.stock.get_skus(skus).await?;
    // owned, so the futures hold no borrow of a local (the worker's future stays `Send`)
    let checks: Vec<(usize, crate::ports::SkuMeta)> =
        skus.iter().enumerate().filter_map(|(i, sku)| metas.get(sku).map(|m| (i, m.clone()))).collect();
    let mut results = futures::stream::iter(checks.into_iter().map(|(i, meta)| async move {
        let mut own = ReconcileReport::default();
        let verdict = sku_journal(app, &meta, started, budget, &mut own).await;
        (i, verdict, own)
    }))
    .buffer_unordered(PAGE_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    results.sort_by_key(|(i, _, _)| *i);
    let mut stopped = Vec::new();
    for (i, verdict, own) in results {
        rep.journal_entries_read += own.journal_entries_read;
        let Some(verdict) = verdict? else {
            stopped.push(skus[i].clone());
            continue;
        };
        let sku = &skus[i];
        match verdict {
            journal::Verdict::Holds => rep.journals_held += 1,
            journal::Verdict::Incomplete => rep.journals_incomplete += 1,
            journal::Verdict::Behind => rep.journals_behind += 1,
            journal::Verdict::Broken { journal, counters } => {
                app.count(names::JOURNAL_MISMATCH, 1);
                tracing::error!(sku = %sku, ?journal, ?counters, "stock journal does not sum to the counters");
                rep.violations
                    .push(format!("JournalMismatch {{ sku: {sku}, journal: {journal:?}, counters: {counters:?} }}"));
            }
        }
    }
    Ok(stopped)
}

/// One SKU's journal from its checkpoint; `None` when the budget ran out first (what was read
/// is saved in the checkpoint, and the next invocation goes on from there).
async fn sku_journal(
    app: &App,
    meta: &crate::ports::SkuMeta,
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<journal::Verdict>> {
    let sku = &meta.sku;
    let stored = app.journal.checkpoint(sku).await?;
    let expected = stored.as_ref().map(|c| c.version);
    let mut cp = stored.unwrap_or_default();
    let original = cp.clone();
    let mut verdict = None;
    let mut read_any = false;
    'looks: for look in 0..3 {
        if look > 0 {
            if started.elapsed() + Duration::from_secs(1) > budget {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // the counters first: the checkpoint may then settle up to this moment (`settle`)
        let read_ms = clock::now_ms();
        let shards = app.stock.read_shards(sku, meta.slots).await?;
        let mut after = cp.read_from().map(str::to_owned);
        loop {
            let (page, more) = app.journal.since(sku, after.as_deref(), JOURNAL_ENTRY_PAGE).await?;
            rep.journal_entries_read += page.len();
            read_any |= !page.is_empty();
            cp.apply(&page, shards.len(), clock::now_ms());
            after = page.last().map(|e| e.seq.clone()).or(after);
            if !more {
                break;
            }
            if started.elapsed() > budget {
                verdict = None;
                break 'looks;
            }
        }
        cp.settle(&shards, read_ms);
        let v = cp.verdict(&shards);
        let behind = v == journal::Verdict::Behind;
        verdict = Some(v);
        if !behind {
            break;
        }
    }
    if read_any && cp != original {
        cp.version = expected.unwrap_or(0) + 1;
        // lost to a concurrent check of the same SKU: its checkpoint is as good as this one
        app.journal.put_checkpoint(sku, &cp, expected).await?;
    }
    Ok(verdict)
}

/// The group of the `locked = Σ FROZEN` sums a SKU (or calendar cell) falls in (FNV-1a).
pub fn lock_group(sku: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sku.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % LOCK_GROUPS as u64) as usize
}

/// `locked = Σ FROZEN` per SKU at any scale, as one chain of items carrying [`LockSums`]
/// (bounded: a few sums per group). A run pages through every FROZEN lock (`frozen-by-age`,
/// every bucket), adding each line's units to its SKU's group; then
/// through every SKU, adding the `locked` of each SKU not written since a minute before the
/// run started (its journal's newest entry; no entry: never written since the journal
/// exists) to its group. Such a SKU's locks were all made before the run and none moved while
/// it read them, so its sums are exact; a group holding a SKU written meanwhile is not judged.
/// A group whose sums disagree is looked at again in a focused run that sums its SKUs one by
/// one: a SKU still quiet whose `locked` differs is a violation (`LockedMismatch`).
async fn locked_totals(
    app: &App,
    mut s: LockSums,
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<LockSums>> {
    use futures::StreamExt;
    if s.phase == 0 {
        s = LockSums {
            phase: 1,
            started_ms: clock::now_ms(),
            frozen: vec![0; LOCK_GROUPS],
            locked: vec![0; LOCK_GROUPS],
            quiet: vec![0; LOCK_GROUPS],
            focus: s.focus,
            ..Default::default()
        };
    }
    let focused = |s: &LockSums, g: usize| s.focus.contains(&(g as u32));
    let mut pages = 0;
    loop {
        // one page at least: each invocation moves on
        if pages > 0 && started.elapsed() > budget {
            return Ok(Some(s));
        }
        pages += 1;
        if s.phase == 1 {
            if s.bucket >= INDEX_BUCKETS {
                (s.phase, s.cursor) = (2, None);
                continue;
            }
            // every FROZEN lock, whatever its age (a SKU never written since the journal began
            // is judged too, and its locks may be new)
            let page = app.sweep.frozen_page(s.bucket, i64::MAX, s.cursor.as_deref(), LOCKED_LOCK_PAGE).await?;
            let chunks: Vec<Vec<ReservationId>> = page.items.chunks(100).map(<[_]>::to_vec).collect();
            let mut reads =
                futures::stream::iter(chunks.into_iter().map(|c| async move { app.stock.get_reservations(&c).await }))
                    .buffer_unordered(PAGE_CONCURRENCY);
            while let Some(locks) = reads.next().await {
                let locks = locks?;
                rep.locked_locks_read += locks.len();
                for r in locks.iter().filter(|r| r.status == LockStatus::Frozen) {
                    // as `check_stock` counts them: pay-time lines hold nothing while FROZEN;
                    // calendar cells are not SKUs of the index (not summed there either)
                    for l in r.lines.iter().filter(|l| !l.at_payment) {
                        for c in l.cells().into_iter().filter(|c| c.cell.calendar_parent().is_none()) {
                            let g = lock_group(c.cell.as_str());
                            if s.focus.is_empty() {
                                s.frozen[g] += i64::from(c.quantity);
                            } else if focused(&s, g) {
                                *s.by_sku.entry(c.cell.to_string()).or_default() += i64::from(c.quantity);
                            }
                        }
                    }
                }
            }
            drop(reads);
            match page.next {
                None => (s.bucket, s.cursor) = (s.bucket + 1, None),
                c => s.cursor = c,
            }
            continue;
        }
        let page = app.sweep.skus_page(s.cursor.as_deref(), SKU_PAGE).await?;
        let skus: Vec<Sku> =
            page.items.into_iter().filter(|k| s.focus.is_empty() || focused(&s, lock_group(k.as_str()))).collect();
        let metas: Vec<crate::ports::SkuMeta> = app.stock.get_skus(&skus).await?.into_values().collect();
        let reads = futures::stream::iter(metas.into_iter().map(|m| async move {
            let shards = app.stock.read_shards(&m.sku, m.slots).await?;
            let (newest, _) = app.journal.for_sku(&m.sku, None, 1).await?;
            anyhow::Ok((m.sku.clone(), shards, newest.first().map(|e| e.at_ms)))
        }))
        .buffer_unordered(PAGE_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
        let mut violations = Vec::new();
        for read in reads {
            let (sku, shards, last_write) = read?;
            let g = lock_group(sku.as_str());
            if last_write.is_some_and(|t| t >= s.started_ms - LOCKED_QUIET_MS) {
                rep.locked_skus_moved += 1;
                if !s.moved.contains(&(g as u32)) {
                    s.moved.push(g as u32);
                }
                continue;
            }
            let locked: i64 = shards.iter().map(|c| c.locked).sum();
            if s.focus.is_empty() {
                s.locked[g] += locked;
                s.quiet[g] += 1;
            } else {
                rep.locked_skus_judged += 1;
                let frozen = s.by_sku.get(sku.as_str()).copied().unwrap_or(0);
                if frozen != locked {
                    violations.push(Violation::LockedMismatch { sku, locked, frozen });
                }
            }
        }
        report_violations(app, &violations, rep);
        if page.next.is_some() {
            s.cursor = page.next;
            continue;
        }
        // the run is done
        rep.locked_runs += 1;
        if !s.focus.is_empty() {
            return Ok(None);
        }
        let clean = |g: usize| !s.moved.contains(&(g as u32));
        rep.locked_skus_judged += (0..LOCK_GROUPS).filter(|&g| clean(g)).map(|g| s.quiet[g] as usize).sum::<usize>();
        let suspects: Vec<u32> =
            (0..LOCK_GROUPS).filter(|&g| clean(g) && s.frozen[g] != s.locked[g]).map(|g| g as u32).collect();
        if suspects.is_empty() {
            return Ok(None);
        }
        rep.locked_groups_suspect += suspects.len();
        tracing::warn!(groups = suspects.len(), "locked = Σ FROZEN: sums disagree; looking again per SKU");
        return Ok(Some(LockSums {
            focus: suspects.into_iter().take(LOCKED_FOCUS_MAX).collect(),
            ..Default::default()
        }));
    }
}

fn report_violations(app: &App, violations: &[Violation], rep: &mut ReconcileReport) {
    app.count(names::INVARIANT_VIOLATIONS, violations.len() as u64);
    for v in violations {
        tracing::error!(violation = ?v, "invariant violated");
    }
    rep.violations.extend(violations.iter().map(|v| format!("{v:?}")));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::memory::memory_app;
    use crate::config::Config;
    use crate::domain::invariants::{check_all, ShardCounts};
    use crate::domain::reservation::LockStatus;
    use crate::domain::{Currency, IdempotencyKey, Quantity, UserId};
    use crate::ports::{Journal, SkuMeta, StockStore};
    use crate::service::after_sale::{self, Caller, Change};
    use crate::service::payments::{self, PaymentNotice};
    use crate::service::stock::{self, LineRequest, LockError};

    #[tokio::test]
    async fn the_sweep_confirms_and_restocks_the_stale_lock_of_an_order_refunded_before_its_confirm() {
        let mut c = Config::from_lookup(&|_| None).unwrap();
        c.sku_cache_ms = 0;
        c.soldout_cache_ms = 0;
        c.stale_lock_s = 0;
        let (app, w) = memory_app("test", c).unwrap();
        let a = Sku::parse("A").unwrap();
        w.stock.seed(
            SkuMeta {
                sku: a.clone(),
                name: "A".into(),
                price: 500,
                currency: Currency::parse("EUR").unwrap(),
                shards: 1,
                slots: 1,
                per_user_limit: Some(2),
                stocked: 0,
                version: 1,
                paused: false,
                model: Default::default(),
                bundle: Vec::new(),
                supplier: None,
            },
            &[5],
        );
        let user = UserId::parse("u").unwrap();
        let line = LineRequest::plain(a.clone(), Quantity::new(2).unwrap());
        let (o, _) =
            super::super::orders::create(&app, &user, &IdempotencyKey::parse("k1").unwrap(), vec![line]).await.unwrap();
        let notice = PaymentNotice {
            payment_id: "p1".into(),
            provider: Default::default(),
            order_id: o.id.clone(),
            amount: o.amount,
            currency: o.currency.to_string(),
            succeeded: true,
        };
        payments::apply(&app, &notice).await.unwrap();
        // refunded before the payment's confirm ran: the restock finds the lock FROZEN and gives
        // up (its message ends in the DLQ); the confirm's message is lost too
        let refund = Change::Refund { reason: "changed my mind".into() };
        after_sale::apply(&app, Caller::Buyer(&user), &o.id, refund).await.unwrap();
        let rid = ReservationId::for_order(&o.id);
        assert!(matches!(stock::restock(&app, &rid).await, Err(LockError::Store(_))));
        tokio::time::sleep(Duration::from_millis(5)).await;

        let rep = run(&app).await.unwrap();
        assert_eq!((rep.stale_locks, rep.locks_restocked), (1, 1), "{rep:?}");
        assert_eq!(w.stock.get_reservation(&rid).await.unwrap().unwrap().status, LockStatus::Restocked);
        assert_eq!(w.stock.shards(&a), vec![ShardCounts { available: 5, locked: 0, sold: 0 }], "back on sale");
        assert_eq!(w.stock.user_counter(&a, &user).unwrap_or(0), 0, "the allowance given back");
        let v = check_all(&w.snapshot(0));
        assert!(v.is_empty(), "{v:#?}");
        // nothing is repaired twice
        let rep = run(&app).await.unwrap();
        assert_eq!((rep.stale_locks, rep.locks_restocked), (0, 0), "{rep:?}");
    }

    fn plain(sku: &str, shards: u16) -> SkuMeta {
        SkuMeta {
            sku: Sku::parse(sku).unwrap(),
            name: sku.into(),
            price: 500,
            currency: Currency::parse("EUR").unwrap(),
            shards,
            slots: shards,
            per_user_limit: None,
            stocked: 0,
            version: 1,
            paused: false,
            model: Default::default(),
            bundle: Vec::new(),
            supplier: None,
        }
    }

    fn sweep_config() -> Config {
        let mut c = Config::from_lookup(&|_| None).unwrap();
        c.sku_cache_ms = 0;
        c.soldout_cache_ms = 0;
        c.stale_lock_s = 0;
        c.reservation_check_delay_s = 0;
        c
    }

    /// A FROZEN lock of `quantity` on shard 0 of `sku`, made `age_ms` ago, with no order.
    fn orphan(id: &str, sku: &str, quantity: u32, age_ms: i64) -> crate::domain::reservation::Reservation {
        use crate::domain::reservation::{Reservation, ReservationKind, ReservedLine};
        Reservation {
            id: ReservationId::from_stored(id).unwrap(),
            kind: ReservationKind::Order,
            status: LockStatus::Frozen,
            user: Some(UserId::parse("u").unwrap()),
            request_hash: "h".into(),
            created_at_ms: clock::now_ms() - age_ms,
            expires_at: clock::now_s() + 900,
            lines: vec![ReservedLine {
                sku: Sku::parse(sku).unwrap(),
                quantity,
                unit_price: 500,
                currency: Currency::parse("EUR").unwrap(),
                limited: false,
                pieces: vec![crate::domain::allocation::Piece { shard: 0, quantity }],
                campaign: None,
                dates: Vec::new(),
                draws: Vec::new(),
                at_payment: false,
                codes: None,
            }],
            oversold: false,
            code_fate: None,
            pending: false,
        }
    }

    /// Runs `item` and its continuations to the end with `budget` each; the reports merged.
    async fn chain(app: &App, item: WorkItem, budget: Duration) -> ReconcileReport {
        let mut rep = ReconcileReport::default();
        let mut next = Some(item);
        while let Some(item) = next {
            let out = work(app, &item, budget).await.unwrap();
            rep.merge(out.report);
            next = out.next;
            assert!(rep.items < 10_000, "the chain makes progress");
        }
        rep
    }

    /// A journal whose every read fails: the poison of a `SkuJournals` item.
    struct PoisonJournal;

    #[async_trait::async_trait]
    impl crate::ports::Journal for PoisonJournal {
        async fn put(&self, _: &[journal::Entry]) -> anyhow::Result<()> {
            anyhow::bail!("poison")
        }
        async fn for_sku(
            &self,
            _: &Sku,
            _: Option<&str>,
            _: usize,
        ) -> anyhow::Result<(Vec<journal::Entry>, Option<String>)> {
            anyhow::bail!("poison")
        }
        async fn for_cause(&self, _: &str) -> anyhow::Result<Vec<journal::Entry>> {
            anyhow::bail!("poison")
        }
        async fn since(&self, _: &Sku, _: Option<&str>, _: usize) -> anyhow::Result<(Vec<journal::Entry>, bool)> {
            anyhow::bail!("poison")
        }
        async fn checkpoint(&self, _: &Sku) -> anyhow::Result<Option<journal::Checkpoint>> {
            anyhow::bail!("poison")
        }
        async fn put_checkpoint(&self, _: &Sku, _: &journal::Checkpoint, _: Option<u64>) -> anyhow::Result<bool> {
            anyhow::bail!("poison")
        }
    }

    #[tokio::test]
    async fn a_poison_work_item_does_not_hold_back_the_next_sweeps_repair_of_a_stale_lock() {
        let (app, w) = memory_app("test", sweep_config()).unwrap();
        let app = app.with_journal(std::sync::Arc::new(PoisonJournal));
        w.stock.seed(plain("A", 1), &[5]);
        // the journal item fails on every delivery: it stays on the queue (SQS redelivers it)
        let poison = WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false };
        assert!(work(&app, &poison, WORK_BUDGET).await.is_err());
        w.messages.set_reconcile_backlog(1);
        // meanwhile a checkout dies after its freeze
        let lock = orphan("dead-1", "A", 2, 3_600_000);
        assert_eq!(w.stock.put_frozen(&lock, &Default::default()).await.unwrap(), Ok(()));

        let seeded = seed(&app).await.unwrap();
        let repairs = repair_items(&app, clock::now_ms()).len();
        assert_eq!(seeded, Seeded { items_seeded: repairs, backlog: 1 }, "the repairs are seeded over the poison");
        let items: Vec<WorkItem> = w
            .messages
            .sent()
            .into_iter()
            .filter_map(|(m, _)| match m {
                Message::ReconcileWork { item, .. } => Some(item),
                _ => None,
            })
            .collect();
        assert_eq!(items.len(), repairs);
        assert!(!items.iter().any(|i| check_items().contains(i)), "no second chain of a check over the first");
        let mut rep = ReconcileReport::default();
        for item in items {
            rep.merge(chain(&app, item, WORK_BUDGET).await);
        }
        assert_eq!((rep.stale_locks, rep.locks_released, rep.errors), (1, 1, 0), "{rep:?}");
        assert_eq!(w.stock.shards(&Sku::parse("A").unwrap()), vec![ShardCounts { available: 5, locked: 0, sold: 0 }]);
        // an empty queue gets a whole sweep; a sweep's worth left over, none
        w.messages.set_reconcile_backlog(0);
        assert_eq!(seed(&app).await.unwrap().items_seeded, repairs + check_items().len());
        w.messages.set_reconcile_backlog(BACKLOG_ALLOWANCE + 1);
        assert_eq!(seed(&app).await.unwrap().items_seeded, 0);
    }

    /// A journal for shard 0 of `sku` going 0 → `n` one unit at a time (a creation, then `n`
    /// adjustments), written `age_ms` ago.
    fn adjustments(sku: &str, from: i64, n: i64, age_ms: i64) -> Vec<journal::Entry> {
        let c = |a: i64| ShardCounts { available: a, locked: 0, sold: 0 };
        let at = clock::now_ms() - age_ms;
        let mut out = Vec::new();
        if from == 0 {
            out.push(journal::entry(
                &journal::Counted::Shard { sku: Sku::parse(sku).unwrap(), shard: 0 },
                None,
                Some(&journal::Image::default()),
                at,
                "0",
            ));
        }
        for i in from..from + n {
            let before = journal::Image { counts: c(i), cause: None };
            let after = journal::Image { counts: c(i + 1), cause: Some(journal::Cause::new("adj", None, "adjust: x")) };
            let item = journal::Counted::Shard { sku: Sku::parse(sku).unwrap(), shard: 0 };
            out.push(journal::entry(&item, Some(&before), Some(&after), at, &format!("{:09}", i + 1)));
        }
        out.into_iter().flatten().collect()
    }

    #[tokio::test]
    async fn the_journal_check_reads_only_entries_after_its_checkpoint_and_stops_inside_a_sku() {
        let (app, w) = memory_app("test", sweep_config()).unwrap();
        let j = std::sync::Arc::new(crate::adapters::memory::MemoryJournal::new());
        let app = app.with_journal(j.clone());
        w.stock.seed(plain("A", 1), &[2500]);
        j.put(&adjustments("A", 0, 2500, 60_000)).await.unwrap();
        let item = WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false };

        // no budget at all: one page of entries per invocation, the SKU resumed from its checkpoint
        let rep = chain(&app, item.clone(), Duration::ZERO).await;
        assert_eq!((rep.journals_held, rep.journal_entries_read, rep.items), (1, 2501, 3), "{rep:?}");
        // the next sweep reads nothing old
        let rep = chain(&app, item.clone(), WORK_BUDGET).await;
        assert_eq!((rep.journals_held, rep.journal_entries_read), (1, 0), "{rep:?}");
        // only what was written since
        w.stock.seed(plain("A", 1), &[2503]);
        j.put(&adjustments("A", 2500, 3, 0)).await.unwrap();
        let rep = chain(&app, item.clone(), WORK_BUDGET).await;
        assert_eq!((rep.journals_held, rep.journal_entries_read), (1, 3), "{rep:?}");
        assert!(rep.violations.is_empty(), "{rep:?}");
        // a counter write the journal never got: behind until the gap is older than the grace
        w.stock.seed(plain("A", 1), &[2504]);
        let rep = chain(&app, item.clone(), WORK_BUDGET).await;
        assert_eq!((rep.journals_behind, rep.violations.len()), (1, 0), "{rep:?}");
    }

    #[tokio::test]
    async fn locked_equals_frozen_is_checked_past_the_old_limits_and_finds_a_planted_mismatch() {
        let (app, w) = memory_app("test", sweep_config()).unwrap();
        let j = std::sync::Arc::new(crate::adapters::memory::MemoryJournal::new());
        let app = app.with_journal(j.clone());
        // more than the 2,000 SKUs and 20,000 FROZEN locks the check used to give up at
        let (skus, locks) = (2_500, 22_500);
        for i in 0..skus {
            w.stock.seed(plain(&format!("S{i:05}"), 1), &[10]);
        }
        for i in 0..locks {
            let r = orphan(&format!("o{i:08}"), &format!("S{:05}", i % skus), 1, 120_000);
            assert_eq!(w.stock.put_frozen(&r, &Default::default()).await.unwrap(), Ok(()));
        }
        let rep = chain(&app, WorkItem::LockedTotals(Default::default()), WORK_BUDGET).await;
        assert_eq!((rep.locked_skus_judged, rep.locked_locks_read, rep.locked_runs), (skus, locks, 1), "{rep:?}");
        assert!(rep.violations.is_empty() && !rep.locked_check_skipped, "{rep:?}");

        // S00007 loses its locked units while its 9 locks stay FROZEN; S00008 too, but it was
        // written a moment ago (its journal says so): not judged
        w.stock.seed(plain("S00007", 1), &[10]);
        w.stock.seed(plain("S00008", 1), &[10]);
        j.put(&adjustments("S00008", 0, 10, 1_000)).await.unwrap();
        let rep = chain(&app, WorkItem::LockedTotals(Default::default()), Duration::ZERO).await;
        assert_eq!(
            rep.violations,
            vec![format!(
                "{:?}",
                Violation::LockedMismatch { sku: Sku::parse("S00007").unwrap(), locked: 0, frozen: 9 }
            )],
            "{rep:?}"
        );
        assert_eq!((rep.locked_groups_suspect, rep.locked_runs, rep.locked_skus_moved), (1, 2, 1), "{rep:?}");
        assert!(rep.continuations > 10, "paged with no budget: {rep:?}");
    }

    #[tokio::test]
    async fn a_claim_in_flight_on_a_code_pool_with_a_trickle_of_sales_raises_no_ring_alarm() {
        use crate::domain::model::{InventoryModel, Management};
        use crate::service::admin::SkuSpec;
        let mut c = sweep_config();
        c.code_key = crate::config::Secret::new(crate::domain::codes::Keyring::generate_secret("t1"));
        let (app, w) = memory_app("test", c).unwrap();
        let spec = SkuSpec {
            name: "card".into(),
            price: 100,
            currency: Currency::parse("EUR").unwrap(),
            shards: 1,
            per_user_limit: None,
            model: InventoryModel { management: Management::CodePool, ..Default::default() },
            bundle: Vec::new(),
            supplier: None,
        };
        let card = Sku::parse("CARD").unwrap();
        crate::service::admin::put_sku(&app, &card, &spec, None).await.unwrap();
        let codes: Vec<String> = (0..6).map(|i| format!("CODE-{i}-ABC")).collect();
        crate::service::codes::upload(&app, &card, "b1", &codes, None).await.unwrap();
        // a checkout claimed a code and has not frozen yet (or died, or its claim was retried)
        let head = w.stock.read_rings(&card, 1).await.unwrap()[0].head;
        assert_eq!(w.stock.claim_codes(&card, 0, 1, head).await.unwrap(), Some(head));
        let item = WorkItem::SkuInvariants { cursor: None };
        let rep = chain(&app, item.clone(), WORK_BUDGET).await;
        assert!(rep.violations.is_empty(), "the shard's head moved a moment ago: not judged: {rep:?}");
        assert_eq!(rep.codes_returned, 0);
        // once quiet, the orphan repair returns the code and the shard is judged: it holds
        let (app, _) = (App { config: Config { code_claim_quiet_ms: 0, ..app.config.clone() }, ..app }, ());
        let rep = chain(&app, item, WORK_BUDGET).await;
        assert_eq!((rep.codes_returned, rep.violations.len()), (1, 0), "{rep:?}");
        // a shard that is not settled is made to agree with its ring; a settled one is left
        let ring = crate::domain::codes::Ring { head: 3, tail: 6, uploaded: 6, claimed_at_ms: 1_000, checked: 2 };
        let snap = SkuSnapshot {
            sku: card.clone(),
            stocked: 6,
            shards: vec![ShardCounts { available: 4, locked: 0, sold: 2 }],
            per_user_limit: None,
        };
        assert_eq!(settled_rings(&snap, &[ring], 1_500, 60_000).shards[0].available, 3);
        assert_eq!(settled_rings(&snap, &[ring], 61_000, 60_000).shards[0].available, 4);
        assert_eq!(
            settled_rings(&snap, &[crate::domain::codes::Ring { checked: 3, ..ring }], 1_500, 60_000).shards[0]
                .available,
            4
        );
    }

    #[test]
    fn work_items_of_the_last_version_still_parse_and_the_new_state_round_trips() {
        let old: WorkItem = serde_json::from_str(r#"{"kind":"LockedTotals"}"#).unwrap();
        assert_eq!(old, WorkItem::LockedTotals(Default::default()));
        let old: WorkItem = serde_json::from_str(r#"{"kind":"SkuJournals","cursor":null}"#).unwrap();
        assert_eq!(old, WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false });
        let sums = LockSums {
            phase: 2,
            started_ms: 1,
            frozen: vec![7; LOCK_GROUPS],
            locked: vec![7; LOCK_GROUPS],
            quiet: vec![1; LOCK_GROUPS],
            ..Default::default()
        };
        let items = [
            WorkItem::LockedTotals(sums),
            WorkItem::SkuJournals { cursor: Some("c".into()), pending: vec!["A".into()], last_page: true },
        ];
        for item in items {
            let json =
                serde_json::to_string(&Message::ReconcileWork { schema: 1, sweep_ms: 1, item: item.clone() }).unwrap();
            assert!(json.len() < 64 * 1024, "{} bytes", json.len());
            let back: Message = serde_json::from_str(&json).unwrap();
            assert_eq!(back, Message::ReconcileWork { schema: 1, sweep_ms: 1, item });
        }
    }
}
