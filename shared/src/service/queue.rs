//! The waiting room of a drop (docs/waiting-room.md): joining a campaign's queue, where a buyer
//! stands, the admission token a checkout spends, and the operators' view and lever. The room
//! knows the stock: it stops admitting while every unit left is held, and tells the waiting when
//! nothing more can sell.

use super::stock::FreezeError;
use crate::clock;
use crate::context::App;
use crate::domain::campaign::{Campaign, QueueSettings};
use crate::domain::queue::{self, Admission, HaltReason, QueueSpec, Room, Stock, Ticket, TicketState, TokenError};
use crate::domain::{CampaignId, UserId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, OnceLock};

/// How long one warm Lambda trusts what it read of a campaign's stock.
const STOCK_CACHE_MS: i64 = 1_000;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// No such campaign, or it has no queue (or the buyer has no ticket).
    #[error("{0}")]
    NotFound(String),
    #[error("campaign {0} has ended")]
    Ended(CampaignId),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// Where a buyer stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// `None`: no ticket was issued (the campaign was sold out when they came).
    pub ticket: Option<u64>,
    pub position: Option<u64>,
    pub state: TicketState,
    /// Seconds until admission (waiting), or until the token expires (admitted).
    pub eta_seconds: Option<i64>,
    pub admission_token: Option<String>,
}

/// A new queue's spec: the admin's settings and a fresh seed from the system's secure random
/// source (its SHA-256 is published at once; the seed after the start).
pub fn new_queue(s: QueueSettings) -> anyhow::Result<QueueSpec> {
    let mut seed = [0u8; 32];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut seed)
        .map_err(|_| anyhow::anyhow!("no secure random source for the queue's seed"))?;
    Ok(QueueSpec {
        rate: s.rate,
        token_ttl_s: s.token_ttl_s,
        draw: s.draw,
        seed: hex::encode(seed),
        counters: s.counters,
    })
}

async fn queued(app: &App, id: &CampaignId) -> Result<(Campaign, QueueSpec), QueueError> {
    let c = match super::stock::campaign(app, id).await {
        Ok(c) => c,
        Err(FreezeError::UnknownCampaign(_)) => return Err(QueueError::NotFound(format!("no campaign {id}"))),
        Err(FreezeError::Store(e)) => return Err(e.into()),
        Err(e) => return Err(anyhow::anyhow!("{e}").into()),
    };
    let spec = c.queue.clone().ok_or_else(|| QueueError::NotFound(format!("campaign {id} has no queue")))?;
    Ok((c, spec))
}

/// Joins `user` to campaign `id`'s queue: `true` when a ticket was taken now, `false` for the
/// one they had (one per buyer). A campaign that can sell nothing more answers `SOLD_OUT` and
/// writes nothing. Two writes: the counter, the ticket.
pub async fn join(app: &App, user: &UserId, id: &CampaignId) -> Result<(Place, bool), QueueError> {
    let (c, spec) = queued(app, id).await?;
    let now = clock::now_ms();
    if now >= c.ends_at.saturating_mul(1000) {
        return Err(QueueError::Ended(id.clone()));
    }
    if let Some(t) = app.queues.ticket(id, user).await? {
        return Ok((place(app, &c, &spec, user, &t).await?, false));
    }
    let stock = stock_of(app, &c).await?;
    if stock == Stock::SoldOut {
        let p = Place {
            ticket: None,
            position: None,
            state: TicketState::SoldOut,
            eta_seconds: None,
            admission_token: None,
        };
        return Ok((p, false));
    }
    // the room moves (a halt, for units all held) before this ticket exists, so a ticket taken
    // during a halt waits for the resume
    room_now(app, &c, &spec, stock, now).await?;
    // counters in turn from a random start: each warm Lambda spreads its joins over all of them
    static NEXT: OnceLock<AtomicU16> = OnceLock::new();
    let k =
        NEXT.get_or_init(|| AtomicU16::new(fastrand::u16(..))).fetch_add(1, Ordering::Relaxed) % spec.counters.max(1);
    let n = app.queues.next_number(id, k).await?;
    let t = Ticket { number: queue::ticket_number(k, n, spec.counters), joined_at_ms: now };
    if app.queues.put_ticket(id, user, &t).await? {
        app.count(crate::telemetry::names::QUEUE_JOINS, 1);
        return Ok((place(app, &c, &spec, user, &t).await?, true));
    }
    // a concurrent join of the same buyer won: theirs is the ticket (this number stays unused)
    let theirs = app.queues.ticket(id, user).await?.ok_or_else(|| anyhow::anyhow!("ticket vanished"))?;
    Ok((place(app, &c, &spec, user, &theirs).await?, false))
}

