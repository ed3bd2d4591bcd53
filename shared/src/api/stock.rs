//! Stock: `PUT /admin/skus/{sku}`, `POST /admin/skus/{sku}/adjustments`, `GET /skus/{sku}`.

use super::fields;
use crate::domain::model::{BundleChild, Day, InventoryModel, Management};
use crate::domain::supplier::SupplierConfig;
use crate::domain::warehouse::{Allocation, Warehouse, Warehouses};
use crate::domain::Currency;
use crate::service::admin::{SkuSpec, StockView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `PUT /admin/skus/{sku}`: creates a SKU with no stock, or updates its metadata.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSkuRequest {
    #[serde(deserialize_with = "fields::sku_name")]
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: String,
    /// Unit price in minor units of `currency`.
    #[serde(deserialize_with = "fields::price")]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub price: u64,
    #[schema(value_type = String, pattern = "^[A-Z]{3}$", example = "EUR")]
    pub currency: Currency,
    /// Stock counters the SKU is split over, so concurrent checkouts do not contend; default 1.
    #[serde(default = "one", deserialize_with = "fields::shards")]
    #[schema(value_type = Option<u16>, minimum = 1, maximum = 64)]
    pub shards: u16,
    /// Most units of this SKU one user may hold in open and paid orders.
    #[serde(default, deserialize_with = "fields::per_user_limit")]
    #[schema(minimum = 1, maximum = 10000)]
    pub per_user_limit: Option<u32>,
    /// How the stock is kept and taken; each part defaults (`QUANTITY`, `SINGLE`, `AT_ORDER`).
    /// Fixed when the SKU is created.
    #[serde(default)]
    pub model: Option<InventoryModel>,
    /// A `BUNDLE`'s children: plain SKUs, each unit of the bundle taking `quantity` of each.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub bundle: Option<Vec<BundleChild>>,
    /// A `SUPPLIER` SKU's adapter and its settings (docs/suppliers.md); required for, and only
    /// for, management `SUPPLIER`.
    #[serde(default)]
    pub supplier: Option<SupplierConfig>,
    /// Checkouts per second admitted per warm Lambda; more answer 429 `rate_limited` before
    /// any stock is touched (docs/operations.md). Absent: no limit.
    #[serde(default, deserialize_with = "fields::admission_rate")]
    #[schema(minimum = 1, maximum = 100000)]
    pub admission_rate: Option<u32>,
    /// A `LowStock` event is sent once each time available stock falls below this.
    #[serde(default, deserialize_with = "fields::low_stock_threshold")]
    #[schema(minimum = 1, maximum = 1000000000_i64)]
    pub low_stock_threshold: Option<i64>,
    /// A `WAREHOUSE` SKU's warehouses, in preference order (required for, and only for, unit
    /// `WAREHOUSE`); one may be added later, none dropped.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 8)]
    pub warehouses: Option<Vec<Warehouse>>,
    /// How a `WAREHOUSE` SKU's order line is allocated: `single` (default: one warehouse that
    /// holds the whole line) or `split` (as few warehouses as possible).
    #[serde(default)]
    pub allocation: Option<Allocation>,
}

impl PutSkuRequest {
    /// The warehouses and policy the request names (`None` when it names neither).
    pub fn stores(&self) -> Option<Warehouses> {
        match (&self.warehouses, self.allocation) {
            (None, None) => None,
            (list, allocation) => {
                Some(Warehouses { list: list.clone().unwrap_or_default(), allocation: allocation.unwrap_or_default() })
            }
        }
    }
}

fn one() -> u16 {
    1
}

impl From<PutSkuRequest> for SkuSpec {
    fn from(r: PutSkuRequest) -> Self {
        SkuSpec {
            name: r.name,
            price: r.price,
            currency: r.currency,
            shards: r.shards,
            per_user_limit: r.per_user_limit,
            model: r.model.unwrap_or_default(),
            bundle: r.bundle.unwrap_or_default(),
            supplier: r.supplier,
            controls: crate::ports::SkuControls {
                admission_rate: r.admission_rate,
                low_stock_threshold: r.low_stock_threshold,
            },
        }
    }
}

/// `POST /admin/skus/{sku}/adjustments`: adds (positive `delta`) or removes stock, once per
/// `adjustment_id`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentRequest {
    #[serde(deserialize_with = "fields::adjustment_id")]
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub adjustment_id: String,
    /// Units to add (positive) or remove (negative); never zero.
    #[serde(deserialize_with = "fields::delta")]
    #[schema(minimum = -1_000_000_000_i64, maximum = 1_000_000_000_i64)]
    pub delta: i64,
    /// Why, for the audit trail.
    #[serde(deserialize_with = "fields::reason")]
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub reason: String,
    /// For a SKU sold by date: the dates the delta applies to (each), at most 366.
    #[serde(default, deserialize_with = "fields::dates")]
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 366)]
    pub dates: Option<Vec<Day>>,
    /// For a `WAREHOUSE` SKU: the warehouse the delta applies to (required for such a SKU only).
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^[A-Za-z0-9_-]{1,16}$")]
    pub warehouse: Option<Warehouse>,
}

