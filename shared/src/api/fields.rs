//! Readers for bounded request values, used with `#[serde(deserialize_with)]` so a value out of
//! bounds fails inside deserialisation and its error carries the field's path. Every integer is
//! first read at its widest JSON type and then range-checked with `contains`, which cannot
//! overflow whatever the input.

use crate::domain::model::{Day, MAX_DATES};
use crate::domain::quantity::{Quantity, MAX_QUANTITY};
use crate::domain::reservation::MAX_LINES;
use crate::domain::{OrderId, UserId};
use serde::de::Error;
use serde::{Deserialize, Deserializer};

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
