//! A fake Stripe for the local stack (docs/after-sale.md, "Stripe"): a real HTTP server on a
//! local port speaking the shapes Stripe documents, so the refunds adapter and the webhook are
//! exercised over the wire.
//!
//! - `POST /v1/refunds` (form body, `Authorization: Bearer <key>`, `Idempotency-Key`): answers a
//!   refund object (`status: pending`). The same key with the same parameters answers the same
//!   object and records nothing more (`Idempotent-Replayed: true`); the same key with other
//!   parameters is Stripe's 400 `idempotency_error`. A `payment_intent` not starting `pi_` is
//!   Stripe's 400 `resource_missing`; a wrong key is 401.
//! - After `webhook_delay` the refund settles and the fake POSTs a `charge.refunded` event,
//!   signed with the endpoint secret the way Stripe signs (`Stripe-Signature: t=…,v1=…`), to
//!   the stack's `/payments/stripe`, retrying a non-2xx answer a few times like Stripe does.
//!   The charge's `metadata.order_id` is the refund's (the fake knows no charges: real Stripe
//!   copies the PaymentIntent's metadata to its charge, and Holdfast sets the same order id on both).
//! - `GET /v1/refunds[?payment_intent=pi_…]`, `GET /v1/refunds/{id}`: Stripe lists (newest first,
//!   `limit`, `starting_after`, `created[…]`); PaymentIntents (create, retrieve, cancel, confirm as
//!   the buyer), charges and balance transactions: [`intents`].
//! - Control (not Stripe's): `POST /_fake/fail {"status": 500, "times": 2}` makes the next
//!   refund requests fail; `POST /_fake/config {"webhook_delay_ms": 100, "payment_events":
//!   "deliver"|"drop"|"twice", "max_page": 2}`; `GET /_fake/deliveries`.
//!   The same knobs are methods on [`FakeStripe`] for in-process tests.

use super::lock;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod intents;
pub use intents::PaymentEvents;

/// The key the local stack gives its functions as `STRIPE_API_KEY`.
pub const LOCAL_API_KEY: &str = "sk_test_holdfast_local";
/// Default time between a refund and its `charge.refunded` event.
pub const DEFAULT_WEBHOOK_DELAY: Duration = Duration::from_millis(200);
/// Deliveries of one event (Stripe retries for three days; the fake for a few seconds).
const DELIVERY_ATTEMPTS: u32 = 5;

/// One webhook delivery attempt the fake made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Delivery {
    pub event_id: String,
    /// The event type (`charge.refunded`, `payment_intent.succeeded`, …).
    pub kind: String,
    /// The event's object: the charge, or the PaymentIntent.
    pub object_id: String,
    /// The refund a `charge.refunded` is about ("" for other events).
    pub refund_id: String,
    /// Which attempt this was (1 = first).
    pub attempts: u32,
    /// The last HTTP status (0: no answer).
    pub status: u16,
}

#[derive(Default)]
struct Inner {
    /// Idempotency key → (the parameters, the refund's index in `refunds`).
    by_key: HashMap<String, (Vec<(String, String)>, usize)>,
    refunds: Vec<Value>,
    /// Injected failure: status and how many more requests get it.
    fail: Option<(u16, u32)>,
    /// `POST /v1/refunds` requests received (failed ones included).
    requests: u64,
    deliveries: Vec<Delivery>,
    events: u64,
    /// PaymentIntents, charges, balance transactions (`intents.rs`).
    pay: intents::Intents,
}

struct State {
    api_key: String,
    webhook_secret: String,
    webhook_target: Mutex<Option<String>>,
    delay: Mutex<Duration>,
    inner: Mutex<Inner>,
    http: reqwest::Client,
}

/// The running fake; dropping it does not stop it (the stack's shutdown does).
#[derive(Clone)]
pub struct FakeStripe {
    /// `http://127.0.0.1:<port>`: the functions' `STRIPE_API_BASE`.
    pub url: String,
    state: Arc<State>,
}

