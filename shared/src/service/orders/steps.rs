//! The named steps of a checkout ([`super::create_with`]; docs/architecture.md, "Checkout").

use super::*;
use crate::domain::campaign::Campaign;
use crate::ports::SkuMeta;
use std::collections::HashMap;

/// The lines' (cached) campaigns, their admission buckets, the earliest campaign end (plus its
/// grace) and the one queued campaign among them.
pub(super) struct LineCampaigns {
    pub campaigns: Vec<Option<Campaign>>,
    pub admissions: Vec<(Sku, Option<(String, u32)>)>,
    pub end: i64,
    pub queued: Option<Campaign>,
}

/// [`LineCampaigns`] of `lines`; two queued campaigns in one checkout are refused.
pub(super) async fn line_campaigns(
    app: &App,
    lines: &[LineRequest],
    metas: &HashMap<Sku, SkuMeta>,
) -> Result<LineCampaigns, CreateError> {
    let mut out = LineCampaigns {
        campaigns: Vec::with_capacity(lines.len()),
        admissions: Vec::with_capacity(lines.len()),
        end: i64::MAX,
        queued: None,
    };
    for l in lines {
        let c = match &l.campaign {
            Some(id) => Some(stock::campaign(app, id).await?),
            None => None,
        };
        if let Some(c) = &c {
            out.end = out.end.min(c.ends_at.saturating_add(c.end_grace_s));
            if c.queue.is_some() {
                if out.queued.as_ref().is_some_and(|q| q.id != c.id) {
                    return Err(CreateError::TwoQueues);
                }
                out.queued = Some(c.clone());
            }
        }
        let key = super::super::sale::admission_key(&l.sku, metas[&l.sku].controls.admission_rate, c.as_ref());
        out.admissions.push((l.sku.clone(), key));
        out.campaigns.push(c);
    }
    Ok(out)
}

/// The freeze, with its reservation-check message sent beside it (one round trip); when the
/// sold-out mark already refuses the lines, the message is sent only if the freeze did create
/// a lock after all. A failed send never turns a successful freeze into a 503 (the stock would
/// stay held until reconcile): the sweep is the second net.
pub(super) async fn freeze_with_check(
    app: &App,
    id: &OrderId,
    req: &FreezeRequest,
    metas: &HashMap<Sku, SkuMeta>,
    now: i64,
) -> Result<Frozen, FreezeError> {
    let check = Message::ReservationCheck {
        schema: 1,
        reservation_id: req.id.to_string(),
        kind: ReservationKind::Order,
        due_at: now + app.config.reservation_check_delay_s,
    };
    let delay = app.config.reservation_check_delay_s.min(MAX_DELAY_SECONDS) as u32;
    let (frozen, sent) = if stock::fast_path_refusal(app, &req.lines).is_some() {
        let frozen = stock::freeze(app, req, metas).await;
        // the sold-out mark lapsed in between: this freeze still needs its check
        let sent = match &frozen {
            Ok(Frozen::Created(_)) => app.messages.send(&check, delay).await,
            _ => Ok(()),
        };
        (frozen, sent)
    } else {
        tokio::join!(stock::freeze(app, req, metas), app.messages.send(&check, delay))
    };
    if let (Ok(Frozen::Created(_)), Err(e)) = (&frozen, sent) {
        tracing::warn!(order_id = %id, error = format!("{e:#}"), "reservation-check message not sent");
    }
    frozen
}

/// What a freeze's answer means for the checkout: the reservation to write the order on, or
/// (`Ok(Err(..))`) the order a replay is answered.
pub(super) async fn reservation_of(
    app: &App,
    id: &OrderId,
    frozen: Result<Frozen, FreezeError>,
) -> Result<Result<Reservation, (Order, bool)>, CreateError> {
    match frozen {
        Ok(Frozen::Created(r)) => {
            if crate::fault!(app.faults, faults::AFTER_FREEZE) {
                return Err(InjectedCrash(faults::AFTER_FREEZE).into());
            }
            Ok(Ok(r))
        }
        Ok(Frozen::Replayed(r)) => match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) => Ok(Err((*o, true))),
            Some(OrderRecord::Void) => Err(CreateError::ReservationExpired),
            None if r.status == LockStatus::Frozen && r.expires_at > clock::now_s() => Ok(Ok(r)),
            None if r.status == LockStatus::Frozen => {
                // a retry after the payment deadline: no order may start on it
                if app.orders.put_void(id).await? {
                    stock::release(app, &r.id).await.map_err(|e| CreateError::Store(anyhow::anyhow!("{e}")))?;
                }
                Err(CreateError::ReservationExpired)
            }
            None => Err(CreateError::ReservationExpired),
        },
        Err(FreezeError::RequestMismatch) => Err(CreateError::KeyReused),
        Err(e) => Err(e.into()),
    }
}

/// The lines' SKUs, checked before anything is written: the kinds' admission (a SUPPLIER line
/// is quoted only if its order may be made at all), one currency, and every line's total
/// representable. A new checkout's SKUs must share a currency; the order takes its currency
/// from the lines its reservation recorded, so a replay after a currency change keeps the one
/// it was priced in, and is answered even if the SKUs no longer share one (protocol review #4).
pub(super) async fn checked_metas(
    app: &App,
    lines: &[LineRequest],
    rid: &ReservationId,
) -> Result<HashMap<Sku, SkuMeta>, CreateError> {
    let skus: Vec<Sku> = lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await?;
    stock::admission(ReservationKind::Order, lines, &metas)?;
    if let Err(e) = single_currency(metas.values().map(|m| &m.currency)) {
        if app.locks.get_reservation(rid).await?.is_none() {
            return Err(e);
        }
    }
    for l in lines {
        let nights = u32::try_from(l.dates.len().max(1)).unwrap_or(u32::MAX);
        Money::line_total(metas[&l.sku].price, l.quantity.get().saturating_mul(nights))?;
    }
    Ok(metas)
}

/// A checkout refused before anything is written (`e`), unless it is the retry of one that
/// committed: that is answered its order, never refused (review protocol-3 N13) — one read,
/// on the refused path only.
pub(super) async fn refused(app: &App, id: &OrderId, hash: &str, e: CreateError) -> Result<(Order, bool), CreateError> {
    match replay_of(app, id, hash).await? {
        Some(o) => Ok((o, true)),
        None => Err(e),
    }
}

/// The bookings a SUPPLIER order will make, its lines quoted first (a line above its quote
/// writes nothing); `Ok(Err(..))` is the order a replay made (its quote may have moved since).
pub(super) async fn quoted_bookings(
    app: &App,
    id: &OrderId,
    hash: &str,
    lines: &[LineRequest],
    metas: &HashMap<Sku, SkuMeta>,
) -> Result<Result<Vec<crate::domain::supplier::SupplierBooking>, (Order, bool)>, CreateError> {
    let supplier_lines = super::super::supplier::lines_of(lines, metas)?;
    if !supplier_lines.is_empty() {
        match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) if o.request_hash == hash => return Ok(Err((*o, true))),
            Some(OrderRecord::Order(_)) => return Err(CreateError::KeyReused),
            Some(OrderRecord::Void) => return Err(CreateError::ReservationExpired),
            None => super::super::supplier::check_quotes(app, &supplier_lines).await?,
        }
    }
    Ok(Ok(super::super::supplier::bookings_for(&supplier_lines, metas)))
}
