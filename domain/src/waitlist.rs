//! "Notify me" waitlists of sold-out SKUs (docs/waitlist.md). Pure: joining within the bounds,
//! leaving, settling the told entries (used or expired), telling the next ones in join order as
//! many as units are free, and the admission token a told buyer checks out with.
//!
//! A SKU's waitlist is a head (numbers issued, the cursor up to which every entry was
//! considered, the count of active entries, the numbers told and not yet settled) and one entry
//! per join, numbered in join order. Every change is one write of the head at the version it
//! read, with the entries and buyers' lists it moves, so concurrent writers never double-tell.

use super::queue::{self, Admission, TokenError};
use super::{CampaignId, Sku, UserId};
use serde::{Deserialize, Serialize};

/// Most active entries (waiting or told) one SKU's waitlist holds, by default.
pub const DEFAULT_MAX_PER_SKU: u32 = 10_000;
/// Most waitlists one buyer is on at once, by default.
pub const DEFAULT_MAX_PER_USER: u32 = 20;
/// How long a told buyer's token lives, by default (seconds), and its bounds.
pub const DEFAULT_TOKEN_TTL_S: u32 = 300;
pub const MIN_TOKEN_TTL_S: u32 = 10;
pub const MAX_TOKEN_TTL_S: u32 = 3_600;
/// Most entries one write tells or settles (a DynamoDB transaction has at most 100 items: the
/// head, the entries, and a settled entry's buyer list each).
pub const BATCH: usize = 40;

/// An entry's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WaitState {
    /// In line, not told yet.
    Waiting,
    /// Told: units came back; the admission token is valid until `expires_at_ms`.
    Notified,
    /// A committed checkout spent the token.
    Used,
    /// The token's time ran out unused.
    Expired,
    /// The buyer left the waitlist.
    Left,
}

impl WaitState {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitState::Waiting => "WAITING",
            WaitState::Notified => "NOTIFIED",
            WaitState::Used => "USED",
            WaitState::Expired => "EXPIRED",
            WaitState::Left => "LEFT",
        }
    }

    /// Waiting or told: counts against the bounds.
    pub fn active(self) -> bool {
        matches!(self, WaitState::Waiting | WaitState::Notified)
    }
}

/// A SKU's waitlist head (`WLH#<sku>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub version: u64,
    /// Entry numbers issued (the last one).
    pub next: u64,
    /// Every entry numbered up to here has been told or skipped.
    pub cursor: u64,
    /// Waiting or told entries.
    pub active: u32,
    /// Numbers told and not yet settled (used or expired), in join order.
    pub live: Vec<u64>,
}

/// One join (`WLE#<sku>#<number>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub number: u64,
    pub user: String,
    pub state: WaitState,
    pub joined_at_ms: i64,
    #[serde(default)]
    pub notified_at_ms: Option<i64>,
    #[serde(default)]
    pub expires_at_ms: Option<i64>,
}

/// The SKUs one buyer waits for (`WLU#<user>`), versioned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserWaits {
    pub version: u64,
    pub skus: Vec<String>,
}

/// The bounds of joining.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_per_sku: u32,
    pub max_per_user: u32,
}

/// Why a join is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JoinRefusal {
    #[error("this SKU's waitlist is full ({0} buyers)")]
    Full(u32),
    #[error("you are on {0} waitlists already, the most one buyer may be on")]
    TooMany(u32),
}

/// A join: the next head, the buyer's new list and the new entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    pub head: Head,
    pub user: UserWaits,
    pub entry: Entry,
}

