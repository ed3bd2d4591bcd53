//! The order record a shop needs beside the lines (docs/order-record.md): where the goods go and
//! who takes them (`delivery`), the buyer's `remark`, and a `discount` off the amount. The pay
//! amount is `amount − discount`; that is what payment charges.
//!
//! Delivery and remark are personal data: they are stored on the order item and shown to the
//! order's owner and to admins, never written to a log line or an event. `Debug` prints
//! `<redacted>` in their place (a hand-written impl), so an order in a `?order` field cannot leak
//! them either.

use serde::{Deserialize, Serialize};
use std::fmt;

pub const MAX_NAME_CHARS: usize = 100;
pub const MIN_PHONE_DIGITS: usize = 4;
pub const MAX_PHONE_CHARS: usize = 32;
pub const MAX_ADDRESS_LINES: usize = 4;
pub const MAX_ADDRESS_LINE_CHARS: usize = 120;
pub const MAX_POSTCODE_CHARS: usize = 16;
pub const MAX_REMARK_CHARS: usize = 200;

/// ISO 3166-1 alpha-2: every officially assigned code (249).
const COUNTRIES: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ \
BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET \
FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR \
IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN \
MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY \
QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR \
TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

/// Where an order's goods go. Every field is checked by the functions below before one is built.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    #[serde(rename = "n")]
    pub name: String,
    #[serde(rename = "p")]
    pub phone: String,
    /// 1..=4 lines, street first.
    #[serde(rename = "a")]
    pub address: Vec<String>,
    #[serde(rename = "z", default, skip_serializing_if = "Option::is_none")]
    pub postcode: Option<String>,
    /// ISO 3166-1 alpha-2, upper case.
    #[serde(rename = "c")]
    pub country: String,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Delivery(<redacted>)")
    }
}

/// The order record: delivery, remark and discount, all optional. Stored as given (after the
/// checks); part of the checkout's request hash, so a retry with another record is a reused key.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderDetails {
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    /// Minor units of the order's currency off its amount (0 ≤ discount < amount).
    #[serde(rename = "x", default, skip_serializing_if = "is_zero")]
    pub discount: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl fmt::Debug for OrderDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |present: bool| if present { "<redacted>" } else { "None" };
        f.debug_struct("OrderDetails")
            .field("delivery", &format_args!("{}", hidden(self.delivery.is_some())))
            .field("remark", &format_args!("{}", hidden(self.remark.is_some())))
            .field("discount", &self.discount)
            .finish()
    }
}

impl OrderDetails {
    /// Nothing given: the order is as it was before the record existed (and hashes the same).
    pub fn is_empty(&self) -> bool {
        self.delivery.is_none() && self.remark.is_none() && self.discount == 0
    }

