//! Stripe (docs/after-sale.md, "Stripe"): events signed the way Stripe signs them, delivered over
//! HTTP to `POST /payments/stripe` on the local stack, and the refunds adapter against the
//! stack's fake Stripe (a real HTTP peer).

use crate::common::{eventually, spawn, spawn_with, Stack};
use holdfast::adapters::secrets::StaticKeys;
use holdfast::adapters::stripe::StripeRefunds;
use holdfast::config::Secret;
use holdfast::domain::order::{Order, OrderRecord, Provider};
use holdfast::domain::refund::RefundStatus;
use holdfast::domain::OrderId;
use holdfast::ports::{PaymentProvider, RefundRequest};
use holdfast_local::peers::stripe::{event, payment_intent, signature, LOCAL_API_KEY};
use holdfast_local::stack::DEFAULT_STRIPE_WEBHOOK_SECRET as SECRET;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn succeeded(order_id: &str, pi: &str, amount: u64) -> serde_json::Value {
    event(&format!("evt_{pi}"), "payment_intent.succeeded", payment_intent(pi, Some(order_id), amount, "eur", true))
}

async fn order_of(s: &Stack, id: &str) -> Order {
    let snap = s.local.snapshot().await.expect("snapshot");
    snap.orders
        .into_iter()
        .find_map(|(i, r)| match r {
            OrderRecord::Order(o) if i.as_str() == id => Some(*o),
            _ => None,
        })
        .expect("the order")
}

async fn providers_of(s: &Stack, id: &str) -> Vec<Provider> {
    order_of(s, id).await.payments.iter().map(|p| p.provider).collect()
}

