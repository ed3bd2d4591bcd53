//! The generic provider adapter (`holdfast::adapters::provider::HttpProvider`) against this
//! simulated provider, over loopback HTTP.

use super::super::{SimProvider, OPEN_ROUTES};
use super::*;
use holdfast::adapters::provider::{HttpProvider, Unconfigured};
use holdfast::adapters::secrets::StaticKeys;
use holdfast::config::Secret;
use holdfast::domain::OrderId;
use holdfast::ports::{PaymentProvider, PaymentRequest, PaymentState, RefundRequest};
use std::sync::Arc;
use std::time::Duration;

const CREDENTIAL: &str = "test-provider-credential";
const PAYMENT_KEY: &str = "test-payment-webhook-key";

/// A started peer (its refund confirmations go nowhere) and an adapter with the credential.
async fn peer() -> (Arc<SimProvider>, String, HttpProvider) {
    let (sim, url) =
        SimProvider::start("http://127.0.0.1:9/payments/refunds".into(), PAYMENT_KEY.into(), 20).await.unwrap();
    sim.set_keys("test-refund-key", CREDENTIAL);
    (sim, url.clone(), adapter(&url))
}

fn adapter(url: &str) -> HttpProvider {
    HttpProvider::new(url, Duration::from_secs(5))
        .unwrap()
        .with_credential(Arc::new(StaticKeys(vec![Secret::new(CREDENTIAL)])))
}

fn request(order: &str, attempt: u32, amount: u64) -> PaymentRequest {
    PaymentRequest {
        attempt_key: format!("pay_{order}_{attempt}"),
        order_id: OrderId::parse(order).unwrap(),
        amount,
        currency: "EUR".into(),
    }
}

fn pay(outcome: Outcome, webhook: Webhook) -> PayBody {
    PayBody { outcome, webhook }
}

/// A loopback receiver of the peer's callbacks: (X-Signature, body) of each, and the URL.
async fn receiver() -> (Arc<std::sync::Mutex<Vec<(String, String)>>>, String) {
    use http_body_util::BodyExt;
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (listener, url) = crate::peers::bind().await.unwrap();
    let seen = got.clone();
    crate::peers::serve(
        listener,
        move |req: hyper::Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                let sig = req.headers().get("x-signature").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                lock(&seen).push((sig, String::from_utf8_lossy(&body).into_owned()));
                json(200, &serde_json::json!({"result": "applied"}))
            }
        },
        None,
    );
    (got, format!("{url}/payments/callback"))
}

#[tokio::test]
async fn a_payment_is_created_once_per_attempt_key() {
    let (sim, url, p) = peer().await;
    let first = p.create_payment(&request("o1", 1, 1500)).await.unwrap().unwrap();
    let again = p.create_payment(&request("o1", 1, 1500)).await.unwrap().unwrap();
    assert_eq!(first, again, "the same key answers the same payment");
    assert_eq!(first.redirect_url.as_deref(), Some(format!("{url}/pay/{}", first.payment_id).as_str()));
    assert_eq!(first.client_secret, None);
    let second = p.create_payment(&request("o1", 2, 1500)).await.unwrap().unwrap();
    assert_ne!(second.payment_id, first.payment_id, "a new attempt is a new payment");
    assert_eq!(sim.payments().len(), 2);
    let reused = p.create_payment(&request("o1", 1, 999)).await.unwrap();
    assert!(reused.unwrap_err().contains("422"), "the same key with another amount is refused");
    assert_eq!(sim.payments().len(), 2);
    let stored = sim.payment(&first.payment_id).unwrap();
    assert_eq!(
        (stored.order_id.as_deref(), stored.amount, stored.currency.as_str(), stored.attempt_key.as_deref()),
        (Some("o1"), 1500, "EUR", Some("pay_o1_1"))
    );

    // Holdfast's calls need the credential; the buyer's page and the controls do not.
    let anon = HttpProvider::new(&url, Duration::from_secs(5)).unwrap();
    assert!(anon.payment(&first.payment_id).await.is_err(), "401 without the credential");
    assert!(anon.create_payment(&request("o9", 1, 1)).await.unwrap().is_err(), "401 is a refusal");
    assert!(OPEN_ROUTES.iter().all(|r| !r.contains("/payments/")));
    let page = reqwest::Client::new()
        .post(format!("{url}/pay/{}", first.payment_id))
        .json(&serde_json::json!({"outcome": "succeed", "webhook": "drop"}))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);

    // refused and failing creates
    sim.payment_control(&PaymentControl { refuse_next: Some(1), fail_next: None, ..Default::default() });
    assert!(p.create_payment(&request("o2", 1, 5)).await.unwrap().is_err(), "422: inner");
    sim.payment_control(&PaymentControl { fail_next: Some(1), ..Default::default() });
    assert!(p.create_payment(&request("o2", 1, 5)).await.is_err(), "503: outer, retry");
    assert!(p.create_payment(&request("o2", 1, 5)).await.unwrap().is_ok());
}

