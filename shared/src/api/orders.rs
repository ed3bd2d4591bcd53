//! Orders: `POST /orders`, `GET /orders`, `GET /orders/{order_id}`, `POST /orders/{order_id}/cancel`.

use super::body::Object;
use super::fields::{self, MAX_ITEMS};
use crate::clock;
use crate::domain::model::Day;
use crate::domain::model::MAX_DATES;
use crate::domain::order::{Order, OrderDetails, ALL_STATUSES};
use crate::domain::reservation::MAX_LINES;
use crate::domain::supplier::BookingStatus;
use crate::domain::{CampaignId, Quantity, Sku};
use crate::service::stock::LineRequest;
use serde::de::Error as _;
use serde::Deserializer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

mod record;
pub use record::{DeliveryBody, OrderLogEntryView, OrderLogView, RemarkText};

/// One line as a client asks for it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemRequest {
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$", example = "SKU-HOODIE-M")]
    pub sku: Sku,
    #[serde(deserialize_with = "fields::quantity")]
    #[schema(value_type = u32, minimum = 1, maximum = 10000)]
    pub quantity: Quantity,
    /// Buy under this campaign (its price, quota, window and limits). One SKU is bought under
    /// one campaign, or none, per order.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub campaign_id: Option<CampaignId>,
    /// For a SKU sold by date (unit `CALENDAR`): the dates, each taking `quantity`; all or none.
    /// A line with dates names its SKU once per order.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 366, example = json!(["2027-03-01", "2027-03-02"]))]
    pub dates: Option<Vec<Day>>,
}

/// `POST /orders`. The same `Idempotency-Key` with the same body answers with the same order.
#[derive(Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrderRequest {
    /// Lines are merged by SKU; at most 20 distinct SKUs.
    #[serde(deserialize_with = "order_lines")]
    #[schema(value_type = Vec<ItemRequest>, min_items = 1, max_items = 80)]
    pub items: Vec<LineRequest>,
    /// The admission token of a queued campaign's items, from `GET /campaigns/{campaign_id}/queue/me`
    /// once `ADMITTED` (docs/waiting-room.md); spent by the checkout's freeze.
    #[serde(default)]
    #[schema(max_length = 1024)]
    pub admission_token: Option<String>,
    /// Where the goods go (docs/order-record.md). Shown only to the order's owner and admins;
    /// never in a log line or an event.
    #[serde(default)]
    pub delivery: Option<DeliveryBody>,
    /// The buyer's note: at most 200 characters, no control characters; empty is none.
    #[serde(default, deserialize_with = "record::remark")]
    #[schema(max_length = 200)]
    pub remark: Option<String>,
    /// Minor units off the amount: 0 ≤ discount < amount (a discount of the whole amount is
    /// refused: a free order has no payment). Payment charges `pay_amount = amount − discount`.
    #[serde(default, deserialize_with = "record::discount")]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub discount: u64,
}

impl std::fmt::Debug for CreateOrderRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateOrderRequest")
            .field("items", &self.items)
            .field("admission_token", &self.admission_token.as_ref().map(|_| "<redacted>"))
            .field("details", &self.details())
            .finish()
    }
}

impl CreateOrderRequest {
    /// The order record this checkout asks for.
    pub fn details(&self) -> OrderDetails {
        OrderDetails {
            delivery: self.delivery.clone().map(Into::into),
            remark: self.remark.clone(),
            discount: self.discount,
        }
    }
}

/// One line of an order, at the unit price it was ordered at.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderItem {
    pub sku: String,
    pub quantity: u32,
    /// Minor units of the order's currency (per date, for a line with dates).
    pub unit_price: u64,
    /// The dates of a line of a SKU sold by date.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<String>)]
    pub dates: Vec<String>,
}

pub(crate) fn order_status_schema() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some(ALL_STATUSES.iter().map(|s| s.as_str())))
}