/// Where `user` stands in campaign `id`'s queue.
pub async fn me(app: &App, user: &UserId, id: &CampaignId) -> Result<Place, QueueError> {
    let (c, spec) = queued(app, id).await?;
    let t = app.queues.ticket(id, user).await?.ok_or_else(|| QueueError::NotFound("no ticket in this queue".into()))?;
    place(app, &c, &spec, user, &t).await
}

async fn place(app: &App, c: &Campaign, spec: &QueueSpec, user: &UserId, t: &Ticket) -> Result<Place, QueueError> {
    let now = clock::now_ms();
    let stock = stock_of(app, c).await?;
    let room = room_now(app, c, spec, stock, now).await?;
    let position = queue::position(spec, &room, t.number);
    let starts = c.starts_at.saturating_mul(1000);
    let admitted = position.is_some_and(|p| p <= room.admitted_through(spec, starts, now));
    let used = admitted && app.queues.spent(&c.id, t.number).await?;
    let (state, at) = queue::state(spec, &room, starts, position, used, stock, now);
    let eta_seconds = at.map(|ms| ((ms - now).max(0) + 999) / 1000);
    let admission_token = match state {
        TicketState::Admitted => {
            let a = Admission {
                campaign: c.id.to_string(),
                user: user.to_string(),
                ticket: t.number,
                expires_at_ms: at.unwrap_or(now),
            };
            // signed with the current key (the first); the previous one still verifies
            let keys = app.admission_keys.keys().await?;
            let key = keys.first().ok_or_else(|| anyhow::anyhow!("no admission key"))?;
            Some(queue::sign(&a, key.expose()))
        }
        _ => None,
    };
    Ok(Place { ticket: Some(t.number), position, state, eta_seconds, admission_token })
}

/// The room's clock as of `now_ms`, moved when the stock says so: halted while every unit left
/// is held, resumed when one comes back (an operator's pause stays until they resume), and, for
/// a drawn queue, the counters at the start recorded once. Each move is one conditional write by
/// whichever reader sees it first; every other read writes nothing.
async fn room_now(app: &App, c: &Campaign, spec: &QueueSpec, stock: Stock, now_ms: i64) -> anyhow::Result<Room> {
    let starts = c.starts_at.saturating_mul(1000);
    let mut room = app.queues.room(&c.id).await?;
    for _ in 0..3 {
        let next = if spec.draw == queue::Draw::Random && now_ms >= starts && room.pre_start.is_none() {
            let pre = app.queues.counters(&c.id, spec.counters).await?;
            Some(Room { version: room.version + 1, pre_start: Some(pre), ..room.clone() })
        } else if now_ms < starts {
            None
        } else {
            match (stock, room.halted.map(|h| h.reason)) {
                (Stock::AllHeld, None) => {
                    let last = last_position(app, c, spec, &room).await?;
                    Some(room.halt(spec, starts, now_ms, last, HaltReason::AllHeld))
                }
                (Stock::Selling, Some(HaltReason::AllHeld)) => Some(room.resume(now_ms)),
                _ => None,
            }
        };
        let Some(next) = next else { return Ok(room) };
        if app.queues.put_room(&c.id, &next).await? {
            tracing::info!(campaign = %c.id, halted = next.halted.is_some(), "queue room moved");
            room = next;
        } else {
            room = app.queues.room(&c.id).await?;
        }
    }
    Ok(room)
}

/// The highest position taken so far (the counters' highest number, placed).
async fn last_position(app: &App, c: &Campaign, spec: &QueueSpec, room: &Room) -> anyhow::Result<u64> {
    let counters = app.queues.counters(&c.id, spec.counters).await?;
    let highest = counters
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| queue::ticket_number(k as u16, *n, spec.counters))
        .max()
        .unwrap_or(0);
    Ok(queue::position(spec, room, highest).unwrap_or(highest))
}

