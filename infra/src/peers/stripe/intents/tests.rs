//! The Stripe adapter (`holdfast::adapters::stripe::Stripe`) against this fake, over loopback
//! HTTP, and the fake's events against what the stack's webhook reads.

use super::super::{FakeStripe, LOCAL_API_KEY};
use super::*;
use holdfast::adapters::secrets::StaticKeys;
use holdfast::adapters::stripe::Stripe;
use holdfast::config::Secret;
use holdfast::domain::OrderId;
use holdfast::ports::{PaymentProvider, PaymentRequest, PaymentState, RefundRequest};
use std::sync::Arc;
use std::time::Duration;

const WHSEC: &str = "whsec_test_intents";

async fn fake() -> (FakeStripe, Stripe, tokio::sync::watch::Sender<bool>) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let (fake, _task) = FakeStripe::start(LOCAL_API_KEY, WHSEC, rx).await.unwrap();
    fake.set_webhook_delay(Duration::from_millis(10));
    let stripe = Stripe::new(&fake.url, key(LOCAL_API_KEY)).unwrap();
    (fake, stripe, tx)
}

fn key(k: &str) -> Arc<StaticKeys> {
    Arc::new(StaticKeys(vec![Secret::new(k)]))
}

fn request(order: &str, attempt: u32, amount: u64) -> PaymentRequest {
    PaymentRequest {
        attempt_key: format!("pay_{order}_{attempt}"),
        order_id: OrderId::parse(order).unwrap(),
        amount,
        currency: "EUR".into(),
    }
}

#[tokio::test]
async fn a_payment_intent_is_created_once_per_attempt_key() {
    let (fake, stripe, _stop) = fake().await;
    let first = stripe.create_payment(&request("o1", 1, 1500)).await.unwrap().unwrap();
    let again = stripe.create_payment(&request("o1", 1, 1500)).await.unwrap().unwrap();
    assert_eq!(first, again, "Stripe replays the first answer for the same key");
    assert!(first.payment_id.starts_with("pi_"));
    assert!(first.client_secret.as_deref().is_some_and(|s| s.starts_with(&format!("{}_secret_", first.payment_id))));
    assert_eq!(first.redirect_url, None);
    assert_eq!(fake.intents().len(), 1);
    let pi = fake.intent(&first.payment_id).unwrap();
    assert_eq!(pi["amount"], 1500);
    assert_eq!(pi["currency"], "eur", "lower case, as Stripe takes it");
    assert_eq!(pi["metadata"], json!({"order_id": "o1", "attempt_key": "pay_o1_1"}));
    assert_eq!(pi["automatic_payment_methods"]["enabled"], true);
    assert_eq!(pi["status"], "requires_payment_method");

    let reused = stripe.create_payment(&request("o1", 1, 999)).await.unwrap().unwrap_err();
    assert!(reused.contains("idempotency_error"), "{reused}");
    let second = stripe.create_payment(&request("o1", 2, 1500)).await.unwrap().unwrap();
    assert_ne!(second.payment_id, first.payment_id);
    assert_eq!(fake.intents().len(), 2);
    let zero = stripe.create_payment(&request("o2", 1, 0)).await.unwrap().unwrap_err();
    assert!(zero.contains("parameter_invalid_integer"), "{zero}");
    let wrong_key = Stripe::new(&fake.url, key("sk_test_wrong")).unwrap();
    assert!(wrong_key.create_payment(&request("o3", 1, 1)).await.unwrap().unwrap_err().contains("401"));
}

