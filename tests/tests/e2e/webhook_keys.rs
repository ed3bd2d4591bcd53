//! The webhooks' keys and the peers' credentials, end to end over HTTP on the local stack
//! (security review M1, L1, M3): a rotated-away key verifies only for its window after the
//! rotation, refund confirmations have a key of their own and confirm only a refund issued to
//! that provider, and the simulated provider and supplier refuse calls without the credential.

use super::common::*;
use holdfast::domain::signature;
use holdfast_local::stack::{emulator_sdk, DEFAULT_REFUND_WEBHOOK_SECRET};
use serde_json::{json, Value};
use std::time::Duration;

/// `body` POSTed to `path` signed now with `key` (`X-Signature`).
async fn signed(s: &Stack, path: &str, key: &str, body: &Value) -> Answer {
    let raw = body.to_string();
    let sig = signature::sign(key.as_bytes(), holdfast::clock::now_s(), raw.as_bytes());
    s.call("POST", path, None, &[("x-signature", &sig)], Some(raw)).await
}

fn callback(order_id: &str, payment_id: &str, amount: u64) -> Value {
    json!({"payment_id": payment_id, "order_id": order_id, "amount": amount, "currency": "EUR", "status": "SUCCEEDED"})
}

/// Security review M1. moto stamps a version's `CreatedDate` with the time it was written and
/// cannot backdate it, so the window is made short (20 s) instead of the default day: the key
/// rotated away verifies inside the window and gets 401 once it has passed — from the
/// `CreatedDate` Secrets Manager reports, read through `GetSecretValue` as in AWS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_previous_webhook_key_verifies_inside_its_window_and_gets_401_past_it() {
    const WINDOW_S: i64 = 20;
    let sm = aws_sdk_secretsmanager::Client::new(&emulator_sdk(&emulator()).await);
    let name = format!("hf-m1-{:08x}", fastrand::u32(..));
    let created = sm.create_secret().name(&name).secret_string("old-webhook-key").send().await.expect("secret");
    let arn = created.arn().expect("arn").to_owned();
    // the rotation: the new key becomes AWSCURRENT, the old one AWSPREVIOUS
    sm.put_secret_value().secret_id(&arn).secret_string("new-webhook-key").send().await.expect("rotation");
    let current = sm.get_secret_value().secret_id(&arn).version_stage("AWSCURRENT").send().await.unwrap();
    let rotated_at = current.created_date().expect("CreatedDate").secs();
    let previous = sm.get_secret_value().secret_id(&arn).version_stage("AWSPREVIOUS").send().await.unwrap();
    assert_eq!(previous.secret_string(), Some("old-webhook-key"));

    let window = WINDOW_S.to_string();
    let s = spawn_with(&[("WEBHOOK_SECRET_ARN", &arn), ("HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS", &window)]).await;
    s.sku("M1", 100, 5, 1, None).await;
    let a = s.order_id("u1", "k1", json!([{"sku": "M1", "quantity": 1}])).await;
    let b = s.order_id("u2", "k2", json!([{"sku": "M1", "quantity": 1}])).await;
    // inside the window (when the stack started in time: on a loaded machine it may not have)
    if holdfast::clock::now_s() < rotated_at + WINDOW_S - 5 {
        let ok = signed(&s, "/payments/callback", "old-webhook-key", &callback(&a, "pa", 100)).await;
        assert_eq!((ok.status, ok.body["result"].as_str()), (200, Some("applied")), "{}", ok.body);
    } else {
        eprintln!("the stack started after the window: only the refusal is checked");
    }
    // past the window: the previous key no longer verifies, whatever the cache holds
    let wait = (rotated_at + WINDOW_S + 1 - holdfast::clock::now_s()).max(0);
    tokio::time::sleep(Duration::from_secs(wait as u64)).await;
    let before = s.admin_view(&b).await;
    let stale = signed(&s, "/payments/callback", "old-webhook-key", &callback(&b, "pb", 100)).await;
    assert_eq!(stale.status, 401, "{}", stale.body);
    assert_eq!(s.admin_view(&b).await, before, "nothing written");
    // the current key still does
    let ok = signed(&s, "/payments/callback", "new-webhook-key", &callback(&b, "pb", 100)).await;
    assert_eq!((ok.status, ok.body["result"].as_str()), (200, Some("applied")), "{}", ok.body);
    s.assert_invariants().await;
}