/// A backorder checkout accepted while the store was out of reach (202): recorded, not an
/// order yet. It is written under `order_id` once the store answers (`GET /orders/{order_id}`
/// is 404 until then; a retry with the same Idempotency-Key is answered the order once it is
/// written). Prices are the list prices known when it was recorded; the written order carries
/// the prices its stock was taken at (docs/inventory-models.md, "Accepted during a store outage").
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RecordedCheckoutView {
    pub order_id: String,
    /// Always `RECORDED`.
    #[schema(example = "RECORDED")]
    pub status: &'static str,
    pub items: Vec<OrderItem>,
    pub amount: u64,
    pub discount: u64,
    pub pay_amount: u64,
    pub currency: String,
    #[schema(format = DateTime)]
    pub recorded_at: String,
}

impl From<&crate::service::orders::Recorded> for RecordedCheckoutView {
    fn from(r: &crate::service::orders::Recorded) -> Self {
        RecordedCheckoutView {
            order_id: r.order_id.as_str().to_owned(),
            status: "RECORDED",
            items: r
                .lines
                .iter()
                .map(|(sku, q, price)| OrderItem {
                    sku: sku.as_str().to_owned(),
                    quantity: q.get(),
                    unit_price: *price,
                    dates: Vec::new(),
                })
                .collect(),
            amount: r.amount,
            discount: r.details.discount,
            pay_amount: r.amount.saturating_sub(r.details.discount),
            currency: r.currency.as_str().to_owned(),
            recorded_at: clock::rfc3339(r.recorded_at * 1000),
        }
    }
}

/// An order as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderView {
    pub order_id: String,
    pub user_id: String,
    #[schema(schema_with = order_status_schema)]
    pub status: &'static str,
    pub items: Vec<OrderItem>,
    /// Σ unit_price × quantity, computed by the server.
    pub amount: u64,
    /// Minor units off the amount (0 when none was given).
    pub discount: u64,
    /// What payment charges: `amount − discount`.
    pub pay_amount: u64,
    pub currency: String,
    /// The payment deadline; unpaid by then, the order expires and its stock is released.
    #[schema(format = DateTime)]
    pub pay_expire_at: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Incremented by every change of the order.
    pub version: u64,
    /// The payment applied to the order, once paid.
    pub payment_id: Option<String>,
    /// Payments that arrived for a closed or already paid order, each owed a refund.
    pub refunds_requested: usize,
    /// A SUPPLIER order's bookings, one per line (docs/suppliers.md); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supplier: Vec<SupplierBookingView>,
    /// Payments started for the order, oldest first (docs/payments.md); absent if none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub payments: Vec<super::payments::PaymentAttemptView>,
    /// A refund held for an admin's review, and its decision (docs/payments.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_review: Option<RefundReviewView>,
    /// Where the goods go, if the checkout said (docs/order-record.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryBody>,
    /// The buyer's note, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub remark: Option<RemarkText>,
}

/// A buyer's refund held for review.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RefundReviewView {
    pub reason: String,
    /// `codes_revealed`, `supplier_confirmed` or `amount_above_threshold`.
    pub because: String,
    #[schema(format = DateTime)]
    pub requested_at: String,
    /// Absent until decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// The deciding admin's `sub`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// One supplier booking of an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SupplierBookingView {
    pub sku: String,
    /// The supplier's booking id (null until the supplier answered the booking).
    pub booking_id: Option<String>,
    pub status: BookingStatus,
    /// A `SUPPLIER_CODES` line's codes (docs/suppliers.md, "Codes issued by the supplier"):
    /// `PENDING` (being asked for), `GAVE_UP` (retries spent; an operator reissues) or `ISSUED`;
    /// absent before payment and for other lines. The codes themselves: `GET /orders/{id}/codes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ISSUED")]
    pub codes: Option<&'static str>,
}