#[tokio::test]
async fn a_stripe_payment_pays_a_pending_order_once_and_other_events_are_answered() {
    let s = spawn().await;
    s.sku("STRIPE", 1250, 5, 1, None).await;
    let id = s.order_id("sam", "k1", json!([{"sku": "STRIPE", "quantity": 2}])).await;

    // Stripe sends lower-case currency and many fields Holdfast does not read.
    let a = s.api.stripe(&succeeded(&id, "pi_paid1", 2500)).await;
    assert_eq!((a.status, a.body["result"].as_str(), a.body["order_id"].as_str()), (200, Some("applied"), Some(&*id)));
    let o = s.get_order("sam", &id).await.body;
    assert_eq!((o["status"].as_str(), o["payment_id"].as_str()), (Some("PAID"), Some("pi_paid1")));
    assert_eq!(providers_of(&s, &id).await, vec![Provider::Stripe]);

    // Stripe delivers at least once: a re-delivery changes nothing.
    for _ in 0..2 {
        let a = s.api.stripe(&succeeded(&id, "pi_paid1", 2500)).await;
        assert_eq!((a.status, a.body["result"].as_str()), (200, Some("duplicate")));
    }
    assert_eq!(s.get_order("sam", &id).await.body["version"], o["version"]);

    // A failed attempt on another order is recorded; the order stays open.
    let open = s.order_id("sam", "k2", json!([{"sku": "STRIPE", "quantity": 1}])).await;
    let failed =
        event("evt_f", "payment_intent.payment_failed", payment_intent("pi_declined", Some(&open), 1250, "eur", false));
    let a = s.api.stripe(&failed).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("failed_recorded")));
    assert_eq!(s.get_order("sam", &open).await.body["status"], "PENDING_PAYMENT");
    assert_eq!(providers_of(&s, &open).await, vec![Provider::Stripe]);

    // Same mapping of errors as the generic callback.
    let a = s.api.stripe(&succeeded(&open, "pi_short", 999)).await;
    assert_eq!((a.status, a.body["code"].as_str()), (409, Some("amount_mismatch")));
    let a = s.api.stripe(&succeeded("no-such-order", "pi_x", 1250)).await;
    assert_eq!(a.status, 404, "{}", a.body);

    // Types Holdfast does not act on, and payments that are not Holdfast's, are a 200 `ignored`.
    let other = event("evt_c", "customer.created", json!({"id": "cus_1", "object": "customer"}));
    let a = s.api.stripe(&other).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("ignored")));
    let foreign = event("evt_n", "payment_intent.succeeded", payment_intent("pi_foreign", None, 1250, "eur", true));
    let a = s.api.stripe(&foreign).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("ignored")));

    // A signed body that is not an event of the shape read is a 4xx, and writes nothing.
    let mut bad = succeeded(&open, "pi_bad", 1250);
    bad["data"]["object"]["amount_received"] = json!("lots");
    let a = s.api.stripe(&bad).await;
    assert_eq!((a.status, a.body["field"].as_str()), (422, Some("data.object.amount_received")), "{}", a.body);
    let body = "not json";
    let a = s.api.stripe_raw(body, Some(&signature(&[SECRET], holdfast::clock::now_s(), body))).await;
    assert_eq!(a.status, 400);
    assert_eq!(s.get_order("sam", &open).await.body["status"], "PENDING_PAYMENT");

    // Stripe's events are larger than buyers' bodies (16 KiB): a 40 KiB one is read; past
    // 256 KiB is a 413.
    let mut big = other.clone();
    big["data"]["object"]["description"] = json!("x".repeat(40 * 1024));
    let a = s.api.stripe(&big).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("ignored")), "{}", a.body);
    big["data"]["object"]["description"] = json!("x".repeat(300 * 1024));
    assert_eq!(s.api.stripe(&big).await.status, 413);

    eventually("the paid units to be sold", Duration::from_secs(20), || async {
        (s.view("STRIPE").await["sold"] == 2).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn only_a_fresh_stripe_signature_over_the_exact_body_is_accepted() {
    let s = spawn().await;
    s.sku("STRIPESIG", 700, 2, 1, None).await;
    let id = s.order_id("sig", "k", json!([{"sku": "STRIPESIG", "quantity": 1}])).await;
    let before = s.get_order("sig", &id).await.body;
    let body = succeeded(&id, "pi_sig", 700).to_string();
    let now = holdfast::clock::now_s();
    let good = holdfast::domain::stripe::v1(SECRET.as_bytes(), now, body.as_bytes());
    let refused: Vec<(&str, Option<String>)> = vec![
        ("missing header", None),
        ("empty header", Some(String::new())),
        ("wrong secret", Some(signature(&["whsec_someone_else"], now, &body))),
        ("stale", Some(signature(&[SECRET], now - 301, &body))),
        ("future", Some(signature(&[SECRET], now + 301, &body))),
        ("only v0", Some(format!("t={now},v0={good}"))),
        ("moved timestamp", Some(format!("t={},v1={good}", now - 1))),
        ("no timestamp", Some(format!("v1={good}"))),
    ];
    for (what, h) in &refused {
        let a = s.api.stripe_raw(&body, h.as_deref()).await;
        assert_eq!(a.status, 401, "{what}: {}", a.body);
        assert_eq!(a.headers["content-type"], "application/problem+json", "{what}");
    }
    // the signature covers the raw bytes: the same JSON re-serialised differently is refused
    let spaced = body.replace(",\"", ", \"");
    let a = s.api.stripe_raw(&spaced, Some(&signature(&[SECRET], now, &body))).await;
    assert_eq!(a.status, 401);
    let after = s.get_order("sig", &id).await.body;
    assert_eq!((after["status"].as_str(), &after["version"]), (Some("PENDING_PAYMENT"), &before["version"]));
    assert!(providers_of(&s, &id).await.is_empty(), "a refused delivery writes nothing");

    // Two v1s (Stripe during an endpoint-secret roll), one of them right: accepted.
    let rolled =
        format!("t={now},v1={},v1={good},v0=00", holdfast::domain::stripe::v1(b"whsec_old", now, body.as_bytes()));
    let a = s.api.stripe_raw(&body, Some(&rolled)).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("applied")), "{}", a.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_late_stripe_payment_is_refunded_exactly_once_at_stripe_and_confirmed_by_its_webhook() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "3")]).await;
    s.sku("STRIPELATE", 400, 1, 1, None).await;
    let id = s.order_id("lou", "k", json!([{"sku": "STRIPELATE", "quantity": 1}])).await;
    eventually("the order to expire", Duration::from_secs(30), || async {
        (s.get_order("lou", &id).await.body["status"] == "EXPIRED").then_some(())
    })
    .await;
    let a = s.api.stripe(&succeeded(&id, "pi_late", 400)).await;
    assert_eq!((a.status, a.body["result"].as_str()), (200, Some("refund_requested")));
    let a = s.api.stripe(&succeeded(&id, "pi_late", 400)).await;
    assert_eq!(a.body["result"], "duplicate");
    let o = s.get_order("lou", &id).await.body;
    assert_eq!((o["status"].as_str(), o["refunds_requested"].as_u64()), (Some("EXPIRED"), Some(1)));
    // The refund is owed through the provider the money came in by.
    assert_eq!(providers_of(&s, &id).await, vec![Provider::Stripe]);
    let order = order_of(&s, &id).await;
    let [refund] = order.refunds.as_slice() else { panic!("one refund record: {:?}", order.refunds) };
    assert_eq!((refund.provider, refund.amount, refund.payment_id.as_str()), (Provider::Stripe, 400, "pi_late"));

    // Issued through the Stripe adapter at the fake, twice at once and once more (a redelivered
    // queue message, the reconcile backstop): Stripe sees one refund.
    let app = s.local.app("payment-callback").unwrap().clone();
    let oid = OrderId::parse(&id).unwrap();
    let (x, y) = tokio::join!(
        holdfast::service::refunds::issue(&app, &oid, &refund.refund_id),
        holdfast::service::refunds::issue(&app, &oid, &refund.refund_id)
    );
    assert!(x.is_ok() && y.is_ok(), "{x:?} {y:?}");
    let _ = holdfast::service::refunds::issue(&app, &oid, &refund.refund_id).await.unwrap();
    let at_stripe: Vec<_> = s.local.stripe.refunds().into_iter().filter(|r| r["payment_intent"] == "pi_late").collect();
    assert_eq!(at_stripe.len(), 1, "exactly one refund at Stripe: {at_stripe:?}");
    assert_eq!(at_stripe[0]["amount"], 400);
    assert_eq!(at_stripe[0]["metadata"]["refund_id"].as_str(), Some(refund.refund_id.as_str()));
    assert_eq!(at_stripe[0]["metadata"]["order_id"].as_str(), Some(id.as_str()));

    // The fake's signed charge.refunded confirms it on the order.
    let confirmed = eventually("Stripe's webhook to confirm the refund", Duration::from_secs(20), || async {
        let o = order_of(&s, &id).await;
        o.refunds.iter().find(|r| r.status == RefundStatus::Confirmed).cloned()
    })
    .await;
    assert_eq!(confirmed.provider_refund_id.as_deref(), at_stripe[0]["id"].as_str());
    let d = s.local.stripe.deliveries();
    assert!(d.iter().any(|d| d.status == 200), "{d:?}");
    assert_eq!(s.local.stripe.refunds().len(), 1, "and no second refund");
    s.assert_invariants().await;
}

