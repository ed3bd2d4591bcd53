//! Stripe's webhook: `POST /payments/stripe`, signed with `Stripe-Signature`
//! (docs/after-sale.md, "Stripe").
//!
//! Unlike every other body of this API these types do **not** deny unknown fields: the sender
//! is Stripe, whose objects carry dozens of fields and gain new ones without notice (its API
//! versioning policy counts added fields as backwards compatible). Only the fields Holdfast
//! acts on are read, and those are checked as strictly as anywhere else.

use super::fields;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use utoipa::ToSchema;

/// A Stripe event as delivered to a webhook endpoint (only what Holdfast reads is described).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct StripeEvent {
    /// `evt_…`
    pub id: String,
    /// `payment_intent.succeeded`, `payment_intent.payment_failed`, `charge.refunded`; any other
    /// type is answered `ignored`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `true` for live-mode events; checked against `STRIPE_LIVEMODE` when that is set.
    #[serde(default)]
    pub livemode: Option<bool>,
    pub data: StripeEventData,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct StripeEventData {
    /// The Stripe object the event is about (a PaymentIntent or a Charge for the types read).
    #[schema(value_type = Object)]
    pub object: serde_json::Value,
}

/// The same envelope with its object read as `T` (validation errors point at
/// `data.object.<field>`).
#[derive(Debug, Clone, Deserialize)]
pub struct EventOf<T> {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: DataOf<T>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DataOf<T> {
    pub object: T,
}

/// The fields of a PaymentIntent that Holdfast reads.
#[derive(Debug, Clone, Deserialize)]
pub struct PaymentIntent {
    /// `pi_…`: the payment id on the order.
    #[serde(deserialize_with = "fields::payment_id")]
    pub id: String,
    /// Minor units asked for.
    pub amount: u64,
    /// Minor units captured (0 on a failed intent).
    #[serde(default)]
    pub amount_received: u64,
    /// ISO 4217 in lower case, as Stripe sends it.
    pub currency: String,
    /// Holdfast creates its intents with `metadata.order_id`.
    #[serde(default)]
    pub metadata: HashMap<String, String>,
}

/// The fields of a Charge that Holdfast reads (`charge.refunded`).
#[derive(Debug, Clone, Deserialize)]
pub struct Charge {
    pub id: String,
    #[serde(default)]
    pub payment_intent: Option<String>,
    #[serde(default)]
    pub metadata: HashMap<String, String>,
    #[serde(default)]
    pub refunds: Option<List<Refund>>,
}

/// A Stripe list object (`{"object":"list","data":[…],"has_more":…}`).
#[derive(Debug, Clone, Deserialize)]
pub struct List<T> {
    pub data: Vec<T>,
}

/// The fields of a Refund that Holdfast reads (its webhook, the refunds adapter's answer).
#[derive(Debug, Clone, Deserialize)]
pub struct Refund {
    /// `re_…`
    pub id: String,
    #[serde(default)]
    pub amount: u64,
    /// `pending`, `requires_action`, `succeeded`, `failed` or `canceled`.
    #[serde(default)]
    pub status: Option<String>,
    /// Holdfast's refund id and order id, set when the refund was created.
    #[serde(default)]
    pub metadata: HashMap<String, String>,
}

/// What one Stripe event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StripeResult {
    /// The order is now paid.
    Applied,
    /// This payment (or refund) was seen before; nothing changed.
    Duplicate,
    /// The order was closed or paid by another payment: a refund is owed.
    RefundRequested,
    /// A failed payment, recorded; the order stays open.
    FailedRecorded,
    /// At least one refund of the charge is now confirmed on its order.
    RefundConfirmed,
    /// Not an event Holdfast acts on, or not about a Holdfast order (no `metadata.order_id`).
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct StripeAnswer {
    pub result: StripeResult,
    /// The order the event was applied to (absent when ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;
    use serde_json::json;

    fn intent() -> serde_json::Value {
        json!({"id": "evt_1", "object": "event", "api_version": "2024-06-20", "livemode": false,
               "type": "payment_intent.succeeded",
               "data": {"object": {"id": "pi_1", "object": "payment_intent", "amount": 500,
                                   "amount_received": 500, "currency": "eur", "status": "succeeded",
                                   "latest_charge": "ch_1", "metadata": {"order_id": "o1"},
                                   "a_field_stripe_added_tomorrow": {"x": 1}}}})
    }

    #[test]
    fn unknown_fields_of_stripe_objects_are_ignored() {
        let e = parse::<EventOf<PaymentIntent>>(intent().to_string().as_bytes()).unwrap();
        assert_eq!(e.data.object.id, "pi_1");
        assert_eq!(e.data.object.amount_received, 500);
        assert_eq!(e.data.object.metadata["order_id"], "o1");
        assert_eq!(parse::<StripeEvent>(intent().to_string().as_bytes()).unwrap().kind, "payment_intent.succeeded");
    }

    #[test]
    fn the_fields_read_are_checked_and_named() {
        for (k, v) in [("amount", json!(-1)), ("currency", json!(5)), ("id", json!("")), ("metadata", json!([]))] {
            let mut b = intent();
            b["data"]["object"][k] = v;
            let p = parse::<EventOf<PaymentIntent>>(b.to_string().as_bytes()).unwrap_err();
            assert_eq!(p.field.as_deref(), Some(format!("data.object.{k}").as_str()), "{k}");
        }
    }

    #[test]
    fn a_charge_carries_its_refunds() {
        let c = json!({"id": "evt_2", "type": "charge.refunded", "data": {"object": {"id": "ch_1", "object": "charge",
            "metadata": {"order_id": "o1"}, "refunds": {"object": "list", "has_more": false, "data": [
                {"id": "re_1", "object": "refund", "amount": 500, "status": "succeeded", "metadata": {"refund_id": "r1"}}]}}}});
        let e = parse::<EventOf<Charge>>(c.to_string().as_bytes()).unwrap();
        let r = &e.data.object.refunds.unwrap().data[0];
        assert_eq!((r.id.as_str(), r.amount, r.metadata["refund_id"].as_str()), ("re_1", 500, "r1"));
    }
}