impl From<&Order> for OrderView {
    fn from(o: &Order) -> Self {
        OrderView {
            order_id: o.id.as_str().to_owned(),
            user_id: o.user.as_str().to_owned(),
            status: o.status.as_str(),
            items: o
                .lines
                .iter()
                .map(|l| OrderItem {
                    sku: l.sku.as_str().to_owned(),
                    quantity: l.quantity,
                    unit_price: l.unit_price,
                    dates: l.dates.iter().map(|d| d.to_string()).collect(),
                })
                .collect(),
            amount: o.amount,
            discount: o.details.discount,
            pay_amount: o.pay_amount(),
            currency: o.currency.as_str().to_owned(),
            pay_expire_at: clock::rfc3339(o.pay_expire_at * 1000),
            created_at: clock::rfc3339(o.created_at_ms),
            version: o.version,
            payment_id: o.payment_id.clone(),
            refunds_requested: o.refund_requests(),
            supplier: o
                .supplier
                .iter()
                .map(|b| SupplierBookingView {
                    sku: b.sku.to_string(),
                    booking_id: b.booking_id.clone(),
                    status: b.status,
                    codes: b.codes.as_ref().map(|c| c.status.as_str()),
                })
                .collect(),
            payments: o.attempts.iter().map(super::payments::PaymentAttemptView::from).collect(),
            refund_review: o.review.as_ref().map(|r| RefundReviewView {
                reason: r.reason.clone(),
                because: r.because.clone(),
                requested_at: clock::rfc3339(r.requested_at_ms),
                approved: r.approved,
                decided_by: r.decided_by.clone(),
            }),
            delivery: o.details.delivery.as_ref().map(DeliveryBody::from),
            remark: o.details.remark.clone().map(RemarkText),
        }
    }
}

/// A page of the caller's orders, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderList {
    pub orders: Vec<OrderView>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

pub const DEFAULT_PAGE: usize = 20;
pub const MAX_PAGE: usize = 100;

