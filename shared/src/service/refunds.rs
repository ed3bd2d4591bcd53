//! Refunds (docs/after-sale.md, "Refunds"): asked for on the order (a REQUESTED record written
//! with compare-and-set), issued at the provider by the refunds function (idempotent by the
//! refund id), confirmed by the provider's signed webhook. Reconcile re-drives a record left
//! REQUESTED, so a lost event cannot strand money.

use crate::clock;
use crate::context::App;
use crate::domain::order::{Order, OrderAction, OrderRecord, OrderStatus, Provider};
use crate::domain::refund::{refund_id_for, RefundReason, RefundRecord, RefundStatus};
use crate::domain::{OrderId, ReservationId};
use crate::ports::RefundRequest;
use crate::telemetry::names;

/// A provider's webhook saying a refund went through (or failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundConfirmation {
    /// The provider whose signed webhook carried it: only a refund issued to that provider can
    /// be confirmed by it (security review L1).
    pub provider: Provider,
    pub order_id: OrderId,
    /// Our refund id, when the provider echoes it (metadata); else matched by `provider_refund_id`.
    pub refund_id: Option<String>,
    pub provider_refund_id: String,
    /// Minor units.
    pub amount: u64,
    pub succeeded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmResult {
    Applied,
    Duplicate,
    /// The provider reports the refund failed: recorded, the record stays ISSUED, an alarm
    /// metric counts it (a person decides).
    FailureRecorded,
}

