//! The simulated provider's payments (docs/payments.md, "Provider wire format"): the generic
//! provider's payment API as `aws/src/adapters/provider.rs` speaks it, the buyer's page, the
//! settlement listing and the test controls. Holdfast's calls carry the credential (checked by
//! the parent module); the buyer's page and the controls are open.
//!
//! Holdfast's calls:
//! - `POST /payments` (`Idempotency-Key`, [`PaymentBody`]) → 201 `{"payment_id","status":"OPEN",
//!   "redirect_url":"{peer}/pay/{payment_id}"}`; the same key and body again → 200, the same
//!   payment; the same key with another body → 422.
//! - `GET /payments/{id}` → the payment; a decision set by `POST /control/payments/{id}` is
//!   applied once its number of polls has passed. `POST /payments/{id}/cancel` → `CANCELLED`
//!   unless it had succeeded (then `SUCCEEDED`, unchanged) or is processing (then `PROCESSING`,
//!   unchanged: not cancellable, as at Stripe).
//! - `GET /refunds/{provider_refund_id}` → the refund (`PENDING` until the peer confirms it,
//!   then `SUCCEEDED`). `GET /settlement/{YYYY-MM-DD}[?cursor=]` → that UTC day's captures and
//!   refunds, `settlement_page_size` items a page (default 100), `next_cursor` an offset.
//! - unknown ids: 404 `{"code":"not_found"}`.
//!
//! The buyer: `POST /pay/{id}` `{"outcome":"succeed"|"fail"|"process","webhook"?:"deliver"|"drop"|"twice"}`
//! moves the payment (from `OPEN`, `PROCESSING` or `FAILED`, like `MemoryProvider::settle`; a
//! `FAILED` one cannot go back to `PROCESSING`) and, for `succeed`/`fail`, POSTs the signed
//! `PaymentCallback` to the stack's `POST /payments/callback` once, never or twice (each delivery
//! retried on a non-2xx answer, 5 attempts). `process` sends nothing: a later decision does.
//! Answers the payment (409 with it when it can no longer move). `GET /pay/{id}` shows it (as an
//! HTML page with Pay/Decline buttons to a browser: `page.rs`).
//!
//! Controls (open, not the provider's API):
//! - `POST /control/payments/{id}` `{"status","webhook"?,"after_polls"?}`: the provider decides a
//!   payment (e.g. a `PROCESSING` one → `SUCCEEDED`), now or after `after_polls` more
//!   `GET /payments/{id}` have answered it as it stands, then calls back as told.
//! - `POST /control/capture` `{"amount","currency","order_id"?,"day"?}`: a capture made outside
//!   Holdfast (settlement: "capture with no order"); answers the payment.
//! - `POST /control/forget` `{"payment_id"?,"provider_refund_id"?}`: the provider loses it (404,
//!   not listed: "paid with no capture", "refund the provider never made").
//! - `POST /control/payments` `{"settlement_page_size"?,"fail_next"?,"refuse_next"?,"oversize_next"?}`:
//!   page size; the next payment-API calls answered 503, (creates) 422, or padded past the
//!   adapter's 64 KiB cap.
//! - `GET /payments` every payment; `GET /control/callbacks` every callback attempt.

use super::{json, lock, Recorded, SimProvider};
use holdfast::adapters::provider::{
    CreatedAnswer, NotFound, PaymentAnswer, PaymentBody, RefundStateAnswer, RefundStatus, SettlementPage, WireStatus,
    NOT_FOUND,
};
use holdfast::domain::model::Day;
use holdfast::domain::signature;
use http_body_util::Full;
use hyper::body::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Deliveries of one callback (a provider retries a non-2xx answer).
const CALLBACK_ATTEMPTS: u64 = 5;
/// Items on one settlement page unless told otherwise.
pub const DEFAULT_SETTLEMENT_PAGE: usize = 100;

/// What the buyer does on the payment page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Succeed,
    Fail,
    Process,
}

/// What the provider does with the callback after a payment moves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Webhook {
    #[default]
    Deliver,
    Drop,
    Twice,
}

