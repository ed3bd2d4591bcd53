//! What the catalogue holds about a SKU: its metadata and sale controls, and the stamp of the
//! admin who last wrote a record. Plain data; the port that stores it is `ports::Catalogue`.

use super::model::{BundleChild, InventoryModel};
use super::{CampaignId, Currency, Sku};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminStamp {
    /// The admin's `sub`.
    pub by: String,
    /// What the write was: `put`, `pause`, `resume`, `adjust`.
    pub action: String,
    pub at_ms: i64,
}

impl AdminStamp {
    /// `by` did `action` at `at_ms` (the caller reads the clock: the domain has none).
    pub fn new(by: &str, action: &str, at_ms: i64) -> AdminStamp {
        AdminStamp { by: by.to_owned(), action: action.to_owned(), at_ms }
    }
}

/// A record an admin write stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamped<'a> {
    Sku(&'a Sku),
    Campaign(&'a CampaignId),
}

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
    pub supplier: Option<crate::supplier::SupplierConfig>,
    /// Sale controls (docs/operations.md): checkouts per second admitted per warm Lambda, and
    /// the available level below which a `LowStock` event is sent.
    pub controls: SkuControls,
    /// Campaigns with a ring-fenced item of this SKU (their cells hold its reserved units).
    pub fences: Vec<CampaignId>,
    /// A WAREHOUSE SKU's warehouses and allocation policy (docs/inventory-models.md, "Warehouses").
    pub warehouses: Option<super::warehouse::Warehouses>,
}

impl SkuMeta {
    /// Every shard item that may hold stock or a lock's piece: `slots`, or `shards` if a metadata
    /// written before `slots` existed says less.
    pub fn shard_slots(&self) -> u16 {
        self.slots.max(self.shards)
    }

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
            warehouses: None,
        }
    }
}

/// A SKU's sale controls; both optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkuControls {
    pub admission_rate: Option<u32>,
    pub low_stock_threshold: Option<i64>,
}
