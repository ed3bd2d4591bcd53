//! Reservations for other order systems: `POST /reservations`,
//! `POST /reservations/{order_id}/confirm`, `POST /reservations/{order_id}/release`.

use super::fields;
use super::orders::ItemRequest;
use crate::clock;
use crate::domain::reservation::{LockStatus, Reservation};
use crate::domain::{OrderId, UserId};
use crate::service::stock::LineRequest;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// `POST /reservations`: holds stock for the caller's order until confirmed, released, or
/// `ttl_seconds` pass. The same `order_id` and body again answers with the same reservation.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationRequest {
    /// The caller's own order id; reservations are namespaced by caller.
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub order_id: OrderId,
    /// The buyer, when the SKUs' per-user limits should apply.
    #[serde(default, deserialize_with = "fields::user_id")]
    #[schema(value_type = Option<String>, pattern = "^[!-~]{1,128}$")]
    pub user_id: Option<UserId>,
    /// How long the hold lasts; default: the payment deadline of Holdfast's own orders.
    #[serde(default, deserialize_with = "fields::ttl_seconds")]
    #[schema(minimum = 1, maximum = 604_800)]
    pub ttl_seconds: Option<i64>,
    #[serde(deserialize_with = "super::orders::order_lines")]
    #[schema(value_type = Vec<ItemRequest>, min_items = 1, max_items = 80)]
    pub items: Vec<LineRequest>,
}

pub(crate) fn lock_status_schema() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some([LockStatus::Frozen, LockStatus::Sold, LockStatus::Released].map(LockStatus::as_str)))
}

/// One reserved line at the price it was reserved at.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReservedItem {
    pub sku: String,
    pub quantity: u32,
    pub unit_price: u64,
    pub currency: String,
}

/// A reservation: `FROZEN` until confirmed (`SOLD`) or released (`RELEASED`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReservationView {
    pub order_id: String,
    #[schema(schema_with = lock_status_schema)]
    pub status: &'static str,
    /// When a hold still `FROZEN` is released.
    #[schema(format = DateTime)]
    pub expires_at: String,
    pub user_id: Option<String>,
    pub items: Vec<ReservedItem>,
}

impl ReservationView {
    pub fn new(order_id: &OrderId, r: &Reservation) -> Self {
        ReservationView {
            order_id: order_id.as_str().to_owned(),
            status: r.status.as_str(),
            expires_at: clock::rfc3339(r.expires_at * 1000),
            user_id: r.user.as_ref().map(|u| u.as_str().to_owned()),
            items: r
                .lines
                .iter()
                .map(|l| ReservedItem {
                    sku: l.sku.as_str().to_owned(),
                    quantity: l.quantity,
                    unit_price: l.unit_price,
                    currency: l.currency.as_str().to_owned(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::body::parse;
    use serde_json::json;

    #[test]
    fn a_reservation_request_bounds_its_ttl_and_user() {
        let r: ReservationRequest = parse(br#"{"order_id":"o-1","items":[{"sku":"A","quantity":1}]}"#).unwrap();
        assert_eq!((r.user_id, r.ttl_seconds), (None, None));
        for (k, v) in [
            ("ttl_seconds", json!(0)),
            ("ttl_seconds", json!(fields::MAX_TTL_SECONDS + 1)),
            ("ttl_seconds", json!(i64::MIN)),
            ("ttl_seconds", json!(1.5)),
            ("user_id", json!("a\nb")),
            ("user_id", json!(7)),
            ("order_id", json!("x y")),
        ] {
            let mut b = json!({"order_id": "o-1", "items": [{"sku": "A", "quantity": 1}]});
            b[k] = v.clone();
            let p = parse::<ReservationRequest>(b.to_string().as_bytes()).unwrap_err();
            assert_eq!(p.field.as_deref(), Some(k), "{k}: {v}");
        }
    }
}
