//! Stock administration and the stock view (docs/architecture.md, "HTTP contract"): SKU metadata, shard count changes,
//! audited adjustments.

use crate::clock;
use crate::context::App;
use crate::domain::allocation::{adjustment_pieces, spread};
use crate::domain::invariants::{ShardCounts, SkuSnapshot};
use crate::domain::journal::Cause;
use crate::domain::kind::{Kind, Stocking};
use crate::domain::model::{self, Availability, BundleChild, CellDraw, Day, InventoryModel, LineSpec, ModelError};
use crate::domain::warehouse::Warehouses;
use crate::domain::{Currency, Sku};
use crate::ports::{AdjustRejection, Adjustment, AdminStamp, SkuMeta};
use std::collections::HashMap;

mod warehouses;
pub use warehouses::{adjust_warehouse, WarehouseCounts};

const ATTEMPTS: u32 = 10;

#[derive(Debug, Clone)]
pub struct SkuSpec {
    pub name: String,
    pub price: u64,
    pub currency: Currency,
    pub shards: u16,
    pub per_user_limit: Option<u32>,
    pub model: InventoryModel,
    pub bundle: Vec<BundleChild>,
    /// A SUPPLIER SKU's adapter and settings (docs/suppliers.md).
    pub supplier: Option<crate::domain::supplier::SupplierConfig>,
    /// Admission rate and low-stock threshold (docs/operations.md).
    pub controls: crate::ports::SkuControls,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("unknown SKU {0}")]
    UnknownSku(Sku),
    #[error("removing {0} units needs more than is available")]
    Insufficient(i64),
    #[error("adjustment id already used with another delta")]
    AdjustmentReused,
    #[error("contention; retry")]
    Contention,
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An adjustment that does not fit the SKU's model (a bundle or unlimited SKU has no
    /// stock of its own; a calendar SKU's needs dates; another SKU's must not carry them).
    #[error("{0}")]
    NotAdjustable(String),
    #[error("{0} has no warehouse {1}")]
    UnknownWarehouse(Sku, crate::domain::warehouse::Warehouse),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// The metadata of an existing SKU (consistent read).
async fn known(app: &App, sku: &Sku) -> Result<SkuMeta, AdminError> {
    app.catalogue
        .get_skus(std::slice::from_ref(sku))
        .await?
        .remove(sku)
        .ok_or_else(|| AdminError::UnknownSku(sku.clone()))
}

/// Creates or updates a SKU's metadata. A changed shard count redistributes `available` over the
/// new shards in one transaction; locked and sold units stay where their locks say.
/// `actor` is the admin's JWT `sub`, stamped on rebalanced shards for the journal.
pub async fn put_sku(app: &App, sku: &Sku, spec: &SkuSpec, actor: Option<&str>) -> Result<(SkuMeta, bool), AdminError> {
    put_sku_with(app, sku, spec, None, actor).await
}

