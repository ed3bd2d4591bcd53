//! Inventory models: how a SKU's stock is kept and when it is taken (docs/inventory-models.md).
//!
//! A SKU's model has three parts: **management** (`QUANTITY` counters, or `UNLIMITED`: none),
//! **unit** (`SINGLE` counters for the SKU, `CALENDAR` counters per date, `BUNDLE`: the
//! children's counters) and **deduction** (`AT_ORDER`: frozen when the order is placed, or
//! `AT_PAYMENT`: taken when it is paid, or `AT_SHIPMENT`: held from the order and taken when it
//! ships). The one strategy port is [`Strategy`]: from a line it
//! names the stock *cells* (counter sets) the line draws on and how many units of each, and from
//! the cells' availability it answers the SKU's. Everything after that — shard allocation, the
//! one transaction of a freeze, confirm, release, restock, reconcile and the invariants — works
//! on cells and never asks which model produced them.

use super::Sku;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Most dates one calendar line, adjustment or view may name.
pub const MAX_DATES: usize = 366;
/// Most children of one bundle.
pub const MAX_CHILDREN: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Management {
    #[default]
    Quantity,
    Unlimited,
    /// Unique codes (vouchers, gift cards), each handed out once (docs/code-pools.md).
    CodePool,
    /// An outside supplier holds the stock: quoted at checkout, booked after the order is
    /// written (docs/suppliers.md).
    Supplier,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Unit {
    #[default]
    Single,
    Calendar,
    Bundle,
    /// Counted units per warehouse, each warehouse its own cell; a line is allocated to one
    /// warehouse or split over several by the SKU's policy (docs/inventory-models.md, "Warehouses").
    Warehouse,
    /// Codes a supplier issues when the order is paid: a SUPPLIER SKU only (docs/suppliers.md,
    /// "Codes issued by the supplier").
    Code,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Deduct {
    #[default]
    AtOrder,
    AtPayment,
    /// Held (frozen) when the order is placed, still held once it is paid, taken (sold) when it
    /// ships: a counted SINGLE SKU only (docs/inventory-models.md, "Deduction at shipment").
    AtShipment,
}

/// A SKU's inventory model; the default is what every SKU was before models existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InventoryModel {
    #[serde(default)]
    pub management: Management,
    #[serde(default)]
    pub unit: Unit,
    #[serde(default)]
    pub deduct: Deduct,
    /// `BACKORDER`: a checkout short of stock is accepted and the shortfall waits for a restock
    /// (docs/inventory-models.md, "Backorders (oversell allowed)"); a counted SINGLE SKU only.
    #[serde(default, skip_serializing_if = "Oversell::is_strict")]
    pub oversell: Oversell,
}

impl InventoryModel {
    pub fn is_default(&self) -> bool {
        *self == InventoryModel::default()
    }

    /// Whether the SKU has counters of its own (adjustments, shards, pause apply to it).
    pub fn has_own_stock(&self) -> bool {
        matches!(self.management, Management::Quantity | Management::CodePool) && self.unit == Unit::Single
    }

    /// Whether the SKU may be a bundle's child: counted units of its own, taken at order (a
    /// supplier's stock cannot be taken in the bundle's transaction, codes are handed out one
    /// line at a time, and an UNLIMITED SKU has no shard for the bundle to draw on).
    pub fn can_be_child(&self) -> bool {
        self.management == Management::Quantity
            && self.unit == Unit::Single
            && self.deduct == Deduct::AtOrder
            && self.oversell.is_strict()
    }

    /// Whether the SKU hands out unique codes from a pool (docs/code-pools.md).
    pub fn is_code_pool(&self) -> bool {
        self.management == Management::CodePool
    }

    /// Whether an outside supplier holds the stock (docs/suppliers.md).
    pub fn is_supplier(&self) -> bool {
        self.management == Management::Supplier
    }
}

/// One child of a bundle: every bundle unit takes `quantity` of `sku`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BundleChild {
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub sku: Sku,
    #[schema(minimum = 1, maximum = 10000)]
    pub quantity: u32,
}

