//! [`Catalogue`] over DynamoDB: `SKU#<sku>` metadata, the `skus` index and admin stamps.

use super::codec::*;
use super::keys::*;
use super::{read_stamp, DynamoStock, SKU_INDEX};
use crate::adapters::dynamo::item::{s, values};
use crate::domain::Sku;
use crate::ports::{AdminStamp, Stamped};
use crate::ports::{Catalogue, SkuMeta};
use async_trait::async_trait;
use std::collections::HashMap;

#[async_trait]
impl Catalogue for DynamoStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), true).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.put_sku_stamped(meta, expected_version, None).await
    }

    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        self.put_sku_stamped(meta, expected_version, Some(by)).await
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("SKU"))])).await?;
        pks.iter().map(|pk| Sku::from_stored(pk.trim_start_matches("SKU#")).map_err(anyhow::Error::from)).collect()
    }

    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), false).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        self.set_sku_paused_stamped(meta, expected_version, None).await
    }

    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        self.set_sku_paused_stamped(meta, expected_version, Some(by)).await
    }

    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        let pk = match of {
            Stamped::Sku(sku) => meta_pk(sku),
            Stamped::Campaign(id) => format!("CMP#{id}"),
        };
        Ok(self.batch_get(vec![pk], true).await?.first().and_then(read_stamp))
    }
}
