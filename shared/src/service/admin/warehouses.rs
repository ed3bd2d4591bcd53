//! The admin side of a WAREHOUSE SKU (docs/inventory-models.md, "Warehouses"): each warehouse
//! is a cell (`<sku>~<warehouse>`) created on its first adjustment, stocked, paused and viewed
//! on its own shards; the SKU's view sums its cells and shows each.

use super::{adjust_cell, known, metas_read, shards_read, AdminError, StockView};
use crate::context::App;
use crate::domain::invariants::{ShardCounts, SkuSnapshot};
use crate::domain::kind::Stocking;
use crate::domain::warehouse::Warehouse;
use crate::domain::Sku;
use crate::ports::SkuMeta;

/// One warehouse's counters in a SKU's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarehouseCounts {
    pub warehouse: Warehouse,
    pub counts: ShardCounts,
    pub paused: bool,
}

/// Applies a stock adjustment to one warehouse of a WAREHOUSE SKU, once per `adjustment_id`
/// (on the warehouse's cell, created with the SKU's shard count on its first adjustment).
/// Refused for an unknown SKU, a SKU not kept per warehouse and a warehouse it does not declare.
pub async fn adjust_warehouse(
    app: &App,
    sku: &Sku,
    warehouse: &Warehouse,
    adjustment_id: &str,
    delta: i64,
    reason: &str,
    actor: Option<&str>,
) -> Result<bool, AdminError> {
    let meta = known(app, sku).await?;
    let cell = declared_cell(&meta, warehouse)?;
    ensure_cell(app, &meta, warehouse, &cell).await?;
    adjust_cell(app, &cell, adjustment_id, delta, reason, actor).await
}

/// The cell of `warehouse` when `meta` is a WAREHOUSE SKU that declares it.
pub fn declared_cell(meta: &SkuMeta, warehouse: &Warehouse) -> Result<Sku, AdminError> {
    if Stocking::of(&meta.model) != Stocking::PerWarehouse {
        return Err(AdminError::NotAdjustable(format!(
            "{} is not kept per warehouse: the adjustment must not carry \"warehouse\"",
            meta.sku
        )));
    }
    if !meta.warehouses.as_ref().is_some_and(|w| w.list.contains(warehouse)) {
        return Err(AdminError::UnknownWarehouse(meta.sku.clone(), warehouse.clone()));
    }
    Ok(meta.sku.warehouse_cell(warehouse))
}

async fn ensure_cell(app: &App, parent: &SkuMeta, warehouse: &Warehouse, cell: &Sku) -> Result<(), AdminError> {
    if app.catalogue.get_skus(std::slice::from_ref(cell)).await?.contains_key(cell) {
        return Ok(());
    }
    let shards = parent.shards.clamp(1, crate::domain::allocation::MAX_SHARDS);
    let name = format!("{} in {warehouse}", parent.name);
    // a new warehouse of a paused SKU starts paused: its shards carry the stop-sale
    let meta = SkuMeta { paused: parent.paused, ..SkuMeta::cell_of(parent, cell.clone(), name, shards) };
    // lost a race with another adjustment creating it: it exists now either way
    app.catalogue.put_sku(&meta, None).await?;
    Ok(())
}

/// A stop-sale of a WAREHOUSE SKU: set on every warehouse cell that exists (their shards are
/// what a freeze's condition reads), before the SKU's own flag.
pub async fn pause_cells(app: &App, parent: &SkuMeta, paused: bool, actor: Option<&str>) -> Result<(), AdminError> {
    let cells: Vec<Sku> =
        parent.warehouses.iter().flat_map(|w| w.list.iter()).map(|w| parent.sku.warehouse_cell(w)).collect();
    let existing = app.catalogue.get_skus(&cells).await?;
    for cell in cells.iter().filter(|c| existing.contains_key(*c)) {
        Box::pin(super::set_paused_by(app, cell, paused, actor)).await?;
    }
    Ok(())
}

/// Adds each warehouse's counters to a WAREHOUSE SKU's view (its own shards hold nothing).
pub(super) async fn fill_view(app: &App, v: &mut StockView, consistent: bool) -> anyhow::Result<()> {
    let list = v.meta.warehouses.as_ref().map(|w| w.list.clone()).unwrap_or_default();
    let cells: Vec<Sku> = list.iter().map(|w| v.meta.sku.warehouse_cell(w)).collect();
    let metas = metas_read(app, &cells, consistent).await?;
    for (w, cell) in list.into_iter().zip(cells) {
        let (counts, paused) = match metas.get(&cell) {
            Some(m) => {
                let shards = shards_read(app, &cell, m.slots, consistent).await?;
                (SkuSnapshot { sku: cell, stocked: 0, shards, per_user_limit: None }.totals(), m.paused)
            }
            None => (ShardCounts::default(), v.meta.paused),
        };
        v.totals.available += counts.available;
        v.totals.locked += counts.locked;
        v.totals.sold += counts.sold;
        v.warehouses.push(WarehouseCounts { warehouse: w, counts, paused });
    }
    Ok(())
}
