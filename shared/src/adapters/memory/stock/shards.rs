//! [`Shards`] in memory: shard counters, rebalances and audited adjustments.

use super::{shard_key, validate_items, MemoryStock};
use crate::adapters::memory::lock;
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::Cause;
use crate::domain::Sku;
use crate::ports::{AdjustRejection, Adjustment, Shards, SkuMeta};
use async_trait::async_trait;

#[async_trait]
impl Shards for MemoryStock {
    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..slots).map(|i| s.shard(sku, i).copied().unwrap_or_default()).collect())
    }

    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &Cause,
    ) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        if s.metas.get(&meta.sku).is_none_or(|m| m.version != expected_version) {
            return Ok(false);
        }
        for (i, &av) in new_available.iter().enumerate() {
            let current = s.shard(&meta.sku, i as u16);
            let ok = match old.get(i) {
                Some(o) if o.available == av => true,
                Some(o) => current.is_some_and(|c| c.available == o.available),
                None => current.is_none(),
            };
            if !ok {
                return Ok(false);
            }
        }
        for (i, &av) in new_available.iter().enumerate() {
            if old.get(i).is_none_or(|o| o.available != av) {
                // a new shard carries the stop-sale flag of `meta`
                s.create_shard(meta, i as u16);
                s.shard_mut(&meta.sku, i as u16).available = av;
                s.causes.insert(shard_key(&meta.sku, i as u16), cause.clone());
            }
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    /// Like the DynamoDB adapter, ignores `meta_version` and leaves the metadata version as it is.
    async fn adjust(&self, adj: &Adjustment, _meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2)?;
        let mut s = lock(&self.state);
        if let Err(e) = s.check_adjustment(adj) {
            return Ok(Err(e));
        }
        s.apply_adjustment(adj);
        Ok(Ok(()))
    }

    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        // both in one transaction: 2 + pieces items each
        validate_items(
            out.pieces.iter().map(|(i, _)| (&out.sku, *i)).chain(into.pieces.iter().map(|(i, _)| (&into.sku, *i))),
            4,
        )?;
        let mut s = lock(&self.state);
        if let Err(e) = s.check_adjustment(out).and_then(|()| s.check_adjustment(into)) {
            return Ok(Err(e));
        }
        s.apply_adjustment(out);
        s.apply_adjustment(into);
        Ok(Ok(()))
    }
}
