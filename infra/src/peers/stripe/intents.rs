//! The fake Stripe's PaymentIntents, charges, balance transactions and lists (docs/payments.md,
//! "Provider wire format"; shapes as in Stripe's OpenAPI spec and API reference, version
//! 2024-06-20, with a subset of each object's fields).
//!
//! - `POST /v1/payment_intents` (`amount`, `currency`, `metadata[…]`,
//!   `automatic_payment_methods[enabled]`): a `requires_payment_method` intent with a
//!   `client_secret`. `Idempotency-Key`: the same key and parameters answer the first answer again
//!   (`Idempotent-Replayed: true`), as Stripe replays the saved response; other parameters, or a
//!   key used on another endpoint, are 400 `idempotency_error`.
//! - `GET /v1/payment_intents/{id}` (404 `resource_missing`), `GET /v1/payment_intents` (list).
//! - `POST /v1/payment_intents/{id}/cancel` (`cancellation_reason`?): `canceled` from
//!   `requires_payment_method`/`requires_confirmation`/`requires_action`/`requires_capture`;
//!   otherwise 400 `payment_intent_unexpected_state` (the fake does not model Stripe's rare
//!   cancel of a `processing` intent).
//! - The buyer: `POST /v1/payment_intents/{id}/confirm` with `payment_method`:
//!   `pm_card_visa` (any `pm_card_…` test method that is not a decline) → `succeeded`, a charge
//!   and its balance transaction, `payment_intent.succeeded`; `pm_card_chargeDeclined…` → 402
//!   `card_error`/`card_declined` carrying the intent, which is back in
//!   `requires_payment_method` with `last_payment_error`, and `payment_intent.payment_failed`;
//!   `pm_fake_processing` (the fake's own) → `processing` and `payment_intent.processing`, until
//!   `POST /_fake/intents/{id}/settle`.
//! - `GET /v1/refunds/{id}`, `GET /v1/refunds[?payment_intent=]`, `GET /v1/balance_transactions`
//!   (`type`?, `expand[]=data.source`), `GET /v1/charges[?payment_intent=]`: Stripe lists —
//!   `{"object":"list","url","has_more","data"}`, newest first, `limit` 1–100 (default 10),
//!   `starting_after`/`ending_before` an object id on the list, `created` exact or
//!   `created[gt|gte|lt|lte]`.
//!
//! Controls: `POST /_fake/intents/{id}/settle {"outcome":"succeeded"|"failed","after_retrievals"?}`
//! decides a `processing` intent (now, or once that many more `GET`s answered it processing);
//! `POST /_fake/config {"payment_events":"deliver"|"drop"|"twice","max_page"?}` — what happens to
//! `payment_intent.*` events, and a cap on objects per list page (so a test pages with few objects);
//! `POST /_fake/oversize {"times"?,"bytes"?}` pads the next API answers (default one, 128 KiB).

use super::{event, lock, stripe_error, Delivery, FakeStripe};
use serde_json::{json, Value};
use std::collections::HashMap;

/// What happens to `payment_intent.*` events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentEvents {
    #[default]
    Deliver,
    Drop,
    /// The same event (same id) delivered twice, as Stripe may.
    Twice,
}

/// The PaymentIntent statuses a cancel moves to `canceled`.
const CANCELABLE: &[&str] =
    &["requires_payment_method", "requires_confirmation", "requires_action", "requires_capture"];

/// The fake's payment state (inside `Inner`).
#[derive(Default)]
pub(super) struct Intents {
    intents: Vec<Value>,
    /// Idempotency key → (the parameters, the first answer).
    by_key: HashMap<String, (Vec<(String, String)>, Value)>,
    charges: Vec<Value>,
    balance: Vec<Value>,
    /// Intent id → (outcome, retrievals still answered `processing`).
    pending: HashMap<String, (bool, u32)>,
    pub(super) payment_events: PaymentEvents,
    pub(super) max_page: Option<usize>,
    /// Answers still to pad, and by how many bytes.
    oversize: (u32, usize),
    seq: u64,
}

