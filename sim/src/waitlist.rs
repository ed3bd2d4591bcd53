//! The notify-me waitlists in the simulator (docs/simulator.md, "The waitlist"): the services'
//! Waitlists port, watched, and the waitlist actor's calls into the real services.
//!
//! [`Watched`] wraps the in-memory port the services use. Every change of a waitlist is one
//! commit through it, so it keeps a mirror of every entry and judges each round of telling at
//! the instant it commits:
//!
//! - **WaitlistOutOfOrder**: after the commit, no entry numbered before one it told is still
//!   `WAITING` (buyers are told in join order, skipping only those who left);
//! - **WaitlistToldBeyondUnits**: the `NOTIFIED` entries (the head's live tokens) are at most the
//!   free units the round read (docs/waitlist.md: it tells `available − tokens still out`);
//! - **WaitlistBadTransition**: an entry moves only WAITING → NOTIFIED | LEFT and
//!   NOTIFIED → USED | EXPIRED | LEFT.
//!
//! The round reads the SKU's free units, then (with no await in between) the candidates after the
//! cursor: the watch samples the store's free units at that read, so the sample is exactly what
//! the round saw, even when other actors run in between its port calls.

use crate::world::{Checkout, Done};
use holdfast::adapters::memory::MemoryStock;
use holdfast::app::App;
use holdfast::domain::events::OrderEvent;
use holdfast::domain::waitlist::{Entry, Head, UserWaits, WaitState};
use holdfast::domain::{Sku, UserId};
use holdfast::ports::{EventBus, WaitCommit, Waitlists};
use holdfast::service::orders;
use holdfast::service::waitlist::{self, Place, WaitlistError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

/// What the watch saw since the simulator last drained it, and the mirror of every entry.
#[derive(Default)]
pub struct Watch {
    /// Every entry as last committed, by SKU and number.
    pub entries: BTreeMap<(Sku, u64), Entry>,
    /// Each SKU's head as last committed.
    pub heads: HashMap<Sku, Head>,
    /// The most free units a round of telling read since the SKU's head last moved.
    read: HashMap<Sku, i64>,
    /// SKUs whose last commit expired a token (its unit may be told to the next).
    lapsed: HashSet<Sku>,
    pub violations: Vec<String>,
    pub hits: Vec<&'static str>,
}

/// The services' Waitlists port, watched (see the module docs).
pub struct Watched {
    inner: Arc<dyn Waitlists>,
    stock: Arc<MemoryStock>,
    state: Mutex<Watch>,
}

impl Watched {
    pub fn new(inner: Arc<dyn Waitlists>, stock: Arc<MemoryStock>) -> Self {
        Watched { inner, stock, state: Mutex::new(Watch::default()) }
    }

    pub fn lock(&self) -> MutexGuard<'_, Watch> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The SKU's free units now (its own shards, as the service counts them).
    pub fn free(&self, sku: &Sku) -> i64 {
        free(&self.stock, sku)
    }

    /// Samples the free units when a round of telling reads its candidates (numbers after the
    /// cursor); a settle reads told entries, at or before it.
    fn reading(&self, sku: &Sku, numbers: &[u64]) {
        let mut w = self.lock();
        let cursor = w.heads.get(sku).map_or(0, |h| h.cursor);
        if !numbers.is_empty() && numbers.iter().all(|n| *n > cursor) {
            let free = self.free(sku);
            let r = w.read.entry(sku.clone()).or_insert(free);
            *r = (*r).max(free);
        }
    }

    /// Judges a commit the store accepted and mirrors it.
    fn committed(&self, c: &WaitCommit) {
        let mut w = self.lock();
        let sku = &c.sku;
        let mut told = Vec::new();
        let mut expired = false;
        for e in &c.entries {
            let before = w.entries.get(&(sku.clone(), e.number)).map(|x| x.state);
            use WaitState::*;
            match (before, e.state) {
                (None, Waiting) => {}
                (Some(Waiting), Notified) => told.push(e.number),
                (Some(Waiting), Left) => w.hits.push("waitlist: left while waiting"),
                (Some(Notified), Left) => w.hits.push("waitlist: left after being told"),
                (Some(Notified), Used) => w.hits.push("waitlist: token spent, entry USED"),
                (Some(Notified), Expired) => {
                    expired = true;
                    w.hits.push("waitlist: token expired unused");
                }
                (b, a) => w.violations.push(format!(
                    "WaitlistBadTransition {{ sku: {sku}, number: {}, from: {b:?}, to: {a:?} }}",
                    e.number
                )),
            }
            w.entries.insert((sku.clone(), e.number), e.clone());
        }
        if !told.is_empty() {
            w.hits.push("waitlist: told");
            if w.lapsed.contains(sku) {
                w.hits.push("waitlist: a lapsed token's unit told to the next");
            }
            let live = c.head.live.len() as i64;
            let read = w.read.get(sku).copied().unwrap_or_else(|| self.free(sku));
            if live > read {
                w.violations.push(format!(
                    "WaitlistToldBeyondUnits {{ sku: {sku}, told: {told:?}, live_tokens: {live}, free_units_read: {read} }}"
                ));
            }
            let last = told.iter().copied().max().unwrap_or(0);
            let skipped: Vec<u64> = w
                .entries
                .range((sku.clone(), 0)..(sku.clone(), last))
                .filter(|(_, e)| e.state == WaitState::Waiting)
                .map(|((_, n), _)| *n)
                .collect();
            if !skipped.is_empty() {
                w.violations.push(format!(
                    "WaitlistOutOfOrder {{ sku: {sku}, told: {told:?}, still_waiting_before: {skipped:?} }}"
                ));
            }
        }
        if expired {
            w.lapsed.insert(sku.clone());
        } else if !told.is_empty() {
            w.lapsed.remove(sku);
        }
        w.read.remove(sku);
        w.heads.insert(sku.clone(), c.head.clone());
    }
}

/// A SKU's free units in the store now (its own shards; never negative).
pub fn free(stock: &MemoryStock, sku: &Sku) -> i64 {
    stock.shards(sku).iter().map(|s| s.available.max(0)).sum()
}

type Fut<'a, T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send + 'a>>;

// `#[async_trait]`'s expansion, written out (the simulator does not depend on the macro crate)
impl Waitlists for Watched {
    fn waitlist<'l0, 'l1, 'a>(&'l0 self, sku: &'l1 Sku) -> Fut<'a, Head>
    where
        'l0: 'a,
        'l1: 'a,
        Self: 'a,
    {
        Box::pin(self.inner.waitlist(sku))
    }

    fn wait_entries<'l0, 'l1, 'l2, 'a>(&'l0 self, sku: &'l1 Sku, numbers: &'l2 [u64]) -> Fut<'a, Vec<Entry>>
    where
        'l0: 'a,
        'l1: 'a,
        'l2: 'a,
        Self: 'a,
    {
        // sampled before the port's own interleaving point: what the round just read
        self.reading(sku, numbers);
        Box::pin(self.inner.wait_entries(sku, numbers))
    }

    fn wait_entry_of<'l0, 'l1, 'l2, 'a>(&'l0 self, sku: &'l1 Sku, user: &'l2 UserId) -> Fut<'a, Option<Entry>>
    where
        'l0: 'a,
        'l1: 'a,
        'l2: 'a,
        Self: 'a,
    {
        Box::pin(self.inner.wait_entry_of(sku, user))
    }

    fn user_waits<'l0, 'l1, 'a>(&'l0 self, user: &'l1 UserId) -> Fut<'a, UserWaits>
    where
        'l0: 'a,
        'l1: 'a,
        Self: 'a,
    {
        Box::pin(self.inner.user_waits(user))
    }

    fn commit_waitlist<'l0, 'l1, 'a>(&'l0 self, c: &'l1 WaitCommit) -> Fut<'a, bool>
    where
        'l0: 'a,
        'l1: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            let ok = self.inner.commit_waitlist(c).await?;
            // judged with no await after the store's own commit: nothing ran in between
            if ok {
                self.committed(c);
            }
            Ok(ok)
        })
    }
}

