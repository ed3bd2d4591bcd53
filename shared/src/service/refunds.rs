//! Refunds (docs/after-sale.md, "Refunds"): asked for on the order (a REQUESTED record written
//! with compare-and-set), issued at the provider by the refunds function (idempotent by the
//! refund id), confirmed by the provider's signed webhook. Reconcile re-drives a record left
//! REQUESTED, so a lost event cannot strand money.

use crate::clock;
use crate::context::App;
use crate::domain::order::{Order, OrderAction, OrderRecord, OrderStatus};
use crate::domain::refund::{refund_id_for, RefundReason, RefundRecord, RefundStatus};
use crate::domain::{OrderId, ReservationId};
use crate::ports::RefundRequest;
use crate::telemetry::names;

/// A provider's webhook saying a refund went through (or failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundConfirmation {
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
        .is_some_and(|r| r.status == RefundStatus::Confirmed);
    if o.status == OrderStatus::Refunding && paid_back {
        if let Ok(done) = o.apply(OrderAction::FinishRefund, now_ms) {
            *o = Order { version: o.version, ..done };
        }
    }
}

/// Records the provider's answer. Idempotent: a confirmed refund stays confirmed.
pub async fn confirm(app: &App, c: &RefundConfirmation) -> Result<ConfirmResult, RefundError> {
    let now = clock::now_ms();
    let (_, result) = cas(
        app,
        &c.order_id,
        |o| {
            let r = o
                .refunds
                .iter()
                .find(|r| {
                    c.refund_id.as_deref() == Some(r.refund_id.as_str())
                        || r.provider_refund_id.as_deref() == Some(c.provider_refund_id.as_str())
                })
                .ok_or(RefundError::UnknownRefund)?;
            if r.amount != c.amount {
                return Err(RefundError::AmountMismatch);
            }
            if r.status == RefundStatus::Confirmed {
                return Ok(None);
            }
            if !c.succeeded {
                let id = r.refund_id.clone();
                let next = o.next(now, |x| {
                    if let Some(r) = x.refunds.iter_mut().find(|r| r.refund_id == id) {
                        r.failures += 1;
                    }
                });
                return Ok(Some((next, ConfirmResult::FailureRecorded)));
            }
            let mut next = with_confirmed(o, &r.refund_id.clone(), now);
            if let Some(x) = next.refunds.iter_mut().find(|x| x.refund_id == r.refund_id) {
                x.provider_refund_id.get_or_insert_with(|| c.provider_refund_id.clone());
            }
            Ok(Some((next, ConfirmResult::Applied)))
        },
        ConfirmResult::Duplicate,
    )
    .await?;
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
    let rec = RefundRecord::requested(p, o.amount, reason, now_ms);
    Some(o.next(now_ms, |x| x.refunds.push(rec)))
}

/// An oversold paid order: its money goes back (the order stays PAID; the refund is on it,
/// which is also what refuses its shipment). Acted on only when the order's lock is marked
/// oversold: the event is a claim, the mark is the fact (review security-2 L2).
pub async fn request_for_oversell(app: &App, order_id: &OrderId) -> Result<bool, RefundError> {
    let marked = app.stock.get_reservation(&ReservationId::for_order(order_id)).await?.is_some_and(|r| r.oversold)
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