#[tokio::test]
async fn statuses_map_over_the_wire_and_a_decision_shows_after_its_polls() {
    let (sim, _url, p) = peer().await;
    let c = p.create_payment(&request("o1", 1, 700)).await.unwrap().unwrap();
    let got = p.payment(&c.payment_id).await.unwrap().unwrap();
    assert_eq!(
        got,
        holdfast::ports::ProviderPayment {
            payment_id: c.payment_id.clone(),
            order_id: Some("o1".into()),
            amount: 700,
            currency: "EUR".into(),
            state: PaymentState::Open,
        }
    );
    sim.pay(&c.payment_id, &pay(Outcome::Process, Webhook::Drop)).unwrap();
    assert_eq!(p.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Processing);
    // PROCESSING for two more polls, then SUCCEEDED
    sim.decide(&c.payment_id, &Decide { status: WireStatus::Succeeded, webhook: Webhook::Drop, after_polls: 2 });
    assert_eq!(p.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Processing);
    assert_eq!(p.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Processing);
    assert_eq!(p.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Succeeded);

    let f = p.create_payment(&request("o2", 1, 300)).await.unwrap().unwrap();
    sim.pay(&f.payment_id, &pay(Outcome::Fail, Webhook::Drop)).unwrap();
    assert_eq!(p.payment(&f.payment_id).await.unwrap().unwrap().state, PaymentState::Failed);
    assert!(sim.pay(&f.payment_id, &pay(Outcome::Process, Webhook::Drop)).is_err(), "FAILED does not go back");
    sim.pay(&f.payment_id, &pay(Outcome::Succeed, Webhook::Drop)).unwrap();
    assert_eq!(p.payment(&f.payment_id).await.unwrap().unwrap().state, PaymentState::Succeeded, "a retry pays");
}