/// A SKU and its stock summed over its shards: `total = available + locked + sold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkuView {
    pub sku: String,
    pub name: String,
    pub price: u64,
    pub currency: String,
    pub total: i64,
    /// Units that can be ordered now: for a `BUNDLE` the fewest bundles its children make;
    /// `null` for an `UNLIMITED` SKU, a `SUPPLIER` SKU (its supplier answers at checkout) and
    /// one sold by date (see `GET /skus/{sku}/calendar`).
    pub available: Option<i64>,
    /// No stock is kept: any quantity can be ordered.
    pub unlimited: bool,
    /// Units ring-fenced for campaigns and not yet sold (`total = available + reserved +
    /// locked + sold`).
    #[serde(default)]
    pub reserved: i64,
    /// Units held by reservations and unpaid orders.
    pub locked: i64,
    pub sold: i64,
    pub per_user_limit: Option<u32>,
    pub shards: u16,
    /// Stop-sale: while true, no checkout may take this SKU.
    pub paused: bool,
    pub model: InventoryModel,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundle: Vec<BundleChild>,
    /// A `SUPPLIER` SKU's adapter and settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supplier: Option<SupplierConfig>,
    /// Checkouts per second admitted per warm Lambda (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_rate: Option<u32>,
    /// A `LowStock` event is sent each time `available` falls below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_stock_threshold: Option<i64>,
    /// The admin write that last replaced this record (in admin answers only; security review L7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<UpdatedBy>,
    /// A `WAREHOUSE` SKU's allocation policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<Allocation>,
    /// A `WAREHOUSE` SKU's warehouses in preference order, each with its counters (the SKU's
    /// `available`, `locked` and `sold` are their sums).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warehouses: Vec<WarehouseStock>,
    /// A `model.oversell: BACKORDER` SKU's backlog (admin views only; docs/inventory-models.md,
    /// "Backorders (oversell allowed)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<BacklogView>,
}

/// Units ordered short of stock and what became of them: `waiting = ordered - filled -
/// cancelled`, the units the orders in `orders` still wait for (oldest filled first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BacklogView {
    pub ordered: i64,
    pub filled: i64,
    pub cancelled: i64,
    pub waiting: i64,
    /// The reservation ids of the orders still waiting.
    pub orders: Vec<String>,
}

impl From<&crate::domain::backorder::Backlog> for BacklogView {
    fn from(b: &crate::domain::backorder::Backlog) -> Self {
        BacklogView {
            ordered: b.ordered,
            filled: b.filled,
            cancelled: b.cancelled,
            waiting: b.waiting(),
            orders: b.open.iter().map(|i| i.to_string()).collect(),
        }
    }
}

/// One warehouse of a `WAREHOUSE` SKU: `total = available + locked + sold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WarehouseStock {
    pub warehouse: String,
    pub total: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    /// Stop-sale on this warehouse's shards.
    pub paused: bool,
}

/// Who made an admin write, as the record keeps it: the admin's token `sub`, what the write was
/// (`put`, `pause`, `resume`, `adjust`) and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UpdatedBy {
    pub sub: String,
    pub action: String,
    #[schema(format = DateTime)]
    pub at: String,
}

impl From<&crate::ports::AdminStamp> for UpdatedBy {
    fn from(s: &crate::ports::AdminStamp) -> Self {
        UpdatedBy { sub: s.by.clone(), action: s.action.clone(), at: crate::clock::rfc3339(s.at_ms) }
    }
}