/// [`put_sku`] with a WAREHOUSE SKU's warehouses and policy (docs/inventory-models.md, "Warehouses").
pub async fn put_sku_with(
    app: &App,
    sku: &Sku,
    spec: &SkuSpec,
    stores: Option<&Warehouses>,
    actor: Option<&str>,
) -> Result<(SkuMeta, bool), AdminError> {
    model::validate(sku, &spec.model, &spec.bundle)?;
    crate::domain::model::validate_warehouses(&spec.model, stores, None)?;
    crate::domain::supplier::validate(&spec.model, spec.supplier.as_ref())?;
    if !spec.bundle.is_empty() {
        let children: Vec<Sku> = spec.bundle.iter().map(|c| c.sku.clone()).collect();
        let found = app.catalogue.get_skus(&children).await?;
        model::check_children(&spec.bundle, |s| found.get(s).map(|m| m.model))?;
    }
    // A SKU without counters of its own (calendar, bundle, unlimited) has no shard items:
    // `shards` is what each calendar date's cell gets.
    let stocking = Stocking::of(&spec.model);
    let own = |shards: u16| if stocking.has_shards() { shards } else { 0 };
    for attempt in 1..=ATTEMPTS {
        let existing = app.catalogue.get_skus(std::slice::from_ref(sku)).await?.remove(sku);
        let Some(old) = existing else {
            let meta = new_meta(sku, spec, stores, own(spec.shards));
            if put_meta(app, &meta, None, actor).await? {
                app.caches.forget_sku(sku);
                return Ok((meta, true));
            }
            super::backoff(attempt).await;
            continue;
        };
        if old.model != spec.model {
            let was = serde_json::to_string(&old.model).map_err(anyhow::Error::from)?;
            return Err(ModelError::ModelChanged(sku.clone(), was).into());
        }
        crate::domain::model::validate_warehouses(&spec.model, stores, old.warehouses.as_ref())?;
        if !stocking.reshardable() && spec.shards != old.shards {
            return Err(ModelError::CodePoolShards.into());
        }
        let meta = SkuMeta {
            name: spec.name.clone(),
            price: spec.price,
            currency: spec.currency.clone(),
            shards: spec.shards,
            slots: old.slots.max(own(spec.shards)),
            per_user_limit: spec.per_user_limit,
            version: old.version + 1,
            bundle: spec.bundle.clone(),
            supplier: spec.supplier.clone(),
            controls: spec.controls,
            warehouses: stores.cloned(),
            ..old.clone()
        };
        let done = if meta.shards == old.shards || !stocking.has_shards() {
            put_meta(app, &meta, Some(old.version), actor).await?
        } else {
            let counts = app.shards.read_shards(sku, old.slots).await?;
            let total: i64 = counts.iter().map(|c| c.available).sum();
            let mut target = spread(total, meta.shards);
            target.resize(usize::from(meta.slots), 0);
            let cause = Cause::new(format!("rebalance-v{}", meta.version), actor, "rebalance");
            app.shards.rebalance(&meta, old.version, &counts, &target, &cause).await?
        };
        if done {
            app.caches.forget_sku(sku);
            return Ok((meta, false));
        }
        super::backoff(attempt).await;
    }
    Err(AdminError::Contention)
}

/// A new SKU's metadata: nothing stocked, version 1, `slots` shard items of its own.
fn new_meta(sku: &Sku, spec: &SkuSpec, stores: Option<&Warehouses>, slots: u16) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: stores.cloned(),
        sku: sku.clone(),
        name: spec.name.clone(),
        price: spec.price,
        currency: spec.currency.clone(),
        shards: spec.shards,
        slots,
        per_user_limit: spec.per_user_limit,
        stocked: 0,
        version: 1,
        paused: false,
        model: spec.model,
        bundle: spec.bundle.clone(),
        supplier: spec.supplier.clone(),
        controls: spec.controls,
    }
}

/// Applies a stock adjustment once per `adjustment_id`. Returns whether it was applied now
/// (`false` = a replay of the same adjustment). `actor` is the admin's JWT `sub` (kept on the
/// adjustment record and stamped on the shards for the journal).
pub async fn adjust(
    app: &App,
    sku: &Sku,
    adjustment_id: &str,
    delta: i64,
    reason: &str,
    actor: Option<&str>,
    dates: &[Day],
) -> Result<bool, AdminError> {
    let meta = known(app, sku).await?;
    match (Stocking::of(&meta.model), dates.is_empty()) {
        (Stocking::NoCounters, _) => {
            Err(AdminError::NotAdjustable(format!("{sku} is UNLIMITED: it has no stock to adjust")))
        }
        (Stocking::Codes, _) => Err(AdminError::NotAdjustable(format!(
            "{sku} is a CODE_POOL: its stock is its codes; upload them to /admin/skus/{sku}/codes"
        ))),
        (Stocking::AtSupplier, _) => Err(AdminError::NotAdjustable(format!(
            "{sku} is a SUPPLIER SKU: its supplier holds the stock (docs/suppliers.md); not adjustable"
        ))),
        (Stocking::Children, _) => {
            Err(AdminError::NotAdjustable(format!("{sku} is a BUNDLE: its stock is its children's; adjust them")))
        }
        (Stocking::PerWarehouse, _) => Err(AdminError::NotAdjustable(format!(
            "{sku} keeps its stock per warehouse: the adjustment needs \"warehouse\" (and no dates)"
        ))),
        (Stocking::PerDate, true) => {
            Err(AdminError::NotAdjustable(format!("{sku} is sold by date: the adjustment needs \"dates\"")))
        }
        (Stocking::OwnShards, false) => {
            Err(AdminError::NotAdjustable(format!("{sku} is not sold by date: the adjustment must not carry dates")))
        }
        (Stocking::PerDate, false) => {
            // One adjustment per date, each idempotent under the same id on its own cell: a
            // retry after a partial failure applies only the dates still missing.
            let mut applied = false;
            for d in dates {
                let cell = ensure_cell(app, &meta, *d).await?;
                applied |= adjust_cell(app, &cell, adjustment_id, delta, reason, actor).await?;
            }
            Ok(applied)
        }
        (Stocking::OwnShards, true) => {
            let applied = adjust_cell(app, sku, adjustment_id, delta, reason, actor).await?;
            // a restock of a BACKORDER SKU fills its oldest waiting orders; a fill that fails
            // here is finished by reconcile's SKU sweep (the adjustment stands either way)
            if delta > 0 && Kind::of(&meta.model) == Kind::Backorder {
                if let Err(e) = crate::service::stock::backorders::fill(app, sku).await {
                    tracing::warn!(sku = %sku, error = format!("{e:#}"), "backorder fill after restock failed");
                }
            }
            Ok(applied)
        }
    }
}

