//! The stock service: freeze, confirm, release (docs/architecture.md, "Stock operations", "Hot SKUs").
//! Here: the request and error types and what a freeze reads first (metadata, campaigns, the
//! admission and fast-path refusals); the freeze itself in `freezing`, its re-planning after a
//! rejected write in `replanning`, and a lock's later changes in `lock_changes`.

use crate::clock;
use crate::context::App;
use crate::domain::campaign::{Campaign, GateRefusal};
use crate::domain::kind::{admit, Candidate, Holder, Kind, Refusal};
use crate::domain::model::{self, CellDraw, Day, LineRefusal, LineSpec, Pick};
use crate::domain::reservation::{Reservation, ReservationKind};
use crate::domain::{CampaignId, Quantity, ReservationId, Sku, UserId};
use crate::ports::SkuMeta;
use crate::telemetry::names;
use std::collections::HashMap;

pub mod backorders;
mod expired_codes;
mod freezing;
mod lock_changes;
mod replanning;
mod warehouses;
use freezing::replay;
pub use lock_changes::{confirm, release, restock, take_at_shipment, LockChange, LockError, OnReleased};

/// Attempts of the freeze loop before answering "busy, retry" (never "sold out").
const FREEZE_ATTEMPTS: u32 = 10;

/// One line of a freeze: `quantity` of `sku`, drawn on a campaign's quota when `campaign` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRequest {
    pub sku: Sku,
    pub quantity: Quantity,
    pub campaign: Option<CampaignId>,
    /// A calendar line's dates (each takes `quantity`).
    pub dates: Vec<Day>,
}

impl LineRequest {
    pub fn plain(sku: Sku, quantity: Quantity) -> Self {
        LineRequest { sku, quantity, campaign: None, dates: Vec::new() }
    }
}

#[derive(Debug, Clone)]
pub struct FreezeRequest {
    pub id: ReservationId,
    pub kind: ReservationKind,
    pub user: Option<UserId>,
    /// One per SKU, sorted by SKU.
    pub lines: Vec<LineRequest>,
    pub request_hash: String,
    pub expires_at: i64,
    /// The queue admission this checkout spends in its freeze (docs/waiting-room.md).
    pub admission: Option<(crate::domain::CampaignId, u64)>,
}

#[derive(Debug)]
pub enum Frozen {
    Created(Reservation),
    /// A reservation with this id and request already existed (in any status).
    Replayed(Reservation),
}