/// `POST /pay/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayBody {
    pub outcome: Outcome,
    #[serde(default)]
    pub webhook: Webhook,
}

/// `POST /control/payments/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    pub status: WireStatus,
    #[serde(default)]
    pub webhook: Webhook,
    /// `GET /payments/{id}` calls answered as it stands before the decision shows.
    #[serde(default)]
    pub after_polls: u32,
}

/// `POST /control/capture`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectCapture {
    #[serde(default)]
    pub order_id: Option<String>,
    pub amount: u64,
    pub currency: String,
    /// The UTC day it was captured (default today).
    #[serde(default)]
    pub day: Option<String>,
}

/// `POST /control/forget`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forget {
    #[serde(default)]
    pub payment_id: Option<String>,
    #[serde(default)]
    pub provider_refund_id: Option<String>,
}

/// `POST /control/payments`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentControl {
    pub settlement_page_size: Option<usize>,
    /// Answer 503 to this many payment-API calls.
    pub fail_next: Option<u32>,
    /// Answer 422 (a refusal) to this many `POST /payments`.
    pub refuse_next: Option<u32>,
    /// Pad this many payment-API answers past 64 KiB.
    pub oversize_next: Option<u32>,
}

/// A payment at the simulated provider.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimPayment {
    pub payment_id: String,
    /// The `Idempotency-Key` it was created with (none for an injected capture).
    pub attempt_key: Option<String>,
    pub order_id: Option<String>,
    pub amount: u64,
    pub currency: String,
    pub status: WireStatus,
    /// The UTC day it was captured (`SUCCEEDED`).
    pub captured_day: Option<String>,
    /// Lost by the provider (`POST /control/forget`).
    pub forgotten: bool,
}

impl SimPayment {
    fn answer(&self) -> PaymentAnswer {
        PaymentAnswer {
            payment_id: self.payment_id.clone(),
            order_id: self.order_id.clone(),
            amount: self.amount,
            currency: self.currency.clone(),
            status: self.status,
        }
    }
}

/// One callback delivery attempt.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CallbackAttempt {
    pub payment_id: String,
    /// `SUCCEEDED` or `FAILED`.
    pub status: String,
    /// The stack's HTTP status (0: no answer, or no callback URL set).
    pub http_status: u16,
}

struct RefundInfo {
    recorded: Recorded,
    day: String,
    status: RefundStatus,
    forgotten: bool,
}

struct Pending {
    status: WireStatus,
    webhook: Webhook,
    polls_left: u32,
}

#[derive(Default)]
struct Inner {
    base: String,
    callback_url: Option<String>,
    payments: Vec<SimPayment>,
    /// Idempotency key → (the body, the payment's index).
    by_key: HashMap<String, (PaymentBody, usize)>,
    pending: HashMap<String, Pending>,
    refunds: Vec<RefundInfo>,
    callbacks: Vec<CallbackAttempt>,
    page_size: Option<usize>,
    fail_next: u32,
    refuse_next: u32,
    oversize_next: u32,
}

/// The payment side of [`SimProvider`].
#[derive(Default)]
pub(super) struct Payments {
    inner: Mutex<Inner>,
}

fn today() -> String {
    Day::of_epoch_s(holdfast::clock::now_s()).to_string()
}

fn not_found(what: &str) -> super::super::Response {
    json(404, &NotFound { code: NOT_FOUND.to_owned(), error: Some(format!("no such {what}")) })
}

fn bad(e: impl std::fmt::Display) -> super::super::Response {
    json(400, &serde_json::json!({"error": e.to_string()}))
}

/// Routes served without Holdfast's credential: the buyer's page and the test controls.
pub(super) fn open(route: &str) -> bool {
    route == "GET /payments"
        || route.starts_with("POST /pay/")
        || route.starts_with("GET /pay/")
        || route.starts_with("POST /control/")
        || route.starts_with("GET /control/")
}

impl Payments {
    /// The peer's own URL (for `redirect_url`).
    pub(super) fn set_base(&self, url: &str) {
        lock(&self.inner).base = url.trim_end_matches('/').to_owned();
    }

