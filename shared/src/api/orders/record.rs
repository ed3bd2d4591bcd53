//! The order record on the wire (docs/order-record.md): `delivery`, `remark` and `discount` in
//! `POST /orders` (and a queued campaign's checkout), shown back in the owner's and the admin's
//! order views; and the order log of `GET /admin/orders/{order_id}/log`. Each value is checked by
//! the rules of `domain::order::details` inside deserialisation, so a bad one is a 422
//! `validation_failed` naming its field (`delivery.phone`) and nothing is written.

use crate::clock;
use crate::domain::money::MAX_PRICE;
use crate::domain::order::details::{self as rules, Delivery};
use crate::domain::order::{LogEntry, Order};
use serde::de::Error;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use utoipa::ToSchema;

fn checked<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    rule: impl Fn(&T) -> Result<(), String>,
) -> Result<T, D::Error> {
    let v = T::deserialize(d)?;
    rule(&v).map_err(D::Error::custom)?;
    Ok(v)
}

fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    checked(d, |v: &String| rules::check_name(v))
}

fn phone<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    checked(d, |v: &String| rules::check_phone(v))
}

fn address<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    checked(d, |v: &Vec<String>| rules::check_address(v))
}

fn postcode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, |v: &Option<String>| v.as_deref().map_or(Ok(()), rules::check_postcode))
}

fn country<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    checked(d, |v: &String| rules::check_country(v))
}

/// An empty remark is no remark.
pub(super) fn remark<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v: Option<String> = checked(d, |v: &Option<String>| v.as_deref().map_or(Ok(()), rules::check_remark))?;
    Ok(v.filter(|r| !r.is_empty()))
}

/// Minor units, 0..=MAX_PRICE (whether it fits the amount is judged at checkout).
pub(super) fn discount<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(0),
        Some(n) if n <= MAX_PRICE => Ok(n),
        Some(_) => Err(D::Error::custom(format!("discount must be an integer of minor units in 0..={MAX_PRICE}"))),
    }
}

/// Where the goods go and who takes them. Shown only to the order's owner and to admins.
#[derive(Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryBody {
    /// 1-100 characters, no control characters.
    #[serde(deserialize_with = "name")]
    #[schema(min_length = 1, max_length = 100, example = "Ana Müller")]
    pub name: String,
    /// Digits (at least 4), spaces, `( ) - .`, an optional leading `+`; at most 32 characters.
    #[serde(deserialize_with = "phone")]
    #[schema(max_length = 32, pattern = "^\\+?[0-9 ().-]{4,32}$", example = "+49 30 1234567")]
    pub phone: String,
    /// 1-4 lines of 1-120 characters, no control characters.
    #[serde(deserialize_with = "address")]
    #[schema(min_items = 1, max_items = 4, example = json!(["Hauptstraße 5", "2. OG"]))]
    pub address: Vec<String>,
    /// 1-16 letters, digits, spaces or hyphens.
    #[serde(default, deserialize_with = "postcode", skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[A-Za-z0-9 -]{1,16}$", example = "10115")]
    pub postcode: Option<String>,
    /// ISO 3166-1 alpha-2, upper case.
    #[serde(deserialize_with = "country")]
    #[schema(pattern = "^[A-Z]{2}$", example = "DE")]
    pub country: String,
}

impl fmt::Debug for DeliveryBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeliveryBody(<redacted>)")
    }
}

impl From<DeliveryBody> for Delivery {
    fn from(b: DeliveryBody) -> Self {
        Delivery { name: b.name, phone: b.phone, address: b.address, postcode: b.postcode, country: b.country }
    }
}

impl From<&Delivery> for DeliveryBody {
    fn from(d: &Delivery) -> Self {
        DeliveryBody {
            name: d.name.clone(),
            phone: d.phone.clone(),
            address: d.address.clone(),
            postcode: d.postcode.clone(),
            country: d.country.clone(),
        }
    }
}

/// The buyer's remark in an answer: as typed, but `<redacted>` in `Debug`.
#[derive(Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct RemarkText(pub String);

impl fmt::Debug for RemarkText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One status change of an order.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderLogEntryView {
    #[schema(format = DateTime)]
    pub at: String,
    /// Absent for the order's creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "PAID")]
    pub from: Option<&'static str>,
    #[schema(schema_with = super::order_status_schema)]
    pub to: &'static str,
    /// `buyer`, `admin:<sub>`, `system:<function>` or `provider:<generic|stripe>`.
    #[schema(example = "provider:generic")]
    pub actor: String,
    /// A code: `checkout`, `payment_succeeded`, `refund_requested`, `refund_confirmed` …
    #[schema(example = "payment_succeeded")]
    pub cause: String,
}

impl From<&LogEntry> for OrderLogEntryView {
    fn from(e: &LogEntry) -> Self {
        OrderLogEntryView {
            at: clock::rfc3339(e.at_ms),
            from: e.from.map(|s| s.as_str()),
            to: e.to.as_str(),
            actor: e.actor.to_string(),
            cause: e.cause.clone(),
        }
    }
}

/// `GET /admin/orders/{order_id}/log`: the order's status changes, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OrderLogView {
    pub order_id: String,
    #[schema(schema_with = super::order_status_schema)]
    pub status: &'static str,
    pub entries: Vec<OrderLogEntryView>,
    /// Changes dropped by the bound (the log keeps the creation and the newest 49).
    pub dropped: u32,
}

impl From<&Order> for OrderLogView {
    fn from(o: &Order) -> Self {
        OrderLogView {
            order_id: o.id.to_string(),
            status: o.status.as_str(),
            entries: o.log.entries.iter().map(OrderLogEntryView::from).collect(),
            dropped: o.log.dropped(),
        }
    }
}
