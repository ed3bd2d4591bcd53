//! `POST /payments/stripe` (a route of the payment-callback function): Stripe's signed webhook
//! (docs/after-sale.md, "Stripe"). Verifies `Stripe-Signature` over the raw body before reading
//! anything, then maps the few event types Holdfast acts on onto the same services the generic
//! callback uses; every other type is answered `ignored` with a 200 so Stripe stops retrying.

use crate::api::body;
use crate::api::stripe::{Charge, EventOf, PaymentIntent, StripeAnswer, StripeEvent, StripeResult};
use crate::app::App;
use crate::clock;
use crate::domain::order::Provider;
use crate::domain::{stripe, OrderId};
use crate::http::{self, json_response, Code, Problem, Request, Response};
use crate::service::payments::{self, PaymentError, PaymentNotice};
use crate::service::refunds::{self, ConfirmResult, RefundConfirmation, RefundError};
use crate::telemetry::names;

pub const SUCCEEDED: &str = "payment_intent.succeeded";
pub const FAILED: &str = "payment_intent.payment_failed";
pub const REFUNDED: &str = "charge.refunded";

/// Largest Stripe event accepted. Stripe's events are not ours to size: a charge with its refund
/// list and metadata runs to several KiB and Stripe does not bound it, while the API's 16 KiB
/// limit is for bodies buyers send. A 413 would be re-delivered by Stripe for three days and the
/// event lost; hashing 256 KiB before anything else is cheap.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

pub async fn webhook(app: &App, req: &Request) -> Result<Response, Problem> {
    let raw = http::body_bytes(req, app.config.max_body_bytes.max(MAX_EVENT_BYTES))?;
    let header = http::header(req, "stripe-signature").unwrap_or("");
    let now = clock::now_s();
    // A missing, malformed or stale header is refused before any secret is fetched (review L4).
    stripe::precheck(header, now).map_err(|e| Problem::unauthorized(e.to_string()))?;
    // While an endpoint secret is rolled Stripe signs with both; either configured one verifies
    // (the old one only within the window after the roll: review M1).
    let keys = app.stripe_webhook_keys.as_ref();
    super::common::verify_with_any_key(keys, "Stripe webhook secret not configured", |k| {
        stripe::verify(k, header, &raw, now)
    })
    .await?;
    let event = body::parse::<StripeEvent>(&raw)?;
    // A test-mode event at a live endpoint (or the reverse) is not about real money here:
    // ignored with a 200 (Stripe would retry a 4xx for days) and counted (the Info finding).
    if let (Some(want), Some(got)) = (app.config.stripe_livemode, event.livemode) {
        if want != got {
            app.count(names::STRIPE_EVENTS_WRONG_MODE, 1);
            tracing::warn!(
                event_id = event.id,
                livemode = got,
                "Stripe event of the other mode than STRIPE_LIVEMODE: ignored"
            );
            return Ok(ignored());
        }
    }
    match event.kind.as_str() {
        SUCCEEDED | FAILED => payment(app, &raw, event.kind == SUCCEEDED).await,
        REFUNDED => refunded(app, &raw).await,
        other => {
            tracing::info!(event_id = event.id, kind = other, "Stripe event ignored: not a type Holdfast acts on");
            Ok(ignored())
        }
    }
}

fn ignored() -> Response {
    json_response(200, &StripeAnswer { result: StripeResult::Ignored, order_id: None })
}

/// Our order of a Stripe object, from its `metadata.order_id`. `None`: not a Holdfast payment
/// (another integration on the same Stripe account, or an order id no order can have). That
/// is answered 200 `ignored` — a 4xx would make Stripe retry it for three days — and counted,
/// so a Holdfast integration that forgot the metadata shows up on the dashboard.
pub fn order_of(metadata: &std::collections::HashMap<String, String>) -> Option<OrderId> {
    metadata.get("order_id").and_then(|v| OrderId::parse(v).ok())
}

fn not_ours(app: &App, event_id: &str) -> Response {
    app.count(names::STRIPE_EVENTS_NOT_OURS, 1);
    tracing::warn!(event_id, "Stripe event without a usable metadata.order_id: ignored (not a Holdfast order)");
    ignored()
}

/// The notice a PaymentIntent event gives, or `None` when it is not about a Holdfast order. Pure.
pub fn notice(e: &EventOf<PaymentIntent>, succeeded: bool) -> Option<PaymentNotice> {
    let pi = &e.data.object;
    Some(PaymentNotice {
        provider: Provider::Stripe,
        payment_id: pi.id.clone(),
        order_id: order_of(&pi.metadata)?,
        // What was captured on success; what was asked for on a failure (nothing was captured).
        amount: if succeeded { pi.amount_received } else { pi.amount },
        // Stripe sends ISO 4217 in lower case; orders store it upper case.
        currency: pi.currency.to_ascii_uppercase(),
        succeeded,
    })
}

async fn payment(app: &App, raw: &[u8], succeeded: bool) -> Result<Response, Problem> {
    let e = body::parse::<EventOf<PaymentIntent>>(raw)?;
    let Some(n) = notice(&e, succeeded) else { return Ok(not_ours(app, &e.id)) };
    tracing::info!(event_id = e.id, kind = e.kind, payment_id = n.payment_id, order_id = %n.order_id, "Stripe payment event");
    match payments::apply(app, &n).await {
        Ok(r) => Ok(json_response(
            200,
            &StripeAnswer { result: result_of(r), order_id: Some(n.order_id.as_str().to_owned()) },
        )),
        Err(PaymentError::UnknownOrder) => Err(Problem::not_found("no such order")),
        Err(PaymentError::AmountMismatch) => {
            Err(Problem::new(Code::AmountMismatch, "amount or currency does not match the order"))
        }
        Err(PaymentError::TooManyPayments) => {
            Err(Problem::new(Code::TooManyPayments, "this order has too many payment records"))
        }
        Err(PaymentError::Store(e)) => Err(e.into()),
    }
}