impl Intents {
    fn next_id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        format!("{prefix}_fake{:06}", self.seq)
    }

    pub(super) fn intent(&self, id: &str) -> Option<&Value> {
        self.intents.iter().find(|p| p["id"] == id)
    }

    fn intent_mut(&mut self, id: &str) -> Option<&mut Value> {
        self.intents.iter_mut().find(|p| p["id"] == id)
    }

    /// Whether a PaymentIntent was created with this idempotency key.
    pub(super) fn by_key_used(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// A balance transaction for a refund just made (Stripe debits the balance at once).
    pub(super) fn refund_made(&mut self, refund: &Value) {
        let id = self.next_id("txn");
        let amount = refund["amount"].as_i64().unwrap_or(0);
        self.balance.push(json!({
            "id": id,
            "object": "balance_transaction",
            "amount": -amount,
            "currency": refund["currency"],
            "created": refund["created"],
            "fee": 0,
            "net": -amount,
            "reporting_category": "refund",
            "source": refund["id"],
            "status": "available",
            "type": "refund",
        }));
    }

    /// The answer to pad next, if any: how many bytes.
    pub(super) fn take_oversize(&mut self) -> Option<usize> {
        let (n, bytes) = self.oversize;
        (n > 0).then(|| {
            self.oversize.0 = n - 1;
            bytes
        })
    }
}

/// A form or query as key/value pairs, sorted (the parameters an idempotency key is bound to).
fn params(form: &HashMap<String, Vec<String>>) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> =
        form.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect();
    p.sort();
    p
}

fn metadata_of(p: &[(String, String)]) -> serde_json::Map<String, Value> {
    p.iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("metadata[").and_then(|k| k.strip_suffix(']')).map(|k| (k.to_owned(), json!(v)))
        })
        .collect()
}

fn missing(kind: &str, id: &str) -> (u16, Value) {
    stripe_error(404, "invalid_request_error", Some("resource_missing"), &format!("No such {kind}: '{id}'"))
}

fn unexpected_state(verb: &str, status: &str) -> (u16, Value) {
    stripe_error(
        400,
        "invalid_request_error",
        Some("payment_intent_unexpected_state"),
        &format!("You cannot {verb} this PaymentIntent because it has a status of {status}."),
    )
}

/// Whether `created` passes the list's `created` filters.
fn created_ok(created: i64, q: &HashMap<String, Vec<String>>) -> Result<bool, (u16, Value)> {
    let mut ok = true;
    for (k, test) in [
        ("created", (|c: i64, v: i64| c == v) as fn(i64, i64) -> bool),
        ("created[gt]", |c, v| c > v),
        ("created[gte]", |c, v| c >= v),
        ("created[lt]", |c, v| c < v),
        ("created[lte]", |c, v| c <= v),
    ] {
        if let Some(v) = q.get(k).and_then(|v| v.first()) {
            let v: i64 = v.parse().map_err(|_| {
                stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_invalid_integer"),
                    &format!("Invalid integer: {v}"),
                )
            })?;
            ok &= test(created, v);
        }
    }
    Ok(ok)
}

/// One page of a Stripe list over `objects` (oldest first as recorded; listed newest first).
fn list(
    url: &str,
    kind: &str,
    objects: &[Value],
    q: &HashMap<String, Vec<String>>,
    max_page: Option<usize>,
) -> (u16, Value) {
    let one = |k: &str| q.get(k).and_then(|v| v.first()).cloned();
    let limit = match one("limit").map(|l| l.parse::<usize>()) {
        None => 10,
        Some(Ok(l)) if (1..=100).contains(&l) => l,
        _ => {
            return stripe_error(
                400,
                "invalid_request_error",
                Some("parameter_invalid_integer"),
                "Invalid limit: must be an integer between 1 and 100",
            )
        }
    };
    let limit = max_page.map_or(limit, |m| limit.min(m.max(1)));
    let mut newest_first = Vec::new();
    for o in objects.iter().rev() {
        match created_ok(o["created"].as_i64().unwrap_or(0), q) {
            Ok(true) => newest_first.push(o.clone()),
            Ok(false) => {}
            Err(e) => return e,
        }
    }
    let (from, to) = match (one("starting_after"), one("ending_before")) {
        (Some(a), _) => match newest_first.iter().position(|o| o["id"] == a.as_str()) {
            Some(i) => (i + 1, (i + 1 + limit).min(newest_first.len())),
            None => return missing(kind, &a),
        },
        (None, Some(b)) => match newest_first.iter().position(|o| o["id"] == b.as_str()) {
            Some(i) => (i.saturating_sub(limit), i),
            None => return missing(kind, &b),
        },
        (None, None) => (0, limit.min(newest_first.len())),
    };
    let has_more = if one("ending_before").is_some() && one("starting_after").is_none() {
        from > 0
    } else {
        to < newest_first.len()
    };
    (200, json!({"object": "list", "url": url, "has_more": has_more, "data": newest_first[from..to].to_vec()}))
}