/// The event bus, tapped: the `WaitlistNotified` events the services publish (accepted by the
/// in-memory bus), which the simulator delivers to their buyers as a push consumer would.
pub struct Tapped {
    inner: Arc<dyn EventBus>,
    told: Mutex<Vec<serde_json::Value>>,
}

impl Tapped {
    pub fn new(inner: Arc<dyn EventBus>) -> Self {
        Tapped { inner, told: Mutex::new(Vec::new()) }
    }

    /// The `WaitlistNotified` details published since the last call.
    pub fn take_told(&self) -> Vec<serde_json::Value> {
        std::mem::take(&mut *self.told.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl EventBus for Tapped {
    fn publish<'l0, 'l1, 'a>(&'l0 self, events: &'l1 [OrderEvent]) -> Fut<'a, Vec<bool>>
    where
        'l0: 'a,
        'l1: 'a,
        Self: 'a,
    {
        Box::pin(self.inner.publish(events))
    }

    fn publish_stock<'l0, 'l1, 'l2, 'a>(
        &'l0 self,
        detail_type: &'l1 str,
        detail: &'l2 serde_json::Value,
    ) -> Fut<'a, bool>
    where
        'l0: 'a,
        'l1: 'a,
        'l2: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            let ok = self.inner.publish_stock(detail_type, detail).await?;
            if ok && detail_type == "WaitlistNotified" {
                self.told.lock().unwrap_or_else(|e| e.into_inner()).push(detail.clone());
            }
            Ok(ok)
        })
    }
}

