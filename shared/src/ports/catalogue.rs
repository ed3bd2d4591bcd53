//! The SKU catalogue port: SKU metadata (create, update, stop-sale, list) and the admin stamps
//! of who wrote it.

use super::{AdminStamp, Stamped};
use crate::domain::model::{BundleChild, InventoryModel};
use crate::domain::{CampaignId, Currency, Sku};
use async_trait::async_trait;
use std::collections::HashMap;

/// SKU metadata (docs/architecture.md, "Data model").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkuMeta {
    pub sku: Sku,
    pub name: String,
    pub price: u64,
    pub currency: Currency,
    /// Shards freezes allocate from (1..=64).
    pub shards: u16,
    /// Shard items that exist (high-water mark of `shards`); the stock view sums all of them,
    /// because locks taken before a shard-count reduction still point at the old shards.
    pub slots: u16,
    pub per_user_limit: Option<u32>,
    /// Net units added through adjustments (invariant 1: total must equal it).
    pub stocked: i64,
    /// Incremented on every metadata write; writes are conditional on it.
    pub version: u64,
    /// Stop-sale: copied onto every shard, where the freeze condition reads it.
    pub paused: bool,
    /// How the stock is kept and taken (docs/inventory-models.md); fixed at creation.
    pub model: InventoryModel,
    /// A BUNDLE's children.
    pub bundle: Vec<BundleChild>,
    /// A SUPPLIER SKU's adapter and settings (docs/suppliers.md).
    pub supplier: Option<crate::domain::supplier::SupplierConfig>,
    /// Sale controls (docs/operations.md): checkouts per second admitted per warm Lambda, and
    /// the available level below which a `LowStock` event is sent.
    pub controls: SkuControls,
    /// Campaigns with a ring-fenced item of this SKU (their cells hold its reserved units).
    pub fences: Vec<CampaignId>,
}

impl SkuMeta {
    /// A stock cell of `parent` (a calendar date's, a ring-fence's): plain stock with the
    /// parent's price and currency, `shards` shards, nothing stocked yet.
    pub fn cell_of(parent: &SkuMeta, sku: Sku, name: String, shards: u16) -> SkuMeta {
        SkuMeta {
            sku,
            name,
            price: parent.price,
            currency: parent.currency.clone(),
            shards,
            slots: shards,
            per_user_limit: None,
            stocked: 0,
            version: 1,
            paused: false,
            model: InventoryModel::default(),
            bundle: Vec::new(),
            supplier: None,
            controls: SkuControls::default(),
            fences: Vec::new(),
        }
    }
}

/// A SKU's sale controls; both optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkuControls {
    pub admission_rate: Option<u32>,
    pub low_stock_threshold: Option<i64>,
}

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