impl FakeStripe {
    /// Every PaymentIntent, oldest first, as it stands.
    pub fn intents(&self) -> Vec<Value> {
        lock(&self.state.inner).pay.intents.clone()
    }

    pub fn intent(&self, id: &str) -> Option<Value> {
        lock(&self.state.inner).pay.intent(id).cloned()
    }

    /// Every charge, oldest first.
    pub fn charges(&self) -> Vec<Value> {
        lock(&self.state.inner).pay.charges.clone()
    }

    /// What happens to `payment_intent.*` events from now on.
    pub fn set_payment_events(&self, e: PaymentEvents) {
        lock(&self.state.inner).pay.payment_events = e;
    }

    /// At most `n` objects on a list page (`None`: what `limit` asks).
    pub fn set_max_page(&self, n: Option<usize>) {
        lock(&self.state.inner).pay.max_page = n;
    }

    /// Pads the next `times` API answers with `bytes` bytes.
    pub fn oversize_next(&self, times: u32, bytes: usize) {
        lock(&self.state.inner).pay.oversize = (times, bytes);
    }

    /// The buyer confirms with a test payment method (as `POST /v1/payment_intents/{id}/confirm`).
    pub fn confirm(&self, id: &str, payment_method: &str) -> (u16, Value) {
        let form = HashMap::from([("payment_method".to_owned(), vec![payment_method.to_owned()])]);
        self.confirm_intent(id, &form)
    }

    /// Decides a `processing` intent: now (`after_retrievals` 0) or once that many more
    /// retrievals have answered it `processing`.
    pub fn settle_intent(&self, id: &str, succeeded: bool, after_retrievals: u32) -> (u16, Value) {
        let mut inner = lock(&self.state.inner);
        let Some(pi) = inner.pay.intent(id).cloned() else { return missing("payment_intent", id) };
        if pi["status"] != "processing" {
            let status = pi["status"].as_str().unwrap_or("").to_owned();
            return unexpected_state("settle", &status);
        }
        if after_retrievals > 0 {
            inner.pay.pending.insert(id.to_owned(), (succeeded, after_retrievals));
            return (200, pi);
        }
        drop(inner);
        self.finish(id, succeeded, None)
    }