/// What a buyer who reads their token does with it at once.
#[derive(Clone, Debug)]
pub enum Then {
    /// Keeps it for later (or never uses it).
    Keep,
    /// Leaves the waitlist instead (the unit goes to the next in line).
    Leave,
    Once(Checkout),
    /// Two checkouts one after the other (the second is refused `admission_used` if the first sold).
    Twice(Checkout, Checkout),
    /// Two checkouts at once.
    Race(Checkout, Checkout),
}

impl Then {
    fn checkouts(&self) -> Vec<&Checkout> {
        match self {
            Then::Keep | Then::Leave => Vec::new(),
            Then::Once(c) => vec![c],
            Then::Twice(a, b) | Then::Race(a, b) => vec![a, b],
        }
    }
}

/// A told buyer's token as the simulator keeps it.
#[derive(Clone, Debug)]
pub struct Token {
    pub user: UserId,
    pub sku: Sku,
    pub number: u64,
    pub token: String,
}

/// How a checkout uses a waitlist token (or, for [`Use::QueueToken`], a queue's token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// The buyer's own token for its SKU: at once, later (maybe expired or spent), or again.
    Own,
    /// One of two checkouts racing with one token.
    Race,
    /// A checkout of other SKUs only: must be refused.
    OtherSku,
    /// A checkout of the queued drop: must be refused (no waitlist token is a queue's).
    Queue,
    /// Another buyer's checkout of the token's SKU: must be refused.
    OtherBuyer,
    /// A queue's token on a plain checkout of a waitlisted SKU: must be refused.
    QueueToken,
}

/// What the service's answer to a join is, as a rare path.
fn join_hit(r: &Result<(Place, bool), WaitlistError>, again: bool) -> Option<&'static str> {
    use holdfast::domain::waitlist::JoinRefusal;
    Some(match r {
        Ok((_, true)) if again => "waitlist: joined again after its entry was done",
        Ok((_, true)) => "waitlist: joined",
        Ok((_, false)) => "waitlist: repeat join answered the same entry",
        Err(WaitlistError::NotSoldOut(..)) => "waitlist: join refused, not sold out",
        Err(WaitlistError::Refused(JoinRefusal::Full(_))) => "waitlist: join refused, full",
        Err(WaitlistError::Refused(JoinRefusal::TooMany(_))) => "waitlist: join refused, too many waitlists",
        Err(WaitlistError::NotWaitlistable(_)) => "waitlist: join refused, not waitlistable",
        Err(_) => return None,
    })
}

/// A waitlist entry as the trace shows it (never the token).
fn place(p: &Place) -> String {
    let token = if p.admission_token.is_some() { " token" } else { "" };
    format!("{} #{}{token}", p.entry.state.as_str(), p.entry.number)
}

fn show<T, E: std::fmt::Display>(r: &Result<T, E>, f: impl FnOnce(&T) -> String) -> String {
    match r {
        Ok(t) => f(t),
        Err(e) => format!("err {e}"),
    }
}

