//! The stock service: freeze, confirm, release (docs/architecture.md, "Stock operations", "Hot SKUs").

use crate::clock;
use crate::context::App;
use crate::domain::allocation::{split, start_shard, Piece, Shortfall, MAX_SHARDS};
use crate::domain::campaign::{gate, Campaign, GateRefusal};
use crate::domain::events::{EventDetail, EventKind, EventLine, OrderEvent, SCHEMA_VERSION};
use crate::domain::kind::{admit, Candidate, Holder, Kind, PauseBy, Refusal};
use crate::domain::model::{self, CellDraw, Day, LineRefusal, LineSpec};
use crate::domain::plan;
use crate::domain::reservation::Draw;
use crate::domain::reservation::{
    plan_move, CampaignLine, LockMove, LockStatus, Reservation, ReservationKind, ReservedLine, MAX_TRANSACTION_ACTIONS,
};
use crate::domain::{CampaignId, Quantity, ReservationId, Sku, UserId};
use crate::ports::{Counter, FreezeLimits, FreezeRejection, MoveRejection, SkuMeta};
use crate::telemetry::names;
use std::collections::HashMap;

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
        for (s, m) in app.stock.get_skus(&missing).await? {
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
    let c = app.stock.get_campaign(id, true).await?.ok_or_else(|| FreezeError::UnknownCampaign(id.clone()))?;
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
        let spec = LineSpec { sku: &l.sku, quantity: l.quantity.get(), dates: &l.dates, bundle: &meta.bundle, today };
        let mut d = model::strategy(&meta.model).draws(&spec)?;
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
    let fresh = app.stock.get_skus(std::slice::from_ref(sku)).await?;
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
    if let Some(existing) = app.stock.get_reservation(&req.id).await? {
        return replay(existing, req);
    }
    app.count(names::FREEZE_REFUSED, 1);
    Err(e)
}

