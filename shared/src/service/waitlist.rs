//! "Notify me" waitlists of sold-out SKUs (docs/waitlist.md): joining within the bounds,
//! leaving, where a buyer stands (with the admission token once told), and the upkeep that
//! settles told entries (spent or expired) and tells the next buyers in join order, as many as
//! units are free. The upkeep runs when the stock journal sees a SKU's available units rise,
//! on every waitlist request for the SKU, and in the reconcile sweep (the backstop for tokens
//! that expire unused while nothing else happens).

use crate::clock;
use crate::context::App;
use crate::domain::waitlist::{self as wl, Bounds, Entry, Head, JoinRefusal, UserWaits, WaitState};
use crate::domain::{Sku, UserId};
use crate::ports::{Pointer, SkuMeta, WaitCommit};
use crate::telemetry::names;

#[derive(Debug, thiserror::Error)]
pub enum WaitlistError {
    #[error("no SKU {0}")]
    UnknownSku(Sku),
    #[error(
        "{0} is not a plain stocked SKU: calendar, bundle, code pool, unlimited, pay-time and supplier SKUs have no waitlist"
    )]
    NotWaitlistable(Sku),
    #[error("{0} is not sold out ({1} available): buy it now")]
    NotSoldOut(Sku, i64),
    #[error(transparent)]
    Refused(#[from] JoinRefusal),
    #[error("you are not on this SKU's waitlist")]
    NotFound,
    #[error("the waitlist is busy; retry")]
    Contention,
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// A buyer's entry as they see it: once told, with the token their checkout spends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub entry: Entry,
    pub admission_token: Option<String>,
}

async fn meta(app: &App, sku: &Sku) -> Result<SkuMeta, WaitlistError> {
    let meta = app
        .catalogue
        .get_skus(std::slice::from_ref(sku))
        .await?
        .remove(sku)
        .ok_or_else(|| WaitlistError::UnknownSku(sku.clone()))?;
    if !super::campaigns::fence::fenceable(&meta) {
        return Err(WaitlistError::NotWaitlistable(sku.clone()));
    }
    Ok(meta)
}

/// The SKU's units free for anyone now (its own shards; ring-fenced units are a campaign's).
async fn available(app: &App, meta: &SkuMeta) -> anyhow::Result<i64> {
    Ok(app.shards.read_shards(&meta.sku, meta.slots).await?.iter().map(|s| s.available.max(0)).sum())
}

async fn place(app: &App, sku: &Sku, e: Entry) -> anyhow::Result<Place> {
    let admission_token = match e.state {
        WaitState::Notified if e.expires_at_ms.is_some_and(|x| clock::now_ms() < x) => {
            // signed with the current key (the first); the previous one still verifies
            let keys = app.admission_keys.keys().await?;
            let key = keys.first().ok_or_else(|| anyhow::anyhow!("no admission key"))?;
            wl::token(sku, &e, key.expose())
        }
        _ => None,
    };
    Ok(Place { entry: e, admission_token })
}

