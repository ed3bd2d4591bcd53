//! The freeze: a checkout's lines admitted, planned over the shards and written as one
//! FROZEN lock, retried on contention; and a replayed request answered with its lock.

use super::replanning::{claim_codes, give_back, replan, replan_or_backorder, resplit, resplit_quota};
use super::{
    admission, campaign, fast_path_refusal, paused_now, plan_cells, refuse, FreezeError, FreezeRequest, Frozen,
    FREEZE_ATTEMPTS,
};
use crate::clock;
use crate::context::App;
use crate::domain::allocation::{start_shard, Piece, MAX_SHARDS};
use crate::domain::kind::{Kind, PauseBy};
use crate::domain::model::Day;
use crate::domain::plan;
use crate::domain::reservation::Draw;
use crate::domain::reservation::{
    CampaignLine, LockStatus, Reservation, ReservationKind, ReservedLine, MAX_TRANSACTION_ACTIONS,
};
use crate::domain::Sku;
use crate::ports::{Counter, FreezeLimits, FreezeRejection, SkuMeta};
use crate::telemetry::names;
use std::collections::HashMap;

/// Freezes all lines or none. Replays (same id) return the existing reservation.
pub async fn freeze(app: &App, req: &FreezeRequest, metas: &HashMap<Sku, SkuMeta>) -> Result<Frozen, FreezeError> {
    if let Err(e) = admission(req.kind, &req.lines, metas) {
        return refuse(app, req, e).await;
    }
    // a BACKORDER SKU is never refused as short: its sold-out mark is not its answer
    let strict: Vec<_> =
        req.lines.iter().filter(|l| metas.get(&l.sku).is_none_or(|m| m.model.oversell.is_strict())).cloned().collect();
    if let Some(e) = fast_path_refusal(app, &strict) {
        app.count(names::SOLD_OUT_FAST_PATH, 1);
        return refuse(app, req, e).await;
    }
    let (line_draws, other_cells) = match plan_cells(app, &req.lines, metas, Day::of_epoch_s(clock::now_s())).await {
        Ok(c) => c,
        Err(
            e @ (FreezeError::Line(_)
            | FreezeError::UnknownSku(_)
            | FreezeError::Insufficient(_)
            | FreezeError::SalePaused(_)),
        ) => return refuse(app, req, e).await,
        Err(e) => return Err(e),
    };
    let mut limits = FreezeLimits::default();
    let mut lines = Vec::with_capacity(req.lines.len());
    for (l, draws) in req.lines.iter().zip(line_draws) {
        match reserved_line(app, req, (l, draws), (&other_cells, metas), &mut limits).await? {
            Ok(line) => lines.push(line),
            Err(e) => return refuse(app, req, e).await,
        }
    }
    // Anti-hoarding: a checkout of a signed-in buyer holds one of their pending slots until it is
    // paid or released. External reservations are trusted systems' and are not capped here.
    // A lock held until shipment stays FROZEN after payment, so it would hold a pending slot until
    // the goods ship: such a checkout is not capped (docs/inventory-models.md, "Deduction at shipment").
    let held = lines.iter().any(|l| Kind::of_line(l).rules().takes_at_shipment());
    let pending =
        req.kind == ReservationKind::Order && req.user.is_some() && app.config.max_pending_per_user > 0 && !held;
    if pending {
        limits.max_pending = Some(app.config.max_pending_per_user);
    }
    limits.admission = req.admission.clone();
    limits.sales_open = !crate::service::sale::checkout_known(app);
    let r = Reservation {
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
    claim_and_put(app, req, r, &limits, (&other_cells, metas)).await
}

/// A code line claims its codes first, by atomic head moves (docs/code-pools.md, "Claiming
/// under contention"); then the freeze's transaction is put (retried, re-planned); whatever it
/// answers other than a new reservation gives the claimed codes back.
async fn claim_and_put(
    app: &App,
    req: &FreezeRequest,
    mut r: Reservation,
    limits: &FreezeLimits,
    (other_cells, metas): (&HashMap<Sku, SkuMeta>, &HashMap<Sku, SkuMeta>),
) -> Result<Frozen, FreezeError> {
    let cell_meta = |c: &Sku| other_cells.get(c).or_else(|| metas.get(c));
    let code_skus: Vec<Sku> = r.lines.iter().filter(|l| l.holds_codes()).map(|l| l.sku.clone()).collect();
    // A claim costs the pool a write and, given back, a new slot: a buyer at their pending cap
    // or limit is refused before any (review security-2 M4). The freeze's conditions still
    // decide; this read only keeps a refused buyer from churning codes.
    if !code_skus.is_empty() {
        if let Err(e) = counters_allow(app, &r, limits).await {
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
    let out = put_loop(app, req, &mut r, limits, &code_skus, (other_cells, metas)).await;
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

/// One requested line as its lock will hold it: the kind's stop-sale judged, its limits
/// charged to `limits`, its campaign line and its first pieces planned on each cell it draws.
/// `Ok(Err(e))`: the checkout is refused with `e` (a replay is still answered its lock).
async fn reserved_line(
    app: &App,
    req: &FreezeRequest,
    (l, draws): (&super::LineRequest, Vec<crate::domain::model::CellDraw>),
    (other_cells, metas): (&HashMap<Sku, SkuMeta>, &HashMap<Sku, SkuMeta>),
    limits: &mut FreezeLimits,
) -> Result<Result<ReservedLine, FreezeError>, FreezeError> {
    let cell_meta = |c: &Sku| other_cells.get(c).or_else(|| metas.get(c));
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
        return Ok(Err(FreezeError::SalePaused(sku.clone())));
    }
    let limited = req.user.is_some() && meta.per_user_limit.is_some();
    if let Some(limit) = meta.per_user_limit.filter(|_| limited) {
        if q > limit {
            return Ok(Err(FreezeError::LimitExceeded(sku.clone())));
        }
        limits.per_sku.insert(sku.clone(), limit);
    }
    let (unit_price, campaign_line) = match &l.campaign {
        None => (meta.price, None),
        Some(cid) => match campaign_line(app, req, l, cid, limits).await? {
            Ok((price, line)) => (price.unwrap_or(meta.price), Some(line)),
            Err(e) => return Ok(Err(e)),
        },
    };
    // the cells the SKU's strategy named for this line (docs/inventory-models.md)
    let line = ReservedLine {
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
        at_shipment: kind.rules().takes_at_shipment(),
        codes: kind.rules().codes_from_pool().then(Vec::new),
        backorder: (kind == Kind::Backorder).then(crate::domain::reservation::BackorderLine::default),
    };
    if line.holds_codes() && q > crate::domain::codes::MAX_CODES_PER_LINE {
        return Ok(Err(FreezeError::TooManyCodes(sku.clone())));
    }
    Ok(place_draws(req, line, draws, cell_meta))
}

/// A campaign line's item price (if it has its own), its first quota piece on the wave selling
/// now (docs/campaigns.md, "Waves"), and its per-user limit charged to `limits`. `Ok(Err(e))`:
/// refused with `e`.
async fn campaign_line(
    app: &App,
    req: &FreezeRequest,
    l: &super::LineRequest,
    cid: &crate::domain::CampaignId,
    limits: &mut FreezeLimits,
) -> Result<Result<(Option<u64>, CampaignLine), FreezeError>, FreezeError> {
    let (sku, q) = (&l.sku, l.quantity.get());
    let c = campaign(app, cid).await?;
    let item = c.item(sku).ok_or_else(|| FreezeError::NotInCampaign(sku.clone(), cid.clone()))?;
    let limited = req.user.is_some() && item.per_user_limit.is_some();
    if let Some(limit) = item.per_user_limit.filter(|_| limited) {
        if q > limit {
            return Ok(Err(FreezeError::LimitExceeded(sku.clone())));
        }
        limits.per_campaign_item.insert(sku.clone(), limit);
    }
    let shards = item.shards.clamp(1, MAX_SHARDS);
    // the wave's shards carry its window copies, which the freeze's conditions judge
    let first = item.wave_shards(item.wave_at(clock::now_s()).unwrap_or(0)).start;
    let pieces = vec![Piece { shard: first + start_shard(req.id.as_str(), sku, shards), quantity: q }];
    Ok(Ok((item.price, CampaignLine { campaign_id: cid.clone(), pieces, limited })))
}

/// The line's first pieces, one per cell it draws on (the cells the SKU's strategy named:
/// docs/inventory-models.md), each on the cell's start shard for this reservation; a date never
/// stocked is short, not unknown.
fn place_draws<'m>(
    req: &FreezeRequest,
    mut line: ReservedLine,
    draws: Vec<crate::domain::model::CellDraw>,
    cell_meta: impl Fn(&Sku) -> Option<&'m SkuMeta>,
) -> Result<ReservedLine, FreezeError> {
    for d in draws {
        let cell = d.cell();
        let Some(shards) = cell_meta(&cell).map(|m| m.shards.clamp(1, MAX_SHARDS)) else {
            return Err(FreezeError::Insufficient(cell));
        };
        let pieces = vec![Piece { shard: start_shard(req.id.as_str(), &cell, shards), quantity: d.quantity }];
        if d.sku == line.sku && d.date.is_none() && d.fence.is_none() {
            line.pieces = pieces;
        } else {
            // a warehouse cell is stored as its SKU and warehouse (a lock names client SKUs only)
            let (sku, warehouse) = match d.sku.warehouse_parent() {
                Some((parent, w)) => (parent, Some(w)),
                None => (d.sku, None),
            };
            line.draws.push(Draw { sku, date: d.date, quantity: d.quantity, pieces, fence: d.fence, warehouse });
        }
    }
    Ok(line)
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
    let got = app.locks.read_counters(&wanted).await?;
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

/// A replay's answer, unless it is a request mismatch the switch (checked in the transaction,
/// `limits.sales_open`) refuses: as at the door, a closed switch answers a new request first.
async fn closed_or(
    app: &App,
    limits: &FreezeLimits,
    answer: Result<Frozen, FreezeError>,
) -> Result<Frozen, FreezeError> {
    if limits.sales_open && matches!(answer, Err(FreezeError::RequestMismatch)) {
        if let Some(s) = crate::service::sale::checkout_refusal(app).await? {
            return Err(FreezeError::SalesClosed(s));
        }
    }
    answer
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
    // the shards each cell's cancelled plans were on, avoided by the next plans
    let mut avoided: HashMap<Sku, Vec<u16>> = HashMap::new();
    for attempt in 1..=FREEZE_ATTEMPTS {
        // a campaign's window is judged at this attempt's time, not the checkout's start: a
        // retried checkout cannot sell past `ends_at` by its retries (review protocol-2 #15)
        r.created_at_ms = clock::now_ms();
        let answer = match app.locks.put_frozen(r, limits).await {
            Ok(a) => a,
            // a hot shard past its partition's rate: back off with jitter and spread the
            // pieces onto other shards; with nowhere else to go (or on the last attempt) the
            // throttle is the caller's 429 `busy` with Retry-After — never a blind retry of the
            // same plan on the same throttled shard
            Err(e) if crate::ports::is_throttled(&e) && attempt < FREEZE_ATTEMPTS => {
                if !replan_away(app, r, &mut avoided, cell_meta, attempt).await? {
                    return Err(e.into());
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        match answer {
            Ok(()) => {
                if limits.sales_open {
                    crate::service::sale::saw_checkout_open(app);
                }
                app.count(names::FREEZE_OK, 1);
                tracing::info!(reservation = %r.id, "frozen");
                return Ok(Frozen::Created(r.clone()));
            }
            Err(FreezeRejection::AlreadyExists) => match app.locks.get_reservation(&r.id).await? {
                // the same key with another body is no replay: a closed switch answers it
                Some(existing) => return closed_or(app, limits, replay(existing, req)).await,
                None => super::super::backoff(attempt).await,
            },
            Err(FreezeRejection::SalesClosed) => closed_by_switch(app, attempt).await?,
            Err(FreezeRejection::LimitExceeded(sku) | FreezeRejection::CampaignLimitExceeded(sku)) => {
                return Err(counted(app, FreezeError::LimitExceeded(sku)))
            }
            Err(FreezeRejection::AdmissionUsed) => return Err(counted(app, FreezeError::AdmissionUsed)),
            Err(FreezeRejection::TooManyPending) => return Err(counted(app, FreezeError::TooManyPending)),
            // another transaction is on one of its items: re-plan onto other shards, never
            // the same plan again blindly
            Err(FreezeRejection::Conflict) => {
                replan_away(app, r, &mut avoided, cell_meta, attempt).await?;
            }
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
                    let (meta, claimed) = (cell_meta(&sku), code_skus.contains(&sku));
                    after_shard_short(app, r, sku, claimed, meta, attempt).await?;
                }
                if r.freeze_actions() > MAX_TRANSACTION_ACTIONS {
                    return Err(FreezeError::TooFragmented);
                }
            }
        }
    }
    Err(FreezeError::Contention)
}

/// The freeze's check found the switch closed: read it (and cache it) for the answer; if it
/// opened again since the transaction, the next attempt finds it so.
async fn closed_by_switch(app: &App, attempt: u32) -> Result<(), FreezeError> {
    if let Some(s) = crate::service::sale::checkout_refusal(app).await? {
        return Err(counted(app, FreezeError::SalesClosed(s)));
    }
    super::super::backoff(attempt).await;
    Ok(())
}

/// A refusal the freeze answers at once, counted (`FreezeRefused`; the pending cap also
/// `PendingCapRefused`).
fn counted(app: &App, e: FreezeError) -> FreezeError {
    app.count(names::FREEZE_REFUSED, 1);
    if matches!(e, FreezeError::TooManyPending) {
        app.count(names::PENDING_CAP_REFUSED, 1);
    }
    e
}

/// A cell whose chosen shard lacked the units: re-split over its shards from a consistent
/// read (short only when all of them together are), or, for a code line, whose claimed codes
/// hold its counters, judged for a stop-sale and tried again on the same shards after a backoff.
async fn after_shard_short(
    app: &App,
    r: &mut Reservation,
    sku: Sku,
    holds_claimed_codes: bool,
    meta: Option<&SkuMeta>,
    attempt: u32,
) -> Result<(), FreezeError> {
    if !holds_claimed_codes {
        return resplit(app, r, &sku, meta).await;
    }
    // its codes are claimed, so its counters hold them: a stop-sale, or a race with one; the
    // pieces must stay on the claimed shards
    let fresh = app.catalogue.get_skus(std::slice::from_ref(&sku)).await?;
    if fresh.get(&sku).is_some_and(|m| m.paused) {
        app.count(names::FREEZE_REFUSED, 1);
        return Err(FreezeError::SalePaused(sku));
    }
    super::super::backoff(attempt).await;
    Ok(())
}

/// A freeze cancelled by a transaction conflict, or throttled, on its items: every cell whose
/// pieces may move (not a code line's, whose codes are claimed, nor a pay-time line's, which
/// writes no shard at freeze) is re-planned from a consistent read of its shards onto shards
/// that no cancelled plan of this freeze used, starting from a random one so that buyers
/// cancelled together spread apart. Only when those shards cannot hold the line does the plan
/// go back onto the avoided ones (the conflict is transient; their units are real); the SKU is
/// refused as short only when all its shards together are. Then a jittered backoff, growing
/// with the attempt: the new plan is tried a moment later, spread in time as well as in space.
/// Answers whether every moved cell found room away from the shards it avoids (`false`: some
/// went back onto an avoided shard).
async fn replan_away<'m>(
    app: &App,
    r: &mut Reservation,
    avoided: &mut HashMap<Sku, Vec<u16>>,
    cell_meta: impl Fn(&Sku) -> Option<&'m SkuMeta>,
    attempt: u32,
) -> Result<bool, FreezeError> {
    let mut spread = true;
    app.count(names::FREEZE_REPLANS, 1);
    let movable = |l: &crate::domain::reservation::ReservedLine| !l.takes_at_payment() && !l.holds_codes();
    let mut cells: Vec<(Sku, Vec<u16>)> = Vec::new();
    for l in r.lines.iter().filter(|l| movable(l)) {
        for c in l.cells() {
            let shards = c.pieces.iter().map(|p| p.shard);
            match cells.iter_mut().find(|(s, _)| *s == c.cell) {
                Some((_, v)) => v.extend(shards),
                None => cells.push((c.cell.clone(), shards.collect())),
            }
        }
    }
    for (cell, used) in cells {
        let Some(meta) = cell_meta(&cell) else { continue };
        let shards = meta.shards.clamp(1, MAX_SHARDS);
        let slots = meta.shard_slots();
        let avoid = avoided.entry(cell.clone()).or_default();
        avoid.extend(used);
        avoid.sort_unstable();
        avoid.dedup();
        let counts = app.shards.read_shards(&cell, slots).await?;
        let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
        let elsewhere: Vec<i64> = available
            .iter()
            .enumerate()
            .map(|(i, a)| if avoid.binary_search(&(i as u16)).is_ok() { 0 } else { *a })
            .collect();
        let start = fastrand::u16(..shards);
        if replan(r, &cell, &elsewhere, start, movable).is_err() {
            // nowhere else: every shard is fair again, the avoided ones included
            spread = false;
            avoid.clear();
            replan_or_backorder(app, r, &cell, &available, start)?;
        }
    }
    if r.freeze_actions() > MAX_TRANSACTION_ACTIONS {
        return Err(FreezeError::TooFragmented);
    }
    super::super::backoff(attempt).await;
    Ok(spread)
}

pub(super) fn replay(existing: Reservation, req: &FreezeRequest) -> Result<Frozen, FreezeError> {
    if existing.request_hash != req.request_hash || existing.kind != req.kind {
        return Err(FreezeError::RequestMismatch);
    }
    Ok(Frozen::Replayed(existing))
}

#[cfg(test)]
mod contention_tests;