/// The cell of one date of a calendar SKU, created (with the SKU's shard count) on its first
/// adjustment.
async fn ensure_cell(app: &App, parent: &SkuMeta, day: Day) -> Result<Sku, AdminError> {
    let cell = parent.sku.cell(day);
    if app.catalogue.get_skus(std::slice::from_ref(&cell)).await?.contains_key(&cell) {
        return Ok(cell);
    }
    let shards = parent.shards.clamp(1, crate::domain::allocation::MAX_SHARDS);
    let meta = SkuMeta::cell_of(parent, cell.clone(), format!("{} on {day}", parent.name), shards);
    // lost a race with another adjustment creating it: it exists now either way
    app.catalogue.put_sku(&meta, None).await?;
    Ok(cell)
}

async fn adjust_cell(
    app: &App,
    sku: &Sku,
    adjustment_id: &str,
    delta: i64,
    reason: &str,
    actor: Option<&str>,
) -> Result<bool, AdminError> {
    for attempt in 1..=ATTEMPTS {
        let meta = known(app, sku).await?;
        // When the SKU cannot give up the units, the transaction still runs with the whole delta
        // on shard 0 (its condition must fail): a replay of an adjustment that already removed
        // them is then told apart (Duplicate, 200) from a real shortfall (409).
        let available: Vec<i64> = if delta < 0 {
            app.shards.read_shards(sku, meta.slots).await?.iter().map(|c| c.available).collect()
        } else {
            Vec::new()
        };
        let (pieces, short) = adjustment_pieces(delta, meta.shards, &available);
        let adj = Adjustment {
            sku: sku.clone(),
            adjustment_id: adjustment_id.to_owned(),
            delta,
            reason: reason.to_owned(),
            actor: actor.map(str::to_owned),
            at_ms: clock::now_ms(),
            pieces,
        };
        match app.shards.adjust(&adj, meta.version).await? {
            Ok(()) => {
                app.caches.forget_sku(sku);
                tracing::info!(sku = %sku, delta, adjustment_id, reason, "stock adjusted");
                return Ok(true);
            }
            Err(AdjustRejection::Duplicate { delta: d }) if d == delta => return Ok(false),
            Err(AdjustRejection::Duplicate { .. }) => return Err(AdminError::AdjustmentReused),
            Err(AdjustRejection::ShardShort) if short => return Err(AdminError::Insufficient(-delta)),
            Err(AdjustRejection::ShardShort | AdjustRejection::Conflict | AdjustRejection::CodeTaken) => {
                super::backoff(attempt).await
            }
        }
    }
    Err(AdminError::Contention)
}

/// Who last replaced the SKU's metadata through an admin write (security review L7).
pub async fn updated_by(app: &App, sku: &Sku) -> anyhow::Result<Option<AdminStamp>> {
    app.catalogue.admin_stamp(crate::ports::Stamped::Sku(sku)).await
}

