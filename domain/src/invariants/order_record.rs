//! The order record's identities (docs/order-record.md): an order's log is a chain that ends at
//! its status, its discount leaves something to pay, and the payment applied to it is its pay
//! amount (`amount − discount`).

use super::Violation;
use crate::order::Order;

pub(super) fn check(o: &Order, out: &mut Vec<Violation>) {
    let bad = |detail: String| Violation::OrderRecord { order: o.id.to_string(), detail };
    if !o.log.ends_at(o.status) || o.log.entries.first().is_some_and(|e| e.from.is_some()) {
        let last = o.log.entries.last().map(|e| e.to.as_str());
        out.push(bad(format!("log of {} entries ends at {last:?}, the order is {}", o.log.total, o.status.as_str())));
    }
    if o.details.discount > 0 && o.details.discount >= o.amount {
        out.push(bad(format!("discount {} leaves nothing of amount {}", o.details.discount, o.amount)));
    }
    if let Some(p) = o.applied_payment().filter(|p| p.amount != o.pay_amount()) {
        out.push(bad(format!("paid {} by {}, its pay amount is {}", p.amount, p.payment_id, o.pay_amount())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::history::sample_order;
    use crate::order::{By, OrderAction, OrderStatus, PaymentOutcome, PaymentRecord, Provider};

    fn violations(o: &Order) -> Vec<Violation> {
        let mut out = Vec::new();
        check(o, &mut out);
        out
    }

    #[test]
    fn an_order_paid_its_pay_amount_with_a_whole_log_holds_and_each_break_is_named() {
        let mut o = sample_order();
        o.details.discount = 3;
        let mut paid = o.apply(OrderAction::Pay, &By::provider(Provider::Generic, "payment_succeeded"), 5).unwrap();
        paid.payments.push(PaymentRecord {
            payment_id: "p1".into(),
            provider: Provider::Generic,
            succeeded: true,
            amount: 7,
            currency: "EUR".into(),
            outcome: PaymentOutcome::Applied,
            at_ms: 5,
        });
        assert!(violations(&paid).is_empty(), "{:?}", violations(&paid));
        let silent = paid.next(6, |x| x.status = OrderStatus::Shipped);
        assert_eq!(violations(&silent).len(), 1, "a status without its entry");
        let mut whole = paid.clone();
        whole.details.discount = 10;
        assert_eq!(violations(&whole).len(), 2, "nothing left to pay, and the payment is not the pay amount");
        let mut undiscounted = paid.clone();
        undiscounted.payments[0].amount = 10;
        assert_eq!(violations(&undiscounted).len(), 1);
        let mut old = sample_order();
        old.log = Default::default();
        assert!(violations(&old).is_empty(), "an order from before the log");
    }
}
