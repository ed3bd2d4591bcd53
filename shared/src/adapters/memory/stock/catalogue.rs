//! [`Catalogue`] in memory: SKU metadata and its admin stamps.

use super::{stamp_key, MemoryStock};
use crate::adapters::memory::lock;
use crate::domain::Sku;
use crate::ports::{AdminStamp, Stamped};
use crate::ports::{Catalogue, SkuMeta};
use anyhow::anyhow;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};

#[async_trait]
impl Catalogue for MemoryStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        crate::adapters::memory::interleave().await;
        if skus.iter().collect::<HashSet<_>>().len() != skus.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(skus.iter().filter_map(|k| s.metas.get(k).map(|m| (k.clone(), m.clone()))).collect())
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let meta_ok = match (expected_version, s.metas.get(&meta.sku)) {
            (None, None) => true,
            (Some(v), Some(old)) => old.version == v,
            _ => false,
        };
        // A create puts every shard `attribute_not_exists`; an update creates the missing ones.
        let shards_ok = expected_version.is_some() || (0..meta.slots).all(|i| s.shard(&meta.sku, i).is_none());
        if !(meta_ok && shards_ok) {
            return Ok(false);
        }
        // a new shard carries the stop-sale flag of `meta`; an existing one keeps its own
        for i in 0..meta.slots {
            s.create_shard(meta, i);
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).metas.keys().cloned().collect())
    }

    /// As DynamoDB: the metadata conditional on the version, and the flag on every shard
    /// `0..meta.slots`, each conditional on existing (none beyond, no quota shard).
    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        if s.metas.get(&meta.sku).is_none_or(|m| m.version != expected_version) {
            return Ok(false);
        }
        if !(0..meta.slots).all(|i| s.shards.contains_key(&(meta.sku.clone(), i))) {
            return Ok(false);
        }
        for i in 0..meta.slots {
            if let Some(item) = s.shards.get_mut(&(meta.sku.clone(), i)) {
                item.paused = meta.paused;
            }
        }
        s.metas.insert(meta.sku.clone(), meta.clone());
        Ok(true)
    }

    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        let done = self.put_sku(meta, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Sku(&meta.sku)), by.clone());
        }
        Ok(done)
    }

    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        let done = self.set_sku_paused(meta, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Sku(&meta.sku)), by.clone());
        }
        Ok(done)
    }

    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.stamps).get(&stamp_key(of)).cloned())
    }
}
