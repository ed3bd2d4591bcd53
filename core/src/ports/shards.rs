//! The stock shards port: a SKU's shard counters and the audited adjustments and rebalances
//! that move units onto, off and between them.

use super::SkuMeta;
use crate::domain::invariants::ShardCounts;
pub use crate::domain::stock_changes::{AdjustRejection, Adjustment};
use crate::domain::Sku;
use async_trait::async_trait;

/// A SKU's shard counters in the stock table (owned by the stock service).
#[async_trait]
pub trait Shards: Send + Sync {
    /// Counters of shards `0..slots`, read consistently.
    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>>;
    /// Shard counters for public reads: eventually consistent.
    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_shards(sku, slots).await
    }
    /// The shard counters of many SKUs (or calendar cells) at once, for public reads: in order,
    /// `slots` each. DynamoDB batches every key of them (100 a request) instead of a read per
    /// SKU: the calendar view's dates.
    async fn read_many_shards_public(&self, cells: &[(Sku, u16)]) -> anyhow::Result<Vec<Vec<ShardCounts>>> {
        let mut out = Vec::with_capacity(cells.len());
        for (sku, slots) in cells {
            out.push(self.read_shards_public(sku, *slots).await?);
        }
        Ok(out)
    }
    /// Moves available units between shards: each shard's `available` goes from `old` to
    /// `new_available`, conditional on the old value, together with the metadata write. Each
    /// shard written carries `cause` (the journal's `ref`/`actor`/`why`).
    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &crate::domain::journal::Cause,
    ) -> anyhow::Result<bool>;
    async fn adjust(&self, adj: &Adjustment, meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Two adjustments of two SKUs applied together or not at all: a ring-fence moving units
    /// between a SKU and its campaign cell (docs/campaigns.md, "Ring-fenced quota"). Rejections
    /// as [`Self::adjust`]'s, `Duplicate` naming `out`'s.
    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>>;
}