impl ConfirmResult {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmResult::Applied => "refund_confirmed",
            ConfirmResult::Duplicate => "duplicate",
            ConfirmResult::FailureRecorded => "refund_failure_recorded",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RefundError {
    #[error("unknown order")]
    UnknownOrder,
    #[error("no such refund on this order")]
    UnknownRefund,
    #[error("amount does not match the refund")]
    AmountMismatch,
    /// A confirmation that does not fit the refund as recorded: not ISSUED, issued to another
    /// provider, or under another provider refund id. Nothing is changed (security review L1).
    #[error("refund confirmation refused: {0}")]
    ConfirmationRefused(&'static str),
    /// The provider refused the refund (not retryable by itself); recorded on the order.
    #[error("the provider refused refund {refund_id}: {reason}")]
    Refused { refund_id: String, reason: String },
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

async fn load(app: &App, id: &OrderId) -> Result<Order, RefundError> {
    match app.orders.get(id).await? {
        Some(OrderRecord::Order(o)) => Ok(*o),
        _ => Err(RefundError::UnknownOrder),
    }
}

/// Re-reads the order and writes `decide(order)` with compare-and-set until it sticks;
/// `decide` returning `None` means nothing to write (the answer is the order as read).
async fn cas<T>(
    app: &App,
    id: &OrderId,
    mut decide: impl FnMut(&Order) -> Result<Option<(Order, T)>, RefundError>,
    unchanged: T,
) -> Result<(Order, T), RefundError>
where
    T: Copy,
{
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = load(app, id).await?;
        let Some((next, answer)) = decide(&o)? else { return Ok((o, unchanged)) };
        if app.orders.replace(&o, &next).await? {
            return Ok((next, answer));
        }
        super::backoff(attempt).await;
    }
    Err(RefundError::Store(anyhow::anyhow!("order {id} kept changing under the refund; retry")))
}

/// The order with `refund_id` confirmed, and REFUNDING → REFUNDED once the buyer's refund is
/// confirmed. Pure.
pub fn with_confirmed(o: &Order, refund_id: &str, now_ms: i64) -> Order {
    let mut next = o.next(now_ms, |x| {
        if let Some(r) = x.refunds.iter_mut().find(|r| r.refund_id == refund_id) {
            r.status = RefundStatus::Confirmed;
            r.confirmed_at_ms = Some(now_ms);
        }
    });
    finish_if_refunded(&mut next, now_ms);
    next
}

/// REFUNDING → REFUNDED once the refund of the payment that paid the order is confirmed (same
/// write).
pub(crate) fn finish_if_refunded(o: &mut Order, now_ms: i64) {
    let paid_back = o
        .applied_payment()
        .and_then(|p| o.refund(&refund_id_for(&p.payment_id)))
        .filter(|r| r.status == RefundStatus::Confirmed)
        .map(|r| r.provider);
    if let (OrderStatus::Refunding, Some(provider)) = (o.status, paid_back) {
        // the provider's confirmation is what finishes it (docs/order-record.md, "Order log")
        let by = crate::domain::order::By::provider(provider, "refund_confirmed");
        if let Ok(done) = o.apply(OrderAction::FinishRefund, &by, now_ms) {
            *o = Order { version: o.version, ..done };
        }
    }
}

/// What a provider's confirmation does to the order: the order to write and the answer, `None`
/// for a duplicate (nothing to write), or why it is refused. A confirmation is accepted only for
/// a refund ISSUED to the same provider under the provider refund id it recorded (a confirmed
/// one answers a duplicate); a FAILED notice is counted once (security review L1). Pure.
pub fn decide_confirmation(
    o: &Order,
    c: &RefundConfirmation,
    now_ms: i64,
) -> Result<Option<(Order, ConfirmResult)>, RefundError> {
    let r = o
        .refunds
        .iter()
        .find(|r| {
            c.refund_id.as_deref() == Some(r.refund_id.as_str())
                || r.provider_refund_id.as_deref() == Some(c.provider_refund_id.as_str())
        })
        .ok_or(RefundError::UnknownRefund)?;
    if r.provider != c.provider {
        return Err(RefundError::ConfirmationRefused("the refund was issued to another provider"));
    }
    if r.status == RefundStatus::Requested {
        return Err(RefundError::ConfirmationRefused("the refund has not been issued"));
    }
    if r.provider_refund_id.as_deref() != Some(c.provider_refund_id.as_str()) {
        return Err(RefundError::ConfirmationRefused("the provider refund id is not the one issued"));
    }
    if r.amount != c.amount {
        return Err(RefundError::AmountMismatch);
    }
    if r.status == RefundStatus::Confirmed {
        return Ok(None);
    }
    let id = r.refund_id.clone();
    if !c.succeeded {
        if r.failure_reported_at_ms.is_some() {
            return Ok(None); // the same FAILED notice again
        }
        let next = o.next(now_ms, |x| {
            if let Some(r) = x.refunds.iter_mut().find(|r| r.refund_id == id) {
                r.failures += 1;
                r.failure_reported_at_ms = Some(now_ms);
            }
        });
        return Ok(Some((next, ConfirmResult::FailureRecorded)));
    }
    Ok(Some((with_confirmed(o, &id, now_ms), ConfirmResult::Applied)))
}

/// Records the provider's answer. Idempotent: a confirmed refund stays confirmed.
/// Asks the provider about each of `o`'s ISSUED refunds and applies every final answer as its
/// webhook would have ([`confirm`]: done → the refund CONFIRMED, failed → recorded as failed and
/// retried). A refund still pending there is left for the next ask. Answers how many were
/// applied. What the sweep (the `refunds-issued` arm, review protocol-3 N9) and settlement run.
pub async fn ask_provider(app: &App, o: &Order) -> anyhow::Result<usize> {
    let mut applied = 0;
    for r in o.refunds.iter().filter(|r| r.status == RefundStatus::Issued) {
        let Some(prid) = r.provider_refund_id.as_deref() else { continue };
        let Some(state) = app.providers.get(r.provider).refund_state(prid).await? else { continue };
        let Some(succeeded) = state.succeeded else { continue };
        let c = RefundConfirmation {
            provider: r.provider,
            order_id: o.id.clone(),
            refund_id: Some(r.refund_id.clone()),
            provider_refund_id: prid.to_owned(),
            amount: state.amount,
            succeeded,
        };
        match confirm(app, &c).await {
            Ok(_) => applied += 1,
            Err(RefundError::Store(e)) => return Err(e),
            Err(e) => {
                tracing::warn!(order_id = %o.id, refund_id = r.refund_id, error = %e, "refund answer not applied")
            }
        }
    }
    Ok(applied)
}

pub async fn confirm(app: &App, c: &RefundConfirmation) -> Result<ConfirmResult, RefundError> {
    let now = clock::now_ms();
    let outcome = cas(app, &c.order_id, |o| decide_confirmation(o, c, now), ConfirmResult::Duplicate).await;
    let (_, result) = match outcome {
        Err(e @ RefundError::ConfirmationRefused(_)) => {
            app.count(names::REFUND_CONFIRMATIONS_REFUSED, 1);
            tracing::warn!(order_id = %c.order_id, provider = ?c.provider, provider_refund_id = c.provider_refund_id, error = %e, "refund confirmation refused");
            return Err(e);
        }
        other => other?,
    };
    match result {
        ConfirmResult::Applied => app.count(names::REFUNDS_CONFIRMED, 1),
        ConfirmResult::FailureRecorded => {
            app.count(names::REFUNDS_REFUSED, 1);
            tracing::error!(order_id = %c.order_id, provider_refund_id = c.provider_refund_id, "provider reports the refund failed");
        }
        ConfirmResult::Duplicate => {}
    }
    tracing::info!(order_id = %c.order_id, result = result.as_str(), "refund webhook");
    Ok(result)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssueOutcome {
    /// The provider accepted it now.
    Issued,
    /// Issued (or confirmed) before: nothing sent.
    AlreadyIssued,
}

/// Sends a REQUESTED refund to its provider and marks it ISSUED. Safe to run twice at once:
/// the provider is idempotent by refund id, and only one compare-and-set records it.
pub async fn issue(app: &App, order_id: &OrderId, refund_id: &str) -> Result<IssueOutcome, RefundError> {
    let o = load(app, order_id).await?;
    let r = o.refund(refund_id).ok_or(RefundError::UnknownRefund)?.clone();
    if r.status != RefundStatus::Requested {
        return Ok(IssueOutcome::AlreadyIssued);
    }
    let req = RefundRequest {
        refund_id: r.refund_id.clone(),
        payment_id: r.payment_id.clone(),
        order_id: order_id.clone(),
        amount: r.amount,
        currency: r.currency.clone(),
    };
    let answer = app.providers.get(r.provider).refund(&req).await?;
    let now = clock::now_ms();
    match answer {
        Ok(pr) => {
            let (_, out) = cas(
                app,
                order_id,
                |o| {
                    let Some(cur) = o.refund(refund_id) else { return Err(RefundError::UnknownRefund) };
                    if cur.status != RefundStatus::Requested {
                        return Ok(None);
                    }
                    let mut next = o.next(now, |x| {
                        if let Some(x) = x.refunds.iter_mut().find(|x| x.refund_id == refund_id) {
                            x.status = RefundStatus::Issued;
                            x.issued_at_ms = Some(now);
                            x.provider_refund_id = Some(pr.provider_refund_id.clone());
                        }
                    });
                    if pr.succeeded {
                        next = with_confirmed(&next, refund_id, now);
                        next.version = o.version + 1;
                    }
                    Ok(Some((next, IssueOutcome::Issued)))
                },
                IssueOutcome::AlreadyIssued,
            )
            .await?;
            if out == IssueOutcome::Issued {
                app.count(names::REFUNDS_ISSUED, 1);
                tracing::info!(order_id = %order_id, refund_id, provider_refund_id = pr.provider_refund_id, "refund issued");
            }
            Ok(out)
        }
        Err(reason) => {
            let _ = cas(
                app,
                order_id,
                |o| {
                    Ok(Some((
                        o.next(now, |x| {
                            if let Some(x) = x.refunds.iter_mut().find(|x| x.refund_id == refund_id) {
                                x.failures += 1;
                            }
                        }),
                        (),
                    )))
                },
                (),
            )
            .await;
            app.count(names::REFUNDS_REFUSED, 1);
            tracing::error!(order_id = %order_id, refund_id, reason, "provider refused the refund");
            Err(RefundError::Refused { refund_id: refund_id.to_owned(), reason })
        }
    }
}

/// The order with a REQUESTED refund of the whole amount of its applied payment for `reason`,
/// unless that payment already has one. `None` when there is nothing to refund. Pure.
pub fn with_refund_requested(o: &Order, reason: RefundReason, now_ms: i64) -> Option<Order> {
    let p = o.applied_payment()?;
    if o.refund(&refund_id_for(&p.payment_id)).is_some() {
        return None;
    }
    // what was charged goes back: the pay amount, the amount less its discount
    let rec = RefundRecord::requested(p, o.pay_amount(), reason, now_ms);
    Some(o.next(now_ms, |x| x.refunds.push(rec)))
}

/// An oversold paid order: its money goes back (the order stays PAID; the refund is on it,
/// which is also what refuses its shipment). Acted on only when the order's lock is marked
/// oversold: the event is a claim, the mark is the fact (review security-2 L2).
pub async fn request_for_oversell(app: &App, order_id: &OrderId) -> Result<bool, RefundError> {
    let marked = app.locks.get_reservation(&ReservationId::for_order(order_id)).await?.is_some_and(|r| r.oversold)
        || crate::mutant!("l2-oversell-unchecked");
    if !marked {
        app.count(names::REJECTED_MESSAGES, 1);
        tracing::error!(order_id = %order_id, "OversellDetected for a lock not marked oversold: ignored");
        return Ok(false);
    }
    let now = clock::now_ms();
    let (_, asked) = cas(
        app,
        order_id,
        |o| {
            Ok(match o.status {
                s if s.is_paid_or_later() => with_refund_requested(o, RefundReason::Oversold, now).map(|n| (n, true)),
                _ => None,
            })
        },
        false,
    )
    .await?;
    if asked {
        app.count(names::REFUNDS_REQUESTED, 1);
        tracing::warn!(order_id = %order_id, "oversold order: refund requested");
    }
    Ok(asked)
}

/// Issues every refund of `o` left REQUESTED since before `before_ms` (the reconcile backstop).
pub async fn redrive(app: &App, o: &Order, before_ms: i64) -> Result<usize, RefundError> {
    let mut n = 0;
    for r in o.refunds.iter().filter(|r| r.status == RefundStatus::Requested && r.requested_at_ms < before_ms) {
        if issue(app, &o.id, &r.refund_id).await? == IssueOutcome::Issued {
            app.count(names::REFUNDS_REDRIVEN, 1);
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::{OrderLine, PaymentOutcome, PaymentRecord};
    use crate::domain::{Currency, Sku, UserId};

    /// A REFUNDING order paid by `p1` through `provider`, its refund in `status`.
    fn order(provider: Provider, status: RefundStatus) -> Order {
        let p = PaymentRecord {
            payment_id: "p1".into(),
            provider,
            succeeded: true,
            amount: 500,
            currency: "EUR".into(),
            outcome: PaymentOutcome::Applied,
            at_ms: 1,
        };
        let mut r = RefundRecord::requested(&p, 500, RefundReason::BuyerRequest, 2);
        r.status = status;
        if status != RefundStatus::Requested {
            r.provider_refund_id = Some("pr_1".into());
            r.issued_at_ms = Some(3);
        }
        Order {
            id: OrderId::parse("o1").unwrap(),
            user: UserId::parse("u").unwrap(),
            status: OrderStatus::Refunding,
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
            payment_id: Some("p1".into()),
            payments: vec![p],
            request_hash: String::new(),
            cancel_reason: None,
            refunds: vec![r],
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

    fn confirmation(provider: Provider, provider_refund_id: &str, succeeded: bool) -> RefundConfirmation {
        RefundConfirmation {
            provider,
            order_id: OrderId::parse("o1").unwrap(),
            refund_id: Some("rf_p1".into()),
            provider_refund_id: provider_refund_id.into(),
            amount: 500,
            succeeded,
        }
    }

    fn refused(r: Result<Option<(Order, ConfirmResult)>, RefundError>) -> &'static str {
        match r {
            Err(RefundError::ConfirmationRefused(why)) => why,
            other => panic!("expected a refusal, got {:?}", other.map(|o| o.map(|(_, r)| r))),
        }
    }

    #[test]
    fn an_issued_refund_is_confirmed_by_its_provider_under_its_provider_refund_id() {
        let o = order(Provider::Generic, RefundStatus::Issued);
        let (next, r) = decide_confirmation(&o, &confirmation(Provider::Generic, "pr_1", true), 9).unwrap().unwrap();
        assert_eq!(r, ConfirmResult::Applied);
        assert_eq!((next.refunds[0].status, next.status), (RefundStatus::Confirmed, OrderStatus::Refunded));
        // again: a duplicate, nothing written
        assert!(decide_confirmation(&next, &confirmation(Provider::Generic, "pr_1", true), 10).unwrap().is_none());
        // matched by the provider refund id alone (a provider that does not echo our id)
        let mut c = confirmation(Provider::Generic, "pr_1", true);
        c.refund_id = None;
        assert!(decide_confirmation(&o, &c, 9).unwrap().is_some());
    }

    #[test]
    fn a_refund_never_issued_is_not_confirmed() {
        let o = order(Provider::Generic, RefundStatus::Requested);
        for (pid, ok) in [("pr_1", true), ("anything", true), ("pr_1", false)] {
            let why = refused(decide_confirmation(&o, &confirmation(Provider::Generic, pid, ok), 9));
            assert_eq!(why, "the refund has not been issued");
        }
    }

    #[test]
    fn another_provider_cannot_confirm_or_fail_a_refund() {
        for status in [RefundStatus::Issued, RefundStatus::Confirmed, RefundStatus::Requested] {
            let o = order(Provider::Stripe, status);
            for ok in [true, false] {
                let why = refused(decide_confirmation(&o, &confirmation(Provider::Generic, "pr_1", ok), 9));
                assert_eq!(why, "the refund was issued to another provider", "{status:?}");
            }
        }
    }

    #[test]
    fn a_provider_refund_id_other_than_the_recorded_one_is_refused() {
        for status in [RefundStatus::Issued, RefundStatus::Confirmed] {
            let o = order(Provider::Generic, status);
            let why = refused(decide_confirmation(&o, &confirmation(Provider::Generic, "pr_2", true), 9));
            assert_eq!(why, "the provider refund id is not the one issued", "{status:?}");
        }
        // the amount must still match the refund
        let o = order(Provider::Generic, RefundStatus::Issued);
        let mut c = confirmation(Provider::Generic, "pr_1", true);
        c.amount = 499;
        assert!(matches!(decide_confirmation(&o, &c, 9), Err(RefundError::AmountMismatch)));
        c.refund_id = Some("rf_other".into());
        c.provider_refund_id = "pr_other".into();
        assert!(matches!(decide_confirmation(&o, &c, 9), Err(RefundError::UnknownRefund)));
    }

    #[test]
    fn a_failed_notice_is_counted_once_however_often_it_is_replayed() {
        let o = order(Provider::Generic, RefundStatus::Issued);
        let failed = confirmation(Provider::Generic, "pr_1", false);
        let (once, r) = decide_confirmation(&o, &failed, 9).unwrap().unwrap();
        assert_eq!(r, ConfirmResult::FailureRecorded);
        assert_eq!((once.refunds[0].failures, once.refunds[0].status), (1, RefundStatus::Issued));
        assert_eq!(once.refunds[0].failure_reported_at_ms, Some(9));
        assert!(decide_confirmation(&once, &failed, 10).unwrap().is_none(), "a replay changes nothing");
        // a later success still confirms it
        let (done, r) =
            decide_confirmation(&once, &confirmation(Provider::Generic, "pr_1", true), 11).unwrap().unwrap();
        assert_eq!((r, done.refunds[0].status), (ConfirmResult::Applied, RefundStatus::Confirmed));
        assert_eq!(done.refunds[0].failures, 1);
    }
}
