//! The SKU catalogue port: SKU metadata (create, update, stop-sale, list) and the admin stamps
//! of who wrote it.

use super::{AdminStamp, Stamped};
pub use crate::domain::catalogue::{SkuControls, SkuMeta};
use crate::domain::Sku;
use async_trait::async_trait;
use std::collections::HashMap;

/// SKU metadata in the stock table (owned by the stock service).
///
/// The `_as` writes (here and [`super::Campaigns::write_campaign_as`]) record who asked
/// (security review L7): the same writes, the record stamped with `by` in the same request
/// (DynamoDB: attributes `ub`, `ua`, `ut` of the item put). A store that keeps no stamps writes
/// them unstamped. A later write that replaces the record without a stamp drops it; every admin
/// path stamps.
#[async_trait]
pub trait Catalogue: Send + Sync {
    /// Metadata of the given SKUs that exist (one batch read).
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>>;
    /// Metadata for public reads: eventually consistent (half the read cost; may lag a write by
    /// about a second). Admin views and every decision use the consistent reads above.
    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        self.get_skus(skus).await
    }
    /// Writes metadata: create when `expected_version` is `None`, else conditional on it.
    /// Creates shard items `0..meta.slots` that do not exist yet. `false` = lost a race.
    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool>;
    /// [`Self::put_sku`], stamped.
    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        let _ = by;
        self.put_sku(meta, expected_version).await
    }
    /// Stop-sale on or off: the metadata (conditional on `expected_version`) and the flag on
    /// every shard `0..meta.slots`, in one transaction. `false` = lost a race.
    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool>;
    /// [`Self::set_sku_paused`], stamped.
    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        let _ = by;
        self.set_sku_paused(meta, expected_version).await
    }
    /// Every SKU, from the sparse SKU index.
    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>>;
    /// The stamp the record carries (a consistent read), if any.
    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        let _ = of;
        Ok(None)
    }
}