/// Freezes all lines or none. Replays (same id) return the existing reservation.
pub async fn freeze(app: &App, req: &FreezeRequest, metas: &HashMap<Sku, SkuMeta>) -> Result<Frozen, FreezeError> {
    if let Err(e) = admission(req.kind, &req.lines, metas) {
        return refuse(app, req, e).await;
    }
    if let Some(e) = fast_path_refusal(app, &req.lines) {
        app.count(names::SOLD_OUT_FAST_PATH, 1);
        return refuse(app, req, e).await;
    }
    let (line_draws, other_cells) = match plan_cells(app, &req.lines, metas, Day::of_epoch_s(clock::now_s())).await {
        Ok(c) => c,
        Err(e @ (FreezeError::Line(_) | FreezeError::UnknownSku(_))) => return refuse(app, req, e).await,
        Err(e) => return Err(e),
    };
    let cell_meta = |c: &Sku| other_cells.get(c).or_else(|| metas.get(c));
    let mut limits = FreezeLimits::default();
    let mut lines = Vec::with_capacity(req.lines.len());
    for (l, draws) in req.lines.iter().zip(line_draws) {
        let (sku, q) = (&l.sku, l.quantity.get());
        let meta = metas.get(sku).ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
        let kind = Kind::of(&meta.model);
        // how a stop-sale reaches this kind (docs/inventory-models.md, "Stop-sale")
        // a ring-fenced line writes no shard of its SKU: its stop-sale is read afresh
        let fenced = draws.iter().any(|d| d.fence.is_some());
        let paused = match kind.rules().pause {
            _ if fenced => paused_now(app, sku).await?,
            PauseBy::Shards | PauseBy::Cells => false,
            PauseBy::CachedMetadata => meta.paused,
            PauseBy::FreshMetadata => paused_now(app, sku).await?,
        };
        if paused {
            return refuse(app, req, FreezeError::SalePaused(sku.clone())).await;
        }
        let limited = req.user.is_some() && meta.per_user_limit.is_some();
        if let Some(limit) = meta.per_user_limit.filter(|_| limited) {
            if q > limit {
                return refuse(app, req, FreezeError::LimitExceeded(sku.clone())).await;
            }
            limits.per_sku.insert(sku.clone(), limit);
        }
        let mut unit_price = meta.price;
        let mut campaign_line = None;
        if let Some(cid) = &l.campaign {
            let c = campaign(app, cid).await?;
            let item = c.item(sku).ok_or_else(|| FreezeError::NotInCampaign(sku.clone(), cid.clone()))?;
            unit_price = item.price.unwrap_or(meta.price);
            let limited = req.user.is_some() && item.per_user_limit.is_some();
            if let Some(limit) = item.per_user_limit.filter(|_| limited) {
                if q > limit {
                    return refuse(app, req, FreezeError::LimitExceeded(sku.clone())).await;
                }
                limits.per_campaign_item.insert(sku.clone(), limit);
            }
            let shards = item.shards.clamp(1, MAX_SHARDS);
            campaign_line = Some(CampaignLine {
                campaign_id: cid.clone(),
                pieces: vec![Piece { shard: start_shard(req.id.as_str(), sku, shards), quantity: q }],
                limited,
            });
        }
        // the cells the SKU's strategy named for this line (docs/inventory-models.md)
        let mut line = ReservedLine {
            sku: sku.clone(),
            quantity: q,
            unit_price,
            currency: meta.currency.clone(),
            limited,
            pieces: Vec::new(),
            campaign: campaign_line,
            dates: l.dates.clone(),
            draws: Vec::new(),
            at_payment: kind.rules().takes_at_payment(),
            codes: kind.rules().reveals_codes.then(Vec::new),
        };
        if line.holds_codes() && q > crate::domain::codes::MAX_CODES_PER_LINE {
            return refuse(app, req, FreezeError::TooManyCodes(sku.clone())).await;
        }
        for d in draws {
            let cell = d.cell();
            let shards = match cell_meta(&cell) {
                Some(m) => m.shards.clamp(1, MAX_SHARDS),
                // a date never stocked: short, not unknown
                None => return refuse(app, req, FreezeError::Insufficient(cell)).await,
            };
            let pieces = vec![Piece { shard: start_shard(req.id.as_str(), &cell, shards), quantity: d.quantity }];
            if d.sku == *sku && d.date.is_none() && d.fence.is_none() {
                line.pieces = pieces;
            } else {
                line.draws.push(Draw { sku: d.sku, date: d.date, quantity: d.quantity, pieces, fence: d.fence });
            }
        }
        lines.push(line);
    }
    // Anti-hoarding: a checkout of a signed-in buyer holds one of their pending slots until it is
    // paid or released. External reservations are trusted systems' and are not capped here.
    let pending = req.kind == ReservationKind::Order && req.user.is_some() && app.config.max_pending_per_user > 0;
    if pending {
        limits.max_pending = Some(app.config.max_pending_per_user);
    }
    let mut r = Reservation {
        id: req.id.clone(),
        kind: req.kind,
        status: LockStatus::Frozen,
        user: req.user.clone(),
        request_hash: req.request_hash.clone(),
        created_at_ms: clock::now_ms(),
        expires_at: req.expires_at,
        lines,
        oversold: false,
        code_fate: None,
        pending,
    };
    if let Some(a) = plan::lock_move(&r, LockStatus::Frozen, LockStatus::Sold, &[]) {
        if plan::touches_an_item_twice(&a) {
            let sku =
                r.lines.iter().find(|l| l.takes_at_payment()).map_or_else(|| r.lines[0].sku.clone(), |l| l.sku.clone());
            return refuse(app, req, FreezeError::MixedDeduction(sku)).await;
        }
    }
    // many code lines (one transaction item per code) can pass DynamoDB's 100 items before any
    // split: refuse before claiming anything
    if r.freeze_actions() > MAX_TRANSACTION_ACTIONS {
        return refuse(app, req, FreezeError::TooFragmented).await;
    }
    // A code line claims its codes first, by atomic head moves (docs/code-pools.md, "Claiming
    // under contention"); whatever the freeze then answers other than a new reservation gives
    // them back.
    let code_skus: Vec<Sku> = r.lines.iter().filter(|l| l.holds_codes()).map(|l| l.sku.clone()).collect();
    // A claim costs the pool a write and, given back, a new slot: a buyer at their pending cap
    // or limit is refused before any (review security-2 M4). The freeze's conditions still
    // decide; this read only keeps a refused buyer from churning codes.
    if !code_skus.is_empty() {
        if let Err(e) = counters_allow(app, &r, &limits).await {
            return refuse(app, req, e).await;
        }
    }
    let mut pool_left = Vec::new();
    for sku in &code_skus {
        match claim_codes(app, &mut r, sku, cell_meta(sku)).await {
            Ok(left) => pool_left.push((sku.clone(), left)),
            Err(e) => {
                give_back(app, &mut r).await;
                return refuse(app, req, e).await;
            }
        }
    }
    if !code_skus.is_empty() && crate::fault!(app.faults, crate::faults::AFTER_CODE_CLAIM) {
        return Err(FreezeError::Store(crate::faults::InjectedCrash(crate::faults::AFTER_CODE_CLAIM).into()));
    }
    let out = put_loop(app, req, &mut r, &limits, &code_skus, (&other_cells, metas)).await;
    match &out {
        Ok(Frozen::Created(_)) => {
            for (sku, left) in &pool_left {
                if *left < app.config.code_pool_low_water {
                    app.count(names::CODE_POOL_LOW, 1);
                    tracing::warn!(sku = %sku, left, "code pool low");
                }
            }
        }
        _ => give_back(app, &mut r).await,
    }
    out
}

