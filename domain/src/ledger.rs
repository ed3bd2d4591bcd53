//! The daily ledger report (docs/operations.md, "Daily ledger report"), purely: the day's totals
//! of each ledger (stock counters, orders, locks, the stock journal, money) and every
//! difference between them, one row each. The service reads a snapshot of the store and the
//! journal and hands them here; nothing here reads or writes anything.
//!
//! The cross-ledger checks are [`super::invariants::check_all`]'s (counters ↔ locks ↔ orders ↔
//! per-user and pending counters ↔ code pools ↔ supplier bookings), turned into rows by
//! [`from_violations`]; the journal's are in [`super::ledger_journal`]; the money's here.

use super::invariants::{Snapshot, Violation};
use super::model::Day;
use super::order::{OrderRecord, PaymentOutcome};
use super::refund::RefundStatus;
use super::reservation::LockStatus;
use std::collections::BTreeMap;

/// The UTC day a report covers, as epoch milliseconds `from..to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from_ms: i64,
    pub to_ms: i64,
}

impl Window {
    pub fn of(day: Day) -> Window {
        // days since 1970-01-01 (span counts both ends); a Day is never before it here
        let days = Day::of_epoch_s(0).span(day).saturating_sub(1) as i64;
        let from_ms = days * 86_400_000;
        Window { from_ms, to_ms: from_ms + 86_400_000 }
    }

    pub fn holds(&self, ms: i64) -> bool {
        (self.from_ms..self.to_ms).contains(&ms)
    }
}

/// One difference between two ledgers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Difference {
    /// What disagrees (`locked_mismatch`, `journal_gap`, `settlement_capture_not_recorded`, …:
    /// docs/operations.md lists them).
    pub kind: String,
    /// The SKU (or `<campaign>/<sku>`), order, reservation, payment or buyer it is about.
    pub subject: String,
    /// What one ledger says, when the difference is a number.
    pub expected: Option<i64>,
    /// What the other ledger holds instead.
    pub found: Option<i64>,
    /// The rest, in words (never personal data: ids and counts only).
    pub detail: String,
}

impl Difference {
    pub fn new(kind: &str, subject: impl Into<String>, expected: Option<i64>, found: Option<i64>) -> Difference {
        Difference { kind: kind.to_owned(), subject: subject.into(), expected, found, detail: String::new() }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Difference {
        self.detail = detail.into();
        self
    }
}

/// Counters summed over every SKU (cells included), as of now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StockTotals {
    pub skus: u64,
    pub stocked: i64,
    pub available: i64,
    pub frozen: i64,
    pub sold: i64,
}

/// How many locks (and units) of one status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub locks: u64,
    pub units: i64,
}

/// The money of the day, per currency (minor units).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoneyTotals {
    /// Orders whose payment was applied during the day.
    pub paid_orders: u64,
    /// Succeeded captures recorded during the day.
    pub captured: BTreeMap<String, u64>,
    /// Refunds issued at a provider during the day.
    pub refunded: BTreeMap<String, u64>,
    /// From the day's settlement: captures and refunds the provider and Holdfast agree on.
    pub payments_matched: u64,
    pub refunds_matched: u64,
}

/// The journal's side of the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalTotals {
    /// SKUs whose journal was compared with their counters.
    pub skus_checked: u64,
    /// SKUs left out: too many entries to read within the report's limits.
    pub skus_unchecked: u64,
    /// The day's entries of product shards, and their movement summed (after − before).
    pub entries: u64,
    pub available: i64,
    pub frozen: i64,
    pub sold: i64,
}

/// Every ledger's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub stock: StockTotals,
    /// The day's orders (created during it) by status.
    pub orders: BTreeMap<String, u64>,
    /// The day's locks (created during it) by status.
    pub locks: BTreeMap<String, Held>,
    pub journal: JournalTotals,
    pub money: MoneyTotals,
}