/// `user` joins `sku`'s waitlist: `true` when the entry was made now, `false` for the one they
/// have (waiting or told). Only a sold-out plain SKU takes joins, within the bounds. The upkeep
/// runs first, as for `…/waitlist/me`: a told entry whose token was spent or lapsed is settled,
/// so it is no longer the buyer's place and counts against neither bound.
pub async fn join(app: &App, user: &UserId, sku: &Sku) -> Result<(Place, bool), WaitlistError> {
    let meta = meta(app, sku).await?;
    upkeep_of(app, sku, Some(meta.clone())).await?;
    let bounds =
        Bounds { max_per_sku: app.config.waitlist_max_per_sku, max_per_user: app.config.waitlist_max_per_user };
    let mut settled_elsewhere = false;
    for attempt in 1..=super::CAS_ATTEMPTS {
        // the head first, then the buyer's entry: every join, leave or settle moves the head, so
        // a commit over this head fails if the entry (or its pointer) moved after these reads
        let head = app.waitlists.waitlist(sku).await?;
        let mine = app.waitlists.wait_entry_of(sku, user).await?;
        if let Some(e) = mine.clone().filter(|e| e.state.active()) {
            return Ok((place(app, sku, e).await?, false));
        }
        let free = available(app, &meta).await?;
        if free > 0 {
            return Err(WaitlistError::NotSoldOut(sku.clone(), free));
        }
        let waits = app.waitlists.user_waits(user).await?;
        let j = match wl::join(&head, &waits, sku, user, clock::now_ms(), bounds) {
            // the buyer's told entries on their other SKUs may be done too: settled, they count
            // no more (once per join)
            Err(JoinRefusal::TooMany(_)) if !settled_elsewhere => {
                settled_elsewhere = true;
                for other in waits.skus.iter().filter(|s| *s != sku.as_str()).filter_map(|s| Sku::parse(s).ok()) {
                    upkeep(app, &other).await?;
                }
                continue;
            }
            j => j?,
        };
        // the pointer moves only from what was read: of two joins of one buyer, one makes the entry
        let pointer = Pointer { user: user.clone(), number: j.entry.number, over: mine.map(|e| e.number) };
        let commit = WaitCommit {
            sku: sku.clone(),
            head: j.head,
            entries: vec![j.entry.clone()],
            pointer: Some(pointer),
            users: vec![(user.clone(), j.user)],
        };
        if app.waitlists.commit_waitlist(&commit).await? {
            tracing::info!(sku = %sku, number = j.entry.number, "waitlist joined");
            return Ok((place(app, sku, j.entry).await?, true));
        }
        // a version or the pointer moved (maybe a concurrent join of this buyer: read again)
        super::backoff(attempt).await;
    }
    Err(WaitlistError::Contention)
}

/// `user` leaves `sku`'s waitlist (a told entry's unit goes to the next in line). Works whenever
/// the buyer has an entry, whatever the SKU has become since; leaving a done entry changes
/// nothing.
pub async fn leave(app: &App, user: &UserId, sku: &Sku) -> Result<(), WaitlistError> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        // the head first, then the entry: every change of an entry moves the head, so a stale
        // entry (settled or left since) fails the commit over this head instead of being acted on
        let head = app.waitlists.waitlist(sku).await?;
        let Some(e) = app.waitlists.wait_entry_of(sku, user).await? else {
            // never joined: an unknown SKU, or one without waitlists, says so
            meta(app, sku).await?;
            return Err(WaitlistError::NotFound);
        };
        let Some((next, left)) = wl::leave(&head, &e) else { return Ok(()) };
        let waits = app.waitlists.user_waits(user).await?;
        let commit = WaitCommit {
            sku: sku.clone(),
            head: next,
            entries: vec![left],
            pointer: None,
            users: vec![(user.clone(), wl::without(&waits, sku))],
        };
        if app.waitlists.commit_waitlist(&commit).await? {
            // the leave is done; its unit goes on now, or at the sweep should this fail
            if e.state == WaitState::Notified {
                upkeep_all(app, std::slice::from_ref(sku)).await;
            }
            return Ok(());
        }
        super::backoff(attempt).await;
    }
    Err(WaitlistError::Contention)
}

/// Where `user` stands on `sku`'s waitlist (the upkeep runs first, so a spent or lapsed token
/// reads as such and a free unit is told at once).
pub async fn me(app: &App, user: &UserId, sku: &Sku) -> Result<Place, WaitlistError> {
    let meta = meta(app, sku).await?;
    upkeep_of(app, sku, Some(meta)).await?;
    let e = app.waitlists.wait_entry_of(sku, user).await?.ok_or(WaitlistError::NotFound)?;
    Ok(place(app, sku, e).await?)
}

