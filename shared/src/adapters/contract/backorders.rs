//! Backorders through the port (docs/inventory-models.md, "Backorders (oversell allowed)").

use super::*;
use crate::domain::allocation::Piece;
use crate::domain::plan::backorder_steps;
use crate::domain::reservation::BackorderLine;

/// A short line freezes only the units it holds and lists its order on the SKU's backlog item
/// (`ordered` grows) in the freeze's transaction. A fill is conditional on the lock's status and
/// fill version: it moves `available → locked` (FROZEN) or `→ sold` (SOLD), counts `filled` and
/// unlists the order once nothing waits; a fill from a stale copy, or a lock move from a copy read
/// before a fill, is refused and writes nothing. A release cancels what was still open and gives
/// the filled units back with the rest.
pub async fn backorder_fills(store: &dyn StockStore, prefix: &str) {
    let s = sku(prefix, "B");
    stocked(store, &s, &[1, 0]).await;
    let order = |name: &str, q: u32, pieces: &[(u16, u32)]| {
        let mut l = line(&s, pieces);
        l.quantity = q;
        l.backorder = Some(BackorderLine { short: q - pieces.iter().map(|p| p.1).sum::<u32>(), filled: 0 });
        reservation(rid(prefix, name), None, vec![l])
    };
    let a = order("a", 3, &[(0, 1)]);
    let b = order("b", 2, &[]);
    assert_eq!(freeze(store, &a, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(freeze(store, &b, &FreezeLimits::default()).await, Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(0, 1, 0), (0, 0, 0)]);
    let log = store.read_backlog(&s).await.expect("read_backlog");
    let mut both = vec![a.id.clone(), b.id.clone()];
    both.sort();
    assert_eq!((log.ordered, log.filled, log.cancelled, log.open), (4, 0, 0, both));

    // paid, then 2 units arrive on shard 1: a's 2 are filled as sold, and a is unlisted
    assert_eq!(move_lock(store, &a, LockStatus::Sold).await, Ok(()));
    let a = store.get_reservation(&a.id).await.expect("get").expect("stored");
    assert_eq!(adjust(store, &s, "r1", &[(1, 2)]).await, Ok(()));
    let (filled, actions) = backorder_steps::fill(&a, &s, &[Piece { shard: 1, quantity: 2 }], 2).expect("fill plan");
    assert_eq!(store.fill_backorder(&a, &filled, &actions).await.expect("fill"), Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(0, 0, 1), (0, 0, 2)]);
    assert_eq!(
        store.fill_backorder(&a, &filled, &actions).await.expect("fill"),
        Err(MoveRejection::StatusChanged),
        "never filled twice from the same copy"
    );
    let stored = store.get_reservation(&a.id).await.expect("get").expect("stored");
    assert_eq!(stored.lines[0].backorder, Some(BackorderLine { short: 2, filled: 2 }));
    let log = store.read_backlog(&s).await.expect("read_backlog");
    assert_eq!((log.ordered, log.filled, log.cancelled, log.open), (4, 2, 0, vec![b.id.clone()]));
    // a refund from the copy read before the fill would restock 1 unit, not 3: refused
    assert_eq!(store.restock(&a).await.expect("restock"), Err(MoveRejection::StatusChanged));
    assert_eq!(shards(store, &s, 2).await, vec![(0, 0, 1), (0, 0, 2)], "refused moves write nothing");

    // b: 1 unit arrives and is frozen into it, then b is released: both its units are accounted
    assert_eq!(adjust(store, &s, "r2", &[(0, 1)]).await, Ok(()));
    let (fb, acts) = backorder_steps::fill(&b, &s, &[Piece { shard: 0, quantity: 1 }], 1).expect("fill plan");
    assert_eq!(store.fill_backorder(&b, &fb, &acts).await.expect("fill"), Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(0, 1, 1), (0, 0, 2)]);
    assert_eq!(move_lock(store, &fb, LockStatus::Released).await, Ok(()));
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 1), (0, 0, 2)]);
    let log = store.read_backlog(&s).await.expect("read_backlog");
    assert_eq!((log.ordered, log.filled, log.cancelled, log.waiting()), (4, 3, 1, 0));
    assert!(log.open.is_empty());
    // a released lock is never filled
    assert_eq!(store.fill_backorder(&b, &fb, &acts).await.expect("fill"), Err(MoveRejection::StatusChanged));
    assert_eq!(shards(store, &s, 2).await, vec![(1, 0, 1), (0, 0, 2)]);
}