/// Whether the buyer's pending and per-user counters, read now, leave room for this freeze
/// (the same arithmetic as the freeze's conditions in `domain::plan::freeze`).
async fn counters_allow(app: &App, r: &Reservation, limits: &FreezeLimits) -> Result<(), FreezeError> {
    let Some(u) = &r.user else { return Ok(()) };
    let mut wanted = Vec::new();
    if let (true, Some(_)) = (r.pending, limits.max_pending) {
        wanted.push(Counter::Pending(u.clone()));
    }
    for l in r.lines.iter().filter(|l| l.limited) {
        wanted.push(Counter::Limit(l.sku.clone(), u.clone()));
    }
    for l in &r.lines {
        if let Some(c) = l.campaign.as_ref().filter(|c| c.limited) {
            wanted.push(Counter::CampaignLimit(c.campaign_id.clone(), l.sku.clone(), u.clone()));
        }
    }
    if wanted.is_empty() {
        return Ok(());
    }
    let got = app.stock.read_counters(&wanted).await?;
    let held = |c: &Counter| got.get(c).copied().unwrap_or(0);
    if let Some(max) = limits.max_pending.filter(|_| r.pending) {
        if held(&Counter::Pending(u.clone())) >= i64::from(max) {
            app.count(names::PENDING_CAP_REFUSED, 1);
            return Err(FreezeError::TooManyPending);
        }
    }
    for l in &r.lines {
        let q = i64::from(l.quantity);
        if let Some(limit) = limits.per_sku.get(&l.sku).filter(|_| l.limited) {
            if held(&Counter::Limit(l.sku.clone(), u.clone())) + q > i64::from(*limit) {
                return Err(FreezeError::LimitExceeded(l.sku.clone()));
            }
        }
        if let (Some(c), Some(limit)) =
            (l.campaign.as_ref().filter(|c| c.limited), limits.per_campaign_item.get(&l.sku))
        {
            let counter = Counter::CampaignLimit(c.campaign_id.clone(), l.sku.clone(), u.clone());
            if held(&counter) + q > i64::from(*limit) {
                return Err(FreezeError::LimitExceeded(l.sku.clone()));
            }
        }
    }
    Ok(())
}

/// The transaction of a freeze, re-planned and retried until it commits or is refused.
async fn put_loop(
    app: &App,
    req: &FreezeRequest,
    r: &mut Reservation,
    limits: &FreezeLimits,
    code_skus: &[Sku],
    (other_cells, metas): (&HashMap<Sku, SkuMeta>, &HashMap<Sku, SkuMeta>),
) -> Result<Frozen, FreezeError> {
    let cell_meta = |c: &Sku| other_cells.get(c).or_else(|| metas.get(c));
    for attempt in 1..=FREEZE_ATTEMPTS {
        // a campaign's window is judged at this attempt's time, not the checkout's start: a
        // retried checkout cannot sell past `ends_at` by its retries (review protocol-2 #15)
        r.created_at_ms = clock::now_ms();
        match app.stock.put_frozen(r, limits).await? {
            Ok(()) => {
                app.count(names::FREEZE_OK, 1);
                tracing::info!(reservation = %r.id, "frozen");
                return Ok(Frozen::Created(r.clone()));
            }
            Err(FreezeRejection::AlreadyExists) => match app.stock.get_reservation(&r.id).await? {
                Some(existing) => return replay(existing, req),
                None => super::backoff(attempt).await,
            },
            Err(FreezeRejection::LimitExceeded(sku) | FreezeRejection::CampaignLimitExceeded(sku)) => {
                app.count(names::FREEZE_REFUSED, 1);
                return Err(FreezeError::LimitExceeded(sku));
            }
            Err(FreezeRejection::TooManyPending) => {
                app.count(names::FREEZE_REFUSED, 1);
                app.count(names::PENDING_CAP_REFUSED, 1);
                return Err(FreezeError::TooManyPending);
            }
            Err(FreezeRejection::Conflict) => super::backoff(attempt).await,
            Err(FreezeRejection::QuotaShort(skus)) => {
                for sku in skus {
                    resplit_quota(app, r, &sku).await?;
                }
                if r.freeze_actions() > MAX_TRANSACTION_ACTIONS {
                    return Err(FreezeError::TooFragmented);
                }
            }
            Err(FreezeRejection::ShardShort(skus)) => {
                for sku in skus {
                    if code_skus.contains(&sku) {
                        // its codes are claimed, so its counters hold them: a stop-sale, or a
                        // race with one; the pieces must stay on the claimed shards
                        let fresh = app.stock.get_skus(std::slice::from_ref(&sku)).await?;
                        if fresh.get(&sku).is_some_and(|m| m.paused) {
                            app.count(names::FREEZE_REFUSED, 1);
                            return Err(FreezeError::SalePaused(sku));
                        }
                        super::backoff(attempt).await;
                    } else {
                        resplit(app, r, &sku, cell_meta(&sku)).await?;
                    }
                }
                if r.freeze_actions() > MAX_TRANSACTION_ACTIONS {
                    return Err(FreezeError::TooFragmented);
                }
            }
        }
    }
    Err(FreezeError::Contention)
}

