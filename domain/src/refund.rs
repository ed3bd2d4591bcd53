//! Refunds recorded on the order (docs/after-sale.md, "Refunds"). The order item is the one
//! source of truth: a refund is asked for by writing a REQUESTED record (compare-and-set), the
//! refunds function issues it at the provider (idempotent by `refund_id`) and marks it ISSUED,
//! and the provider's signed webhook marks it CONFIRMED. The stream announces each new record
//! as `RefundRequested`, so nothing asked for is lost, and reconcile re-drives a record left
//! REQUESTED.

use serde::{Deserialize, Serialize};

/// Why money goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundReason {
    /// Money arrived on an order that was closed, already paid, or with the wrong amount.
    PaymentNotApplied,
    /// The order was paid but its stock could not be sold (oversell).
    Oversold,
    /// The buyer asked before shipping.
    BuyerRequest,
    /// The goods came back.
    Return,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Asked for; not yet accepted by the provider.
    Requested,
    /// Accepted by the provider (it holds our `refund_id`); its webhook has not confirmed yet.
    Issued,
    /// The provider confirmed the money went back.
    Confirmed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundRecord {
    /// Ours, and the provider's idempotency key: the same id never refunds twice.
    pub refund_id: String,
    /// The payment the money goes back to, and the provider it came through.
    pub payment_id: String,
    #[serde(default)]
    pub provider: super::payment::Provider,
    /// Minor units.
    pub amount: u64,
    pub currency: String,
    pub reason: RefundReason,
    pub status: RefundStatus,
    /// The provider's id for the refund, once issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_refund_id: Option<String>,
    pub requested_at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at_ms: Option<i64>,
    /// Provider attempts that failed (the refunds queue retries, then its DLQ).
    #[serde(default)]
    pub failures: u32,
    /// When the provider's webhook first reported this refund FAILED: a replayed FAILED notice
    /// is a duplicate, not another failure (security review L1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reported_at_ms: Option<i64>,
}

impl RefundRecord {
    /// A new REQUESTED refund of `amount` of the payment `p`.
    pub fn requested(
        p: &super::payment::PaymentRecord,
        amount: u64,
        reason: RefundReason,
        now_ms: i64,
    ) -> RefundRecord {
        RefundRecord {
            refund_id: refund_id_for(&p.payment_id),
            payment_id: p.payment_id.clone(),
            provider: p.provider,
            amount,
            currency: p.currency.clone(),
            reason,
            status: RefundStatus::Requested,
            provider_refund_id: None,
            requested_at_ms: now_ms,
            issued_at_ms: None,
            confirmed_at_ms: None,
            failures: 0,
            failure_reported_at_ms: None,
        }
    }
}

/// The refund id of money that `payment_id` brought in: one refund per payment, whoever asks.
pub fn refund_id_for(payment_id: &str) -> String {
    format!("rf_{payment_id}")
}