/// A metadata put, stamped with the admin who asked when there is one (security review L7).
async fn put_meta(app: &App, meta: &SkuMeta, expected: Option<u64>, actor: Option<&str>) -> anyhow::Result<bool> {
    match actor {
        Some(a) => app.catalogue.put_sku_as(meta, expected, &AdminStamp::new(a, "put", crate::clock::now_ms())).await,
        None => app.catalogue.put_sku(meta, expected).await,
    }
}

/// Stop-sale on or off: the metadata and the flag on every shard in one transaction, so the next
/// freeze's condition sees it.
pub async fn set_paused(app: &App, sku: &Sku, paused: bool) -> Result<SkuMeta, AdminError> {
    set_paused_by(app, sku, paused, None).await
}

/// [`set_paused`] by an admin: the metadata records the caller's `sub` (security review L7).
pub async fn set_paused_by(app: &App, sku: &Sku, paused: bool, actor: Option<&str>) -> Result<SkuMeta, AdminError> {
    for attempt in 1..=ATTEMPTS {
        let old = known(app, sku).await?;
        if old.paused == paused {
            return Ok(old);
        }
        if !Stocking::of(&old.model).pausable() {
            // the flag lives on the shards a freeze writes; a calendar or bundle SKU's are its
            // dates' and children's (docs/inventory-models.md, "Stop-sale")
            return Err(AdminError::NotAdjustable(format!(
                "{sku} keeps its stock on its dates or children: pause those, or the campaign it sells in"
            )));
        }
        if Stocking::of(&old.model) == Stocking::PerWarehouse {
            warehouses::pause_cells(app, &old, paused, actor).await?;
        }
        let next = SkuMeta { paused, version: old.version + 1, ..old.clone() };
        let written = match actor {
            Some(a) => {
                let by = AdminStamp::new(a, if paused { "pause" } else { "resume" }, crate::clock::now_ms());
                app.catalogue.set_sku_paused_as(&next, old.version, &by).await?
            }
            None => app.catalogue.set_sku_paused(&next, old.version).await?,
        };
        if written {
            app.caches.forget_sku(sku);
            tracing::info!(sku = %sku, paused, "stop-sale switch");
            return Ok(next);
        }
        super::backoff(attempt).await;
    }
    Err(AdminError::Contention)
}

/// The stock view of one SKU: metadata and counters summed over every shard of its own, and
/// what its model says is available (docs/inventory-models.md, "Views").
#[derive(Debug, Clone)]
pub struct StockView {
    /// A BACKORDER SKU's backlog (the admin's consistent view only).
    pub backlog: Option<crate::domain::backorder::Backlog>,
    pub meta: SkuMeta,
    pub totals: ShardCounts,
    /// `None` when no single number is true: an UNLIMITED SKU (see `meta.model`), or a calendar
    /// SKU (its dates each have their own, `GET /skus/{sku}/calendar`).
    pub available: Option<i64>,
    /// Each shard's counters, as read.
    pub shards: Vec<ShardCounts>,
    /// Units ring-fenced for campaigns and not sold: the `available` of the SKU's campaign
    /// cells (whose `locked` and `sold` are in `totals`; docs/campaigns.md).
    pub reserved: i64,
    /// A WAREHOUSE SKU's warehouses, each with its counters (summed into `totals`).
    pub warehouses: Vec<WarehouseCounts>,
}

pub async fn view(app: &App, sku: &Sku) -> anyhow::Result<Option<StockView>> {
    view_with(app, sku, true).await
}

/// The same view from eventually consistent reads, for public pages.
pub async fn public_view(app: &App, sku: &Sku) -> anyhow::Result<Option<StockView>> {
    view_with(app, sku, false).await
}

async fn metas_read(app: &App, skus: &[Sku], consistent: bool) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
    if consistent {
        app.catalogue.get_skus(skus).await
    } else {
        app.catalogue.get_skus_public(skus).await
    }
}

async fn shards_read(app: &App, sku: &Sku, slots: u16, consistent: bool) -> anyhow::Result<Vec<ShardCounts>> {
    if consistent {
        app.shards.read_shards(sku, slots).await
    } else {
        app.shards.read_shards_public(sku, slots).await
    }
}