    /// The payment routes; `None`: not one of them.
    pub(super) fn intent_route(
        &self,
        method: &str,
        path: &str,
        query: &str,
        body: &str,
        idem: Option<&str>,
        authorised: bool,
    ) -> Option<(u16, Value, bool)> {
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let q = crate::server::parse_query(query);
        let form = crate::server::parse_query(body);
        let api = segs.first() == Some(&"v1");
        let ours = matches!(
            (method, segs.as_slice()),
            ("POST", ["v1", "payment_intents"])
                | ("GET", ["v1", "payment_intents"])
                | ("GET", ["v1", "payment_intents", _])
                | ("POST", ["v1", "payment_intents", _, "cancel" | "confirm"])
                | ("GET", ["v1", "refunds"])
                | ("GET", ["v1", "refunds", _])
                | ("GET", ["v1", "balance_transactions"])
                | ("GET", ["v1", "charges"])
                | ("POST", ["_fake", "intents", _, "settle"])
                | ("POST", ["_fake", "oversize"])
        );
        if !ours {
            return None;
        }
        if api && !authorised {
            let (s, v) = stripe_error(401, "invalid_request_error", None, "Invalid API Key provided");
            return Some((s, v, false));
        }
        let max_page = lock(&self.state.inner).pay.max_page;
        let (status, value, replayed) = match (method, segs.as_slice()) {
            ("POST", ["v1", "payment_intents"]) => self.create_intent(&form, idem),
            ("GET", ["v1", "payment_intents"]) => {
                let all = self.intents();
                let (s, v) = list("/v1/payment_intents", "payment_intent", &all, &q, max_page);
                (s, v, false)
            }
            ("GET", ["v1", "payment_intents", id]) => {
                let (s, v) = self.retrieve_intent(id);
                (s, v, false)
            }
            ("POST", ["v1", "payment_intents", id, "cancel"]) => {
                let (s, v) = self.cancel_intent(id, &form);
                (s, v, false)
            }
            ("POST", ["v1", "payment_intents", id, "confirm"]) => {
                let (s, v) = self.confirm_intent(id, &form);
                (s, v, false)
            }
            ("GET", ["v1", "refunds"]) => {
                let pi = q.get("payment_intent").and_then(|v| v.first()).cloned();
                let all: Vec<Value> = self
                    .refunds()
                    .into_iter()
                    .filter(|r| pi.as_deref().is_none_or(|p| r["payment_intent"] == p))
                    .collect();
                let (s, v) = list("/v1/refunds", "refund", &all, &q, max_page);
                (s, v, false)
            }
            ("GET", ["v1", "refunds", id]) => {
                let (s, v) = match self.refunds().into_iter().find(|r| r["id"] == *id) {
                    Some(r) => (200, r),
                    None => missing("refund", id),
                };
                (s, v, false)
            }
            ("GET", ["v1", "balance_transactions"]) => {
                let (s, v) = self.balance_transactions(&q, max_page);
                (s, v, false)
            }
            ("GET", ["v1", "charges"]) => {
                let pi = q.get("payment_intent").and_then(|v| v.first()).cloned();
                let all: Vec<Value> = self
                    .charges()
                    .into_iter()
                    .filter(|c| pi.as_deref().is_none_or(|p| c["payment_intent"] == p))
                    .collect();
                let (s, v) = list("/v1/charges", "charge", &all, &q, max_page);
                (s, v, false)
            }
            ("POST", ["_fake", "intents", id, "settle"]) => {
                let v: Value = serde_json::from_str(body).unwrap_or_default();
                let succeeded = v["outcome"] != "failed";
                let after = v["after_retrievals"].as_u64().unwrap_or(0) as u32;
                let (s, v) = self.settle_intent(id, succeeded, after);
                (s, v, false)
            }
            ("POST", ["_fake", "oversize"]) => {
                let v: Value = serde_json::from_str(body).unwrap_or_default();
                let times = v["times"].as_u64().unwrap_or(1) as u32;
                self.oversize_next(times, v["bytes"].as_u64().unwrap_or(128 * 1024) as usize);
                (200, json!({"ok": true}), false)
            }
            _ => return None,
        };
        Some((status, value, replayed))
    }