/// Security review L1: a refund confirmation needs the refund key (not the payment webhook's)
/// and an ISSUED refund of that provider with the provider refund id it recorded. A
/// confirmation for a refund never issued is refused (409) and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_confirmation_for_a_refund_never_issued_is_refused_and_changes_nothing() {
    // the refunds function is not polled: the refund stays REQUESTED, never issued. The first
    // order's deadline passes on the test clock (reconcile expires it), so the second order's
    // payment lands in time however loaded the machine is.
    let s = spawn_opts(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "60"), ("HOLDFAST_STALE_LOCK_SECONDS", "1")], |o| {
        o.paused = vec!["refunds".into()]
    })
    .await;
    s.sku("L1", 100, 5, 1, None).await;
    let a = s.order_id("u1", "k1", json!([{"sku": "L1", "quantity": 1}])).await;
    crate::common::advance_clock(std::time::Duration::from_secs(65));
    s.reconcile().await;
    s.order_reaches("u1", &a, "EXPIRED").await;
    s.lock_reaches(&a, "RELEASED").await;
    assert_eq!(s.pay(&a, "pa", 100, "SUCCEEDED").await.body["result"], "refund_requested");
    let before = s.admin_view(&a).await;
    assert_eq!(before["refunds"][0]["status"], "REQUESTED", "{before}");
    let refund_id = before["refunds"][0]["refund_id"].as_str().unwrap().to_owned();
    let confirmation = |status: &str| json!({"order_id": a, "refund_id": refund_id, "provider_refund_id": "sim_re_forged", "amount": 100, "status": status});
    // signed with the payment callback's key: not a refund confirmation's signature
    let wrong_key = signed(&s, "/payments/refunds", WEBHOOK_SECRET, &confirmation("SUCCEEDED")).await;
    assert_eq!(wrong_key.status, 401, "{}", wrong_key.body);
    // the right key, but the refund was never issued: refused, succeeded or failed alike
    for status in ["SUCCEEDED", "FAILED"] {
        let r = signed(&s, "/payments/refunds", DEFAULT_REFUND_WEBHOOK_SECRET, &confirmation(status)).await;
        problem(&r, 409, "invalid_transition");
        assert!(r.body["detail"].as_str().unwrap_or("").contains("not been issued"), "{}", r.body);
    }
    // a paid order with no refund at all
    let b = s.order_id("u2", "k2", json!([{"sku": "L1", "quantity": 1}])).await;
    assert_eq!(s.pay(&b, "pb", 100, "SUCCEEDED").await.body["result"], "applied");
    let paid = s.admin_view(&b).await;
    let none = json!({"order_id": b, "refund_id": "rf_pb", "provider_refund_id": "sim_re_1", "amount": 100, "status": "SUCCEEDED"});
    let r = signed(&s, "/payments/refunds", DEFAULT_REFUND_WEBHOOK_SECRET, &none).await;
    assert_eq!(r.status, 404, "{}", r.body);
    // nothing changed on either order (its lock and journal move on asynchronously: the paid
    // order's lock is sold by stock-events whenever it gets there)
    for (id, then) in [(&a, &before), (&b, &paid)] {
        let now = s.admin_view(id).await;
        assert_eq!(
            (&now["order"], &now["refunds"], &now["payments"]),
            (&then["order"], &then["refunds"], &then["payments"])
        );
    }
    assert_eq!(s.local.provider.refunds().len(), 0, "nothing was sent to the provider");
    s.assert_invariants().await;
}

/// Security review M3: the functions' calls carry the credential (refunds go through), and the
/// simulated provider and supplier answer 401 to a call without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_and_the_supplier_refuse_a_call_without_the_credential() {
    let s = spawn().await;
    let provider_url = s.local.app("refunds").unwrap().config.provider_url.clone();
    let http = reqwest::Client::new();
    let body = json!({"refund_id": "rf_x", "payment_id": "x", "order_id": "o", "amount": 1, "currency": "EUR"});
    let r = http.post(format!("{provider_url}/refunds")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = http.post(format!("{provider_url}/refunds")).bearer_auth("guessed").json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(s.local.provider.refunds().len(), 0);
    for (method, path) in [
        ("POST", "/quotes"),
        ("POST", "/bookings"),
        ("GET", "/bookings/sim-bk-1"),
        ("POST", "/bookings/sim-bk-1/cancel"),
    ] {
        let url = format!("{}{path}", s.local.supplier_url);
        let r = http.request(method.parse().unwrap(), url).body("{}").send().await.unwrap();
        assert_eq!(r.status(), 401, "{method} {path}");
    }
    // the functions' own calls get through: a refund is issued and confirmed with the refund key
    s.sku("M3", 100, 5, 1, None).await;
    let a = s.order_id("u1", "k1", json!([{"sku": "M3", "quantity": 1}])).await;
    assert_eq!(s.pay(&a, "pa", 100, "SUCCEEDED").await.body["result"], "applied");
    let again = s.pay(&a, "pa2", 100, "SUCCEEDED").await;
    assert_eq!(again.body["result"], "refund_requested", "{}", again.body);
    eventually("the refund of the second payment confirmed", Duration::from_secs(60), || async {
        let v = s.admin_view(&a).await;
        (v["refunds"][0]["status"] == "CONFIRMED").then_some(())
    })
    .await;
    assert_eq!(s.local.provider.refunds().len(), 1);
    s.assert_invariants().await;
}

/// The Info finding: Stripe's `livemode` is checked against `STRIPE_LIVEMODE` (the local stack
/// expects test-mode events, as its fake Stripe sends): a live-mode event, correctly signed, is
/// answered `ignored` and moves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stripe_event_of_the_other_mode_is_ignored() {
    use holdfast_local::peers::stripe::{event, payment_intent};
    let s = spawn().await;
    s.sku("LM", 100, 5, 1, None).await;
    let a = s.order_id("u1", "k1", json!([{"sku": "LM", "quantity": 1}])).await;
    let before = s.admin_view(&a).await;
    let mut live =
        event("evt_live_1", "payment_intent.succeeded", payment_intent("pi_live_1", Some(&a), 100, "eur", true));
    live["livemode"] = json!(true);
    let r = s.api.stripe(&live).await;
    assert_eq!((r.status, r.body["result"].as_str()), (200, Some("ignored")), "{}", r.body);
    // the order is unchanged (its stock journal fills in asynchronously, so it is not compared)
    assert_eq!(s.admin_view(&a).await["order"], before["order"], "nothing written");
    // the same payment in test mode pays the order
    let test = event("evt_test_1", "payment_intent.succeeded", payment_intent("pi_test_1", Some(&a), 100, "eur", true));
    let r = s.api.stripe(&test).await;
    assert_eq!((r.status, r.body["result"].as_str()), (200, Some("applied")), "{}", r.body);
}
