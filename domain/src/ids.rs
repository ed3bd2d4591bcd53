//! Identifiers, parsed once at the edge so invalid ones cannot exist further in.

use sha2::{Digest, Sha256};
use std::fmt;

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {reason}")]
pub struct IdError {
    pub field: &'static str,
    pub reason: &'static str,
}

fn check_token(field: &'static str, s: &str, max: usize) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError { field, reason: "must not be empty" });
    }
    if s.len() > max {
        return Err(IdError { field, reason: "is too long" });
    }
    if !s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        return Err(IdError { field, reason: "may contain only ASCII letters, digits, '-', '_' and '.'" });
    }
    Ok(())
}

/// Serde for a type read and written as one JSON (or DynamoDB) string: written from `as_str`
/// without a copy, read by `parse` from the string as the deserializer holds it.
macro_rules! serde_as_str {
    ($name:ident, $expecting:expr) => {
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::parse(v).map_err(E::custom)
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}
pub(crate) use serde_as_str;

/// An identifier's text: shared, so a clone (ids are cloned into every plan, lock and order
/// they name) is a count, not an allocation (README, "Benchmarks": allocations per request).
type Text = std::sync::Arc<str>;

macro_rules! token_id {
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Text);

        serde_as_str!($name, concat!("a ", $field));

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                check_token($field, &s, $max)?;
                Ok(Self(s.into()))
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                String::from(&*v.0)
            }
        }

        impl $name {
            pub fn parse(s: &str) -> Result<Self, IdError> {
                check_token($field, s, $max)?;
                Ok(Self(s.into()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

token_id!(
    /// A stock-keeping unit: 1–64 characters of `[A-Za-z0-9._-]`.
    Sku, "sku", 64
);
impl Sku {
    /// The stock cell of one date of a CALENDAR SKU: `<sku>@<YYYY-MM-DD>`. `@` is outside the
    /// alphabet clients may use, so a cell never collides with a SKU and cannot be ordered,
    /// adjusted or viewed directly (docs/inventory-models.md, "Calendar").
    pub fn cell(&self, day: super::model::Day) -> Sku {
        Sku(format!("{}@{day}", self.0).into())
    }

    /// The SKU and date of a calendar cell.
    pub fn calendar_parent(&self) -> Option<(Sku, super::model::Day)> {
        let (p, d) = self.0.split_once('@')?;
        Some((Sku(p.into()), super::model::Day::parse(d).ok()?))
    }

    /// The cell holding a ring-fenced campaign item's units: `<sku>!<campaign>` (`!` is outside
    /// the client alphabet too; docs/campaigns.md, "Ring-fenced quota").
    pub fn reserve_cell(&self, campaign: &CampaignId) -> Sku {
        Sku(format!("{}!{campaign}", self.0).into())
    }

    /// The SKU and campaign of a ring-fence cell.
    pub fn reserve_parent(&self) -> Option<(Sku, CampaignId)> {
        let (p, c) = self.0.split_once('!')?;
        Some((Sku(p.into()), CampaignId::parse(c).ok()?))
    }

    /// The stock cell of one warehouse of a WAREHOUSE SKU: `<sku>~<warehouse>` (`~` is outside
    /// the client alphabet too; docs/inventory-models.md, "Warehouses").
    pub fn warehouse_cell(&self, w: &super::warehouse::Warehouse) -> Sku {
        Sku(format!("{}~{w}", self.0).into())
    }

    /// The SKU and warehouse of a warehouse cell.
    pub fn warehouse_parent(&self) -> Option<(Sku, super::warehouse::Warehouse)> {
        let (p, w) = self.0.split_once('~')?;
        Some((Sku(p.into()), super::warehouse::Warehouse::parse(w).ok()?))
    }

    /// A SKU read back from storage: a client's SKU, a calendar cell, a ring-fence cell or a
    /// warehouse cell.
    pub fn from_stored(s: &str) -> Result<Sku, IdError> {
        if let Some((p, w)) = s.split_once('~') {
            check_token("sku", p, 64)?;
            let w = super::warehouse::Warehouse::parse(w)
                .map_err(|_| IdError { field: "sku", reason: "has a bad warehouse" })?;
            return Ok(Sku(p.into()).warehouse_cell(&w));
        }
        if let Some((p, c)) = s.split_once('!') {
            check_token("sku", p, 64)?;
            return Ok(Sku(p.into()).reserve_cell(&CampaignId::parse(c)?));
        }
        match s.split_once('@') {
            Some((p, d)) => {
                check_token("sku", p, 64)?;
                let day =
                    super::model::Day::parse(d).map_err(|_| IdError { field: "sku", reason: "has a bad date" })?;
                Ok(Sku(p.into()).cell(day))
            }
            None => Sku::parse(s),
        }
    }
}

token_id!(
    /// A campaign id: 1–64 characters of `[A-Za-z0-9._-]`.
    CampaignId, "campaign_id", 64
);
impl CampaignId {
    /// The spend scope of a SKU's waitlist admissions (docs/waitlist.md): `wl!<sku>`. `!` is
    /// outside the alphabet, so no campaign has it and a queue's token never names it.
    pub fn waitlist_scope(sku: &Sku) -> CampaignId {
        CampaignId(format!("wl!{sku}").into())
    }
}

token_id!(
    /// An order id: Holdfast derives its own (see [`OrderId::derive`]); other order systems bring
    /// theirs to `/reservations` under the same alphabet.
    OrderId, "order_id", 64
);

impl OrderId {
    /// The order id of one checkout: the same (user, Idempotency-Key) always names the same order,
    /// so every retry targets one freeze and one order item.
    pub fn derive(user: &UserId, key: &IdempotencyKey) -> Self {
        let mut h = Sha256::new();
        h.update(user.as_str().as_bytes());
        h.update([0u8]);
        h.update(key.as_str().as_bytes());
        let digest = hex::encode(h.finalize());
        Self(format!("o{}", &digest[..31]).into())
    }
}

/// The user a JWT names in `sub`: 1–128 printable ASCII characters, no spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(Text);

impl UserId {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        printable("user", s, 128).map(|s| Self(s.into()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The client's `Idempotency-Key`: 1–128 printable ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Text);

impl IdempotencyKey {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        printable("Idempotency-Key", s, 128).map(|s| Self(s.into()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn printable<'a>(field: &'static str, s: &'a str, max: usize) -> Result<&'a str, IdError> {
    if s.is_empty() {
        return Err(IdError { field, reason: "must not be empty" });
    }
    if s.len() > max {
        return Err(IdError { field, reason: "is too long" });
    }
    if !s.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(IdError { field, reason: "may contain only printable ASCII without spaces" });
    }
    Ok(s)
}

/// The key of a reservation in the stock table. Holdfast's own orders use their order id;
/// a reservation made by another order system through `/reservations` is namespaced by the
/// caller, so two systems with the same order ids never share a reservation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReservationId(Text);

impl ReservationId {
    pub fn for_order(order: &OrderId) -> Self {
        Self(order.0.clone())
    }

    pub fn external(owner: &UserId, order: &OrderId) -> Self {
        let digest = hex::encode(Sha256::digest(owner.as_str().as_bytes()));
        Self(format!("x.{}.{}", &digest[..12], order.as_str()).into())
    }

    /// Rebuilds a stored key; only the adapters and message parsers call this.
    pub fn from_stored(s: &str) -> Result<Self, IdError> {
        check_token("reservation_id", s, 80).map(|_| Self(s.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The order id a Holdfast order reservation belongs to (`None` for external ones).
    pub fn order_id(&self) -> Option<OrderId> {
        if self.0.starts_with("x.") {
            None
        } else {
            OrderId::parse(&self.0).ok()
        }
    }
}

impl fmt::Display for ReservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skus_reject_empty_long_and_odd_characters() {
        assert!(Sku::parse("SKU-1.a_b").is_ok());
        assert!(Sku::parse("").is_err());
        assert!(Sku::parse(&"a".repeat(65)).is_err());
        for bad in ["a b", "a/b", "é", "a\u{0}", "a#b", "../x"] {
            assert!(Sku::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn one_checkout_always_derives_one_order_id() {
        let u = UserId::parse("alice").unwrap();
        let k = IdempotencyKey::parse("k-1").unwrap();
        let a = OrderId::derive(&u, &k);
        assert_eq!(a, OrderId::derive(&u, &k));
        assert_ne!(a, OrderId::derive(&UserId::parse("bob").unwrap(), &k));
        assert_ne!(a, OrderId::derive(&u, &IdempotencyKey::parse("k-2").unwrap()));
        assert!(OrderId::parse(a.as_str()).is_ok());
    }

    #[test]
    fn user_and_key_boundaries_are_not_ambiguous() {
        let a = OrderId::derive(&UserId::parse("ab").unwrap(), &IdempotencyKey::parse("c").unwrap());
        let b = OrderId::derive(&UserId::parse("a").unwrap(), &IdempotencyKey::parse("bc").unwrap());
        assert_ne!(a, b);
    }

    #[test]
    fn external_reservations_are_namespaced_by_owner() {
        let o = OrderId::parse("ext-1").unwrap();
        let a = ReservationId::external(&UserId::parse("sys-a").unwrap(), &o);
        let b = ReservationId::external(&UserId::parse("sys-b").unwrap(), &o);
        assert_ne!(a, b);
        assert!(a.order_id().is_none());
        assert!(ReservationId::from_stored(a.as_str()).is_ok());
        let own = ReservationId::for_order(&o);
        assert_eq!(own.order_id(), Some(o));
    }

    #[test]
    fn user_ids_refuse_control_characters_and_spaces() {
        assert!(UserId::parse("auth0|123").is_ok());
        assert!(UserId::parse("a b").is_err());
        assert!(UserId::parse("a\nb").is_err());
        assert!(UserId::parse("").is_err());
        assert!(IdempotencyKey::parse(&"k".repeat(129)).is_err());
    }
}