    /// `amount − discount`, or why the discount cannot apply to `amount`. A discount of the whole
    /// amount is refused: a payment of zero has no provider call, so such an order could never
    /// be paid (docs/order-record.md).
    pub fn pay_amount(&self, amount: u64) -> Result<u64, DiscountError> {
        match amount.checked_sub(self.discount) {
            None => Err(DiscountError::OverAmount { discount: self.discount, amount }),
            Some(0) if self.discount > 0 => Err(DiscountError::WholeAmount),
            Some(rest) => Ok(rest),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DiscountError {
    #[error("discount {discount} is more than the order's amount {amount}")]
    OverAmount { discount: u64, amount: u64 },
    #[error("a discount of the whole amount leaves nothing to pay; a free order cannot be paid through a provider")]
    WholeAmount,
}

/// Free text a person typed: 1..=max characters, not only spaces, no control characters.
fn text(v: &str, what: &str, max: usize) -> Result<(), String> {
    if v.trim().is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(format!("{what} must be 1-{max} characters, not blank, without control characters"));
    }
    Ok(())
}

pub fn check_name(v: &str) -> Result<(), String> {
    text(v, "name", MAX_NAME_CHARS)
}

/// Digits, spaces and `( ) - .`, an optional leading `+`; at least 4 digits.
pub fn check_phone(v: &str) -> Result<(), String> {
    let body = v.strip_prefix('+').unwrap_or(v);
    let allowed = body.chars().all(|c| c.is_ascii_digit() || matches!(c, ' ' | '(' | ')' | '-' | '.'));
    let digits = body.chars().filter(char::is_ascii_digit).count();
    if v.len() > MAX_PHONE_CHARS || !allowed || digits < MIN_PHONE_DIGITS {
        return Err(format!(
            "phone must be at most {MAX_PHONE_CHARS} characters: digits (at least {MIN_PHONE_DIGITS}), spaces, ( ) - . and a leading +"
        ));
    }
    Ok(())
}

pub fn check_address(lines: &[String]) -> Result<(), String> {
    if lines.is_empty() || lines.len() > MAX_ADDRESS_LINES {
        return Err(format!("address must have 1-{MAX_ADDRESS_LINES} lines"));
    }
    lines.iter().try_for_each(|l| text(l, "each address line", MAX_ADDRESS_LINE_CHARS))
}

/// Letters, digits, spaces and hyphens, 1..=16, not blank.
pub fn check_postcode(v: &str) -> Result<(), String> {
    let allowed = v.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-');
    if v.trim().is_empty() || v.len() > MAX_POSTCODE_CHARS || !allowed {
        return Err(format!("postcode must be 1-{MAX_POSTCODE_CHARS} letters, digits, spaces or hyphens"));
    }
    Ok(())
}

/// An assigned ISO 3166-1 alpha-2 code, upper case.
pub fn check_country(v: &str) -> Result<(), String> {
    let shaped = v.len() == 2 && v.bytes().all(|b| b.is_ascii_uppercase());
    if !shaped || !COUNTRIES.split(' ').any(|c| c == v) {
        return Err("country must be an ISO 3166-1 alpha-2 code in upper case (DE, FR, US …)".into());
    }
    Ok(())
}

/// At most 200 characters, no control characters (a line break included); may be empty.
pub fn check_remark(v: &str) -> Result<(), String> {
    if v.chars().count() > MAX_REMARK_CHARS || v.chars().any(char::is_control) {
        return Err(format!("remark must be at most {MAX_REMARK_CHARS} characters without control characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn delivery() -> Delivery {
        Delivery {
            name: "Ana Müller".into(),
            phone: "+49 30 1234567".into(),
            address: vec!["Hauptstraße 5".into(), "2. OG".into()],
            postcode: Some("10115".into()),
            country: "DE".into(),
        }
    }

    #[test]
    fn good_values_pass_every_check() {
        let d = delivery();
        assert!(check_name(&d.name).is_ok() && check_phone(&d.phone).is_ok());
        assert!(check_address(&d.address).is_ok() && check_country(&d.country).is_ok());
        assert!(check_postcode("SW1A 1AA").is_ok() && check_postcode("75001").is_ok());
        assert!(check_phone("(030) 123-45.67").is_ok() && check_remark("").is_ok());
        assert!(check_remark(&"é".repeat(200)).is_ok(), "characters are counted, not bytes");
        assert_eq!(COUNTRIES.split(' ').count(), 249);
    }

    #[test]
    fn each_bad_field_is_refused_with_its_rule() {
        for bad in ["", "   ", "a\u{7}b", "line\nbreak", &"n".repeat(101)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for bad in ["", "123", "+", "12+34567", "0301234567x", "030\t1234567", &"1".repeat(33), "++491234"] {
            assert!(check_phone(bad).is_err(), "{bad:?}");
        }
        assert!(check_address(&[]).is_err());
        assert!(check_address(&vec!["a".to_string(); 5]).is_err());
        assert!(check_address(&["ok".into(), " ".into()]).is_err());
        assert!(check_address(&["x".repeat(121)]).is_err());
        for bad in ["", " ", "1011_5", "12345678901234567", "ab\n"] {
            assert!(check_postcode(bad).is_err(), "{bad:?}");
        }
        for bad in ["", "de", "DEU", "XX", "D1", "ZZ", "É"] {
            assert!(check_country(bad).is_err(), "{bad:?}");
        }
        assert!(check_remark(&"r".repeat(201)).is_err());
        assert!(check_remark("ring twice\r\n").is_err());
    }

    #[test]
    fn the_pay_amount_is_the_amount_less_a_discount_short_of_it() {
        let with = |discount| OrderDetails { discount, ..Default::default() };
        assert_eq!(with(0).pay_amount(1_000), Ok(1_000));
        assert_eq!(with(250).pay_amount(1_000), Ok(750));
        assert_eq!(with(999).pay_amount(1_000), Ok(1));
        assert_eq!(with(1_000).pay_amount(1_000), Err(DiscountError::WholeAmount));
        assert_eq!(with(1_001).pay_amount(1_000), Err(DiscountError::OverAmount { discount: 1_001, amount: 1_000 }));
        assert_eq!(with(0).pay_amount(0), Ok(0), "a free SKU without a discount is what it always was");
    }

    #[test]
    fn debug_never_prints_the_personal_data() {
        let d = OrderDetails { delivery: Some(delivery()), remark: Some("leave at door 7".into()), discount: 5 };
        let printed = format!("{d:?} {:?} {:#?}", d.delivery, d);
        for secret in ["Ana", "Müller", "+49", "Hauptstraße", "10115", "DE", "door 7"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
        assert!(printed.contains("<redacted>") && printed.contains("discount: 5"), "{printed}");
        assert!(format!("{:?}", OrderDetails::default()).contains("delivery: None"));
    }

    #[test]
    fn stored_form_round_trips_and_an_empty_record_stores_nothing() {
        let d = OrderDetails { delivery: Some(delivery()), remark: Some("r".into()), discount: 5 };
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<OrderDetails>(&json).unwrap(), d);
        assert_eq!(serde_json::to_string(&OrderDetails::default()).unwrap(), "{}");
        assert!(OrderDetails::default().is_empty() && !d.is_empty());
    }
}
