//! Deduction at shipment (docs/inventory-models.md, "Deduction at shipment"): held from the
//! order, still held once paid, taken when the order ships, given back by a refund before it.

use super::*;
use crate::domain::model::{Deduct, InventoryModel, Management, Unit};
use crate::service::after_sale::{self, Caller, Change};

fn at_shipment(s: &str, shards: u16) -> SkuMeta {
    let model = InventoryModel {
        management: Management::Quantity,
        unit: Unit::Single,
        deduct: Deduct::AtShipment,
        ..Default::default()
    };
    SkuMeta { model, ..meta(s, shards, Some(3)) }
}

/// A paid order of `l` by alice, its payment's confirm applied (as stock-events would).
async fn paid(app: &App, w: &MemoryWorld, key: &str, l: &[(&str, u32)]) -> Order {
    let (o, _) = checkout(app, "alice", key, l).await.unwrap();
    assert!(matches!(payments::apply(app, &notice(&o, &format!("p-{key}"))).await, Ok(PaymentResult::Applied)));
    let rid = ReservationId::for_order(&o.id);
    let held = stock::confirm(app, &rid, OnReleased::Retake).await.unwrap();
    assert!(matches!(held, LockChange::Unchanged(ref r) if r.status == LockStatus::Frozen), "{held:?}");
    order(w, &o.id).await
}

fn ship() -> Change {
    Change::Ship { carrier: "DHL".into(), tracking_number: "T1".into() }
}

