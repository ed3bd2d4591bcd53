//! Readers for bounded request values, used with `#[serde(deserialize_with)]` so a value out of
//! bounds fails inside deserialisation and its error carries the field's path. Every integer is
//! first read at its widest JSON type and then range-checked with `contains`, which cannot
//! overflow whatever the input.

use super::body::Object;
use super::orders::ItemRequest;
use crate::domain::model::{Day, MAX_DATES};
use crate::domain::quantity::{Quantity, MAX_QUANTITY};
use crate::domain::reservation::MAX_LINES;
use crate::domain::{CampaignId, OrderId, Sku, UserId};
use crate::service::stock::LineRequest;
use serde::de::Error;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// Item lists may repeat a SKU (the lines are merged), but not without bound.
pub const MAX_ITEMS: usize = MAX_LINES * 4;

/// Text a person typed: 1..=max characters, not only spaces, no control characters.
fn text<'de, D: Deserializer<'de>>(d: D, what: &str, max: usize) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.trim().is_empty() || s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(D::Error::custom(format!("{what} must be 1-{max} characters without control characters")));
    }
    Ok(s)
}

pub fn sku_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text(d, "name", 200)
}

pub fn reason<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text(d, "reason", 500)
}

pub fn carrier<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text(d, "carrier", 64)
}

/// A tracking number: 1-64 printable ASCII characters, no spaces.
pub fn tracking_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() || s.len() > 64 || !s.bytes().all(|c| (0x21..=0x7e).contains(&c)) {
        return Err(D::Error::custom("tracking_number must be 1-64 printable ASCII characters"));
    }
    Ok(s)
}

pub fn quantity<'de, D: Deserializer<'de>>(d: D) -> Result<Quantity, D::Error> {
    Quantity::new(u64::deserialize(d)?).map_err(D::Error::custom)
}

pub fn price<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    use crate::domain::money::{MoneyError, MAX_PRICE};
    let p = u64::deserialize(d)?;
    if p > MAX_PRICE {
        return Err(D::Error::custom(MoneyError::BadPrice));
    }
    Ok(p)
}

/// Shard count, 1 when absent or null.
pub fn shards<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    use crate::domain::allocation::MAX_SHARDS;
    match Option::<u64>::deserialize(d)? {
        None => Ok(1),
        Some(n) if (1..=u64::from(MAX_SHARDS)).contains(&n) => Ok(n as u16),
        Some(_) => Err(D::Error::custom(format!("shards must be an integer in 1..={MAX_SHARDS}"))),
    }
}

pub fn per_user_limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(n) if (1..=u64::from(MAX_QUANTITY)).contains(&n) => Ok(Some(n as u32)),
        Some(_) => Err(D::Error::custom(format!("per_user_limit must be an integer in 1..={MAX_QUANTITY}"))),
    }
}

/// Most checkouts per second an admission rate may name.
pub const MAX_ADMISSION_RATE: u64 = 100_000;

pub fn admission_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(n) if (1..=MAX_ADMISSION_RATE).contains(&n) => Ok(Some(n as u32)),
        Some(_) => Err(D::Error::custom(format!("admission_rate must be an integer in 1..={MAX_ADMISSION_RATE}"))),
    }
}

pub fn low_stock_threshold<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<i64>::deserialize(d)? {
        None => Ok(None),
        Some(n) if (1..=1_000_000_000).contains(&n) => Ok(Some(n)),
        Some(_) => Err(D::Error::custom("low_stock_threshold must be an integer in 1..=1000000000")),
    }
}

/// Longest grace after a campaign's end before its unpaid orders expire (1 day).
pub const MAX_END_GRACE_SECONDS: i64 = 86_400;

pub fn end_grace_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match Option::<i64>::deserialize(d)? {
        None => Ok(0),
        Some(n) if (0..=MAX_END_GRACE_SECONDS).contains(&n) => Ok(n),
        Some(_) => {
            Err(D::Error::custom(format!("end_grace_seconds must be an integer in 0..={MAX_END_GRACE_SECONDS}")))
        }
    }
}

/// Dates of an adjustment: 1..=366 distinct `YYYY-MM-DD`, sorted.
pub fn dates<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Day>>, D::Error> {
    let Some(mut v) = Option::<Vec<Day>>::deserialize(d)? else { return Ok(None) };
    if v.is_empty() || v.len() > MAX_DATES {
        return Err(D::Error::custom(format!("dates must list 1..={MAX_DATES} dates")));
    }
    v.sort();
    if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
        return Err(D::Error::custom(format!("date {} is listed twice", w[0])));
    }
    Ok(Some(v))
}

/// An id with the order-id alphabet, named for the field that carries it.
pub fn adjustment_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    OrderId::parse(&s).map_err(|_| D::Error::custom("adjustment_id must be 1-64 characters of [A-Za-z0-9._-]"))?;
    Ok(s)
}

/// Largest absolute stock change in one adjustment.
pub const MAX_DELTA: i64 = 1_000_000_000;

pub fn delta<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match i64::deserialize(d)? {
        n if n != 0 && (-MAX_DELTA..=MAX_DELTA).contains(&n) => Ok(n),
        _ => Err(D::Error::custom(format!("delta must be a non-zero integer within ±{MAX_DELTA}"))),
    }
}

/// Longest hold an external reservation may ask for (7 days).
pub const MAX_TTL_SECONDS: i64 = 7 * 24 * 3600;

pub fn ttl_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<i64>::deserialize(d)? {
        None => Ok(None),
        Some(t) if (1..=MAX_TTL_SECONDS).contains(&t) => Ok(Some(t)),
        Some(_) => Err(D::Error::custom(format!("ttl_seconds must be an integer in 1..={MAX_TTL_SECONDS}"))),
    }
}

pub fn user_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<UserId>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(u) => UserId::parse(&u).map(Some).map_err(D::Error::custom),
    }
}

/// A payment provider's id: 1-128 printable ASCII characters.
pub fn payment_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() || s.len() > 128 || !s.bytes().all(|c| (0x21..=0x7e).contains(&c)) {
        return Err(D::Error::custom("payment_id must be 1-128 printable ASCII characters"));
    }
    Ok(s)
}

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
