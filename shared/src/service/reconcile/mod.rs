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
use crate::clock;
use crate::context::App;
use crate::domain::events::releases_bookings;
use crate::domain::invariants::{check_stock, SkuSnapshot, Violation};
use crate::domain::journal;
use crate::domain::order::{Order, OrderRecord, OrderStatus};
use crate::domain::reservation::LockStatus;
use crate::domain::supplier::BookingStatus;
use crate::domain::{OrderId, ReservationId, Sku};
use crate::faults::{self, InjectedCrash};
use crate::ports::{LockSums, Message, OrderIndex, WorkItem, INDEX_BUCKETS, LOCK_GROUPS};
use crate::telemetry::names;
use std::time::{Duration, Instant};

mod invariants;
mod journals;
mod locked;
mod passes;
mod repairs;
mod settle;
#[cfg(test)]
mod tests;

use invariants::*;
use journals::*;
use locked::*;
use passes::*;
use repairs::*;
use settle::*;

pub use journals::{JOURNAL_ENTRY_PAGE, JOURNAL_SKU_PAGE};
pub use locked::lock_group;

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
    /// The same check per campaign item (quota shards' `locked` = Σ the campaign pieces of
    /// FROZEN locks): items judged, items whose SKU was written during the run (not judged).
    pub locked_items_judged: usize,
    pub locked_items_moved: usize,
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
    /// Differences a settlement work item found (docs/payments.md, "Settlement").
    pub settlement_mismatches: usize,
    /// Restocks the event flow lost, done by the stock-to-settle arm.
    pub stock_settled: usize,
    /// ISSUED refunds whose final provider answer the sweep applied.
    pub refunds_settled: usize,
    /// Held refunds waiting longer than a day.
    pub reviews_overdue: usize,
    /// Ring-fenced units returned to their SKUs after their campaign ended.
    pub fenced_units_returned: i64,
    /// Unsold units of ended waves rolled into the next wave (docs/campaigns.md, "Waves").
    pub wave_units_rolled: i64,
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
        self.locked_items_judged += o.locked_items_judged;
        self.locked_items_moved += o.locked_items_moved;
        self.journal_entries_read += o.journal_entries_read;
        self.locks_restocked += o.locks_restocked;
        self.supplier_bookings_held += o.supplier_bookings_held;
        self.supplier_cancels += o.supplier_cancels;
        self.stock_settled += o.stock_settled;
        self.refunds_settled += o.refunds_settled;
        self.reviews_overdue += o.reviews_overdue;
        self.fenced_units_returned += o.fenced_units_returned;
        self.wave_units_rolled += o.wave_units_rolled;
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
        items.push(WorkItem::StockToSettle { bucket, before_ms: now_ms - stale_ms, cursor: None });
        items.push(WorkItem::IssuedRefunds { bucket, before_ms: now_ms - redrive_ms, cursor: None });
    }
    items.push(WorkItem::HeldRefunds {});
    items.push(WorkItem::FenceReturns { cursor: None });
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
    super::sale::note_sweep(app).await;
    Ok(Seeded { items_seeded: n, backlog })
}

/// A worker's part: one item, for at most `budget`.
pub async fn work(app: &App, item: &WorkItem, budget: Duration) -> anyhow::Result<WorkOutcome> {
    let started = Instant::now();
    let mut rep = ReconcileReport { items: 1, ..Default::default() };
    let within = (started, budget);
    let next = match item {
        WorkItem::StaleLocks { bucket, before_ms, cursor } => {
            stale_lock_pages(app, (*bucket, *before_ms, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::StaleLocks { bucket: *bucket, before_ms: *before_ms, cursor: Some(c) })
        }
        WorkItem::OverdueOrders { bucket, before_s, cursor } => {
            overdue_order_pages(app, (*bucket, *before_s, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::OverdueOrders { bucket: *bucket, before_s: *before_s, cursor: Some(c) })
        }
        WorkItem::ShippedDue { bucket, before_s, cursor } => {
            shipped_due_pages(app, (*bucket, *before_s, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::ShippedDue { bucket: *bucket, before_s: *before_s, cursor: Some(c) })
        }
        WorkItem::UnissuedRefunds { bucket, before_ms, cursor } => {
            unissued_refund_pages(app, (*bucket, *before_ms, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::UnissuedRefunds { bucket: *bucket, before_ms: *before_ms, cursor: Some(c) })
        }
        WorkItem::StockToSettle { bucket, before_ms, cursor } => {
            page_owed(app, Owed::Stock, (*bucket, *before_ms, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::StockToSettle { bucket: *bucket, before_ms: *before_ms, cursor: Some(c) })
        }
        WorkItem::IssuedRefunds { bucket, before_ms, cursor } => {
            page_owed(app, Owed::Refunds, (*bucket, *before_ms, cursor.clone()), within, &mut rep)
                .await?
                .map(|c| WorkItem::IssuedRefunds { bucket: *bucket, before_ms: *before_ms, cursor: Some(c) })
        }
        WorkItem::HeldRefunds {} => {
            overdue_reviews(app, &mut rep).await?;
            None
        }
        WorkItem::FenceReturns { cursor } => fence_returns(app, cursor.as_deref(), within, &mut rep)
            .await?
            .map(|c| WorkItem::FenceReturns { cursor: Some(c) }),
        WorkItem::SkuInvariants { cursor } => sku_invariant_pages(app, cursor.clone(), within, &mut rep)
            .await?
            .map(|c| WorkItem::SkuInvariants { cursor: Some(c) }),
        WorkItem::Settlement { date } => {
            let r = crate::service::settlement::run_and_report(app, *date).await?;
            rep.settlement_mismatches += r.mismatches.len();
            None
        }
        WorkItem::LockedTotals(sums) => locked_totals(app, (**sums).clone(), started, budget, &mut rep)
            .await?
            .map(|s| WorkItem::LockedTotals(Box::new(s))),
        WorkItem::CampaignQuotas {} => {
            let v = super::campaigns::check_quotas(app).await?;
            report_violations(app, &v, &mut rep);
            None
        }
        WorkItem::SkuJournals { cursor, pending, last_page } => {
            sku_journal_pages(app, (cursor.clone(), pending, *last_page), within, &mut rep).await?
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
    super::sale::note_sweep(app).await;
    super::sale::flush(app, true).await;
    Ok(rep)
}

fn report_violations(app: &App, violations: &[Violation], rep: &mut ReconcileReport) {
    app.count(names::INVARIANT_VIOLATIONS, violations.len() as u64);
    super::sale::note_violations(app, violations.len());
    for v in violations {
        tracing::error!(violation = ?v, "invariant violated");
    }
    rep.violations.extend(violations.iter().map(|v| format!("{v:?}")));
}