impl From<&StockView> for SkuView {
    fn from(v: &StockView) -> Self {
        SkuView {
            sku: v.meta.sku.as_str().to_owned(),
            name: v.meta.name.clone(),
            price: v.meta.price,
            currency: v.meta.currency.as_str().to_owned(),
            total: v.totals.available + v.reserved + v.totals.locked + v.totals.sold,
            reserved: v.reserved,
            available: v.available,
            unlimited: v.meta.model.management == Management::Unlimited,
            locked: v.totals.locked,
            sold: v.totals.sold,
            per_user_limit: v.meta.per_user_limit,
            shards: v.meta.shards,
            paused: v.meta.paused,
            model: v.meta.model,
            bundle: v.meta.bundle.clone(),
            supplier: v.meta.supplier.clone(),
            admission_rate: v.meta.controls.admission_rate,
            low_stock_threshold: v.meta.controls.low_stock_threshold,
            updated_by: None,
            allocation: v.meta.warehouses.as_ref().map(|w| w.allocation),
            backlog: v.backlog.as_ref().map(BacklogView::from),
            warehouses: v
                .warehouses
                .iter()
                .map(|w| WarehouseStock {
                    warehouse: w.warehouse.to_string(),
                    total: w.counts.available + w.counts.locked + w.counts.sold,
                    available: w.counts.available,
                    locked: w.counts.locked,
                    sold: w.counts.sold,
                    paused: w.paused,
                })
                .collect(),
        }
    }
}

/// One date of `GET /skus/{sku}/calendar`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CalendarDate {
    #[schema(value_type = String, example = "2027-03-01")]
    pub date: String,
    pub total: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
}

/// `GET /skus/{sku}/calendar?from=&to=`: per-date stock of a SKU sold by date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CalendarView {
    pub sku: String,
    pub dates: Vec<CalendarDate>,
}