/// A line's campaign quota shards failed their condition: reads the campaign and the item's
/// quota shards consistently and either names why the sale refuses (window, pause, quota) or
/// re-plans the quota pieces.
async fn resplit_quota(app: &App, r: &mut Reservation, sku: &Sku) -> Result<(), FreezeError> {
    let now_s = r.created_at_ms / 1000;
    let Some(line) = r.lines.iter_mut().find(|l| &l.sku == sku) else { return Ok(()) };
    let Some(cl) = line.campaign.as_mut() else { return Ok(()) };
    let c = app
        .stock
        .get_campaign(&cl.campaign_id, true)
        .await?
        .ok_or_else(|| FreezeError::UnknownCampaign(cl.campaign_id.clone()))?;
    app.caches.put_campaign(&c, clock::now_ms());
    let item = c.item(sku).ok_or_else(|| FreezeError::NotInCampaign(sku.clone(), c.id.clone()))?;
    if let Err(g) = gate(c.starts_at, c.ends_at, c.paused, now_s) {
        app.caches.mark_closed(&c.id, g, clock::now_ms());
        app.count(names::FREEZE_REFUSED, 1);
        return Err(gate_error(g, sku));
    }
    let counts = app.stock.read_quota_shards(&c.id, sku, item.shards, true).await?;
    let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
    let shards = item.shards.clamp(1, MAX_SHARDS);
    match split(&available, start_shard(r.id.as_str(), sku, shards), line.quantity) {
        Ok(pieces) => {
            cl.pieces = pieces;
            Ok(())
        }
        Err(short) => {
            app.caches.mark_quota_short(&c.id, sku, short.available, clock::now_ms());
            app.count(names::FREEZE_REFUSED, 1);
            app.count(names::CAMPAIGN_QUOTA_EXHAUSTED, 1);
            Err(FreezeError::QuotaExhausted(sku.clone()))
        }
    }
}

/// Claims a code line's codes: from a consistent read of the pool's rings, the line is split
/// over shards holding codes and each piece claims its positions by one atomic head move (no
/// read-modify-write, so buyers never conflict). A shard drained between the read and the
/// claim is read again. Refuses only when the pool as a whole is short. The claimed ranges are
/// on the line as soon as they are claimed (so a failure can give them back). Returns the
/// codes the pool had left after this line, as read.
async fn claim_codes(app: &App, r: &mut Reservation, sku: &Sku, meta: Option<&SkuMeta>) -> Result<i64, FreezeError> {
    let meta = meta.ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    let slots = meta.slots.max(meta.shards);
    let start = start_shard(r.id.as_str(), sku, meta.shards.clamp(1, MAX_SHARDS));
    let Some(line) = r.lines.iter_mut().find(|l| &l.sku == sku) else { return Ok(0) };
    let mut want = line.quantity;
    for attempt in 1..=FREEZE_ATTEMPTS {
        let rings = app.stock.read_rings(sku, slots).await?;
        let available: Vec<i64> = rings.iter().map(|g| g.available()).collect();
        let left = available.iter().sum::<i64>() - i64::from(want);
        let pieces = match split(&available, start, want) {
            Ok(p) => p,
            Err(short) => {
                app.caches.mark_short(sku, short.available, clock::now_ms());
                app.count(names::FREEZE_REFUSED, 1);
                return Err(FreezeError::Insufficient(sku.clone()));
            }
        };
        for p in pieces {
            let g = rings[usize::from(p.shard)];
            let max_head = g.tail.saturating_sub(u64::from(p.quantity));
            if let Some(from) = app.stock.claim_codes(sku, p.shard, p.quantity, max_head).await? {
                let range = crate::domain::reservation::CodeRange { shard: p.shard, from, count: p.quantity };
                line.codes.get_or_insert_with(Vec::new).push(range);
                want -= p.quantity;
            }
        }
        line.pieces = pieces_of(line.codes.as_deref().unwrap_or_default());
        if want == 0 {
            return Ok(left);
        }
        app.count(names::CODE_CLAIM_RETRIES, 1);
        super::backoff(attempt).await;
    }
    Err(FreezeError::Contention)
}

