//! Deduction at shipment (docs/inventory-models.md, "Deduction at shipment") end to end over HTTP:
//! held from the order, still held once paid, taken when the admin ships, given back by a
//! cancel or a refund before shipping; the SKU's counters read through `GET /admin/skus/{sku}`
//! at each step, invariants clean at the end.

use crate::common::{advance_clock, capture_logs, eventually, problem, spawn, spawn_with, Logs, Stack};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn at_shipment() -> Value {
    json!({"deduct": "AT_SHIPMENT"})
}

/// `(available, locked, sold)` of a SKU summed over its shards, from the admin view.
async fn counters(s: &Stack, sku: &str) -> (i64, i64, i64) {
    let a = s.get(&format!("/admin/skus/{sku}"), Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let n = |c: &Value, k: &str| c[k].as_i64().unwrap_or_else(|| panic!("{k} in {c}"));
    a.body["shard_counts"]
        .as_array()
        .unwrap_or_else(|| panic!("shard_counts in {}", a.body))
        .iter()
        .fold((0, 0, 0), |(x, y, z), c| (x + n(c, "available"), y + n(c, "locked"), z + n(c, "sold")))
}

/// Waits until the SKU's admin view shows `want`.
async fn counters_reach(s: &Stack, sku: &str, want: (i64, i64, i64)) {
    eventually(&format!("{sku} to show {want:?}"), WAIT, || async { (counters(s, sku).await == want).then_some(()) })
        .await
}

/// Pays the order and waits until stock-events has applied its `OrderPaid` (the confirm of a
/// lock held until shipment writes nothing, so its log line is the signal).
async fn pay_and_hold(s: &Stack, logs: &Logs, user: &str, id: &str, amount: u64) {
    let pay = s.pay(id, &format!("pay-{id}"), amount, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.order_reaches(user, id, "PAID").await;
    eventually(&format!("the confirm of {id} to leave it held"), WAIT, || async {
        let text = logs.text();
        text.lines().any(|l| l.contains("stay held until shipment") && l.contains(id)).then_some(())
    })
    .await;
}

async fn ship(s: &Stack, id: &str) -> crate::common::Answer {
    s.post(
        &format!("/admin/orders/{id}/ship"),
        &s.admin,
        json!({"carrier": "DHL", "tracking_number": format!("T-{id}")}),
    )
    .await
}

#[tokio::test]
async fn an_at_shipment_order_is_held_until_shipped_and_a_cancel_or_refund_before_shipping_gives_its_units_back() {
    let logs = capture_logs();
    let s = spawn().await;
    s.model_sku("CHAIR", 300, 2, at_shipment(), Some(5)).await;
    s.stock("CHAIR", "delivery-1", 6).await;
    assert_eq!(counters(&s, "CHAIR").await, (6, 0, 0));

    // ordered: held
    let shipped = s.order_id("ann", "k1", json!([{"sku": "CHAIR", "quantity": 2}])).await;
    assert_eq!(counters(&s, "CHAIR").await, (4, 2, 0), "held at order");
    // paid: still held, the lock still FROZEN
    pay_and_hold(&s, &logs, "ann", &shipped, 600).await;
    assert_eq!(counters(&s, "CHAIR").await, (4, 2, 0), "paid, not deducted");
    assert_eq!(s.lock_status(&shipped).await.as_deref(), Some("FROZEN"));
    // shipped: taken
    let a = ship(&s, &shipped).await;
    assert_eq!((a.status, a.body["status"].as_str()), (200, Some("SHIPPED")), "{}", a.body);
    assert_eq!(counters(&s, "CHAIR").await, (4, 0, 2), "taken at shipment");
    assert_eq!(s.lock_status(&shipped).await.as_deref(), Some("SOLD"));
    // a retried shipment takes nothing twice
    assert_eq!(ship(&s, &shipped).await.status, 200);
    assert_eq!(counters(&s, "CHAIR").await, (4, 0, 2));

    // refunded before shipping: the hold is released
    let refunded = s.order_id("bob", "k1", json!([{"sku": "CHAIR", "quantity": 3}])).await;
    assert_eq!(counters(&s, "CHAIR").await, (1, 3, 2));
    pay_and_hold(&s, &logs, "bob", &refunded, 900).await;
    assert_eq!(counters(&s, "CHAIR").await, (1, 3, 2));
    let r = s.post(&format!("/orders/{refunded}/refund"), &s.user("bob"), json!({"reason": "changed my mind"})).await;
    assert_eq!((r.status, r.body["status"].as_str()), (202, Some("REFUNDING")), "{}", r.body);
    counters_reach(&s, "CHAIR", (4, 0, 2)).await;
    s.lock_reaches(&refunded, "RELEASED").await;
    s.order_reaches("bob", &refunded, "REFUNDED").await;
    // nothing left to ship
    assert_eq!(ship(&s, &refunded).await.status, 409);
    assert_eq!(counters(&s, "CHAIR").await, (4, 0, 2));

    // cancelled before payment: released as any order
    let cancelled = s.order_id("cat", "k1", json!([{"sku": "CHAIR", "quantity": 1}])).await;
    assert_eq!(counters(&s, "CHAIR").await, (3, 1, 2));
    assert_eq!(s.cancel("cat", &cancelled).await.status, 200);
    counters_reach(&s, "CHAIR", (4, 0, 2)).await;

    // after shipping, a return received with restock puts the units back (as at order)
    let ret = s.post(&format!("/orders/{shipped}/return"), &s.user("ann"), json!({"reason": "wobbly"})).await;
    assert_eq!(ret.status, 202, "{}", ret.body);
    let back = s.post(&format!("/admin/orders/{shipped}/return-received"), &s.admin, json!({"restock": true})).await;
    assert_eq!(back.status, 200, "{}", back.body);
    counters_reach(&s, "CHAIR", (6, 0, 0)).await;
    s.lock_reaches(&shipped, "RESTOCKED").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_order_of_an_at_shipment_line_a_plain_line_and_an_unlimited_line_is_held_and_shipped_as_one() {
    let logs = capture_logs();
    let s = spawn().await;
    s.model_sku("DESK", 1000, 1, at_shipment(), None).await;
    s.stock("DESK", "d", 3).await;
    s.sku("LAMP", 200, 4, 2, None).await;
    s.model_sku("CARE", 50, 1, json!({"management": "UNLIMITED"}), None).await;
    let items = json!([{"sku": "DESK", "quantity": 1}, {"sku": "LAMP", "quantity": 2}, {"sku": "CARE", "quantity": 1}]);
    let id = s.order_id("dan", "k1", items).await;
    assert_eq!((counters(&s, "DESK").await, counters(&s, "LAMP").await), ((2, 1, 0), (2, 2, 0)));
    pay_and_hold(&s, &logs, "dan", &id, 1000 + 400 + 50).await;
    // one lock, one move: the plain line is held with the at-shipment line
    assert_eq!((counters(&s, "DESK").await, counters(&s, "LAMP").await), ((2, 1, 0), (2, 2, 0)));
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("FROZEN"));
    let a = ship(&s, &id).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!((counters(&s, "DESK").await, counters(&s, "LAMP").await), ((2, 0, 1), (2, 0, 2)));
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("SOLD"));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_paid_unshipped_at_shipment_order_keeps_its_hold_through_the_payment_timeout_and_reconcile() {
    let logs = capture_logs();
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "6"), ("HOLDFAST_STALE_LOCK_SECONDS", "1")]).await;
    s.model_sku("SOFA", 5000, 1, at_shipment(), None).await;
    s.stock("SOFA", "s", 2).await;
    let id = s.order_id("eve", "k1", json!([{"sku": "SOFA", "quantity": 1}])).await;
    pay_and_hold(&s, &logs, "eve", &id, 5000).await;
    // the payment timeout fires (after its real-time SQS delay) and finds the order PAID
    tokio::time::sleep(Duration::from_secs(7)).await;
    eventually("the payment timeout to be consumed", WAIT, || async {
        (s.local.queue_depth("PaymentTimeoutQueue").await.unwrap() == 0).then_some(())
    })
    .await;
    assert_eq!(s.get_order("eve", &id).await.body["status"], "PAID");
    // a sweep long after: the stale FROZEN lock of a PAID order is held, not stranded
    advance_clock(Duration::from_secs(60));
    let report = s.reconcile().await;
    assert_eq!(report["violations"], json!([]), "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("FROZEN"));
    assert_eq!(counters(&s, "SOFA").await, (1, 1, 0), "still held");
    s.assert_invariants().await;
    // and it still ships
    assert_eq!(ship(&s, &id).await.status, 200);
    assert_eq!(counters(&s, "SOFA").await, (1, 0, 1));
    s.assert_invariants().await;
}

