//! The checks of code pools and adjustments.

use super::*;

pub(super) fn code(prefix: &str, n: u32) -> StoredCode {
    StoredCode { fingerprint: format!("{prefix}fp{n:04}"), kid: "k1".into(), sealed: format!("sealed-{n}") }
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