/// Why a model (with its bundle list) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("an UNLIMITED SKU has no counters to keep per date or to take from children; use unit SINGLE")]
    UnlimitedUnit,
    #[error("an UNLIMITED SKU has no stock to deduct at payment; use deduct AT_ORDER")]
    UnlimitedAtPayment,
    #[error(
        "deduct AT_SHIPMENT holds and takes a SKU's own counted units: it needs management QUANTITY and unit SINGLE (not a calendar, bundle, unlimited, code-pool or supplier SKU)"
    )]
    AtShipmentShape,
    #[error("model.oversell BACKORDER needs management QUANTITY, unit SINGLE and deduct AT_ORDER (not a calendar, bundle, pay-time, at-shipment, unlimited, code-pool or supplier SKU)")]
    BackorderShape,
    #[error("a CODE_POOL SKU is unit SINGLE and takes its codes at order (deduct AT_ORDER)")]
    CodePoolShape,
    #[error("a CODE_POOL SKU's shard count is fixed when it is created (its codes live on the shards)")]
    CodePoolShards,
    #[error("a BUNDLE needs a non-empty \"bundle\" list of children")]
    EmptyBundle,
    #[error("only a BUNDLE lists children (\"bundle\")")]
    ChildrenWithoutBundle,
    #[error("a bundle lists at most {MAX_CHILDREN} children")]
    TooManyChildren,
    #[error("bundle child {0} is listed twice")]
    DuplicateChild(Sku),
    #[error("bundle child {0} must have a quantity in 1..=10000")]
    ChildQuantity(Sku),
    #[error("a bundle cannot contain itself ({0})")]
    Cycle(Sku),
    #[error("bundle child {0} is not a known SKU")]
    UnknownChild(Sku),
    #[error(
        "bundle child {0} must be a SINGLE QUANTITY SKU taken at order (not a bundle, calendar, pay-time, unlimited, code-pool or supplier SKU)"
    )]
    ChildModel(Sku),
    #[error("a SKU's inventory model is fixed when it is created ({0} is {1})")]
    ModelChanged(Sku, String),
    #[error("unit CODE is a SUPPLIER SKU whose codes the supplier issues at payment; use management SUPPLIER")]
    CodeUnitShape,
    #[error("a SUPPLIER SKU is booked one unit line at a time; use unit SINGLE (or CODE: codes issued at payment)")]
    SupplierUnit,
    #[error("a SUPPLIER SKU is booked when the order is placed; use deduct AT_ORDER")]
    SupplierAtPayment,
    #[error("a SUPPLIER SKU needs \"supplier\" settings ({{\"adapter\":\"simulated\", …}})")]
    SupplierSettingsMissing,
    #[error("only a SUPPLIER SKU (model management SUPPLIER) carries \"supplier\" settings")]
    SupplierWithoutModel,
    #[error("bad supplier settings: {0}")]
    SupplierSettings(String),
    #[error(
        "unit WAREHOUSE keeps counted units per warehouse, taken at order: it needs management QUANTITY and deduct AT_ORDER"
    )]
    WarehouseShape,
    #[error("a WAREHOUSE SKU needs a non-empty \"warehouses\" list")]
    WarehousesMissing,
    #[error("only a SKU of unit WAREHOUSE lists \"warehouses\" or an \"allocation\"")]
    WarehousesWithoutModel,
    #[error("a SKU lists at most {max} warehouses", max = super::warehouse::MAX_WAREHOUSES)]
    TooManyWarehouses,
    #[error("warehouse {0} is listed twice")]
    DuplicateWarehouse(String),
    #[error("warehouse {0} cannot be dropped: its units and the locks on it would be stranded")]
    WarehouseDropped(String),
}

