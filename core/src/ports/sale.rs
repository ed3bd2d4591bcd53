//! The sale room's own small store (docs/operations.md): the global sales switch, the live
//! counters the console reads, the low-stock marks and the reconcile sweep's last report. Kept
//! apart from the stock table's port: none of it is on a checkout's write path.

use crate::domain::sale::SalesSwitch;
use crate::domain::Sku;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};

/// Counters by name (`ADD` semantics: a missing counter is 0).
pub type Counters = BTreeMap<String, i64>;

#[async_trait]
pub trait SaleStore: Send + Sync {
    /// The switch, read strongly consistently; `None` = never set (OPEN).
    async fn sales_switch(&self) -> anyhow::Result<Option<SalesSwitch>>;
    async fn put_sales_switch(&self, s: &SalesSwitch) -> anyhow::Result<()>;
    /// Adds `deltas` to the counters of the live item `key` (created when missing; expires at
    /// `expires_at` epoch seconds when given).
    async fn add_live(&self, key: &str, deltas: &Counters, expires_at: Option<i64>) -> anyhow::Result<()>;
    /// Sets counters of the live item `key` to these values (a last-seen time, say).
    async fn set_live(&self, key: &str, values: &Counters) -> anyhow::Result<()>;
    /// The counters of these live items (eventually consistent; missing items are absent).
    async fn read_live(&self, keys: &[String]) -> anyhow::Result<HashMap<String, Counters>>;
    /// Marks `sku` low (`true`) or not (`false`) if it is not marked so already: `true` = this
    /// call changed the mark (exactly one caller wins each crossing).
    async fn mark_low_stock(&self, sku: &Sku, low: bool) -> anyhow::Result<bool>;
}
