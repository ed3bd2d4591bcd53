//! Kinds of stock in combination (docs/inventory-models.md, "Kinds and their lifecycle"), end
//! to end over HTTP on the local stack: each finding of the second protocol and security
//! reviews that lived between two kinds, or between a kind and a lever (refund, pause, ship,
//! `/reservations`), pinned by a scenario; invariants clean at the end of each.

use crate::common::{eventually, problem, spawn, Stack};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// A SKU of `model` (no stock yet) on one shard, with an optional per-user limit.
async fn kind_sku(s: &Stack, sku: &str, price: u64, model: Value, limit: Option<u32>) {
    s.model_sku(sku, price, 1, model, limit).await
}

async fn stock(s: &Stack, sku: &str, units: i64) {
    s.stock(sku, &format!("init-{sku}"), units).await
}

async fn code_sku(s: &Stack, sku: &str, codes: &[&str], limit: Option<u32>) {
    kind_sku(s, sku, 1000, json!({"management": "CODE_POOL"}), limit).await;
    let a = s.post(&format!("/admin/skus/{sku}/codes"), &s.admin, json!({"batch_id": "b1", "codes": codes})).await;
    assert_eq!(a.status, 201, "{}", a.body);
}

async fn codes_once_sold(s: &Stack, user: &str, id: &str) -> Vec<String> {
    let a = eventually("the codes of the paid order", WAIT, || async {
        let a = s.codes_of(user, id).await;
        (a.status == 200).then_some(a)
    })
    .await;
    a.body["codes"].as_array().unwrap().iter().map(|c| c["code"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_code_line_and_a_pay_time_line_never_share_an_order_so_a_shown_code_is_never_sold_again() {
    let s = spawn().await;
    code_sku(&s, "GIFT", &["GIFT-AAAA-0001"], None).await;
    kind_sku(&s, "WATCH", 50_000, json!({"deduct": "AT_PAYMENT"}), None).await;
    stock(&s, "WATCH", 1).await;
    // the mix the review found (a code revealed while the pay-time line is still unconfirmed,
    // then released with the whole lock when that line comes up short) cannot be made
    let mixed = s.order("ann", "k1", json!([{"sku": "GIFT", "quantity": 1}, {"sku": "WATCH", "quantity": 1}])).await;
    problem(&mixed, 422, "validation_failed");
    assert_eq!(mixed.body["field"], "items");
    assert!(s.local.snapshot().await.unwrap().reservations.is_empty(), "a refused mix froze nothing");
    // alone, the code is bought, shown once the lock is SOLD, and is never in the pool again
    let id = s.order_id("ann", "k2", json!([{"sku": "GIFT", "quantity": 1}])).await;
    assert_eq!(s.pay(&id, "p-ann", 1000, "SUCCEEDED").await.status, 200);
    assert_eq!(codes_once_sold(&s, "ann", &id).await, vec!["GIFT-AAAA-0001".to_owned()]);
    let next = s.order("bob", "k1", json!([{"sku": "GIFT", "quantity": 1}])).await;
    problem(&next, 409, "insufficient_stock");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_buyer_who_has_seen_the_codes_cannot_refund_them_alone_and_keeps_the_allowance_used() {
    let s = spawn().await;
    code_sku(&s, "CARD", &["CARD-1111-AAAA", "CARD-2222-BBBB", "CARD-3333-CCCC"], Some(1)).await;
    let id = s.order_id("eve", "k1", json!([{"sku": "CARD", "quantity": 1}])).await;
    assert_eq!(s.pay(&id, "p-eve", 1000, "SUCCEEDED").await.status, 200);
    let seen = codes_once_sold(&s, "eve", &id).await;
    assert_eq!(seen.len(), 1);
    let refund = s.post(&format!("/orders/{id}/refund"), &s.user("eve"), json!({"reason": "changed my mind"})).await;
    // held for an admin (docs/payments.md, "Refund review"): no money moves by itself
    assert_eq!((refund.status, refund.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", refund.body);
    let v = s.admin_view(&id).await;
    assert_eq!(v["order"]["status"], "REFUND_REQUESTED", "{v}");
    assert!(v["refunds"].as_array().is_none_or(|r| r.is_empty()), "no refund asked: {v}");
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("SOLD"), "the codes stay sold");
    // the allowance stays used: a second code is refused by the limit, not sold
    let again = s.order("eve", "k2", json!([{"sku": "CARD", "quantity": 1}])).await;
    problem(&again, 409, "purchase_limit_exceeded");
    // a buyer who refunds before looking gets the money back, and the codes are never shown;
    // the allowance stays used too (the codes stay sold)
    let id2 = s.order_id("fay", "k1", json!([{"sku": "CARD", "quantity": 1}])).await;
    assert_eq!(s.pay(&id2, "p-fay", 1000, "SUCCEEDED").await.status, 200);
    eventually("fay's lock to be sold", WAIT, || async {
        (s.lock_status(&id2).await.as_deref() == Some("SOLD")).then_some(())
    })
    .await;
    let refund = s.post(&format!("/orders/{id2}/refund"), &s.user("fay"), json!({"reason": "not needed"})).await;
    assert!(refund.status / 100 == 2, "{}", refund.body);
    let shown = s.get(&format!("/orders/{id2}/codes"), Some(&s.user("fay"))).await;
    problem(&shown, 409, "invalid_transition");
    eventually("fay's lock to be restocked", WAIT, || async {
        (s.lock_status(&id2).await.as_deref() == Some("RESTOCKED")).then_some(())
    })
    .await;
    problem(&s.order("fay", "k2", json!([{"sku": "CARD", "quantity": 1}])).await, 409, "purchase_limit_exceeded");
    s.assert_invariants().await;
}

#[tokio::test]
async fn stop_sale_stops_a_pay_time_sku_at_checkout_and_refunds_a_payment_made_after_it() {
    let s = spawn().await;
    kind_sku(&s, "RING", 90_000, json!({"deduct": "AT_PAYMENT"}), None).await;
    stock(&s, "RING", 5).await;
    let before = s.order_id("gus", "k1", json!([{"sku": "RING", "quantity": 1}])).await;
    let stopped = s.post("/admin/skus/RING/pause", &s.admin, json!({})).await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    // at checkout: refused at once (a fresh read, no cache window)
    problem(&s.order("hal", "k1", json!([{"sku": "RING", "quantity": 1}])).await, 409, "sale_paused");
    // at payment: the order placed before the stop is refunded, nothing is taken
    assert_eq!(s.pay(&before, "p-gus", 90_000, "SUCCEEDED").await.status, 200);
    eventually("the paid order of a stopped SKU to be refunded", WAIT, || async {
        let v = s.admin_view(&before).await;
        v["refunds"].as_array().is_some_and(|r| r.iter().any(|r| r["reason"] == "oversold")).then_some(())
    })
    .await;
    assert_eq!(s.exact("RING").await, (5, 0, 0), "a stopped pay-time SKU sold nothing");
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_order_whose_stock_was_lost_at_payment_cannot_be_shipped() {
    let s = spawn().await;
    kind_sku(&s, "LAMP", 7_000, json!({"deduct": "AT_PAYMENT"}), None).await;
    stock(&s, "LAMP", 1).await;
    let first = s.order_id("ida", "k1", json!([{"sku": "LAMP", "quantity": 1}])).await;
    let second = s.order_id("jon", "k1", json!([{"sku": "LAMP", "quantity": 1}])).await;
    assert_eq!(s.pay(&first, "p-ida", 7_000, "SUCCEEDED").await.status, 200);
    eventually("the first payment to take the lamp", WAIT, || async {
        (s.lock_status(&first).await.as_deref() == Some("SOLD")).then_some(())
    })
    .await;
    assert_eq!(s.pay(&second, "p-jon", 7_000, "SUCCEEDED").await.status, 200);
    eventually("the second payment to come up short", WAIT, || async {
        let v = s.admin_view(&second).await;
        v["refunds"].as_array().is_some_and(|r| r.iter().any(|r| r["reason"] == "oversold")).then_some(())
    })
    .await;
    let body = json!({"carrier": "DHL", "tracking_number": "T-1"});
    problem(&s.post(&format!("/admin/orders/{second}/ship"), &s.admin, body.clone()).await, 409, "oversold");
    assert_eq!(s.admin_view(&second).await["order"]["status"], "PAID");
    let shipped = s.post(&format!("/admin/orders/{first}/ship"), &s.admin, body).await;
    assert_eq!(shipped.status, 200, "the order that got the lamp ships: {}", shipped.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn reservations_refuse_the_kinds_they_cannot_hold_and_write_nothing() {
    let s = spawn().await;
    kind_sku(&s, "TV", 40_000, json!({"deduct": "AT_PAYMENT"}), None).await;
    stock(&s, "TV", 3).await;
    code_sku(&s, "VOUCHER", &["V-0001-AAAA"], None).await;
    let supplier = json!({"name": "room", "price": 9000, "currency": "EUR",
        "model": {"management": "SUPPLIER"}, "supplier": {"adapter": "simulated"}});
    assert_eq!(s.put_sku("ROOM", supplier).await.status, 201);
    s.sku("PLAIN", 100, 3, 1, None).await;
    for sku in ["TV", "VOUCHER", "ROOM"] {
        let a = s
            .post(
                "/reservations",
                &s.internal,
                json!({"order_id": format!("x-{sku}"), "items": [{"sku": sku, "quantity": 1}]}),
            )
            .await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["sku"], sku, "{}", a.body);
    }
    assert!(s.local.snapshot().await.unwrap().reservations.is_empty(), "nothing was held");
    let ok = s
        .post("/reservations", &s.internal, json!({"order_id": "x-plain", "items": [{"sku": "PLAIN", "quantity": 1}]}))
        .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn shards_added_during_a_stop_sale_are_stopped_too() {
    let s = spawn().await;
    s.sku("HOT", 100, 16, 1, None).await;
    assert_eq!(s.post("/admin/skus/HOT/pause", &s.admin, json!({})).await.status, 200);
    let spec = json!({"name": "HOT name", "price": 100, "currency": "EUR", "shards": 8});
    let a = s.put_sku("HOT", spec).await;
    assert!(a.status == 200 || a.status == 201, "re-shard: {}", a.body);
    let mut sold = 0;
    for i in 0..16 {
        let a = s.order(&format!("b{i}"), "k", json!([{"sku": "HOT", "quantity": 1}])).await;
        if a.status == 201 {
            sold += 1;
        } else {
            problem(&a, 409, "sale_paused");
        }
    }
    assert_eq!(sold, 0, "a stopped SKU sold on its new shards");
    assert_eq!(s.exact("HOT").await, (16, 0, 0));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_bundle_may_not_hold_an_unlimited_child_it_could_never_sell() {
    let s = spawn().await;
    kind_sku(&s, "ESIM", 500, json!({"management": "UNLIMITED"}), None).await;
    s.sku("PHONE", 30_000, 5, 1, None).await;
    let kit = json!({"name": "kit", "price": 30_300, "currency": "EUR", "model": {"unit": "BUNDLE"},
        "bundle": [{"sku": "PHONE", "quantity": 1}, {"sku": "ESIM", "quantity": 1}]});
    let a = s.put_sku("KIT", kit).await;
    problem(&a, 422, "validation_failed");
    // the add-on is ordered beside the phone instead
    let id = s.order_id("kim", "k", json!([{"sku": "PHONE", "quantity": 1}, {"sku": "ESIM", "quantity": 1}])).await;
    assert_eq!(s.pay(&id, "p-kim", 30_500, "SUCCEEDED").await.status, 200);
    s.assert_invariants().await;
}