/// One piece per shard: the units a line's claimed code ranges hold there.
fn pieces_of(ranges: &[crate::domain::reservation::CodeRange]) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for g in ranges {
        match out.iter_mut().find(|p| p.shard == g.shard) {
            Some(p) => p.quantity += g.count,
            None => out.push(Piece { shard: g.shard, quantity: g.count }),
        }
    }
    out
}

/// Gives a failed freeze's claimed codes back to their pool. A give-back that cannot finish
/// (the store is down) leaves them claimed and unbound: reconcile returns such codes
/// (docs/code-pools.md, "Crashes").
async fn give_back(app: &App, r: &mut Reservation) {
    for l in r.lines.iter_mut() {
        let Some(ranges) = l.codes.as_mut().filter(|g| !g.is_empty()) else { continue };
        let mut done = false;
        for attempt in 1..=FREEZE_ATTEMPTS {
            match app.stock.give_back_codes(&l.sku, ranges).await {
                Ok(true) => {
                    done = true;
                    break;
                }
                Ok(false) => super::backoff(attempt).await,
                Err(e) => {
                    tracing::warn!(sku = %l.sku, error = format!("{e:#}"), "give back of claimed codes failed");
                    super::backoff(attempt).await;
                }
            }
        }
        if done {
            ranges.clear();
        } else {
            app.count(names::CODES_NOT_GIVEN_BACK, 1);
            tracing::error!(sku = %l.sku, reservation = %r.id, "claimed codes not given back; reconcile returns them");
        }
    }
}

/// Reads every shard of `sku` and re-plans its line; refuses only if the SKU as a whole is short.
async fn resplit(app: &App, r: &mut Reservation, sku: &Sku, cached: Option<&SkuMeta>) -> Result<(), FreezeError> {
    let cached = cached.ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    // The short path reads the metadata afresh (in parallel with the shards): a cached shard
    // count may be stale, and sold-out must be judged on every shard the SKU has.
    let slots = cached.slots.max(cached.shards);
    let (fresh, counts) =
        tokio::join!(app.stock.get_skus(std::slice::from_ref(sku)), app.stock.read_shards(sku, slots));
    let meta = fresh?.remove(sku).ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    app.caches.put_sku(&meta, clock::now_ms());
    if meta.paused {
        app.count(names::FREEZE_REFUSED, 1);
        return Err(FreezeError::SalePaused(sku.clone()));
    }
    let mut counts = counts?;
    if meta.slots > slots {
        counts = app.stock.read_shards(sku, meta.slots).await?;
    }
    let shards = meta.shards.clamp(1, MAX_SHARDS);
    // Every slot counts: a release after a shard-count reduction puts units back on the shard
    // its lock took them from, which may lie beyond the current count.
    let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
    let start = start_shard(r.id.as_str(), sku, shards);
    replan(r, sku, &available, start, |l| !l.takes_at_payment()).map_err(|short| {
        app.caches.mark_short(sku, short.available, clock::now_ms());
        app.count(names::FREEZE_REFUSED, 1);
        FreezeError::Insufficient(sku.clone())
    })
}

/// Re-plans every piece the lines picked by `which` hold on `cell` from the cell's shard
/// counts: one split of their sum, handed out line by line (two lines on one cell — a bundle's
/// child also ordered alone — must not take the same units twice).
fn replan(
    r: &mut Reservation,
    cell: &Sku,
    available: &[i64],
    start: u16,
    which: impl Fn(&ReservedLine) -> bool,
) -> Result<(), Shortfall> {
    let mut holders: Vec<(u32, &mut Vec<Piece>)> =
        r.lines.iter_mut().filter(|l| which(l)).flat_map(|l| l.pieces_on_mut(cell)).collect();
    let total: u32 = holders.iter().map(|(q, _)| *q).sum();
    if total == 0 {
        return Ok(());
    }
    let pieces = split(available, start, total)?;
    let parts = hand_out(&pieces, &holders.iter().map(|(q, _)| *q).collect::<Vec<_>>());
    for ((_, slot), part) in holders.iter_mut().zip(parts) {
        **slot = part;
    }
    Ok(())
}

