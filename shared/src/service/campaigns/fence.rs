//! Ring-fenced campaign quota (docs/campaigns.md, "Ring-fenced quota"). A ring-fenced item's
//! units move out of its SKU's stock into the item's own cell (`<sku>!<campaign>`, a stock item
//! like any other) in one transaction with the SKU's (`adjust_pair`): ordinary checkouts draw on
//! the SKU's shards and cannot reach them, the campaign's checkouts draw on the cell. When the
//! campaign has ended (plus its grace), the reconcile sweep moves what the cell still has back.
//! Every move is an audited adjustment pair, so each cell and each SKU keeps its own identity
//! (`total = stocked`) and the SKU's view reads `total = available + reserved + locked + sold`.

use super::CampaignError;
use crate::clock;
use crate::context::App;
use crate::domain::allocation::{adjustment_pieces, spread};
use crate::domain::campaign::{Campaign, CampaignItem};
use crate::domain::model::InventoryModel;
use crate::domain::{CampaignId, Sku};
use crate::ports::{AdjustRejection, Adjustment, SkuMeta};

const ATTEMPTS: u32 = 10;

/// The adjustment id of a ring-fence move for campaign `c` (its creation, or quota adjustment
/// `adjustment`): `fence:` and `:` cannot appear in an admin's adjustment id
/// (`[A-Za-z0-9._-]`), so no admin adjustment can take it (review protocol-3 N6).
pub fn fence_id(c: &CampaignId, adjustment: Option<&str>) -> String {
    match adjustment {
        None => format!("fence:{c}"),
        Some(a) => format!("fence:{c}:{a}"),
    }
}

/// Moves `q` available units from `from` to `to` (both existing stock items) once per `id`.
/// `Ok(false)`: `from` has fewer than `q` available.
async fn transfer(app: &App, from: &Sku, to: &Sku, q: i64, id: &str, actor: Option<&str>) -> anyhow::Result<bool> {
    if q <= 0 {
        return Ok(true);
    }
    for attempt in 1..=ATTEMPTS {
        let metas = app.catalogue.get_skus(&[from.clone(), to.clone()]).await?;
        let (Some(src), Some(dst)) = (metas.get(from), metas.get(to)) else {
            anyhow::bail!("no stock item {from} or {to}")
        };
        let available: Vec<i64> = app.shards.read_shards(from, src.slots).await?.iter().map(|c| c.available).collect();
        if available.iter().sum::<i64>() < q {
            return Ok(false);
        }
        let (out_pieces, short) = adjustment_pieces(-q, src.slots, &available);
        if short {
            return Ok(false);
        }
        let in_pieces = spread(q, dst.shards).into_iter().enumerate().filter(|(_, d)| *d > 0);
        let adj = |sku: &Sku, delta: i64, pieces: Vec<(u16, i64)>| Adjustment {
            sku: sku.clone(),
            adjustment_id: id.to_owned(),
            delta,
            reason: format!("ring-fence {from} -> {to}"),
            actor: actor.map(str::to_owned),
            at_ms: clock::now_ms(),
            pieces,
        };
        let out = adj(from, -q, out_pieces);
        let into = adj(to, q, in_pieces.map(|(i, d)| (i as u16, d)).collect());
        match app.shards.adjust_pair(&out, &into).await? {
            // the same move again (a retry): done; another move under this id is never taken
            // for it (review protocol-3 N6)
            Err(AdjustRejection::Duplicate { delta }) if delta != -q => {
                anyhow::bail!("ring-fence transfer {id}: the id was used for another move ({delta}, not {})", -q)
            }
            Ok(()) | Err(AdjustRejection::Duplicate { .. }) => {
                app.caches.forget_sku(from);
                app.caches.forget_sku(to);
                return Ok(true);
            }
            Err(_) => super::super::backoff(attempt).await,
        }
    }
    anyhow::bail!("ring-fence transfer {id}: contention")
}

/// Whether a SKU's model may be ring-fenced: plain stock taken at order (its units are
/// interchangeable and held in its own shards).
pub fn fenceable(meta: &SkuMeta) -> bool {
    meta.model == InventoryModel::default() && meta.bundle.is_empty() && meta.supplier.is_none()
}

