//! The order log (docs/order-record.md, "Order log"): every status change of an order, with when,
//! from, to, who (the actor) and why (a cause code). An entry is appended by [`super::Order::apply`]
//! — the one place a transition is made — so it is part of the very item the conditional write
//! puts: no entry without its change, no change without its entry. Both stores refuse a write
//! that changes the status without its entries ([`appended_exactly`]).
//!
//! Causes are `&'static str` codes, never text a person typed: the log holds no personal data.

use super::{OrderStatus, Provider};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Most entries an order keeps: its creation and the newest 49 changes. The transition table
/// allows no order anywhere near that many in practice (a payment failing and being restarted
/// is the only loop); `total` counts every entry ever appended, so a reader sees how many were
/// dropped. 50 entries of ≤ ~200 bytes stay far inside DynamoDB's 400 KB item.
pub const MAX_LOG_ENTRIES: usize = 50;

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The order's owner (the buyer's id is the order's `user_id`).
    Buyer,
    /// An admin, by the JWT `sub`.
    Admin(String),
    /// Holdfast itself, by the function that made the change (`payment-timeout`, `reconcile-worker` …).
    System(String),
    /// A payment provider's report (its webhook, or its answer when Holdfast asked).
    Provider(Provider),
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Buyer => f.write_str("buyer"),
            Actor::Admin(sub) => write!(f, "admin:{sub}"),
            Actor::System(function) => write!(f, "system:{function}"),
            Actor::Provider(p) => write!(f, "provider:{}", p.as_str()),
        }
    }
}

impl Actor {
    /// The actor a [`fmt::Display`] string names.
    pub fn parse(s: &str) -> Option<Actor> {
        if s == "buyer" {
            return Some(Actor::Buyer);
        }
        let (kind, who) = s.split_once(':')?;
        match kind {
            "admin" => Some(Actor::Admin(who.to_owned())),
            "system" => Some(Actor::System(who.to_owned())),
            "provider" => Provider::parse(who).map(Actor::Provider),
            _ => None,
        }
    }
}

impl Serialize for Actor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Actor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Actor::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown actor {s:?}")))
    }
}

/// Who makes a change and why: what every transition is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct By {
    pub actor: Actor,
    /// A short code (`checkout`, `payment_succeeded`, `buyer_cancel` …).
    pub cause: &'static str,
}

impl By {
    pub fn buyer(cause: &'static str) -> By {
        By { actor: Actor::Buyer, cause }
    }

    pub fn admin(sub: impl Into<String>, cause: &'static str) -> By {
        By { actor: Actor::Admin(sub.into()), cause }
    }

    pub fn system(function: impl Into<String>, cause: &'static str) -> By {
        By { actor: Actor::System(function.into()), cause }
    }

    pub fn provider(p: Provider, cause: &'static str) -> By {
        By { actor: Actor::Provider(p), cause }
    }
}

/// One status change. `from` is `None` for the order's creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    #[serde(rename = "t")]
    pub at_ms: i64,
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub from: Option<OrderStatus>,
    #[serde(rename = "s")]
    pub to: OrderStatus,
    #[serde(rename = "a")]
    pub actor: Actor,
    #[serde(rename = "c")]
    pub cause: String,
}

/// An order's log, oldest first, bounded at [`MAX_LOG_ENTRIES`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLog {
    #[serde(rename = "e")]
    pub entries: Vec<LogEntry>,
    /// Every entry ever appended (≥ `entries.len()`; the difference was dropped).
    #[serde(rename = "n")]
    pub total: u32,
}

impl OrderLog {
    /// The log of an order created in `status`.
    pub fn created(status: OrderStatus, by: &By, at_ms: i64) -> OrderLog {
        let mut log = OrderLog::default();
        log.push(LogEntry { at_ms, from: None, to: status, actor: by.actor.clone(), cause: by.cause.to_owned() });
        log
    }

    /// Appends `e`; past the bound, the oldest change after the creation entry goes.
    pub fn push(&mut self, e: LogEntry) {
        self.entries.push(e);
        self.total = self.total.saturating_add(1);
        if self.entries.len() > MAX_LOG_ENTRIES {
            self.entries.remove(1);
        }
    }

