//! The checks of freezes, limits, sale gates, lock moves and stop-sale.

use super::*;

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

/// `read_many_shards_public`: every cell's shard counters, in order, as many as asked for each
/// (the calendar view's one batched read), the same as reading them one SKU at a time.
pub async fn batched_reads(store: &dyn StockStore, prefix: &str) {
    let (a, b, c) = (sku(prefix, "A"), sku(prefix, "B"), sku(prefix, "C"));
    stocked(store, &a, &[1, 2, 3]).await;
    stocked(store, &b, &[7]).await;
    stocked(store, &c, &[4, 5]).await;
    let r = reservation(rid(prefix, "r1"), None, vec![line(&c, &[(1, 2)])]);
    assert_eq!(freeze(store, &r, &FreezeLimits::default()).await, Ok(()));
    let cells = vec![(c.clone(), 2), (a.clone(), 3), (b.clone(), 1)];
    let many = store.read_many_shards_public(&cells).await.expect("read_many_shards_public");
    let triples = |v: &[crate::domain::invariants::ShardCounts]| -> Vec<(i64, i64, i64)> {
        v.iter().map(|s| (s.available, s.locked, s.sold)).collect()
    };
    assert_eq!(
        many.iter().map(|v| triples(v)).collect::<Vec<_>>(),
        vec![vec![(4, 0, 0), (3, 2, 0)], vec![(1, 0, 0), (2, 0, 0), (3, 0, 0)], vec![(7, 0, 0)]],
        "every cell's shards, in the order asked"
    );
    for ((s, n), got) in cells.iter().zip(&many) {
        assert_eq!(triples(got), shards(store, s, *n).await, "as one SKU's read");
    }
    assert!(store.read_many_shards_public(&[]).await.expect("no cells").is_empty());
}

/// The waiting rooms (docs/waiting-room.md): counters increment atomically from 1, one ticket per
/// buyer, the room's clock is a compare-and-set on its version, and an admission is spent once,
/// in the freeze's own transaction — a second freeze with it is refused whatever the stock, a
/// freeze refused for stock spends nothing, and a release gives nothing back.
pub async fn queues(store: &dyn StockStore, prefix: &str) {
    use crate::domain::queue::{Room, Ticket};
    let c = crate::domain::CampaignId::parse(&format!("{prefix}Q")).unwrap();
    let (u, v) = (user(prefix, "qu"), user(prefix, "qv"));
    assert_eq!(store.next_number(&c, 3).await.unwrap(), 1);
    assert_eq!(store.next_number(&c, 3).await.unwrap(), 2);
    assert_eq!(store.next_number(&c, 0).await.unwrap(), 1);
    assert_eq!(store.counters(&c, 4).await.unwrap(), vec![1, 0, 0, 2]);
    let t = Ticket { number: 4, joined_at_ms: 1 };
    assert!(store.put_ticket(&c, &u, &t).await.unwrap());
    assert!(!store.put_ticket(&c, &u, &Ticket { number: 8, joined_at_ms: 2 }).await.unwrap(), "one per buyer");
    assert_eq!(store.ticket(&c, &u).await.unwrap(), Some(t));
    assert_eq!(store.ticket(&c, &v).await.unwrap(), None);
    // the clock: written from version 0, then only over the version it read
    assert_eq!(store.room(&c).await.unwrap(), Room::default());
    let first = Room { version: 1, segments: vec![(5, 100)], ..Room::default() };
    assert!(store.put_room(&c, &first).await.unwrap());
    assert!(!store.put_room(&c, &first).await.unwrap(), "a stale version");
    let second = Room { version: 2, pre_start: Some(vec![1, 2]), ..first.clone() };
    assert!(store.put_room(&c, &second).await.unwrap());
    assert_eq!(store.room(&c).await.unwrap(), second);
    // the spend
    let a = sku(prefix, "QA");
    stocked(store, &a, &[2]).await;
    let spend = FreezeLimits { admission: Some((c.clone(), 4)), ..FreezeLimits::default() };
    let short = reservation(rid(prefix, "q0"), Some(&u), vec![line(&a, &[(0, 5)])]);
    assert!(freeze(store, &short, &spend).await.is_err(), "short of stock");
    assert!(!store.spent(&c, 4).await.unwrap(), "a stock refusal spends nothing");
    let first_use = reservation(rid(prefix, "q1"), Some(&u), vec![line(&a, &[(0, 1)])]);
    assert_eq!(freeze(store, &first_use, &spend).await, Ok(()));
    assert!(store.spent(&c, 4).await.unwrap());
    let again = reservation(rid(prefix, "q2"), Some(&u), vec![line(&a, &[(0, 1)])]);
    assert_eq!(freeze(store, &again, &spend).await, Err(FreezeRejection::AdmissionUsed));
    assert_eq!((status(store, &again.id).await, shards(store, &a, 1).await), (None, vec![(1, 1, 0)]));
    assert_eq!(move_lock(store, &first_use, LockStatus::Released).await, Ok(()));
    assert!(store.spent(&c, 4).await.unwrap(), "a release does not give an admission back");
    assert_eq!(freeze(store, &again, &spend).await, Err(FreezeRejection::AdmissionUsed));
}