    /// A refund the peer just recorded (for `GET /refunds/{id}` and the settlement listing).
    pub(super) fn refund_made(&self, r: &Recorded) {
        lock(&self.inner).refunds.push(RefundInfo {
            recorded: r.clone(),
            day: today(),
            status: RefundStatus::Pending,
            forgotten: false,
        });
    }

    /// The provider decided a refund: done.
    pub(super) fn refund_settled(&self, provider_refund_id: &str) {
        if let Some(r) =
            lock(&self.inner).refunds.iter_mut().find(|r| r.recorded.provider_refund_id == provider_refund_id)
        {
            r.status = RefundStatus::Succeeded;
        }
    }
}

impl SimProvider {
    /// Where payment callbacks go (`{stack}/payments/callback`), signed with the payment webhook key.
    pub fn set_callback_url(&self, url: &str) {
        lock(&self.pay.inner).callback_url = Some(url.to_owned());
    }

    /// Every payment, oldest first.
    pub fn payments(&self) -> Vec<SimPayment> {
        lock(&self.pay.inner).payments.clone()
    }

    pub fn payment(&self, payment_id: &str) -> Option<SimPayment> {
        lock(&self.pay.inner).payments.iter().find(|p| p.payment_id == payment_id).cloned()
    }

    /// Every callback delivery attempt, oldest first.
    pub fn callbacks(&self) -> Vec<CallbackAttempt> {
        lock(&self.pay.inner).callbacks.clone()
    }

    pub fn payment_control(&self, c: &PaymentControl) {
        let mut s = lock(&self.pay.inner);
        if let Some(n) = c.settlement_page_size {
            s.page_size = Some(n.clamp(1, 1000));
        }
        if let Some(n) = c.fail_next {
            s.fail_next = n;
        }
        if let Some(n) = c.refuse_next {
            s.refuse_next = n;
        }
        if let Some(n) = c.oversize_next {
            s.oversize_next = n;
        }
    }

    /// The buyer on the payment page. `Err` carries the payment when it can no longer move
    /// (`None`: no such payment).
    pub fn pay(self: &Arc<Self>, payment_id: &str, b: &PayBody) -> Result<SimPayment, Option<Box<SimPayment>>> {
        let to = match b.outcome {
            Outcome::Succeed => WireStatus::Succeeded,
            Outcome::Fail => WireStatus::Failed,
            Outcome::Process => WireStatus::Processing,
        };
        let p = {
            let mut s = lock(&self.pay.inner);
            let Some(p) = s.payments.iter_mut().find(|p| p.payment_id == payment_id && !p.forgotten) else {
                return Err(None);
            };
            if !move_to(p, to) {
                return Err(Some(Box::new(p.clone())));
            }
            let p = p.clone();
            s.pending.remove(payment_id);
            p
        };
        self.call_back(&p, b.webhook);
        Ok(p)
    }

    /// The provider decides a payment, now or after `after_polls` polls.
    pub fn decide(self: &Arc<Self>, payment_id: &str, d: &Decide) -> Option<SimPayment> {
        let applied = {
            let mut s = lock(&self.pay.inner);
            let p = s.payments.iter_mut().find(|p| p.payment_id == payment_id)?;
            if d.after_polls > 0 {
                let p = p.clone();
                s.pending.insert(
                    payment_id.to_owned(),
                    Pending { status: d.status, webhook: d.webhook, polls_left: d.after_polls },
                );
                return Some(p);
            }
            move_to(p, d.status);
            p.clone()
        };
        self.call_back(&applied, d.webhook);
        Some(applied)
    }

    /// A capture made outside Holdfast.
    pub fn inject_capture(&self, c: &InjectCapture) -> Result<SimPayment, String> {
        let day = match &c.day {
            Some(d) => Day::parse(d)?.to_string(),
            None => today(),
        };
        let mut s = lock(&self.pay.inner);
        let p = SimPayment {
            payment_id: format!("sim_pay_{}", s.payments.len() + 1),
            attempt_key: None,
            order_id: c.order_id.clone(),
            amount: c.amount,
            currency: c.currency.to_ascii_uppercase(),
            status: WireStatus::Succeeded,
            captured_day: Some(day),
            forgotten: false,
        };
        s.payments.push(p.clone());
        Ok(p)
    }