/// Settles the told entries that are done (spent → USED, lapsed → EXPIRED): one commit of at
/// most [`wl::BATCH`]. `Ok(None)`: a version moved (retry); `Ok(Some((head, full)))`: the head
/// now, and whether the batch was full (more may be done).
async fn settle_once(app: &App, sku: &Sku, head: &Head) -> anyhow::Result<Option<(Head, bool)>> {
    if head.live.is_empty() {
        return Ok(Some((head.clone(), false)));
    }
    let scope = wl::scope(sku);
    let mut told = Vec::new();
    for e in app.waitlists.wait_entries(sku, &head.live).await? {
        let spent = app.queues.spent(&scope, e.number).await?;
        told.push((e, spent));
    }
    let Some((next, done)) = wl::settle(head, &told, clock::now_ms()) else { return Ok(Some((head.clone(), false))) };
    let mut users: Vec<(UserId, UserWaits)> = Vec::with_capacity(done.len());
    for e in &done {
        let u = UserId::parse(&e.user).map_err(|e| anyhow::anyhow!("{e}"))?;
        // one write per buyer list (a transaction names an item once)
        if users.iter().any(|(x, _)| *x == u) {
            continue;
        }
        let waits = app.waitlists.user_waits(&u).await?;
        users.push((u, wl::without(&waits, sku)));
    }
    let commit = WaitCommit { sku: sku.clone(), head: next.clone(), entries: done.clone(), pointer: None, users };
    if !app.waitlists.commit_waitlist(&commit).await? {
        return Ok(None);
    }
    let expired = done.iter().filter(|e| e.state == WaitState::Expired).count();
    app.count(names::WAITLIST_EXPIRED, expired as u64);
    Ok(Some((next, done.len() == wl::BATCH)))
}

/// Tells the next waiting buyers, as many as units are free beyond the tokens out (at most
/// [`wl::BATCH`]): one commit, then one `WaitlistNotified` event each. `Ok(None)`: a version
/// moved (retry); `Ok(Some((told, more)))`: how many were told, whether another round may tell
/// more (units are still owed and entries remain after the cursor).
async fn tell_once(app: &App, meta: &SkuMeta, head: &Head) -> anyhow::Result<Option<(usize, bool)>> {
    if head.cursor >= head.next {
        return Ok(Some((0, false)));
    }
    // planted bug `waitlist-tells-one-more` (sim only): one buyer more than units are free
    let one_more = usize::from(crate::mutant!("waitlist-tells-one-more"));
    let free = available(app, meta).await?;
    let (want, k) = (wl::wanted(free, head) + one_more, wl::owed(free, head) + one_more);
    if k == 0 {
        return Ok(Some((0, false)));
    }
    let numbers: Vec<u64> = wl::candidates(head).collect();
    let after = app.waitlists.wait_entries(&meta.sku, &numbers).await?;
    let ttl = app.config.waitlist_token_ttl_s;
    let Some((next, told)) = wl::notify(head, &after, k, clock::now_ms(), ttl) else { return Ok(Some((0, false))) };
    let commit =
        WaitCommit { sku: meta.sku.clone(), head: next.clone(), entries: told.clone(), pointer: None, users: vec![] };
    if !app.waitlists.commit_waitlist(&commit).await? {
        return Ok(None);
    }
    announce(app, &meta.sku, &told).await;
    Ok(Some((told.len(), told.len() < want && next.cursor < next.next)))
}

/// `WaitlistNotified` on the bus, one per told buyer (docs/waitlist.md, "The event"): best
/// effort and counted; the buyer's `GET …/waitlist/me` reads the state and the token either way.
async fn announce(app: &App, sku: &Sku, told: &[Entry]) {
    if told.is_empty() {
        return;
    }
    let details: Vec<serde_json::Value> = told
        .iter()
        .map(|e| {
            serde_json::json!({
                "type": "waitlist", "sku": sku.as_str(), "user_id": e.user, "position": e.number,
                "state": e.state.as_str(), "notified_at_ms": e.notified_at_ms, "expires_at_ms": e.expires_at_ms,
            })
        })
        .collect();
    app.count(names::WAITLIST_NOTIFIED, told.len() as u64);
    match app.bus.publish_stock_batch("WaitlistNotified", &details).await {
        Ok(n) => app.count(names::WAITLIST_NOT_SENT, (details.len() - n) as u64),
        Err(e) => {
            app.count(names::WAITLIST_NOT_SENT, details.len() as u64);
            tracing::warn!(sku = %sku, error = format!("{e:#}"), "WaitlistNotified not sent");
        }
    }
    tracing::info!(sku = %sku, told = told.len(), "waitlisted buyers told");
}

