//! Payment callbacks (docs/architecture.md, "Payment callback"). The signature is checked at the edge; this applies the
//! notice to the order with compare-and-set, recording every payment id on the order so each
//! is applied at most once. It never touches stock.

use crate::clock;
use crate::context::App;
use crate::domain::order::{
    AttemptState, By, Order, OrderAction, OrderRecord, OrderStatus, PaymentOutcome, PaymentRecord, Provider,
};
use crate::domain::refund::{refund_id_for, RefundReason, RefundRecord};
use crate::domain::OrderId;
use crate::telemetry::names;

/// Most payment records one order keeps; further distinct payment ids are refused.
pub const MAX_PAYMENTS_PER_ORDER: usize = 32;

#[derive(Debug, Clone)]
pub struct PaymentNotice {
    pub payment_id: String,
    /// The provider that sent it (and will refund it).
    pub provider: Provider,
    pub order_id: OrderId,
    pub amount: u64,
    pub currency: String,
    pub succeeded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentResult {
    Applied,
    Duplicate,
    RefundRequested,
    FailedRecorded,
}

impl PaymentResult {
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentResult::Applied => "applied",
            PaymentResult::Duplicate => "duplicate",
            PaymentResult::RefundRequested => "refund_requested",
            PaymentResult::FailedRecorded => "failed_recorded",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PaymentError {
    #[error("unknown order")]
    UnknownOrder,
    #[error("amount or currency does not match the order")]
    AmountMismatch,
    #[error("too many payments on this order")]
    TooManyPayments,
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

pub async fn apply(app: &App, n: &PaymentNotice) -> Result<PaymentResult, PaymentError> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = match app.orders.get(&n.order_id).await? {
            Some(OrderRecord::Order(o)) => *o,
            _ => return Err(PaymentError::UnknownOrder),
        };
        if let Some(prev) = o.payment(&n.payment_id, n.succeeded) {
            // A re-delivery gets the first delivery's answer.
            return match prev.outcome {
                PaymentOutcome::AmountMismatch => Err(PaymentError::AmountMismatch),
                _ if mismatched(&o, prev.amount, &prev.currency) => Err(PaymentError::AmountMismatch),
                _ => Ok(PaymentResult::Duplicate),
            };
        }
        // The cap bounds FAILED and mismatched notices; a succeeded payment is always recorded,
        // so money taken on a closed order always gets its refund request.
        if o.payments.len() >= MAX_PAYMENTS_PER_ORDER && !n.succeeded {
            return Err(PaymentError::TooManyPayments);
        }
        let (next, result) = decide(&o, n, clock::now_ms(), app.config.payment_grace_s);
        if app.orders.replace(&o, &next).await? {
            match result {
                Err(_) => app.count(names::PAYMENT_AMOUNT_MISMATCH, 1),
                Ok(PaymentResult::RefundRequested) => app.count(names::REFUNDS_REQUESTED, 1),
                _ => {}
            }
            tracing::info!(order_id = %o.id, payment_id = n.payment_id, ?result, "payment recorded");
            if matches!(result, Ok(PaymentResult::Applied)) {
                super::codes::supplier::after_paid(app, &next).await;
            }
            return result;
        }
        // lost a race (expiry, cancel, another callback): re-read and decide again
        super::backoff(attempt).await;
    }
    Err(PaymentError::Store(anyhow::anyhow!("order {} kept changing under the callback; retry", n.order_id)))
}

/// Whether a payment is not what the order charges: its pay amount (the amount less its discount,
/// docs/order-record.md) in its currency.
fn mismatched(o: &Order, amount: u64, currency: &str) -> bool {
    amount != o.pay_amount() || currency != o.currency.as_str()
}

/// The order after this notice, and the answer. Pure. `grace_s`: how long past its deadline a
/// PAYING order may still be paid (its payment was started in time; docs/payments.md).
pub fn decide(o: &Order, n: &PaymentNotice, now_ms: i64, grace_s: i64) -> (Order, Result<PaymentResult, PaymentError>) {
    let record = |outcome| PaymentRecord {
        payment_id: n.payment_id.clone(),
        provider: n.provider,
        succeeded: n.succeeded,
        amount: n.amount,
        currency: n.currency.clone(),
        outcome,
        at_ms: now_ms,
    };
    if mismatched(o, n.amount, &n.currency) {
        // Money captured with the wrong amount is still captured: it goes back (protocol review
        // #7), and the order stays as it was. A failed notice with a wrong amount moved no money.
        let outcome = if n.succeeded { PaymentOutcome::RefundRequested } else { PaymentOutcome::AmountMismatch };
        // A PAYING order whose current attempt captured the wrong amount can never be paid by
        // it: it closes in the same write, as a late success does (review protocol-3 N4), so
        // its stock goes back and nothing waits on it for ever.
        let current = o.status == OrderStatus::Paying
            && n.succeeded
            && o.current_attempt().is_some_and(|a| a.payment_id == n.payment_id);
        let base = match o.apply(OrderAction::Expire, &By::provider(n.provider, "amount_mismatch"), now_ms) {
            Ok(expired) if current => expired,
            _ => o.next(now_ms, |_| {}),
        };
        let mut next = base;
        if n.succeeded {
            mark_attempt(&mut next, &n.payment_id, AttemptState::Succeeded);
        }
        push_payment(&mut next, record(outcome), now_ms);
        return (next, Err(PaymentError::AmountMismatch));
    }
    if !n.succeeded {
        // the open attempt failed: the order is payable again (a new attempt may follow)
        let current = o.current_attempt().is_some_and(|a| a.payment_id == n.payment_id);
        let base = match o.apply(OrderAction::PaymentFailed, &By::provider(n.provider, "payment_failed"), now_ms) {
            Ok(payable) if current => payable,
            _ => o.next(now_ms, |_| {}),
        };
        let mut next = base;
        mark_attempt(&mut next, &n.payment_id, AttemptState::Failed);
        push_payment(&mut next, record(PaymentOutcome::FailedRecorded), now_ms);
        return (next, Ok(PaymentResult::FailedRecorded));
    }
    if matches!(o.status, OrderStatus::PendingPayment | OrderStatus::Paying)
        && o.payment_closed(now_ms, grace_s)
        && !crate::mutant!("payment-ignores-deadline")
    {
        // Past the deadline the order is expired whether or not its timeout message ran yet
        // (protocol review #6): expire it and refund the payment in one compare-and-set, as the
        // timeout would have before this callback.
        if let Ok(expired) = o.apply(OrderAction::Expire, &By::provider(n.provider, "paid_after_deadline"), now_ms) {
            let mut next = expired;
            mark_attempt(&mut next, &n.payment_id, AttemptState::Succeeded);
            push_payment(&mut next, record(PaymentOutcome::RefundRequested), now_ms);
            return (next, Ok(PaymentResult::RefundRequested));
        }
    }
    match o.apply(OrderAction::Pay, &By::provider(n.provider, "payment_succeeded"), now_ms) {
        Ok(mut paid) => {
            paid.payment_id = Some(n.payment_id.clone());
            // a SUPPLIER_CODES order's issue starts in the write that pays it (docs/suppliers.md)
            crate::domain::order::codes::start(&mut paid, now_ms / 1000);
            mark_attempt(&mut paid, &n.payment_id, AttemptState::Succeeded);
            push_payment(&mut paid, record(PaymentOutcome::Applied), now_ms);
            (paid, Ok(PaymentResult::Applied))
        }
        // Paid by another payment, or closed: the money goes back (docs/architecture.md, "Payment callback").
        Err(_) => {
            debug_assert!(!matches!(o.status, OrderStatus::PendingPayment | OrderStatus::Paying));
            let next = o.next(now_ms, |x| {
                mark_attempt(x, &n.payment_id, AttemptState::Succeeded);
                push_payment(x, record(PaymentOutcome::RefundRequested), now_ms)
            });
            (next, Ok(PaymentResult::RefundRequested))
        }
    }
}

/// Records how the attempt that made `payment_id` ended, if Holdfast started it.
fn mark_attempt(o: &mut Order, payment_id: &str, state: AttemptState) {
    if let Some(a) = o.attempts.iter_mut().find(|a| a.payment_id == payment_id) {
        // a success is final: a late failure notice never overwrites it
        if a.state != AttemptState::Succeeded {
            a.state = state;
        }
    }
}

/// Records a payment; money that is not applied gets its refund record in the same write
/// (docs/after-sale.md, "Refunds").
fn push_payment(o: &mut Order, p: PaymentRecord, now_ms: i64) {
    if p.outcome == PaymentOutcome::RefundRequested && o.refund(&refund_id_for(&p.payment_id)).is_none() {
        o.refunds.push(RefundRecord::requested(&p, p.amount, RefundReason::PaymentNotApplied, now_ms));
    }
    o.payments.push(p);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::OrderLine;
    use crate::domain::{Currency, Sku, UserId};

    fn order(status: OrderStatus) -> Order {
        Order {
            id: OrderId::parse("o1").unwrap(),
            user: UserId::parse("u").unwrap(),
            status,
            lines: vec![OrderLine {
                campaign: None,
                sku: Sku::parse("s").unwrap(),
                quantity: 1,
                unit_price: 500,
                dates: Vec::new(),
            }],
            amount: 500,
            currency: Currency::parse("EUR").unwrap(),
            pay_expire_at: 1_000_000,
            created_at_ms: 0,
            updated_at_ms: 0,
            version: 3,
            payment_id: None,
            payments: vec![],
            request_hash: String::new(),
            cancel_reason: None,
            refunds: vec![],
            shipment: None,
            return_info: None,
            supplier: Vec::new(),
            attempts: Vec::new(),
            review: None,
            correlation: None,
            settled_at_ms: None,
            details: Default::default(),
            log: Default::default(),
        }
    }

    fn notice(amount: u64, succeeded: bool) -> PaymentNotice {
        PaymentNotice {
            payment_id: "p1".into(),
            provider: Provider::Generic,
            order_id: OrderId::parse("o1").unwrap(),
            amount,
            currency: "EUR".into(),
            succeeded,
        }
    }

    #[test]
    fn money_for_a_supplier_order_not_yet_confirmed_or_failed_goes_back() {
        for st in [OrderStatus::AwaitingSupplier, OrderStatus::Failed] {
            let (next, r) = decide(&order(st), &notice(500, true), 9, 600);
            assert_eq!(r.unwrap(), PaymentResult::RefundRequested, "{st:?}");
            assert_eq!((next.status, next.refunds.len()), (st, 1), "{st:?}");
        }
    }

    #[test]
    fn a_matching_success_pays_a_pending_order() {
        let (next, r) = decide(&order(OrderStatus::PendingPayment), &notice(500, true), 9, 600);
        assert_eq!(r.unwrap(), PaymentResult::Applied);
        assert_eq!(next.status, OrderStatus::Paid);
        assert_eq!(next.payment_id.as_deref(), Some("p1"));
        assert_eq!(next.version, 4);
    }

    #[test]
    fn a_success_on_a_closed_order_requests_a_refund_and_keeps_it_closed() {
        for st in [OrderStatus::Expired, OrderStatus::Cancelled, OrderStatus::Paid] {
            let (next, r) = decide(&order(st), &notice(500, true), 9, 600);
            assert_eq!(r.unwrap(), PaymentResult::RefundRequested);
            assert_eq!(next.status, st);
            assert_eq!(next.refund_requests(), 1);
            assert_eq!(next.refunds.len(), 1);
            assert_eq!(next.refunds[0].refund_id, "rf_p1");
        }
    }

    #[test]
    fn a_captured_wrong_amount_is_refused_and_refunded() {
        let (next, r) = decide(&order(OrderStatus::PendingPayment), &notice(499, true), 9, 600);
        assert!(matches!(r, Err(PaymentError::AmountMismatch)));
        assert_eq!(next.status, OrderStatus::PendingPayment);
        assert_eq!(next.payments[0].outcome, PaymentOutcome::RefundRequested);
        assert_eq!(next.refund_requests(), 1);
    }

    #[test]
    fn a_failed_notice_with_a_wrong_amount_is_recorded_without_a_refund() {
        let (next, r) = decide(&order(OrderStatus::PendingPayment), &notice(499, false), 9, 600);
        assert!(matches!(r, Err(PaymentError::AmountMismatch)));
        assert_eq!(next.payments[0].outcome, PaymentOutcome::AmountMismatch);
        assert_eq!(next.refund_requests(), 0);
    }

    fn paying_with(payment_id: &str) -> Order {
        let mut o = order(OrderStatus::Paying);
        o.pay_expire_at = 100;
        o.attempts.push(crate::domain::order::PaymentAttempt {
            attempt: 1,
            payment_id: payment_id.into(),
            provider: Provider::Generic,
            state: AttemptState::Open,
            created_at_ms: 0,
            redirect_url: None,
            client_secret: None,
        });
        o
    }

    #[test]
    fn a_wrong_amount_captured_by_a_paying_orders_current_attempt_closes_the_order_in_the_same_write() {
        // review protocol-3 N4: it can never be paid by that attempt, so it must not wait for ever
        let o = paying_with("p1");
        let (next, r) = decide(&o, &notice(499, true), 9, 600);
        assert!(matches!(r, Err(PaymentError::AmountMismatch)));
        assert_eq!((next.status, next.version), (OrderStatus::Expired, o.version + 1));
        assert_eq!(next.attempts[0].state, AttemptState::Succeeded);
        assert_eq!((next.refund_requests(), next.refunds[0].amount), (1, 499), "what was captured goes back");
        // another attempt's wrong amount leaves the PAYING order as it is
        let (other, _) = decide(&paying_with("p2"), &notice(499, true), 9, 600);
        assert_eq!(other.status, OrderStatus::Paying);
    }

    #[test]
    fn a_success_past_the_deadline_expires_the_order_and_requests_a_refund() {
        let mut o = order(OrderStatus::PendingPayment);
        o.pay_expire_at = 100;
        let (next, r) = decide(&o, &notice(500, true), 100_000, 600);
        assert_eq!(r.unwrap(), PaymentResult::RefundRequested);
        assert_eq!(next.status, OrderStatus::Expired);
        assert_eq!(next.refund_requests(), 1);
        assert_eq!(next.version, o.version + 1, "one compare-and-set");
        let (paid, r) = decide(&o, &notice(500, true), 99_999, 600);
        assert_eq!((r.unwrap(), paid.status), (PaymentResult::Applied, OrderStatus::Paid));
    }

    #[test]
    fn a_failed_payment_is_recorded_and_the_order_stays_pending() {
        let (next, r) = decide(&order(OrderStatus::PendingPayment), &notice(500, false), 9, 600);
        assert_eq!(r.unwrap(), PaymentResult::FailedRecorded);
        assert_eq!(next.status, OrderStatus::PendingPayment);
    }
}