/// A Stripe event envelope as Stripe delivers it, around `object`.
pub fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": holdfast::clock::now_s(),
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": kind,
        "data": {"object": object},
    })
}

/// A PaymentIntent as Stripe sends it in `payment_intent.*` events (with a few of the fields
/// Holdfast does not read, as Stripe's have many).
pub fn payment_intent(id: &str, order_id: Option<&str>, amount: u64, currency: &str, succeeded: bool) -> Value {
    let metadata = match order_id {
        Some(o) => json!({"order_id": o}),
        None => json!({}),
    };
    json!({
        "id": id,
        "object": "payment_intent",
        "amount": amount,
        "amount_capturable": 0,
        "amount_received": if succeeded { amount } else { 0 },
        "capture_method": "automatic_async",
        "client_secret": format!("{id}_secret_x"),
        "created": holdfast::clock::now_s(),
        "currency": currency,
        "latest_charge": format!("ch_{}", id.trim_start_matches("pi_")),
        "livemode": false,
        "metadata": metadata,
        "payment_method_types": ["card"],
        "status": if succeeded { "succeeded" } else { "requires_payment_method" },
        "last_payment_error": if succeeded { Value::Null } else { json!({"code": "card_declined", "type": "card_error"}) },
    })
}

/// The `Stripe-Signature` header Stripe sends for `body` at `t` (one v1 per secret, in order).
pub fn signature(secrets: &[&str], t: i64, body: &str) -> String {
    let mut h = format!("t={t}");
    for s in secrets {
        h.push_str(",v1=");
        h.push_str(&holdfast::domain::stripe::v1(s.as_bytes(), t, body.as_bytes()));
    }
    h
}

fn stripe_error(status: u16, kind: &str, code: Option<&str>, message: &str) -> (u16, Value) {
    let mut e = json!({"type": kind, "message": message});
    if let Some(c) = code {
        e["code"] = json!(c);
    }
    (status, json!({ "error": e }))
}