/// `[{"sku","quantity","campaign_id"?}]` → lines merged by SKU and sorted: 1..=MAX_LINES
/// distinct SKUs, each total within the quantity bound. One SKU is bought under one campaign (or
/// none) per order: its lines write the same shard items, which one transaction may not touch
/// twice.
pub fn order_lines<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<LineRequest>, D::Error> {
    let items = Vec::<Object<ItemRequest>>::deserialize(d)?;
    if items.is_empty() {
        return Err(D::Error::custom("items must not be empty"));
    }
    if items.len() > MAX_ITEMS {
        return Err(D::Error::custom(format!("at most {MAX_ITEMS} items, {MAX_LINES} distinct SKUs, per order")));
    }
    let mut merged: BTreeMap<Sku, (Quantity, Option<CampaignId>, Vec<Day>)> = BTreeMap::new();
    for Object(ItemRequest { sku, quantity, campaign_id, dates }) in items {
        let dates = match dates {
            Some(d) if d.is_empty() => return Err(D::Error::custom(format!("{sku}: dates must not be empty"))),
            Some(d) if d.len() > MAX_DATES => {
                return Err(D::Error::custom(format!("{sku}: at most {MAX_DATES} dates per line")))
            }
            d => {
                let mut d = d.unwrap_or_default();
                d.sort();
                d
            }
        };
        let total = match merged.get(&sku) {
            Some((_, c, _)) if *c != campaign_id => {
                return Err(D::Error::custom(format!(
                    "{sku} appears under two campaigns (or with and without one); order it once"
                )))
            }
            Some((_, _, d)) if !d.is_empty() || !dates.is_empty() => {
                return Err(D::Error::custom(format!("{sku} is ordered by date: name it once, with all its dates")))
            }
            Some((prev, _, _)) => prev.checked_add(quantity).map_err(|e| D::Error::custom(format!("{sku}: {e}")))?,
            None => quantity,
        };
        merged.insert(sku, (total, campaign_id, dates));
    }
    if merged.len() > MAX_LINES {
        return Err(D::Error::custom(format!("at most {MAX_LINES} distinct SKUs per order")));
    }
    Ok(merged
        .into_iter()
        .map(|(sku, (quantity, campaign, dates))| LineRequest { sku, quantity, campaign, dates })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;
    use crate::http::Code;
    use serde_json::{json, Value};

    fn items(v: Value) -> Result<Vec<LineRequest>, crate::http::Problem> {
        parse::<CreateOrderRequest>(v.to_string().as_bytes()).map(|b| b.items)
    }

    #[test]
    fn duplicate_skus_are_merged_and_sorted() {
        let l = items(json!({"items":[{"sku":"B","quantity":1},{"sku":"A","quantity":2},{"sku":"B","quantity":3}]}))
            .unwrap();
        assert_eq!(l.iter().map(|l| (l.sku.as_str(), l.quantity.get())).collect::<Vec<_>>(), vec![("A", 2), ("B", 4)]);
    }

    #[test]
    fn bad_items_are_refused_with_a_reason_and_the_field() {
        for (b, field) in [
            (json!({}), None),
            (json!({"items": []}), Some("items")),
            (json!({"items": {}}), Some("items")),
            (json!({"items": [1]}), Some("items[0]")),
            (json!({"items": [["A", 1]]}), Some("items[0]")),
            (json!({"items": [{"sku": "A"}]}), Some("items[0]")),
            (json!({"items": [{"sku": "A", "quantity": 0}]}), Some("items[0].quantity")),
            (json!({"items": [{"sku": "A", "quantity": -1}]}), Some("items[0].quantity")),
            (json!({"items": [{"sku": "A", "quantity": 1.5}]}), Some("items[0].quantity")),
            (json!({"items": [{"sku": "A", "quantity": "1"}]}), Some("items[0].quantity")),
            (json!({"items": [{"sku": "A", "quantity": 99999999999u64}]}), Some("items[0].quantity")),
            (json!({"items": [{"sku": "A b", "quantity": 1}]}), Some("items[0].sku")),
            (json!({"items": [{"sku": 5, "quantity": 1}]}), Some("items[0].sku")),
            (json!({"items": [{"sku": "A", "quantity": 1, "price": 0}]}), Some("items[0].price")),
            (json!({"items": [{"sku": "A", "quantity": 6000}, {"sku": "A", "quantity": 6000}]}), Some("items")),
            (json!({"items": [{"sku": "A", "quantity": 1}], "amount": 0}), Some("amount")),
            (json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": "c b"}]}), Some("items[0].campaign_id")),
            (json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": 3}]}), Some("items[0].campaign_id")),
            (
                json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": "c"}, {"sku": "A", "quantity": 1}]}),
                Some("items"),
            ),
        ] {
            let p = items(b.clone()).unwrap_err();
            assert_eq!((p.code, p.field.as_deref()), (Code::ValidationFailed, field), "{b}: {}", p.detail);
        }
        let many: Vec<Value> = (0..21).map(|i| json!({"sku": format!("S{i}"), "quantity": 1})).collect();
        assert_eq!(items(json!({ "items": many })).unwrap_err().field.as_deref(), Some("items"));
        let repeated: Vec<Value> = (0..81).map(|_| json!({"sku": "A", "quantity": 1})).collect();
        assert_eq!(items(json!({ "items": repeated })).unwrap_err().field.as_deref(), Some("items"));
    }
}

/// One code of a paid order (docs/code-pools.md).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderCode {
    pub sku: String,
    pub code: String,
    /// `VALID`, `REDEEMED` or `EXPIRED` (docs/code-pools.md, "Redemption", "Expiry").
    #[schema(example = "VALID")]
    pub state: &'static str,
    /// When the code stops being valid (RFC 3339); null when it never expires.
    pub expire_time: Option<String>,
    /// When the merchant redeemed it (RFC 3339); null until then.
    pub redeemed_at: Option<String>,
}

/// `GET /orders/{order_id}/codes`: the codes of a paid order, for its owner only.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderCodes {
    pub order_id: String,
    pub codes: Vec<OrderCode>,
}