#[tokio::test]
async fn cancelling_a_succeeded_payment_answers_succeeded() {
    let (sim, url, p) = peer().await;
    let paid = p.create_payment(&request("o1", 1, 100)).await.unwrap().unwrap();
    sim.pay(&paid.payment_id, &pay(Outcome::Succeed, Webhook::Drop)).unwrap();
    let c = p.cancel_payment(&paid.payment_id).await.unwrap().unwrap();
    assert_eq!(c.state, PaymentState::Succeeded, "too late: the money is taken");
    assert_eq!(sim.payment(&paid.payment_id).unwrap().status, WireStatus::Succeeded);

    let open = p.create_payment(&request("o2", 1, 100)).await.unwrap().unwrap();
    assert_eq!(p.cancel_payment(&open.payment_id).await.unwrap().unwrap().state, PaymentState::Cancelled);
    assert_eq!(p.cancel_payment(&open.payment_id).await.unwrap().unwrap().state, PaymentState::Cancelled, "again");
    let late = reqwest::Client::new()
        .post(format!("{url}/pay/{}", open.payment_id))
        .json(&serde_json::json!({"outcome": "succeed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status().as_u16(), 409, "a cancelled payment cannot be paid");
    assert_eq!(p.payment(&open.payment_id).await.unwrap().unwrap().state, PaymentState::Cancelled);
}

#[tokio::test]
async fn unknown_ids_are_none_and_a_wrong_url_or_no_provider_is_an_error() {
    let (_sim, url, p) = peer().await;
    assert_eq!(p.payment("sim_pay_404").await.unwrap(), None);
    assert_eq!(p.cancel_payment("sim_pay_404").await.unwrap(), None);
    assert_eq!(p.refund_state("sim_re_404").await.unwrap(), None);
    assert_eq!(p.payment("a/b").await.unwrap(), None, "an id with a slash stays one path segment");
    let wrong = adapter(&format!("{url}/v2"));
    let e = wrong.payment("sim_pay_1").await.unwrap_err();
    assert!(e.to_string().contains("404"), "a 404 that is not the provider's not_found: {e}");
    let none = HttpProvider::new("", Duration::from_secs(1)).unwrap();
    assert!(none.payment("x").await.is_err());
    let u = Unconfigured("generic");
    assert!(u.create_payment(&request("o1", 1, 1)).await.is_err());
    assert!(u.payment("x").await.is_err());
    assert!(u.cancel_payment("x").await.is_err());
    assert!(u.refund_state("x").await.is_err());
    assert!(u.day_listing("2026-01-01").await.is_err());
    assert!(p.day_listing("2026-1-1").await.is_err(), "a malformed day is not sent");
}

#[tokio::test]
async fn the_day_listing_follows_every_page() {
    let (sim, _url, p) = peer().await;
    sim.payment_control(&PaymentControl { settlement_page_size: Some(2), ..Default::default() });
    let today = holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s()).to_string();
    let mut paid = Vec::new();
    for n in 1..=3 {
        let c = p.create_payment(&request(&format!("o{n}"), 1, 100 * n as u64)).await.unwrap().unwrap();
        sim.pay(&c.payment_id, &pay(Outcome::Succeed, Webhook::Drop)).unwrap();
        paid.push(c.payment_id);
    }
    let open = p.create_payment(&request("o4", 1, 50)).await.unwrap().unwrap();
    let stray =
        sim.inject_capture(&InjectCapture { order_id: None, amount: 42, currency: "eur".into(), day: None }).unwrap();
    sim.inject_capture(&InjectCapture {
        order_id: None,
        amount: 43,
        currency: "EUR".into(),
        day: Some("2020-02-02".into()),
    })
    .unwrap();
    let mut refunds = Vec::new();
    for (i, pid) in paid.iter().take(2).enumerate() {
        let r = RefundRequest {
            refund_id: format!("rf_{pid}"),
            payment_id: pid.clone(),
            order_id: OrderId::parse(&format!("o{}", i + 1)).unwrap(),
            amount: 10,
            currency: "EUR".into(),
        };
        refunds.push(p.refund(&r).await.unwrap().unwrap().provider_refund_id);
    }

    let day = p.day_listing(&today).await.unwrap();
    let mut caps: Vec<&str> = day.captures.iter().map(|c| c.payment_id.as_str()).collect();
    caps.sort();
    let mut want: Vec<&str> = paid.iter().map(String::as_str).chain([stray.payment_id.as_str()]).collect();
    want.sort();
    assert_eq!(caps, want, "three pages of two: every capture, the open payment not among them");
    assert!(!caps.contains(&open.payment_id.as_str()));
    assert!(day.captures.iter().all(|c| c.state == PaymentState::Succeeded));
    let stray_listed = day.captures.iter().find(|c| c.payment_id == stray.payment_id).unwrap();
    assert_eq!((stray_listed.order_id.as_deref(), stray_listed.currency.as_str()), (None, "EUR"));
    assert_eq!(day.refunds.iter().map(|r| r.provider_refund_id.clone()).collect::<Vec<_>>(), refunds);
    assert_eq!(day.refunds[0].refund_id.as_deref(), Some(format!("rf_{}", paid[0]).as_str()));
    assert_eq!(p.day_listing("2020-02-02").await.unwrap().captures.len(), 1);
    assert_eq!(p.day_listing("2020-02-03").await.unwrap(), Default::default());

    // refund states: pending until the peer confirms it, then done; a forgotten one is gone
    let st = p.refund_state(&refunds[0]).await.unwrap().unwrap();
    assert_eq!((st.payment_id.as_str(), st.amount, st.currency.as_str()), (paid[0].as_str(), 10, "EUR"));
    for _ in 0..100 {
        if p.refund_state(&refunds[0]).await.unwrap().unwrap().succeeded == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(p.refund_state(&refunds[0]).await.unwrap().unwrap().succeeded, Some(true));
    sim.forget(&Forget { payment_id: Some(paid[2].clone()), provider_refund_id: Some(refunds[1].clone()) });
    assert_eq!(p.refund_state(&refunds[1]).await.unwrap(), None);
    let after = p.day_listing(&today).await.unwrap();
    assert_eq!((after.captures.len(), after.refunds.len()), (3, 1));
}

#[tokio::test]
async fn answers_over_the_size_cap_are_refused() {
    let (sim, _url, p) = peer().await;
    let c = p.create_payment(&request("o1", 1, 100)).await.unwrap().unwrap();
    sim.payment_control(&PaymentControl { oversize_next: Some(1), ..Default::default() });
    let e = p.payment(&c.payment_id).await.unwrap_err();
    assert!(format!("{e:#}").contains("larger than"), "{e:#}");
    sim.payment_control(&PaymentControl { oversize_next: Some(1), ..Default::default() });
    assert!(p.day_listing("2026-01-01").await.is_err());
    assert_eq!(p.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Open, "then as before");
}

#[tokio::test]
async fn the_buyer_page_calls_back_signed_once_never_or_twice() {
    let (sim, _url, p) = peer().await;
    let (got, callback) = receiver().await;
    sim.set_callback_url(&callback);
    let wait_for = |n: usize| {
        let got = got.clone();
        async move {
            for _ in 0..200 {
                if lock(&got).len() >= n {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            lock(&got).clone()
        }
    };

    let a = p.create_payment(&request("o1", 1, 1234)).await.unwrap().unwrap();
    sim.pay(&a.payment_id, &pay(Outcome::Succeed, Webhook::Deliver)).unwrap();
    let seen = wait_for(1).await;
    assert_eq!(seen.len(), 1);
    let (sig, body) = &seen[0];
    holdfast::domain::signature::verify(PAYMENT_KEY.as_bytes(), sig, body.as_bytes(), holdfast::clock::now_s())
        .expect("signed with the payment webhook key");
    let cb: holdfast::api::payments::PaymentCallback = serde_json::from_str(body).expect("the stack's callback body");
    assert_eq!(
        (cb.payment_id.as_str(), cb.order_id.as_str(), cb.amount, cb.currency.as_str()),
        (a.payment_id.as_str(), "o1", 1234, "EUR")
    );
    assert_eq!(cb.status, holdfast::api::payments::PaymentStatus::Succeeded);

    let b = p.create_payment(&request("o2", 1, 5)).await.unwrap().unwrap();
    sim.pay(&b.payment_id, &pay(Outcome::Fail, Webhook::Twice)).unwrap();
    let seen = wait_for(3).await;
    assert_eq!(seen.len(), 3);
    assert!(seen[1..].iter().all(|(_, body)| body.contains("\"FAILED\"") && body.contains(&b.payment_id)));

    let c = p.create_payment(&request("o3", 1, 5)).await.unwrap().unwrap();
    sim.pay(&c.payment_id, &pay(Outcome::Succeed, Webhook::Drop)).unwrap();
    sim.pay(&b.payment_id, &pay(Outcome::Process, Webhook::Deliver)).unwrap_err();
    let d = p.create_payment(&request("o4", 1, 5)).await.unwrap().unwrap();
    sim.pay(&d.payment_id, &pay(Outcome::Process, Webhook::Deliver)).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(lock(&got).len(), 3, "dropped, and PROCESSING calls nobody");
    // the provider decides the processing one later and calls back then
    sim.decide(&d.payment_id, &Decide { status: WireStatus::Succeeded, webhook: Webhook::Deliver, after_polls: 0 });
    let seen = wait_for(4).await;
    assert!(seen[3].1.contains(&d.payment_id) && seen[3].1.contains("SUCCEEDED"));
    assert!(sim.callbacks().iter().all(|c| c.http_status == 200));
}