#[tokio::test]
async fn the_stripe_refunds_adapter_is_idempotent_at_the_fake_and_translates_its_answers() {
    let s = spawn().await;
    let fake = &s.local.stripe;
    let key = |k: &str| Arc::new(StaticKeys(vec![Secret::new(k)]));
    let stripe = StripeRefunds::new(&fake.url, key(LOCAL_API_KEY)).unwrap();
    let req = |refund_id: &str, pi: &str| RefundRequest {
        refund_id: refund_id.into(),
        payment_id: pi.into(),
        order_id: OrderId::parse("ord-refund-1").unwrap(),
        amount: 1500,
        currency: "EUR".into(),
    };

    // Twice with the same refund id: one refund at Stripe, the same answer.
    let first = stripe.refund(&req("rf-1", "pi_r1")).await.unwrap().unwrap();
    let again = stripe.refund(&req("rf-1", "pi_r1")).await.unwrap().unwrap();
    assert_eq!(first, again);
    assert!(first.provider_refund_id.starts_with("re_"));
    assert!(!first.succeeded, "the fake settles asynchronously (its webhook says when)");
    let list: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/v1/refunds?payment_intent=pi_r1", fake.url))
        .bearer_auth(LOCAL_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list}");
    assert_eq!(data[0]["amount"], 1500);
    assert_eq!(data[0]["metadata"], json!({"refund_id": "rf-1", "order_id": "ord-refund-1"}));

    // Stripe refusing (no such payment, wrong key) is the inner error: not retryable.
    let refused = stripe.refund(&req("rf-2", "bogus")).await.unwrap().unwrap_err();
    assert!(refused.contains("resource_missing"), "{refused}");
    let wrong_key = StripeRefunds::new(&fake.url, key("sk_test_wrong")).unwrap();
    let refused = wrong_key.refund(&req("rf-3", "pi_r3")).await.unwrap().unwrap_err();
    assert!(refused.contains("401"), "{refused}");

    // A 5xx or 429 is the outer error (retry); the retry with the same key refunds once.
    fake.fail_next(503, 1);
    assert!(stripe.refund(&req("rf-4", "pi_r4")).await.is_err());
    fake.fail_next(429, 1);
    assert!(stripe.refund(&req("rf-4", "pi_r4")).await.is_err());
    let ok = stripe.refund(&req("rf-4", "pi_r4")).await.unwrap().unwrap();
    let refunds = fake.refunds();
    assert_eq!(refunds.len(), 2, "rf-1 and rf-4, once each: {refunds:?}");
    assert_eq!(refunds[1]["id"].as_str(), Some(ok.provider_refund_id.as_str()));

    // Network failure: outer error.
    let nowhere = StripeRefunds::new("http://127.0.0.1:9", key(LOCAL_API_KEY)).unwrap();
    assert!(nowhere.refund(&req("rf-5", "pi_r5")).await.is_err());

    // The fake's signed charge.refunded reaches the stack and passes its signature check (what
    // the stack then answers is the refunds service's: its confirmation is the lead's work).
    let d = eventually("the fake to deliver charge.refunded", Duration::from_secs(20), || async {
        fake.deliveries().into_iter().find(|d| d.refund_id == first.provider_refund_id)
    })
    .await;
    assert!(d.status != 0 && d.status != 401, "the stack refused the fake's signature: {d:?}");
    assert_eq!(fake.refunds()[0]["status"], "succeeded");
    s.assert_invariants().await;
}
