//! The daily ledger report (docs/operations.md, "Daily ledger report"): for one UTC day, and as
//! of now, the stock counters, the day's orders and locks, the stock journal and the money
//! compared, every difference named. Read-only: it repairs nothing.
//!
//! The store is read whole (`ports::Audit`: paged Scans, capped at [`MAX_ITEMS`] items a table)
//! and judged by the invariants the test suites judge it by (`domain::invariants::check_all`);
//! each SKU's journal is read back from now to the day's opening entry (capped at
//! [`MAX_JOURNAL_ENTRIES`] a SKU, [`MAX_JOURNAL_SKUS`] SKUs); the money is the day's settlement
//! (`service::settlement::run`) and the orders' own payments. A report that finds differences
//! reads everything again [`CONFIRM_AFTER`] later and keeps only those seen both times: a write
//! in flight between two items the Scan read apart explains itself by then.

use crate::clock;
use crate::context::App;
use crate::domain::invariants::{check_all, SkuSnapshot, Snapshot};
use crate::domain::ledger::{self, Difference, JournalTotals, Totals, Window};
use crate::domain::ledger_journal::{anchored, Cell};
use crate::domain::ledger_journal::{check_journal, JournalRead};
use crate::domain::model::Day;
use crate::telemetry::names;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Items read from each table at most (a Scan page is ≤ 1 MB; ~4,000 stock items).
pub const MAX_ITEMS: usize = 50_000;
/// SKUs whose journal is compared at most; the rest are counted unchecked.
pub const MAX_JOURNAL_SKUS: usize = 1_000;
/// Journal entries read for one SKU at most (from now back to the day's opening entry).
pub const MAX_JOURNAL_ENTRIES: usize = 5_000;
/// Journal entries per Query.
pub const JOURNAL_PAGE: usize = 1_000;
/// Time the journal reads of one pass may take; SKUs not reached are counted unchecked.
pub const JOURNAL_BUDGET: Duration = Duration::from_millis(1_500);
/// Differences listed at most (all are counted in `differences_total` and the metric).
pub const MAX_DIFFERENCES: usize = 500;
/// SKUs listed with their counters per shard at most (all are in the totals).
pub const MAX_SKU_ROWS: usize = 200;
/// How long a second read waits before it confirms the differences of the first.
pub const CONFIRM_AFTER: Duration = Duration::from_secs(2);
/// SKUs whose journal is read at once.
const JOURNAL_CONCURRENCY: usize = 8;

/// The day's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub date: Day,
    pub generated_at_ms: i64,
    /// Both tables were read to their end (else only the totals of what was read, and one
    /// `read_incomplete` difference).
    pub complete: bool,
    pub items_read: usize,
    pub totals: Totals,
    /// Each SKU's counters per shard (the first [`MAX_SKU_ROWS`] by id).
    pub skus: Vec<SkuSnapshot>,
    /// The first [`MAX_DIFFERENCES`], by kind then subject.
    pub differences: Vec<Difference>,
    pub differences_total: usize,
}

impl Report {
    pub fn clean(&self) -> bool {
        self.differences_total == 0
    }
}

/// Compares the ledgers for `day` (read twice when the first read finds differences: only
/// those found both times are reported).
pub async fn run(app: &App, day: Day) -> anyhow::Result<Report> {
    let first = pass(app, day).await?;
    if first.is_empty() {
        return Ok(report(day, first));
    }
    tokio::time::sleep(CONFIRM_AFTER).await;
    let mut second = pass(app, day).await?;
    let seen: BTreeSet<(&str, &str)> =
        first.differences.iter().map(|d| (d.kind.as_str(), d.subject.as_str())).collect();
    second.differences.retain(|d| seen.contains(&(d.kind.as_str(), d.subject.as_str())));
    Ok(report(day, second))
}

/// [`run`], and its differences announced: the `LedgerDifferences` metric (alarmed) and one
/// log line per difference (kind and subject; never a buyer's data).
pub async fn run_and_report(app: &App, day: Day) -> anyhow::Result<Report> {
    let r = run(app, day).await?;
    app.count(names::LEDGER_DIFFERENCES, r.differences_total as u64);
    for d in &r.differences {
        tracing::warn!(date = %day, kind = d.kind, subject = %subject_for_log(d), expected = ?d.expected,
            found = ?d.found, "ledger difference");
    }
    tracing::info!(date = %day, complete = r.complete, items = r.items_read, differences = r.differences_total,
        "ledger report done");
    Ok(r)
}

/// A buyer's id is kept out of the log: rows about buyers are logged by kind alone.
fn subject_for_log(d: &Difference) -> &str {
    if d.kind == "pending_count" {
        "(buyer)"
    } else {
        &d.subject
    }
}

/// One read of everything, compared.
struct Pass {
    generated_at_ms: i64,
    complete: bool,
    items_read: usize,
    totals: Totals,
    skus: Vec<SkuSnapshot>,
    differences: Vec<Difference>,
}

impl Pass {
    fn is_empty(&self) -> bool {
        self.differences.is_empty()
    }
}

fn report(day: Day, p: Pass) -> Report {
    let differences = ledger::sorted(p.differences);
    let differences_total = differences.len();
    Report {
        date: day,
        generated_at_ms: p.generated_at_ms,
        complete: p.complete,
        items_read: p.items_read,
        totals: p.totals,
        skus: p.skus,
        differences: differences.into_iter().take(MAX_DIFFERENCES).collect(),
        differences_total,
    }
}

