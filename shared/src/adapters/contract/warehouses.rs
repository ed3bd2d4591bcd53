//! Warehouse cells through the port (docs/inventory-models.md, "Warehouses").

use super::*;
use crate::domain::model::Unit;
use crate::domain::reservation::Draw;
use crate::domain::warehouse::{Allocation, Warehouse, Warehouses};

fn drawn(cell: &Sku, pieces: &[(u16, u32)]) -> Draw {
    let (sku, w) = cell.warehouse_parent().expect("a warehouse cell");
    Draw {
        sku,
        warehouse: Some(w),
        date: None,
        quantity: pieces.iter().map(|(_, q)| q).sum(),
        pieces: pieces.iter().map(|&(shard, quantity)| Piece { shard, quantity }).collect(),
        fence: None,
    }
}

/// A WAREHOUSE SKU's metadata (its warehouses and policy) reads back as written, and each
/// warehouse is a cell (`<sku>~<warehouse>`) with its own metadata and shards; a lock names each
/// draw by its SKU and warehouse, and reads back so. A line drawing
/// on two warehouses freezes as ONE transaction: both cells' shards move or neither (one short
/// piece refuses the whole freeze, naming that cell, and writes nothing). The stored lock keeps
/// each draw's cell, so a release, a sale and a restock move exactly the units each warehouse
/// gave: per cell, stocked = available + locked + sold throughout.
pub async fn warehouse_cells(store: &dyn StockStore, prefix: &str) {
    let k = sku(prefix, "K");
    let stores = Warehouses {
        list: ["SH", "BJ"].map(|w| Warehouse::parse(w).expect("a warehouse id")).to_vec(),
        allocation: Allocation::Split,
    };
    let model = InventoryModel { unit: Unit::Warehouse, ..InventoryModel::default() };
    let parent = SkuMeta { model, warehouses: Some(stores.clone()), slots: 0, ..new_meta(&k, 2) };
    assert!(store.put_sku(&parent, None).await.expect("put_sku"));
    let read = meta_of(store, &k).await;
    assert_eq!((read.model, read.warehouses), (model, Some(stores.clone())), "the warehouses read back");
    let (sh, bj) = (k.warehouse_cell(&stores.list[0]), k.warehouse_cell(&stores.list[1]));
    create(store, new_meta(&sh, 2), &[2, 1]).await;
    create(store, new_meta(&bj, 1), &[3]).await;
    let got = store.get_skus(&[sh.clone(), bj.clone()]).await.expect("get_skus");
    assert_eq!(
        got.get(&bj).map(|m| (m.sku.warehouse_parent(), m.stocked)),
        Some((Some((k.clone(), stores.list[1].clone())), 3))
    );

    let order = |name: &str, draws: Vec<Draw>| {
        let l = ReservedLine { draws, ..line(&k, &[]) };
        let l = ReservedLine { quantity: l.draws.iter().map(|d| d.quantity).sum(), ..l };
        reservation(rid(prefix, name), None, vec![l])
    };
    let none = FreezeLimits::default();
    // BJ cannot give 4: the whole freeze is refused, SH untouched
    let short = order("short", vec![drawn(&sh, &[(0, 2)]), drawn(&bj, &[(0, 4)])]);
    assert_eq!(freeze(store, &short, &none).await, Err(FreezeRejection::ShardShort(vec![bj.clone()])));
    assert_eq!(shards(store, &sh, 2).await, vec![(2, 0, 0), (1, 0, 0)], "nothing written");
    assert_eq!(status(store, &short.id).await, None);

    let a = order("a", vec![drawn(&sh, &[(0, 2), (1, 1)]), drawn(&bj, &[(0, 1)])]);
    assert_eq!(freeze(store, &a, &none).await, Ok(()));
    assert_eq!(shards(store, &sh, 2).await, vec![(0, 2, 0), (0, 1, 0)]);
    assert_eq!(shards(store, &bj, 1).await, vec![(2, 1, 0)]);
    let stored = store.get_reservation(&a.id).await.expect("get_reservation").expect("stored");
    assert_eq!(stored.lines[0].draws, a.lines[0].draws, "the lock records its warehouses");
    assert_eq!(move_lock(store, &a, LockStatus::Released).await, Ok(()));
    assert_eq!(shards(store, &sh, 2).await, vec![(2, 0, 0), (1, 0, 0)], "back to SH");
    assert_eq!(shards(store, &bj, 1).await, vec![(3, 0, 0)], "back to BJ");

    let b = order("b", vec![drawn(&bj, &[(0, 3)])]);
    assert_eq!(freeze(store, &b, &none).await, Ok(()));
    assert_eq!(move_lock(store, &b, LockStatus::Sold).await, Ok(()));
    assert_eq!(shards(store, &bj, 1).await, vec![(0, 0, 3)]);
    assert_eq!(shards(store, &sh, 2).await, vec![(2, 0, 0), (1, 0, 0)], "SH never moved");
    assert_eq!(store.restock(&b).await.expect("restock"), Ok(()));
    assert_eq!(shards(store, &bj, 1).await, vec![(3, 0, 0)], "restocked to BJ");
    assert_eq!(shards(store, &k, 2).await, vec![(0, 0, 0), (0, 0, 0)], "the SKU itself holds nothing");
}