/// Hands `pieces` (summing to the sum of `wants`) out in order: each want gets its units.
fn hand_out(pieces: &[Piece], wants: &[u32]) -> Vec<Vec<Piece>> {
    let mut left: Vec<Piece> = pieces.to_vec();
    let mut out = Vec::with_capacity(wants.len());
    let mut i = 0;
    for &want in wants {
        let mut need = want;
        let mut mine = Vec::new();
        while need > 0 && i < left.len() {
            let take = left[i].quantity.min(need);
            mine.push(Piece { shard: left[i].shard, quantity: take });
            left[i].quantity -= take;
            need -= take;
            if left[i].quantity == 0 {
                i += 1;
            }
        }
        out.push(mine);
    }
    out
}

fn replay(existing: Reservation, req: &FreezeRequest) -> Result<Frozen, FreezeError> {
    if existing.request_hash != req.request_hash || existing.kind != req.kind {
        return Err(FreezeError::RequestMismatch);
    }
    Ok(Frozen::Replayed(existing))
}

/// What a confirm or release did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockChange {
    Moved(Reservation),
    /// Already in the target status: a duplicate.
    Unchanged(Reservation),
    /// (Confirm) the lock had been released; the units were taken again.
    Retaken(Reservation),
    /// (Confirm) the lock had been released and the units were gone: recorded as an oversell.
    Oversold(Reservation),
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("no such reservation")]
    NotFound,
    #[error("the reservation is {}", .0.as_str())]
    InvalidTransition(LockStatus),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// FROZEN → RELEASED: units back on sale, per-user counters given back.
pub async fn release(app: &App, id: &ReservationId) -> Result<LockChange, LockError> {
    change(app, id, LockStatus::Released, OnReleased::Refuse).await
}

/// SOLD → RESTOCKED: the units back on sale after a refund before shipping or a return
/// (docs/after-sale.md, "Restock"). Idempotent: a RESTOCKED lock is left as it is.
pub async fn restock(app: &App, id: &ReservationId) -> Result<LockChange, LockError> {
    for attempt in 1..=FREEZE_ATTEMPTS {
        let r = app.stock.get_reservation(id).await?.ok_or(LockError::NotFound)?;
        match r.status {
            LockStatus::Restocked => return Ok(LockChange::Unchanged(r)),
            LockStatus::Sold => match app.stock.restock(&r).await? {
                Ok(()) => {
                    app.count(names::RESTOCKS, 1);
                    tracing::info!(reservation = %r.id, "lock restocked");
                    let mut moved = r;
                    moved.status = LockStatus::Restocked;
                    return Ok(LockChange::Moved(moved));
                }
                Err(MoveRejection::ShardShort) => {
                    return Err(LockError::Store(anyhow::anyhow!(
                        "lock {id}: its shards hold fewer sold units than it"
                    )))
                }
                Err(_) => super::backoff(attempt).await,
            },
            // the confirm has not run yet (events arrive in any order): retry after it
            LockStatus::Frozen => {
                return Err(LockError::Store(anyhow::anyhow!(
                    "lock {id} is not sold yet; the restock waits for the confirm"
                )))
            }
            other => return Err(LockError::InvalidTransition(other)),
        }
    }
    Err(LockError::Store(anyhow::anyhow!("lock {id} kept changing under us")))
}

/// What confirm does with a lock it finds RELEASED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReleased {
    /// Refuse (`InvalidTransition`): an external hold that lapsed is gone.
    Refuse,
    /// Take the units again, or record an oversell: a paid Holdfast order must get its stock.
    Retake,
}

/// FROZEN → SOLD.
pub async fn confirm(app: &App, id: &ReservationId, on_released: OnReleased) -> Result<LockChange, LockError> {
    change(app, id, LockStatus::Sold, on_released).await
}

