//! [`Campaigns`] over DynamoDB: the campaign items themselves are written and read by
//! [`super::super::campaigns`]; the `skus` index lists campaigns under `skl = CMP`.

use super::keys::*;
use super::{DynamoStock, SKU_INDEX};
use crate::adapters::dynamo::item::{s, values};
use crate::domain::campaign::Campaign;
use crate::domain::invariants::ShardCounts;
use crate::domain::{CampaignId, Sku};
use crate::ports::AdminStamp;
use crate::ports::{AdjustRejection, CampaignAdjustment, Campaigns};
use async_trait::async_trait;

#[async_trait]
impl Campaigns for DynamoStock {
    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        self.campaign(id, consistent).await
    }

    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.put_campaign(c, expected_version, None).await
    }

    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        self.put_campaign(c, expected_version, Some(by)).await
    }

    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..shards).map(|i| quota_pk(id, sku, i)).collect(), consistent).await
    }

    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.campaign_adjustment(adj, next, expected_version).await
    }

    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("CMP"))])).await?;
        pks.iter().map(|pk| CampaignId::parse(pk.trim_start_matches("CMP#")).map_err(anyhow::Error::from)).collect()
    }
}