async fn view_with(app: &App, sku: &Sku, consistent: bool) -> anyhow::Result<Option<StockView>> {
    let Some(meta) = metas_read(app, std::slice::from_ref(sku), consistent).await?.remove(sku) else {
        return Ok(None);
    };
    let counts = shards_read(app, sku, meta.slots, consistent).await?;
    let waits = consistent && Kind::of(&meta.model) == Kind::Backorder;
    let mut v = totals(meta, counts);
    if waits {
        v.backlog = Some(app.locks.read_backlog(sku).await?);
    }
    let cells: Vec<Sku> = v.meta.fences.iter().map(|c| sku.reserve_cell(c)).collect();
    if !cells.is_empty() {
        for (cell, m) in metas_read(app, &cells, consistent).await? {
            for c in shards_read(app, &cell, m.slots, consistent).await? {
                v.reserved += c.available;
                v.totals.locked += c.locked;
                v.totals.sold += c.sold;
            }
        }
    }
    let strategy = model::strategy(&v.meta.model);
    v.available = match Stocking::of(&v.meta.model) {
        Stocking::PerDate => None,
        Stocking::PerWarehouse => {
            warehouses::fill_view(app, &mut v, consistent).await?;
            Some(v.warehouses.iter().map(|w| w.counts.available.max(0)).sum())
        }
        Stocking::Children => {
            let one = LineSpec {
                sku,
                quantity: 1,
                dates: &[],
                bundle: &v.meta.bundle,
                today: Day::of_epoch_s(0),
                stock: None,
            };
            let draws = strategy.draws(&one).unwrap_or_default();
            let children: Vec<Sku> = draws.iter().map(|d| d.cell()).collect();
            let metas = metas_read(app, &children, consistent).await?;
            let mut cells = Vec::with_capacity(draws.len());
            for d in draws {
                let a = match metas.get(&d.sku) {
                    Some(m) if Stocking::of(&m.model) == Stocking::NoCounters => i64::MAX,
                    Some(m) => shards_read(app, &d.sku, m.slots, consistent).await?.iter().map(|c| c.available).sum(),
                    None => 0,
                };
                cells.push((d, a));
            }
            units(strategy.availability(&cells))
        }
        Stocking::OwnShards | Stocking::Codes | Stocking::NoCounters | Stocking::AtSupplier => {
            units(strategy.availability(&[(
                CellDraw { fence: None, sku: sku.clone(), date: None, quantity: 1 },
                v.totals.available,
            )]))
        }
    };
    Ok(Some(v))
}

fn units(a: Availability) -> Option<i64> {
    match a {
        Availability::Units(n) => Some(n),
        Availability::Unlimited => None,
    }
}

fn totals(meta: SkuMeta, counts: Vec<ShardCounts>) -> StockView {
    let sku = meta.sku.clone();
    let totals = SkuSnapshot { sku, stocked: meta.stocked, shards: counts.clone(), per_user_limit: None }.totals();
    StockView {
        meta,
        available: Some(totals.available),
        totals,
        shards: counts,
        reserved: 0,
        warehouses: Vec::new(),
        backlog: None,
    }
}

/// One date of a calendar SKU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateCounts {
    pub date: Day,
    pub counts: ShardCounts,
}

/// Most dates one view of `GET /skus/{sku}/calendar` spans (security review 3, M3). The route
/// is anonymous: one request reads at most this many dates' metadata and shards, instead of a
/// year's (`model::MAX_DATES`, which still bounds an order line and an adjustment).
pub const CALENDAR_VIEW_DAYS: usize = 62;

/// A calendar SKU's per-date counters ([`calendar`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarCounts {
    /// Whether the SKU is sold by date; when not, `dates` is empty and nothing else was read.
    pub by_date: bool,
    pub dates: Vec<DateCounts>,
}

/// The warm-Lambda cache keys of a calendar SKU's kind and of one of its dates.
fn calendar_key(sku: &Sku) -> String {
    format!("calendar/{sku}")
}

fn calendar_date_key(sku: &Sku, day: Day) -> String {
    format!("calendar/{sku}/{day}")
}