#[tokio::test]
async fn intent_statuses_map_through_the_adapter() {
    let (fake, stripe, _stop) = fake().await;
    let c = stripe.create_payment(&request("o1", 1, 2000)).await.unwrap().unwrap();
    let p = stripe.payment(&c.payment_id).await.unwrap().unwrap();
    assert_eq!(
        p,
        holdfast::ports::ProviderPayment {
            payment_id: c.payment_id.clone(),
            order_id: Some("o1".into()),
            amount: 2000,
            currency: "EUR".into(),
            state: PaymentState::Open,
        }
    );
    // declined: 402 card_error carrying the intent, back to requires_payment_method
    let (status, err) = fake.confirm(&c.payment_id, "pm_card_chargeDeclined");
    assert_eq!(status, 402);
    assert_eq!(err["error"]["code"], "card_declined");
    assert_eq!(err["error"]["payment_intent"]["status"], "requires_payment_method");
    assert_eq!(stripe.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Open);
    // processing, then succeeded after two more retrievals
    assert_eq!(fake.confirm(&c.payment_id, "pm_fake_processing").0, 200);
    assert_eq!(fake.settle_intent(&c.payment_id, true, 2).0, 200);
    assert_eq!(stripe.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Processing);
    assert_eq!(stripe.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Processing);
    let paid = stripe.payment(&c.payment_id).await.unwrap().unwrap();
    assert_eq!((paid.state, paid.amount), (PaymentState::Succeeded, 2000));
    let charges = fake.charges();
    assert_eq!(charges.len(), 2, "the declined attempt's charge and the captured one");
    assert_eq!(charges[1]["metadata"]["order_id"], "o1", "the intent's metadata copied to its charge");

    // the buyer confirms through the API, as Stripe.js would
    let d = stripe.create_payment(&request("o2", 1, 300)).await.unwrap().unwrap();
    let confirmed: Value = reqwest::Client::new()
        .post(format!("{}/v1/payment_intents/{}/confirm", fake.url, d.payment_id))
        .bearer_auth(LOCAL_API_KEY)
        .form(&[("payment_method", "pm_card_visa")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(confirmed["status"], "succeeded");
    assert_eq!(confirmed["amount_received"], 300);
    assert_eq!(stripe.payment(&d.payment_id).await.unwrap().unwrap().state, PaymentState::Succeeded);
}

#[tokio::test]
async fn cancelling_a_succeeded_intent_answers_succeeded() {
    let (fake, stripe, _stop) = fake().await;
    let paid = stripe.create_payment(&request("o1", 1, 100)).await.unwrap().unwrap();
    fake.confirm(&paid.payment_id, "pm_card_visa");
    let c = stripe.cancel_payment(&paid.payment_id).await.unwrap().unwrap();
    assert_eq!(c.state, PaymentState::Succeeded, "400 payment_intent_unexpected_state, then read as it stands");
    assert_eq!(fake.intent(&paid.payment_id).unwrap()["status"], "succeeded");

    let open = stripe.create_payment(&request("o2", 1, 100)).await.unwrap().unwrap();
    assert_eq!(stripe.cancel_payment(&open.payment_id).await.unwrap().unwrap().state, PaymentState::Cancelled);
    assert_eq!(fake.intent(&open.payment_id).unwrap()["cancellation_reason"], "abandoned");
    assert_eq!(stripe.cancel_payment(&open.payment_id).await.unwrap().unwrap().state, PaymentState::Cancelled, "again");
    assert_eq!(fake.confirm(&open.payment_id, "pm_card_visa").0, 400, "a canceled intent cannot be paid");

    let busy = stripe.create_payment(&request("o3", 1, 100)).await.unwrap().unwrap();
    fake.confirm(&busy.payment_id, "pm_fake_processing");
    assert_eq!(
        stripe.cancel_payment(&busy.payment_id).await.unwrap().unwrap().state,
        PaymentState::Processing,
        "a processing intent is not cancelled: answered as it stands"
    );
}

#[tokio::test]
async fn unknown_ids_are_none_and_other_failures_are_errors() {
    let (_fake_stripe, stripe, _stop) = fake().await;
    assert_eq!(stripe.payment("pi_nope").await.unwrap(), None);
    assert_eq!(stripe.cancel_payment("pi_nope").await.unwrap(), None);
    assert_eq!(stripe.refund_state("re_nope").await.unwrap(), None);
    let wrong_key = Stripe::new(&_fake_stripe.url, key("sk_test_wrong")).unwrap();
    assert!(wrong_key.payment("pi_nope").await.is_err(), "401 is not 'no such payment'");
    let wrong_url = Stripe::new(format!("{}/x", _fake_stripe.url), key(LOCAL_API_KEY)).unwrap();
    assert!(wrong_url.payment("pi_nope").await.is_err(), "an unrouted 404 is not 'no such payment'");
    let nowhere = Stripe::new("http://127.0.0.1:9", key(LOCAL_API_KEY)).unwrap();
    assert!(nowhere.payment("pi_1").await.is_err());
    assert!(nowhere.day_listing("2026-01-01").await.is_err());
}

#[tokio::test]
async fn the_day_listing_follows_every_page_of_captures_and_refunds() {
    let (fake, stripe, _stop) = fake().await;
    fake.set_max_page(Some(2));
    let today = holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s()).to_string();
    let mut paid = Vec::new();
    for n in 1..=3u64 {
        let c = stripe.create_payment(&request(&format!("o{n}"), 1, 100 * n)).await.unwrap().unwrap();
        assert_eq!(fake.confirm(&c.payment_id, "pm_card_visa").0, 200);
        paid.push(c.payment_id);
    }
    let declined = stripe.create_payment(&request("o4", 1, 50)).await.unwrap().unwrap();
    fake.confirm(&declined.payment_id, "pm_card_chargeDeclined");
    let mut refunds = Vec::new();
    for (i, pid) in paid.iter().enumerate() {
        let r = RefundRequest {
            refund_id: format!("rf_{pid}"),
            payment_id: pid.clone(),
            order_id: OrderId::parse(&format!("o{}", i + 1)).unwrap(),
            amount: 10,
            currency: "EUR".into(),
        };
        refunds.push(stripe.refund(&r).await.unwrap().unwrap().provider_refund_id);
    }

    let day = stripe.day_listing(&today).await.unwrap();
    let mut caps: Vec<(String, Option<String>, u64)> =
        day.captures.iter().map(|c| (c.payment_id.clone(), c.order_id.clone(), c.amount)).collect();
    caps.sort();
    let mut want: Vec<(String, Option<String>, u64)> =
        paid.iter().enumerate().map(|(i, p)| (p.clone(), Some(format!("o{}", i + 1)), 100 * (i as u64 + 1))).collect();
    want.sort();
    assert_eq!(caps, want, "three captures over pages of two transactions (refunds' transactions among them)");
    assert!(day.captures.iter().all(|c| c.currency == "EUR" && c.state == PaymentState::Succeeded));
    let mut listed: Vec<String> = day.refunds.iter().map(|r| r.provider_refund_id.clone()).collect();
    listed.sort();
    let mut made = refunds.clone();
    made.sort();
    assert_eq!(listed, made, "three refunds over pages of two");
    assert!(day.refunds.iter().all(|r| r.refund_id.as_deref() == Some(&format!("rf_{}", r.payment_id)[..])));
    assert_eq!(stripe.day_listing("2020-01-01").await.unwrap(), Default::default());

    // a refund's state: pending, then succeeded once the fake settles it
    let first = stripe.refund_state(&refunds[0]).await.unwrap().unwrap();
    assert_eq!((first.payment_id.as_str(), first.amount, first.currency.as_str()), (paid[0].as_str(), 10, "EUR"));
    for _ in 0..100 {
        if stripe.refund_state(&refunds[0]).await.unwrap().unwrap().succeeded == Some(true) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stripe.refund_state(&refunds[0]).await.unwrap().unwrap().succeeded, Some(true));

    // the list shape at the fake, as Stripe's
    let page: Value = reqwest::Client::new()
        .get(format!("{}/v1/payment_intents?limit=1", fake.url))
        .bearer_auth(LOCAL_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (page["object"].as_str(), page["url"].as_str(), page["has_more"].as_bool()),
        (Some("list"), Some("/v1/payment_intents"), Some(true))
    );
    assert_eq!(page["data"][0]["id"], declined.payment_id.as_str(), "newest first");
}

#[tokio::test]
async fn answers_over_the_size_cap_are_refused() {
    let (fake, stripe, _stop) = fake().await;
    let c = stripe.create_payment(&request("o1", 1, 100)).await.unwrap().unwrap();
    fake.oversize_next(1, 128 * 1024);
    let e = stripe.payment(&c.payment_id).await.unwrap_err();
    assert!(format!("{e:#}").contains("larger than"), "{e:#}");
    // a list page may be larger than one object, but not past its own cap
    fake.oversize_next(1, 128 * 1024);
    assert!(stripe.day_listing("2026-01-01").await.is_ok(), "128 KiB is a normal list page");
    fake.oversize_next(1, holdfast::adapters::stripe::LIST_ANSWER_BYTES + 1);
    assert!(stripe.day_listing("2026-01-01").await.is_err());
    assert_eq!(stripe.payment(&c.payment_id).await.unwrap().unwrap().state, PaymentState::Open, "then as before");
}

#[tokio::test]
async fn payment_events_are_signed_and_read_by_the_stack_as_notices() {
    use http_body_util::BodyExt;
    let (fake, stripe, _stop) = fake().await;
    let got = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let (listener, url) = crate::peers::bind().await.unwrap();
    let seen = got.clone();
    crate::peers::serve(
        listener,
        move |req: hyper::Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                let sig = req.headers().get("stripe-signature").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                lock(&seen).push((sig, String::from_utf8_lossy(&body).into_owned()));
                crate::peers::json(200, &json!({"result": "applied"}))
            }
        },
        None,
    );
    fake.set_webhook_target(&format!("{url}/payments/stripe"));
    let wait_for = |n: usize| {
        let got = got.clone();
        async move {
            for _ in 0..300 {
                if lock(&got).len() >= n {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            lock(&got).clone()
        }
    };
    let events = |all: &[(String, String)], kind: &str| -> Vec<Value> {
        all.iter().map(|(_, b)| serde_json::from_str::<Value>(b).unwrap()).filter(|e| e["type"] == kind).collect()
    };

    let c = stripe.create_payment(&request("o1", 1, 4200)).await.unwrap().unwrap();
    fake.confirm(&c.payment_id, "pm_card_chargeDeclined");
    fake.confirm(&c.payment_id, "pm_card_visa");
    let all = wait_for(2).await;
    for (sig, body) in &all {
        holdfast::domain::stripe::verify(WHSEC.as_bytes(), sig, body.as_bytes(), holdfast::clock::now_s())
            .expect("signed as Stripe signs");
    }
    let ok = events(&all, "payment_intent.succeeded");
    assert_eq!(ok.len(), 1, "{all:?}");
    let e: holdfast::api::stripe::EventOf<holdfast::api::stripe::PaymentIntent> =
        serde_json::from_value(ok[0].clone()).unwrap();
    let n = holdfast::handlers::stripe_webhook::notice(&e, true).expect("a Holdfast order");
    assert_eq!(
        (n.payment_id.as_str(), n.order_id.as_str(), n.amount, n.currency.as_str(), n.succeeded),
        (c.payment_id.as_str(), "o1", 4200, "EUR", true)
    );
    let failed = events(&all, "payment_intent.payment_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["data"]["object"]["last_payment_error"]["code"], "card_declined");

    // dropped, and twice (the same event id)
    fake.set_payment_events(PaymentEvents::Drop);
    let d = stripe.create_payment(&request("o2", 1, 5)).await.unwrap().unwrap();
    fake.confirm(&d.payment_id, "pm_card_visa");
    fake.set_payment_events(PaymentEvents::Twice);
    let t = stripe.create_payment(&request("o3", 1, 5)).await.unwrap().unwrap();
    fake.confirm(&t.payment_id, "pm_card_visa");
    let all = wait_for(4).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let all = if all.len() > 4 { lock(&got).clone() } else { all };
    let ok = events(&all, "payment_intent.succeeded");
    assert!(ok.iter().all(|e| e["data"]["object"]["id"] != d.payment_id.as_str()), "dropped");
    let twice: Vec<&Value> = ok.iter().filter(|e| e["data"]["object"]["id"] == t.payment_id.as_str()).collect();
    assert_eq!(twice.len(), 2);
    assert_eq!(twice[0]["id"], twice[1]["id"], "a re-delivery has the same event id");
    assert!(fake.deliveries().iter().any(|x| x.kind == "payment_intent.succeeded" && x.object_id == t.payment_id));
}
