//! What a warehoused line's freeze reads first: each declared warehouse's cell with the units
//! available on its shards (docs/inventory-models.md, "Warehouses"). The SKU's strategy then
//! allocates the line over them (`domain::warehouse::allocate`); a warehouse never stocked
//! counts zero.

use super::{cached_metas, FreezeError};
use crate::context::App;
use crate::domain::warehouse::Warehouses;
use crate::domain::Sku;

/// The warehouse cells of `sku` in declared order, with their available units read
/// consistently (a stale count would only make the freeze's condition refuse and re-plan).
pub(super) async fn stock(app: &App, sku: &Sku, w: &Warehouses) -> Result<Vec<(Sku, i64)>, FreezeError> {
    let cells: Vec<Sku> = w.list.iter().map(|x| sku.warehouse_cell(x)).collect();
    let metas = cached_metas(app, &cells).await?;
    let mut out = Vec::with_capacity(cells.len());
    for c in cells {
        let available = match metas.get(&c) {
            // a paused warehouse gives nothing (its shards refuse the freeze anyway)
            Some(m) if m.paused => 0,
            Some(m) => app.shards.read_shards(&c, m.shard_slots()).await?.iter().map(|x| x.available).sum(),
            None => 0,
        };
        out.push((c, available));
    }
    Ok(out)
}

/// Whether a freeze refused as short on `cell` may be planned again: a warehouse cell emptied
/// between the read above and the write, while another warehouse may still hold the line.
pub(super) fn replannable(e: &FreezeError) -> bool {
    matches!(e, FreezeError::Insufficient(c) if c.warehouse_parent().is_some())
}
