//! The stock store contract: one behaviour, two stores. Every write condition of the
//! [`StockStore`] port is judged here through the port alone, so the in-memory store (unit tests,
//! `adapters::memory::contract_tests`) and DynamoDB on the emulator (tests/tests/e2e/store_contract.rs)
//! run the same checks and must give the same answers.
//!
//! Each check seeds what it needs through the port (`put_sku`, `adjust`, `add_codes`,
//! `write_campaign`) under SKU, campaign, user and order names made from `prefix`, so checks can
//! share a table with each other and with other tests. A failed expectation panics with what
//! differed; [`failures`] runs every check and collects them.

use crate::domain::allocation::Piece;
use crate::domain::campaign::{Campaign, CampaignItem};
use crate::domain::codes::{CodeAppend, StoredCode};
use crate::domain::journal::Cause;
use crate::domain::model::{InventoryModel, Management};
use crate::domain::reservation::{CampaignLine, CodeRange, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{CampaignId, Currency, OrderId, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, CodeUpload, Counter, FreezeLimits, FreezeRejection, MoveRejection, SkuMeta, StockStore,
};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;

/// One check of the contract.
pub type Check = for<'a> fn(&'a dyn StockStore, &'a str) -> BoxFuture<'a, ()>;

/// Every check, by name.
pub const CHECKS: &[(&str, Check)] = &[
    ("freezes", |s, p| Box::pin(freezes(s, p))),
    ("per_user_limits", |s, p| Box::pin(per_user_limits(s, p))),
    ("pending_cap", |s, p| Box::pin(pending_cap(s, p))),
    ("campaign_gates", |s, p| Box::pin(campaign_gates(s, p))),
    ("lock_moves", |s, p| Box::pin(lock_moves(s, p))),
    ("stop_sale", |s, p| Box::pin(stop_sale(s, p))),
    ("stop_sale_on_new_shards", |s, p| Box::pin(stop_sale_on_new_shards(s, p))),
    ("code_pools", |s, p| Box::pin(code_pools(s, p))),
    ("adjustments", |s, p| Box::pin(adjustments(s, p))),
];

/// Runs every check (each under `prefix` + its name) and returns the failed ones with their
/// panic message; empty when the store keeps the whole contract.
pub async fn failures(store: &dyn StockStore, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, check) in CHECKS {
        let p = format!("{prefix}{name}");
        if let Err(e) = AssertUnwindSafe(check(store, &p)).catch_unwind().await {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(no message)".into());
            out.push(format!("{name}: {msg}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Seeding and reading, through the port only.

fn sku(prefix: &str, name: &str) -> Sku {
    Sku::parse(&format!("{prefix}-{name}")).expect("a valid SKU")
}

fn user(prefix: &str, name: &str) -> UserId {
    UserId::parse(&format!("{prefix}-{name}")).expect("a valid user")
}

fn rid(prefix: &str, name: &str) -> ReservationId {
    ReservationId::for_order(&OrderId::parse(&format!("{prefix}-{name}")).expect("a valid order id"))
}

fn campaign_id(prefix: &str, name: &str) -> CampaignId {
    CampaignId::parse(&format!("{prefix}-{name}")).expect("a valid campaign id")
}

fn eur() -> Currency {
    Currency::parse("EUR").expect("EUR")
}

fn new_meta(sku: &Sku, shards: u16) -> SkuMeta {
    SkuMeta {
        sku: sku.clone(),
        name: format!("{sku} (contract)"),
        price: 100,
        currency: eur(),
        shards,
        slots: shards,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: InventoryModel::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

async fn meta_of(store: &dyn StockStore, sku: &Sku) -> SkuMeta {
    store.get_skus(std::slice::from_ref(sku)).await.expect("get_skus").remove(sku).expect("the SKU exists")
}

fn adjustment(sku: &Sku, id: &str, pieces: &[(u16, i64)]) -> Adjustment {
    Adjustment {
        sku: sku.clone(),
        adjustment_id: id.to_owned(),
        delta: pieces.iter().map(|(_, d)| d).sum(),
        reason: "contract".into(),
        actor: Some("contract-admin".into()),
        at_ms: crate::clock::now_ms(),
        pieces: pieces.to_vec(),
    }
}

async fn adjust(store: &dyn StockStore, sku: &Sku, id: &str, pieces: &[(u16, i64)]) -> Result<(), AdjustRejection> {
    store.adjust(&adjustment(sku, id, pieces), 0).await.expect("adjust")
}

/// Creates `meta` (its shards empty) and puts `available[i]` units on shard `i` with one
/// adjustment; the metadata as stored afterwards.
async fn create(store: &dyn StockStore, meta: SkuMeta, available: &[i64]) -> SkuMeta {
    assert!(store.put_sku(&meta, None).await.expect("put_sku"), "create {}", meta.sku);
    let pieces: Vec<(u16, i64)> =
        available.iter().enumerate().filter(|(_, a)| **a != 0).map(|(i, a)| (i as u16, *a)).collect();
    if !pieces.is_empty() {
        assert_eq!(adjust(store, &meta.sku, "seed", &pieces).await, Ok(()), "seed {}", meta.sku);
    }
    meta_of(store, &meta.sku).await
}

/// A plain SKU with `available[i]` units on shard `i`.
async fn stocked(store: &dyn StockStore, sku: &Sku, available: &[i64]) -> SkuMeta {
    create(store, new_meta(sku, available.len() as u16), available).await
}

/// (available, locked, sold) of shards `0..n`.
async fn shards(store: &dyn StockStore, sku: &Sku, n: u16) -> Vec<(i64, i64, i64)> {
    store.read_shards(sku, n).await.expect("read_shards").iter().map(|c| (c.available, c.locked, c.sold)).collect()
}

async fn quota(store: &dyn StockStore, c: &CampaignId, sku: &Sku, n: u16) -> Vec<(i64, i64, i64)> {
    store
        .read_quota_shards(c, sku, n, true)
        .await
        .expect("read_quota_shards")
        .iter()
        .map(|c| (c.available, c.locked, c.sold))
        .collect()
}

async fn counter(store: &dyn StockStore, c: Counter) -> i64 {
    store.read_counters(std::slice::from_ref(&c)).await.expect("read_counters").get(&c).copied().unwrap_or(0)
}

async fn status(store: &dyn StockStore, id: &ReservationId) -> Option<LockStatus> {
    store.get_reservation(id).await.expect("get_reservation").map(|r| r.status)
}

/// A plain line of `sku` taking `pieces` (shard, units).
fn line(sku: &Sku, pieces: &[(u16, u32)]) -> ReservedLine {
    ReservedLine {
        sku: sku.clone(),
        quantity: pieces.iter().map(|(_, q)| q).sum(),
        unit_price: 100,
        currency: eur(),
        limited: false,
        pieces: pieces.iter().map(|&(shard, quantity)| Piece { shard, quantity }).collect(),
        campaign: None,
        dates: Vec::new(),
        draws: Vec::new(),
        at_payment: false,
        codes: None,
    }
}

/// A line that also charges the buyer's per-user counter.
fn limited(l: ReservedLine) -> ReservedLine {
    ReservedLine { limited: true, ..l }
}

/// A line that also draws on campaign `c`'s quota shards (`pieces`), charging the campaign
/// per-user counter when `limited`.
fn on_campaign(l: ReservedLine, c: &CampaignId, pieces: &[(u16, u32)], limited: bool) -> ReservedLine {
    let pieces = pieces.iter().map(|&(shard, quantity)| Piece { shard, quantity }).collect();
    ReservedLine { campaign: Some(CampaignLine { campaign_id: c.clone(), pieces, limited }), ..l }
}

/// A FROZEN order reservation as the stock service builds one before its freeze.
fn reservation(id: ReservationId, buyer: Option<&UserId>, lines: Vec<ReservedLine>) -> Reservation {
    let now = crate::clock::now_ms();
    Reservation {
        id,
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: buyer.cloned(),
        request_hash: "contract".into(),
        created_at_ms: now,
        expires_at: now / 1000 + 900,
        lines,
        oversold: false,
        pending: false,
        code_fate: None,
    }
}

async fn freeze(store: &dyn StockStore, r: &Reservation, limits: &FreezeLimits) -> Result<(), FreezeRejection> {
    store.put_frozen(r, limits).await.expect("put_frozen")
}

/// A freeze of one unit on `shard` of `sku` (no buyer, no limits) under a fresh id.
async fn freeze_one(store: &dyn StockStore, prefix: &str, sku: &Sku, shard: u16) -> Result<(), FreezeRejection> {
    let id = rid(prefix, &format!("one{}", fastrand::u64(..)));
    freeze(store, &reservation(id, None, vec![line(sku, &[(shard, 1)])]), &FreezeLimits::default()).await
}

async fn move_lock(store: &dyn StockStore, r: &Reservation, to: LockStatus) -> Result<(), MoveRejection> {
    store.move_lock(r, to).await.expect("move_lock")
}

/// Sets the stop-sale switch from the stored metadata; whether it was written.
async fn set_paused(store: &dyn StockStore, sku: &Sku, paused: bool) -> bool {
    let m = meta_of(store, sku).await;
    let next = SkuMeta { paused, version: m.version + 1, ..m.clone() };
    store.set_sku_paused(&next, m.version).await.expect("set_sku_paused")
}

fn campaign(id: &CampaignId, sku: &Sku, quota: i64, per_user_limit: Option<u32>, window: (i64, i64)) -> Campaign {
    Campaign {
        id: id.clone(),
        name: format!("{id} (contract)"),
        starts_at: window.0,
        ends_at: window.1,
        paused: false,
        items: vec![CampaignItem { sku: sku.clone(), price: None, per_user_limit, shards: 1, quota }],
        version: 1,
    }
}

/// A campaign window open now (an hour each way).
fn live() -> (i64, i64) {
    let now = crate::clock::now_s();
    (now - 3600, now + 3600)
}

async fn write_campaign(store: &dyn StockStore, c: &Campaign, expected: Option<u64>) -> bool {
    store.write_campaign(c, expected).await.expect("write_campaign")
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// `put_frozen`: every shard piece needs `available >= q` on an existing shard, all pieces or
/// none are taken, and a reservation id is frozen once.
pub async fn freezes(store: &dyn StockStore, prefix: &str) {
    let (a, b) = (sku(prefix, "A"), sku(prefix, "B"));
    stocked(store, &a, &[5, 5]).await;
    stocked(store, &b, &[2]).await;
    let none = FreezeLimits::default();
    let r1 = reservation(rid(prefix, "r1"), None, vec![line(&a, &[(0, 2)])]);
    assert_eq!(freeze(store, &r1, &none).await, Ok(()), "a freeze within the shard's stock");
    assert_eq!(shards(store, &a, 2).await, vec![(3, 2, 0), (5, 0, 0)]);
    let stored = store.get_reservation(&r1.id).await.expect("get_reservation").expect("r1 stored");
    assert_eq!((stored.status, &stored.lines, stored.oversold), (LockStatus::Frozen, &r1.lines, false));

    let short = reservation(rid(prefix, "r2"), None, vec![line(&a, &[(0, 4)])]);
    assert_eq!(freeze(store, &short, &none).await, Err(FreezeRejection::ShardShort(vec![a.clone()])), "shard short");
    assert_eq!(status(store, &short.id).await, None, "a refused freeze stores no reservation");
    // all pieces or none: shard 1 could give 5 but shard 0 cannot give 4
    let split = reservation(rid(prefix, "r2"), None, vec![line(&a, &[(0, 4), (1, 5)])]);
    assert_eq!(freeze(store, &split, &none).await, Err(FreezeRejection::ShardShort(vec![a.clone()])));
    assert_eq!(shards(store, &a, 2).await, vec![(3, 2, 0), (5, 0, 0)], "nothing taken");
    // only the short SKU is named
    let two = reservation(rid(prefix, "r3"), None, vec![line(&a, &[(1, 1)]), line(&b, &[(0, 3)])]);
    assert_eq!(freeze(store, &two, &none).await, Err(FreezeRejection::ShardShort(vec![b.clone()])));
    // a shard that does not exist has nothing to give
    let missing = reservation(rid(prefix, "r4"), None, vec![line(&a, &[(5, 1)])]);
    assert_eq!(freeze(store, &missing, &none).await, Err(FreezeRejection::ShardShort(vec![a.clone()])));

    // a replay is named first, whatever else fails
    assert_eq!(freeze(store, &r1, &none).await, Err(FreezeRejection::AlreadyExists), "replay");
    let replay_short = reservation(r1.id.clone(), None, vec![line(&a, &[(0, 100)])]);
    assert_eq!(freeze(store, &replay_short, &none).await, Err(FreezeRejection::AlreadyExists), "replay, short");
    assert_eq!(shards(store, &a, 2).await, vec![(3, 2, 0), (5, 0, 0)]);
    assert_eq!(shards(store, &b, 1).await, vec![(2, 0, 0)]);
    // exactly the stock left
    let rest = reservation(rid(prefix, "r5"), None, vec![line(&a, &[(0, 3), (1, 5)]), line(&b, &[(0, 2)])]);
    assert_eq!(freeze(store, &rest, &none).await, Ok(()), "every unit left");
    assert_eq!(shards(store, &a, 2).await, vec![(0, 5, 0), (0, 5, 0)]);
    assert_eq!(shards(store, &b, 1).await, vec![(0, 2, 0)]);
}

/// The per-user counter of a limited line may not pass the limit; it is named before stock.
pub async fn per_user_limits(store: &dyn StockStore, prefix: &str) {
    let l = sku(prefix, "L");
    stocked(store, &l, &[10]).await;
    let (u, v) = (user(prefix, "u"), user(prefix, "v"));
    let limits = FreezeLimits { per_sku: [(l.clone(), 3)].into(), ..FreezeLimits::default() };
    let take = |name: &str, buyer: &UserId, q: u32| {
        reservation(rid(prefix, name), Some(buyer), vec![limited(line(&l, &[(0, q)]))])
    };
    let held = |buyer: &UserId| Counter::Limit(l.clone(), buyer.clone());

    let la = take("la", &u, 2);
    assert_eq!(freeze(store, &la, &limits).await, Ok(()));
    assert_eq!(counter(store, held(&u)).await, 2);
    let lb = take("lb", &u, 2);
    assert_eq!(freeze(store, &lb, &limits).await, Err(FreezeRejection::LimitExceeded(l.clone())), "2 + 2 > 3");
    assert_eq!((counter(store, held(&u)).await, shards(store, &l, 1).await), (2, vec![(8, 2, 0)]));
    assert_eq!(status(store, &lb.id).await, None);
    assert_eq!(freeze(store, &take("lc", &u, 1), &limits).await, Ok(()), "up to the limit");
    assert_eq!(counter(store, held(&u)).await, 3);
    assert_eq!(freeze(store, &take("ld", &v, 3), &limits).await, Ok(()), "another buyer's own limit");
    assert_eq!(counter(store, held(&v)).await, 3);
    // a line that charges no counter is not limited
    let free = reservation(rid(prefix, "le"), Some(&u), vec![line(&l, &[(0, 1)])]);
    assert_eq!(freeze(store, &free, &limits).await, Ok(()));
    assert_eq!(counter(store, held(&u)).await, 3);
    assert_eq!(shards(store, &l, 1).await, vec![(3, 7, 0)]);
    // over the limit and short of stock: the limit is named
    let both = take("lf", &u, 5);
    assert_eq!(freeze(store, &both, &limits).await, Err(FreezeRejection::LimitExceeded(l.clone())));
    // a release gives the allowance back
    assert_eq!(move_lock(store, &la, LockStatus::Released).await, Ok(()));
    assert_eq!(counter(store, held(&u)).await, 1);
    assert_eq!(freeze(store, &lb, &limits).await, Ok(()), "within the limit again");
    assert_eq!(counter(store, held(&u)).await, 3);
}

/// A reservation that charges the pending counter may not pass `max_pending`; named before stock.
pub async fn pending_cap(store: &dyn StockStore, prefix: &str) {
    let p = sku(prefix, "P");
    stocked(store, &p, &[10]).await;
    let w = user(prefix, "w");
    let limits = FreezeLimits { max_pending: Some(2), ..FreezeLimits::default() };
    let checkout = |name: &str, q: u32| Reservation {
        pending: true,
        ..reservation(rid(prefix, name), Some(&w), vec![line(&p, &[(0, q)])])
    };
    let pending = || Counter::Pending(w.clone());

    let (p1, p2, p3) = (checkout("p1", 1), checkout("p2", 1), checkout("p3", 1));
    assert_eq!(freeze(store, &p1, &limits).await, Ok(()));
    assert_eq!(freeze(store, &p2, &limits).await, Ok(()));
    assert_eq!(counter(store, pending()).await, 2);
    assert_eq!(freeze(store, &p3, &limits).await, Err(FreezeRejection::TooManyPending), "a third pending checkout");
    assert_eq!((status(store, &p3.id).await, shards(store, &p, 1).await), (None, vec![(8, 2, 0)]));
    // a reservation that does not charge the counter is not capped
    let other = reservation(rid(prefix, "p4"), Some(&w), vec![line(&p, &[(0, 1)])]);
    assert_eq!(freeze(store, &other, &limits).await, Ok(()));
    assert_eq!(counter(store, pending()).await, 2);
    // a confirm gives the slot back, and so does a release
    assert_eq!(move_lock(store, &p1, LockStatus::Sold).await, Ok(()));
    assert_eq!(counter(store, pending()).await, 1);
    assert_eq!(freeze(store, &p3, &limits).await, Ok(()));
    assert_eq!(counter(store, pending()).await, 2);
    assert_eq!(move_lock(store, &p2, LockStatus::Released).await, Ok(()));
    assert_eq!(counter(store, pending()).await, 1);
    assert_eq!(freeze(store, &checkout("p5", 1), &limits).await, Ok(()));
    // at the cap and short of stock: the cap is named
    assert_eq!(freeze(store, &checkout("p6", 100), &limits).await, Err(FreezeRejection::TooManyPending));
    assert_eq!(counter(store, pending()).await, 2);
}

/// Campaign quota shards: the quota, the window (start inclusive, end exclusive, judged at the
/// reservation's creation), the campaign pause and the campaign per-user limit.
pub async fn campaign_gates(store: &dyn StockStore, prefix: &str) {
    let k = sku(prefix, "K");
    stocked(store, &k, &[10, 10]).await;
    let (u, v) = (user(prefix, "u"), user(prefix, "v"));
    let a = campaign_id(prefix, "live");
    let mut c = campaign(&a, &k, 3, Some(2), live());
    assert!(write_campaign(store, &c, None).await, "create");
    assert!(!write_campaign(store, &c, None).await, "created once");
    assert_eq!(quota(store, &a, &k, 1).await, vec![(3, 0, 0)]);
    let limits = FreezeLimits { per_campaign_item: [(k.clone(), 2)].into(), ..FreezeLimits::default() };
    let sale = |name: &str, buyer: &UserId, shard: u16, q: u32| {
        reservation(rid(prefix, name), Some(buyer), vec![on_campaign(line(&k, &[(shard, q)]), &a, &[(0, q)], true)])
    };
    let held = |buyer: &UserId| Counter::CampaignLimit(a.clone(), k.clone(), buyer.clone());

    let c1 = sale("c1", &u, 0, 2);
    assert_eq!(freeze(store, &c1, &limits).await, Ok(()));
    assert_eq!(quota(store, &a, &k, 1).await, vec![(1, 2, 0)]);
    assert_eq!(shards(store, &k, 2).await, vec![(8, 2, 0), (10, 0, 0)], "the product shard moves with the quota");
    assert_eq!(counter(store, held(&u)).await, 2);
    let c2 = sale("c2", &u, 0, 1);
    assert_eq!(freeze(store, &c2, &limits).await, Err(FreezeRejection::CampaignLimitExceeded(k.clone())));
    let c3 = sale("c3", &v, 0, 2);
    assert_eq!(freeze(store, &c3, &limits).await, Err(FreezeRejection::QuotaShort(vec![k.clone()])), "quota short");
    assert_eq!(quota(store, &a, &k, 1).await, vec![(1, 2, 0)]);
    assert_eq!(shards(store, &k, 2).await, vec![(8, 2, 0), (10, 0, 0)]);
    let c4 = sale("c4", &v, 1, 1);
    assert_eq!(freeze(store, &c4, &limits).await, Ok(()), "the last unit of the quota");
    assert_eq!(quota(store, &a, &k, 1).await, vec![(0, 3, 0)]);
    // quota and stock both short: the quota is named
    let c5 = sale("c5", &v, 1, 100);
    assert_eq!(freeze(store, &c5, &FreezeLimits::default()).await, Err(FreezeRejection::QuotaShort(vec![k.clone()])));
    // release and confirm move the quota shard too
    assert_eq!(move_lock(store, &c1, LockStatus::Released).await, Ok(()));
    assert_eq!(move_lock(store, &c4, LockStatus::Sold).await, Ok(()));
    assert_eq!(quota(store, &a, &k, 1).await, vec![(2, 0, 1)]);
    assert_eq!(counter(store, held(&u)).await, 0);

    // the pause: the quota shards say no, the product shards are not touched
    c = Campaign { paused: true, version: 2, ..c };
    assert!(write_campaign(store, &c, Some(1)).await, "pause");
    assert!(!write_campaign(store, &Campaign { version: 3, ..c.clone() }, Some(1)).await, "a stale version");
    let c6 = sale("c6", &u, 0, 1);
    assert_eq!(freeze(store, &c6, &limits).await, Err(FreezeRejection::QuotaShort(vec![k.clone()])), "paused");
    let plain = reservation(rid(prefix, "plain"), None, vec![line(&k, &[(0, 1)])]);
    assert_eq!(freeze(store, &plain, &FreezeLimits::default()).await, Ok(()), "the SKU itself still sells");
    c = Campaign { paused: false, version: 3, ..c };
    assert!(write_campaign(store, &c, Some(2)).await, "resume");
    assert_eq!(freeze(store, &c6, &limits).await, Ok(()), "resumed");

    // the window, judged at the reservation's creation time
    let now = crate::clock::now_s();
    let soon = campaign_id(prefix, "soon");
    assert!(write_campaign(store, &campaign(&soon, &k, 5, None, (now + 3600, now + 7200)), None).await);
    let over = campaign_id(prefix, "over");
    assert!(write_campaign(store, &campaign(&over, &k, 5, None, (now - 7200, now - 3600)), None).await);
    let at = |name: &str, c: &CampaignId, at_s: i64| Reservation {
        created_at_ms: at_s * 1000,
        ..reservation(rid(prefix, name), None, vec![on_campaign(line(&k, &[(1, 1)]), c, &[(0, 1)], false)])
    };
    let none = FreezeLimits::default();
    let short = || Err(FreezeRejection::QuotaShort(vec![k.clone()]));
    assert_eq!(freeze(store, &at("w1", &soon, now), &none).await, short(), "not started");
    assert_eq!(freeze(store, &at("w2", &over, now), &none).await, short(), "ended");
    assert_eq!(freeze(store, &at("w3", &over, now - 3600), &none).await, short(), "the end is exclusive");
    assert_eq!(freeze(store, &at("w4", &over, now - 3601), &none).await, Ok(()), "the last second");
    assert_eq!(freeze(store, &at("w5", &soon, now + 3599), &none).await, short(), "a second early");
    assert_eq!(freeze(store, &at("w6", &soon, now + 3600), &none).await, Ok(()), "the start is inclusive");
    assert_eq!(quota(store, &soon, &k, 1).await, vec![(4, 1, 0)]);
    assert_eq!(quota(store, &over, &k, 1).await, vec![(4, 1, 0)]);
}

/// `move_lock`, `retake` and `restock`: each is conditional on the lock's status and moves the
/// counters of the reservation passed, conditional on them.
pub async fn lock_moves(store: &dyn StockStore, prefix: &str) {
    let m = sku(prefix, "M");
    stocked(store, &m, &[4, 4]).await;
    let (u, u2) = (user(prefix, "u"), user(prefix, "u2"));
    let limits = FreezeLimits { per_sku: [(m.clone(), 10)].into(), max_pending: Some(5), ..FreezeLimits::default() };
    let held = || Counter::Limit(m.clone(), u.clone());
    let pending = || Counter::Pending(u.clone());
    let checkout = |name: &str, pieces: &[(u16, u32)]| Reservation {
        pending: true,
        ..reservation(rid(prefix, name), Some(&u), vec![limited(line(&m, pieces))])
    };

    let r1 = checkout("r1", &[(0, 3), (1, 1)]);
    assert_eq!(freeze(store, &r1, &limits).await, Ok(()));
    assert_eq!(shards(store, &m, 2).await, vec![(1, 3, 0), (3, 1, 0)]);
    assert_eq!((counter(store, held()).await, counter(store, pending()).await), (4, 1));
    // confirm
    assert_eq!(move_lock(store, &r1, LockStatus::Sold).await, Ok(()), "confirm");
    assert_eq!(shards(store, &m, 2).await, vec![(1, 0, 3), (3, 0, 1)]);
    assert_eq!((counter(store, held()).await, counter(store, pending()).await), (4, 0));
    assert_eq!(status(store, &r1.id).await, Some(LockStatus::Sold));
    assert_eq!(move_lock(store, &r1, LockStatus::Sold).await, Err(MoveRejection::StatusChanged), "confirmed twice");
    assert_eq!(move_lock(store, &r1, LockStatus::Released).await, Err(MoveRejection::StatusChanged), "sold");
    let never = checkout("never", &[(0, 1)]);
    assert_eq!(move_lock(store, &never, LockStatus::Sold).await, Err(MoveRejection::StatusChanged), "no lock");
    assert_eq!(shards(store, &m, 2).await, vec![(1, 0, 3), (3, 0, 1)], "refused moves write nothing");
    // release
    let r2 = checkout("r2", &[(1, 2)]);
    assert_eq!(freeze(store, &r2, &limits).await, Ok(()));
    assert_eq!(move_lock(store, &r2, LockStatus::Released).await, Ok(()), "release");
    assert_eq!(shards(store, &m, 2).await, vec![(1, 0, 3), (3, 0, 1)]);
    assert_eq!((counter(store, held()).await, counter(store, pending()).await), (4, 0));
    assert_eq!(move_lock(store, &r2, LockStatus::Sold).await, Err(MoveRejection::StatusChanged), "released");
    assert_eq!(move_lock(store, &r2, LockStatus::Released).await, Err(MoveRejection::StatusChanged));
    // retake: RELEASED → SOLD, taking the units again and charging the allowance again
    assert_eq!(store.retake(&r2).await.expect("retake"), Ok(()), "retake");
    assert_eq!(shards(store, &m, 2).await, vec![(1, 0, 3), (1, 0, 3)]);
    assert_eq!((counter(store, held()).await, counter(store, pending()).await), (6, 0));
    assert_eq!(status(store, &r2.id).await, Some(LockStatus::Sold));
    assert_eq!(store.retake(&r2).await.expect("retake"), Err(MoveRejection::StatusChanged), "retaken twice");
    let r3 = reservation(rid(prefix, "r3"), Some(&u), vec![limited(line(&m, &[(0, 1)]))]);
    assert_eq!(freeze(store, &r3, &limits).await, Ok(()));
    assert_eq!(store.retake(&r3).await.expect("retake"), Err(MoveRejection::StatusChanged), "a frozen lock");
    // a retake the shard can no longer cover
    assert_eq!(move_lock(store, &r3, LockStatus::Released).await, Ok(()));
    let r4 = reservation(rid(prefix, "r4"), Some(&u2), vec![line(&m, &[(0, 1)])]);
    assert_eq!(freeze(store, &r4, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(shards(store, &m, 2).await, vec![(0, 1, 3), (1, 0, 3)]);
    assert_eq!(store.retake(&r3).await.expect("retake"), Err(MoveRejection::ShardShort), "shard short");
    assert_eq!(status(store, &r3.id).await, Some(LockStatus::Released));
    assert_eq!(shards(store, &m, 2).await, vec![(0, 1, 3), (1, 0, 3)]);
    assert_eq!(counter(store, held()).await, 6);
    // restock: SOLD → RESTOCKED, the units back on sale and the allowance back
    assert_eq!(store.restock(&r1).await.expect("restock"), Ok(()), "restock");
    assert_eq!(shards(store, &m, 2).await, vec![(3, 1, 0), (2, 0, 2)]);
    assert_eq!(counter(store, held()).await, 2);
    assert_eq!(status(store, &r1.id).await, Some(LockStatus::Restocked));
    assert_eq!(store.restock(&r1).await.expect("restock"), Err(MoveRejection::StatusChanged), "restocked twice");
    assert_eq!(store.restock(&r4).await.expect("restock"), Err(MoveRejection::StatusChanged), "a frozen lock");
    // sold short: the pieces passed name a shard that sold none
    let elsewhere = Reservation { lines: vec![limited(line(&m, &[(0, 2)]))], ..r2.clone() };
    assert_eq!(store.restock(&elsewhere).await.expect("restock"), Err(MoveRejection::ShardShort), "sold short");
    assert_eq!(status(store, &r2.id).await, Some(LockStatus::Sold));
    assert_eq!(shards(store, &m, 2).await, vec![(3, 1, 0), (2, 0, 2)]);
    assert_eq!(store.restock(&r2).await.expect("restock"), Ok(()));
    assert_eq!(shards(store, &m, 2).await, vec![(3, 1, 0), (4, 0, 0)]);
    assert_eq!(counter(store, held()).await, 0);
}

/// `set_sku_paused`: the metadata (conditional on its version) and the flag on every shard
/// `0..meta.slots` (each must exist; none beyond; no quota shard), all or nothing. The freeze
/// reads the flag on the shard it takes from; no other move does.
pub async fn stop_sale(store: &dyn StockStore, prefix: &str) {
    let s = sku(prefix, "S");
    stocked(store, &s, &[3, 3, 3]).await;
    let none = FreezeLimits::default();
    let sell = reservation(rid(prefix, "sell"), None, vec![line(&s, &[(0, 1)])]);
    let rel = reservation(rid(prefix, "rel"), None, vec![line(&s, &[(1, 1)])]);
    assert_eq!(freeze(store, &sell, &none).await, Ok(()));
    assert_eq!(freeze(store, &rel, &none).await, Ok(()));

    let before = meta_of(store, &s).await;
    assert!(set_paused(store, &s, true).await, "pause");
    let after = meta_of(store, &s).await;
    assert_eq!((after.paused, after.version), (true, before.version + 1));
    for shard in 0..3 {
        let r = freeze_one(store, prefix, &s, shard).await;
        assert_eq!(r, Err(FreezeRejection::ShardShort(vec![s.clone()])), "a freeze on paused shard {shard}");
    }
    assert_eq!(shards(store, &s, 3).await, vec![(2, 1, 0), (2, 1, 0), (3, 0, 0)]);
    let stale = SkuMeta { paused: false, version: after.version + 1, ..after.clone() };
    assert!(!store.set_sku_paused(&stale, before.version).await.expect("set_sku_paused"), "a stale version");
    assert!(meta_of(store, &s).await.paused);
    assert_eq!(freeze_one(store, prefix, &s, 2).await, Err(FreezeRejection::ShardShort(vec![s.clone()])));

    // only a freeze is stopped: confirm, release, retake, restock and adjustments go on
    assert_eq!(move_lock(store, &sell, LockStatus::Sold).await, Ok(()), "confirm while paused");
    assert_eq!(move_lock(store, &rel, LockStatus::Released).await, Ok(()), "release while paused");
    assert_eq!(store.retake(&rel).await.expect("retake"), Ok(()), "retake while paused");
    assert_eq!(store.restock(&sell).await.expect("restock"), Ok(()), "restock while paused");
    assert_eq!(adjust(store, &s, "while-paused", &[(2, 1)]).await, Ok(()), "adjust while paused");
    assert_eq!(shards(store, &s, 3).await, vec![(3, 0, 0), (2, 0, 1), (4, 0, 0)]);

    assert!(set_paused(store, &s, false).await, "resume");
    for shard in 0..3 {
        assert_eq!(freeze_one(store, prefix, &s, shard).await, Ok(()), "a freeze on resumed shard {shard}");
    }

    // a pause naming a shard that does not exist writes nothing
    let m = meta_of(store, &s).await;
    let wider = SkuMeta { paused: true, slots: 4, version: m.version + 1, ..m.clone() };
    assert!(!store.set_sku_paused(&wider, m.version).await.expect("set_sku_paused"), "shard 3 does not exist");
    assert_eq!(meta_of(store, &s).await, m, "the metadata is unchanged");
    assert_eq!(freeze_one(store, prefix, &s, 0).await, Ok(()), "no shard was paused");

    // exactly shards 0..meta.slots: with one slot in the metadata, shards 1 and 2 keep selling
    let narrow = SkuMeta { shards: 1, slots: 1, version: m.version + 1, ..m.clone() };
    assert!(store.put_sku(&narrow, Some(m.version)).await.expect("put_sku"));
    assert!(set_paused(store, &s, true).await);
    assert_eq!(freeze_one(store, prefix, &s, 0).await, Err(FreezeRejection::ShardShort(vec![s.clone()])));
    assert_eq!(freeze_one(store, prefix, &s, 1).await, Ok(()), "shard 1 is beyond meta.slots");
    // and `put_sku` leaves the flag of a shard that exists as it is
    let m = meta_of(store, &s).await;
    let back = SkuMeta { shards: 3, slots: 3, version: m.version + 1, ..m.clone() };
    assert!(store.put_sku(&back, Some(m.version)).await.expect("put_sku"));
    assert_eq!(freeze_one(store, prefix, &s, 2).await, Ok(()), "put_sku did not pause an existing shard");
    assert!(set_paused(store, &s, false).await);

    // quota shards are not product shards: each pause bites on its own shards
    let q = campaign_id(prefix, "q");
    let mut c = campaign(&q, &s, 5, None, live());
    assert!(write_campaign(store, &c, None).await);
    let sale =
        |name: &str| reservation(rid(prefix, name), None, vec![on_campaign(line(&s, &[(0, 1)]), &q, &[(0, 1)], false)]);
    assert!(set_paused(store, &s, true).await);
    assert_eq!(freeze(store, &sale("q1"), &none).await, Err(FreezeRejection::ShardShort(vec![s.clone()])), "SKU");
    assert_eq!(quota(store, &q, &s, 1).await, vec![(5, 0, 0)]);
    c = Campaign { paused: true, version: 2, ..c };
    assert!(write_campaign(store, &c, Some(1)).await);
    assert_eq!(freeze(store, &sale("q2"), &none).await, Err(FreezeRejection::QuotaShort(vec![s.clone()])), "both");
    assert!(set_paused(store, &s, false).await);
    assert_eq!(freeze(store, &sale("q3"), &none).await, Err(FreezeRejection::QuotaShort(vec![s.clone()])), "sale");
    assert!(write_campaign(store, &Campaign { paused: false, version: 3, ..c }, Some(2)).await);
    assert_eq!(freeze(store, &sale("q4"), &none).await, Ok(()));
}

/// A shard created while the SKU is stopped is stopped too: `put_sku` (more slots, or a SKU
/// created paused) and `rebalance` copy `meta.paused` onto every shard they create.
pub async fn stop_sale_on_new_shards(store: &dyn StockStore, prefix: &str) {
    let stopped = |s: &Sku| Err(FreezeRejection::ShardShort(vec![s.clone()]));
    // more slots through put_sku
    let n = sku(prefix, "N");
    stocked(store, &n, &[4]).await;
    assert!(set_paused(store, &n, true).await);
    let m = meta_of(store, &n).await;
    assert!(!store.put_sku(&m, None).await.expect("put_sku"), "a create of a SKU that exists");
    let grown = SkuMeta { shards: 3, slots: 3, version: m.version + 1, ..m.clone() };
    assert!(!store.put_sku(&grown, Some(m.version - 1)).await.expect("put_sku"), "a stale version");
    assert!(store.put_sku(&grown, Some(m.version)).await.expect("put_sku"), "more slots");
    assert_eq!(shards(store, &n, 3).await, vec![(4, 0, 0), (0, 0, 0), (0, 0, 0)]);
    assert_eq!(adjust(store, &n, "fill", &[(1, 2), (2, 2)]).await, Ok(()));
    for shard in 0..3 {
        assert_eq!(freeze_one(store, prefix, &n, shard).await, stopped(&n), "put_sku's shard {shard} while paused");
    }
    assert!(set_paused(store, &n, false).await);
    for shard in 0..3 {
        assert_eq!(freeze_one(store, prefix, &n, shard).await, Ok(()), "shard {shard} resumed");
    }
    // ... and not stopped when the SKU is not
    let n2 = sku(prefix, "N2");
    let m = stocked(store, &n2, &[4]).await;
    let grown = SkuMeta { shards: 2, slots: 2, version: m.version + 1, ..m.clone() };
    assert!(store.put_sku(&grown, Some(m.version)).await.expect("put_sku"));
    assert_eq!(adjust(store, &n2, "fill", &[(1, 1)]).await, Ok(()));
    assert_eq!(freeze_one(store, prefix, &n2, 1).await, Ok(()));

    // a SKU created paused
    let x = sku(prefix, "X");
    let m = create(store, SkuMeta { paused: true, ..new_meta(&x, 2) }, &[1, 1]).await;
    assert!(m.paused);
    assert_eq!(freeze_one(store, prefix, &x, 0).await, stopped(&x));
    assert_eq!(freeze_one(store, prefix, &x, 1).await, stopped(&x));

    // more shards through rebalance
    let r = sku(prefix, "R");
    stocked(store, &r, &[6]).await;
    assert!(set_paused(store, &r, true).await);
    let m = meta_of(store, &r).await;
    let old = store.read_shards(&r, 1).await.expect("read_shards");
    let wide = SkuMeta { shards: 3, slots: 3, version: m.version + 1, ..m.clone() };
    let cause = Cause::new(format!("rebalance-v{}", wide.version), Some("contract-admin"), "rebalance");
    assert!(store.rebalance(&wide, m.version, &old, &[2, 2, 2], &cause).await.expect("rebalance"));
    assert_eq!(shards(store, &r, 3).await, vec![(2, 0, 0); 3]);
    let after = meta_of(store, &r).await;
    assert_eq!((after.paused, after.slots), (true, 3));
    for shard in 0..3 {
        assert_eq!(freeze_one(store, prefix, &r, shard).await, stopped(&r), "rebalance's shard {shard} while paused");
    }
    assert!(set_paused(store, &r, false).await);
    for shard in 0..3 {
        assert_eq!(freeze_one(store, prefix, &r, shard).await, Ok(()), "shard {shard} resumed");
    }

    // rebalance's own conditions, and an unpaused SKU's new shard sells
    let r2 = sku(prefix, "R2");
    let m = stocked(store, &r2, &[6]).await;
    let old = store.read_shards(&r2, 1).await.expect("read_shards");
    let wide = SkuMeta { shards: 2, slots: 2, version: m.version + 1, ..m.clone() };
    let mut stale = old.clone();
    stale[0].available = 5;
    assert!(!store.rebalance(&wide, m.version, &stale, &[3, 3], &cause).await.expect("rebalance"), "stale counts");
    assert!(!store.rebalance(&wide, m.version + 1, &old, &[3, 3], &cause).await.expect("rebalance"), "stale version");
    assert_eq!((shards(store, &r2, 2).await, meta_of(store, &r2).await), (vec![(6, 0, 0), (0, 0, 0)], m.clone()));
    assert!(store.rebalance(&wide, m.version, &old, &[3, 3], &cause).await.expect("rebalance"));
    assert_eq!(shards(store, &r2, 2).await, vec![(3, 0, 0), (3, 0, 0)]);
    assert_eq!(freeze_one(store, prefix, &r2, 1).await, Ok(()));
}

fn code(prefix: &str, n: u32) -> StoredCode {
    StoredCode { fingerprint: format!("{prefix}fp{n:04}"), kid: "k1".into(), sealed: format!("sealed-{n}") }
}

fn upload(sku: &Sku, id: &str, appends: Vec<CodeAppend>) -> CodeUpload {
    let pieces: Vec<(u16, i64)> = appends.iter().map(|a| (a.shard, a.codes.len() as i64)).collect();
    CodeUpload { adjustment: adjustment(sku, id, &pieces), batch_id: format!("batch-{id}"), appends }
}

fn append(sku: &Sku, shard: u16, tail: u64, codes: Vec<StoredCode>) -> CodeAppend {
    CodeAppend { cell: sku.clone(), shard, tail, codes }
}

/// (head, tail, uploaded) of rings `0..n`.
async fn rings(store: &dyn StockStore, sku: &Sku, n: u16) -> Vec<(u64, u64, u64)> {
    store.read_rings(sku, n).await.expect("read_rings").iter().map(|g| (g.head, g.tail, g.uploaded)).collect()
}

/// Code pools: uploads (`add_codes`), claims by head (`claim_codes` with `max_head`), binding
/// at freeze, `give_back_codes` and the return of a released lock's codes.
pub async fn code_pools(store: &dyn StockStore, prefix: &str) {
    let c = sku(prefix, "C");
    let pool = InventoryModel { management: Management::CodePool, ..InventoryModel::default() };
    create(store, SkuMeta { model: pool, ..new_meta(&c, 2) }, &[]).await;
    assert_eq!(rings(store, &c, 2).await, vec![(0, 0, 0); 2]);
    let first: Vec<StoredCode> = (0..4).map(|i| code(prefix, i)).collect();
    let up = upload(&c, "u1", vec![append(&c, 0, 0, first.clone()), append(&c, 1, 0, vec![code(prefix, 4)])]);
    assert_eq!(store.add_codes(&up).await.expect("add_codes"), Ok(()), "upload");
    assert_eq!(rings(store, &c, 2).await, vec![(0, 4, 4), (0, 1, 1)]);
    assert_eq!(shards(store, &c, 2).await, vec![(4, 0, 0), (1, 0, 0)]);
    assert_eq!(meta_of(store, &c).await.stocked, 5);
    assert_eq!(store.add_codes(&up).await.expect("add_codes"), Err(AdjustRejection::Duplicate { delta: 5 }), "replay");
    // a code the pool holds, a tail that moved on, a tail ahead of the ring
    let again = upload(&c, "u2", vec![append(&c, 1, 1, vec![code(prefix, 0)])]);
    assert_eq!(store.add_codes(&again).await.expect("add_codes"), Err(AdjustRejection::CodeTaken), "held code");
    let behind = upload(&c, "u3", vec![append(&c, 0, 0, vec![code(prefix, 9)])]);
    assert_eq!(store.add_codes(&behind).await.expect("add_codes"), Err(AdjustRejection::CodeTaken), "slot taken");
    let ahead = upload(&c, "u4", vec![append(&c, 0, 9, vec![code(prefix, 9)])]);
    assert_eq!(store.add_codes(&ahead).await.expect("add_codes"), Err(AdjustRejection::Conflict), "tail ahead");
    assert_eq!(rings(store, &c, 2).await, vec![(0, 4, 4), (0, 1, 1)], "refused uploads write nothing");
    assert_eq!(meta_of(store, &c).await.stocked, 5);
    let known = store.known_codes(&c, &[code(prefix, 0).fingerprint, code(prefix, 9).fingerprint]).await;
    assert_eq!(known.expect("known_codes"), [(code(prefix, 0).fingerprint, "batch-u1".to_owned())].into());

    // claims: the head moves if it is at most max_head
    assert_eq!(store.claim_codes(&c, 0, 2, 2).await.expect("claim"), Some(0));
    assert_eq!(store.claim_codes(&c, 0, 2, 2).await.expect("claim"), Some(2), "head 2 <= 2");
    assert_eq!(store.claim_codes(&c, 0, 1, 3).await.expect("claim"), None, "head 4 > 3");
    assert_eq!(store.claim_codes(&c, 1, 1, 0).await.expect("claim"), Some(0));
    assert_eq!(rings(store, &c, 2).await, vec![(4, 4, 4), (1, 1, 1)]);
    // a SKU that is not a code pool has no ring to claim from, even after a freeze on it
    let plain = sku(prefix, "plain");
    stocked(store, &plain, &[3]).await;
    assert_eq!(freeze_one(store, prefix, &plain, 0).await, Ok(()));
    assert_eq!(store.claim_codes(&plain, 0, 1, 100).await.expect("claim"), None, "not a code pool");

    // a freeze binds its claimed positions
    let mut bound = line(&c, &[(0, 2)]);
    bound.codes = Some(vec![CodeRange { shard: 0, from: 0, count: 2 }]);
    let rc = reservation(rid(prefix, "rc"), Some(&user(prefix, "u")), vec![bound]);
    assert_eq!(freeze(store, &rc, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(shards(store, &c, 2).await, vec![(2, 2, 0), (1, 0, 0)]);
    let same = Reservation { id: rid(prefix, "rc2"), ..rc.clone() };
    assert_eq!(freeze(store, &same, &FreezeLimits::default()).await, Err(FreezeRejection::Conflict), "bound twice");
    // give back: bound positions are refused, claimed unbound ones go to the tail, once
    let range = |from, count| vec![CodeRange { shard: 0, from, count }];
    assert!(!store.give_back_codes(&c, &range(1, 2)).await.expect("give back"), "position 1 is bound");
    assert_eq!(store.unbound_codes(&c, 0, 0, 4).await.expect("unbound"), vec![2, 3]);
    assert!(store.give_back_codes(&c, &range(2, 2)).await.expect("give back"));
    assert_eq!(rings(store, &c, 2).await, vec![(4, 6, 4), (1, 1, 1)]);
    let moved = store.read_codes(&c, &[(0, 4), (0, 5)]).await.expect("read_codes");
    assert_eq!(moved, vec![Some(first[2].clone()), Some(first[3].clone())]);
    assert!(!store.give_back_codes(&c, &range(2, 2)).await.expect("give back"), "given back twice");
    assert_eq!(store.unbound_codes(&c, 0, 0, 6).await.expect("unbound"), vec![4, 5], "only the copies at the tail");
    assert!(store.give_back_codes(&c, &range(40, 1)).await.is_err(), "a position that holds no code");
    assert_eq!(rings(store, &c, 2).await, vec![(4, 6, 4), (1, 1, 1)]);
    // a release appends the lock's codes at the tail
    assert_eq!(move_lock(store, &rc, LockStatus::Released).await, Ok(()));
    assert_eq!(rings(store, &c, 2).await, vec![(4, 8, 4), (1, 1, 1)]);
    assert_eq!(shards(store, &c, 2).await, vec![(4, 0, 0), (1, 0, 0)]);
    let back = store.read_codes(&c, &[(0, 6), (0, 7)]).await.expect("read_codes");
    assert_eq!(back, vec![Some(first[0].clone()), Some(first[1].clone())]);
}

/// `adjust`: once per id (a replay names the first delta), every piece on an existing shard,
/// a negative piece only from a shard that has it, all pieces or none.
pub async fn adjustments(store: &dyn StockStore, prefix: &str) {
    let j = sku(prefix, "J");
    let m = stocked(store, &j, &[0, 0]).await;
    assert_eq!(adjust(store, &j, "a1", &[(0, 3), (1, 2)]).await, Ok(()));
    let after = meta_of(store, &j).await;
    assert_eq!((after.stocked, after.version), (5, m.version + 1), "stocked and version move");
    assert_eq!(shards(store, &j, 2).await, vec![(3, 0, 0), (2, 0, 0)]);
    assert_eq!(adjust(store, &j, "a1", &[(0, 3), (1, 2)]).await, Err(AdjustRejection::Duplicate { delta: 5 }));
    assert_eq!(adjust(store, &j, "a1", &[(0, 7)]).await, Err(AdjustRejection::Duplicate { delta: 5 }), "reused id");
    assert_eq!(adjust(store, &j, "a2", &[(0, -4)]).await, Err(AdjustRejection::ShardShort), "3 - 4");
    assert_eq!(adjust(store, &j, "a2", &[(1, 1), (0, -4)]).await, Err(AdjustRejection::ShardShort), "all or none");
    assert_eq!(adjust(store, &j, "a3", &[(7, 1)]).await, Err(AdjustRejection::ShardShort), "no shard 7");
    assert_eq!(adjust(store, &sku(prefix, "nope"), "a4", &[(0, 1)]).await, Err(AdjustRejection::ShardShort), "no SKU");
    assert_eq!(shards(store, &j, 2).await, vec![(3, 0, 0), (2, 0, 0)], "refused adjustments write nothing");
    assert_eq!(meta_of(store, &j).await, after);
    // a refused id was not recorded; a shard may be emptied exactly
    assert_eq!(adjust(store, &j, "a2", &[(0, -3), (1, -1)]).await, Ok(()));
    assert_eq!(shards(store, &j, 2).await, vec![(0, 0, 0), (1, 0, 0)]);
    let last = meta_of(store, &j).await;
    assert_eq!((last.stocked, last.version), (1, after.version + 1));
    // locked units are not available to an adjustment
    assert_eq!(freeze_one(store, prefix, &j, 1).await, Ok(()));
    assert_eq!(adjust(store, &j, "a5", &[(1, -1)]).await, Err(AdjustRejection::ShardShort), "the unit is locked");
}
