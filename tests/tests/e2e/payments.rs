//! The money path (docs/payments.md), end to end over HTTP on the local stack: payments started
//! at the simulated provider and paid on its page, webhooks dropped and healed by asking the
//! provider, failures and second attempts, processing payments at the deadline, settlement, refund
//! review, and bad input on every new route. Invariants are clean at the end of each.

use super::common::*;
use holdfast_local::peers::provider::{Decide, Forget, InjectCapture, Webhook};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);

async fn start(s: &Stack, user: &str, id: &str, body: Option<Value>) -> Answer {
    let t = s.user(user);
    s.call("POST", &format!("/orders/{id}/payments"), Some(&t), &[], body.map(|b| b.to_string())).await
}

/// The buyer on the simulated provider's page.
async fn pay_at_provider(redirect_url: &str, outcome: &str, webhook: &str) -> Value {
    let r = reqwest::Client::new()
        .post(redirect_url)
        .json(&json!({"outcome": outcome, "webhook": webhook}))
        .send()
        .await
        .expect("the provider's page answers");
    assert!(r.status().is_success(), "pay page: {}", r.status());
    r.json().await.expect("json")
}

async fn unpaid(s: &Stack, user: &str, key: &str, sku: &str) -> String {
    s.order_id(user, key, json!([{"sku": sku, "quantity": 1}])).await
}