fn result_of(r: payments::PaymentResult) -> StripeResult {
    use payments::PaymentResult as P;
    match r {
        P::Applied => StripeResult::Applied,
        P::Duplicate => StripeResult::Duplicate,
        P::RefundRequested => StripeResult::RefundRequested,
        P::FailedRecorded => StripeResult::FailedRecorded,
    }
}

/// The confirmations a `charge.refunded` carries: one per succeeded refund in
/// `refunds.data`. Refunds still pending (or failed) are skipped; Stripe sends another event
/// when they settle.
pub fn confirmations(order_id: &OrderId, c: &Charge) -> Vec<RefundConfirmation> {
    c.refunds
        .iter()
        .flat_map(|l| l.data.iter())
        .filter(|r| r.status.as_deref() == Some("succeeded"))
        .map(|r| RefundConfirmation {
            provider: Provider::Stripe,
            order_id: order_id.clone(),
            refund_id: r.metadata.get("refund_id").cloned(),
            provider_refund_id: r.id.clone(),
            amount: r.amount,
            succeeded: true,
        })
        .collect()
}

async fn refunded(app: &App, raw: &[u8]) -> Result<Response, Problem> {
    let e = body::parse::<EventOf<Charge>>(raw)?;
    let charge = &e.data.object;
    let Some(order_id) = order_of(&charge.metadata) else { return Ok(not_ours(app, &e.id)) };
    let list = confirmations(&order_id, charge);
    if list.is_empty() {
        tracing::info!(event_id = e.id, charge = charge.id, "charge.refunded without a succeeded refund: ignored");
        return Ok(ignored());
    }
    let mut any_applied = false;
    for c in &list {
        tracing::info!(event_id = e.id, order_id = %order_id, refund = c.provider_refund_id, "Stripe refund confirmed");
        match refunds::confirm(app, c).await {
            Ok(ConfirmResult::Applied) => any_applied = true,
            // (FailureRecorded answers a `succeeded: false` confirmation, which this never sends)
            Ok(_) => {}
            Err(RefundError::UnknownOrder) => return Err(Problem::not_found("no such order")),
            Err(RefundError::UnknownRefund) => return Err(Problem::not_found("no such refund on this order")),
            Err(RefundError::AmountMismatch) => {
                return Err(Problem::new(Code::AmountMismatch, "amount does not match the refund"))
            }
            // not ISSUED yet (Stripe retries), or not this Stripe refund: 409, nothing changed
            Err(e @ RefundError::ConfirmationRefused(_)) => {
                return Err(Problem::new(Code::InvalidTransition, e.to_string()))
            }
            Err(RefundError::Store(e)) => return Err(e.into()),
            // anything else the refunds service may answer: 503, Stripe delivers again
            Err(other) => return Err(Problem::internal(other.to_string())),
        }
    }
    let result = if any_applied { StripeResult::RefundConfirmed } else { StripeResult::Duplicate };
    Ok(json_response(200, &StripeAnswer { result, order_id: Some(order_id.as_str().to_owned()) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::stripe::{List, Refund};
    use std::collections::HashMap;

    fn refund(id: &str, status: &str, rid: Option<&str>) -> Refund {
        Refund {
            id: id.into(),
            amount: 500,
            status: Some(status.into()),
            metadata: rid.map(|r| HashMap::from([("refund_id".to_owned(), r.to_owned())])).unwrap_or_default(),
        }
    }

    #[test]
    fn a_payment_intent_becomes_a_stripe_notice_in_upper_case_currency() {
        let raw = serde_json::json!({"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": {
            "id": "pi_1", "amount": 700, "amount_received": 650, "currency": "eur", "metadata": {"order_id": "o1"}}}});
        let e: EventOf<PaymentIntent> = crate::api::body::parse(raw.to_string().as_bytes()).unwrap();
        let n = notice(&e, true).unwrap();
        assert_eq!(
            (n.provider, n.payment_id.as_str(), n.order_id.as_str(), n.amount, n.currency.as_str(), n.succeeded),
            (Provider::Stripe, "pi_1", "o1", 650, "EUR", true)
        );
        assert_eq!(notice(&e, false).unwrap().amount, 700, "a failed intent: the amount asked for");
        let mut foreign = e.clone();
        foreign.data.object.metadata.clear();
        assert!(notice(&foreign, true).is_none());
        foreign.data.object.metadata.insert("order_id".into(), "not an id!".into());
        assert!(notice(&foreign, true).is_none(), "no Holdfast order can have that id");
    }

    #[test]
    fn only_succeeded_refunds_are_confirmed_with_our_refund_id_when_echoed() {
        let c = Charge {
            id: "ch_1".into(),
            payment_intent: Some("pi_1".into()),
            metadata: HashMap::new(),
            refunds: Some(List {
                data: vec![
                    refund("re_1", "succeeded", Some("r1")),
                    refund("re_2", "pending", Some("r2")),
                    refund("re_3", "succeeded", None),
                ],
            }),
        };
        let o = OrderId::parse("o1").unwrap();
        let got = confirmations(&o, &c);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].refund_id.as_deref(), got[0].provider_refund_id.as_str()), (Some("r1"), "re_1"));
        assert_eq!((got[1].refund_id.as_deref(), got[1].provider_refund_id.as_str()), (None, "re_3"));
        assert!(got.iter().all(|c| c.succeeded && c.amount == 500 && c.order_id == o));
        assert!(confirmations(&o, &Charge { refunds: None, ..c }).is_empty());
    }
}
