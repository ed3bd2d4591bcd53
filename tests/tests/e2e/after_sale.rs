//! After the money (docs/after-sale.md), end to end over HTTP on the local stack: refunds issued
//! at the simulated provider and confirmed by its signed webhook, the lifecycle after PAID,
//! restock and write-off, the reconcile backstops, and bad input on every new route.

use super::common::*;
use holdfast_local::peers::provider::Control;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// Waits until the order's refunds all show `status`, and returns the admin view.
async fn refunds_reach(s: &Stack, id: &str, n: usize, status: &str) -> Value {
    eventually(&format!("{n} refund(s) of {id} to be {status}"), WAIT, || async {
        let v = s.admin_view(id).await;
        let r = v["refunds"].as_array().cloned().unwrap_or_default();
        (r.len() == n && r.iter().all(|r| r["status"] == status)).then_some(v)
    })
    .await
}

async fn paid_order(s: &Stack, user: &str, sku: &str, qty: u32, price: u64) -> String {
    let id = s.order_id(user, &format!("k-{user}-{sku}"), json!([{"sku": sku, "quantity": qty}])).await;
    let pay = s.pay(&id, &format!("pay-{id}"), price * u64::from(qty), "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.lock_reaches(&id, "SOLD").await;
    id
}

async fn ship(s: &Stack, id: &str) -> Answer {
    s.post(
        &format!("/admin/orders/{id}/ship"),
        &s.admin,
        json!({"carrier": "DHL", "tracking_number": format!("T-{id}")}),
    )
    .await
}

#[tokio::test]
async fn a_payment_after_expiry_is_refunded_once_and_confirmed_even_when_the_webhook_comes_three_times() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "1")]).await;
    s.local.provider.control(&Control { webhook_copies: Some(3), ..Default::default() });
    s.sku("LATE", 700, 3, 1, None).await;
    let id = s.order_id("u1", "k", json!([{"sku": "LATE", "quantity": 1}])).await;
    s.order_reaches("u1", &id, "EXPIRED").await;
    let pay = s.pay(&id, "pay-late", 700, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "refund_requested", "{}", pay.body);
    // the same payment notice again asks for nothing more
    assert_eq!(s.pay(&id, "pay-late", 700, "SUCCEEDED").await.body["result"], "duplicate");
    let v = refunds_reach(&s, &id, 1, "CONFIRMED").await;
    assert_eq!(v["order"]["status"], "EXPIRED");
    assert_eq!(v["refunds"][0]["amount"], 700);
    assert_eq!(v["refunds"][0]["reason"], "payment_not_applied");
    assert_eq!(v["refunds"][0]["provider_refund_id"], "sim_re_1");
    // three deliveries of the confirmation, one refund at the provider
    tokio::time::sleep(Duration::from_secs(2)).await;
    let at_provider = s.local.provider.refunds();
    assert_eq!(at_provider.len(), 1, "{at_provider:?}");
    assert_eq!((at_provider[0].body.payment_id.as_str(), at_provider[0].body.amount), ("pay-late", 700));
    assert_eq!(s.exact("LATE").await, (3, 0, 0));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_before_shipping_puts_the_stock_back_once_and_ends_refunded() {
    let s = spawn().await;
    s.sku("RF", 250, 5, 2, Some(3)).await;
    let id = paid_order(&s, "buyer", "RF", 2, 250).await;
    assert_eq!(s.exact("RF").await, (3, 0, 2));
    let r = s.post(&format!("/orders/{id}/refund"), &s.user("buyer"), json!({"reason": "changed my mind"})).await;
    assert_eq!((r.status, r.body["status"].as_str()), (202, Some("REFUNDING")), "{}", r.body);
    // asked again (a retry): the same order, no second refund
    let again = s.post(&format!("/orders/{id}/refund"), &s.user("buyer"), json!({"reason": "again"})).await;
    assert_eq!(again.status, 202, "{}", again.body);
    let v = refunds_reach(&s, &id, 1, "CONFIRMED").await;
    assert_eq!(v["refunds"][0]["reason"], "buyer_request");
    eventually("REFUNDED and restocked", WAIT, || async {
        let o = s.get_order("buyer", &id).await.body;
        (o["status"] == "REFUNDED" && s.lock_status(&id).await.as_deref() == Some("RESTOCKED")).then_some(())
    })
    .await;
    assert_eq!(s.exact("RF").await, (5, 0, 0), "back on sale exactly once");
    // the customer-service view shows the order's journal: freeze, sale and the restock
    let journal = eventually("the restock in the order's journal", WAIT, || async {
        let v = s.admin_view(&id).await;
        let whys: Vec<String> =
            v["journal"].as_array()?.iter().filter_map(|e| e["why"].as_str().map(str::to_owned)).collect();
        whys.iter().any(|w| w.contains("restock")).then_some(whys)
    })
    .await;
    assert!(journal.iter().any(|w| w.contains("freeze")), "{journal:?}");
    assert_eq!(s.local.provider.refunds().len(), 1);
    // the allowance came back too: the same buyer can take 3 again
    let again = s.order("buyer", "k2", json!([{"sku": "RF", "quantity": 3}])).await;
    assert_eq!(again.status, 201, "{}", again.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn shipped_orders_complete_when_the_buyer_confirms_or_automatically_when_due() {
    let s = spawn_with(&[("HOLDFAST_AUTO_COMPLETE_SECONDS", "1")]).await;
    s.sku("SHIP", 100, 4, 1, None).await;
    let confirmed = paid_order(&s, "b1", "SHIP", 1, 100).await;
    let automatic = paid_order(&s, "b2", "SHIP", 1, 100).await;
    let early = s.post(&format!("/orders/{confirmed}/confirm-receipt"), &s.user("b1"), json!({})).await;
    assert_eq!((early.status, early.body["code"].as_str()), (409, Some("invalid_transition")), "{}", early.body);
    for id in [&confirmed, &automatic] {
        let a = ship(&s, id).await;
        assert_eq!((a.status, a.body["status"].as_str()), (200, Some("SHIPPED")), "{}", a.body);
    }
    // shipped goods are returned, not refunded
    let refund = s.post(&format!("/orders/{confirmed}/refund"), &s.user("b1"), json!({"reason": "x"})).await;
    assert_eq!(refund.status, 409, "{}", refund.body);
    let other = s.post(&format!("/orders/{confirmed}/confirm-receipt"), &s.user("b2"), json!({})).await;
    assert_eq!(other.status, 404, "another buyer's order: {}", other.body);
    let done = s.post(&format!("/orders/{confirmed}/confirm-receipt"), &s.user("b1"), json!({})).await;
    assert_eq!((done.status, done.body["status"].as_str()), (200, Some("COMPLETED")), "{}", done.body);
    // the automatic one is due (on the test clock)
    advance_clock(Duration::from_millis(2100));
    let rep = s.reconcile().await;
    assert_eq!(rep["orders_completed"], 1, "{rep}");
    assert_eq!(s.get_order("b2", &automatic).await.body["status"], "COMPLETED");
    let v = s.admin_view(&automatic).await;
    assert_eq!(v["shipment"]["carrier"], "DHL");
    assert_eq!(v["locks"][0]["status"], "SOLD");
    assert_eq!(s.exact("SHIP").await, (2, 0, 2));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_received_return_restocks_or_writes_off_and_is_refunded_either_way() {
    let s = spawn().await;
    s.sku("RET", 300, 6, 2, None).await;
    let back = paid_order(&s, "r1", "RET", 2, 300).await;
    let lost = paid_order(&s, "r2", "RET", 1, 300).await;
    for (user, id) in [("r1", &back), ("r2", &lost)] {
        assert_eq!(ship(&s, id).await.status, 200);
        let a = s.post(&format!("/orders/{id}/return"), &s.user(user), json!({"reason": "does not fit"})).await;
        assert_eq!((a.status, a.body["status"].as_str()), (202, Some("RETURN_REQUESTED")), "{}", a.body);
    }
    assert_eq!(s.exact("RET").await, (3, 0, 3));
    let a = s.post(&format!("/admin/orders/{back}/return-received"), &s.admin, json!({"restock": true})).await;
    assert_eq!((a.status, a.body["status"].as_str()), (200, Some("RETURNED")), "{}", a.body);
    let b = s.post(&format!("/admin/orders/{lost}/return-received"), &s.admin, json!({"restock": false})).await;
    assert_eq!(b.status, 200, "{}", b.body);
    for id in [&back, &lost] {
        let v = refunds_reach(&s, id, 1, "CONFIRMED").await;
        assert_eq!(v["refunds"][0]["reason"], "return");
        assert_eq!(v["order"]["status"], "RETURNED");
        // the admin who shipped and who received is on the order (security review L7)
        assert_eq!(
            (v["shipment"]["shipped_by"].as_str(), v["return"]["received_by"].as_str()),
            (Some("admin"), Some("admin")),
            "{v}"
        );
    }
    s.lock_reaches(&back, "RESTOCKED").await;
    // restocked 2 back; the written-off unit stays sold
    assert_eq!(s.exact("RET").await, (5, 0, 1));
    assert_eq!(s.lock_status(&lost).await.as_deref(), Some("SOLD"));
    assert_eq!(s.local.provider.refunds().len(), 2);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_refund_whose_event_was_lost_is_issued_by_reconcile_and_a_refusal_waits_for_a_person() {
    // the refunds function is not polled: only the backstop can issue
    let s = spawn_opts(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "1"), ("HOLDFAST_REFUND_REDRIVE_SECONDS", "0")], |o| {
        o.paused = vec!["refunds".into()]
    })
    .await;
    s.sku("BK", 100, 2, 1, None).await;
    let a = s.order_id("u1", "k1", json!([{"sku": "BK", "quantity": 1}])).await;
    s.order_reaches("u1", &a, "EXPIRED").await;
    assert_eq!(s.pay(&a, "pa", 100, "SUCCEEDED").await.body["result"], "refund_requested");
    assert_eq!(s.admin_view(&a).await["refunds"][0]["status"], "REQUESTED");
    let rep = s.reconcile().await;
    assert_eq!(rep["refunds_redriven"], 1, "{rep}");
    refunds_reach(&s, &a, 1, "CONFIRMED").await;
    // a provider that refuses: the refund stays REQUESTED with its failure counted (and the
    // refunds DLQ alarm in AWS); nothing is marked refunded that was not
    s.local.provider.control(&Control { refuse: Some(true), ..Default::default() });
    let b = s.order_id("u2", "k2", json!([{"sku": "BK", "quantity": 1}])).await;
    s.order_reaches("u2", &b, "EXPIRED").await;
    assert_eq!(s.pay(&b, "pb", 100, "SUCCEEDED").await.body["result"], "refund_requested");
    let rep = s.reconcile().await;
    assert_eq!(rep["refunds_redriven"], 0, "{rep}");
    let v = s.admin_view(&b).await;
    assert_eq!(v["refunds"][0]["status"], "REQUESTED");
    assert!(v["refunds"][0]["failures"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(s.local.provider.refunds().len(), 1);
    s.assert_invariants().await;
}

/// (method, path, token, body, expected status)
type Case<'a> = (&'a str, String, Option<&'a str>, Option<String>, u16);

#[tokio::test]
async fn after_sale_routes_refuse_bad_input_and_change_nothing() {
    let s = spawn().await;
    s.sku("BAD", 100, 5, 1, None).await;
    let paid = paid_order(&s, "owner", "BAD", 1, 100).await;
    let pending = s.order_id("owner", "kp", json!([{"sku": "BAD", "quantity": 1}])).await;
    // the journal follows the stock table's stream: the snapshot waits for the sale's entry, so
    // nothing of this order is still on its way when "nothing written" compares
    let before = eventually("the paid order's sale in its journal", WAIT, || async {
        let v = s.admin_view(&paid).await;
        v["journal"].as_array().is_some_and(|j| j.iter().any(|e| e["why"] == "sell")).then_some(v)
    })
    .await;
    let owner = s.user("owner");
    let stranger = s.user("stranger");
    let cases: Vec<Case> = vec![
        ("POST", format!("/orders/{paid}/refund"), Some(&stranger), Some(json!({"reason": "x"}).to_string()), 404),
        ("POST", format!("/orders/{paid}/refund"), Some(&owner), Some("{not json".into()), 400),
        ("POST", format!("/orders/{paid}/refund"), Some(&owner), Some(json!({"reason": ""}).to_string()), 422),
        ("POST", format!("/orders/{paid}/refund"), Some(&owner), Some(json!({"reason": 5}).to_string()), 422),
        (
            "POST",
            format!("/orders/{paid}/refund"),
            Some(&owner),
            Some(json!({"reason": "x", "amount": 1}).to_string()),
            422,
        ),
        ("POST", format!("/orders/{paid}/refund"), None, Some(json!({"reason": "x"}).to_string()), 401),
        ("POST", format!("/orders/{paid}/return"), Some(&owner), Some(json!({"reason": "x"}).to_string()), 409),
        ("POST", format!("/orders/{paid}/confirm-receipt"), Some(&owner), None, 409),
        ("POST", "/orders/nope/refund".into(), Some(&owner), Some(json!({"reason": "x"}).to_string()), 404),
        (
            "POST",
            format!("/admin/orders/{paid}/ship"),
            Some(&owner),
            Some(json!({"carrier": "DHL", "tracking_number": "T"}).to_string()),
            403,
        ),
        (
            "POST",
            format!("/admin/orders/{paid}/ship"),
            Some(&s.admin),
            Some(json!({"carrier": "DHL"}).to_string()),
            422,
        ),
        (
            "POST",
            format!("/admin/orders/{paid}/ship"),
            Some(&s.admin),
            Some(json!({"carrier": "DHL", "tracking_number": "a b"}).to_string()),
            422,
        ),
        (
            "POST",
            format!("/admin/orders/{pending}/ship"),
            Some(&s.admin),
            Some(json!({"carrier": "DHL", "tracking_number": "T"}).to_string()),
            409,
        ),
        (
            "POST",
            format!("/admin/orders/{paid}/return-received"),
            Some(&s.admin),
            Some(json!({"restock": "yes"}).to_string()),
            422,
        ),
        (
            "POST",
            format!("/admin/orders/{paid}/return-received"),
            Some(&s.admin),
            Some(json!({"restock": true}).to_string()),
            409,
        ),
        ("POST", format!("/admin/orders/{paid}/cancel"), Some(&s.admin), Some(json!({"reason": "x"}).to_string()), 409),
        ("POST", format!("/admin/orders/{pending}/cancel"), Some(&s.admin), Some(json!({}).to_string()), 422),
        ("POST", format!("/admin/orders/{paid}/ship"), Some(&s.admin), Some("x".repeat(20_000)), 413),
        ("GET", "/admin/orders/nope".into(), Some(&s.admin), None, 404),
        ("GET", format!("/admin/orders/{paid}"), Some(&owner), None, 403),
    ];
    for (method, path, token, body, want) in cases {
        let a = s.call(method, &path, token, &[], body.clone()).await;
        assert_eq!(a.status, want, "{method} {path} {body:?}: {}", a.body);
        if want != 401 && want != 403 {
            assert!(a.body["code"].is_string(), "problem+json for {method} {path}: {}", a.body);
        }
    }
    let wrong_state = s.post(&format!("/orders/{paid}/return"), &owner, json!({"reason": "x"})).await;
    assert_eq!(wrong_state.body["code"], "invalid_transition");
    assert_eq!(s.admin_view(&paid).await, before, "nothing written");
    // the refund webhook: signed only, known refunds only
    let unsigned = s.call("POST", "/payments/refunds", None, &[], Some(json!({}).to_string())).await;
    assert_eq!(unsigned.status, 401, "{}", unsigned.body);
    // an admin cancels a pending order with a reason; its stock goes back
    let c = s.post(&format!("/admin/orders/{pending}/cancel"), &s.admin, json!({"reason": "fraud check failed"})).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("CANCELLED")), "{}", c.body);
    assert_eq!(s.admin_view(&pending).await["cancel_reason"], "cancelled by admin (admin): fraud check failed");
    eventually("the cancelled order's stock back", WAIT, || async {
        (s.lock_status(&pending).await.as_deref() == Some("RELEASED")).then_some(())
    })
    .await;
    assert_eq!(s.exact("BAD").await, (4, 0, 1));
    s.assert_invariants().await;
}
