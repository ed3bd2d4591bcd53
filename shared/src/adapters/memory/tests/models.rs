//! Inventory models (docs/inventory-models.md).

use super::*;
use crate::domain::model::{BundleChild, Day, Deduct, InventoryModel, Management, Unit};

fn spec(model: InventoryModel, shards: u16, bundle: Vec<BundleChild>) -> SkuSpec {
    SkuSpec {
        controls: Default::default(),
        name: "x".into(),
        price: 100,
        currency: eur(),
        shards,
        per_user_limit: None,
        model,
        bundle,
        supplier: None,
    }
}

fn model(management: Management, unit: Unit, deduct: Deduct) -> InventoryModel {
    InventoryModel { management, unit, deduct, ..Default::default() }
}

fn day(offset: i64) -> Day {
    Day::of_epoch_s(clock::now_s() + offset * 86_400)
}

fn dated(s: &str, q: u32, days: &[Day]) -> LineRequest {
    LineRequest { dates: days.to_vec(), ..LineRequest::plain(sku(s), Quantity::new(u64::from(q)).unwrap()) }
}

fn request(order: &str, lines: Vec<LineRequest>) -> FreezeRequest {
    FreezeRequest {
        id: ReservationId::for_order(&OrderId::parse(order).unwrap()),
        kind: ReservationKind::Order,
        user: Some(user("alice")),
        request_hash: orders::request_hash(&lines),
        lines,
        expires_at: clock::now_s() + 900,
        admission: None,
    }
}

fn cell(s: &str, d: Day) -> Sku {
    sku(s).cell(d)
}

fn cell_totals(w: &MemoryWorld, c: &Sku) -> ShardCounts {
    w.stock.shards(c).iter().fold(ShardCounts::default(), |a, c| ShardCounts {
        available: a.available + c.available,
        locked: a.locked + c.locked,
        sold: a.sold + c.sold,
    })
}

async fn calendar_world(nights: &[(i64, i64)]) -> (App, MemoryWorld) {
    let (app, w) = world(&[]);
    let m = model(Management::Quantity, Unit::Calendar, Deduct::AtOrder);
    admin::put_sku(&app, &sku("H"), &spec(m, 2, vec![]), None).await.unwrap();
    for (offset, units) in nights {
        admin::adjust(&app, &sku("H"), &format!("n{offset}"), *units, "rooms", None, &[day(*offset)]).await.unwrap();
    }
    (app, w)
}

