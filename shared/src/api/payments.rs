//! The payment provider's webhook: `POST /payments/callback`, signed with `X-Signature`.

use super::fields;
use crate::domain::OrderId;
use crate::service::payments::{PaymentNotice, PaymentResult};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
pub enum PaymentStatus {
    #[serde(rename = "SUCCEEDED")]
    Succeeded,
    #[serde(rename = "FAILED")]
    Failed,
}

/// What the provider says happened to one payment of one order.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentCallback {
    #[serde(deserialize_with = "fields::payment_id")]
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub payment_id: String,
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub order_id: OrderId,
    /// Minor units; must equal the order's `pay_amount` (its amount less its discount).
    pub amount: u64,
    /// Must equal the order's currency.
    pub currency: String,
    pub status: PaymentStatus,
}

impl From<PaymentCallback> for PaymentNotice {
    fn from(c: PaymentCallback) -> Self {
        PaymentNotice {
            payment_id: c.payment_id,
            provider: crate::domain::order::Provider::Generic,
            order_id: c.order_id,
            amount: c.amount,
            currency: c.currency,
            succeeded: c.status == PaymentStatus::Succeeded,
        }
    }
}

/// What the callback did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallbackResult {
    /// The order is now paid.
    Applied,
    /// This payment was seen before; nothing changed.
    Duplicate,
    /// The order was closed or paid by another payment: a refund is owed.
    RefundRequested,
    /// A failed payment, recorded; the order stays open.
    FailedRecorded,
}

impl From<PaymentResult> for CallbackResult {
    fn from(r: PaymentResult) -> Self {
        match r {
            PaymentResult::Applied => CallbackResult::Applied,
            PaymentResult::Duplicate => CallbackResult::Duplicate,
            PaymentResult::RefundRequested => CallbackResult::RefundRequested,
            PaymentResult::FailedRecorded => CallbackResult::FailedRecorded,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CallbackAnswer {
    pub result: CallbackResult,
    pub order_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;
    use serde_json::json;

    #[test]
    fn a_notice_has_a_known_status_and_a_non_negative_amount() {
        let ok = json!({"payment_id": "p", "order_id": "o", "amount": 100, "currency": "EUR", "status": "SUCCEEDED"});
        let n = PaymentNotice::from(parse::<PaymentCallback>(ok.to_string().as_bytes()).unwrap());
        assert!(n.succeeded);
        for (k, v) in [
            ("status", json!("MAYBE")),
            ("status", json!("succeeded")),
            ("amount", json!(-5)),
            ("payment_id", json!("")),
            ("payment_id", json!("a b")),
            ("admin", json!(true)),
        ] {
            let mut b = ok.clone();
            b[k] = v.clone();
            let p = parse::<PaymentCallback>(b.to_string().as_bytes()).unwrap_err();
            assert_eq!(p.field.as_deref(), Some(k), "{k}: {v}");
        }
    }
}

/// `POST /orders/{order_id}/payments`: start paying an order (docs/payments.md).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartPaymentRequest {
    /// `generic` or `stripe`; absent = the configured provider (`HOLDFAST_PAYMENT_PROVIDER`).
    #[schema(pattern = "^(generic|stripe)$")]
    pub provider: Option<String>,
}

/// A payment started (or the open one again) for an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct PaymentStarted {
    pub order_id: String,
    /// `PAYING`.
    pub status: &'static str,
    pub payment_id: String,
    /// `generic` or `stripe`.
    pub provider: &'static str,
    /// The order's `pay_amount`: what the provider was asked to take.
    pub amount: u64,
    pub currency: String,
    /// The generic provider's page where the buyer pays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
    /// Stripe: what the buyer's page hands to Stripe.js to confirm the PaymentIntent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// One payment attempt of an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct PaymentAttemptView {
    pub attempt: u32,
    pub payment_id: String,
    pub provider: &'static str,
    /// `OPEN`, `SUCCEEDED`, `FAILED` or `CANCELLED`.
    pub state: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl PaymentStarted {
    /// The answer for `o`'s newest attempt (`None` if it has none).
    pub fn of(o: &crate::domain::order::Order) -> Option<PaymentStarted> {
        let a = o.current_attempt()?;
        Some(PaymentStarted {
            order_id: o.id.to_string(),
            status: o.status.as_str(),
            payment_id: a.payment_id.clone(),
            provider: a.provider.as_str(),
            // what the provider was asked for: the pay amount (docs/order-record.md)
            amount: o.pay_amount(),
            currency: o.currency.to_string(),
            redirect_url: a.redirect_url.clone(),
            client_secret: a.client_secret.clone(),
        })
    }
}

impl From<&crate::domain::order::PaymentAttempt> for PaymentAttemptView {
    fn from(a: &crate::domain::order::PaymentAttempt) -> Self {
        PaymentAttemptView {
            attempt: a.attempt,
            payment_id: a.payment_id.clone(),
            provider: a.provider.as_str(),
            state: serde_json::to_value(a.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
            created_at: crate::clock::rfc3339(a.created_at_ms),
        }
    }
}

/// One difference settlement found (docs/payments.md, "Settlement").
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SettlementMismatch {
    /// `capture_without_order`, `capture_not_recorded`, `paid_without_capture`,
    /// `amount_mismatch`, `refund_not_recorded` or `refund_not_at_provider`.
    pub kind: String,
    /// `generic` or `stripe`.
    pub provider: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_id: Option<String>,
    /// Minor units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<u64>,
}

/// `GET /admin/settlement/{date}`, `POST /admin/settlement/{date}/run`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SettlementReport {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    pub payments_matched: usize,
    pub refunds_matched: usize,
    pub mismatches: Vec<SettlementMismatch>,
}

impl From<crate::service::settlement::Report> for SettlementReport {
    fn from(r: crate::service::settlement::Report) -> Self {
        SettlementReport {
            date: r.date,
            payments_matched: r.payments_matched,
            refunds_matched: r.refunds_matched,
            mismatches: r
                .mismatches
                .into_iter()
                .map(|m| SettlementMismatch {
                    kind: serde_json::to_value(m.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    provider: m.provider,
                    order_id: m.order_id,
                    payment_id: m.payment_id,
                    refund_id: m.refund_id,
                    amount: m.amount,
                })
                .collect(),
        }
    }
}