async fn change(
    app: &App,
    id: &ReservationId,
    to: LockStatus,
    on_released: OnReleased,
) -> Result<LockChange, LockError> {
    for attempt in 1..=FREEZE_ATTEMPTS {
        let r = app.stock.get_reservation(id).await?.ok_or(LockError::NotFound)?;
        match plan_move(r.status, to) {
            LockMove::AlreadyDone => return Ok(LockChange::Unchanged(r)),
            LockMove::Apply => {
                let mut r = r;
                let pay_time = to == LockStatus::Sold && r.lines.iter().any(|l| l.takes_at_payment());
                if pay_time && !replan_pay_time(app, &mut r).await? {
                    return pay_time_short(app, r).await;
                }
                match app.stock.move_lock(&r, to).await? {
                    Ok(()) => {
                        for l in &r.lines {
                            tracing::info!(reservation = %r.id, sku = %l.sku, to = to.as_str(), "lock moved");
                        }
                        if pay_time {
                            app.count(names::PAY_TIME_TAKEN, 1);
                        }
                        let mut moved = r;
                        moved.status = to;
                        return Ok(LockChange::Moved(moved));
                    }
                    Err(_) => super::backoff(attempt).await,
                }
            }
            LockMove::Conflict if to == LockStatus::Sold && on_released == OnReleased::Retake => {
                match retake(app, r, Why::Repair).await? {
                    Some(done) => return Ok(done),
                    // the lock moved under the retake: read it again
                    None => super::backoff(attempt).await,
                }
            }
            LockMove::Conflict => return Err(LockError::InvalidTransition(r.status)),
        }
    }
    Err(LockError::Store(anyhow::anyhow!("lock {id} kept changing under us")))
}

