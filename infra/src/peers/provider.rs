//! The simulated payment provider the local stack starts (docs/after-sale.md, "Providers"): a
//! real HTTP peer speaking the generic provider's refund API (`aws/src/adapters/provider.rs`).
//! It records each refund once per refund id, answers `PENDING`, and after a settable delay
//! confirms it by POSTing a signed `POST /payments/refunds` webhook to the stack, as many times
//! as told (a provider that re-delivers). It can be told to fail (5xx) or refuse (4xx).
//!
//! Holdfast's calls must carry `Authorization: Bearer <credential>` (security review M3; 401
//! otherwise); only the test controls in [`OPEN_ROUTES`] are open. Refund confirmations are
//! signed with the refund confirmation key, never the payment webhook key (review L1).
//!
//! - `POST /refunds` — `{"refund_id","payment_id","order_id","amount","currency"}`
//! - `GET /refunds` — every refund recorded, oldest first
//! - `POST /control` — `{"delay_ms"?, "fail_next"?, "refuse"?, "webhook_copies"?}`
//!
//! Payments, the buyer's page (`POST /pay/{id}`), refund states, the settlement listing and
//! their controls: [`payments`] (docs/payments.md, "Provider wire format").

use super::{json, lock};
use holdfast::adapters::provider::{RefundAnswer, RefundBody};
use holdfast::domain::signature;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod payments;
pub use payments::{
    CallbackAttempt, Decide, Forget, InjectCapture, Outcome, PayBody, PaymentControl, SimPayment, Webhook,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Recorded {
    #[serde(flatten)]
    pub body: RefundBody,
    pub provider_refund_id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub delay_ms: Option<u64>,
    /// Answer 503 to this many refund calls.
    pub fail_next: Option<u32>,
    /// Answer 422 (a refusal) to every refund call while true.
    pub refuse: Option<bool>,
    /// Deliver each confirmation this many times.
    pub webhook_copies: Option<u32>,
}

struct State {
    refunds: Vec<Recorded>,
    delay_ms: u64,
    fail_next: u32,
    refuse: bool,
    webhook_copies: u32,
    calls: u64,
}

/// Routes served without the credential: the test controls, not the provider API Holdfast calls.
pub const OPEN_ROUTES: &[&str] = &["GET /refunds", "POST /control"];

/// The keys the peer works with: the refund confirmation key it signs with and the credential
/// it demands (the local stack's well-known ones unless [`SimProvider::set_keys`] says otherwise).
struct Keys {
    refund_secret: String,
    credential: String,
}

pub struct SimProvider {
    state: Mutex<State>,
    keys: Mutex<Keys>,
    /// Where confirmations go (`{stack}/payments/refunds`).
    webhook_url: String,
    /// The payment webhook key (`POST /payments/callback`): never used for refund confirmations.
    #[allow(dead_code)]
    secret: String,
    client: reqwest::Client,
    /// Payments, the buyer's page and settlement (`payments.rs`).
    pay: payments::Payments,
}

impl SimProvider {
    /// Binds `127.0.0.1:0` and serves until the runtime stops; returns the peer and its URL.
    pub async fn start(webhook_url: String, secret: String, delay_ms: u64) -> anyhow::Result<(Arc<Self>, String)> {
        let (listener, url) = super::bind().await?;
        let me = Arc::new(SimProvider {
            state: Mutex::new(State {
                refunds: Vec::new(),
                delay_ms,
                fail_next: 0,
                refuse: false,
                webhook_copies: 1,
                calls: 0,
            }),
            keys: Mutex::new(Keys {
                refund_secret: crate::stack::DEFAULT_REFUND_WEBHOOK_SECRET.to_owned(),
                credential: crate::stack::DEFAULT_PROVIDER_CREDENTIAL.to_owned(),
            }),
            webhook_url,
            secret,
            client: reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?,
            pay: payments::Payments::default(),
        });
        me.pay.set_base(&url);
        let peer = me.clone();
        super::serve(listener, move |req| peer.clone().handle(req), None);
        Ok((me, url))
    }

    /// The refund confirmation key to sign with and the credential to demand.
    pub fn set_keys(&self, refund_secret: &str, credential: &str) {
        *lock(&self.keys) = Keys { refund_secret: refund_secret.to_owned(), credential: credential.to_owned() };
    }

    /// Whether a request carries `Authorization: Bearer <credential>`.
    fn authorised(&self, headers: &hyper::HeaderMap) -> bool {
        let want = format!("Bearer {}", lock(&self.keys).credential);
        headers.get(hyper::header::AUTHORIZATION).is_some_and(|v| v.as_bytes() == want.as_bytes())
    }

    /// Every refund recorded, oldest first.
    pub fn refunds(&self) -> Vec<Recorded> {
        lock(&self.state).refunds.clone()
    }

    /// Refund calls received (accepted, repeated, failed or refused).
    pub fn calls(&self) -> u64 {
        lock(&self.state).calls
    }

    pub fn control(&self, c: &Control) {
        let mut s = lock(&self.state);
        if let Some(d) = c.delay_ms {
            s.delay_ms = d;
        }
        if let Some(n) = c.fail_next {
            s.fail_next = n;
        }
        if let Some(r) = c.refuse {
            s.refuse = r;
        }
        if let Some(n) = c.webhook_copies {
            s.webhook_copies = n.clamp(1, 10);
        }
    }

    async fn handle(self: Arc<Self>, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let route = format!("{} {}", req.method(), req.uri().path());
        if !OPEN_ROUTES.contains(&route.as_str()) && !payments::open(&route) && !self.authorised(req.headers()) {
            return json(401, &serde_json::json!({"error": "missing or wrong credential"}));
        }
        let (method, path) = (req.method().as_str().to_owned(), req.uri().path().to_owned());
        let (query, headers) = (req.uri().query().unwrap_or("").to_owned(), req.headers().clone());
        let body = match Limited::new(req.into_body(), 64 * 1024).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return json(413, &serde_json::json!({"error": "body too large"})),
        };
        if let Some(answer) = self.payment_route(&method, &path, &query, &headers, &body) {
            return answer;
        }
        match route.as_str() {
            "GET /refunds" => json(200, &self.refunds()),
            "POST /control" => match serde_json::from_slice::<Control>(&body) {
                Ok(c) => {
                    self.control(&c);
                    json(200, &serde_json::json!({"ok": true}))
                }
                Err(e) => json(400, &serde_json::json!({"error": e.to_string()})),
            },
            "POST /refunds" => match serde_json::from_slice::<RefundBody>(&body) {
                Ok(b) => self.refund(b),
                Err(e) => json(400, &serde_json::json!({"error": e.to_string()})),
            },
            _ => json(404, &serde_json::json!({"error": "no such route"})),
        }
    }

    fn refund(self: &Arc<Self>, b: RefundBody) -> hyper::Response<Full<Bytes>> {
        let (rec, fresh, delay, copies) = {
            let mut s = lock(&self.state);
            s.calls += 1;
            if s.fail_next > 0 {
                s.fail_next -= 1;
                return json(503, &serde_json::json!({"error": "temporarily unavailable"}));
            }
            if s.refuse {
                return json(422, &serde_json::json!({"error": "refund refused: payment not refundable"}));
            }
            if let Some(r) = s.refunds.iter().find(|r| r.body.refund_id == b.refund_id) {
                // idempotent by refund id: the first answer again, no second refund
                (r.clone(), false, 0, 0)
            } else {
                let rec = Recorded { provider_refund_id: format!("sim_re_{}", s.refunds.len() + 1), body: b };
                s.refunds.push(rec.clone());
                self.pay.refund_made(&rec);
                (rec, true, s.delay_ms, s.webhook_copies)
            }
        };
        if fresh {
            let me = self.clone();
            let rec2 = rec.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                me.pay.refund_settled(&rec2.provider_refund_id);
                for _ in 0..copies {
                    me.confirm(&rec2).await;
                }
            });
        }
        json(
            if fresh { 201 } else { 200 },
            &RefundAnswer { provider_refund_id: rec.provider_refund_id, status: "PENDING".into() },
        )
    }

    /// POSTs the signed confirmation, retrying a few times like a provider does.
    async fn confirm(&self, r: &Recorded) {
        let body = serde_json::json!({
            "order_id": r.body.order_id,
            "refund_id": r.body.refund_id,
            "provider_refund_id": r.provider_refund_id,
            "amount": r.body.amount,
            "status": "SUCCEEDED",
        })
        .to_string();
        // A confirmation that beats Holdfast's own record of the refund as ISSUED is refused
        // (409) and sent again, as a provider does: ten attempts over about eleven seconds.
        for attempt in 0..10u64 {
            let key = lock(&self.keys).refund_secret.clone();
            let sig = signature::sign(key.as_bytes(), holdfast::clock::now_s(), body.as_bytes());
            let sent = self
                .client
                .post(&self.webhook_url)
                .header("content-type", "application/json")
                .header("x-signature", sig)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(resp) if resp.status().is_success() => return,
                Ok(resp) => tracing::warn!(status = %resp.status(), "simulated provider: webhook refused"),
                Err(e) => tracing::warn!(error = %e, "simulated provider: webhook not delivered"),
            }
            tokio::time::sleep(Duration::from_millis(200 * (attempt + 1))).await;
        }
    }
}
