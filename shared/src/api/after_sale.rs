//! After the money (docs/after-sale.md): the buyer's refund, receipt and return requests, the
//! admin's ship, return-received and cancel, the refund webhook, and the customer-service view.

use super::fields;
use super::orders::OrderView;
use crate::clock;
use crate::domain::order::Order;
use crate::domain::reservation::Reservation;
use crate::domain::OrderId;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /orders/{order_id}/refund`, `POST /orders/{order_id}/return`, `POST /admin/orders/{order_id}/cancel`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonRequest {
    /// 1-500 characters, no control characters.
    #[serde(deserialize_with = "fields::reason")]
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// `POST /admin/orders/{order_id}/refund-decision`: approve or reject a buyer's refund held for
/// review (docs/payments.md, "Refund review").
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundDecisionRequest {
    pub approve: bool,
    /// The request decided: the held refund's `requested_at` as `GET /admin/refund-reviews` or
    /// `GET /admin/orders/{order_id}` shows it (RFC 3339, as shown). When given and another
    /// request waits now (the first was decided and the buyer asked again), the decision is
    /// refused 409 `stale_decision` and nothing changes.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub requested_at: Option<String>,
    /// 1-500 characters, no control characters.
    #[serde(deserialize_with = "fields::reason")]
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// `GET /admin/refund-reviews`: buyers' refunds held for an admin, oldest request first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RefundReviewList {
    pub reviews: Vec<HeldRefundView>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// One held refund: what an admin needs to decide it (`POST /admin/orders/{order_id}/refund-decision`
/// with this `requested_at`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct HeldRefundView {
    pub order_id: String,
    pub user_id: String,
    pub amount: u64,
    pub currency: String,
    /// The buyer's reason.
    pub reason: String,
    /// Why it waits: `codes_revealed`, `supplier_confirmed` or `amount_above_threshold`.
    pub because: String,
    #[schema(format = DateTime)]
    pub requested_at: String,
    /// Seconds since the request, when the page was read.
    pub age_seconds: i64,
}

impl HeldRefundView {
    /// The view of a held order (`None` if it holds no review).
    pub fn of(o: &Order, now_ms: i64) -> Option<Self> {
        let r = o.review.as_ref()?;
        Some(HeldRefundView {
            order_id: o.id.to_string(),
            user_id: o.user.to_string(),
            // what a refund gives back: the pay amount (docs/order-record.md)
            amount: o.pay_amount(),
            currency: o.currency.to_string(),
            reason: r.reason.clone(),
            because: r.because.clone(),
            requested_at: clock::rfc3339(r.requested_at_ms),
            age_seconds: (now_ms - r.requested_at_ms).max(0) / 1000,
        })
    }
}

/// `POST /admin/orders/{order_id}/ship`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ShipRequest {
    #[serde(deserialize_with = "fields::carrier")]
    #[schema(min_length = 1, max_length = 64)]
    pub carrier: String,
    #[serde(deserialize_with = "fields::tracking_number")]
    #[schema(pattern = "^[!-~]{1,64}$")]
    pub tracking_number: String,
}

/// `POST /admin/orders/{order_id}/return-received`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnReceivedRequest {
    /// `true`: the goods go back on sale; `false`: written off (counters unchanged).
    pub restock: bool,
}

/// Whether a refund went through at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
pub enum RefundWebhookStatus {
    #[serde(rename = "SUCCEEDED")]
    Succeeded,
    #[serde(rename = "FAILED")]
    Failed,
}

/// `POST /payments/refunds`: the generic provider's refund confirmation, signed like the
/// payment callback (`X-Signature`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundWebhook {
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub order_id: OrderId,
    /// Holdfast's refund id, as sent to the provider.
    #[serde(deserialize_with = "fields::payment_id")]
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub refund_id: String,
    /// The provider's own id for the refund.
    #[serde(deserialize_with = "fields::payment_id")]
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub provider_refund_id: String,
    /// Minor units; must equal the refund's amount.
    pub amount: u64,
    pub status: RefundWebhookStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RefundWebhookAnswer {
    /// `refund_confirmed`, `duplicate` or `refund_failure_recorded`.
    pub result: &'static str,
    pub order_id: String,
}

/// One refund on an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RefundView {
    pub refund_id: String,
    pub payment_id: String,
    /// `generic` or `stripe`.
    pub provider: String,
    pub amount: u64,
    pub currency: String,
    /// `payment_not_applied`, `oversold`, `buyer_request` or `return`.
    pub reason: String,
    /// `REQUESTED`, `ISSUED` or `CONFIRMED`.
    pub status: String,
    pub provider_refund_id: Option<String>,
    #[schema(format = DateTime)]
    pub requested_at: String,
    pub failures: u32,
}

/// One payment notice recorded on an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct PaymentView {
    pub payment_id: String,
    pub provider: String,
    pub succeeded: bool,
    pub amount: u64,
    pub currency: String,
    /// `applied`, `refund_requested`, `failed_recorded` or `amount_mismatch`.
    pub outcome: String,
    #[schema(format = DateTime)]
    pub at: String,
}

/// One line of the order's lock record, with the shard pieces it holds.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LockLineView {
    pub sku: String,
    pub quantity: u32,
    /// `[shard, quantity]` pairs.
    pub pieces: Vec<[u32; 2]>,
    pub campaign_id: Option<String>,
    /// A `WAREHOUSE` SKU's line: the warehouses it was allocated to, with their units
    /// (docs/inventory-models.md, "Warehouses"); absent for every other line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocation: Vec<WarehouseUnits>,
    /// A `BACKORDER` SKU's line: `BACKORDERED` while units of it still wait for a restock (the
    /// order ships once it is `FILLED`); absent for every other line (docs/inventory-models.md,
    /// "Backorders (oversell allowed)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backorder: Option<BackorderLineView>,
}

/// The backorder part of a lock line: `short` units were missing at order, `filled` of them came
/// from restocks since, `waiting` still wait.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct BackorderLineView {
    /// `BACKORDERED` (units still wait) or `FILLED`.
    pub state: &'static str,
    pub short: u32,
    pub filled: u32,
    pub waiting: u32,
}

/// Units of one order line taken from one warehouse.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct WarehouseUnits {
    pub warehouse: String,
    pub quantity: u32,
}

/// The order's lock record: `FROZEN`, `SOLD`, `RELEASED` or `RESTOCKED`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LockView {
    pub reservation_id: String,
    pub status: &'static str,
    pub oversold: bool,
    /// A code order's codes: `REVEALED` (shown to the buyer), `WITHDRAWN` (refunded unseen),
    /// absent while neither happened (docs/code-pools.md, "Reveal and refund").
    #[schema(value_type = Option<String>)]
    pub code_fate: Option<&'static str>,
    pub lines: Vec<LockLineView>,
}

/// `GET /admin/orders/{order_id}`: everything customer service needs about one order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AdminOrderView {
    pub order: OrderView,
    pub cancel_reason: Option<String>,
    pub shipment: Option<serde_json::Value>,
    #[serde(rename = "return")]
    pub return_info: Option<serde_json::Value>,
    /// Absent only for an order whose lock was never written (a fenced checkout).
    pub locks: Vec<LockView>,
    pub payments: Vec<PaymentView>,
    pub refunds: Vec<RefundView>,
    /// Stock journal entries caused by this order (its freeze, sale, release, restock).
    pub journal: Vec<super::stock::JournalEntryBody>,
}

/// An enum's wire name (its `snake_case` serde form); one that does not serialise to a string is
/// an error, never an empty field.
fn snake<T: Serialize>(v: &T) -> serde_json::Result<String> {
    match serde_json::to_value(v)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(serde::ser::Error::custom(format!("{other} is not a name"))),
    }
}

impl AdminOrderView {
    /// The view of an order; a part that does not serialise is an error (nothing is left out).
    pub fn new(
        o: &Order,
        lock: Option<&Reservation>,
        journal: Vec<super::stock::JournalEntryBody>,
    ) -> serde_json::Result<Self> {
        Ok(AdminOrderView {
            order: OrderView::from(o),
            cancel_reason: o.cancel_reason.clone(),
            shipment: o.shipment.as_ref().map(serde_json::to_value).transpose()?,
            return_info: o.return_info.as_ref().map(serde_json::to_value).transpose()?,
            locks: lock
                .map(|r| LockView {
                    reservation_id: r.id.to_string(),
                    status: r.status.as_str(),
                    oversold: r.oversold,
                    code_fate: r.code_fate.map(|f| f.as_str()),
                    lines: r
                        .lines
                        .iter()
                        .map(|l| LockLineView {
                            sku: l.sku.to_string(),
                            quantity: l.quantity,
                            pieces: l.pieces.iter().map(|p| [u32::from(p.shard), p.quantity]).collect(),
                            campaign_id: l.campaign.as_ref().map(|c| c.campaign_id.to_string()),
                            allocation: l
                                .draws
                                .iter()
                                .filter_map(|d| {
                                    let w = d.warehouse.as_ref()?;
                                    Some(WarehouseUnits { warehouse: w.to_string(), quantity: d.quantity })
                                })
                                .collect(),
                            backorder: l.backorder.map(|b| BackorderLineView {
                                state: if b.open() > 0 { "BACKORDERED" } else { "FILLED" },
                                short: b.short,
                                filled: b.filled,
                                waiting: b.open(),
                            }),
                        })
                        .collect(),
                })
                .into_iter()
                .collect(),
            payments: o
                .payments
                .iter()
                .map(|p| {
                    Ok(PaymentView {
                        payment_id: p.payment_id.clone(),
                        provider: snake(&p.provider)?,
                        succeeded: p.succeeded,
                        amount: p.amount,
                        currency: p.currency.clone(),
                        outcome: snake(&p.outcome)?,
                        at: clock::rfc3339(p.at_ms),
                    })
                })
                .collect::<serde_json::Result<_>>()?,
            refunds: o
                .refunds
                .iter()
                .map(|r| {
                    Ok(RefundView {
                        refund_id: r.refund_id.clone(),
                        payment_id: r.payment_id.clone(),
                        provider: snake(&r.provider)?,
                        amount: r.amount,
                        currency: r.currency.clone(),
                        reason: snake(&r.reason)?,
                        status: snake(&r.status)?,
                        provider_refund_id: r.provider_refund_id.clone(),
                        requested_at: clock::rfc3339(r.requested_at_ms),
                        failures: r.failures,
                    })
                })
                .collect::<serde_json::Result<_>>()?,
            journal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;

    #[test]
    fn a_name_that_is_not_a_string_is_an_error_not_an_empty_field() {
        assert_eq!(snake(&crate::domain::order::Provider::Stripe).ok().as_deref(), Some("stripe"));
        assert!(snake(&5).is_err());
        assert!(snake(&Some(())).is_err());
    }
    use serde_json::json;

    #[test]
    fn bodies_are_bounded_and_closed() {
        assert!(parse::<ReasonRequest>(br#"{"reason":"too small"}"#).is_ok());
        for (body, field) in [
            (json!({"reason": ""}), "reason"),
            (json!({"reason": "a\u{7}b"}), "reason"),
            (json!({"reason": "x".repeat(501)}), "reason"),
            (json!({"reason": "ok", "refund": 1}), "refund"),
        ] {
            assert_eq!(parse::<ReasonRequest>(body.to_string().as_bytes()).unwrap_err().field.as_deref(), Some(field));
        }
        assert!(parse::<ShipRequest>(br#"{"carrier":"DHL","tracking_number":"JD014600003"}"#).is_ok());
        for (body, field) in [
            (json!({"carrier": "DHL", "tracking_number": "has space"}), "tracking_number"),
            (json!({"carrier": "", "tracking_number": "T"}), "carrier"),
        ] {
            assert_eq!(parse::<ShipRequest>(body.to_string().as_bytes()).unwrap_err().field.as_deref(), Some(field));
        }
        assert!(parse::<ReturnReceivedRequest>(br#"{"restock":"yes"}"#).is_err());
        assert!(parse::<ReturnReceivedRequest>(br#"{}"#).is_err());
    }
}
