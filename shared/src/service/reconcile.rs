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
use crate::domain::supplier::BookingStatus;
use crate::domain::{OrderId, ReservationId, Sku};
use crate::faults::{self, InjectedCrash};
use crate::ports::{Message, OrderIndex, WorkItem};
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
    /// `locked = Σ FROZEN` was not checked: too many locks or SKUs to read in one budget.
    pub locked_check_skipped: bool,
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
/// Largest index the `locked = Σ FROZEN` check reads in one item (about 200 BatchGets).
pub const LOCKED_CHECK_MAX_LOCKS: usize = 20_000;
pub const LOCKED_CHECK_MAX_SKUS: usize = 2_000;

/// What one work item did, and what is left of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkOutcome {
    pub report: ReconcileReport,
    pub next: Option<WorkItem>,
}

/// The items of one sweep started at `now_ms`.
pub fn seed_items(app: &App, now_ms: i64) -> Vec<WorkItem> {
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
    items.push(WorkItem::SkuInvariants { cursor: None });
    items.push(WorkItem::LockedTotals {});
    items.push(WorkItem::CampaignQuotas {});
    items.push(WorkItem::SkuJournals { cursor: None });
    items
}

/// What one run of the schedule did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Seeded {
    /// Work items put on the queue: a whole sweep, or 0 when skipped.
    pub items_seeded: usize,
    /// The last sweep's work items still queued; > 0 means this run seeded nothing.
    pub backlog: u64,
}

