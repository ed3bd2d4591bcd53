//! The campaigns port: campaign metadata and the quota shards of its items, with their audited
//! quota adjustments (docs/campaigns.md).

use super::{AdjustRejection, AdminStamp};
use crate::domain::campaign::Campaign;
use crate::domain::invariants::ShardCounts;
pub use crate::domain::stock_changes::CampaignAdjustment;
use crate::domain::{CampaignId, Sku};
use async_trait::async_trait;

/// Campaigns in the stock table (owned by the stock service).
#[async_trait]
pub trait Campaigns: Send + Sync {
    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>>;
    /// Creates (`expected_version` = `None`: metadata and every quota shard, the quota spread
    /// over them) or updates (metadata conditional on the version; window and pause flag
    /// copied onto every quota shard) a campaign in one transaction. `false` = lost a race.
    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool>;
    /// [`Self::write_campaign`], stamped.
    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        let _ = by;
        self.write_campaign(c, expected_version).await
    }
    /// Quota shard counters of one campaign item.
    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>>;
    /// Applies a quota adjustment together with the campaign metadata `next` (its item's quota
    /// already changed), conditional on the stored version being `expected_version`.
    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Every campaign, from the sparse index.
    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>>;
}
