//! Stock administration and the stock view (docs/architecture.md, "HTTP contract"): SKU metadata, shard count changes,
//! audited adjustments.

use crate::app::App;
use crate::clock;
use crate::domain::allocation::{adjustment_pieces, spread};
use crate::domain::invariants::{ShardCounts, SkuSnapshot};
use crate::domain::journal::Cause;
use crate::domain::{Currency, Sku};
use crate::ports::{AdjustRejection, Adjustment, SkuMeta};

const ATTEMPTS: u32 = 10;

#[derive(Debug, Clone)]
pub struct SkuSpec {
    pub name: String,
    pub price: u64,
    pub currency: Currency,
    pub shards: u16,
    pub per_user_limit: Option<u32>,
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
    Store(#[from] anyhow::Error),
}

/// Creates or updates a SKU's metadata. A changed shard count redistributes `available` over the
/// new shards in one transaction; locked and sold units stay where their locks say.
/// `actor` is the admin's JWT `sub`, stamped on rebalanced shards for the journal.
pub async fn put_sku(app: &App, sku: &Sku, spec: &SkuSpec, actor: Option<&str>) -> Result<(SkuMeta, bool), AdminError> {
    for attempt in 1..=ATTEMPTS {
        let existing = app.stock.get_skus(std::slice::from_ref(sku)).await?.remove(sku);
        let Some(old) = existing else {
            let meta = SkuMeta {
                sku: sku.clone(),
                name: spec.name.clone(),
                price: spec.price,
                currency: spec.currency.clone(),
                shards: spec.shards,
                slots: spec.shards,
                per_user_limit: spec.per_user_limit,
                stocked: 0,
                version: 1,
                paused: false,
            };
            if app.stock.put_sku(&meta, None).await? {
                app.caches.forget_sku(sku);
                return Ok((meta, true));
            }
            super::backoff(attempt).await;
            continue;
        };
        let meta = SkuMeta {
            name: spec.name.clone(),
            price: spec.price,
            currency: spec.currency.clone(),
            shards: spec.shards,
            slots: old.slots.max(spec.shards),
            per_user_limit: spec.per_user_limit,
            version: old.version + 1,
            ..old.clone()
        };
        let done = if meta.shards == old.shards {
            app.stock.put_sku(&meta, Some(old.version)).await?
        } else {
            let counts = app.stock.read_shards(sku, old.slots).await?;
            let total: i64 = counts.iter().map(|c| c.available).sum();
            let mut target = spread(total, meta.shards);
            target.resize(usize::from(meta.slots), 0);
            let cause = Cause::new(format!("rebalance-v{}", meta.version), actor, "rebalance");
            app.stock.rebalance(&meta, old.version, &counts, &target, &cause).await?
        };
        if done {
            app.caches.forget_sku(sku);
            return Ok((meta, false));
        }
        super::backoff(attempt).await;
    }
    Err(AdminError::Contention)
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
) -> Result<bool, AdminError> {
    for attempt in 1..=ATTEMPTS {
        let meta = app
            .stock
            .get_skus(std::slice::from_ref(sku))
            .await?
            .remove(sku)
            .ok_or_else(|| AdminError::UnknownSku(sku.clone()))?;
        // When the SKU cannot give up the units, the transaction still runs with the whole delta
        // on shard 0 (its condition must fail): a replay of an adjustment that already removed
        // them is then told apart (Duplicate, 200) from a real shortfall (409).
        let available: Vec<i64> = if delta < 0 {
            app.stock.read_shards(sku, meta.slots).await?.iter().map(|c| c.available).collect()
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
        match app.stock.adjust(&adj, meta.version).await? {
            Ok(()) => {
                app.caches.forget_sku(sku);
                tracing::info!(sku = %sku, delta, adjustment_id, reason, "stock adjusted");
                return Ok(true);
            }
            Err(AdjustRejection::Duplicate { delta: d }) if d == delta => return Ok(false),
            Err(AdjustRejection::Duplicate { .. }) => return Err(AdminError::AdjustmentReused),
            Err(AdjustRejection::ShardShort) if short => return Err(AdminError::Insufficient(-delta)),
            Err(AdjustRejection::ShardShort | AdjustRejection::Conflict) => super::backoff(attempt).await,
        }
    }
    Err(AdminError::Contention)
}

/// Stop-sale on or off: the metadata and the flag on every shard in one transaction, so the next
/// freeze's condition sees it.
pub async fn set_paused(app: &App, sku: &Sku, paused: bool) -> Result<SkuMeta, AdminError> {
    for attempt in 1..=ATTEMPTS {
        let old = app
            .stock
            .get_skus(std::slice::from_ref(sku))
            .await?
            .remove(sku)
            .ok_or_else(|| AdminError::UnknownSku(sku.clone()))?;
        if old.paused == paused {
            return Ok(old);
        }
        let next = SkuMeta { paused, version: old.version + 1, ..old.clone() };
        if app.stock.set_sku_paused(&next, old.version).await? {
            app.caches.forget_sku(sku);
            tracing::info!(sku = %sku, paused, "stop-sale switch");
            return Ok(next);
        }
        super::backoff(attempt).await;
    }
    Err(AdminError::Contention)
}

/// The stock view of one SKU: metadata and counters summed over every shard.
#[derive(Debug, Clone)]
pub struct StockView {
    pub meta: SkuMeta,
    pub totals: ShardCounts,
}

pub async fn view(app: &App, sku: &Sku) -> anyhow::Result<Option<StockView>> {
    let Some(meta) = app.stock.get_skus(std::slice::from_ref(sku)).await?.remove(sku) else {
        return Ok(None);
    };
    let counts = app.stock.read_shards(sku, meta.slots).await?;
    Ok(Some(totals(meta, counts)))
}

/// The same view from eventually consistent reads, for public pages.
pub async fn public_view(app: &App, sku: &Sku) -> anyhow::Result<Option<StockView>> {
    let Some(meta) = app.stock.get_skus_public(std::slice::from_ref(sku)).await?.remove(sku) else {
        return Ok(None);
    };
    let counts = app.stock.read_shards_public(sku, meta.slots).await?;
    Ok(Some(totals(meta, counts)))
}

fn totals(meta: SkuMeta, counts: Vec<ShardCounts>) -> StockView {
    let sku = meta.sku.clone();
    let totals = SkuSnapshot { sku, stocked: meta.stocked, shards: counts, per_user_limit: None }.totals();
    StockView { meta, totals }
}
