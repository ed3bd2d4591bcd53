//! Money in integer minor units with an ISO 4217-shaped currency code.

use std::fmt;

/// Largest unit price accepted (10^12 minor units). With [`super::quantity::MAX_QUANTITY`] and the
/// line cap, every order amount fits in a u64 with room to spare; arithmetic is checked anyway.
pub const MAX_PRICE: u64 = 1_000_000_000_000;

/// Three upper-case ASCII letters, held inline: a currency is cloned into every line, plan and
/// order, and a clone allocates nothing.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

super::ids::serde_as_str!(Currency, "a currency code");

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Currency").field(&self.as_str()).finish()
    }
}

impl TryFrom<String> for Currency {
    type Error = MoneyError;
    fn try_from(s: String) -> Result<Self, MoneyError> {
        Currency::parse(&s)
    }
}

impl From<Currency> for String {
    fn from(c: Currency) -> String {
        c.as_str().to_owned()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("currency must be three upper-case letters")]
    BadCurrency,
    #[error("price must be a non-negative integer of minor units, at most {MAX_PRICE}")]
    BadPrice,
    #[error("amount overflows")]
    Overflow,
}

impl Currency {
    pub fn parse(s: &str) -> Result<Self, MoneyError> {
        match <[u8; 3]>::try_from(s.as_bytes()) {
            Ok(b) if b.iter().all(u8::is_ascii_uppercase) => Ok(Self(b)),
            _ => Err(MoneyError::BadCurrency),
        }
    }
    pub fn as_str(&self) -> &str {
        // ASCII by construction (`parse`), so always UTF-8
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An amount of minor units (cents) in one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Money {
    pub minor: u64,
    pub currency: Currency,
}

impl Money {
    /// A unit price as given by an admin: a JSON integer in 0..=MAX_PRICE.
    pub fn price_from_json(v: &serde_json::Value) -> Result<u64, MoneyError> {
        match v.as_u64() {
            Some(p) if p <= MAX_PRICE => Ok(p),
            _ => Err(MoneyError::BadPrice),
        }
    }

    /// `unit_price * quantity`, checked.
    pub fn line_total(unit_price: u64, quantity: u32) -> Result<u64, MoneyError> {
        unit_price.checked_mul(u64::from(quantity)).ok_or(MoneyError::Overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn currencies_are_three_upper_case_letters() {
        assert!(Currency::parse("EUR").is_ok());
        for bad in ["eur", "EURO", "", "E1R", "€"] {
            assert!(Currency::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prices_are_bounded_non_negative_integers() {
        assert_eq!(Money::price_from_json(&json!(0)), Ok(0));
        assert_eq!(Money::price_from_json(&json!(1999)), Ok(1999));
        assert!(Money::price_from_json(&json!(-1)).is_err());
        assert!(Money::price_from_json(&json!(19.99)).is_err());
        assert!(Money::price_from_json(&json!("1999")).is_err());
        assert!(Money::price_from_json(&json!(MAX_PRICE + 1)).is_err());
    }

    #[test]
    fn line_totals_refuse_overflow() {
        assert_eq!(Money::line_total(MAX_PRICE, 10_000), Ok(MAX_PRICE * 10_000));
        assert_eq!(Money::line_total(u64::MAX, 2), Err(MoneyError::Overflow));
    }
}