async fn pass(app: &App, day: Day) -> anyhow::Result<Pass> {
    let w = Window::of(day);
    let generated_at_ms = clock::now_ms();
    let read = app.audit.read_all(MAX_ITEMS).await?;
    let mut snap = read.snapshot;
    snap.check_delay_s = app.config.reservation_check_delay_s;
    snap.skus.sort_by(|a, b| a.sku.cmp(&b.sku));
    let (money, mut differences) = ledger::money(&snap, w);
    let mut totals = Totals {
        stock: ledger::stock_totals(&snap),
        orders: ledger::order_totals(&snap, w),
        locks: ledger::lock_totals(&snap, w),
        money,
        ..Totals::default()
    };
    if read.complete {
        differences.extend(ledger::from_violations(&check_all(&snap)));
        differences.extend(journals(app, &snap, w, generated_at_ms, &mut totals.journal).await?);
    } else {
        differences.push(
            Difference::new("read_incomplete", "store", Some(MAX_ITEMS as i64), Some(read.items as i64)).detail(
                "a table holds more items than the report reads: the cross-ledger and journal checks were skipped",
            ),
        );
    }
    money_at_providers(app, day, &mut totals, &mut differences).await;
    Ok(Pass {
        generated_at_ms,
        complete: read.complete,
        items_read: read.items,
        totals,
        skus: snap.skus.into_iter().take(MAX_SKU_ROWS).collect(),
        differences,
    })
}

/// The day's settlement with every provider: its matches counted, each mismatch a difference
/// (`settlement_<kind>`). A provider that does not answer is a difference too: the money was
/// not compared.
async fn money_at_providers(app: &App, day: Day, totals: &mut Totals, out: &mut Vec<Difference>) {
    match crate::service::settlement::run(app, day).await {
        Ok(s) => {
            totals.money.payments_matched = s.payments_matched as u64;
            totals.money.refunds_matched = s.refunds_matched as u64;
            for m in s.mismatches {
                let kind = serde_json::to_value(m.kind).ok().and_then(|v| v.as_str().map(str::to_owned));
                let subject = m.order_id.clone().or(m.payment_id.clone()).unwrap_or_default();
                out.push(
                    Difference::new(
                        &format!("settlement_{}", kind.unwrap_or_default()),
                        subject,
                        None,
                        m.amount.map(|a| a as i64),
                    )
                    .detail(format!(
                        "provider {}, payment {}, refund {}",
                        m.provider,
                        m.payment_id.as_deref().unwrap_or("-"),
                        m.refund_id.as_deref().unwrap_or("-")
                    )),
                );
            }
        }
        Err(e) => {
            tracing::warn!(date = %day, error = format!("{e:#}"), "ledger: settlement did not run");
            out.push(
                Difference::new("settlement_unavailable", "providers", None, None)
                    .detail("a payment provider did not answer: the money was not compared with its books"),
            );
        }
    }
}

/// Every SKU's journal against its counters (product shards and the campaign quota shards of
/// its items), [`JOURNAL_CONCURRENCY`] at a time, within [`JOURNAL_BUDGET`].
async fn journals(
    app: &App,
    snap: &Snapshot,
    w: Window,
    read_at_ms: i64,
    t: &mut JournalTotals,
) -> anyhow::Result<Vec<Difference>> {
    use futures::StreamExt;
    let started = Instant::now();
    let cells: Vec<(crate::domain::Sku, Vec<Cell>)> =
        snap.skus.iter().map(|s| (s.sku.clone(), cells_of(snap, s))).collect();
    t.skus_unchecked += cells.len().saturating_sub(MAX_JOURNAL_SKUS) as u64;
    let reads = futures::stream::iter(cells.into_iter().take(MAX_JOURNAL_SKUS).map(|(sku, cells)| async move {
        let read = if started.elapsed() > JOURNAL_BUDGET {
            Ok(JournalRead { sku, newest_first: Vec::new(), capped: true })
        } else {
            read_journal(app, sku, &cells, w).await
        };
        (read, cells)
    }))
    .buffer_unordered(JOURNAL_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let mut out = Vec::new();
    for (read, cells) in reads {
        out.extend(check_journal(&read?, &cells, w, read_at_ms, t));
    }
    Ok(out)
}

/// A SKU's counter cells as read: its shards, and each campaign item's quota shards on it.
fn cells_of(snap: &Snapshot, s: &SkuSnapshot) -> Vec<Cell> {
    let mut cells: Vec<Cell> = s.shards.iter().enumerate().map(|(i, c)| (None, i as u16, *c)).collect();
    for item in snap.campaigns.items.iter().filter(|i| i.sku == s.sku) {
        cells.extend(item.shards.iter().enumerate().map(|(i, c)| (Some(item.campaign.clone()), i as u16, *c)));
    }
    cells
}

/// A SKU's journal, newest first, back to an entry before the day for every cell (or the
/// journal's first entry); capped at [`MAX_JOURNAL_ENTRIES`].
async fn read_journal(app: &App, sku: crate::domain::Sku, cells: &[Cell], w: Window) -> anyhow::Result<JournalRead> {
    let mut read = JournalRead { sku, newest_first: Vec::new(), capped: false };
    let mut cursor: Option<String> = None;
    // the partitions of every cell's entries (a cell is a product or a quota shard)
    let spread = crate::domain::journal::spread(cells.iter().map(|c| c.1.saturating_add(1)).max().unwrap_or(1));
    loop {
        let (page, next) = app.journal.for_sku(&read.sku, spread, cursor.as_deref(), JOURNAL_PAGE).await?;
        read.newest_first.extend(page);
        if anchored(cells, &read.newest_first, w) {
            return Ok(read);
        }
        match next {
            None => return Ok(read),
            Some(_) if read.newest_first.len() >= MAX_JOURNAL_ENTRIES => {
                read.capped = true;
                return Ok(read);
            }
            Some(n) => cursor = Some(n),
        }
    }
}

#[cfg(test)]
mod tests;