/// The schedule's part: puts one sweep's items on the work queue — unless the last sweep's
/// items are still there. Seeding over an unfinished sweep would add a sweep's worth of work
/// each interval that the workers cannot absorb, so the backlog would grow without bound
/// (and with it the queue's cost and every item's wait); a skipped run is counted
/// (`ReconcileSweepSkipped`) and the sweep in progress does the work.
pub async fn seed(app: &App) -> anyhow::Result<Seeded> {
    let backlog = app.messages.reconcile_backlog().await?;
    if backlog > 0 {
        app.count(names::SWEEP_SKIPPED, 1);
        tracing::warn!(backlog, "last reconcile sweep unfinished; no new sweep seeded");
        return Ok(Seeded { items_seeded: 0, backlog });
    }
    let now_ms = clock::now_ms();
    let items = seed_items(app, now_ms);
    let n = items.len();
    let msgs: Vec<Message> =
        items.into_iter().map(|item| Message::ReconcileWork { schema: 1, sweep_ms: now_ms, item }).collect();
    for chunk in msgs.chunks(16) {
        for r in futures::future::join_all(chunk.iter().map(|m| app.messages.send(m, 0))).await {
            r?;
        }
    }
    tracing::info!(items = n, "reconcile sweep seeded");
    Ok(Seeded { items_seeded: n, backlog: 0 })
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
        WorkItem::LockedTotals {} => {
            locked_totals(app, &mut rep).await?;
            None
        }
        WorkItem::CampaignQuotas {} => {
            let v = super::campaigns::check_quotas(app).await?;
            report_violations(app, &v, &mut rep);
            None
        }
        WorkItem::SkuJournals { cursor } => {
            let mut cursor = cursor.clone();
            loop {
                let page = app.sweep.skus_page(cursor.as_deref(), JOURNAL_SKU_PAGE).await?;
                sku_journals(app, &page.items, &mut rep).await?;
                match page.next {
                    None => break None,
                    Some(c) if started.elapsed() > budget => break Some(WorkItem::SkuJournals { cursor: Some(c) }),
                    Some(c) => cursor = Some(c),
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
    let code_pools: Vec<Sku> = metas.values().filter(|m| m.model.is_code_pool()).map(|m| m.sku.clone()).collect();
    for m in metas.values().filter(|m| m.model.is_code_pool()) {
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

/// The code pool identity of settled snapshots (their rings read after the counters: a claim in
/// flight shows as a difference, which the second look filters out).
async fn ring_identity(app: &App, pools: &[SkuSnapshot]) -> anyhow::Result<Vec<Violation>> {
    let mut out = Vec::new();
    for s in pools {
        let rings = app.stock.read_rings(&s.sku, s.shards.len() as u16).await?;
        out.extend(crate::domain::invariants::check_ring_identity(s, &rings));
    }
    Ok(out)
}

/// SKUs whose journal is checked per page (each reads its whole journal: one Query per 100
/// entries).
pub const JOURNAL_SKU_PAGE: usize = 20;

/// The stock journal of each SKU against its counters ([`journal::check`]). A journal that has
/// not caught up with the last write (stream lag) is looked at again a moment later; a broken
/// one is an invariant violation and a `JournalMismatch` metric.
async fn sku_journals(app: &App, skus: &[Sku], rep: &mut ReconcileReport) -> anyhow::Result<()> {
    let metas = app.stock.get_skus(skus).await?;
    for sku in skus {
        let Some(meta) = metas.get(sku) else { continue };
        let mut verdict = journal::Verdict::Behind;
        for look in 0..3 {
            if look > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let shards = app.stock.read_shards(sku, meta.slots).await?;
            let entries = whole_journal(app, sku).await?;
            verdict = journal::check(&entries, &shards);
            if verdict != journal::Verdict::Behind {
                break;
            }
        }
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
    Ok(())
}

async fn whole_journal(app: &App, sku: &Sku) -> anyhow::Result<Vec<journal::Entry>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let (page, next) = app.journal.for_sku(sku, cursor.as_deref(), 100).await?;
        out.extend(page);
        match next {
            None => return Ok(out),
            Some(c) => cursor = Some(c),
        }
    }
}

/// `locked = Σ FROZEN` per SKU. It needs every FROZEN lock and every SKU, so it first counts
/// both page by page and gives up (and says so) past the limits instead of running out of time.
async fn locked_totals(app: &App, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    let mut frozen = Vec::new();
    for bucket in 0..INDEX_BUCKETS {
        let mut cursor: Option<String> = None;
        loop {
            let page = app.sweep.frozen_page(bucket, i64::MAX, cursor.as_deref(), 1000).await?;
            frozen.extend(page.items);
            if frozen.len() > LOCKED_CHECK_MAX_LOCKS {
                skip_locked_check(app, rep, "FROZEN locks");
                return Ok(());
            }
            match page.next {
                None => break,
                c => cursor = c,
            }
        }
    }
    let mut skus = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = app.sweep.skus_page(cursor.as_deref(), 1000).await?;
        skus.extend(page.items);
        if skus.len() > LOCKED_CHECK_MAX_SKUS {
            skip_locked_check(app, rep, "SKUs");
            return Ok(());
        }
        match page.next {
            None => break,
            c => cursor = c,
        }
    }
    // The frozen set comes from an eventually consistent index and locks move while it is
    // read: a violation must survive a second look a moment later.
    let first = locked_look(app, &skus, &frozen).await?;
    let violations = if first.is_empty() {
        first
    } else {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let second = locked_look(app, &skus, &frozen).await?;
        first.into_iter().filter(|v| second.contains(v)).collect()
    };
    report_violations(app, &violations, rep);
    Ok(())
}

async fn locked_look(app: &App, skus: &[Sku], frozen: &[ReservationId]) -> anyhow::Result<Vec<Violation>> {
    let snaps = settled(app, skus, &mut ReconcileReport::default()).await?;
    let mut locks = Vec::new();
    for chunk in frozen.chunks(100) {
        locks.extend(app.stock.get_reservations(chunk).await?);
    }
    Ok(check_stock(&snaps, &locks).into_iter().filter(|v| matches!(v, Violation::LockedMismatch { .. })).collect())
}

fn skip_locked_check(app: &App, rep: &mut ReconcileReport, what: &str) {
    rep.locked_check_skipped = true;
    app.count(names::SWEEP_INCOMPLETE, 1);
    tracing::warn!(
        what,
        max_locks = LOCKED_CHECK_MAX_LOCKS,
        max_skus = LOCKED_CHECK_MAX_SKUS,
        "reconcile: locked = Σ FROZEN not checked this sweep (too many to read in one budget)"
    );
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
    use crate::ports::{SkuMeta, StockStore};
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
}
