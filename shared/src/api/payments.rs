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
    /// Minor units; must equal the order's amount.
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