/// Checks a model and its bundle list on their own (children are checked against their
/// metadata by [`check_children`]).
pub fn validate(sku: &Sku, model: &InventoryModel, bundle: &[BundleChild]) -> Result<(), ModelError> {
    // a shipment takes the SKU's own shards: a date or a bundle's children have no shipment of
    // their own to wait for, and unlimited, code and supplier stock is never held
    if model.deduct == Deduct::AtShipment && !(model.management == Management::Quantity && model.unit == Unit::Single) {
        return Err(ModelError::AtShipmentShape);
    }
    if !model.oversell.is_strict() && !may_backorder(model) {
        return Err(ModelError::BackorderShape);
    }
    if model.management == Management::Unlimited {
        if model.unit != Unit::Single {
            return Err(ModelError::UnlimitedUnit);
        }
        if model.deduct == Deduct::AtPayment {
            return Err(ModelError::UnlimitedAtPayment);
        }
    }
    if model.management == Management::CodePool && (model.unit != Unit::Single || model.deduct != Deduct::AtOrder) {
        return Err(ModelError::CodePoolShape);
    }
    if model.unit == Unit::Code && model.management != Management::Supplier {
        return Err(ModelError::CodeUnitShape);
    }
    if model.management == Management::Supplier {
        if !matches!(model.unit, Unit::Single | Unit::Code) {
            return Err(ModelError::SupplierUnit);
        }
        if model.deduct == Deduct::AtPayment {
            return Err(ModelError::SupplierAtPayment);
        }
    }
    match (model.unit, bundle.is_empty()) {
        (Unit::Bundle, true) => return Err(ModelError::EmptyBundle),
        (Unit::Bundle, false) => {}
        (_, false) => return Err(ModelError::ChildrenWithoutBundle),
        (_, true) => return Ok(()),
    }
    if bundle.len() > MAX_CHILDREN {
        return Err(ModelError::TooManyChildren);
    }
    let mut seen = std::collections::HashSet::new();
    for c in bundle {
        if &c.sku == sku {
            return Err(ModelError::Cycle(c.sku.clone()));
        }
        if c.quantity == 0 || c.quantity > 10_000 {
            return Err(ModelError::ChildQuantity(c.sku.clone()));
        }
        if !seen.insert(&c.sku) {
            return Err(ModelError::DuplicateChild(c.sku.clone()));
        }
    }
    Ok(())
}

/// Children must exist and be plain (SINGLE, taken at order): no nesting, so no cycle can form,
/// and a SKU's model never changes after creation, so none can form later.
pub fn check_children(
    bundle: &[BundleChild],
    model_of: impl Fn(&Sku) -> Option<InventoryModel>,
) -> Result<(), ModelError> {
    for c in bundle {
        match model_of(&c.sku) {
            None => return Err(ModelError::UnknownChild(c.sku.clone())),
            Some(m) if !m.can_be_child() => return Err(ModelError::ChildModel(c.sku.clone())),
            Some(_) => {}
        }
    }
    Ok(())
}

/// A calendar date, `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Day(chrono::NaiveDate);

impl Day {
    /// Strict `YYYY-MM-DD` (ten characters, a real date).
    pub fn parse(s: &str) -> Result<Day, String> {
        let ok_shape = s.len() == 10
            && s.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
        if !ok_shape {
            return Err(format!("{s:?} is not a date (YYYY-MM-DD)"));
        }
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").map(Day).map_err(|_| format!("{s:?} is not a real date"))
    }

    /// The UTC date of an epoch second. Beyond chrono's range (about ±262,000 years; every caller
    /// passes the clock's time, give or take days) the nearest representable date, as
    /// `clock::rfc3339` does: never 1970-01-01, which would put a far-future time in the past.
    pub fn of_epoch_s(s: i64) -> Day {
        match chrono::DateTime::from_timestamp(s, 0) {
            Some(t) => Day(t.date_naive()),
            None if s < 0 => Day(chrono::NaiveDate::MIN),
            None => Day(chrono::NaiveDate::MAX),
        }
    }

    pub fn next(self) -> Day {
        Day(self.0.succ_opt().unwrap_or(self.0))
    }