/// Most writes of progress (a settle or a round of telling, each of at most [`wl::BATCH`]
/// entries) one upkeep makes; what is left is done by the next trigger (the sweep runs for every
/// SKU with free units).
const ROUNDS: u32 = 25;

/// Settles `sku`'s told entries and tells the next ones (see the module docs). Returns how many
/// were told. A SKU without a waitlist costs one read.
pub async fn upkeep(app: &App, sku: &Sku) -> anyhow::Result<usize> {
    upkeep_of(app, sku, None).await
}

/// [`upkeep`] with the SKU's metadata when the caller has read it. A SKU gone or no longer
/// waitlistable has its told entries settled and no one more told; other failures are raised.
async fn upkeep_of(app: &App, sku: &Sku, mut meta_of: Option<SkuMeta>) -> anyhow::Result<usize> {
    let (mut told_total, mut attempt, mut rounds) = (0, 0, 0);
    while attempt < super::CAS_ATTEMPTS && rounds < ROUNDS {
        let head = app.waitlists.waitlist(sku).await?;
        if head.version == 0 {
            return Ok(told_total);
        }
        let head = match settle_once(app, sku, &head).await? {
            None => {
                attempt += 1;
                super::backoff(attempt).await;
                continue;
            }
            Some((_, true)) => {
                rounds += 1;
                continue;
            }
            Some((head, false)) => head,
        };
        let m = match &meta_of {
            Some(m) => m.clone(),
            None => match meta(app, sku).await {
                Ok(m) => meta_of.insert(m).clone(),
                Err(WaitlistError::UnknownSku(_) | WaitlistError::NotWaitlistable(_)) => return Ok(told_total),
                Err(WaitlistError::Store(e)) => return Err(e),
                Err(e) => return Err(e.into()),
            },
        };
        match tell_once(app, &m, &head).await? {
            None => {
                attempt += 1;
                super::backoff(attempt).await;
            }
            Some((told, more)) => {
                told_total += told;
                if !more {
                    return Ok(told_total);
                }
                rounds += 1;
            }
        }
    }
    Ok(told_total)
}

/// The upkeep of every SKU in `skus` (the stock journal's SKUs whose units rose; the sweep's
/// pages): failures are logged, never raised (the next trigger or sweep does it again).
pub async fn upkeep_all(app: &App, skus: &[Sku]) -> usize {
    let mut told = 0;
    for sku in skus {
        match upkeep(app, sku).await {
            Ok(n) => told += n,
            Err(e) => tracing::warn!(sku = %sku, error = format!("{e:#}"), "waitlist upkeep failed"),
        }
    }
    told
}

/// The waitlist admission a checkout without a queued campaign spends: `None` without a token;
/// with one, it must be a told entry's token of this buyer for one of the order's own
/// (campaign-less) lines, unexpired, under the current or the previous key.
#[allow(clippy::type_complexity)]
pub async fn admission_of(
    app: &App,
    lines: &[super::stock::LineRequest],
    user: &UserId,
    token: Option<&str>,
) -> anyhow::Result<Result<Option<(crate::domain::CampaignId, u64)>, super::queue::AdmissionRefusal>> {
    use crate::domain::queue::TokenError;
    let Some(token) = token else { return Ok(Ok(None)) };
    let keys = app.admission_keys.keys().await?;
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.expose()).collect();
    let now = clock::now_ms();
    let mut refusal = TokenError::Foreign;
    for l in lines.iter().filter(|l| l.campaign.is_none()) {
        match wl::verify(token, &refs, user, &l.sku, now) {
            Ok(number) => return Ok(Ok(Some((wl::scope(&l.sku), number)))),
            // the most telling refusal: malformed, forged or expired before "not for this line"
            Err(TokenError::Foreign) => {}
            Err(e) => refusal = e,
        }
    }
    Ok(Err(super::queue::AdmissionRefusal::Invalid(refusal)))
}
