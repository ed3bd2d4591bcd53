//! The order service end to end over HTTP: create with idempotency keys, read, cancel, pay,
//! expire — with the event flow moving the stock behind it.

use crate::common::{eventually, spawn, spawn_with, WEBHOOK_SECRET};
use futures::future::join_all;
use holdfast::domain::signature;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_buyers_for_fifty_units_leave_fifty_pending_orders() {
    let s = spawn().await;
    s.sku("DROP", 2500, 50, 4, None).await;
    let results = join_all((0..300).map(|i| {
        let s = &s;
        async move {
            // 300 checkouts at once can overrun the emulator (it serialises every DynamoDB
            // request); a 503 tells the client to retry with the same Idempotency-Key, so do.
            let mut a = s.order(&format!("buyer-{i}"), "checkout", json!([{"sku": "DROP", "quantity": 1}])).await;
            for attempt in 1..=5 {
                if a.status != 503 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
                a = s.order(&format!("buyer-{i}"), "checkout", json!([{"sku": "DROP", "quantity": 1}])).await;
            }
            a
        }
    }))
    .await;
    let created: Vec<_> = results.iter().filter(|a| a.status == 201).collect();
    let refused = results.iter().filter(|a| a.status == 409 && a.body["code"] == "insufficient_stock").count();
    assert_eq!(
        (created.len(), refused),
        (50, 250),
        "{:?}",
        results.iter().find(|a| a.status != 201 && a.status != 409).map(|a| &a.body)
    );
    assert!(created.iter().all(|a| a.body["status"] == "PENDING_PAYMENT" && a.body["amount"] == 2500));
    let v = s.view("DROP").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(0), Some(50)));
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_checkout_sent_five_times_at_once_makes_one_order_and_five_identical_answers() {
    let s = spawn().await;
    s.sku("ONE", 700, 10, 2, None).await;
    let answers = join_all(
        (0..5).map(|_| s.order("erin", "k-1", json!([{"sku": "ONE", "quantity": 2}, {"sku": "ONE", "quantity": 1}]))),
    )
    .await;
    for a in &answers {
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.body, answers[0].body);
    }
    let fresh = answers.iter().filter(|a| a.headers.get("idempotent-replayed").is_none()).count();
    assert_eq!(fresh, 1, "exactly one answer wrote the order; the others are marked as replays");
    assert_eq!(answers[0].body["items"], json!([{"sku": "ONE", "quantity": 3, "unit_price": 700}]));
    assert_eq!(answers[0].body["amount"], 2100);
    assert_eq!(s.view("ONE").await["locked"], 3);
    let list = s.get("/orders", Some(&s.user("erin"))).await;
    assert_eq!(list.body["orders"].as_array().map(Vec::len), Some(1));
    // the same key with another body is refused and changes nothing
    let other = s.order("erin", "k-1", json!([{"sku": "ONE", "quantity": 1}])).await;
    assert_eq!((other.status, other.body["code"].as_str()), (422, Some("idempotency_key_reused")));
    assert_eq!(s.view("ONE").await["locked"], 3);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_signed_callback_pays_once_and_forgeries_change_nothing() {
    let s = spawn().await;
    s.sku("PAY", 1234, 5, 1, None).await;
    let o = s.order("frank", "k", json!([{"sku": "PAY", "quantity": 1}])).await;
    let id = o.body["order_id"].as_str().unwrap().to_owned();

    let body = json!({"payment_id": "pay-1", "order_id": id, "amount": 1234, "currency": "EUR", "status": "SUCCEEDED"})
        .to_string();
    let now = holdfast::clock::now_s();
    for (sig, what) in [
        (signature::sign(b"wrong-secret", now, body.as_bytes()), "wrong secret"),
        (signature::sign(WEBHOOK_SECRET.as_bytes(), now - 301, body.as_bytes()), "stale t"),
        ("t=1,v1=00".to_owned(), "garbage"),
    ] {
        let a = s.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(body.clone())).await;
        assert_eq!(a.status, 401, "{what}: {}", a.body);
    }
    let tampered_sig = signature::sign(WEBHOOK_SECRET.as_bytes(), now, body.as_bytes());
    let a = s
        .call("POST", "/payments/callback", None, &[("x-signature", &tampered_sig)], Some(body.replace("1234", "1")))
        .await;
    assert_eq!(a.status, 401);
    let a = s.call("POST", "/payments/callback", None, &[], Some(body.clone())).await;
    assert_eq!(a.status, 401);
    assert_eq!(s.get_order("frank", &id).await.body["version"], 1, "nothing changed");

    let wrong = s.pay(&id, "pay-0", 999, "SUCCEEDED").await;
    assert_eq!((wrong.status, wrong.body["code"].as_str()), (409, Some("amount_mismatch")));
    assert_eq!(s.get_order("frank", &id).await.body["status"], "PENDING_PAYMENT");

    let a = s.pay(&id, "pay-1", 1234, "SUCCEEDED").await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("applied")));
    for _ in 0..3 {
        let a = s.pay(&id, "pay-1", 1234, "SUCCEEDED").await;
        assert_eq!((a.status, a.body["result"].as_str()), (200, Some("duplicate")));
    }
    let o = s.get_order("frank", &id).await.body;
    assert_eq!((o["status"].as_str(), o["payment_id"].as_str()), (Some("PAID"), Some("pay-1")));
    eventually("the paid units to be sold", Duration::from_secs(20), || async {
        (s.view("PAY").await["sold"] == 1).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_unpaid_order_expires_and_a_late_payment_is_refunded_once() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "3")]).await;
    s.sku("EXP", 500, 2, 1, None).await;
    let o = s.order("gina", "k", json!([{"sku": "EXP", "quantity": 2}])).await;
    assert_eq!(o.status, 201);
    let id = o.body["order_id"].as_str().unwrap().to_owned();
    eventually("the order to expire", Duration::from_secs(30), || async {
        (s.get_order("gina", &id).await.body["status"] == "EXPIRED").then_some(())
    })
    .await;
    eventually("its stock to be back on sale", Duration::from_secs(20), || async {
        (s.view("EXP").await["available"] == 2).then_some(())
    })
    .await;
    let late = s.pay(&id, "late-1", 1000, "SUCCEEDED").await;
    assert_eq!((late.status, late.body["result"].as_str()), (200, Some("refund_requested")));
    let again = s.pay(&id, "late-1", 1000, "SUCCEEDED").await;
    assert_eq!(again.body["result"], "duplicate");
    let o = s.get_order("gina", &id).await.body;
    assert_eq!((o["status"].as_str(), o["refunds_requested"].as_u64()), (Some("EXPIRED"), Some(1)));
    let v = s.view("EXP").await;
    assert_eq!((v["sold"].as_i64(), v["available"].as_i64()), (Some(0), Some(2)));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_pending_order_cancels_a_paid_one_does_not_and_nobody_else_can_touch_it() {
    let s = spawn().await;
    s.sku("CAN", 300, 4, 1, None).await;
    let a = s.order("hank", "k1", json!([{"sku": "CAN", "quantity": 1}])).await.body;
    let b = s.order("hank", "k2", json!([{"sku": "CAN", "quantity": 1}])).await.body;
    let (a, b) = (a["order_id"].as_str().unwrap().to_owned(), b["order_id"].as_str().unwrap().to_owned());
    let hank = s.user("hank");
    let ivy = s.user("ivy");

    assert_eq!(s.get(&format!("/orders/{a}"), Some(&ivy)).await.status, 404);
    let c = s.call("POST", &format!("/orders/{a}/cancel"), Some(&ivy), &[], None).await;
    assert_eq!(c.status, 404);
    assert_eq!(s.get_order("hank", &a).await.body["status"], "PENDING_PAYMENT");

    let c = s.call("POST", &format!("/orders/{a}/cancel"), Some(&hank), &[], None).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("CANCELLED")));
    let c = s.call("POST", &format!("/orders/{a}/cancel"), Some(&hank), &[], None).await;
    assert_eq!((c.status, c.body["code"].as_str()), (409, Some("invalid_transition")));

    assert_eq!(s.pay(&b, "p-b", 300, "SUCCEEDED").await.body["result"], "applied");
    let c = s.call("POST", &format!("/orders/{b}/cancel"), Some(&hank), &[], None).await;
    assert_eq!((c.status, c.body["code"].as_str()), (409, Some("invalid_transition")));

    let list = s.get("/orders?limit=1", Some(&hank)).await.body;
    assert_eq!(list["orders"][0]["order_id"], b.as_str(), "newest first");
    let cursor = list["next_cursor"].as_str().expect("a second page").to_owned();
    let page2 = s.get(&format!("/orders?limit=1&cursor={cursor}"), Some(&hank)).await.body;
    assert_eq!(page2["orders"][0]["order_id"], a.as_str());
    assert!(s.get("/orders", Some(&ivy)).await.body["orders"].as_array().unwrap().is_empty());

    eventually("cancel to release and pay to sell", Duration::from_secs(20), || async {
        let v = s.view("CAN").await;
        (v["available"] == 3 && v["sold"] == 1 && v["locked"] == 0).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_failed_payment_is_recorded_and_the_order_stays_payable() {
    let s = spawn().await;
    s.sku("FP", 100, 1, 1, None).await;
    let id =
        s.order("jo", "k", json!([{"sku": "FP", "quantity": 1}])).await.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(s.pay(&id, "try-1", 100, "FAILED").await.body["result"], "failed_recorded");
    assert_eq!(s.pay(&id, "try-1", 100, "FAILED").await.body["result"], "duplicate");
    assert_eq!(s.get_order("jo", &id).await.body["status"], "PENDING_PAYMENT");
    assert_eq!(s.pay(&id, "try-2", 100, "SUCCEEDED").await.body["result"], "applied");
    assert_eq!(
        s.pay(&id, "try-3", 100, "SUCCEEDED").await.body["result"],
        "refund_requested",
        "a second payment for a paid order is refunded"
    );
    s.assert_invariants().await;
}