    /// Days from `self` to `to`, both included (0 when `to` is before `self`).
    pub fn span(self, to: Day) -> usize {
        usize::try_from((to.0 - self.0).num_days() + 1).unwrap_or(0)
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

impl Serialize for Day {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Day {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Day, D::Error> {
        let s = String::deserialize(d)?;
        Day::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Whether a SKU may be sold short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Oversell {
    /// Never: a short checkout is refused (409 insufficient_stock). The default.
    #[default]
    Strict,
    /// A short checkout is accepted; the shortfall waits for a restock (backordered).
    Backorder,
}

impl Oversell {
    pub fn is_strict(&self) -> bool {
        *self == Oversell::Strict
    }
}

/// Whether a model may declare `oversell: BACKORDER`: counted units of the SKU's own, taken at
/// order (a date, a bundle's children, codes, a supplier's or unlimited stock cannot be filled
/// later by a restock of the SKU; pay-time and at-shipment stock move at another step).
pub fn may_backorder(m: &InventoryModel) -> bool {
    m.management == Management::Quantity && m.unit == Unit::Single && m.deduct == Deduct::AtOrder
}

/// Checks a SKU's warehouses against its model: a `WAREHOUSE` unit needs a non-empty list of
/// distinct warehouses (at most [`MAX_WAREHOUSES`](super::warehouse::MAX_WAREHOUSES)) and counted units taken at order; no other
/// model may carry warehouses. `before` is the list already stored: a warehouse once declared
/// is never dropped (its units and the locks on it would be stranded).
pub fn validate_warehouses(
    model: &InventoryModel,
    warehouses: Option<&super::warehouse::Warehouses>,
    before: Option<&super::warehouse::Warehouses>,
) -> Result<(), ModelError> {
    if model.unit != Unit::Warehouse {
        return match warehouses {
            Some(_) => Err(ModelError::WarehousesWithoutModel),
            None => Ok(()),
        };
    }
    if model.management != Management::Quantity || model.deduct != Deduct::AtOrder {
        return Err(ModelError::WarehouseShape);
    }
    let w = warehouses.filter(|w| !w.list.is_empty()).ok_or(ModelError::WarehousesMissing)?;
    if w.list.len() > super::warehouse::MAX_WAREHOUSES {
        return Err(ModelError::TooManyWarehouses);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = w.list.iter().find(|x| !seen.insert(*x)) {
        return Err(ModelError::DuplicateWarehouse(dup.to_string()));
    }
    if let Some(gone) = before.into_iter().flat_map(|b| b.list.iter()).find(|x| !w.list.contains(x)) {
        return Err(ModelError::WarehouseDropped(gone.to_string()));
    }
    Ok(())
}

/// A line as a strategy sees it.
#[derive(Debug, Clone, Copy)]
pub struct LineSpec<'a> {
    pub sku: &'a Sku,
    pub quantity: u32,
    pub dates: &'a [Day],
    pub bundle: &'a [BundleChild],
    /// Today (UTC), for refusing past dates.
    pub today: Day,
    /// A warehoused SKU's warehouse cells with their available units, and its policy
    /// (docs/inventory-models.md, "Warehouses"); `None` for every other model.
    pub stock: Option<Pick<'a>>,
}

/// The cells a warehoused line may draw on (declared order) with their available units, read
/// just before the freeze plans it.
#[derive(Debug, Clone, Copy)]
pub struct Pick<'a> {
    pub cells: &'a [(Sku, i64)],
    pub allocation: super::warehouse::Allocation,
}

/// One stock cell a line draws on: `quantity` units of the counters of `sku` (on `date`, for a
/// calendar SKU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellDraw {
    pub sku: Sku,
    pub date: Option<Day>,
    pub quantity: u32,
    /// A ring-fenced campaign item's draw: on the campaign's cell (docs/campaigns.md).
    pub fence: Option<super::CampaignId>,
}

impl CellDraw {
    /// The SKU whose counters (metadata, shards) this draw moves.
    pub fn cell(&self) -> Sku {
        match (&self.fence, self.date) {
            (Some(c), _) => self.sku.reserve_cell(c),
            (None, Some(d)) => self.sku.cell(d),
            (None, None) => self.sku.clone(),
        }
    }
}

/// Why a line cannot be drawn under its SKU's model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineRefusal {
    #[error("{0} is sold by date: the line needs \"dates\"")]
    DatesMissing(Sku),
    #[error("{0} is not sold by date: the line must not carry \"dates\"")]
    DatesNotAllowed(Sku),
    #[error("{0}: date {1} is in the past")]
    PastDate(Sku, Day),
    #[error("{0}: date {1} is listed twice")]
    DuplicateDate(Sku, Day),
    #[error("{0}: at most {MAX_DATES} dates per line")]
    TooManyDates(Sku),
    #[error("{0}: the quantity times a child's quantity is too large")]
    Overflow(Sku),
    /// No warehouse (allocation `single`) or not all together (`split`) hold the line.
    #[error("not enough {0} available in its warehouses")]
    WarehousesShort(Sku),
}

/// What a SKU's view shows as available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Units(i64),
    Unlimited,
}

/// The strategy port: one implementation per unit/management, chosen by [`strategy`].
pub trait Strategy: Sync {
    /// The cells `line` draws on; empty when the model keeps no counters.
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal>;
    /// The SKU's availability from the availability of the cells of one unit of it, in the
    /// order [`Strategy::draws`] names them for a quantity of 1.
    fn availability(&self, cells: &[(CellDraw, i64)]) -> Availability;
}

struct Single;
struct Calendar;
struct Bundle;
struct Unlimited;
struct Warehoused;

fn no_dates(line: &LineSpec<'_>) -> Result<(), LineRefusal> {
    if line.dates.is_empty() {
        Ok(())
    } else {
        Err(LineRefusal::DatesNotAllowed(line.sku.clone()))
    }
}

impl Strategy for Single {
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal> {
        no_dates(line)?;
        Ok(vec![CellDraw { fence: None, sku: line.sku.clone(), date: None, quantity: line.quantity }])
    }
    fn availability(&self, cells: &[(CellDraw, i64)]) -> Availability {
        Availability::Units(cells.iter().map(|(_, a)| *a).sum())
    }
}

impl Strategy for Calendar {
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal> {
        if line.dates.is_empty() {
            return Err(LineRefusal::DatesMissing(line.sku.clone()));
        }
        if line.dates.len() > MAX_DATES {
            return Err(LineRefusal::TooManyDates(line.sku.clone()));
        }
        let mut dates = line.dates.to_vec();
        dates.sort();
        if let Some(w) = dates.windows(2).find(|w| w[0] == w[1]) {
            return Err(LineRefusal::DuplicateDate(line.sku.clone(), w[0]));
        }
        if let Some(d) = dates.iter().find(|d| **d < line.today) {
            return Err(LineRefusal::PastDate(line.sku.clone(), *d));
        }
        Ok(dates
            .into_iter()
            .map(|d| CellDraw { fence: None, sku: line.sku.clone(), date: Some(d), quantity: line.quantity })
            .collect())
    }
    fn availability(&self, cells: &[(CellDraw, i64)]) -> Availability {
        // a calendar SKU's own view has no single number: the minimum over the asked dates
        Availability::Units(cells.iter().map(|(_, a)| *a).min().unwrap_or(0))
    }
}

impl Strategy for Bundle {
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal> {
        no_dates(line)?;
        line.bundle
            .iter()
            .map(|c| {
                let q = c.quantity.checked_mul(line.quantity).ok_or_else(|| LineRefusal::Overflow(line.sku.clone()))?;
                Ok(CellDraw { fence: None, sku: c.sku.clone(), date: None, quantity: q })
            })
            .collect()
    }
    fn availability(&self, cells: &[(CellDraw, i64)]) -> Availability {
        let per_child =
            cells.iter().map(|(d, a)| if d.quantity == 0 { i64::MAX } else { a.max(&0) / i64::from(d.quantity) });
        Availability::Units(per_child.min().unwrap_or(0))
    }
}

impl Strategy for Unlimited {
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal> {
        no_dates(line)?;
        Ok(Vec::new())
    }
    fn availability(&self, _: &[(CellDraw, i64)]) -> Availability {
        Availability::Unlimited
    }
}

impl Strategy for Warehoused {
    fn draws(&self, line: &LineSpec<'_>) -> Result<Vec<CellDraw>, LineRefusal> {
        no_dates(line)?;
        let short = || LineRefusal::WarehousesShort(line.sku.clone());
        let pick = line.stock.ok_or_else(short)?;
        let available: Vec<i64> = pick.cells.iter().map(|(_, a)| *a).collect();
        let pieces = super::warehouse::allocate(pick.allocation, &available, line.quantity).map_err(|_| short())?;
        Ok(pieces
            .into_iter()
            .map(|(i, q)| CellDraw { fence: None, sku: pick.cells[i].0.clone(), date: None, quantity: q })
            .collect())
    }
    fn availability(&self, cells: &[(CellDraw, i64)]) -> Availability {
        // what the warehouses hold together (one `single` line may still need one that holds it all)
        Availability::Units(cells.iter().map(|(_, a)| (*a).max(0)).sum())
    }
}

/// The strategy of a model. Deduction is not a strategy: it only decides *when* the cells move
/// (docs/inventory-models.md, "Pay-time deduction").
pub fn strategy(model: &InventoryModel) -> &'static dyn Strategy {
    match (model.management, model.unit) {
        // the supplier holds the stock: no cells here either (docs/suppliers.md)
        (Management::Unlimited | Management::Supplier, _) | (_, Unit::Code) => &Unlimited,
        (Management::Quantity | Management::CodePool, Unit::Single) => &Single,
        (Management::Quantity | Management::CodePool, Unit::Calendar) => &Calendar,
        (Management::Quantity | Management::CodePool, Unit::Bundle) => &Bundle,
        (Management::Quantity | Management::CodePool, Unit::Warehouse) => &Warehoused,
    }
}

#[cfg(test)]
mod tests;
