//! Warehouses (docs/inventory-models.md, "Warehouses"): stock per SKU × warehouse, a line
//! allocated to one warehouse or split over several, units given back where they came from.

use super::*;
use crate::domain::model::{Deduct, InventoryModel, Management, Unit};
use crate::domain::warehouse::{Allocation, Warehouse, Warehouses};

fn wh(s: &str) -> Warehouse {
    Warehouse::parse(s).unwrap()
}

fn stores(list: &[&str], allocation: Allocation) -> Warehouses {
    Warehouses { list: list.iter().map(|s| wh(s)).collect(), allocation }
}

fn spec() -> SkuSpec {
    SkuSpec {
        controls: Default::default(),
        name: "kettle".into(),
        price: 100,
        currency: eur(),
        shards: 2,
        per_user_limit: None,
        model: InventoryModel { management: Management::Quantity, unit: Unit::Warehouse, ..Default::default() },
        bundle: Vec::new(),
        supplier: None,
    }
}

fn cell(s: &str, w: &str) -> Sku {
    sku(s).warehouse_cell(&wh(w))
}

fn at(w: &MemoryWorld, s: &str, x: &str) -> ShardCounts {
    let c = cell(s, x);
    w.stock.shards(&c).iter().fold(ShardCounts::default(), |a, c| ShardCounts {
        available: a.available + c.available,
        locked: a.locked + c.locked,
        sold: a.sold + c.sold,
    })
}

/// A WAREHOUSE SKU `K` with the given policy and units per warehouse (`SH`, `BJ`, `GZ`).
async fn warehoused(allocation: Allocation, units: &[(&str, i64)]) -> (App, MemoryWorld) {
    let (app, w) = world(&[]);
    let s = stores(&["SH", "BJ", "GZ"], allocation);
    admin::put_sku_with(&app, &sku("K"), &spec(), Some(&s), None).await.unwrap();
    for (x, n) in units {
        admin::adjust_warehouse(&app, &sku("K"), &wh(x), &format!("in-{x}"), *n, "delivery", None).await.unwrap();
    }
    (app, w)
}

fn drawn(r: &Reservation) -> Vec<(String, u32)> {
    r.lines[0].draws.iter().map(|d| (d.warehouse.as_ref().unwrap().to_string(), d.quantity)).collect()
}

#[tokio::test]
async fn split_takes_a_line_from_as_few_warehouses_as_possible_and_gives_it_back_where_it_came_from() {
    let (app, w) = warehoused(Allocation::Split, &[("SH", 3), ("BJ", 4), ("GZ", 1)]).await;
    // BJ alone holds 4: one warehouse
    let Ok(Frozen::Created(a)) = freeze(&app, &freeze_request("o1", "u1", &[("K", 4)])).await else { panic!() };
    assert_eq!(drawn(&a), [("BJ".to_owned(), 4)]);
    assert!(a.lines[0].pieces.is_empty(), "a warehoused SKU has no shards of its own");
    // 4 more: SH 3 + GZ 1, the fullest first
    let Ok(Frozen::Created(b)) = freeze(&app, &freeze_request("o2", "u2", &[("K", 4)])).await else { panic!() };
    assert_eq!(drawn(&b), [("SH".to_owned(), 3), ("GZ".to_owned(), 1)]);
    assert_eq!(
        (at(&w, "K", "SH"), at(&w, "K", "BJ"), at(&w, "K", "GZ")),
        (counts(0, 3, 0), counts(0, 4, 0), counts(0, 1, 0))
    );
    assert!(matches!(
        freeze(&app, &freeze_request("o3", "u3", &[("K", 1)])).await,
        Err(FreezeError::Insufficient(s)) if s == sku("K")
    ));
    // released: each warehouse gets its own units back
    stock::release(&app, &b.id).await.unwrap();
    assert_eq!((at(&w, "K", "SH"), at(&w, "K", "GZ")), (counts(3, 0, 0), counts(1, 0, 0)));
    // sold, then restocked after a refund: back to BJ, nowhere else
    stock::confirm(&app, &a.id, OnReleased::Retake).await.unwrap();
    assert_eq!(at(&w, "K", "BJ"), counts(0, 0, 4));
    stock::restock(&app, &a.id).await.unwrap();
    assert_eq!(
        (at(&w, "K", "SH"), at(&w, "K", "BJ"), at(&w, "K", "GZ")),
        (counts(3, 0, 0), counts(4, 0, 0), counts(1, 0, 0))
    );
    let v = admin::view(&app, &sku("K")).await.unwrap().unwrap();
    assert_eq!((v.available, v.totals.available, v.warehouses.len()), (Some(8), 8, 3));
    assert_invariants(&w);
}