#[tokio::test]
async fn at_shipment_on_a_sku_that_cannot_be_held_or_beside_a_pay_time_line_is_refused_and_writes_nothing() {
    let s = spawn().await;
    let before = s.fingerprint().await;
    for (sku, model) in [
        ("NIGHT", json!({"unit": "CALENDAR", "deduct": "AT_SHIPMENT"})),
        ("TOPUP", json!({"management": "UNLIMITED", "deduct": "AT_SHIPMENT"})),
        ("VOUCHER", json!({"management": "CODE_POOL", "deduct": "AT_SHIPMENT"})),
    ] {
        let spec = json!({"name": sku, "price": 100, "currency": "EUR", "model": model});
        let a = s.put_sku(sku, spec).await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["field"], "model", "{}", a.body);
        assert!(a.body["detail"].as_str().is_some_and(|d| d.contains("AT_SHIPMENT")), "{}", a.body);
    }
    s.sku("PART", 10, 5, 1, None).await;
    let kit = json!({"name": "kit", "price": 100, "currency": "EUR",
                     "model": {"unit": "BUNDLE", "deduct": "AT_SHIPMENT"}, "bundle": [{"sku": "PART", "quantity": 1}]});
    problem(&s.put_sku("KIT", kit).await, 422, "validation_failed");
    assert_eq!(s.get("/admin/skus/NIGHT", Some(&s.admin)).await.status, 404, "nothing written");
    assert_ne!(before, s.fingerprint().await, "PART was created");

    // an at-shipment line and a pay-time line cannot share an order
    s.model_sku("BED", 900, 1, at_shipment(), None).await;
    s.stock("BED", "b", 2).await;
    s.model_sku("WATCH", 9000, 1, json!({"deduct": "AT_PAYMENT"}), None).await;
    s.stock("WATCH", "w", 2).await;
    let locks = s.fingerprint().await;
    let a = s.order("fay", "k1", json!([{"sku": "BED", "quantity": 1}, {"sku": "WATCH", "quantity": 1}])).await;
    problem(&a, 422, "validation_failed");
    assert_eq!(a.body["field"], "items", "{}", a.body);
    assert_eq!(s.fingerprint().await, locks, "a refused mix writes nothing");
    assert_eq!(counters(&s, "BED").await, (2, 0, 0));
    s.assert_invariants().await;
}