#[tokio::test]
async fn a_buyer_pays_on_the_providers_page_and_a_repeat_start_answers_the_same_payment() {
    let s = spawn().await;
    s.sku("PAY1", 700, 5, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAY1").await;
    let a = start(&s, "u1", &id, None).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!((a.body["status"].as_str(), a.body["provider"].as_str()), (Some("PAYING"), Some("generic")));
    assert_eq!(a.body["amount"], 700);
    let again = start(&s, "u1", &id, Some(json!({"provider": "generic"}))).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["payment_id"], a.body["payment_id"]);
    assert_eq!(s.get_order("u1", &id).await.body["status"], "PAYING");
    pay_at_provider(a.body["redirect_url"].as_str().expect("redirect_url"), "succeed", "deliver").await;
    let o = s.order_reaches("u1", &id, "PAID").await;
    assert_eq!(o["payment_id"], a.body["payment_id"]);
    assert_eq!(o["payments"][0]["state"], "SUCCEEDED");
    s.lock_reaches(&id, "SOLD").await;
    assert_eq!(s.local.provider.payments().len(), 1, "one payment created at the provider");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_dropped_webhook_still_ends_paid_by_asking_the_provider_at_the_deadline() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "4")]).await;
    s.sku("PAY2", 500, 5, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAY2").await;
    let a = start(&s, "u1", &id, None).await;
    assert_eq!(a.status, 201, "{}", a.body);
    pay_at_provider(a.body["redirect_url"].as_str().unwrap(), "succeed", "drop").await;
    // no webhook: the order is decided at its deadline by the provider's answer
    let o = s.order_reaches("u1", &id, "PAID").await;
    assert_eq!(o["refunds_requested"], 0, "paid, not refunded: {o}");
    s.lock_reaches(&id, "SOLD").await;
    assert!(s.local.provider.callbacks().is_empty(), "no webhook was ever sent");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_failed_payment_returns_the_order_to_pending_and_a_second_attempt_pays() {
    let s = spawn().await;
    s.sku("PAY3", 300, 5, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAY3").await;
    let first = start(&s, "u1", &id, None).await;
    pay_at_provider(first.body["redirect_url"].as_str().unwrap(), "fail", "deliver").await;
    s.order_reaches("u1", &id, "PENDING_PAYMENT").await;
    let second = start(&s, "u1", &id, None).await;
    assert_eq!(second.status, 201, "{}", second.body);
    assert_ne!(second.body["payment_id"], first.body["payment_id"]);
    pay_at_provider(second.body["redirect_url"].as_str().unwrap(), "succeed", "twice").await;
    let o = s.order_reaches("u1", &id, "PAID").await;
    let states: Vec<&str> = o["payments"].as_array().unwrap().iter().map(|p| p["state"].as_str().unwrap()).collect();
    // the failed payment could still be retried at the provider: the new attempt cancelled it
    assert_eq!(states, ["CANCELLED", "SUCCEEDED"]);
    let first_at_provider = s.local.provider.payment(first.body["payment_id"].as_str().unwrap()).unwrap();
    assert_eq!(first_at_provider.status, holdfast::adapters::provider::WireStatus::Cancelled);
    assert_eq!(o["refunds_requested"], 0, "the second webhook is a duplicate");
    s.lock_reaches(&id, "SOLD").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_payment_processing_at_the_deadline_is_waited_for_within_the_grace_and_then_ends_right() {
    let s = spawn_with(&[
        ("HOLDFAST_PAYMENT_TTL_SECONDS", "4"),
        ("HOLDFAST_PAYMENT_QUERY_SECONDS", "1"),
        ("HOLDFAST_PAYMENT_GRACE_SECONDS", "8"),
    ])
    .await;
    s.sku("PAY4", 400, 5, 1, None).await;
    // one the provider decides during the grace: paid
    let late = unpaid(&s, "u1", "k1", "PAY4").await;
    let a = start(&s, "u1", &late, None).await;
    let pid_late = a.body["payment_id"].as_str().unwrap().to_owned();
    pay_at_provider(a.body["redirect_url"].as_str().unwrap(), "process", "deliver").await;
    // one that never leaves processing: cancelled at the provider after the grace, expired
    let stuck = unpaid(&s, "u2", "k2", "PAY4").await;
    let b = start(&s, "u2", &stuck, None).await;
    let pid_stuck = b.body["payment_id"].as_str().unwrap().to_owned();
    pay_at_provider(b.body["redirect_url"].as_str().unwrap(), "process", "deliver").await;
    // past the deadline both are still PAYING (asked, processing)
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(s.get_order("u1", &late).await.body["status"], "PAYING");
    assert_eq!(s.get_order("u2", &stuck).await.body["status"], "PAYING");
    let decided = s.local.provider.decide(
        &pid_late,
        &Decide { status: holdfast::adapters::provider::WireStatus::Succeeded, webhook: Webhook::Drop, after_polls: 0 },
    );
    assert!(decided.is_some());
    s.order_reaches("u1", &late, "PAID").await;
    // still processing after the grace: not cancellable at the provider, so the order closes
    // with its attempt open (never recorded cancelled: review protocol-3 N1)
    let o = s.order_reaches("u2", &stuck, "EXPIRED").await;
    assert_eq!(o["payments"][0]["state"], "OPEN", "{o}");
    let at_provider = s.local.provider.payment(&pid_stuck).expect("known");
    assert_eq!(at_provider.status, holdfast::adapters::provider::WireStatus::Processing, "not cancellable");
    s.lock_reaches(&late, "SOLD").await;
    s.lock_reaches(&stuck, "RELEASED").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_payment_never_made_is_cancelled_at_the_provider_and_the_order_expires() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "3")]).await;
    s.sku("PAY5", 400, 2, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAY5").await;
    let a = start(&s, "u1", &id, None).await;
    s.order_reaches("u1", &id, "EXPIRED").await;
    let p = s.local.provider.payment(a.body["payment_id"].as_str().unwrap()).unwrap();
    assert_eq!(p.status, holdfast::adapters::provider::WireStatus::Cancelled);
    // too late on the page: the provider refuses (the payment is cancelled), nothing is taken
    let r = reqwest::Client::new()
        .post(a.body["redirect_url"].as_str().unwrap())
        .json(&json!({"outcome": "succeed", "webhook": "deliver"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    s.lock_reaches(&id, "RELEASED").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_buyers_cancel_of_a_paying_order_cancels_the_payment_first() {
    let s = spawn().await;
    s.sku("PAY6", 400, 2, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAY6").await;
    let a = start(&s, "u1", &id, None).await;
    let c = s.cancel("u1", &id).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("CANCELLED")), "{}", c.body);
    let p = s.local.provider.payment(a.body["payment_id"].as_str().unwrap()).unwrap();
    assert_eq!(p.status, holdfast::adapters::provider::WireStatus::Cancelled);
    // paid at the provider before the cancel reached it: the cancel becomes a payment
    let id2 = unpaid(&s, "u1", "k2", "PAY6").await;
    let b = start(&s, "u1", &id2, None).await;
    pay_at_provider(b.body["redirect_url"].as_str().unwrap(), "succeed", "drop").await;
    let c = s.cancel("u1", &id2).await;
    problem(&c, 409, "invalid_transition");
    assert_eq!(s.get_order("u1", &id2).await.body["status"], "PAID");
    s.lock_reaches(&id, "RELEASED").await;
    s.lock_reaches(&id2, "SOLD").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn settlement_names_each_kind_of_difference_and_counts_the_matches() {
    let s = spawn().await;
    s.sku("SET1", 500, 10, 1, None).await;
    let today = holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s()).to_string();
    // matched: paid through the provider
    let good = unpaid(&s, "u1", "k1", "SET1").await;
    let a = start(&s, "u1", &good, None).await;
    pay_at_provider(a.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await;
    s.order_reaches("u1", &good, "PAID").await;
    // the provider captured money for no order
    s.local
        .provider
        .inject_capture(&InjectCapture { order_id: None, amount: 1234, currency: "EUR".into(), day: None })
        .unwrap();
    // Holdfast recorded a payment the provider never captured (it "loses" it)
    let lost = unpaid(&s, "u2", "k2", "SET1").await;
    let b = start(&s, "u2", &lost, None).await;
    pay_at_provider(b.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await;
    s.order_reaches("u2", &lost, "PAID").await;
    s.local
        .provider
        .forget(&Forget { payment_id: b.body["payment_id"].as_str().map(str::to_owned), provider_refund_id: None });
    // a refund Holdfast issued that the provider never made
    let refunded = unpaid(&s, "u3", "k3", "SET1").await;
    let c = start(&s, "u3", &refunded, None).await;
    pay_at_provider(c.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await;
    s.order_reaches("u3", &refunded, "PAID").await;
    s.lock_reaches(&refunded, "SOLD").await;
    let r = s.post(&format!("/orders/{refunded}/refund"), &s.user("u3"), json!({"reason": "changed my mind"})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let prid = eventually("the refund to be issued", WAIT, || async {
        let v = s.admin_view(&refunded).await;
        v["refunds"][0]["provider_refund_id"].as_str().map(str::to_owned)
    })
    .await;
    s.local.provider.forget(&Forget { payment_id: None, provider_refund_id: Some(prid) });

    let run = s.post(&format!("/admin/settlement/{today}/run"), &s.admin, json!({})).await;
    assert_eq!(run.status, 200, "{}", run.body);
    let kinds: Vec<&str> =
        run.body["mismatches"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["capture_without_order", "paid_without_capture", "refund_not_at_provider"], "{}", run.body);
    assert_eq!(run.body["payments_matched"], 2, "{}", run.body);
    let m = &run.body["mismatches"];
    assert_eq!(m[0]["amount"], 1234);
    assert_eq!(m[1]["order_id"], lost.as_str());
    assert_eq!(m[2]["order_id"], refunded.as_str());
    // the read answers the same comparison
    let get = s.get(&format!("/admin/settlement/{today}"), Some(&s.admin)).await;
    assert_eq!(get.body["mismatches"], run.body["mismatches"]);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_revealed_code_orders_refund_waits_for_review_rejected_then_approved_once_with_its_codes_voided() {
    let s = spawn().await;
    s.model_sku("GIFT", 1000, 1, json!({"management": "CODE_POOL"}), None).await;
    let up = s
        .post(
            "/admin/skus/GIFT/codes",
            &s.admin,
            json!({"batch_id": "b1", "codes": ["GIFT-AAAA-0001", "GIFT-AAAA-0002"]}),
        )
        .await;
    assert_eq!(up.status, 201, "{}", up.body);
    let id = unpaid(&s, "u1", "k1", "GIFT").await;
    let a = start(&s, "u1", &id, None).await;
    pay_at_provider(a.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await;
    s.order_reaches("u1", &id, "PAID").await;
    s.lock_reaches(&id, "SOLD").await;
    assert_eq!(s.codes_of("u1", &id).await.status, 200);
    let (refund_path, buyer) = (format!("/orders/{id}/refund"), s.user("u1"));
    let refund = || s.post(&refund_path, &buyer, json!({"reason": "not what I wanted"}));
    let held = refund().await;
    assert_eq!((held.status, held.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", held.body);
    assert_eq!(held.body["refund_review"]["because"], "codes_revealed");
    let decide = |approve: bool, token: String| {
        let id = id.clone();
        let s = &s;
        async move {
            s.post(&format!("/admin/orders/{id}/refund-decision"), &token, json!({"approve": approve, "reason": "cs"}))
                .await
        }
    };
    // a buyer cannot decide
    let forbidden = decide(true, s.user("u1")).await;
    assert_eq!(forbidden.status, 403, "{}", forbidden.body);
    let rejected = decide(false, s.admin.clone()).await;
    assert_eq!((rejected.status, rejected.body["status"].as_str()), (200, Some("PAID")), "{}", rejected.body);
    assert_eq!(rejected.body["refund_review"]["decided_by"], "admin");
    assert_eq!(s.codes_of("u1", &id).await.status, 200, "rejected: still the buyer's codes");
    problem(&decide(true, s.admin.clone()).await, 409, "invalid_transition");
    assert_eq!(refund().await.body["status"], "REFUND_REQUESTED");
    let approved = decide(true, s.admin.clone()).await;
    assert_eq!((approved.status, approved.body["status"].as_str()), (200, Some("REFUNDING")), "{}", approved.body);
    let again = decide(true, s.admin.clone()).await;
    assert_eq!(again.body["version"], approved.body["version"], "the same decision again changes nothing");
    s.order_reaches("u1", &id, "REFUNDED").await;
    problem(&s.codes_of("u1", &id).await, 409, "codes_voided");
    let refunds: Vec<_> = s.local.provider.refunds().into_iter().filter(|r| r.body.order_id == id).collect();
    assert_eq!(refunds.len(), 1, "refunded once");
    s.assert_invariants().await;
}

#[tokio::test]
async fn bad_input_on_the_payment_routes_gets_a_clear_error_and_changes_nothing() {
    let s = spawn().await;
    s.sku("BAD1", 100, 3, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "BAD1").await;
    let before = s.fingerprint().await;
    problem(&start(&s, "u1", &id, Some(json!({"provider": "paypal"}))).await, 422, "validation_failed");
    problem(&start(&s, "u1", &id, Some(json!({"provider": 7}))).await, 422, "validation_failed");
    problem(&start(&s, "u1", &id, Some(json!({"bogus": true}))).await, 422, "validation_failed");
    let t = s.user("u1");
    let raw = s.call("POST", &format!("/orders/{id}/payments"), Some(&t), &[], Some("{not json".into())).await;
    problem(&raw, 400, "malformed_json");
    let big = s.call("POST", &format!("/orders/{id}/payments"), Some(&t), &[], Some(" ".repeat(70_000))).await;
    problem(&big, 413, "payload_too_large");
    problem(&start(&s, "u2", &id, None).await, 404, "not_found");
    problem(&start(&s, "u1", "no-such-order", None).await, 404, "not_found");
    let anon = s.call("POST", &format!("/orders/{id}/payments"), None, &[], None).await;
    assert_eq!(anon.status, 401, "{}", anon.body);
    problem(
        &s.post(&format!("/admin/orders/{id}/refund-decision"), &s.admin, json!({"approve": true, "reason": "x"}))
            .await,
        409,
        "invalid_transition",
    );
    problem(
        &s.post(&format!("/admin/orders/{id}/refund-decision"), &s.admin, json!({"approve": "yes", "reason": "x"}))
            .await,
        422,
        "validation_failed",
    );
    problem(&s.get("/admin/settlement/2026-13-01", Some(&s.admin)).await, 422, "validation_failed");
    problem(&s.get("/admin/settlement/2999-01-01", Some(&s.admin)).await, 422, "validation_failed");
    let buyer = s.get("/admin/settlement/2026-01-01", Some(&s.user("u1"))).await;
    assert_eq!(buyer.status, 403, "{}", buyer.body);
    assert_eq!(s.fingerprint().await, before, "nothing changed");
    // a closed order cannot start a payment
    s.cancel("u1", &id).await;
    problem(&start(&s, "u1", &id, None).await, 409, "invalid_transition");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_buyer_pays_a_stripe_payment_intent_and_its_succeeded_event_pays_the_order() {
    let s = spawn().await;
    s.sku("PAYS", 2500, 5, 1, None).await;
    let id = unpaid(&s, "u1", "k1", "PAYS").await;
    let a = start(&s, "u1", &id, Some(json!({"provider": "stripe"}))).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let pi = a.body["payment_id"].as_str().expect("payment_id").to_owned();
    assert!(pi.starts_with("pi_"), "a PaymentIntent id: {pi}");
    assert!(a.body["client_secret"].as_str().is_some_and(|c| c.starts_with(&format!("{pi}_secret"))), "{}", a.body);
    assert!(a.body.get("redirect_url").is_none());
    // the buyer's page confirms with a declined card first, then a good one
    let (st, _) = s.local.stripe.confirm(&pi, "pm_card_chargeDeclined");
    assert_eq!(st, 402);
    let (st, intent) = s.local.stripe.confirm(&pi, "pm_card_visa");
    assert_eq!((st, intent["status"].as_str()), (200, Some("succeeded")), "{intent}");
    let o = s.order_reaches("u1", &id, "PAID").await;
    assert_eq!(o["payment_id"], pi.as_str());
    assert_eq!(o["payments"][0]["provider"], "stripe");
    s.lock_reaches(&id, "SOLD").await;
    s.assert_invariants().await;
}