#[tokio::test]
async fn a_calendar_booking_takes_every_night_or_none_and_names_the_short_one() {
    let (app, w) = calendar_world(&[(1, 5), (2, 1), (3, 5)]).await;
    let nights = [day(1), day(2), day(3)];
    let Ok(Frozen::Created(r)) = freeze(&app, &request("o1", vec![dated("H", 1, &nights)])).await else { panic!() };
    assert_eq!(r.lines[0].draws.len(), 3);
    assert!(r.lines[0].pieces.is_empty());
    for d in nights {
        assert_eq!(cell_totals(&w, &cell("H", d)).locked, 1);
    }
    // the middle night is gone: a second booking is refused, naming it, and holds nothing
    let refused = freeze(&app, &request("o2", vec![dated("H", 1, &nights)])).await;
    assert!(matches!(&refused, Err(FreezeError::Insufficient(c)) if *c == cell("H", day(2))), "{refused:?}");
    assert_eq!(cell_totals(&w, &cell("H", day(1))), counts(4, 1, 0));
    assert_eq!(cell_totals(&w, &cell("H", day(3))), counts(4, 1, 0));
    // a date never stocked is short, a past date or none at all is a bad line
    assert!(matches!(
        freeze(&app, &request("o3", vec![dated("H", 1, &[day(9)])])).await,
        Err(FreezeError::Insufficient(c)) if c == cell("H", day(9))
    ));
    assert!(matches!(freeze(&app, &request("o4", vec![dated("H", 1, &[day(-2)])])).await, Err(FreezeError::Line(_))));
    assert!(matches!(freeze(&app, &request("o5", vec![dated("H", 1, &[])])).await, Err(FreezeError::Line(_))));
    stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
    assert_eq!(cell_totals(&w, &cell("H", day(2))), counts(0, 0, 1));
    // adjustments are idempotent per date; a calendar SKU refuses one without dates
    assert!(!admin::adjust(&app, &sku("H"), "n1", 5, "rooms", None, &[day(1)]).await.unwrap());
    assert!(matches!(admin::adjust(&app, &sku("H"), "z", 5, "r", None, &[]).await, Err(AdminError::NotAdjustable(_))));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_bundle_takes_its_children_in_one_transaction_and_shows_the_fewest_it_can_make() {
    let (app, w) = world(&[(meta("A", 2, None), &[3, 2]), (meta("B", 1, None), &[1])]);
    let m = model(Management::Quantity, Unit::Bundle, Deduct::AtOrder);
    let kids = vec![BundleChild { sku: sku("A"), quantity: 2 }, BundleChild { sku: sku("B"), quantity: 1 }];
    admin::put_sku(&app, &sku("X"), &spec(m, 1, kids), None).await.unwrap();
    assert_eq!(admin::view(&app, &sku("X")).await.unwrap().unwrap().available, Some(1));
    // a bundle and its own child in one order: one write per shard
    let both = request("o1", vec![LineRequest::plain(sku("A"), Quantity::new(1).unwrap()), dated("X", 1, &[])]);
    let Ok(Frozen::Created(r)) = freeze(&app, &both).await else { panic!() };
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
    assert_eq!(totals(&w, "B"), counts(0, 1, 0));
    // B is gone: another bundle is refused and A is untouched
    assert!(
        matches!(freeze(&app, &request("o2", vec![dated("X", 1, &[])])).await, Err(FreezeError::Insufficient(s)) if s == sku("B"))
    );
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
    stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
    assert_eq!((totals(&w, "A"), totals(&w, "B")), (counts(2, 0, 3), counts(0, 0, 1)));
    assert_eq!(admin::view(&app, &sku("X")).await.unwrap().unwrap().available, Some(0));
    // nested bundles, unknown children and model changes are refused
    let nested = vec![BundleChild { sku: sku("X"), quantity: 1 }];
    assert!(matches!(admin::put_sku(&app, &sku("Y"), &spec(m, 1, nested), None).await, Err(AdminError::Model(_))));
    let unknown = vec![BundleChild { sku: sku("NOPE"), quantity: 1 }];
    assert!(matches!(admin::put_sku(&app, &sku("Y"), &spec(m, 1, unknown), None).await, Err(AdminError::Model(_))));
    assert!(matches!(
        admin::put_sku(
            &app,
            &sku("A"),
            &spec(InventoryModel { unit: Unit::Calendar, ..Default::default() }, 1, vec![]),
            None
        )
        .await,
        Err(AdminError::Model(_))
    ));
    assert_invariants(&w);
}

#[tokio::test]
async fn an_unlimited_sku_takes_orders_without_counters() {
    let (app, w) = world(&[]);
    let m = model(Management::Unlimited, Unit::Single, Deduct::AtOrder);
    admin::put_sku(&app, &sku("U"), &spec(m, 1, vec![]), None).await.unwrap();
    for i in 0..50 {
        let Ok(Frozen::Created(r)) = freeze(&app, &request(&format!("o{i}"), vec![dated("U", 3, &[])])).await else {
            panic!()
        };
        assert!(r.lines[0].cells().is_empty());
        stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
    }
    assert!(w.stock.shards(&sku("U")).is_empty());
    assert_eq!(admin::view(&app, &sku("U")).await.unwrap().unwrap().available, None);
    assert!(matches!(admin::adjust(&app, &sku("U"), "a", 5, "r", None, &[]).await, Err(AdminError::NotAdjustable(_))));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_pay_time_sku_holds_nothing_until_paid_and_the_late_payer_is_oversold() {
    let (app, w) = world(&[(
        SkuMeta { model: model(Management::Quantity, Unit::Single, Deduct::AtPayment), ..meta("P", 2, None) },
        &[1, 0],
    )]);
    let a = request("o1", vec![dated("P", 1, &[])]);
    let b = request("o2", vec![dated("P", 1, &[])]);
    assert!(matches!(freeze(&app, &a).await, Ok(Frozen::Created(_))));
    assert!(matches!(freeze(&app, &b).await, Ok(Frozen::Created(_))));
    assert_eq!(totals(&w, "P"), counts(1, 0, 0), "nothing held at order");
    assert!(matches!(stock::confirm(&app, &a.id, OnReleased::Retake).await, Ok(LockChange::Moved(_))));
    assert_eq!(totals(&w, "P"), counts(0, 0, 1));
    assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
    assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
    assert_eq!(totals(&w, "P"), counts(0, 0, 1), "never negative");
    let stored = w.stock.get_reservation(&b.id).await.unwrap().unwrap();
    assert!(stored.oversold && stored.status == LockStatus::Released);
    // a release of an unpaid pay-time lock gives nothing back (it held nothing)
    let c = request("o3", vec![dated("P", 1, &[])]);
    freeze(&app, &c).await.unwrap();
    stock::release(&app, &c.id).await.unwrap();
    assert_eq!(totals(&w, "P"), counts(0, 0, 1));
    assert_invariants(&w);
}

#[tokio::test]
async fn an_order_mixing_a_calendar_line_a_bundle_and_a_plain_sku_is_all_or_nothing() {
    let (app, w) = calendar_world(&[(1, 2)]).await;
    w.stock.seed(meta("A", 1, None), &[4]);
    w.stock.seed(meta("B", 1, None), &[0]);
    let m = model(Management::Quantity, Unit::Bundle, Deduct::AtOrder);
    admin::put_sku(&app, &sku("X"), &spec(m, 1, vec![BundleChild { sku: sku("B"), quantity: 1 }]), None).await.unwrap();
    let mixed = request("o1", vec![dated("A", 1, &[]), dated("H", 1, &[day(1)]), dated("X", 1, &[])]);
    assert!(matches!(freeze(&app, &mixed).await, Err(FreezeError::Insufficient(s)) if s == sku("B")));
    assert_eq!(totals(&w, "A"), counts(4, 0, 0));
    assert_eq!(cell_totals(&w, &cell("H", day(1))), counts(2, 0, 0));
    assert!(w.stock.reservations().is_empty());
    assert_invariants(&w);
}
