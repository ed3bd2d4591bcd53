//! The checks of code pools and adjustments.

use super::*;

pub(super) fn code(prefix: &str, n: u32) -> StoredCode {
    StoredCode {
        fingerprint: format!("{prefix}fp{n:04}"),
        kid: "k1".into(),
        sealed: format!("sealed-{n}"),
        ..StoredCode::default()
    }
}

pub(super) fn upload(sku: &Sku, id: &str, appends: Vec<CodeAppend>) -> CodeUpload {
    let pieces: Vec<(u16, i64)> = appends.iter().map(|a| (a.shard, a.codes.len() as i64)).collect();
    CodeUpload { adjustment: adjustment(sku, id, &pieces), batch_id: format!("batch-{id}"), appends }
}

pub(super) fn append(sku: &Sku, shard: u16, tail: u64, codes: Vec<StoredCode>) -> CodeAppend {
    CodeAppend { cell: sku.clone(), shard, tail, codes }
}

/// (head, tail, uploaded) of rings `0..n`.
pub(super) async fn rings(store: &dyn StockStore, sku: &Sku, n: u16) -> Vec<(u64, u64, u64)> {
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

/// Two adjustments of two stock items together (a ring-fence, docs/campaigns.md): both or
/// neither, a duplicate named by the first's record, a short shard refusing the pair.
pub async fn adjustment_pairs(store: &dyn StockStore, prefix: &str) {
    let from = sku(prefix, "F");
    let into = sku(prefix, "F").reserve_cell(&campaign_id(prefix, "fence"));
    stocked(store, &from, &[4, 3]).await;
    stocked(store, &into, &[0]).await;
    let pair =
        |id: &str, out: &[(u16, i64)], inn: &[(u16, i64)]| (adjustment(&from, id, out), adjustment(&into, id, inn));
    let (o, i) = pair("p1", &[(0, -4), (1, -1)], &[(0, 5)]);
    assert_eq!(store.adjust_pair(&o, &i).await.unwrap(), Ok(()));
    assert_eq!(shards(store, &from, 2).await, vec![(0, 0, 0), (2, 0, 0)]);
    assert_eq!(shards(store, &into, 1).await, vec![(5, 0, 0)]);
    assert_eq!((meta_of(store, &from).await.stocked, meta_of(store, &into).await.stocked), (2, 5));
    assert_eq!(store.adjust_pair(&o, &i).await.unwrap(), Err(AdjustRejection::Duplicate { delta: -5 }), "replay");
    // the source is short: neither side moves
    let (o, i) = pair("p2", &[(1, -3)], &[(0, 3)]);
    assert_eq!(store.adjust_pair(&o, &i).await.unwrap(), Err(AdjustRejection::ShardShort));
    assert_eq!(shards(store, &from, 2).await, vec![(0, 0, 0), (2, 0, 0)], "all or none");
    assert_eq!(shards(store, &into, 1).await, vec![(5, 0, 0)], "all or none");
    assert_eq!((meta_of(store, &from).await.stocked, meta_of(store, &into).await.stocked), (2, 5));
    // and back
    let (back_out, back_in) = (adjustment(&into, "p3", &[(0, -2)]), adjustment(&from, "p3", &[(1, 2)]));
    assert_eq!(store.adjust_pair(&back_out, &back_in).await.unwrap(), Ok(()));
    assert_eq!(shards(store, &from, 2).await, vec![(0, 0, 0), (4, 0, 0)]);
    assert_eq!(shards(store, &into, 1).await, vec![(3, 0, 0)]);
}

/// A sold code's life (docs/code-pools.md, "Redemption", "Expiry"): a freeze never binds an
/// expired code; claimed expired codes are retired once, from the shard's counters and the
/// SKU's stock, never given back; a lock's code fate moves one way (`settle_codes`); a code is
/// redeemed once, only from a SOLD, revealed lock that holds it and while it is valid; a
/// redeemed lock is never voided and a voided one never redeemed.
pub async fn code_lifecycle(store: &dyn StockStore, prefix: &str) {
    let c = sku(prefix, "L");
    let pool = InventoryModel { management: Management::CodePool, ..InventoryModel::default() };
    create(store, SkuMeta { model: pool, ..new_meta(&c, 1) }, &[]).await;
    let now = crate::clock::now_ms();
    let hour = 3_600_000;
    let with = |i: u32, exp: Option<i64>| StoredCode { expires_at_ms: exp, ..code(prefix, i) };
    // positions: 0 never expires, 1 valid for an hour, 2 expired, 3 never expires
    let codes = vec![with(0, None), with(1, Some(now + hour)), with(2, Some(now - 1_000)), with(3, None)];
    assert_eq!(store.add_codes(&upload(&c, "l1", vec![append(&c, 0, 0, codes)])).await.expect("add_codes"), Ok(()));
    assert!(store.read_rings(&c, 1).await.expect("rings")[0].expiring, "the ring knows it holds expiring codes");
    let stored = store.read_codes(&c, &[(0, 1)]).await.expect("read_codes");
    assert_eq!(stored[0].as_ref().and_then(|c| c.expires_at_ms), Some(now + hour), "the expire time is stored");
    // a freeze binds valid codes, never an expired one
    assert_eq!(store.claim_codes(&c, 0, 3, 1).await.expect("claim"), Some(0));
    let holding = |id: &str, from: u64, count: u32| {
        let mut l = line(&c, &[(0, count)]);
        l.codes = Some(vec![CodeRange { shard: 0, from, count }]);
        reservation(rid(prefix, id), Some(&user(prefix, "u")), vec![l])
    };
    let r = holding("r", 0, 2);
    assert_eq!(freeze(store, &r, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(freeze(store, &holding("x", 2, 1), &FreezeLimits::default()).await, Err(FreezeRejection::Conflict));
    assert_eq!(shards(store, &c, 1).await, vec![(2, 2, 0)], "the refused freeze wrote nothing");
    // retire: only claimed, unbound, expired positions, once
    let retire = |id: &str, positions: Vec<u64>| crate::domain::codes::CodeRetire {
        adjustment: adjustment(&c, id, &[(0, -(positions.len() as i64))]),
        shard: 0,
        positions,
        now_ms: now,
    };
    assert_eq!(store.retire_codes(&retire("e0", vec![0])).await.unwrap(), Err(AdjustRejection::Conflict), "bound");
    assert_eq!(store.retire_codes(&retire("e1", vec![1])).await.unwrap(), Err(AdjustRejection::Conflict), "valid");
    assert_eq!(store.retire_codes(&retire("e3", vec![3])).await.unwrap(), Err(AdjustRejection::Conflict), "valid");
    assert_eq!(store.retire_codes(&retire("e2", vec![2])).await.unwrap(), Ok(()));
    assert_eq!(
        store.retire_codes(&retire("e2", vec![2])).await.unwrap(),
        Err(AdjustRejection::Duplicate { delta: -1 })
    );
    assert_eq!(store.retire_codes(&retire("e4", vec![2])).await.unwrap(), Err(AdjustRejection::Conflict), "twice");
    assert_eq!(shards(store, &c, 1).await, vec![(1, 2, 0)]);
    assert_eq!(meta_of(store, &c).await.stocked, 3);
    let ring = store.read_rings(&c, 1).await.expect("rings")[0];
    assert_eq!((ring.head, ring.tail, ring.uploaded, ring.expired), (3, 4, 4, 1));
    assert!(!store.give_back_codes(&c, &[CodeRange { shard: 0, from: 2, count: 1 }]).await.expect("give back"));
    assert_eq!(store.unbound_codes(&c, 0, 0, 3).await.expect("unbound"), Vec::<u64>::new(), "retired, not orphaned");

    // redemption: a SOLD lock whose codes were shown, a slot it holds, once, while valid
    let fate = crate::domain::reservation::CodeFate::Redeemed;
    assert!(!store.redeem_code(&r.id, &c, (0, 0), now).await.expect("redeem"), "FROZEN, never shown");
    assert_eq!(move_lock(store, &r, LockStatus::Sold).await, Ok(()));
    assert!(!store.redeem_code(&r.id, &c, (0, 0), now).await.expect("redeem"), "never shown");
    use crate::domain::reservation::CodeFate::{Revealed, Voided, Withdrawn};
    assert_eq!(store.settle_codes(&r.id, Revealed).await.expect("settle"), Some(Revealed));
    assert!(!store.redeem_code(&r.id, &c, (0, 2), now).await.expect("redeem"), "a slot the lock does not hold");
    assert!(!store.redeem_code(&rid(prefix, "nobody"), &c, (0, 0), now).await.expect("redeem"), "no such lock");
    assert!(!store.redeem_code(&r.id, &c, (0, 1), now + hour).await.expect("redeem"), "expired by then");
    assert!(store.redeem_code(&r.id, &c, (0, 0), now).await.expect("redeem"));
    assert!(!store.redeem_code(&r.id, &c, (0, 0), now + 1).await.expect("redeem"), "once");
    let got = store.read_codes(&c, &[(0, 0), (0, 1)]).await.expect("read_codes");
    assert_eq!(
        got.iter().map(|c| c.as_ref().and_then(|c| c.redeemed_at_ms)).collect::<Vec<_>>(),
        vec![Some(now), None]
    );
    assert_eq!(store.get_reservation(&r.id).await.expect("lock").and_then(|l| l.code_fate), Some(fate));
    assert!(store.redeem_code(&r.id, &c, (0, 1), now + 5).await.expect("redeem"), "another code of the lock");
    assert_eq!(store.settle_codes(&r.id, Voided).await.expect("settle"), Some(fate), "a redeemed lock is never voided");
    assert_eq!(store.settle_codes(&r.id, Withdrawn).await.expect("settle"), Some(fate));
    // a voided lock is never redeemed
    assert_eq!(store.claim_codes(&c, 0, 1, 3).await.expect("claim"), Some(3));
    let v = holding("v", 3, 1);
    assert_eq!(freeze(store, &v, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(move_lock(store, &v, LockStatus::Sold).await, Ok(()));
    assert_eq!(store.settle_codes(&v.id, Voided).await.expect("settle"), None, "never shown: nothing to void");
    assert_eq!(store.settle_codes(&v.id, Revealed).await.expect("settle"), Some(Revealed));
    assert_eq!(store.settle_codes(&v.id, Voided).await.expect("settle"), Some(Voided));
    assert!(!store.redeem_code(&v.id, &c, (0, 3), now).await.expect("redeem"), "voided");
    assert_eq!(store.settle_codes(&v.id, Revealed).await.expect("settle"), Some(Voided), "one way");
}
