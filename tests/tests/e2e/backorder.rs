//! Backorders (docs/inventory-models.md, "Backorders (oversell allowed)") end to end over HTTP: a
//! checkout short of stock accepted as backordered and paid, restocks filling the oldest orders
//! first, a backordered order cancelled with nothing stranded; a campaign of such a SKU and bad
//! input refused with nothing written. The counters and the backlog are read through
//! `GET /admin/skus/{sku}` at each step; the invariants, with the backlog identity, at the end.

use crate::common::{eventually, problem, spawn, Stack, SIGNAL_WAIT};
use serde_json::{json, Value};

fn backorder() -> Value {
    json!({"oversell": "BACKORDER"})
}

/// `(available, locked, sold)` and `(ordered, filled, cancelled, waiting)` from the admin view.
async fn view(s: &Stack, sku: &str) -> ((i64, i64, i64), (i64, i64, i64, i64), Value) {
    let a = s.get(&format!("/admin/skus/{sku}"), Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let n = |c: &Value, k: &str| c[k].as_i64().unwrap_or_else(|| panic!("{k} in {c}"));
    let counts = a.body["shard_counts"]
        .as_array()
        .unwrap_or_else(|| panic!("shard_counts in {}", a.body))
        .iter()
        .fold((0, 0, 0), |(x, y, z), c| (x + n(c, "available"), y + n(c, "locked"), z + n(c, "sold")));
    let b = &a.body["backlog"];
    let backlog = (n(b, "ordered"), n(b, "filled"), n(b, "cancelled"), n(b, "waiting"));
    (counts, backlog, a.body["backlog"]["orders"].clone())
}

/// The backlog identity over the locks the stack stores and the backlog its admin view shows.
async fn backlog_identity(s: &Stack, sku: &str) {
    let a = s.get(&format!("/admin/skus/{sku}"), Some(&s.admin)).await;
    let b = &a.body["backlog"];
    let mut open: Vec<holdfast::domain::ReservationId> = b["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(|i| holdfast::domain::ReservationId::from_stored(i.as_str().expect("id")).expect("id"))
        .collect();
    open.sort();
    let log = holdfast::domain::backorder::Backlog {
        ordered: b["ordered"].as_i64().expect("ordered"),
        filled: b["filled"].as_i64().expect("filled"),
        cancelled: b["cancelled"].as_i64().expect("cancelled"),
        open,
    };
    let snap = s.local.snapshot().await.expect("snapshot");
    let sku = holdfast::domain::Sku::parse(sku).expect("sku");
    let v = holdfast::domain::invariants::check_backlogs(&[(sku, log)], &snap.reservations);
    assert!(v.is_empty(), "{v:#?}");
}

async fn ship(s: &Stack, id: &str) -> crate::common::Answer {
    s.post(&format!("/admin/orders/{id}/ship"), &s.admin, json!({"carrier": "DHL", "tracking_number": "T-1"})).await
}

async fn line_state(s: &Stack, id: &str) -> Value {
    s.admin_view(id).await["locks"][0]["lines"][0]["backorder"].clone()
}

#[tokio::test]
async fn a_short_checkout_is_backordered_paid_and_filled_oldest_first_and_a_cancelled_one_strands_nothing() {
    let s = spawn().await;
    s.model_sku("BOOK", 200, 2, backorder(), None).await;
    s.stock("BOOK", "first", 2).await;
    assert_eq!(view(&s, "BOOK").await.0, (2, 0, 0));

    // ann asks for 5 of 2: accepted, 2 frozen, 3 backordered
    let ann = s.order_id("ann", "k1", json!([{"sku": "BOOK", "quantity": 5}])).await;
    let (c, b, _) = view(&s, "BOOK").await;
    assert_eq!((c, b), ((0, 2, 0), (3, 0, 0, 3)));
    let st = line_state(&s, &ann).await;
    assert_eq!((st["state"].as_str(), st["waiting"].as_i64()), (Some("BACKORDERED"), Some(3)), "{st}");
    // bob's order is wholly backordered
    let bob = s.order_id("bob", "k1", json!([{"sku": "BOOK", "quantity": 2}])).await;
    let (c, b, orders) = view(&s, "BOOK").await;
    assert_eq!((c, b), ((0, 2, 0), (5, 0, 0, 5)));
    assert_eq!(orders.as_array().map(Vec::len), Some(2), "{orders}");
    // ann pays all 5
    let pay = s.pay(&ann, "pay-ann", 1000, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.order_reaches("ann", &ann, "PAID").await;
    s.lock_reaches(&ann, "SOLD").await;
    assert_eq!(view(&s, "BOOK").await.0, (0, 0, 2));
    backlog_identity(&s, "BOOK").await;
    // paid, but 3 of her units wait: nothing ships yet (409, the order untouched)
    let early = ship(&s, &ann).await;
    problem(&early, 409, "invalid_transition");
    assert!(early.body["detail"].as_str().is_some_and(|d| d.contains("3 unit(s)")), "{}", early.body);
    assert_eq!(s.get_order("ann", &ann).await.body["status"], "PAID");

    // 4 arrive: ann's 3 first (sold: she paid), then 1 of bob's 2 (frozen: unpaid)
    s.stock("BOOK", "second", 4).await;
    let (c, b, _) = view(&s, "BOOK").await;
    assert_eq!((c, b), ((0, 1, 5), (5, 4, 0, 1)));
    assert_eq!(line_state(&s, &ann).await["state"], "FILLED");
    let shipped = ship(&s, &ann).await;
    assert_eq!((shipped.status, shipped.body["status"].as_str()), (200, Some("SHIPPED")), "{}", shipped.body);
    assert_eq!(line_state(&s, &bob).await["waiting"], 1);
    backlog_identity(&s, "BOOK").await;

    // bob cancels: his filled unit goes back, his open one is cancelled; a restock fills nothing
    let a = s.cancel("bob", &bob).await;
    assert_eq!(a.status, 200, "{}", a.body);
    s.lock_reaches(&bob, "RELEASED").await;
    let (c, b, orders) = view(&s, "BOOK").await;
    assert_eq!((c, b), ((1, 0, 5), (5, 4, 1, 0)));
    assert_eq!(orders, json!([]));
    s.stock("BOOK", "third", 3).await;
    assert_eq!(view(&s, "BOOK").await.0, (4, 0, 5), "a cancelled order is never filled");
    backlog_identity(&s, "BOOK").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_backorder_sku_in_a_campaign_and_bad_oversell_input_are_refused_and_write_nothing() {
    let s = spawn().await;
    let before = s.fingerprint().await;
    for (sku, model) in [
        ("NIGHTS", json!({"unit": "CALENDAR", "oversell": "BACKORDER"})),
        ("VOUCHER", json!({"management": "CODE_POOL", "oversell": "BACKORDER"})),
        ("LATER", json!({"deduct": "AT_PAYMENT", "oversell": "BACKORDER"})),
    ] {
        let a = s.put_sku(sku, json!({"name": sku, "price": 100, "currency": "EUR", "model": model})).await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["field"], "model", "{}", a.body);
        assert!(a.body["detail"].as_str().is_some_and(|d| d.contains("oversell")), "{}", a.body);
    }
    let typo =
        s.put_sku("TYPO", json!({"name": "t", "price": 1, "currency": "EUR", "model": {"oversell": "MAYBE"}})).await;
    assert!(matches!(typo.status, 400 | 422), "{} {}", typo.status, typo.body);
    assert_eq!(s.fingerprint().await, before, "nothing written");

    s.model_sku("BOOK", 200, 1, backorder(), None).await;
    let body = json!({"name": "sale", "starts_at": holdfast::clock::rfc3339(holdfast::clock::now_ms()),
                      "ends_at": holdfast::clock::rfc3339(holdfast::clock::now_ms() + 3_600_000),
                      "items": [{"sku": "BOOK", "quota": 5, "price": 100}]});
    let a = s.call("PUT", "/admin/campaigns/sale", Some(&s.admin), &[], Some(body.to_string())).await;
    problem(&a, 422, "validation_failed");
    assert_eq!(a.body["field"], "items", "{}", a.body);
    assert_eq!(s.get("/admin/campaigns/sale", Some(&s.admin)).await.status, 404, "no campaign written");
    // a model is fixed at creation: BOOK cannot be made strict (nor a strict SKU backorder)
    let a = s.put_sku("BOOK", json!({"name": "BOOK", "price": 200, "currency": "EUR", "shards": 1})).await;
    problem(&a, 422, "validation_failed");
    let locks = s.fingerprint().await;
    let a = s.order("ann", "k1", json!([{"sku": "BOOK", "quantity": 0}])).await;
    assert!(matches!(a.status, 400 | 422), "{} {}", a.status, a.body);
    assert_eq!(s.fingerprint().await, locks, "a refused checkout writes nothing");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_backorder_checkout_during_a_store_outage_is_recorded_then_written_paid_filled_and_shipped() {
    let s = spawn().await;
    // unique names: the emulator's fault matches request bodies, and other tests share it
    let sku = format!("REC{}", fastrand::u32(..));
    let plain = format!("{sku}P");
    s.model_sku(&sku, 200, 1, backorder(), None).await;
    s.stock(&sku, "first", 1).await;
    s.model_sku(&plain, 100, 1, json!({}), None).await;
    s.stock(&plain, "first", 5).await;
    // the store stops taking transactions for these SKUs: every freeze is answered 500
    s.local
        .set_emulator_faults(json!([{"match": sku, "target": "DynamoDB_20120810.TransactWriteItems",
                                     "fail": "InternalServerError"}]))
        .await
        .unwrap();
    let a = s.order("cat", "k1", json!([{"sku": sku, "quantity": 3}])).await;
    assert_eq!((a.status, a.body["status"].as_str()), (202, Some("RECORDED")), "{}", a.body);
    assert_eq!((a.body["amount"].as_u64(), a.body["pay_amount"].as_u64()), (Some(600), Some(600)), "{}", a.body);
    let id = a.body["order_id"].as_str().expect("order_id").to_owned();
    // a SKU that may not be sold short, alone or beside it, is not recorded: 503, as before
    for (key, items) in [
        ("k2", json!([{"sku": plain, "quantity": 1}])),
        ("k3", json!([{"sku": sku, "quantity": 1}, {"sku": plain, "quantity": 1}])),
    ] {
        let r = s.order("cat", key, items).await;
        problem(&r, 503, "temporarily_unavailable");
    }
    assert_eq!(s.get_order("cat", &id).await.status, 404, "no order while the store is out");
    assert_eq!(s.exact(&sku).await, (1, 0, 0), "nothing held");

    // the store answers again: the recording is written as the order, under the same id
    s.local.set_emulator_faults(json!([])).await.unwrap();
    let o = eventually("the recorded checkout to be written", SIGNAL_WAIT, || async {
        let o = s.get_order("cat", &id).await;
        (o.status == 200).then_some(o.body)
    })
    .await;
    assert_eq!((o["status"].as_str(), o["amount"].as_u64()), (Some("PENDING_PAYMENT"), Some(600)), "{o}");
    let (c, b, _) = view(&s, &sku).await;
    assert_eq!((c, b), ((0, 1, 0), (2, 0, 0, 2)), "the unit that exists held, 2 backordered");
    // the buyer's retry is the same order
    let again = s.order("cat", "k1", json!([{"sku": sku, "quantity": 3}])).await;
    assert_eq!((again.status, again.body["order_id"].as_str()), (201, Some(id.as_str())), "{}", again.body);

    // paid, filled by a restock, shipped
    let pay = s.pay(&id, "pay-cat", 600, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.lock_reaches(&id, "SOLD").await;
    s.stock(&sku, "second", 2).await;
    assert_eq!(line_state(&s, &id).await["state"], "FILLED");
    let shipped = ship(&s, &id).await;
    assert_eq!((shipped.status, shipped.body["status"].as_str()), (200, Some("SHIPPED")), "{}", shipped.body);
    assert_eq!(view(&s, &sku).await.0, (0, 0, 3));
    backlog_identity(&s, &sku).await;
    s.assert_invariants().await;
}