/// Finding W1 (docs/simulator.md, fixed in 1048fb2): a join answered as if a done entry still
/// counted. The upkeep settles a told entry lazily, so an entry whose token lapsed (or was
/// spent) on a SKU with nothing free stays `NOTIFIED` until the SKU's next upkeep. A join that
/// did not settle first counted such an entry against the bounds and answered it as the buyer's
/// place, where docs/waitlist.md says a used or expired entry no longer counts and a join after
/// it makes a new entry at the end of the line. Judged from the watch's mirror at the join
/// (lapsed: past its expiry; a spent token is not looked up). A refusal is W1 only while the
/// mirror still holds as many active entries as the bound: fewer means one left (or was settled)
/// by a concurrent actor after the join counted it, which the refusal rightly saw.
fn w1(watch: &Watched, u: &UserId, sku: &Sku, r: &Result<(Place, bool), WaitlistError>, d: &mut Done) {
    use holdfast::domain::waitlist::JoinRefusal;
    let now = holdfast::clock::now_ms();
    let w = watch.lock();
    let lapsed = |e: &Entry| e.state == WaitState::Notified && e.expires_at_ms.is_none_or(|x| now >= x);
    match r {
        Ok((p, false)) if lapsed(&p.entry) => d.wl_findings.push((
            "waitlist: finding W1, a join answered a lapsed NOTIFIED entry",
            format!("WaitlistJoinAnsweredLapsed {{ sku: {sku}, user: {u}, number: {} }}", p.entry.number),
        )),
        Err(WaitlistError::Refused(JoinRefusal::TooMany(max))) => {
            let mine: Vec<&Entry> = w.entries.values().filter(|e| e.user == u.as_str() && e.state.active()).collect();
            let live = mine.iter().filter(|e| !lapsed(e)).count();
            if mine.len() >= *max as usize && live < *max as usize {
                d.wl_findings.push((
                    "waitlist: finding W1, too_many_waitlists counting a lapsed entry",
                    format!(
                        "WaitlistBoundCountsLapsed {{ sku: {sku}, user: {u}, active: {}, live: {live} }}",
                        mine.len()
                    ),
                ));
            }
        }
        Err(WaitlistError::Refused(JoinRefusal::Full(max))) => {
            let on: Vec<&Entry> = w
                .entries
                .range((sku.clone(), 0)..=(sku.clone(), u64::MAX))
                .map(|(_, e)| e)
                .filter(|e| e.state.active())
                .collect();
            let live = on.iter().filter(|e| !lapsed(e)).count();
            if on.len() >= *max as usize && live < *max as usize {
                d.wl_findings.push((
                    "waitlist: finding W1, waitlist_full counting a lapsed entry",
                    format!("WaitlistFullCountsLapsed {{ sku: {sku}, user: {u}, active: {}, live: {live} }}", on.len()),
                ));
            }
        }
        _ => {}
    }
}

/// A buyer joins `sku`'s waitlist (a repeat is answered the same entry).
pub async fn join(app: &App, watch: &Watched, u: &UserId, sku: &Sku, d: &mut Done) -> String {
    let r = waitlist::join(app, u, sku).await;
    d.hits.extend(join_hit(&r, false));
    w1(watch, u, sku, &r, d);
    format!("waitlist join {u} {sku} -> {}", show(&r, |(p, new)| format!("{} new={new}", place(p))))
}

/// A buyer leaves `sku`'s waitlist.
pub async fn leave(app: &App, u: &UserId, sku: &Sku) -> String {
    let r = waitlist::leave(app, u, sku).await;
    format!("waitlist leave {u} {sku} -> {}", show(&r, |_| "ok".into()))
}