/// The stock totals of `s` (every SKU and cell, as read).
pub fn stock_totals(s: &Snapshot) -> StockTotals {
    s.skus.iter().fold(StockTotals::default(), |a, k| {
        let t = k.totals();
        StockTotals {
            skus: a.skus + 1,
            stocked: a.stocked + k.stocked,
            available: a.available + t.available,
            frozen: a.frozen + t.locked,
            sold: a.sold + t.sold,
        }
    })
}

/// The orders created during `w`, by status (VOID tombstones carry no time and are not counted).
pub fn order_totals(s: &Snapshot, w: Window) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (_, rec) in &s.orders {
        if let OrderRecord::Order(o) = rec {
            if w.holds(o.created_at_ms) {
                *out.entry(o.status.as_str().to_owned()).or_default() += 1;
            }
        }
    }
    out
}

/// The locks created during `w`, by status, with their units (Σ line quantities).
pub fn lock_totals(s: &Snapshot, w: Window) -> BTreeMap<String, Held> {
    let mut out: BTreeMap<String, Held> = BTreeMap::new();
    for status in [LockStatus::Frozen, LockStatus::Sold, LockStatus::Released, LockStatus::Restocked] {
        out.insert(status.as_str().to_owned(), Held::default());
    }
    for r in s.reservations.iter().filter(|r| w.holds(r.created_at_ms)) {
        let h = out.entry(r.status.as_str().to_owned()).or_default();
        h.locks += 1;
        h.units += r.lines.iter().map(|l| i64::from(l.quantity)).sum::<i64>();
    }
    out
}

/// The day's money as the orders record it, and the differences between an order's status and
/// its payments: a paid order with no payment applied, an applied payment whose amount is not
/// what the order charges (its pay amount), an order holding a payment applied that is still unpaid.
pub fn money(s: &Snapshot, w: Window) -> (MoneyTotals, Vec<Difference>) {
    let mut t = MoneyTotals::default();
    let mut out = Vec::new();
    for (id, rec) in &s.orders {
        let OrderRecord::Order(o) = rec else { continue };
        for p in o.payments.iter().filter(|p| p.succeeded && w.holds(p.at_ms)) {
            *t.captured.entry(p.currency.to_ascii_uppercase()).or_default() += p.amount;
        }
        for r in o.refunds.iter().filter(|r| r.status != RefundStatus::Requested) {
            if r.issued_at_ms.is_some_and(|at| w.holds(at)) {
                *t.refunded.entry(r.currency.to_ascii_uppercase()).or_default() += r.amount;
            }
        }
        let applied = o.payments.iter().find(|p| p.outcome == PaymentOutcome::Applied);
        if let Some(p) = applied {
            if w.holds(p.at_ms) {
                t.paid_orders += 1;
            }
            // what payment charges: the amount less the discount (docs/order-record.md)
            if p.amount != o.pay_amount() {
                out.push(
                    Difference::new(
                        "payment_amount_mismatch",
                        id.as_str(),
                        Some(o.pay_amount() as i64),
                        Some(p.amount as i64),
                    )
                    .detail(format!("payment {} applied", p.payment_id)),
                );
            }
        }
        match (o.status.is_paid_or_later(), applied.is_some()) {
            (true, false) => out.push(
                Difference::new("paid_without_payment", id.as_str(), None, None)
                    .detail(format!("the order is {} and no payment was applied", o.status.as_str())),
            ),
            (false, true) => out.push(
                Difference::new("payment_applied_unpaid", id.as_str(), None, None)
                    .detail(format!("a payment was applied and the order is {}", o.status.as_str())),
            ),
            _ => {}
        }
    }
    (t, out)
}

/// One row per violation of the cross-ledger invariants.
pub fn from_violations(v: &[Violation]) -> Vec<Difference> {
    v.iter().map(row).collect()
}