    fn create_intent(&self, form: &HashMap<String, Vec<String>>, idem: Option<&str>) -> (u16, Value, bool) {
        let p = params(form);
        let one = |k: &str| form.get(k).and_then(|v| v.first()).cloned();
        let mut inner = lock(&self.state.inner);
        if let Some(k) = idem {
            if let Some((seen, first)) = inner.pay.by_key.get(k) {
                if *seen == p {
                    return (200, first.clone(), true);
                }
            }
            if inner.pay.by_key.contains_key(k) || inner.by_key.contains_key(k) {
                let (s, v) = stripe_error(
                    400,
                    "idempotency_error",
                    None,
                    "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                );
                return (s, v, false);
            }
        }
        let amount = match one("amount").map(|a| a.parse::<u64>()) {
            Some(Ok(a)) if a > 0 => a,
            None => {
                let (s, v) = stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_missing"),
                    "Missing required param: amount.",
                );
                return (s, v, false);
            }
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
        let currency = match one("currency") {
            Some(c) if c.len() == 3 && c.bytes().all(|b| b.is_ascii_alphabetic()) => c.to_ascii_lowercase(),
            Some(c) => {
                let (s, v) = stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_invalid_string"),
                    &format!("Invalid currency: {c}"),
                );
                return (s, v, false);
            }
            None => {
                let (s, v) = stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_missing"),
                    "Missing required param: currency.",
                );
                return (s, v, false);
            }
        };
        let id = inner.pay.next_id("pi");
        let pi = json!({
            "id": id,
            "object": "payment_intent",
            "amount": amount,
            "amount_capturable": 0,
            "amount_received": 0,
            "automatic_payment_methods": {"enabled": one("automatic_payment_methods[enabled]").as_deref() == Some("true")},
            "canceled_at": null,
            "cancellation_reason": null,
            "capture_method": "automatic_async",
            "client_secret": format!("{id}_secret_fake{:06}", inner.pay.seq),
            "confirmation_method": "automatic",
            "created": holdfast::clock::now_s(),
            "currency": currency,
            "customer": null,
            "description": null,
            "last_payment_error": null,
            "latest_charge": null,
            "livemode": false,
            "metadata": metadata_of(&p),
            "next_action": null,
            "payment_method": null,
            "payment_method_types": ["card"],
            "status": "requires_payment_method",
        });
        inner.pay.intents.push(pi.clone());
        if let Some(k) = idem {
            inner.pay.by_key.insert(k.to_owned(), (p, pi.clone()));
        }
        (200, pi, false)
    }

    fn retrieve_intent(&self, id: &str) -> (u16, Value) {
        let due = {
            let mut inner = lock(&self.state.inner);
            if inner.pay.intent(id).is_none() {
                return missing("payment_intent", id);
            }
            match inner.pay.pending.get_mut(id) {
                Some((_, left)) if *left > 0 => {
                    *left -= 1;
                    None
                }
                Some(_) => inner.pay.pending.remove(id).map(|(ok, _)| ok),
                None => None,
            }
        };
        if let Some(succeeded) = due {
            let _ = self.finish(id, succeeded, None);
        }
        let inner = lock(&self.state.inner);
        match inner.pay.intent(id) {
            Some(pi) => (200, pi.clone()),
            None => missing("payment_intent", id),
        }
    }

    fn cancel_intent(&self, id: &str, form: &HashMap<String, Vec<String>>) -> (u16, Value) {
        let reason = form.get("cancellation_reason").and_then(|v| v.first()).cloned();
        if let Some(r) = &reason {
            if !["duplicate", "fraudulent", "requested_by_customer", "abandoned"].contains(&r.as_str()) {
                return stripe_error(
                    400,
                    "invalid_request_error",
                    Some("parameter_invalid_string"),
                    &format!("Invalid cancellation_reason: {r}"),
                );
            }
        }
        let pi = {
            let mut inner = lock(&self.state.inner);
            inner.pay.pending.remove(id);
            let Some(pi) = inner.pay.intent_mut(id) else { return missing("payment_intent", id) };
            let status = pi["status"].as_str().unwrap_or("").to_owned();
            if !CANCELABLE.contains(&status.as_str()) {
                return unexpected_state("cancel", &status);
            }
            pi["status"] = json!("canceled");
            pi["canceled_at"] = json!(holdfast::clock::now_s());
            pi["cancellation_reason"] = json!(reason);
            pi.clone()
        };
        self.payment_event("payment_intent.canceled", &pi);
        (200, pi)
    }

    fn confirm_intent(&self, id: &str, form: &HashMap<String, Vec<String>>) -> (u16, Value) {
        let pm = form.get("payment_method").and_then(|v| v.first()).cloned();
        {
            let mut inner = lock(&self.state.inner);
            let Some(pi) = inner.pay.intent_mut(id) else { return missing("payment_intent", id) };
            let status = pi["status"].as_str().unwrap_or("").to_owned();
            if !["requires_payment_method", "requires_confirmation"].contains(&status.as_str()) {
                return unexpected_state("confirm", &status);
            }
            let Some(pm) = pm.clone().or_else(|| pi["payment_method"].as_str().map(str::to_owned)) else {
                return stripe_error(
                    400,
                    "invalid_request_error",
                    Some("payment_intent_unexpected_state"),
                    "You cannot confirm this PaymentIntent because it's missing a payment method.",
                );
            };
            if !pm.starts_with("pm_card_") && pm != "pm_fake_processing" {
                return missing("payment_method", &pm);
            }
            pi["payment_method"] = json!(pm);
            if pm == "pm_fake_processing" {
                pi["status"] = json!("processing");
                let pi = pi.clone();
                drop(inner);
                self.payment_event("payment_intent.processing", &pi);
                return (200, pi);
            }
        }
        let declined = pm.as_deref().is_some_and(|p| p.starts_with("pm_card_chargeDeclined"));
        self.finish(id, !declined, pm.as_deref())
    }

    /// The intent succeeds (a captured charge and its balance transaction) or its attempt fails
    /// (a failed charge; back to `requires_payment_method`), and the event goes out.
    fn finish(&self, id: &str, succeeded: bool, pm: Option<&str>) -> (u16, Value) {
        let (pi, charge_id) = {
            let mut inner = lock(&self.state.inner);
            let pay = &mut inner.pay;
            let charge_id = pay.next_id("ch");
            let txn_id = pay.next_id("txn");
            let now = holdfast::clock::now_s();
            let Some(pi) = pay.intent_mut(id) else { return missing("payment_intent", id) };
            let (amount, currency, metadata) = (pi["amount"].clone(), pi["currency"].clone(), pi["metadata"].clone());
            let pm = pm.map(str::to_owned).or_else(|| pi["payment_method"].as_str().map(str::to_owned));
            pi["latest_charge"] = json!(charge_id);
            if succeeded {
                pi["status"] = json!("succeeded");
                pi["amount_received"] = amount.clone();
                pi["last_payment_error"] = Value::Null;
            } else {
                pi["status"] = json!("requires_payment_method");
                pi["payment_method"] = Value::Null;
                pi["last_payment_error"] = json!({
                    "type": "card_error",
                    "code": "card_declined",
                    "decline_code": "generic_decline",
                    "message": "Your card was declined.",
                    "charge": charge_id,
                });
            }
            let pi = pi.clone();
            pay.charges.push(json!({
                "id": charge_id,
                "object": "charge",
                "amount": amount,
                "amount_captured": if succeeded { amount.clone() } else { json!(0) },
                "amount_refunded": 0,
                "balance_transaction": if succeeded { json!(txn_id) } else { Value::Null },
                "captured": succeeded,
                "created": now,
                "currency": currency,
                "failure_code": if succeeded { Value::Null } else { json!("card_declined") },
                "failure_message": if succeeded { Value::Null } else { json!("Your card was declined.") },
                "livemode": false,
                // Stripe copies the intent's metadata to the charge it creates.
                "metadata": metadata,
                "paid": succeeded,
                "payment_intent": id,
                "payment_method": pm,
                "refunded": false,
                "status": if succeeded { "succeeded" } else { "failed" },
            }));
            if succeeded {
                pay.balance.push(json!({
                    "id": txn_id,
                    "object": "balance_transaction",
                    "amount": amount,
                    "currency": currency,
                    "created": now,
                    "fee": 0,
                    "net": amount,
                    "reporting_category": "charge",
                    "source": charge_id,
                    "status": "pending",
                    "type": "charge",
                }));
            }
            (pi, charge_id)
        };
        if succeeded {
            self.payment_event("payment_intent.succeeded", &pi);
            return (200, pi);
        }
        self.payment_event("payment_intent.payment_failed", &pi);
        let mut e = json!({
            "type": "card_error",
            "code": "card_declined",
            "decline_code": "generic_decline",
            "message": "Your card was declined.",
            "charge": charge_id,
            "payment_intent": pi,
        });
        e["doc_url"] = json!("https://stripe.com/docs/error-codes/card-declined");
        (402, json!({ "error": e }))
    }

    fn balance_transactions(&self, q: &HashMap<String, Vec<String>>, max_page: Option<usize>) -> (u16, Value) {
        let kind = q.get("type").and_then(|v| v.first()).cloned();
        let (all, charges, refunds) = {
            let inner = lock(&self.state.inner);
            let all: Vec<Value> =
                inner.pay.balance.iter().filter(|t| kind.as_deref().is_none_or(|k| t["type"] == k)).cloned().collect();
            (all, inner.pay.charges.clone(), inner.refunds.clone())
        };
        let (s, mut v) = list("/v1/balance_transactions", "balance_transaction", &all, q, max_page);
        let expand = q.get("expand[]").is_some_and(|e| e.iter().any(|x| x == "data.source"));
        if s == 200 && expand {
            if let Some(data) = v["data"].as_array_mut() {
                for t in data {
                    let src = t["source"].clone();
                    if let Some(o) = charges.iter().chain(refunds.iter()).find(|o| o["id"] == src) {
                        t["source"] = o.clone();
                    }
                }
            }
        }
        (s, v)
    }

    /// Sends a `payment_intent.*` event as configured (spawned).
    fn payment_event(&self, kind: &str, pi: &Value) {
        let (event_id, copies) = {
            let mut inner = lock(&self.state.inner);
            inner.events += 1;
            let copies = match inner.pay.payment_events {
                PaymentEvents::Deliver => 1,
                PaymentEvents::Drop => 0,
                PaymentEvents::Twice => 2,
            };
            (format!("evt_fake{:06}", inner.events), copies)
        };
        let body = event(&event_id, kind, pi.clone()).to_string();
        let delivery = Delivery {
            event_id,
            kind: kind.to_owned(),
            object_id: pi["id"].as_str().unwrap_or("").to_owned(),
            refund_id: String::new(),
            attempts: 0,
            status: 0,
        };
        let fake = self.clone();
        tokio::spawn(async move {
            for _ in 0..copies {
                fake.deliver(delivery.clone(), &body).await;
            }
        });
    }
}

#[cfg(test)]
mod tests;