/// What the cache holds for one date: `[available, locked, sold]`.
fn cached_counts(app: &App, key: &str, now_ms: i64) -> Option<ShardCounts> {
    let v = app.caches.public(key, now_ms, app.config.public_cache_ms)?;
    let n: [i64; 3] = serde_json::from_value(v).ok()?;
    Some(ShardCounts { available: n[0], locked: n[1], sold: n[2] })
}

/// Per-date counters of a calendar SKU over `from..=to` (public, eventually consistent reads),
/// at most [`CALENDAR_VIEW_DAYS`] dates from `from`; a date never stocked counts zero. `None`
/// for an unknown SKU.
///
/// The SKU's kind and each date's counters are kept in the warm-Lambda public cache for
/// `public_cache_ms`, per `(sku, date)`: repeated, overlapping or shifted ranges read only the
/// dates this Lambda has not seen within that time, and concurrent misses wait for one read
/// (the lock the SKU view's cache takes). So a flood of calendar requests costs the stock table
/// at most one read of each date per Lambda per `public_cache_ms`.
pub async fn calendar(app: &App, sku: &Sku, from: Day, to: Day) -> anyhow::Result<Option<CalendarCounts>> {
    let mut days = Vec::new();
    let mut d = from;
    while d <= to && days.len() < CALENDAR_VIEW_DAYS {
        days.push(d);
        d = d.next();
    }
    let now = clock::now_ms();
    let ttl = app.config.public_cache_ms;
    let cached = |now: i64| -> (Option<bool>, HashMap<Day, ShardCounts>) {
        let by_date = app.caches.public(&calendar_key(sku), now, ttl).and_then(|v| v.as_bool());
        let dates =
            days.iter().filter_map(|d| Some((*d, cached_counts(app, &calendar_date_key(sku, *d), now)?))).collect();
        (by_date, dates)
    };
    let (mut by_date, mut have) = cached(now);
    if by_date != Some(false) && (by_date.is_none() || have.len() < days.len()) {
        // one refresh at a time; a concurrent miss finds what the first one read
        let _refresh = app.caches.public_refresh.lock().await;
        (by_date, have) = cached(clock::now_ms());
        if by_date.is_none() {
            let Some(meta) = app.catalogue.get_skus_public(std::slice::from_ref(sku)).await?.remove(sku) else {
                return Ok(None);
            };
            let per_date = Stocking::of(&meta.model) == Stocking::PerDate;
            app.caches.put_public(&calendar_key(sku), &serde_json::Value::Bool(per_date), clock::now_ms());
            by_date = Some(per_date);
        }
        if by_date == Some(true) {
            let missing: Vec<(Day, Sku)> =
                days.iter().filter(|d| !have.contains_key(d)).map(|d| (*d, sku.cell(*d))).collect();
            let cells: Vec<Sku> = missing.iter().map(|(_, c)| c.clone()).collect();
            let metas = if cells.is_empty() { HashMap::new() } else { app.catalogue.get_skus_public(&cells).await? };
            // every missing date's shards in one batched read (BatchGetItem, 100 keys a request)
            let stocked: Vec<(Sku, u16)> =
                cells.iter().filter_map(|cell| metas.get(cell).map(|m| (cell.clone(), m.slots))).collect();
            let mut counts: HashMap<Sku, Vec<ShardCounts>> = stocked
                .iter()
                .map(|(c, _)| c.clone())
                .zip(app.shards.read_many_shards_public(&stocked).await?)
                .collect();
            let at = clock::now_ms();
            for (day, cell) in missing {
                let shards = counts.remove(&cell).unwrap_or_default();
                let c = SkuSnapshot { sku: cell, stocked: 0, shards, per_user_limit: None }.totals();
                app.caches.put_public(
                    &calendar_date_key(sku, day),
                    &serde_json::json!([c.available, c.locked, c.sold]),
                    at,
                );
                have.insert(day, c);
            }
        }
    }
    if by_date != Some(true) {
        return Ok(Some(CalendarCounts { by_date: false, dates: Vec::new() }));
    }
    let dates =
        days.iter().map(|d| DateCounts { date: *d, counts: have.get(d).copied().unwrap_or_default() }).collect();
    Ok(Some(CalendarCounts { by_date: true, dates }))
}

#[cfg(test)]
mod tests;