fn row(v: &Violation) -> Difference {
    use Violation as V;
    let d = |kind: &str, subject: &str, expected, found| Difference::new(kind, subject, expected, found);
    match v {
        V::NegativeCounter { sku, shard } => {
            d("negative_counter", sku.as_str(), Some(0), None).detail(format!("shard {shard} has a counter below zero"))
        }
        V::TotalMismatch { sku, total, stocked } => d("total_mismatch", sku.as_str(), Some(*stocked), Some(*total))
            .detail("available + frozen + sold differs from the units stocked"),
        V::LockedMismatch { sku, locked, frozen } => d("locked_mismatch", sku.as_str(), Some(*frozen), Some(*locked))
            .detail("the counters' frozen units differ from the FROZEN locks' units"),
        V::SoldMismatch { sku, sold, locks } => d("sold_mismatch", sku.as_str(), Some(*locks), Some(*sold))
            .detail("the counters' sold units differ from the SOLD locks' units"),
        V::StrandedLock { reservation } => {
            d("stranded_lock", reservation.as_str(), None, None).detail("a FROZEN lock no open order or hold explains")
        }
        V::OrderLockMismatch { order, status, lock } => d("order_lock_mismatch", order.as_str(), None, None)
            .detail(format!("the order is {status}, its lock is {}", lock.map_or("absent", |l| l.as_str()))),
        V::PaymentAppliedTwice { payment_id } => {
            d("payment_applied_twice", payment_id.as_str(), Some(1), None).detail("a payment applied more than once")
        }
        V::RefundCount { payment_id, count } => d("refund_count", payment_id.as_str(), Some(1), Some(*count as i64))
            .detail("a late payment refunded other than once"),
        V::UserLimit { sku, user, holds, counter, limit } => {
            d("user_limit", sku.as_str(), Some(*holds), Some(*counter)).detail(format!(
                "buyer {user}: locks hold {holds}, the per-user counter says {counter} (limit {limit})"
            ))
        }
        V::CampaignQuota { campaign, sku, detail } => {
            d("campaign_quota", &format!("{campaign}/{sku}"), None, None).detail(detail.clone())
        }
        V::CampaignUserLimit { campaign, sku, user, holds, counter } => {
            d("campaign_user_limit", &format!("{campaign}/{sku}"), Some(*holds), Some(*counter))
                .detail(format!("buyer {user}: locks hold {holds}, the campaign counter says {counter}"))
        }
        V::ShippedWithoutStock { order, lock } => d("shipped_without_stock", order.as_str(), None, None)
            .detail(format!("shipped with its lock {}", lock.map_or("absent", |l| l.as_str()))),
        V::PendingCount { user, frozen, counter } => d("pending_count", user.as_str(), Some(*frozen), Some(*counter))
            .detail("the buyer's pending-checkout counter differs from their FROZEN checkouts"),
        V::CodePool { sku, detail } => d("code_pool", sku.as_str(), None, None).detail(detail.clone()),
        V::WarehouseAllocation { reservation, sku, detail } => {
            d("warehouse_allocation", reservation.as_str(), None, None).detail(format!("{sku}: {detail}"))
        }
        V::SupplierBookingHeld { order, sku, status } => d("supplier_booking_held", order.as_str(), None, None)
            .detail(format!("a closed order's booking of {sku} is {status}")),
        V::RefundedSupplierBookingHeld { order, order_status, sku, status } => {
            d("refunded_supplier_booking_held", order.as_str(), None, None)
                .detail(format!("the order is {order_status}, its booking of {sku} is {status}"))
        }
        // an invariant added later is still a row before it gets its own: named after its variant
        #[allow(unreachable_patterns)]
        other => {
            let text = format!("{other:?}");
            let name = text.split([' ', '{', '(']).next().unwrap_or_default();
            d(&snake_case(name), "", None, None).detail(text)
        }
    }
}

/// `LockedMismatch` → `locked_mismatch`.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The differences in a stable order: by kind, then subject.
pub fn sorted(mut v: Vec<Difference>) -> Vec<Difference> {
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests;