    /// The provider loses a payment or a refund.
    pub fn forget(&self, f: &Forget) {
        let mut s = lock(&self.pay.inner);
        if let Some(id) = &f.payment_id {
            s.payments.iter_mut().filter(|p| &p.payment_id == id).for_each(|p| p.forgotten = true);
        }
        if let Some(id) = &f.provider_refund_id {
            s.refunds.iter_mut().filter(|r| &r.recorded.provider_refund_id == id).for_each(|r| r.forgotten = true);
        }
    }

    /// The payment routes; `None`: not one of them.
    pub(super) fn payment_route(
        self: &Arc<Self>,
        method: &str,
        path: &str,
        query: &str,
        headers: &hyper::HeaderMap,
        body: &[u8],
    ) -> Option<super::super::Response> {
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let api = matches!(
            (method, segs.as_slice()),
            ("POST", ["payments"])
                | ("GET", ["payments", _])
                | ("POST", ["payments", _, "cancel"])
                | ("GET", ["refunds", _])
                | ("GET", ["settlement", _])
        );
        if api {
            let mut s = lock(&self.pay.inner);
            if s.fail_next > 0 {
                s.fail_next -= 1;
                return Some(json(503, &serde_json::json!({"error": "temporarily unavailable"})));
            }
        }
        let answer = match (method, segs.as_slice()) {
            ("POST", ["payments"]) => {
                let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                match serde_json::from_slice::<PaymentBody>(body) {
                    Ok(b) => self.create(&key, b),
                    Err(e) => bad(e),
                }
            }
            ("GET", ["payments"]) => json(200, &self.payments()),
            ("GET", ["payments", id]) => match self.poll(id) {
                Some(p) => json(200, &p.answer()),
                None => not_found("payment"),
            },
            ("POST", ["payments", id, "cancel"]) => match self.cancel(id) {
                Some(p) => json(200, &p.answer()),
                None => not_found("payment"),
            },
            ("GET", ["refunds", id]) => {
                let s = lock(&self.pay.inner);
                match s.refunds.iter().find(|r| r.recorded.provider_refund_id == *id && !r.forgotten) {
                    Some(r) => json(200, &refund_answer(r)),
                    None => not_found("refund"),
                }
            }
            ("GET", ["settlement", day]) => self.settlement(day, query),
            ("POST", ["pay", id]) => match serde_json::from_slice::<PayBody>(body) {
                Ok(b) => match self.pay(id, &b) {
                    Ok(p) => json(200, &p),
                    Err(Some(p)) => {
                        json(409, &serde_json::json!({"error": format!("payment is {:?}", p.status), "payment": p}))
                    }
                    Err(None) => not_found("payment"),
                },
                Err(e) => bad(e),
            },
            ("GET", ["pay", id]) => match self.payment(id).filter(|p| !p.forgotten) {
                Some(p) if page::wants_html(headers) => page::render(&p),
                Some(p) => json(200, &p),
                None => not_found("payment"),
            },
            ("POST", ["control", "payments"]) => match serde_json::from_slice::<PaymentControl>(body) {
                Ok(c) => {
                    self.payment_control(&c);
                    json(200, &serde_json::json!({"ok": true}))
                }
                Err(e) => bad(e),
            },
            ("POST", ["control", "payments", id]) => match serde_json::from_slice::<Decide>(body) {
                Ok(d) => match self.decide(id, &d) {
                    Some(p) => json(200, &p),
                    None => not_found("payment"),
                },
                Err(e) => bad(e),
            },
            ("POST", ["control", "capture"]) => match serde_json::from_slice::<InjectCapture>(body) {
                Ok(c) => match self.inject_capture(&c) {
                    Ok(p) => json(201, &p),
                    Err(e) => bad(e),
                },
                Err(e) => bad(e),
            },
            ("POST", ["control", "forget"]) => match serde_json::from_slice::<Forget>(body) {
                Ok(f) => {
                    self.forget(&f);
                    json(200, &serde_json::json!({"ok": true}))
                }
                Err(e) => bad(e),
            },
            ("GET", ["control", "callbacks"]) => json(200, &self.callbacks()),
            _ => return None,
        };
        if api {
            let mut s = lock(&self.pay.inner);
            if s.oversize_next > 0 {
                s.oversize_next -= 1;
                return Some(oversized(answer));
            }
        }
        Some(answer)
    }