/// `user` joins `sku`'s waitlist (they have no active entry on it) at `now_ms`.
pub fn join(
    head: &Head,
    waits: &UserWaits,
    sku: &Sku,
    user: &UserId,
    now_ms: i64,
    b: Bounds,
) -> Result<Joined, JoinRefusal> {
    if head.active >= b.max_per_sku {
        return Err(JoinRefusal::Full(b.max_per_sku));
    }
    let mut skus = waits.skus.clone();
    skus.retain(|s| s != sku.as_str());
    if skus.len() >= b.max_per_user as usize {
        return Err(JoinRefusal::TooMany(b.max_per_user));
    }
    skus.push(sku.to_string());
    let number = head.next + 1;
    let entry = Entry {
        number,
        user: user.to_string(),
        state: WaitState::Waiting,
        joined_at_ms: now_ms,
        notified_at_ms: None,
        expires_at_ms: None,
    };
    let head = Head { version: head.version + 1, next: number, active: head.active + 1, ..head.clone() };
    Ok(Joined { head, user: UserWaits { version: waits.version + 1, skus }, entry })
}

/// The buyer's list without `sku` (a settled or left entry), at the next version.
pub fn without(waits: &UserWaits, sku: &Sku) -> UserWaits {
    UserWaits { version: waits.version + 1, skus: waits.skus.iter().filter(|s| *s != sku.as_str()).cloned().collect() }
}

/// An active entry leaves: the next head and the entry `LEFT` (`None` for an inactive one).
pub fn leave(head: &Head, e: &Entry) -> Option<(Head, Entry)> {
    if !e.state.active() {
        return None;
    }
    let next = Head {
        version: head.version + 1,
        active: head.active.saturating_sub(1),
        live: head.live.iter().copied().filter(|n| *n != e.number).collect(),
        ..head.clone()
    };
    Some((next, Entry { state: WaitState::Left, ..e.clone() }))
}

/// The told entries that are done at `now_ms`: spent (`USED`) or past their token's life
/// (`EXPIRED`); each with whether its token was spent. Returns the next head and the settled
/// entries (at most [`BATCH`]); `None` when nothing settles.
pub fn settle(head: &Head, told: &[(Entry, bool)], now_ms: i64) -> Option<(Head, Vec<Entry>)> {
    let mut done = Vec::new();
    for (e, spent) in told.iter().filter(|(e, _)| e.state == WaitState::Notified && head.live.contains(&e.number)) {
        let state = if *spent {
            WaitState::Used
        } else if e.expires_at_ms.is_none_or(|x| now_ms >= x) {
            WaitState::Expired
        } else {
            continue;
        };
        done.push(Entry { state, ..e.clone() });
        if done.len() == BATCH {
            break;
        }
    }
    if done.is_empty() {
        return None;
    }
    let gone: Vec<u64> = done.iter().map(|e| e.number).collect();
    let next = Head {
        version: head.version + 1,
        active: head.active.saturating_sub(done.len() as u32),
        live: head.live.iter().copied().filter(|n| !gone.contains(n)).collect(),
        ..head.clone()
    };
    Some((next, done))
}

/// How many more buyers the free units are owed: the units free now, less the tokens still out.
pub fn wanted(available: i64, head: &Head) -> usize {
    usize::try_from(available.saturating_sub(head.live.len() as i64)).unwrap_or(0)
}

/// How many more buyers one write tells: [`wanted`], at most [`BATCH`] (the upkeep writes again
/// while more are owed).
pub fn owed(available: i64, head: &Head) -> usize {
    wanted(available, head).min(BATCH)
}

/// The numbers to read for telling: those after the cursor, at most [`BATCH`].
pub fn candidates(head: &Head) -> std::ops::RangeInclusive<u64> {
    head.cursor + 1..=head.next.min(head.cursor + BATCH as u64)
}

/// Tells up to `k` waiting entries in join order among `after` (the entries numbered after the
/// cursor, in order): each becomes `NOTIFIED` until `now_ms + ttl_s`. Left (or otherwise
/// inactive) entries are skipped; the cursor moves past every entry walked. `None`: nothing
/// moved.
pub fn notify(head: &Head, after: &[Entry], k: usize, now_ms: i64, ttl_s: u32) -> Option<(Head, Vec<Entry>)> {
    if k == 0 {
        return None;
    }
    let mut cursor = head.cursor;
    let mut told = Vec::new();
    for e in after.iter().filter(|e| e.number > head.cursor) {
        if e.state == WaitState::Waiting {
            if told.len() == k {
                break;
            }
            told.push(Entry {
                state: WaitState::Notified,
                notified_at_ms: Some(now_ms),
                expires_at_ms: Some(now_ms.saturating_add(i64::from(ttl_s) * 1000)),
                ..e.clone()
            });
        }
        cursor = e.number;
    }
    if cursor == head.cursor {
        return None;
    }
    let mut live = head.live.clone();
    live.extend(told.iter().map(|e| e.number));
    Some((Head { version: head.version + 1, cursor, live, ..head.clone() }, told))
}