#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("unknown SKU {0}")]
    UnknownSku(Sku),
    /// For a calendar SKU the SKU is the date's cell (see [`Sku::calendar_parent`]).
    #[error("insufficient stock of {0}")]
    Insufficient(Sku),
    #[error(transparent)]
    Line(#[from] LineRefusal),
    #[error("{0} would be taken both at order and at payment in one order; order them separately")]
    MixedDeduction(Sku),
    /// The kinds of these lines may not be held this way together (docs/inventory-models.md,
    /// "Kinds and their lifecycle").
    #[error(transparent)]
    Admission(#[from] Refusal),
    #[error("purchase limit exceeded for {0}")]
    LimitExceeded(Sku),
    #[error("unknown campaign {0}")]
    UnknownCampaign(CampaignId),
    #[error("{0} is not part of campaign {1}")]
    NotInCampaign(Sku, CampaignId),
    #[error("the campaign quota of {0} is exhausted")]
    QuotaExhausted(Sku),
    #[error("the sale of {0} has not started")]
    SaleNotStarted(Sku),
    #[error("the sale of {0} has ended")]
    SaleEnded(Sku),
    #[error("the sale of {0} is paused")]
    SalePaused(Sku),
    #[error("too many pending checkouts; pay or cancel one first")]
    TooManyPending,
    /// The admission token was spent by a committed checkout (docs/waiting-room.md).
    #[error("this admission token was already used by a checkout")]
    AdmissionUsed,
    /// The sales switch refuses checkouts, found by the freeze's own transaction
    /// (docs/operations.md, "Sales switch").
    #[error("sales are {}: {}", .0.mode.as_str(), .0.reason)]
    SalesClosed(crate::domain::sale::SalesSwitch),
    #[error("this id was used with another request")]
    RequestMismatch,
    #[error("the stock is too fragmented over shards to take in one transaction")]
    TooFragmented,
    #[error("{0} hands out codes: at most {max} per line", max = crate::domain::codes::MAX_CODES_PER_LINE)]
    TooManyCodes(Sku),
    #[error("contention; retry")]
    Contention,
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// Freezes all lines or none. Replays (same id) return the existing reservation. A warehoused
/// line whose warehouse was emptied between the freeze's read and its write is planned again
/// over the warehouses (twice at most); a refusal then names the SKU, not its warehouse cell.
pub async fn freeze(app: &App, req: &FreezeRequest, metas: &HashMap<Sku, SkuMeta>) -> Result<Frozen, FreezeError> {
    let mut again = 2;
    loop {
        match freezing::freeze(app, req, metas).await {
            Err(e) if again > 0 && warehouses::replannable(&e) => again -= 1,
            Err(FreezeError::Insufficient(c)) => {
                return Err(FreezeError::Insufficient(c.warehouse_parent().map_or(c, |(p, _)| p)))
            }
            Err(FreezeError::SalePaused(c)) => {
                return Err(FreezeError::SalePaused(c.warehouse_parent().map_or(c, |(p, _)| p)))
            }
            Ok(Frozen::Created(r)) => {
                let split = |l: &&crate::domain::reservation::ReservedLine| {
                    l.draws.iter().filter(|d| d.warehouse.is_some()).count() > 1
                };
                let n = r.lines.iter().filter(split).count();
                if n > 0 {
                    app.count(names::WAREHOUSE_SPLITS, n as u64);
                }
                return Ok(Frozen::Created(r));
            }
            other => return other,
        }
    }
}

/// SKU metadata through the warm cache; unknown SKUs are an error.
pub async fn metas(app: &App, skus: &[Sku]) -> Result<HashMap<Sku, SkuMeta>, FreezeError> {
    let found = cached_metas(app, skus).await?;
    match skus.iter().find(|s| !found.contains_key(*s)) {
        Some(s) => Err(FreezeError::UnknownSku(s.clone())),
        None => Ok(found),
    }
}

/// The metadata of those of `skus` that exist, through the warm cache.
async fn cached_metas(app: &App, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
    let now = clock::now_ms();
    let ttl = app.config.sku_cache_ms;
    let mut out = HashMap::new();
    let mut missing = Vec::new();
    for s in skus {
        match app.caches.sku(s, now, ttl) {
            Some(m) => {
                out.insert(s.clone(), m);
            }
            None => missing.push(s.clone()),
        }
    }
    if !missing.is_empty() {
        for (s, m) in app.catalogue.get_skus(&missing).await? {
            app.caches.put_sku(&m, now);
            out.insert(s, m);
        }
    }
    Ok(out)
}

/// Campaign metadata through the warm cache (same lifetime as SKU metadata). Only prices,
/// limits and shard counts are taken from it: the window and the pause flag are judged by the
/// freeze's write condition, never by a cache.
pub async fn campaign(app: &App, id: &CampaignId) -> Result<Campaign, FreezeError> {
    let now = clock::now_ms();
    if let Some(c) = app.caches.campaign(id, now, app.config.sku_cache_ms) {
        return Ok(c);
    }
    let c = app.campaigns.get_campaign(id, true).await?.ok_or_else(|| FreezeError::UnknownCampaign(id.clone()))?;
    app.caches.put_campaign(&c, now);
    Ok(c)
}

/// Each line's cells (what its SKU's strategy names), with the metadata of every cell that is
/// not a line's own SKU (calendar dates, bundle children) through the warm cache. A date never
/// stocked has no metadata (the freeze answers it as short, naming the date).
async fn plan_cells(
    app: &App,
    lines: &[LineRequest],
    metas: &HashMap<Sku, SkuMeta>,
    today: Day,
) -> Result<(Vec<Vec<CellDraw>>, HashMap<Sku, SkuMeta>), FreezeError> {
    let mut draws = Vec::with_capacity(lines.len());
    let mut others: Vec<Sku> = Vec::new();
    for l in lines {
        let meta = metas.get(&l.sku).ok_or_else(|| FreezeError::UnknownSku(l.sku.clone()))?;
        // a warehoused line is allocated over its warehouses' available units, read now
        let stock = match meta.warehouses.as_ref().filter(|_| Kind::of(&meta.model) == Kind::Warehouse) {
            Some(_) if meta.paused => return Err(FreezeError::SalePaused(l.sku.clone())),
            Some(w) => Some((warehouses::stock(app, &l.sku, w).await?, w.allocation)),
            None => None,
        };
        let stock = stock.as_ref().map(|(cells, allocation)| Pick { cells, allocation: *allocation });
        let spec =
            LineSpec { sku: &l.sku, quantity: l.quantity.get(), dates: &l.dates, bundle: &meta.bundle, today, stock };
        let mut d = match model::strategy(&meta.model).draws(&spec) {
            Err(LineRefusal::WarehousesShort(s)) => return Err(FreezeError::Insufficient(s)),
            d => d?,
        };
        // a ring-fenced campaign item draws on its own cell, not the SKU's shards
        // (docs/campaigns.md, "Ring-fenced quota")
        if let Some(cid) = &l.campaign {
            if campaign(app, cid).await?.item(&l.sku).is_some_and(|i| i.reserve) {
                for draw in d.iter_mut().filter(|x| x.sku == l.sku && x.date.is_none()) {
                    draw.fence = Some(cid.clone());
                }
            }
        }
        others.extend(
            d.iter().map(CellDraw::cell).filter(|c| !metas.contains_key(c) && !others.contains(c)).collect::<Vec<_>>(),
        );
        draws.push(d);
    }
    let cells = if others.is_empty() { HashMap::new() } else { cached_metas(app, &others).await? };
    Ok((draws, cells))
}

/// May these lines be held together, by this holder, in their campaigns? Decided by each
/// line's kind before anything is claimed or written (docs/inventory-models.md).
pub fn admission(
    holder: ReservationKind,
    lines: &[LineRequest],
    metas: &HashMap<Sku, SkuMeta>,
) -> Result<(), FreezeError> {
    let mut candidates = Vec::with_capacity(lines.len());
    for l in lines {
        let meta = metas.get(&l.sku).ok_or_else(|| FreezeError::UnknownSku(l.sku.clone()))?;
        candidates.push(Candidate { sku: &l.sku, kind: Kind::of(&meta.model), campaign: l.campaign.is_some() });
    }
    let holder = match holder {
        ReservationKind::Order => Holder::Order,
        ReservationKind::External => Holder::External,
    };
    Ok(admit(holder, &candidates)?)
}

/// A SKU's stop-sale flag read afresh (consistent), for the kinds whose freeze writes no shard
/// of it and whose stop-sale must bite at once (pay-time SKUs).
async fn paused_now(app: &App, sku: &Sku) -> Result<bool, FreezeError> {
    let fresh = app.catalogue.get_skus(std::slice::from_ref(sku)).await?;
    let meta = fresh.get(sku).ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    app.caches.put_sku(meta, clock::now_ms());
    Ok(meta.paused)
}

/// Whether an in-memory mark refuses this request without a write: a sold-out SKU, an
/// exhausted campaign quota or a closed sale seen by a consistent read less than
/// `soldout_cache_ms` ago.
pub fn fast_path_refusal(app: &App, lines: &[LineRequest]) -> Option<FreezeError> {
    let now = clock::now_ms();
    let ttl = app.config.soldout_cache_ms;
    lines.iter().find_map(|l| {
        let q = l.quantity.get();
        // a ring-fenced line does not draw on the SKU's shards: their sold-out mark is not its
        let fenced = l.campaign.as_ref().is_some_and(|c| {
            app.caches
                .campaign(c, now, app.config.sku_cache_ms)
                .is_none_or(|c| c.item(&l.sku).is_some_and(|i| i.reserve))
        });
        if !fenced && app.caches.known_short(&l.sku, q, now, ttl) {
            return Some(FreezeError::Insufficient(l.sku.clone()));
        }
        let c = l.campaign.as_ref()?;
        if let Some(g) = app.caches.known_closed(c, now, ttl) {
            return Some(gate_error(g, &l.sku));
        }
        app.caches.known_quota_short(c, &l.sku, q, now, ttl).then(|| FreezeError::QuotaExhausted(l.sku.clone()))
    })
}

fn gate_error(g: GateRefusal, sku: &Sku) -> FreezeError {
    match g {
        GateRefusal::NotStarted => FreezeError::SaleNotStarted(sku.clone()),
        GateRefusal::Ended => FreezeError::SaleEnded(sku.clone()),
        GateRefusal::Paused => FreezeError::SalePaused(sku.clone()),
    }
}

/// A refusal decided before any write. A replay of a checkout that did freeze still gets its
/// answer, whatever changed since (a sold-out mark, a lowered limit, a closed sale).
async fn refuse(app: &App, req: &FreezeRequest, e: FreezeError) -> Result<Frozen, FreezeError> {
    if let Some(existing) = app.locks.get_reservation(&req.id).await? {
        return replay(existing, req);
    }
    app.count(names::FREEZE_REFUSED, 1);
    Err(e)
}