/// The cell of a ring-fenced item, created on first use with the item's quota shards.
async fn ensure_cell(app: &App, parent: &SkuMeta, c: &CampaignId, shards: u16) -> anyhow::Result<Sku> {
    let cell = parent.sku.reserve_cell(c);
    if app.catalogue.get_skus(std::slice::from_ref(&cell)).await?.contains_key(&cell) {
        return Ok(cell);
    }
    let meta = SkuMeta::cell_of(parent, cell.clone(), format!("{} (ring-fenced for {c})", parent.name), shards);
    // lost a race: the other writer created the same cell
    app.catalogue.put_sku(&meta, None).await?;
    Ok(cell)
}

/// Records on the SKU that campaign `c` holds a cell of it (its view reads the cell).
async fn note_fence(app: &App, sku: &Sku, c: &CampaignId) -> anyhow::Result<()> {
    for attempt in 1..=ATTEMPTS {
        let Some(meta) = app.catalogue.get_skus(std::slice::from_ref(sku)).await?.remove(sku) else { return Ok(()) };
        if meta.fences.contains(c) {
            return Ok(());
        }
        let mut next = SkuMeta { version: meta.version + 1, ..meta.clone() };
        next.fences.push(c.clone());
        if app.catalogue.put_sku(&next, Some(meta.version)).await? {
            app.caches.forget_sku(sku);
            return Ok(());
        }
        super::super::backoff(attempt).await;
    }
    anyhow::bail!("noting the ring-fence of {c} on {sku}: contention")
}

/// Fences `q` more units of a ring-fenced item (its creation, or a quota increase), once per
/// `id`. Refused when the SKU has fewer available.
pub async fn fence(
    app: &App,
    c: &CampaignId,
    item: &CampaignItem,
    q: i64,
    id: &str,
    actor: Option<&str>,
) -> Result<(), CampaignError> {
    let parent = app
        .catalogue
        .get_skus(std::slice::from_ref(&item.sku))
        .await?
        .remove(&item.sku)
        .ok_or_else(|| CampaignError::UnknownSku(item.sku.clone()))?;
    if !fenceable(&parent) {
        return Err(CampaignError::NotFenceable(item.sku.clone()));
    }
    let cell = ensure_cell(app, &parent, c, item.shards.max(1)).await?;
    if !transfer(app, &item.sku, &cell, q, id, actor).await? {
        return Err(CampaignError::Insufficient(q));
    }
    note_fence(app, &item.sku, c).await?;
    tracing::info!(campaign = %c, sku = %item.sku, units = q, "quota ring-fenced");
    Ok(())
}

/// Gives `q` fenced units back to the SKU (a quota decrease), once per `id`.
pub async fn unfence(
    app: &App,
    c: &CampaignId,
    sku: &Sku,
    q: i64,
    id: &str,
    actor: Option<&str>,
) -> anyhow::Result<bool> {
    transfer(app, &sku.reserve_cell(c), sku, q, id, actor).await
}

/// After a campaign's end plus grace, what its cells still have goes back to the SKUs (the
/// reconcile sweep; again on every sweep, for units released into a cell later). Returns the
/// units moved.
pub async fn return_ended(app: &App, campaigns: &[Campaign]) -> anyhow::Result<i64> {
    let now = clock::now_s();
    let mut moved = 0;
    for c in campaigns.iter().filter(|c| now >= c.ends_at.saturating_add(c.end_grace_s)) {
        for i in c.items.iter().filter(|i| i.reserve) {
            let cell = i.sku.reserve_cell(&c.id);
            let Some(meta) = app.catalogue.get_skus(std::slice::from_ref(&cell)).await?.remove(&cell) else { continue };
            let left: i64 = app.shards.read_shards(&cell, meta.slots).await?.iter().map(|s| s.available).sum();
            if left > 0 && transfer(app, &cell, &i.sku, left, &format!("end:{}:v{}", c.id, meta.version), None).await? {
                tracing::info!(campaign = %c.id, sku = %i.sku, units = left, "ring-fenced units returned at the campaign's end");
                moved += left;
            }
        }
    }
    Ok(moved)
}