    /// How many entries were dropped by the bound.
    pub fn dropped(&self) -> u32 {
        self.total.saturating_sub(self.entries.len() as u32)
    }

    /// The entry of a change `from` → `to` by `by` at `at_ms`, appended unless nothing changed
    /// (a new payment attempt of a PAYING order keeps its status: its record is the attempt).
    pub fn record(&mut self, from: OrderStatus, to: OrderStatus, by: &By, at_ms: i64) {
        if from != to {
            self.push(LogEntry { at_ms, from: Some(from), to, actor: by.actor.clone(), cause: by.cause.to_owned() });
        }
    }

    /// Whether the log is a chain: each entry starts where the one before it ended (across a
    /// gap the bound made, only the creation entry's end is unknown), ending at `status`. An
    /// order written before the log existed has none, which is consistent with anything.
    pub fn ends_at(&self, status: OrderStatus) -> bool {
        let Some(last) = self.entries.last() else { return self.total == 0 };
        let gap = self.dropped() > 0;
        let chained = self.entries.windows(2).enumerate().all(|(i, w)| (gap && i == 0) || w[1].from == Some(w[0].to));
        last.to == status && chained
    }
}

/// Whether `next` carries exactly the entries of the change from `prev`: none when the status
/// stays, otherwise new entries chaining from `prev`'s status to `next`'s. Both stores refuse a
/// write for which this is false (one behaviour, two stores).
pub fn appended_exactly(prev: &super::Order, next: &super::Order) -> bool {
    let Some(added) = next.log.total.checked_sub(prev.log.total) else { return false };
    let added = added as usize;
    if added == 0 {
        return prev.status == next.status && prev.log == next.log;
    }
    let e = &next.log.entries;
    if added > e.len() {
        return false;
    }
    let new = &e[e.len() - added..];
    new[0].from == Some(prev.status)
        && new.windows(2).all(|w| w[1].from == Some(w[0].to))
        && new.last().is_some_and(|l| l.to == next.status)
}