#[tokio::test]
async fn an_at_shipment_order_is_held_when_paid_and_taken_when_it_ships() {
    let (app, w) = world(&[(at_shipment("S", 2), &[3, 3])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("S", 2)]).await.unwrap();
    assert_eq!(totals(&w, "S"), counts(4, 2, 0), "held at order");
    payments::apply(&app, &notice(&o, "p1")).await.unwrap();
    let rid = ReservationId::for_order(&o.id);
    stock::confirm(&app, &rid, OnReleased::Retake).await.unwrap();
    assert_eq!(totals(&w, "S"), counts(4, 2, 0), "still held once paid");
    assert_eq!(w.stock.get_reservation(&rid).await.unwrap().unwrap().status, LockStatus::Frozen);
    assert_invariants(&w);

    let shipped = after_sale::apply(&app, Caller::Admin, &o.id, ship()).await.unwrap();
    assert_eq!(shipped.status, OrderStatus::Shipped);
    assert_eq!(totals(&w, "S"), counts(4, 0, 2), "taken at shipment");
    assert_eq!(w.stock.get_reservation(&rid).await.unwrap().unwrap().status, LockStatus::Sold);
    // a retried shipment takes nothing twice
    after_sale::apply(&app, Caller::Admin, &o.id, ship()).await.unwrap();
    assert_eq!(totals(&w, "S"), counts(4, 0, 2));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_refund_before_shipping_releases_the_hold_and_gives_the_allowance_back() {
    let (app, w) = world(&[(at_shipment("S", 1), &[5])]);
    let o = paid(&app, &w, "k1", &[("S", 3)]).await;
    assert_eq!(totals(&w, "S"), counts(2, 3, 0));
    let refunding =
        after_sale::apply(&app, Caller::Buyer(&user("alice")), &o.id, Change::Refund { reason: "no".into() })
            .await
            .unwrap();
    assert_eq!(refunding.status, OrderStatus::Refunding);
    // OrderRefunding's restock: the held lock is released, not restocked
    let rid = ReservationId::for_order(&o.id);
    assert!(
        matches!(stock::restock(&app, &rid).await, Ok(LockChange::Moved(ref r)) if r.status == LockStatus::Released)
    );
    assert!(
        matches!(stock::restock(&app, &rid).await, Ok(LockChange::Unchanged(_))),
        "a duplicate event moves nothing"
    );
    assert_eq!(totals(&w, "S"), counts(5, 0, 0), "units back on sale");
    // the shipment of a refunded order is refused and takes nothing
    assert!(after_sale::apply(&app, Caller::Admin, &o.id, ship()).await.is_err());
    assert_eq!(totals(&w, "S"), counts(5, 0, 0));
    assert_invariants(&w);
    // the allowance came back: alice may hold 3 again
    paid(&app, &w, "k2", &[("S", 3)]).await;
    assert_eq!(totals(&w, "S"), counts(2, 3, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_paid_unshipped_hold_survives_the_payment_timeout_and_reconcile() {
    let mut c = config();
    c.stale_lock_s = 1;
    let (app, w) = world_with(c, &[(at_shipment("S", 1), &[4]), (meta("A", 1, None), &[4])]);
    let o = paid(&app, &w, "k1", &[("S", 1), ("A", 1)]).await;
    let o = make_overdue(&w, &o, 3_600).await;
    assert_eq!(timeouts::payment_timeout(&app, &o.id, o.pay_expire_at).await.unwrap(), TimeoutOutcome::Ignored);
    let rid = ReservationId::for_order(&o.id);
    let mut lock = w.stock.get_reservation(&rid).await.unwrap().unwrap();
    lock.created_at_ms -= 3_600_000;
    let swept = checks::sweep_frozen(&app, &lock).await.unwrap();
    assert_eq!(swept.outcome, CheckOutcome::Fine);
    let rep = reconcile::run(&app).await.unwrap();
    assert!(rep.violations.is_empty(), "{:?}", rep.violations);
    assert_eq!(w.stock.get_reservation(&rid).await.unwrap().unwrap().status, LockStatus::Frozen, "still held");
    // the plain line of the order is held with it (one lock, one move)
    assert_eq!((totals(&w, "S"), totals(&w, "A")), (counts(3, 1, 0), counts(3, 1, 0)));
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Paid);
    assert_invariants(&w);
    after_sale::apply(&app, Caller::Admin, &o.id, ship()).await.unwrap();
    assert_eq!((totals(&w, "S"), totals(&w, "A")), (counts(3, 0, 1), counts(3, 0, 1)));
    assert_invariants(&w);
}

#[tokio::test]
async fn an_at_shipment_line_never_shares_an_order_with_a_pay_time_or_code_line() {
    let pay_time = InventoryModel {
        management: Management::Quantity,
        unit: Unit::Single,
        deduct: Deduct::AtPayment,
        ..Default::default()
    };
    let (app, w) = world(&[(at_shipment("S", 1), &[4]), (SkuMeta { model: pay_time, ..meta("P", 1, None) }, &[4])]);
    let refused = checkout(&app, "alice", "k1", &[("S", 1), ("P", 1)]).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(w.stock.reservations().is_empty(), "nothing written");
    assert_eq!(totals(&w, "S"), counts(4, 0, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn the_invariants_tell_a_paid_hold_from_a_shipment_that_took_nothing() {
    let (app, w) = world(&[(at_shipment("S", 1), &[3])]);
    let a = paid(&app, &w, "k1", &[("S", 1)]).await;
    let shipped = after_sale::apply(&app, Caller::Admin, &a.id, ship()).await.unwrap();
    let b = paid(&app, &w, "k2", &[("S", 1)]).await;
    assert_invariants(&w);
    // B carries a shipment written by the order's write alone, its units never taken: caught
    let planted = b.next(clock::now_ms(), |x| x.shipment = shipped.shipment.clone());
    assert!(w.orders.replace(&b, &planted).await.unwrap());
    let v = check_all(&w.snapshot(300));
    assert!(v.iter().any(|v| matches!(v, crate::domain::invariants::Violation::ShippedWithoutStock { .. })), "{v:?}");
}

/// Found by the simulator (seed 72): the refund's release can arrive before the payment's own
/// `OrderPaid`; the late confirm must not take the released hold again.
#[tokio::test]
async fn a_confirm_arriving_after_the_refund_released_the_hold_takes_nothing() {
    let (app, w) = world(&[(at_shipment("S", 1), &[4])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("S", 2)]).await.unwrap();
    payments::apply(&app, &notice(&o, "p1")).await.unwrap();
    let refund = Change::Refund { reason: "no".into() };
    after_sale::apply(&app, Caller::Buyer(&user("alice")), &o.id, refund).await.unwrap();
    let rid = ReservationId::for_order(&o.id);
    stock::restock(&app, &rid).await.unwrap();
    assert_eq!(totals(&w, "S"), counts(4, 0, 0));
    let late = stock::confirm(&app, &rid, OnReleased::Retake).await.unwrap();
    assert!(matches!(late, LockChange::Unchanged(ref r) if r.status == LockStatus::Released), "{late:?}");
    assert_eq!(totals(&w, "S"), counts(4, 0, 0), "nothing taken again");
    assert_invariants(&w);
}
