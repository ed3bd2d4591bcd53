//! Deduction at shipment through the port (docs/inventory-models.md, "Deduction at shipment").

use super::*;

/// A line taken at shipment is frozen like any line and its lock stays FROZEN once paid (the
/// payment's confirm writes nothing). The shipment's take is the FROZEN → SOLD move (`locked →
/// sold`, conditional on the lock still FROZEN) and judges no sale gate: a SKU paused after
/// payment still ships. A refund before shipping is FROZEN → RELEASED (`locked → available`,
/// allowance back); a take after it, or a second take, is refused and writes nothing. The stored
/// lock keeps its line's deduction, and a return after shipping restocks it as any sold lock.
pub async fn shipment_takes(store: &dyn StockStore, prefix: &str) {
    let s = sku(prefix, "S");
    stocked(store, &s, &[3, 3]).await;
    let u = user(prefix, "u");
    let limits = FreezeLimits { per_sku: [(s.clone(), 5)].into(), ..FreezeLimits::default() };
    let held = || Counter::Limit(s.clone(), u.clone());
    let order = |name: &str, pieces: &[(u16, u32)]| {
        let l = ReservedLine { at_shipment: true, ..limited(line(&s, pieces)) };
        reservation(rid(prefix, name), Some(&u), vec![l])
    };

    let a = order("a", &[(0, 2), (1, 1)]);
    assert_eq!(freeze(store, &a, &limits).await, Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(1, 2, 0), (2, 1, 0)], "held at order");
    assert_eq!(counter(store, held()).await, 3);
    let stored = store.get_reservation(&a.id).await.expect("get_reservation").expect("stored");
    assert!(stored.lines[0].at_shipment && stored.status == LockStatus::Frozen, "{stored:?}");
    // paused after payment: the held units still ship
    assert!(set_paused(store, &s, true).await);
    assert_eq!(move_lock(store, &a, LockStatus::Sold).await, Ok(()), "taken at shipment");
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 2), (2, 0, 1)]);
    assert_eq!(counter(store, held()).await, 3, "a take charges nothing more");
    assert_eq!(move_lock(store, &a, LockStatus::Sold).await, Err(MoveRejection::StatusChanged), "taken twice");
    assert!(set_paused(store, &s, false).await);

    // refunded before shipping: the hold is released
    let b = order("b", &[(1, 2)]);
    assert_eq!(freeze(store, &b, &limits).await, Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 2), (0, 2, 1)]);
    assert_eq!(counter(store, held()).await, 5);
    assert_eq!(move_lock(store, &b, LockStatus::Released).await, Ok(()), "released before shipping");
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 2), (2, 0, 1)]);
    assert_eq!(counter(store, held()).await, 3, "allowance back");
    assert_eq!(move_lock(store, &b, LockStatus::Sold).await, Err(MoveRejection::StatusChanged), "not shipped");
    assert_eq!(status(store, &b.id).await, Some(LockStatus::Released));
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 2), (2, 0, 1)], "refused takes write nothing");

    // returned after shipping: restocked like any sold lock
    assert_eq!(store.restock(&a).await.expect("restock"), Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(3, 0, 0), (3, 0, 0)]);
    assert_eq!(counter(store, held()).await, 0);
}
