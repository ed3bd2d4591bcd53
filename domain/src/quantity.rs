//! Quantities of units: positive and bounded, so arithmetic on them cannot overflow.

use std::fmt;

/// Largest quantity a single line may ask for. Larger numbers are refused at parse time.
pub const MAX_QUANTITY: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity(u32);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("quantity must be a positive integer")]
    NotPositive,
    #[error("quantity must be at most {MAX_QUANTITY}")]
    TooLarge,
}

impl Quantity {
    pub fn new(n: u64) -> Result<Self, QuantityError> {
        match n {
            0 => Err(QuantityError::NotPositive),
            n if n > u64::from(MAX_QUANTITY) => Err(QuantityError::TooLarge),
            n => Ok(Self(n as u32)),
        }
    }

    /// Parses a JSON value: only a JSON integer in 1..=MAX_QUANTITY is a quantity.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, QuantityError> {
        match v {
            serde_json::Value::Number(n) => match n.as_u64() {
                Some(n) => Self::new(n),
                None if n.as_i64().is_some() => Err(QuantityError::NotPositive),
                // floats and integers beyond u64
                None if n.as_f64().is_some_and(|f| f > 0.0 && f.fract() == 0.0) => Err(QuantityError::TooLarge),
                None => Err(QuantityError::NotPositive),
            },
            _ => Err(QuantityError::NotPositive),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// Sum of two quantities, refused if it leaves the allowed range.
    pub fn checked_add(self, other: Quantity) -> Result<Quantity, QuantityError> {
        Self::new(u64::from(self.0) + u64::from(other.0))
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_positive_bounded_integers_are_quantities() {
        assert_eq!(Quantity::from_json(&json!(1)).unwrap().get(), 1);
        assert_eq!(Quantity::from_json(&json!(10_000)).unwrap().get(), 10_000);
        assert_eq!(Quantity::from_json(&json!(0)), Err(QuantityError::NotPositive));
        assert_eq!(Quantity::from_json(&json!(-3)), Err(QuantityError::NotPositive));
        assert_eq!(Quantity::from_json(&json!(10_001)), Err(QuantityError::TooLarge));
        assert_eq!(Quantity::from_json(&json!(u64::MAX)), Err(QuantityError::TooLarge));
        assert_eq!(Quantity::from_json(&json!(1e30)), Err(QuantityError::TooLarge));
        assert!(Quantity::from_json(&json!(1.5)).is_err());
        // a fraction or a float zero is not a positive integer, whatever its size (cargo-mutants,
        // docs/mutants.md: `&&` -> `||` and `>` -> `>=` in the float arm survived `is_err`)
        assert_eq!(Quantity::from_json(&json!(1.5)), Err(QuantityError::NotPositive));
        assert_eq!(Quantity::from_json(&json!(0.0)), Err(QuantityError::NotPositive));
        assert_eq!(Quantity::from_json(&json!(-2.0)), Err(QuantityError::NotPositive));
        assert_eq!(Quantity::new(42).unwrap().to_string(), "42", "shown as its number");
        assert!(Quantity::from_json(&json!("2")).is_err());
        assert!(Quantity::from_json(&json!(null)).is_err());
    }

    #[test]
    fn merging_lines_cannot_exceed_the_bound() {
        let a = Quantity::new(9_000).unwrap();
        assert!(a.checked_add(a).is_err());
        assert_eq!(a.checked_add(Quantity::new(1).unwrap()).unwrap().get(), 9_001);
    }
}
