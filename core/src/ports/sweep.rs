//! The reconcile sweep's side of the ports: its work items, the bounded sums it carries, and
//! the paged reads of the sparse indexes with their bucketing.

use super::*;

/// One unit of the reconcile sweep (docs/runbook.md, "Reconcile"). The schedule seeds one item
/// per index bucket and kind, and one for the SKU list; a worker pages through its item inside
/// its time budget and sends what is left back as the same kind with a cursor. A new kind
/// (say, per-campaign quotas) is one more variant here and one more arm in
/// `service::reconcile::work`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum WorkItem {
    /// FROZEN locks of one `frozen-by-age` bucket created before `before_ms`: resolve each by
    /// its order (fence + release, confirm, or leave).
    StaleLocks { bucket: u32, before_ms: i64, cursor: Option<String> },
    /// PENDING orders of one `pending-by-deadline` bucket due before `before_s`: expire.
    OverdueOrders { bucket: u32, before_s: i64, cursor: Option<String> },
    /// Per-SKU invariant 1 (identity, no negative counter) over SKUs after `cursor`.
    SkuInvariants { cursor: Option<String> },
    /// `locked = Σ FROZEN` per SKU at any scale (docs/runbook.md, "Reconcile"): a chain that
    /// pages through every FROZEN lock and then every SKU, carrying sums per hash group of SKUs
    /// ([`LockSums`]), and judges the SKUs that were quiet the whole time; then the same per
    /// campaign item (quota shards' `locked` = Σ the campaign pieces of FROZEN locks).
    LockedTotals(Box<LockSums>),
    /// The campaign identity `quota = available + locked + sold` of every campaign item.
    CampaignQuotas {},
    /// SHIPPED orders of one `shipped-by-due` bucket due before `before_s`: complete.
    ShippedDue { bucket: u32, before_s: i64, cursor: Option<String> },
    /// Orders of one `refunds-requested` bucket with a refund REQUESTED before `before_ms`:
    /// issue it (the event that should have was lost or failed).
    UnissuedRefunds { bucket: u32, before_ms: i64, cursor: Option<String> },
    /// Orders of one `stock-to-settle` bucket quiet since before `before_ms`: a restock or a
    /// booking cancel the event flow lost, finished (review protocol-3 N3).
    StockToSettle { bucket: u32, before_ms: i64, cursor: Option<String> },
    /// Orders of one `refunds-issued` bucket with a refund ISSUED before `before_ms` and never
    /// confirmed: asked of the provider until its answer is final (review protocol-3 N9).
    IssuedRefunds { bucket: u32, before_ms: i64, cursor: Option<String> },
    /// Held refunds waiting for review longer than a day, counted (review protocol-3 N8).
    HeldRefunds {},
    /// Campaigns after `cursor` (by id): an ended one's ring-fenced units go back to its SKUs
    /// (docs/campaigns.md, "Ring-fenced quota"); a repair of every sweep, budgeted, not a check
    /// that waits for an empty queue (review protocol-3 N6).
    FenceReturns { cursor: Option<String> },
    /// Settle one UTC day with every provider (docs/payments.md, "Settlement"); seeded by the
    /// daily schedule, not by the sweep.
    Settlement { date: crate::domain::model::Day },
    /// Per SKU after `cursor`: its stock journal sums to its shard counters
    /// (docs/after-sale.md, "Stock journal"; only SKUs whose journal is complete).
    SkuJournals {
        cursor: Option<String>,
        /// SKUs of the last page not finished when the budget ran out (the first one part-read,
        /// its checkpoint saved): done first.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending: Vec<String>,
        /// `pending` are the last SKUs: nothing follows them.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        last_page: bool,
    },
}

/// Sum groups of the `locked = Σ FROZEN` chain: a SKU's group is a hash of its id.
pub const LOCK_GROUPS: usize = 1024;

/// The state a `LockedTotals` chain carries from page to page: bounded by [`LOCK_GROUPS`]
/// whatever the number of locks and SKUs (a focused run adds one sum per SKU of a few groups).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSums {
    /// 0: not started; 1: paging FROZEN locks (`bucket`, `cursor`); 2: paging SKUs (`cursor`);
    /// 3: campaign items (`cursor`).
    #[serde(default)]
    pub phase: u8,
    /// When the run started (epoch ms): a SKU is judged only if its last counter write is older.
    #[serde(default)]
    pub started_ms: i64,
    #[serde(default)]
    pub bucket: u32,
    #[serde(default)]
    pub cursor: Option<String>,
    /// Per group: Σ quantities of FROZEN lock lines.
    #[serde(default)]
    pub frozen: Vec<i64>,
    /// Per group: Σ `locked` of its quiet SKUs, and how many there were.
    #[serde(default)]
    pub locked: Vec<i64>,
    #[serde(default)]
    pub quiet: Vec<u32>,
    /// Groups holding a SKU written during the run (not judged).
    #[serde(default)]
    pub moved: Vec<u32>,
    /// A second, focused run: these groups (their sums disagreed in the first) are summed per SKU.
    #[serde(default)]
    pub focus: Vec<u32>,
    #[serde(default)]
    pub by_sku: std::collections::BTreeMap<String, i64>,
    /// The same sums per campaign item (`<campaign>/<sku>`, grouped by [`LOCK_GROUPS`]): Σ the
    /// campaign pieces of FROZEN locks, Σ quota-shard `locked` of the quiet items and how many
    /// (phase 3 pages the campaigns, `cursor` = how many are done).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub q_frozen: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub q_locked: Vec<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub q_quiet: Vec<u32>,
    /// Campaign-item groups holding an item whose SKU was written during the run (not judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub q_moved: Vec<u32>,
    /// A focused run's campaign-item groups, summed per item.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub q_focus: Vec<u32>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub q_by_item: std::collections::BTreeMap<String, i64>,
}

/// One page of a sparse index; `next` resumes after it (`None`: the index is done).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// Number of buckets of the sparse indexes (docs/architecture.md, "Data model"): spreads index writes of a
/// flash sale over this many partitions. Each bucket is one GSI partition key (≤ 1,000 write
/// units/s), and every freeze writes its entry once and removes it once: 64 buckets carry
/// 32,000 freezes/s, above the 20,000/s flash-sale peak the hot-SKU model targets. Part of the
/// [`SweepIndex`] contract: the sweep pages every bucket `0..INDEX_BUCKETS`.
pub const INDEX_BUCKETS: u32 = 64;

/// The index bucket of an entry keyed `key` (FNV-1a: cheap and stable across builds).
pub fn bucket_of(key: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in key.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % INDEX_BUCKETS
}

/// Paged reads of the sparse indexes for the reconcile sweep: no call reads a whole index.
/// Like a GSI, an answer may be slightly stale; the sweep re-reads every item it acts on.
#[async_trait]
pub trait SweepIndex: Send + Sync {
    /// FROZEN reservations of `bucket` created before `before_ms`, at most `limit`.
    async fn frozen_page(
        &self,
        bucket: u32,
        before_ms: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<ReservationId>>;
    /// PENDING_PAYMENT orders of `bucket` whose deadline is before `before_s`.
    async fn pending_page(
        &self,
        bucket: u32,
        before_s: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>>;
    /// Orders of `bucket` in a sparse order index whose range value is before `before`.
    async fn orders_page(
        &self,
        index: OrderIndex,
        bucket: u32,
        before: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>>;
    /// SKUs in index order.
    async fn skus_page(&self, cursor: Option<&str>, limit: usize) -> anyhow::Result<Page<Sku>>;
}
