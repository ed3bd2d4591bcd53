//! `GET /admin/ledger/{date}`: the daily ledger report (docs/operations.md, "Daily ledger report").

use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One difference between two ledgers.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerDifference {
    /// What disagrees: `locked_mismatch`, `sold_mismatch`, `total_mismatch`, `negative_counter`,
    /// `stranded_lock`, `order_lock_mismatch`, `journal_gap`, `journal_counter_mismatch`,
    /// `paid_without_payment`, `settlement_<kind>`, `read_incomplete`, … (docs/operations.md).
    pub kind: String,
    /// The SKU (`<campaign>/<sku>` for a quota), order, reservation or payment it is about.
    pub subject: String,
    /// What one ledger says, when the difference is a number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<i64>,
    /// What the other holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<i64>,
    pub detail: String,
}

/// Counters summed over every SKU and cell, as of now.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerStock {
    pub skus: u64,
    pub stocked: i64,
    pub available: i64,
    pub frozen: i64,
    pub sold: i64,
}

/// Locks of one status and their units.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerLocks {
    pub locks: u64,
    pub units: i64,
}

/// The day's journal entries of product shards, summed, and how many SKUs were compared.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerJournal {
    pub skus_checked: u64,
    /// SKUs beyond the report's limits (too many entries, or the time ran out).
    pub skus_unchecked: u64,
    pub entries: u64,
    pub available: i64,
    pub frozen: i64,
    pub sold: i64,
}

/// The day's money (minor units per currency).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerMoney {
    /// Orders whose payment was applied during the day.
    pub paid_orders: u64,
    pub captured: BTreeMap<String, u64>,
    pub refunded: BTreeMap<String, u64>,
    /// The day's settlement: captures and refunds the providers and Holdfast agree on.
    pub payments_matched: u64,
    pub refunds_matched: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerTotals {
    pub stock: LedgerStock,
    /// The day's orders (created during it) by status.
    pub orders: BTreeMap<String, u64>,
    /// The day's locks (created during it) by status: `FROZEN`, `SOLD`, `RELEASED`, `RESTOCKED`.
    pub locks: BTreeMap<String, LedgerLocks>,
    pub journal: LedgerJournal,
    pub money: LedgerMoney,
}

/// One shard's counters.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerShard {
    pub available: i64,
    pub frozen: i64,
    pub sold: i64,
}

/// One SKU (or calendar cell) and its counters per shard.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerSku {
    pub sku: String,
    pub stocked: i64,
    pub shards: Vec<LedgerShard>,
}

/// `GET /admin/ledger/{date}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LedgerReport {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// RFC 3339: when the store was read (the counters are as of then).
    pub generated_at: String,
    /// Both tables were read to their end (the report's limits: docs/operations.md).
    pub complete: bool,
    pub items_read: usize,
    pub totals: LedgerTotals,
    /// Each SKU's counters per shard, by id (the first 200).
    pub skus: Vec<LedgerSku>,
    /// By kind, then subject (the first 500).
    pub differences: Vec<LedgerDifference>,
    pub differences_total: usize,
    /// No difference at all.
    pub clean: bool,
}

impl From<crate::service::ledger::Report> for LedgerReport {
    fn from(r: crate::service::ledger::Report) -> Self {
        let clean = r.clean();
        let t = r.totals;
        let shard = |c: &crate::domain::invariants::ShardCounts| LedgerShard {
            available: c.available,
            frozen: c.locked,
            sold: c.sold,
        };
        LedgerReport {
            date: r.date.to_string(),
            generated_at: crate::clock::rfc3339(r.generated_at_ms),
            complete: r.complete,
            items_read: r.items_read,
            totals: LedgerTotals {
                stock: LedgerStock {
                    skus: t.stock.skus,
                    stocked: t.stock.stocked,
                    available: t.stock.available,
                    frozen: t.stock.frozen,
                    sold: t.stock.sold,
                },
                orders: t.orders,
                locks: t.locks.into_iter().map(|(k, h)| (k, LedgerLocks { locks: h.locks, units: h.units })).collect(),
                journal: LedgerJournal {
                    skus_checked: t.journal.skus_checked,
                    skus_unchecked: t.journal.skus_unchecked,
                    entries: t.journal.entries,
                    available: t.journal.available,
                    frozen: t.journal.frozen,
                    sold: t.journal.sold,
                },
                money: LedgerMoney {
                    paid_orders: t.money.paid_orders,
                    captured: t.money.captured,
                    refunded: t.money.refunded,
                    payments_matched: t.money.payments_matched,
                    refunds_matched: t.money.refunds_matched,
                },
            },
            skus: r
                .skus
                .iter()
                .map(|s| LedgerSku {
                    sku: s.sku.to_string(),
                    stocked: s.stocked,
                    shards: s.shards.iter().map(shard).collect(),
                })
                .collect(),
            differences: r
                .differences
                .into_iter()
                .map(|d| LedgerDifference {
                    kind: d.kind,
                    subject: d.subject,
                    expected: d.expected,
                    found: d.found,
                    detail: d.detail,
                })
                .collect(),
            differences_total: r.differences_total,
            clean,
        }
    }
}