    fn create(&self, key: &str, b: PaymentBody) -> super::super::Response {
        if key.is_empty() || key != b.attempt_key {
            return json(422, &serde_json::json!({"error": "Idempotency-Key must be the attempt_key"}));
        }
        let mut s = lock(&self.pay.inner);
        if s.refuse_next > 0 {
            s.refuse_next -= 1;
            return json(422, &serde_json::json!({"error": "payment refused by the provider"}));
        }
        if let Some((seen, i)) = s.by_key.get(key) {
            if *seen != b {
                return json(422, &serde_json::json!({"error": "Idempotency-Key reused with other parameters"}));
            }
            let p = &s.payments[*i];
            return json(200, &created(&s.base, p));
        }
        let p = SimPayment {
            payment_id: format!("sim_pay_{}", s.payments.len() + 1),
            attempt_key: Some(key.to_owned()),
            order_id: Some(b.order_id.clone()),
            amount: b.amount,
            currency: b.currency.to_ascii_uppercase(),
            status: WireStatus::Open,
            captured_day: None,
            forgotten: false,
        };
        let answer = created(&s.base, &p);
        let i = s.payments.len();
        s.payments.push(p);
        s.by_key.insert(key.to_owned(), (b, i));
        json(201, &answer)
    }

    /// `GET /payments/{id}`: a pending decision counts this poll down, and applies once it is due.
    fn poll(self: &Arc<Self>, payment_id: &str) -> Option<SimPayment> {
        let (p, webhook) = {
            let mut s = lock(&self.pay.inner);
            let due = match s.pending.get_mut(payment_id) {
                Some(d) if d.polls_left > 0 => {
                    d.polls_left -= 1;
                    None
                }
                Some(_) => s.pending.remove(payment_id),
                None => None,
            };
            let p = s.payments.iter_mut().find(|p| p.payment_id == payment_id && !p.forgotten)?;
            match due {
                Some(d) => {
                    move_to(p, d.status);
                    (p.clone(), Some(d.webhook))
                }
                None => (p.clone(), None),
            }
        };
        if let Some(w) = webhook {
            self.call_back(&p, w);
        }
        Some(p)
    }

    /// A processing payment is not cancellable (as Stripe refuses to cancel a `processing`
    /// intent): it is answered as it stands and its pending decision still applies.
    fn cancel(&self, payment_id: &str) -> Option<SimPayment> {
        let mut s = lock(&self.pay.inner);
        let processing =
            s.payments.iter().any(|p| p.payment_id == payment_id && !p.forgotten && p.status == WireStatus::Processing);
        if !processing {
            s.pending.remove(payment_id);
        }
        let p = s.payments.iter_mut().find(|p| p.payment_id == payment_id && !p.forgotten)?;
        if !processing {
            move_to(p, WireStatus::Cancelled);
        }
        Some(p.clone())
    }