/// A pending order of one line (2 × 5 EUR), created by its buyer at 1 ms: for tests, this
/// crate's and (with the `test-support` feature, a dev-dependency only) the library's.
#[cfg(any(test, feature = "test-support"))]
#[allow(clippy::unwrap_used)] // fixed, valid literals; never in a production build
pub fn sample_order() -> super::Order {
    super::Order {
        id: crate::OrderId::parse("o1").unwrap(),
        user: crate::UserId::parse("u").unwrap(),
        status: OrderStatus::PendingPayment,
        lines: vec![super::OrderLine {
            campaign: None,
            sku: crate::Sku::parse("s").unwrap(),
            quantity: 2,
            unit_price: 5,
            dates: vec![],
        }],
        amount: 10,
        currency: crate::Currency::parse("EUR").unwrap(),
        pay_expire_at: 100,
        created_at_ms: 1,
        updated_at_ms: 1,
        version: 1,
        payment_id: None,
        payments: vec![],
        request_hash: "h".into(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: vec![],
        attempts: vec![],
        review: None,
        correlation: None,
        settled_at_ms: None,
        details: super::OrderDetails::default(),
        log: OrderLog::created(OrderStatus::PendingPayment, &By::buyer("checkout"), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::{OrderAction, Provider};
    use OrderStatus::*;

    fn order() -> super::super::Order {
        super::sample_order()
    }

    #[test]
    fn actors_print_and_parse_back() {
        for a in [
            Actor::Buyer,
            Actor::Admin("ops-7".into()),
            Actor::System("payment-timeout".into()),
            Actor::Provider(Provider::Stripe),
        ] {
            assert_eq!(Actor::parse(&a.to_string()), Some(a.clone()));
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(serde_json::from_str::<Actor>(&json).unwrap(), a);
        }
        assert_eq!(Actor::Admin("a:b".into()).to_string(), "admin:a:b");
        assert_eq!(Actor::parse("admin:a:b"), Some(Actor::Admin("a:b".into())));
        for bad in ["", "buyer:x", "someone", "provider:paypal", "god:x"] {
            assert_eq!(Actor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_transition_appends_one_entry_with_its_actor_and_cause() {
        let o = order();
        let paid = o.apply(OrderAction::Pay, &By::provider(Provider::Generic, "payment_succeeded"), 5).unwrap();
        let refunding = paid.apply(OrderAction::StartRefund, &By::buyer("refund_requested"), 6).unwrap();
        assert_eq!(refunding.log.total, 3);
        assert_eq!(
            refunding.log.entries[1..],
            [
                LogEntry {
                    at_ms: 5,
                    from: Some(PendingPayment),
                    to: Paid,
                    actor: Actor::Provider(Provider::Generic),
                    cause: "payment_succeeded".into()
                },
                LogEntry {
                    at_ms: 6,
                    from: Some(Paid),
                    to: Refunding,
                    actor: Actor::Buyer,
                    cause: "refund_requested".into()
                },
            ]
        );
        assert!(appended_exactly(&o, &paid) && appended_exactly(&paid, &refunding) && refunding.log.ends_at(Refunding));
        // a refused transition writes nothing, and a new attempt of a PAYING order is no change
        assert!(refunding.apply(OrderAction::Pay, &By::buyer("x"), 7).is_err());
        let paying = o.apply(OrderAction::StartPayment, &By::buyer("payment_started"), 7).unwrap();
        let again = paying.apply(OrderAction::StartPayment, &By::buyer("payment_started"), 8).unwrap();
        assert_eq!((paying.log.total, again.log.total), (2, 2));
        assert!(appended_exactly(&paying, &again));
    }

    #[test]
    fn a_write_that_changes_the_status_without_its_entry_or_adds_one_without_a_change_is_refused() {
        let o = order();
        let silent = o.next(5, |x| x.status = Paid);
        assert!(!appended_exactly(&o, &silent));
        let mut stray = o.next(5, |_| {});
        stray.log.record(Paid, Shipped, &By::buyer("x"), 5);
        assert!(!appended_exactly(&o, &stray), "an entry whose status is not the order's");
        let mut wrong_from = o.next(5, |x| x.status = Paid);
        wrong_from.log.record(Paying, Paid, &By::buyer("x"), 5);
        assert!(!appended_exactly(&o, &wrong_from));
        let mut rewritten = o.next(5, |_| {});
        rewritten.log.entries[0].cause = "other".into();
        assert!(!appended_exactly(&o, &rewritten), "history is never rewritten");
        // two changes in one write chain
        let paid = o.apply(OrderAction::Pay, &By::provider(Provider::Generic, "p"), 5).unwrap();
        let refunding = paid.apply(OrderAction::StartRefund, &By::buyer("r"), 5).unwrap();
        assert!(appended_exactly(&o, &refunding));
    }

    #[test]
    fn the_log_keeps_its_creation_and_the_newest_changes_and_counts_the_rest() {
        let mut o = order();
        for i in 0..60 {
            let action = if i % 2 == 0 { OrderAction::StartPayment } else { OrderAction::PaymentFailed };
            let by = if i % 2 == 0 {
                By::buyer("payment_started")
            } else {
                By::provider(Provider::Generic, "payment_failed")
            };
            let next = o.apply(action, &by, 10 + i).unwrap();
            assert!(appended_exactly(&o, &next), "step {i}");
            o = next;
        }
        assert_eq!((o.log.entries.len(), o.log.total, o.log.dropped()), (MAX_LOG_ENTRIES, 61, 11));
        assert_eq!(o.log.entries[0].from, None, "the creation entry stays");
        assert_eq!(o.log.entries.last().map(|e| e.at_ms), Some(69));
        assert!(o.log.ends_at(PendingPayment) && !o.log.ends_at(Paying));
        let json = serde_json::to_string(&o.log).unwrap();
        assert!(json.len() < 4_500, "50 entries stay small: {} bytes", json.len());
        assert_eq!(serde_json::from_str::<OrderLog>(&json).unwrap(), o.log);
    }

    #[test]
    fn an_order_from_before_the_log_has_none_and_still_chains_from_its_next_change() {
        let mut o = order();
        o.log = OrderLog::default();
        assert!(o.log.ends_at(PendingPayment) && o.log.ends_at(Paid));
        let paid = o.apply(OrderAction::Pay, &By::provider(Provider::Generic, "p"), 5).unwrap();
        assert!(appended_exactly(&o, &paid) && paid.log.ends_at(Paid));
    }
}