#[tokio::test]
async fn single_refuses_a_line_no_warehouse_holds_alone_though_the_sum_would() {
    let (app, w) = warehoused(Allocation::Single, &[("SH", 3), ("BJ", 3)]).await;
    assert!(matches!(
        freeze(&app, &freeze_request("o1", "u1", &[("K", 4)])).await,
        Err(FreezeError::Insufficient(s)) if s == sku("K")
    ));
    assert_eq!((at(&w, "K", "SH"), at(&w, "K", "BJ")), (counts(3, 0, 0), counts(3, 0, 0)), "nothing held");
    // the first declared warehouse that holds the line takes it whole
    let Ok(Frozen::Created(r)) = freeze(&app, &freeze_request("o2", "u2", &[("K", 2)])).await else { panic!() };
    assert_eq!(drawn(&r), [("SH".to_owned(), 2)]);
    let Ok(Frozen::Created(r)) = freeze(&app, &freeze_request("o3", "u3", &[("K", 3)])).await else { panic!() };
    assert_eq!(drawn(&r), [("BJ".to_owned(), 3)]);
    assert_invariants(&w);
}

#[tokio::test]
async fn a_paused_sku_pauses_every_warehouse_and_a_paused_warehouse_is_passed_over() {
    let (app, w) = warehoused(Allocation::Single, &[("SH", 3), ("BJ", 3)]).await;
    admin::set_paused(&app, &cell("K", "SH"), true).await.unwrap();
    let Ok(Frozen::Created(r)) = freeze(&app, &freeze_request("o1", "u1", &[("K", 2)])).await else { panic!() };
    assert_eq!(drawn(&r), [("BJ".to_owned(), 2)]);
    admin::set_paused(&app, &sku("K"), true).await.unwrap();
    let cells = w.stock.metas();
    assert!(cells.iter().filter(|m| m.sku.warehouse_parent().is_some()).all(|m| m.paused), "every warehouse's flag");
    assert!(matches!(
        freeze(&app, &freeze_request("o2", "u2", &[("K", 1)])).await,
        Err(FreezeError::SalePaused(s)) if s == sku("K")
    ));
    // a warehouse first stocked while the SKU is paused starts paused
    admin::adjust_warehouse(&app, &sku("K"), &wh("GZ"), "in-GZ", 5, "delivery", None).await.unwrap();
    assert!(admin::view(&app, &sku("K")).await.unwrap().unwrap().warehouses.iter().all(|x| x.paused));
    admin::set_paused(&app, &sku("K"), false).await.unwrap();
    let Ok(Frozen::Created(_)) = freeze(&app, &freeze_request("o3", "u3", &[("K", 1)])).await else { panic!() };
    assert_invariants(&w);
}

#[tokio::test]
async fn warehouse_adjustments_and_definitions_refuse_what_does_not_fit() {
    let (app, w) = warehoused(Allocation::Split, &[("SH", 3)]).await;
    let k = sku("K");
    // a warehouse it does not declare, no warehouse, a plain SKU given one: refused, nothing written
    assert!(matches!(
        admin::adjust_warehouse(&app, &k, &wh("XX"), "a", 1, "r", None).await,
        Err(AdminError::UnknownWarehouse(..))
    ));
    assert!(!w.stock.metas().iter().any(|m| m.sku == cell("K", "XX")));
    assert!(matches!(admin::adjust(&app, &k, "a", 1, "r", None, &[]).await, Err(AdminError::NotAdjustable(_))));
    admin::put_sku(&app, &sku("P"), &SkuSpec { model: InventoryModel::default(), ..spec() }, None).await.unwrap();
    assert!(matches!(
        admin::adjust_warehouse(&app, &sku("P"), &wh("SH"), "a", 1, "r", None).await,
        Err(AdminError::NotAdjustable(_))
    ));
    // idempotent per warehouse; a removal takes only what the warehouse has
    assert!(!admin::adjust_warehouse(&app, &k, &wh("SH"), "in-SH", 3, "delivery", None).await.unwrap());
    assert!(matches!(
        admin::adjust_warehouse(&app, &k, &wh("SH"), "out", -4, "damaged", None).await,
        Err(AdminError::Insufficient(4))
    ));
    // a warehouse may be added, never dropped; the policy may change
    let more = stores(&["SH", "BJ", "GZ", "CD"], Allocation::Single);
    admin::put_sku_with(&app, &k, &spec(), Some(&more), None).await.unwrap();
    let fewer = stores(&["BJ", "GZ", "CD"], Allocation::Single);
    assert!(matches!(admin::put_sku_with(&app, &k, &spec(), Some(&fewer), None).await, Err(AdminError::Model(_))));
    let at_payment = InventoryModel { deduct: Deduct::AtPayment, ..spec().model };
    let s = stores(&["SH"], Allocation::Single);
    assert!(matches!(
        admin::put_sku_with(&app, &sku("Q"), &SkuSpec { model: at_payment, ..spec() }, Some(&s), None).await,
        Err(AdminError::Model(_))
    ));
    assert!(!w.stock.metas().iter().any(|m| m.sku == sku("Q")));
    assert_invariants(&w);
}
