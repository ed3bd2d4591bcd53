//! [`Campaigns`] in memory: campaign metadata, quota shards and quota adjustments.

use super::{quota_key, stamp_key, validate_items, MemoryStock, QuotaShard, State};
use crate::adapters::memory::lock;
use crate::domain::campaign::Campaign;
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::Cause;
use crate::domain::{CampaignId, Sku};
use crate::ports::{AdjustRejection, CampaignAdjustment, Campaigns};
use crate::ports::{AdminStamp, Stamped};
use async_trait::async_trait;

#[async_trait]
impl Campaigns for MemoryStock {
    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        let done = self.write_campaign(c, expected_version).await?;
        if done {
            lock(&self.stamps).insert(stamp_key(Stamped::Campaign(&c.id)), by.clone());
        }
        Ok(done)
    }

    async fn get_campaign(&self, id: &CampaignId, _consistent: bool) -> anyhow::Result<Option<Campaign>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).campaigns.get(id).cloned())
    }

    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let ok = match (expected_version, s.campaigns.get(&c.id)) {
            (None, None) => true,
            (Some(v), Some(old)) => old.version == v,
            _ => false,
        };
        if !ok {
            return Ok(false);
        }
        for item in &c.items {
            // each wave's shards carry the wave's window (docs/campaigns.md, "Waves")
            for (i, (sa, ea, av)) in item.shard_layout((c.starts_at, c.ends_at)).into_iter().enumerate() {
                let q = s.quota.entry((c.id.clone(), item.sku.clone(), i as u16)).or_insert_with(|| QuotaShard {
                    counts: ShardCounts { available: av, locked: 0, sold: 0 },
                    ..QuotaShard::default()
                });
                q.starts_at = sa;
                q.ends_at = ea;
                q.paused = c.paused;
            }
        }
        s.campaigns.insert(c.id.clone(), c.clone());
        Ok(true)
    }

    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        _consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..shards)
            .map(|i| s.quota.get(&(id.clone(), sku.clone(), i)).map(|q| q.counts).unwrap_or_default())
            .collect())
    }

    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        validate_items(adj.pieces.iter().map(|(i, _)| *i), 2)?;
        let mut s = lock(&self.state);
        let key = (adj.campaign_id.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.campaign_adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        if s.campaigns.get(&adj.campaign_id).is_none_or(|c| c.version != expected_version) {
            return Ok(Err(AdjustRejection::Conflict));
        }
        let shard_ok = |s: &State, i: u16, d: i64| {
            s.quota
                .get(&(adj.campaign_id.clone(), adj.sku.clone(), i))
                .is_some_and(|q| d >= 0 || q.counts.available >= -d)
        };
        if !adj.pieces.iter().all(|&(i, d)| shard_ok(&s, i, d)) {
            return Ok(Err(AdjustRejection::ShardShort));
        }
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for &(i, d) in &adj.pieces {
            if let Some(q) = s.quota.get_mut(&(adj.campaign_id.clone(), adj.sku.clone(), i)) {
                q.counts.available += d;
                s.causes.insert(quota_key(&adj.campaign_id, &adj.sku, i), cause.clone());
            }
        }
        s.campaigns.insert(next.id.clone(), next.clone());
        s.campaign_adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).campaigns.keys().cloned().collect())
    }
}