/// Re-plans the pieces of a lock's pay-time lines from fresh shard reads, so paying never meets
/// a false shortage on one shard. `false` when a cell as a whole is short.
async fn replan_pay_time(app: &App, r: &mut Reservation) -> Result<bool, LockError> {
    let mut cells: Vec<Sku> =
        r.lines.iter().filter(|l| l.takes_at_payment()).flat_map(|l| l.cells()).map(|c| c.cell).collect();
    cells.sort();
    cells.dedup();
    // a pay-time SKU's stop-sale bites at payment too: its paid order is refunded as short
    // (docs/inventory-models.md, "Stop-sale"); the read is consistent
    let mut skus: Vec<Sku> = r.lines.iter().filter(|l| l.takes_at_payment()).map(|l| l.sku.clone()).collect();
    skus.extend(cells.iter().cloned());
    skus.sort();
    skus.dedup();
    let metas = app.stock.get_skus(&skus).await?;
    if let Some(m) =
        r.lines.iter().filter(|l| l.takes_at_payment()).find_map(|l| metas.get(&l.sku).filter(|m| m.paused))
    {
        tracing::warn!(reservation = %r.id, sku = %m.sku, "pay-time SKU paused at payment; the order is refunded");
        return Ok(false);
    }
    for cell in &cells {
        let Some(meta) = metas.get(cell) else { return Ok(false) };
        let counts = app.stock.read_shards(cell, meta.slots.max(meta.shards)).await?;
        let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
        let start = start_shard(r.id.as_str(), cell, meta.shards.clamp(1, MAX_SHARDS));
        if replan(r, cell, &available, start, |l| l.takes_at_payment()).is_err() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A paid order whose pay-time stock is gone: its lock is released (its other lines give their
/// units back) and the confirm goes the oversell way — flagged, announced, refunded
/// (docs/inventory-models.md, "Pay-time deduction").
async fn pay_time_short(app: &App, r: Reservation) -> Result<LockChange, LockError> {
    match app.stock.move_lock(&r, LockStatus::Released).await? {
        Ok(()) => {}
        Err(MoveRejection::StatusChanged) => {}
        Err(_) => {
            return Err(LockError::Store(anyhow::anyhow!("lock {}: release of a short pay-time lock conflicted", r.id)))
        }
    }
    let released = app.stock.get_reservation(&r.id).await?.ok_or(LockError::NotFound)?;
    match released.status {
        LockStatus::Released => match retake(app, released, Why::PayTime).await? {
            Some(done) => Ok(done),
            None => Err(LockError::Store(anyhow::anyhow!("lock {} changed during a pay-time shortfall", r.id))),
        },
        LockStatus::Sold | LockStatus::Restocked => Ok(LockChange::Unchanged(released)),
        LockStatus::Frozen => Err(LockError::Store(anyhow::anyhow!("lock {} is still frozen; retry", r.id))),
    }
}

/// Confirm of a RELEASED lock (must not happen; defence in depth, docs/architecture.md, "Stock operations").
/// `None` when the lock changed under it (the caller re-reads; bounded by its attempts).
async fn retake(app: &App, r: Reservation, why: Why) -> Result<Option<LockChange>, LockError> {
    if r.oversold {
        // decided already; announce again (the first announcement may have been lost with a
        // crash, and every consumer of it is idempotent)
        publish_oversell(app, &r).await?;
        return Ok(Some(LockChange::Oversold(r)));
    }
    // A kind that may not be retaken (a released code line's codes may be someone else's by
    // now) goes the oversell way: refunded (docs/inventory-models.md).
    // A stopped pay-time SKU is not taken at payment either (its stop-sale bites there).
    let retaken = if r.lines.iter().any(|l| !Kind::of_line(l).rules().retake) || stopped_at_payment(app, &r).await? {
        Err(MoveRejection::ShardShort)
    } else {
        app.stock.retake(&r).await?
    };
    match retaken {
        Ok(()) => {
            match why {
                Why::Repair => {
                    tracing::warn!(reservation = %r.id, "confirm found the lock released; units taken again");
                    app.count(names::REPAIRS, 1);
                }
                Why::PayTime => app.count(names::PAY_TIME_TAKEN, 1),
            }
            let mut sold = r;
            sold.status = LockStatus::Sold;
            Ok(Some(LockChange::Retaken(sold)))
        }
        Err(MoveRejection::StatusChanged) | Err(MoveRejection::Conflict) => Ok(None),
        Err(MoveRejection::ShardShort) => {
            // The decision is the mark, conditional on the lock still RELEASED and unmarked: a
            // concurrent confirm either retook the units first (the mark fails: read again) or
            // finds the mark and retakes nothing. Only then is it announced; a crash in between
            // is healed by the redelivered confirm, which finds the mark and announces again.
            if !app.stock.mark_oversold(&r).await? {
                return Ok(None);
            }
            match why {
                Why::Repair => {
                    tracing::error!(reservation = %r.id, "OVERSELL: paid order whose stock was released and resold")
                }
                Why::PayTime => tracing::warn!(reservation = %r.id, "pay-time stock short at payment; refunded"),
            }
            // a pay-time shortfall is the model's accepted trade-off, not the oversell alarm
            app.count(if why == Why::Repair { names::OVERSELL } else { names::PAY_TIME_SHORT }, 1);
            let mut marked = r;
            marked.oversold = true;
            publish_oversell(app, &marked).await?;
            Ok(Some(LockChange::Oversold(marked)))
        }
    }
}

/// Whether a line whose stop-sale bites at payment (docs/inventory-models.md, "Stop-sale") is
/// paused now, read afresh.
async fn stopped_at_payment(app: &App, r: &Reservation) -> Result<bool, LockError> {
    let mut skus: Vec<Sku> = r
        .lines
        .iter()
        .filter(|l| Kind::of_line(l).rules().pause == PauseBy::FreshMetadata)
        .map(|l| l.sku.clone())
        .collect();
    if skus.is_empty() {
        return Ok(false);
    }
    skus.sort();
    skus.dedup();
    Ok(app.stock.get_skus(&skus).await?.values().any(|m| m.paused))
}

async fn publish_oversell(app: &App, r: &Reservation) -> Result<(), LockError> {
    if !app.bus.publish(&[oversell_event(r)]).await?.iter().all(|ok| *ok) {
        return Err(LockError::Store(anyhow::anyhow!("could not publish OversellDetected")));
    }
    Ok(())
}

/// Why a released lock is taken again at confirm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// It should have been FROZEN: a repair, or an oversell when the units are gone.
    Repair,
    /// A pay-time lock released because its stock was short at payment (docs/inventory-models.md).
    PayTime,
}

fn oversell_event(r: &Reservation) -> OrderEvent {
    OrderEvent {
        kind: EventKind::OversellDetected,
        detail: EventDetail {
            schema: SCHEMA_VERSION,
            order_id: r.id.to_string(),
            user_id: r.user.as_ref().map(|u| u.to_string()).unwrap_or_default(),
            status: "OVERSOLD".into(),
            version: 0,
            amount: r.lines.iter().map(|l| l.unit_price.saturating_mul(u64::from(l.units_charged()))).sum(),
            currency: r.lines.first().map(|l| l.currency.to_string()).unwrap_or_default(),
            lines: r.lines.iter().map(|l| EventLine { sku: l.sku.to_string(), quantity: l.quantity }).collect(),
            payment_id: None,
            refund_id: None,
            restock: None,
            correlation_id: crate::telemetry::correlation(),
        },
    }
}