/// The spend scope of `sku`'s waitlist tokens: `wl!<sku>`. `!` is outside the campaign id
/// alphabet, so no queue's token names it and no waitlist token names a campaign.
pub fn scope(sku: &Sku) -> CampaignId {
    CampaignId::waitlist_scope(sku)
}

/// The admission token of a told entry: the waiting room's kind (`v1.<kid>.<payload>.<mac>`),
/// bound to the buyer, the SKU's waitlist scope, the entry and its expiry.
pub fn token(sku: &Sku, e: &Entry, key: &[u8]) -> Option<String> {
    let expires_at_ms = e.expires_at_ms?;
    let a = Admission { campaign: scope(sku).to_string(), user: e.user.clone(), ticket: e.number, expires_at_ms };
    Some(queue::sign(&a, key))
}

/// The entry a waitlist token admits for `user` to `sku`, unexpired at `now_ms`.
pub fn verify(token: &str, keys: &[&[u8]], user: &UserId, sku: &Sku, now_ms: i64) -> Result<u64, TokenError> {
    queue::verify(token, keys, user, &scope(sku), now_ms).map(|a| a.ticket)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku() -> Sku {
        Sku::parse("SOLD").unwrap()
    }
    fn user(u: &str) -> UserId {
        UserId::parse(u).unwrap()
    }
    const B: Bounds = Bounds { max_per_sku: 3, max_per_user: 2 };

    /// Joins `users` in order: the head and the entries.
    fn joined(users: &[&str]) -> (Head, Vec<Entry>) {
        let mut head = Head::default();
        let mut entries = Vec::new();
        for (i, u) in users.iter().enumerate() {
            let j = join(&head, &UserWaits::default(), &sku(), &user(u), i as i64, B).unwrap();
            head = j.head;
            entries.push(j.entry);
        }
        (head, entries)
    }

    #[test]
    fn joins_are_numbered_in_order_within_the_bounds_per_sku_and_per_buyer() {
        let (head, entries) = joined(&["a", "b", "c"]);
        assert_eq!(entries.iter().map(|e| e.number).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!((head.version, head.next, head.active), (3, 3, 3));
        assert_eq!(join(&head, &UserWaits::default(), &sku(), &user("d"), 9, B), Err(JoinRefusal::Full(3)));
        let two = UserWaits { version: 4, skus: vec!["X".into(), "Y".into()] };
        assert_eq!(join(&Head::default(), &two, &sku(), &user("d"), 9, B), Err(JoinRefusal::TooMany(2)));
        let j = join(&Head::default(), &UserWaits { version: 4, skus: vec!["X".into()] }, &sku(), &user("d"), 9, B)
            .unwrap();
        assert_eq!((j.user.version, j.user.skus.len()), (5, 2));
        assert_eq!(without(&j.user, &sku()).skus, ["X"]);
        // a left entry frees its place
        let (h, left) = leave(&head, &entries[1]).unwrap();
        assert_eq!((h.active, left.state), (2, WaitState::Left));
        assert!(join(&h, &UserWaits::default(), &sku(), &user("d"), 9, B).is_ok());
        assert_eq!(leave(&h, &left), None, "only an active entry leaves");
    }

    #[test]
    fn units_back_tell_exactly_that_many_in_join_order_skipping_those_who_left() {
        let (head, mut entries) = joined(&["a", "b", "c"]);
        entries[0].state = WaitState::Left;
        let head = Head { active: 2, ..head };
        assert_eq!(owed(2, &head), 2);
        let (h, told) = notify(&head, &entries, owed(2, &head), 1_000, 60).unwrap();
        assert_eq!(
            told.iter().map(|e| (e.number, e.state)).collect::<Vec<_>>(),
            [(2, WaitState::Notified), (3, WaitState::Notified)]
        );
        assert_eq!((h.cursor, h.live.clone(), told[0].expires_at_ms), (3, vec![2, 3], Some(61_000)));
        assert_eq!(owed(2, &h), 0, "the tokens out cover the free units");
        assert_eq!((wanted(45, &h), owed(45, &h), wanted(-3, &h)), (43, BATCH, 0), "one write tells at most BATCH");
        // one unit back for three waiting: only the first
        let (head, entries) = joined(&["a", "b", "c"]);
        let (h, told) = notify(&head, &entries, owed(1, &head), 1_000, 60).unwrap();
        assert_eq!((told.len(), told[0].user.as_str(), h.cursor), (1, "a", 1));
        // the next round starts after the cursor
        let rest: Vec<Entry> = entries.iter().filter(|e| candidates(&h).contains(&e.number)).cloned().collect();
        assert_eq!(rest.iter().map(|e| e.number).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(notify(&h, &rest, 0, 1, 60), None);
    }

    #[test]
    fn a_told_entry_settles_used_when_spent_and_expired_past_its_token_and_frees_its_unit_for_the_next() {
        let (head, entries) = joined(&["a", "b", "c"]);
        let (h, told) = notify(&head, &entries, 2, 0, 60).unwrap();
        assert_eq!(settle(&h, &[(told[0].clone(), false), (told[1].clone(), false)], 59_999), None);
        let (h2, done) = settle(&h, &[(told[0].clone(), true), (told[1].clone(), false)], 60_000).unwrap();
        assert_eq!(done.iter().map(|e| e.state).collect::<Vec<_>>(), [WaitState::Used, WaitState::Expired]);
        assert_eq!((h2.active, h2.live.len()), (1, 0));
        // the expired one's unit is still free: the third is told
        let rest = vec![entries[2].clone()];
        let (h3, next) = notify(&h2, &rest, owed(1, &h2), 60_000, 60).unwrap();
        assert_eq!((next[0].user.as_str(), h3.live.clone()), ("c", vec![3]));
    }

    #[test]
    fn a_waitlist_token_binds_buyer_sku_entry_and_expiry_and_is_no_queues_token() {
        let key = b"k".as_slice();
        let e = Entry {
            number: 7,
            user: "ann".into(),
            state: WaitState::Notified,
            joined_at_ms: 0,
            notified_at_ms: Some(0),
            expires_at_ms: Some(5_000),
        };
        let t = token(&sku(), &e, key).unwrap();
        assert_eq!(verify(&t, &[key], &user("ann"), &sku(), 4_999), Ok(7));
        assert_eq!(verify(&t, &[key], &user("bob"), &sku(), 1), Err(TokenError::Foreign));
        assert_eq!(verify(&t, &[key], &user("ann"), &Sku::parse("OTHER").unwrap(), 1), Err(TokenError::Foreign));
        assert_eq!(verify(&t, &[key], &user("ann"), &sku(), 5_000), Err(TokenError::Expired));
        assert_eq!(verify(&t, &[b"other".as_slice()], &user("ann"), &sku(), 1), Err(TokenError::Forged));
        // not a queue's token for any campaign, and a queue's token is no waitlist's
        let c = CampaignId::parse("SOLD").unwrap();
        assert_eq!(queue::verify(&t, &[key], &user("ann"), &c, 1), Err(TokenError::Foreign));
        let q = queue::sign(
            &Admission { campaign: "SOLD".into(), user: "ann".into(), ticket: 7, expires_at_ms: 5_000 },
            key,
        );
        assert_eq!(verify(&q, &[key], &user("ann"), &sku(), 1), Err(TokenError::Foreign));
        assert_eq!(token(&sku(), &Entry { expires_at_ms: None, ..e }, key), None, "only a told entry has one");
    }
}