    fn settlement(&self, day: &str, query: &str) -> super::super::Response {
        if let Err(e) = Day::parse(day) {
            return bad(e);
        }
        let q = crate::server::parse_query(query);
        let from = match q.get("cursor").and_then(|v| v.first()).map(|c| c.parse::<usize>()) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return bad("cursor is not one this provider gave"),
        };
        let s = lock(&self.pay.inner);
        let size = s.page_size.unwrap_or(DEFAULT_SETTLEMENT_PAGE);
        let captures: Vec<PaymentAnswer> = s
            .payments
            .iter()
            .filter(|p| !p.forgotten && p.status == WireStatus::Succeeded && p.captured_day.as_deref() == Some(day))
            .map(SimPayment::answer)
            .collect();
        let refunds: Vec<RefundStateAnswer> = s
            .refunds
            .iter()
            .filter(|r| !r.forgotten && r.day == day && r.status != RefundStatus::Failed)
            .map(refund_answer)
            .collect();
        let total = captures.len() + refunds.len();
        let to = (from + size).min(total);
        let page = SettlementPage {
            captures: captures.iter().skip(from).take(to.saturating_sub(from)).cloned().collect(),
            refunds: refunds
                .iter()
                .skip(from.saturating_sub(captures.len()))
                .take(to.saturating_sub(from.max(captures.len())))
                .cloned()
                .collect(),
            next_cursor: (to < total).then(|| to.to_string()),
        };
        json(200, &page)
    }

    /// Sends the payment's callback as told (spawned; a final status only).
    fn call_back(self: &Arc<Self>, p: &SimPayment, webhook: Webhook) {
        let status = match p.status {
            WireStatus::Succeeded => "SUCCEEDED",
            WireStatus::Failed => "FAILED",
            _ => return,
        };
        let copies = match webhook {
            Webhook::Deliver => 1,
            Webhook::Drop => 0,
            Webhook::Twice => 2,
        };
        let Some(order_id) = p.order_id.clone() else { return };
        let body = serde_json::json!({
            "payment_id": p.payment_id,
            "order_id": order_id,
            "amount": p.amount,
            "currency": p.currency,
            "status": status,
        })
        .to_string();
        let me = self.clone();
        let payment_id = p.payment_id.clone();
        tokio::spawn(async move {
            for _ in 0..copies {
                me.deliver_callback(&payment_id, status, &body).await;
            }
        });
    }

    async fn deliver_callback(&self, payment_id: &str, status: &str, body: &str) {
        for attempt in 0..CALLBACK_ATTEMPTS {
            let url = lock(&self.pay.inner).callback_url.clone();
            let http_status = match url {
                None => 0,
                Some(url) => {
                    let sig = signature::sign(self.secret.as_bytes(), holdfast::clock::now_s(), body.as_bytes());
                    let sent = self
                        .client
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("x-signature", sig)
                        .body(body.to_owned())
                        .send()
                        .await;
                    sent.map(|r| r.status().as_u16()).unwrap_or(0)
                }
            };
            lock(&self.pay.inner).callbacks.push(CallbackAttempt {
                payment_id: payment_id.to_owned(),
                status: status.to_owned(),
                http_status,
            });
            if (200..300).contains(&http_status) {
                return;
            }
            tracing::warn!(payment_id, http_status, "simulated provider: payment callback not accepted");
            tokio::time::sleep(Duration::from_millis(200 * (attempt + 1))).await;
        }
    }
}

/// Moves a payment as `MemoryProvider::settle` does: only from `OPEN`, `PROCESSING` or `FAILED`,
/// and a `FAILED` one not back to `PROCESSING`. Whether it moved.
fn move_to(p: &mut SimPayment, to: WireStatus) -> bool {
    use WireStatus::*;
    if !matches!(p.status, Open | Processing | Failed) || (p.status == Failed && to == Processing) {
        return false;
    }
    p.status = to;
    if to == Succeeded {
        p.captured_day = Some(today());
    }
    true
}

fn created(base: &str, p: &SimPayment) -> CreatedAnswer {
    CreatedAnswer {
        payment_id: p.payment_id.clone(),
        status: p.status,
        redirect_url: Some(format!("{base}/pay/{}", p.payment_id)),
    }
}

fn refund_answer(r: &RefundInfo) -> RefundStateAnswer {
    RefundStateAnswer {
        provider_refund_id: r.recorded.provider_refund_id.clone(),
        refund_id: Some(r.recorded.body.refund_id.clone()),
        payment_id: r.recorded.body.payment_id.clone(),
        amount: r.recorded.body.amount,
        currency: r.recorded.body.currency.clone(),
        status: r.status,
    }
}

/// `answer` with its JSON body padded past the adapters' 64 KiB cap (still valid JSON).
fn oversized(answer: super::super::Response) -> super::super::Response {
    let status = answer.status();
    let mut r = hyper::Response::new(Full::new(Bytes::from(
        serde_json::json!({"padding": "x".repeat(128 * 1024), "status": "SUCCEEDED"}).to_string(),
    )));
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    r
}

mod page;
#[cfg(test)]
mod tests;