impl FakeStripe {
    /// Starts the fake on a free local port; it lives until `shutdown` fires.
    pub async fn start(
        api_key: &str,
        webhook_secret: &str,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> anyhow::Result<(FakeStripe, tokio::task::JoinHandle<()>)> {
        let (listener, url) = super::bind().await?;
        let state = Arc::new(State {
            api_key: api_key.to_owned(),
            webhook_secret: webhook_secret.to_owned(),
            webhook_target: Mutex::new(None),
            delay: Mutex::new(DEFAULT_WEBHOOK_DELAY),
            inner: Mutex::new(Inner::default()),
            http: reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?,
        });
        let fake = FakeStripe { url, state };
        let server = fake.clone();
        let task = super::serve(
            listener,
            move |req| {
                let fake = server.clone();
                async move { fake.handle(req).await }
            },
            Some(shutdown),
        );
        Ok((fake, task))
    }

    /// Where `charge.refunded` events go (the stack's `…/payments/stripe`).
    pub fn set_webhook_target(&self, url: &str) {
        *lock(&self.state.webhook_target) = Some(url.to_owned());
    }

    pub fn set_webhook_delay(&self, d: Duration) {
        *lock(&self.state.delay) = d;
    }

    /// The next `times` refund requests are answered `status` (5xx/429: the retry path).
    pub fn fail_next(&self, status: u16, times: u32) {
        lock(&self.state.inner).fail = (times > 0).then_some((status, times));
    }

    /// Refund objects recorded, oldest first.
    pub fn refunds(&self) -> Vec<Value> {
        lock(&self.state.inner).refunds.clone()
    }

    /// `POST /v1/refunds` requests received, failed and replayed ones included.
    pub fn requests(&self) -> u64 {
        lock(&self.state.inner).requests
    }

    pub fn deliveries(&self) -> Vec<Delivery> {
        lock(&self.state.inner).deliveries.clone()
    }

    async fn handle(&self, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let method = req.method().as_str().to_owned();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let idem = req.headers().get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = match req.into_body().collect().await {
            Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
            Err(_) => String::new(),
        };
        let authorised = auth.strip_prefix("Bearer ") == Some(self.state.api_key.as_str());
        let routed = self.intent_route(&method, &path, &query, &body, idem.as_deref(), authorised);
        let (status, value, replayed) = match routed.map(Ok).unwrap_or(Err((method.as_str(), path.as_str()))) {
            Ok(answer) => answer,
            Err(("POST", "/v1/refunds")) if !authorised => {
                let (s, v) = stripe_error(401, "invalid_request_error", None, "Invalid API Key provided");
                (s, v, false)
            }
            Err(("POST", "/v1/refunds")) => self.create_refund(&body, idem),
            Err(("POST", "/_fake/fail")) => {
                let v: Value = serde_json::from_str(&body).unwrap_or_default();
                self.fail_next(v["status"].as_u64().unwrap_or(500) as u16, v["times"].as_u64().unwrap_or(1) as u32);
                (200, json!({"ok": true}), false)
            }
            Err(("POST", "/_fake/config")) => {
                let v: Value = serde_json::from_str(&body).unwrap_or_default();
                if let Some(ms) = v["webhook_delay_ms"].as_u64() {
                    self.set_webhook_delay(Duration::from_millis(ms));
                }
                if let Ok(e) = serde_json::from_value::<PaymentEvents>(v["payment_events"].clone()) {
                    self.set_payment_events(e);
                }
                if !v["max_page"].is_null() {
                    self.set_max_page(v["max_page"].as_u64().map(|n| n as usize));
                }
                (200, json!({"ok": true}), false)
            }
            Err(("GET", "/_fake/deliveries")) => (200, json!(self.deliveries()), false),
            Err(_) => {
                let (s, v) = stripe_error(
                    404,
                    "invalid_request_error",
                    None,
                    &format!("Unrecognized request URL ({method}: {path})"),
                );
                (s, v, false)
            }
        };
        let mut value = value;
        if path.starts_with("/v1/") {
            if let Some(bytes) = lock(&self.state.inner).pay.take_oversize() {
                value["padding"] = json!("x".repeat(bytes));
            }
        }
        let mut r = hyper::Response::new(Full::new(Bytes::from(value.to_string())));
        *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        r.headers_mut()
            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        if replayed {
            r.headers_mut().insert("idempotent-replayed", hyper::header::HeaderValue::from_static("true"));
        }
        r
    }

    fn create_refund(&self, body: &str, idem: Option<String>) -> (u16, Value, bool) {
        let form = crate::server::parse_query(body);
        let one = |k: &str| form.get(k).and_then(|v| v.first()).cloned();
        let mut params: Vec<(String, String)> =
            form.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect();
        params.sort();
        let mut inner = lock(&self.state.inner);
        inner.requests += 1;
        if let Some((status, left)) = inner.fail {
            inner.fail = (left > 1).then_some((status, left - 1));
            let (s, v) = stripe_error(status, "api_error", None, "injected failure (fake Stripe)");
            return (s, v, false);
        }
        if let Some(k) = &idem {
            if inner.pay.by_key_used(k) {
                let (s, v) = stripe_error(
                    400,
                    "idempotency_error",
                    None,
                    "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                );
                return (s, v, false);
            }
            if let Some((seen, i)) = inner.by_key.get(k) {
                if *seen == params {
                    return (200, inner.refunds[*i].clone(), true);
                }
                let (s, v) = stripe_error(
                    400,
                    "idempotency_error",
                    None,
                    "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                );
                return (s, v, false);
            }
        }
        let Some(pi) = one("payment_intent").filter(|p| p.starts_with("pi_")) else {
            let (s, v) = stripe_error(
                400,
                "invalid_request_error",
                Some("resource_missing"),
                &format!("No such payment_intent: '{}'", one("payment_intent").unwrap_or_default()),
            );
            return (s, v, false);
        };
        let amount = match one("amount").map(|a| a.parse::<u64>()) {
            Some(Ok(a)) if a > 0 => a,
            None => 0, // Stripe refunds the whole charge; the fake records 0 (Holdfast always sends it)
            _ => {
                let (s, v) = stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_invalid_integer"),
                    "Invalid integer: amount",
                );
                return (s, v, false);
            }
        };
        let mut metadata = serde_json::Map::new();
        for (k, v) in &params {
            if let Some(name) = k.strip_prefix("metadata[").and_then(|k| k.strip_suffix(']')) {
                metadata.insert(name.to_owned(), json!(v));
            }
        }
        let n = inner.refunds.len() + 1;
        // the intent's currency when the fake made it; else (a made-up pi_…) eur
        let currency = inner.pay.intent(&pi).map_or(json!("eur"), |p| p["currency"].clone());
        let refund = json!({
            "id": format!("re_fake{n:06}"),
            "object": "refund",
            "amount": amount,
            "charge": format!("ch_{}", pi.trim_start_matches("pi_")),
            "created": holdfast::clock::now_s(),
            "currency": currency,
            "metadata": metadata,
            "payment_intent": pi,
            "reason": null,
            "status": "pending",
        });
        inner.refunds.push(refund.clone());
        inner.pay.refund_made(&refund);
        if let Some(k) = idem {
            inner.by_key.insert(k, (params, n - 1));
        }
        inner.events += 1;
        let event_id = format!("evt_fake{:06}", inner.events);
        drop(inner);
        let fake = self.clone();
        tokio::spawn(async move { fake.settle(n - 1, event_id).await });
        (200, refund, false)
    }

    /// After the delay: the refund succeeds and its `charge.refunded` is delivered, signed.
    async fn settle(&self, index: usize, event_id: String) {
        let delay = *lock(&self.state.delay);
        tokio::time::sleep(delay).await;
        let refund = {
            let mut inner = lock(&self.state.inner);
            inner.refunds[index]["status"] = json!("succeeded");
            inner.refunds[index].clone()
        };
        let charge = json!({
            "id": refund["charge"],
            "object": "charge",
            "amount": refund["amount"],
            "amount_refunded": refund["amount"],
            "currency": refund["currency"],
            "payment_intent": refund["payment_intent"],
            "paid": true,
            "refunded": true,
            "status": "succeeded",
            "metadata": {"order_id": refund["metadata"]["order_id"]},
            "refunds": {"object": "list", "data": [refund.clone()], "has_more": false, "total_count": 1,
                        "url": format!("/v1/charges/{}/refunds", refund["charge"].as_str().unwrap_or(""))},
        });
        let body = event(&event_id, "charge.refunded", charge).to_string();
        let delivery = Delivery {
            event_id,
            kind: "charge.refunded".to_owned(),
            object_id: refund["charge"].as_str().unwrap_or("").to_owned(),
            refund_id: refund["id"].as_str().unwrap_or("").to_owned(),
            attempts: 0,
            status: 0,
        };
        self.deliver(delivery, &body).await;
    }

    /// Delivers one event, signed, to the webhook target, retrying a non-2xx answer like Stripe
    /// (5 attempts: 0.5 s, 1 s, 2 s …); every attempt is recorded.
    async fn deliver(&self, mut delivery: Delivery, body: &str) {
        for attempt in 0..DELIVERY_ATTEMPTS {
            let target = lock(&self.state.webhook_target).clone();
            if let Some(url) = target {
                delivery.attempts += 1;
                let sig = signature(&[&self.state.webhook_secret], holdfast::clock::now_s(), body);
                let answer = self
                    .state
                    .http
                    .post(&url)
                    .header("content-type", "application/json; charset=utf-8")
                    .header("stripe-signature", sig)
                    .header("user-agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
                    .body(body.to_owned())
                    .send()
                    .await;
                delivery.status = answer.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
                tracing::info!(?delivery, "fake Stripe delivered an event");
                // one record per attempt, so a test sees the first answer without waiting out the retries
                lock(&self.state.inner).deliveries.push(delivery.clone());
                if (200..300).contains(&delivery.status) {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
        }
    }
}
