//! The order's deadline, judged here and nowhere else (docs/payments.md, "Never guessing at the
//! deadline"). `pay_expire_at` (epoch seconds) is the payment deadline of a payable order; while an
//! order is AWAITING_SUPPLIER it is the supplier's confirmation deadline, and the payment deadline
//! is set when the supplier confirms (docs/suppliers.md).
//!
//! The rule: the deadline has passed from the first millisecond of the second `pay_expire_at` on.
//! A PAYING order's payment, started in time, may still pay it until the grace after the deadline
//! has passed too (`HOLDFAST_PAYMENT_GRACE_SECONDS`); no other order has a grace.

use super::{Order, OrderStatus};

/// The whole second `now_ms` falls in.
fn second_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000)
}

impl Order {
    /// Whether the order's deadline has passed at `now_ms`: no payment may start, an unpaid
    /// order expires, a PAYING one is decided by its provider, an AWAITING_SUPPLIER one by its
    /// supplier's last answer.
    pub fn deadline_passed(&self, now_ms: i64) -> bool {
        second_of(now_ms) >= self.pay_expire_at
    }

    /// The second from which a payment can no longer pay this order: the deadline plus `grace_s`
    /// for a PAYING order (a negative grace counts as none), the deadline for any other.
    pub fn payment_closes_at(&self, grace_s: i64) -> i64 {
        match self.status {
            OrderStatus::Paying => self.pay_expire_at.saturating_add(grace_s.max(0)),
            _ => self.pay_expire_at,
        }
    }

    /// Whether a payment reported at `now_ms` is too late to pay the order (see
    /// [`Order::payment_closes_at`]); a PAYING order not yet closed is within its grace.
    pub fn payment_closed(&self, now_ms: i64, grace_s: i64) -> bool {
        second_of(now_ms) >= self.payment_closes_at(grace_s)
    }
}

#[cfg(test)]
mod tests {
    use crate::order::{Order, OrderStatus};

    const DEADLINE_S: i64 = 1_000;
    const AT_MS: i64 = DEADLINE_S * 1000;

    fn order(status: OrderStatus) -> Order {
        let mut o = crate::order::history::sample_order();
        o.status = status;
        o.pay_expire_at = DEADLINE_S;
        o
    }

    #[test]
    fn the_deadline_passes_at_its_first_millisecond_and_not_one_before() {
        let o = order(OrderStatus::PendingPayment);
        assert!(!o.deadline_passed(AT_MS - 1));
        assert!(o.deadline_passed(AT_MS));
        assert!(o.deadline_passed(AT_MS + 1));
        assert!(!o.deadline_passed(0));
    }

    #[test]
    fn the_deadline_is_the_same_for_every_status() {
        for s in [OrderStatus::PendingPayment, OrderStatus::Paying, OrderStatus::AwaitingSupplier] {
            let o = order(s);
            assert!(!o.deadline_passed(AT_MS - 1), "{s:?}");
            assert!(o.deadline_passed(AT_MS), "{s:?}");
        }
    }

    #[test]
    fn a_pending_order_closes_to_payments_at_the_deadline_without_grace() {
        let o = order(OrderStatus::PendingPayment);
        assert_eq!(o.payment_closes_at(600), DEADLINE_S);
        assert!(!o.payment_closed(AT_MS - 1, 600));
        assert!(o.payment_closed(AT_MS, 600));
        assert!(o.payment_closed(AT_MS + 1, 600));
    }

    #[test]
    fn a_paying_order_closes_to_payments_when_the_grace_has_passed_too() {
        let o = order(OrderStatus::Paying);
        let grace_ends_ms = (DEADLINE_S + 600) * 1000;
        assert_eq!(o.payment_closes_at(600), DEADLINE_S + 600);
        assert!(o.deadline_passed(AT_MS));
        assert!(!o.payment_closed(AT_MS, 600), "within the grace at the deadline");
        assert!(!o.payment_closed(grace_ends_ms - 1, 600));
        assert!(o.payment_closed(grace_ends_ms, 600));
        assert!(o.payment_closed(grace_ends_ms + 1, 600));
    }

    #[test]
    fn a_negative_grace_counts_as_none() {
        let o = order(OrderStatus::Paying);
        assert_eq!(o.payment_closes_at(-5), DEADLINE_S);
        assert!(!o.payment_closed(AT_MS - 1, -5));
        assert!(o.payment_closed(AT_MS, -5));
    }
}
