//! Re-planning a freeze after a rejected write: quota and shard pieces split again from fresh
//! counters, and a code pool line's codes claimed from the rings (and given back).

use super::{gate_error, FreezeError, FREEZE_ATTEMPTS};
use crate::clock;
use crate::context::App;
use crate::domain::allocation::{split, start_shard, Piece, Shortfall, MAX_SHARDS};
use crate::domain::campaign::gate;
use crate::domain::reservation::{Reservation, ReservedLine};
use crate::domain::Sku;
use crate::ports::SkuMeta;
use crate::telemetry::names;

/// A line's campaign quota shards failed their condition: reads the campaign and the item's
/// quota shards consistently and either names why the sale refuses (window, pause, quota) or
/// re-plans the quota pieces.
pub(super) async fn resplit_quota(app: &App, r: &mut Reservation, sku: &Sku) -> Result<(), FreezeError> {
    let now_s = r.created_at_ms / 1000;
    let Some(line) = r.lines.iter_mut().find(|l| &l.sku == sku) else { return Ok(()) };
    let Some(cl) = line.campaign.as_mut() else { return Ok(()) };
    let c = app
        .campaigns
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
    // a waved item sells only in the wave whose window holds now (docs/campaigns.md, "Waves"):
    // between waves it is not started, after the last ended — for this item only, so nothing
    // is marked closed for the campaign's other items
    let wave = match item.wave_at(now_s) {
        Ok(w) => w,
        Err(g) => {
            app.count(names::FREEZE_REFUSED, 1);
            return Err(gate_error(g, sku));
        }
    };
    let counts = app.campaigns.read_quota_shards(&c.id, sku, item.quota_shards(), true).await?;
    let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
    let shards = item.shards.clamp(1, MAX_SHARDS);
    match item.split_in_wave(wave, &available, start_shard(r.id.as_str(), sku, shards), line.quantity) {
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
pub(super) async fn claim_codes(
    app: &App,
    r: &mut Reservation,
    sku: &Sku,
    meta: Option<&SkuMeta>,
) -> Result<i64, FreezeError> {
    let meta = meta.ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    let slots = meta.shard_slots();
    let start = start_shard(r.id.as_str(), sku, meta.shards.clamp(1, MAX_SHARDS));
    let Some(line) = r.lines.iter_mut().find(|l| &l.sku == sku) else { return Ok(0) };
    let mut want = line.quantity;
    let (mut attempt, mut retired) = (1, 0);
    loop {
        let rings = app.code_pools.read_rings(sku, slots).await?;
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
        let mut retired_now = 0;
        for p in pieces {
            let g = rings[usize::from(p.shard)];
            let max_head = g.tail.saturating_sub(u64::from(p.quantity));
            if let Some(from) = app.code_pools.claim_codes(sku, p.shard, p.quantity, max_head).await? {
                // a ring holding codes with an expire time: the expired ones are retired here,
                // never bound (docs/code-pools.md, "Expiry")
                let kept: Vec<u64> = match g.expiring {
                    false => (from..from + u64::from(p.quantity)).collect(),
                    true => super::expired_codes::unexpired(app, sku, p.shard, from, p.quantity).await?,
                };
                retired_now += p.quantity - kept.len() as u32;
                line.codes.get_or_insert_with(Vec::new).extend(crate::domain::codes::ranges_of(p.shard, &kept));
                want -= kept.len() as u32;
            }
        }
        line.pieces = pieces_of(line.codes.as_deref().unwrap_or_default());
        if want == 0 {
            return Ok(left);
        }
        // expired codes left the pool: claim again at once (bounded per checkout)
        retired += retired_now;
        if retired_now > 0 && retired <= super::expired_codes::MAX_RETIRED_PER_CHECKOUT {
            continue;
        }
        app.count(names::CODE_CLAIM_RETRIES, 1);
        super::super::backoff(attempt).await;
        if attempt == FREEZE_ATTEMPTS {
            return Err(FreezeError::Contention);
        }
        attempt += 1;
    }
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
pub(super) async fn give_back(app: &App, r: &mut Reservation) {
    for l in r.lines.iter_mut() {
        let Some(ranges) = l.codes.as_mut().filter(|g| !g.is_empty()) else { continue };
        let mut done = false;
        for attempt in 1..=FREEZE_ATTEMPTS {
            match app.code_pools.give_back_codes(&l.sku, ranges).await {
                Ok(true) => {
                    done = true;
                    break;
                }
                Ok(false) => super::super::backoff(attempt).await,
                Err(e) => {
                    tracing::warn!(sku = %l.sku, error = format!("{e:#}"), "give back of claimed codes failed");
                    super::super::backoff(attempt).await;
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
pub(super) async fn resplit(
    app: &App,
    r: &mut Reservation,
    sku: &Sku,
    cached: Option<&SkuMeta>,
) -> Result<(), FreezeError> {
    let cached = cached.ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    // The short path reads the metadata afresh (in parallel with the shards): a cached shard
    // count may be stale, and sold-out must be judged on every shard the SKU has.
    let slots = cached.shard_slots();
    let (fresh, counts) =
        tokio::join!(app.catalogue.get_skus(std::slice::from_ref(sku)), app.shards.read_shards(sku, slots));
    let meta = fresh?.remove(sku).ok_or_else(|| FreezeError::UnknownSku(sku.clone()))?;
    app.caches.put_sku(&meta, clock::now_ms());
    if meta.paused {
        app.count(names::FREEZE_REFUSED, 1);
        return Err(FreezeError::SalePaused(sku.clone()));
    }
    let mut counts = counts?;
    if meta.slots > slots {
        counts = app.shards.read_shards(sku, meta.slots).await?;
    }
    let shards = meta.shards.clamp(1, MAX_SHARDS);
    // Every slot counts: a release after a shard-count reduction puts units back on the shard
    // its lock took them from, which may lie beyond the current count.
    let available: Vec<i64> = counts.iter().map(|c| c.available).collect();
    let start = start_shard(r.id.as_str(), sku, shards);
    replan_or_backorder(app, r, sku, &available, start)
}

/// [`replan`] of the lines on `cell`; when the cell is short, a BACKORDER SKU's lines keep what
/// exists and record the rest as backordered (docs/inventory-models.md, "Backorders (oversell
/// allowed)"), anything else is refused as short.
pub(super) fn replan_or_backorder(
    app: &App,
    r: &mut Reservation,
    cell: &Sku,
    available: &[i64],
    start: u16,
) -> Result<(), FreezeError> {
    let which = |l: &ReservedLine| !l.takes_at_payment() && !l.holds_codes();
    let refused = |short: Shortfall| {
        app.caches.mark_short(cell, short.available, clock::now_ms());
        app.count(names::FREEZE_REFUSED, 1);
        FreezeError::Insufficient(cell.clone())
    };
    match replan(r, cell, available, start, which) {
        Ok(()) => Ok(()),
        Err(short) if crate::domain::backorder::shorten(r, cell, short.available) => {
            app.count(names::BACKORDERS_ACCEPTED, 1);
            replan(r, cell, available, start, which).map_err(refused)
        }
        Err(short) => Err(refused(short)),
    }
}

/// Re-plans every piece the lines picked by `which` hold on `cell` from the cell's shard
/// counts: one split of their sum, handed out line by line (two lines on one cell — a bundle's
/// child also ordered alone — must not take the same units twice).
pub(super) fn replan(
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
