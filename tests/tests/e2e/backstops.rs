//! The backstops (docs/review-findings.md, third reviews), end to end over HTTP on the local
//! stack: no code shown while a refund waits for review, a processing payment never recorded
//! cancelled, an admin's cancel closing the payment at the provider, a committed checkout's
//! replay answered before any refusal, and a restock the event flow lost finished by the sweep.
//! Invariants are clean at the end of each.

use super::common::*;
use holdfast_local::peers::stripe::PaymentEvents;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);

async fn start(s: &Stack, user: &str, id: &str, body: Option<Value>) -> Answer {
    let t = s.user(user);
    s.call("POST", &format!("/orders/{id}/payments"), Some(&t), &[], body.map(|b| b.to_string())).await
}

/// The buyer on the simulated provider's page; its HTTP status and answer.
async fn pay_page(redirect_url: &str, outcome: &str, webhook: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(redirect_url)
        .json(&json!({"outcome": outcome, "webhook": webhook}))
        .send()
        .await
        .expect("the provider's page answers");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn one(sku: &str) -> Value {
    json!([{"sku": sku, "quantity": 1}])
}

#[tokio::test]
async fn a_refund_held_for_its_amount_shows_no_code_is_listed_and_its_approval_voids_the_codes() {
    let s = spawn_with(&[("HOLDFAST_REFUND_REVIEW_ABOVE", "100")]).await;
    let spec =
        json!({"name": "gift", "price": 500, "currency": "EUR", "shards": 1, "model": {"management": "CODE_POOL"}});
    assert_eq!(s.put_sku("G1", spec).await.status, 201);
    let up = s.post("/admin/skus/G1/codes", &s.admin, json!({"batch_id": "b1", "codes": ["CODE-A", "CODE-B"]})).await;
    assert!(up.status < 300, "{}", up.body);
    let id = s.order_id("u1", "k1", one("G1")).await;
    let a = start(&s, "u1", &id, None).await;
    assert_eq!(pay_page(a.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await.0, 200);
    s.order_reaches("u1", &id, "PAID").await;
    s.lock_reaches(&id, "SOLD").await;
    let r = s.post(&format!("/orders/{id}/refund"), &s.user("u1"), json!({"reason": "changed my mind"})).await;
    assert_eq!((r.status, r.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", r.body);
    assert_eq!(r.body["refund_review"]["because"], "amount_above_threshold");
    // nothing shown while it waits
    problem(&s.codes_of("u1", &id).await, 409, "refund_pending");
    // listed for the admins, oldest first, with the request it is
    let list = s.get("/admin/refund-reviews", Some(&s.admin)).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let held = &list.body["reviews"][0];
    assert_eq!(held["order_id"], id.as_str(), "{}", list.body);
    assert_eq!(held["because"], "amount_above_threshold");
    let requested_at = held["requested_at"].as_str().expect("requested_at").to_owned();
    assert_eq!(s.get("/admin/refund-reviews", Some(&s.user("u1"))).await.status, 403, "admins only");
    // a decision naming another request is refused and changes nothing
    let decide = format!("/admin/orders/{id}/refund-decision");
    let stale = s
        .post(&decide, &s.admin, json!({"approve": true, "reason": "ok", "requested_at": "2020-01-01T00:00:00.000Z"}))
        .await;
    problem(&stale, 409, "stale_decision");
    let bad = s.post(&decide, &s.admin, json!({"approve": true, "reason": "ok", "requested_at": 5})).await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert_eq!(s.get_order("u1", &id).await.body["status"], "REFUND_REQUESTED");
    let ok = s.post(&decide, &s.admin, json!({"approve": true, "reason": "ok", "requested_at": requested_at})).await;
    assert_eq!((ok.status, ok.body["status"].as_str()), (200, Some("REFUNDING")), "{}", ok.body);
    // the approval withdrew codes nobody saw: never shown
    problem(&s.codes_of("u1", &id).await, 409, "codes_voided");
    assert_eq!(s.admin_view(&id).await["locks"][0]["code_fate"], "WITHDRAWN");
    s.order_reaches("u1", &id, "REFUNDED").await;
    eventually("the review to leave the list", WAIT, || async {
        let l = s.get("/admin/refund-reviews", Some(&s.admin)).await;
        (l.status == 200 && l.body["reviews"].as_array().is_some_and(|r| r.is_empty())).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_stripe_debit_processing_past_its_deadline_is_never_recorded_cancelled_and_its_late_capture_is_refunded() {
    let s = spawn_with(&[
        ("HOLDFAST_PAYMENT_TTL_SECONDS", "4"),
        ("HOLDFAST_PAYMENT_QUERY_SECONDS", "1"),
        ("HOLDFAST_PAYMENT_GRACE_SECONDS", "2"),
        ("HOLDFAST_STALE_LOCK_SECONDS", "1"),
    ])
    .await;
    s.sku("SPR", 2500, 1, 1, None).await;
    let id = s.order_id("u1", "k1", one("SPR")).await;
    let a = start(&s, "u1", &id, Some(json!({"provider": "stripe"}))).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let pi = a.body["payment_id"].as_str().unwrap().to_owned();
    s.local.stripe.set_payment_events(PaymentEvents::Drop);
    let (st, intent) = s.local.stripe.confirm(&pi, "pm_fake_processing");
    assert_eq!((st, intent["status"].as_str()), (200, Some("processing")), "{intent}");
    // while it processes, neither a cancel nor another payment
    problem(&s.cancel("u1", &id).await, 409, "payment_processing");
    problem(&start(&s, "u1", &id, Some(json!({"provider": "generic"}))).await, 409, "payment_processing");
    // past the deadline and the grace the order closes, its attempt left open (asked again)
    let o = s.order_reaches("u1", &id, "EXPIRED").await;
    assert_eq!(o["payments"][0]["state"], "OPEN", "never recorded cancelled: {o}");
    s.lock_reaches(&id, "RELEASED").await;
    assert_eq!(s.local.stripe.intent(&pi).unwrap()["status"], "processing");
    // the debit succeeds days later; its webhook is lost
    let (st, _) = s.local.stripe.settle_intent(&pi, true, 0);
    assert_eq!(st, 200);
    advance_clock(Duration::from_secs(2));
    s.reconcile().await;
    // the capture is recorded and refunded at Stripe: never kept on an expired order
    let o = eventually("the late capture to be recorded and refunded", WAIT, || async {
        let o = s.get_order("u1", &id).await.body;
        (o["refunds_requested"] == 1).then_some(o)
    })
    .await;
    assert_eq!(o["status"], "EXPIRED");
    assert_eq!(o["payments"][0]["state"], "SUCCEEDED", "{o}");
    eventually("the refund at Stripe", WAIT, || async {
        s.local.stripe.refunds().iter().any(|r| r["payment_intent"] == pi.as_str()).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_admins_cancel_of_a_paying_order_closes_its_payment_at_the_provider() {
    let s = spawn().await;
    s.sku("ACX", 500, 2, 1, None).await;
    let id = s.order_id("u1", "k1", one("ACX")).await;
    let a = start(&s, "u1", &id, None).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let c = s.post(&format!("/admin/orders/{id}/cancel"), &s.admin, json!({"reason": "fraud check"})).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("CANCELLED")), "{}", c.body);
    assert_eq!(c.body["payments"][0]["state"], "CANCELLED", "{}", c.body);
    let at = s.local.provider.payment(a.body["payment_id"].as_str().unwrap()).unwrap();
    assert_eq!(at.status, holdfast::adapters::provider::WireStatus::Cancelled);
    // the provider's page refuses the payment afterwards
    let (st, _) = pay_page(a.body["redirect_url"].as_str().unwrap(), "succeed", "deliver").await;
    assert!(!(200..300).contains(&st), "the page took money after the cancel: {st}");
    s.lock_reaches(&id, "RELEASED").await;
    let o = s.get_order("u1", &id).await.body;
    assert_eq!((o["status"].as_str(), o["refunds_requested"].as_i64()), (Some("CANCELLED"), Some(0)), "{o}");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_committed_checkouts_replay_is_answered_its_order_by_a_closed_switch_and_an_empty_admission_bucket() {
    let s = spawn().await;
    s.sku("RPL", 500, 50, 1, None).await;
    let first = s.order("u1", "k1", one("RPL")).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let switch = |mode: &str| json!({"mode": mode, "reason": format!("test: {mode}")}).to_string();
    assert_eq!(s.call("PUT", "/admin/sales-switch", Some(&s.admin), &[], Some(switch("CLOSED"))).await.status, 200);
    // each function keeps the switch up to HOLDFAST_SWITCH_CACHE_MS: wait for it to bite
    let mut n = 0;
    eventually("the switch to bite", Duration::from_secs(5), || {
        n += 1;
        let key = format!("closed-{n}");
        let s = &s;
        async move { (s.order("u9", &key, one("RPL")).await.status == 503).then_some(()) }
    })
    .await;
    let again = s.order("u1", "k1", one("RPL")).await;
    assert_eq!((again.status, &again.body["order_id"]), (201, &first.body["order_id"]), "{}", again.body);
    assert_eq!(again.headers.get("idempotent-replayed").and_then(|v| v.to_str().ok()), Some("true"));
    problem(&s.order("u2", "k1", one("RPL")).await, 503, "sales_closed");
    // the same key with another body is no replay: the switch answers it
    problem(&s.order("u1", "k1", json!([{"sku": "RPL", "quantity": 2}])).await, 503, "sales_closed");
    assert_eq!(s.call("PUT", "/admin/sales-switch", Some(&s.admin), &[], Some(switch("OPEN"))).await.status, 200);
    // an admission rate of 1/s: a burst empties the bucket, the replay is still answered
    let spec = json!({"name": "rated", "price": 100, "currency": "EUR", "shards": 1, "admission_rate": 1});
    assert_eq!(s.put_sku("RATED", spec).await.status, 201);
    s.stock("RATED", "init", 100).await;
    // (the switch opens within its cache time; the same key is safe to send again)
    let committed = eventually("the switch to open", Duration::from_secs(5), || async {
        let a = s.order("r0", "k", one("RATED")).await;
        (a.status == 201).then_some(a)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let burst = futures::future::join_all((1..=8).map(|i| {
        let s = &s;
        async move { s.order(&format!("r{i}"), "k", one("RATED")).await }
    }));
    let (answers, replay) = tokio::join!(burst, s.order("r0", "k", one("RATED")));
    assert!(answers.iter().any(|a| a.status == 429 && a.body["code"] == "rate_limited"), "the bucket refused some");
    assert_eq!((replay.status, &replay.body["order_id"]), (201, &committed.body["order_id"]), "{}", replay.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_restock_the_event_flow_lost_is_finished_by_the_sweep_without_a_redrive() {
    let s = spawn_with(&[("HOLDFAST_STALE_LOCK_SECONDS", "1"), ("HOLDFAST_FAULTS", "stock-events.drop")]).await;
    s.sku("RST", 300, 5, 1, None).await;
    let id = s.order_id("u1", "k1", one("RST")).await;
    let pay = s.pay(&id, &format!("pay-{id}"), 300, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.order_reaches("u1", &id, "PAID").await;
    // the confirm was dropped: the sweep confirms the stale lock
    advance_clock(Duration::from_millis(1500));
    s.reconcile().await;
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("SOLD"));
    let r = s.post(&format!("/orders/{id}/refund"), &s.user("u1"), json!({"reason": "changed my mind"})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    s.order_reaches("u1", &id, "REFUNDED").await;
    // the restock event is dropped too: the lock stays SOLD until the sweep's stock-to-settle arm
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("SOLD"));
    advance_clock(Duration::from_millis(1500));
    let report = s.reconcile().await;
    assert_eq!(report["stock_settled"], 1, "{report}");
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("RESTOCKED"));
    assert_eq!(s.exact("RST").await, (5, 0, 0), "back on sale exactly once");
    advance_clock(Duration::from_millis(1500));
    let again = s.reconcile().await;
    assert_eq!(again["stock_settled"], 0, "nothing repaired twice: {again}");
    assert!(s.admin_view(&id).await["order"].is_object());
    s.assert_invariants().await;
}