/// What the room knows of the campaign's stock, cached for a second per warm Lambda: an item can
/// sell when its quota and its SKU (or ring-fenced cell) both have units available; nothing can
/// sell but some quota is held by checkouts → all held; else sold out.
pub async fn stock_of(app: &App, c: &Campaign) -> anyhow::Result<Stock> {
    type Cache = Mutex<HashMap<CampaignId, (i64, Stock)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let now = clock::now_ms();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((at, s)) = cache.lock().ok().and_then(|m| m.get(&c.id).copied()) {
        if now - at < STOCK_CACHE_MS {
            return Ok(s);
        }
    }
    let mut held = false;
    let mut selling = false;
    for i in &c.items {
        let quota = app.campaigns.read_quota_shards(&c.id, &i.sku, i.quota_shards(), false).await?;
        let q_available: i64 = quota.iter().map(|s| s.available).sum();
        held |= quota.iter().map(|s| s.locked).sum::<i64>() > 0;
        if q_available <= 0 {
            continue;
        }
        let cell = if i.reserve { i.sku.reserve_cell(&c.id) } else { i.sku.clone() };
        let metas = app.catalogue.get_skus(std::slice::from_ref(&cell)).await?;
        let Some(meta) = metas.get(&cell) else { continue };
        let available: i64 = app.shards.read_shards(&cell, meta.slots).await?.iter().map(|s| s.available).sum();
        selling |= available > 0;
    }
    let s = match (selling, held) {
        (true, _) => Stock::Selling,
        (false, true) => Stock::AllHeld,
        (false, false) => Stock::SoldOut,
    };
    if let Ok(mut m) = cache.lock() {
        m.insert(c.id.clone(), (now, s));
    }
    Ok(s)
}

/// Why a checkout's admission is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionRefusal {
    #[error("items of queued campaign {0} are checked out with an admission token from its queue")]
    Required(CampaignId),
    #[error("{0}")]
    Invalid(TokenError),
}

/// The admission a checkout of queued campaign `c`'s items spends: its token verified for this
/// buyer and campaign (the current or the previous key).
pub async fn admission_of(
    app: &App,
    c: &Campaign,
    user: &UserId,
    token: Option<&str>,
) -> Result<Result<(CampaignId, u64), AdmissionRefusal>, anyhow::Error> {
    let Some(token) = token else { return Ok(Err(AdmissionRefusal::Required(c.id.clone()))) };
    let keys = app.admission_keys.keys().await?;
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.expose()).collect();
    Ok(match queue::verify(token, &refs, user, &c.id, clock::now_ms()) {
        Ok(a) => Ok((c.id.clone(), a.ticket)),
        Err(e) => Err(AdmissionRefusal::Invalid(e)),
    })
}

/// The operators' view of a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    pub joined: u64,
    pub admitted_through: u64,
    pub halted: Option<HaltReason>,
    pub stock: Stock,
    /// Seconds until the last ticket taken is admitted (`None` while halted).
    pub tail_eta_seconds: Option<i64>,
}

/// Counts of a queue: tickets taken (the counters), positions admitted, and when the tail is in.
pub async fn stats(app: &App, id: &CampaignId) -> Result<(Campaign, QueueSpec, Room, QueueStats), QueueError> {
    let (c, spec) = queued(app, id).await?;
    let now = clock::now_ms();
    let stock = stock_of(app, &c).await?;
    let room = room_now(app, &c, &spec, stock, now).await?;
    let joined: u64 = app.queues.counters(id, spec.counters).await?.iter().sum();
    let starts = c.starts_at.saturating_mul(1000);
    let tail = last_position(app, &c, &spec, &room).await?;
    let tail_eta_seconds = room.admitted_at(&spec, starts, tail).map(|ms| ((ms - now).max(0) + 999) / 1000);
    let s = QueueStats {
        joined,
        admitted_through: room.admitted_through(&spec, starts, now),
        halted: room.halted.map(|h| h.reason),
        stock,
        tail_eta_seconds,
    };
    Ok((c, spec, room, s))
}

/// An operator pauses (`true`) or resumes admission; positions admitted stay admitted.
pub async fn set_paused(app: &App, id: &CampaignId, paused: bool) -> Result<QueueStats, QueueError> {
    let (c, spec) = queued(app, id).await?;
    let starts = c.starts_at.saturating_mul(1000);
    for attempt in 1..=super::CAS_ATTEMPTS {
        let room = app.queues.room(id).await?;
        let now = clock::now_ms().max(starts);
        let next = match (paused, room.halted) {
            (true, Some(h)) if h.reason == HaltReason::Paused => break,
            (true, _) => {
                let last = last_position(app, &c, &spec, &room).await?;
                room.halt(&spec, starts, now, last, HaltReason::Paused)
            }
            (false, Some(h)) if h.reason == HaltReason::Paused => room.resume(now),
            (false, _) => break,
        };
        if app.queues.put_room(id, &next).await? {
            tracing::info!(campaign = %id, paused, "queue admission paused or resumed");
            break;
        }
        super::backoff(attempt).await;
    }
    Ok(stats(app, id).await?.3)
}