/// Where a buyer stands (joining first when not on the waitlist, or, with `again`, when their
/// entry is done); once told, the token is kept and used at once as `then` says.
pub async fn buyer(
    app: &App,
    watch: &Watched,
    u: &UserId,
    sku: &Sku,
    again: bool,
    then: &Then,
    d: &mut Done,
) -> String {
    let mut out = String::new();
    let mut r = waitlist::me(app, u, sku).await;
    let done = matches!(&r, Ok(p) if !p.entry.state.active());
    if matches!(r, Err(WaitlistError::NotFound)) || (done && again) {
        let j = waitlist::join(app, u, sku).await;
        d.hits.extend(join_hit(&j, done));
        w1(watch, u, sku, &j, d);
        out.push_str(&format!(
            "waitlist join {u} {sku} -> {}; ",
            show(&j, |(p, new)| format!("{} new={new}", place(p)))
        ));
        r = j.map(|(p, _)| p);
    }
    out.push_str(&format!("waitlist me {u} {sku} -> {}", show(&r, place)));
    if let Ok(Place { entry, admission_token: Some(token) }) = &r {
        d.hits.push("waitlist: a told buyer read the token");
        let t = Token { user: u.clone(), sku: sku.clone(), number: entry.number, token: token.clone() };
        let entry = Some((&t.sku, t.number));
        match then {
            Then::Keep => {}
            Then::Leave => out.push_str(&format!("; {}", leave(app, u, sku).await)),
            Then::Once(c) => out.push_str(&format!("; {}", checkout(app, c, &t.token, entry, Use::Own, d).await)),
            Then::Twice(a, b) => {
                out.push_str(&format!("; {}", checkout(app, a, &t.token, entry, Use::Own, d).await));
                out.push_str(&format!("; again {}", checkout(app, b, &t.token, entry, Use::Own, d).await));
            }
            Then::Race(a, b) => {
                // two checkouts with the one token at once, interleaved at every port call
                let (mut da, mut db) = (Done::default(), Done::default());
                let (x, y) = tokio::join!(
                    checkout(app, a, &t.token, entry, Use::Race, &mut da),
                    checkout(app, b, &t.token, entry, Use::Race, &mut db)
                );
                for o in [da, db] {
                    d.hits.extend(o.hits);
                    d.wl_sold.extend(o.wl_sold);
                    d.wl_violations.extend(o.wl_violations);
                }
                out.push_str(&format!("; race {x} || {y}"));
            }
        }
        for c in then.checkouts() {
            d.wl_kept.push((c.clone(), t.token.clone(), (t.sku.clone(), t.number)));
        }
        d.wl_token = Some(t);
    }
    out
}

/// A checkout carrying `token` (the waitlist entry it is, if it is one), used as `how`.
pub async fn checkout(
    app: &App,
    c: &Checkout,
    token: &str,
    entry: Option<(&Sku, u64)>,
    how: Use,
    d: &mut Done,
) -> String {
    let r = orders::create_admitted(app, &c.user, &c.key, c.lines.clone(), Some(token)).await;
    let lines: Vec<String> = c
        .lines
        .iter()
        .map(|l| format!("{}x{}{}", l.sku, l.quantity.get(), if l.campaign.is_some() { "@queue" } else { "" }))
        .collect();
    let head = format!("create {} key={} with waitlist token ({how:?}) [{}]", c.user, c.key.as_str(), lines.join(","));
    match &r {
        Ok((o, replay)) => {
            match (how, replay) {
                (Use::Own | Use::Race, true) => d.hits.push("waitlist: replay answered its order"),
                (Use::Own | Use::Race, false) => {
                    d.hits.push("waitlist: checkout with the token");
                    if let Some((sku, n)) = entry {
                        d.wl_sold.push((sku.clone(), n, o.id.clone()));
                    }
                }
                (_, true) => {}
                (_, false) => d.wl_violations.push(format!(
                    "WaitlistTokenAdmittedElsewhere {{ how: {how:?}, user: {}, lines: {lines:?}, entry: {entry:?}, order: {} }}",
                    c.user, o.id
                )),
            }
            format!("{head} -> ok {} {} replay={replay}", o.id, o.status.as_str())
        }
        Err(e) => {
            let e = e.to_string();
            // a crashed one is retried by the actor's replays (same key, same token)
            d.hits.extend(crate::world::crash_point(&e));
            let foreign = e.contains("issued to another buyer");
            let hit = match how {
                _ if e.contains("already used by a checkout") => Some("waitlist: token spent twice refused"),
                _ if e.contains("admission token has expired") => Some("waitlist: expired token refused"),
                _ if e.contains("insufficient stock") => Some("waitlist: told buyer refused for stock (no set-aside)"),
                Use::OtherSku if foreign => Some("waitlist: token refused for another SKU"),
                Use::Queue if foreign => Some("waitlist: token refused by the queue"),
                Use::OtherBuyer if foreign => Some("waitlist: another buyer's token refused"),
                Use::QueueToken if foreign => Some("waitlist: a queue's token refused for a waitlist"),
                Use::Own | Use::Race if foreign => {
                    d.wl_violations.push(format!(
                        "WaitlistOwnTokenRefused {{ user: {}, lines: {lines:?}, entry: {entry:?}, error: {e} }}",
                        c.user
                    ));
                    None
                }
                _ => None,
            };
            d.hits.extend(hit);
            if how == Use::Race && e.contains("already used by a checkout") {
                d.hits.push("waitlist: race sold once, the other admission_used");
            }
            format!("{head} -> err {e}")
        }
    }
}