impl CalendarView {
    pub fn new(sku: &str, dates: &[crate::service::admin::DateCounts]) -> Self {
        CalendarView {
            sku: sku.to_owned(),
            dates: dates
                .iter()
                .map(|d| CalendarDate {
                    date: d.date.to_string(),
                    total: d.counts.available + d.counts.locked + d.counts.sold,
                    available: d.counts.available,
                    locked: d.counts.locked,
                    sold: d.counts.sold,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;
    use serde_json::json;

    fn field<T: serde::de::DeserializeOwned + std::fmt::Debug>(v: serde_json::Value) -> Option<String> {
        parse::<T>(v.to_string().as_bytes()).unwrap_err().field
    }

    #[test]
    fn a_sku_spec_takes_defaults_and_refuses_what_is_out_of_bounds() {
        let s: PutSkuRequest = parse(br#"{"name":"Mug","price":0,"currency":"EUR","per_user_limit":null}"#).unwrap();
        assert_eq!((s.shards, s.per_user_limit), (1, None));
        let ok = json!({"name": "Mug", "price": 1, "currency": "EUR"});
        for (k, v) in [
            ("name", json!("")),
            ("name", json!("   ")),
            ("name", json!("a\u{7}b")),
            ("name", json!("x".repeat(201))),
            ("price", json!(-1)),
            ("price", json!(1_000_000_000_001u64)),
            ("price", json!(9_223_372_036_854_775_808u64)),
            ("price", json!(1.5)),
            ("currency", json!("euro")),
            ("shards", json!(0)),
            ("shards", json!(65)),
            ("shards", json!(u64::MAX)),
            ("per_user_limit", json!(0)),
            ("per_user_limit", json!(10_001)),
            ("per_user_limit", json!(-1)),
        ] {
            let mut b = ok.clone();
            b[k] = v.clone();
            assert_eq!(field::<PutSkuRequest>(b), Some(k.to_owned()), "{k}: {v}");
        }
    }

    #[test]
    fn a_delta_is_range_checked_without_overflow() {
        let adj = |d: serde_json::Value| json!({"adjustment_id": "a", "delta": d, "reason": "r"});
        for d in [json!(1), json!(-1), json!(fields::MAX_DELTA), json!(-fields::MAX_DELTA)] {
            assert!(parse::<AdjustmentRequest>(adj(d.clone()).to_string().as_bytes()).is_ok(), "{d}");
        }
        for d in [json!(0), json!(fields::MAX_DELTA + 1), json!(i64::MIN), json!(i64::MAX), json!(u64::MAX), json!(0.5)]
        {
            assert_eq!(field::<AdjustmentRequest>(adj(d.clone())).as_deref(), Some("delta"), "{d}");
        }
        let bad_id = json!({"adjustment_id": "a b", "delta": 1, "reason": "r"});
        assert_eq!(field::<AdjustmentRequest>(bad_id).as_deref(), Some("adjustment_id"));
    }
}

/// Counter triple of a shard, before or after one journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CountersBody {
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
}

impl From<crate::domain::invariants::ShardCounts> for CountersBody {
    fn from(c: crate::domain::invariants::ShardCounts) -> Self {
        CountersBody { available: c.available, locked: c.locked, sold: c.sold }
    }
}

/// One stock journal entry: one write of one shard's counters (docs/after-sale.md, "Stock journal").
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct JournalEntryBody {
    /// Entry key (time-ordered); a page cursor is one.
    pub id: String,
    pub sku: String,
    pub shard: u16,
    /// Set for a campaign quota shard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    pub before: CountersBody,
    pub after: CountersBody,
    /// Units moved (largest counter change).
    pub quantity: i64,
    /// Cause id: the order (reservation) id, the adjustment id, `rebalance-v<n>`; empty when a
    /// shard was created.
    pub cause: String,
    /// The admin's JWT `sub`, the buyer's user id (freeze), or `system`.
    pub actor: String,
    /// Move name: create, freeze, sell, release, retake, adjust, rebalance, …
    pub why: String,
    /// The admin's reason (adjustments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Epoch milliseconds of the write.
    pub at_ms: i64,
}

impl From<&crate::domain::journal::Entry> for JournalEntryBody {
    fn from(e: &crate::domain::journal::Entry) -> Self {
        JournalEntryBody {
            id: e.seq.clone(),
            sku: e.sku.to_string(),
            shard: e.shard,
            campaign_id: e.campaign.as_ref().map(|c| c.to_string()),
            before: e.before.into(),
            after: e.after.into(),
            quantity: e.quantity,
            cause: e.cause.clone(),
            actor: e.actor.clone(),
            why: e.why.clone(),
            reason: e.reason.clone(),
            at_ms: e.at_ms,
        }
    }
}

/// `GET /admin/skus/{sku}/journal`: a page of entries, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JournalPage {
    pub entries: Vec<JournalEntryBody>,
    /// Pass as `cursor` for the next (older) page; absent on the last one.
    pub next_cursor: Option<String>,
}

/// `POST /admin/skus/{sku}/codes`: a batch of codes for a `CODE_POOL` SKU (docs/code-pools.md).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeBatchRequest {
    /// Idempotency: the same id with the same codes answers the first upload's result (200).
    #[schema(pattern = "^[A-Za-z0-9._:-]{1,64}$")]
    pub batch_id: String,
    /// 1..=1000 codes, each 1..=128 characters, no control characters, no surrounding spaces.
    #[schema(min_items = 1, max_items = 1000)]
    pub codes: Vec<String>,
    /// When the batch's codes expire (RFC 3339, in the future): from then on they are never sold
    /// nor redeemed, and their owners see them `EXPIRED` (docs/code-pools.md, "Expiry"). Absent:
    /// they never expire.
    #[serde(default)]
    pub expire_time: Option<String>,
}

/// What a batch upload did. Duplicates (already in the pool, or twice in the batch) are
/// refused and shown masked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodeBatchView {
    pub sku: String,
    pub batch_id: String,
    pub added: u32,
    pub duplicates: u32,
    /// The first 100 duplicates, masked (`••••` and at most the last four characters).
    pub duplicate_codes: Vec<String>,
}

/// `GET /admin/skus/{sku}/codes`: a pool's counts (no code is ever shown here).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodePoolView {
    pub sku: String,
    /// Codes ever uploaded; `available + locked + sold + expired` equals it.
    pub uploaded: i64,
    /// Codes retired unsold because they expired (docs/code-pools.md, "Expiry").
    pub expired: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    /// `HOLDFAST_CODE_POOL_LOW`: below it the `CodePoolLow` alarm fires.
    pub low_water: i64,
    pub low: bool,
}

impl From<&crate::service::codes::PoolSummary> for CodePoolView {
    fn from(p: &crate::service::codes::PoolSummary) -> Self {
        CodePoolView {
            sku: p.sku.to_string(),
            uploaded: p.uploaded,
            expired: p.expired,
            available: p.available,
            locked: p.locked,
            sold: p.sold,
            low_water: p.low_water,
            low: p.available < p.low_water,
        }
    }
}
