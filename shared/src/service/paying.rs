//! Starting a payment and ending a PAYING order (docs/payments.md).
//!
//! `POST /orders/{id}/payments` creates a payment at the provider (idempotent per order and
//! attempt: the provider's key is `pay_<order>_<n>`) and moves the order `PENDING_PAYMENT →
//! PAYING` in one compare-and-set. A PAYING order is never expired blindly: at its deadline the
//! provider is asked ([`at_deadline`]) — paid there → PAID; still processing → asked again
//! every `payment_query_every_s` for at most `payment_grace_s`; anything else → the payment is
//! cancelled at the provider first (which may answer "too late, it succeeded" → PAID), then the
//! order EXPIRES. A buyer's or an admin's cancel of a PAYING order goes through [`cancel_at_provider`]
//! first in the same way. The webhook stays the fast path; these queries are what make a
//! dropped webhook harmless.

use super::lookup::OrderError;
use super::payments::{self, PaymentNotice, PaymentResult};
use crate::clock;
use crate::context::App;
use crate::domain::order::{AttemptState, By, Order, OrderAction, OrderRecord, OrderStatus, PaymentAttempt, Provider};
use crate::domain::{OrderId, UserId};
use crate::ports::{Message, PaymentRequest, PaymentState, ProviderPayment, MAX_DELAY_SECONDS};
use crate::telemetry::names;

/// Most payment attempts one order may start.
pub const MAX_ATTEMPTS: usize = 10;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Order(#[from] OrderError),
    /// The order's deadline has passed: it can no longer be paid.
    #[error("the order's payment window has closed")]
    WindowClosed,
    #[error("this order has started {MAX_ATTEMPTS} payments; no more")]
    TooManyAttempts,
    /// The provider refused to create the payment (not retryable as is).
    #[error("the payment provider refused: {0}")]
    Refused(String),
    /// The provider did not answer (retry).
    #[error("the payment provider is unavailable: {0:#}")]
    Unavailable(anyhow::Error),
    /// The open payment is processing at its provider (a bank debit): it cannot be cancelled,
    /// so no other payment may start until the provider decides.
    #[error("the order's payment is processing at its provider; wait for its outcome")]
    Processing,
}

impl From<anyhow::Error> for StartError {
    fn from(e: anyhow::Error) -> Self {
        StartError::Order(OrderError::Store(e))
    }
}

/// The provider `name` names (`generic`, `stripe`), if any.
pub fn provider_named(name: &str) -> Option<Provider> {
    Provider::parse(name)
}

/// Starts a payment for `user`'s order through `provider` (default: the configured one).
/// Answers the order and whether a payment was created (`false`: the open attempt again).
pub async fn start(
    app: &App,
    user: &UserId,
    id: &OrderId,
    provider: Option<Provider>,
) -> Result<(Order, bool), StartError> {
    let provider = provider.or_else(|| provider_named(&app.config.payment_provider)).unwrap_or_default();
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = super::lookup::get_owned(app, user, id).await?;
        if let Some(a) = open_attempt(&o) {
            if a.provider == provider {
                return Ok((o, false));
            }
        }
        may_start(&o)?;
        if cancel_earlier_attempts(app, &o).await? {
            continue;
        }
        let next = with_new_attempt(app, &o, provider).await?;
        if app.orders.replace(&o, &next).await? {
            app.count(names::PAYMENTS_STARTED, 1);
            tracing::info!(order_id = %o.id, attempt = next.attempts.len(), provider = ?provider, "payment started");
            return Ok((next, true));
        }
        // lost a race (a callback, the deadline, a concurrent start): re-read and decide again;
        // a concurrent start of the same attempt got the same payment from the provider
        super::backoff(attempt).await;
    }
    Err(StartError::Order(OrderError::Store(anyhow::anyhow!(
        "order {id} kept changing under the payment start; retry"
    ))))
}

/// Why `o` may not start another payment now, if it may not: not payable, past its deadline, or
/// out of attempts.
fn may_start(o: &Order) -> Result<(), StartError> {
    if !matches!(o.status, OrderStatus::PendingPayment | OrderStatus::Paying) {
        return Err(refused_start(o.status));
    }
    if o.deadline_passed(clock::now_ms()) {
        return Err(StartError::WindowClosed);
    }
    if o.attempts.len() >= MAX_ATTEMPTS {
        return Err(StartError::TooManyAttempts);
    }
    Ok(())
}

/// `invalid_transition` for starting a payment on an order in `from`.
fn refused_start(from: OrderStatus) -> StartError {
    OrderError::Invalid(crate::domain::order::InvalidTransition { from, action: OrderAction::StartPayment }).into()
}

/// Cancels at their providers the attempts of `o` that could still take money: the open one
/// (another provider asked) and failed ones (a failed card payment can be retried there).
/// `true` when a provider's answer changed the order (decide again on a fresh read).
async fn cancel_earlier_attempts(app: &App, o: &Order) -> Result<bool, StartError> {
    let mut moved = false;
    for a in o.attempts.iter().filter(|a| a.state.unsettled()) {
        match cancel_at_provider(app, o, a).await.map_err(StartError::Unavailable)? {
            Cancelled::Paid => return Err(refused_start(OrderStatus::Paid)),
            Cancelled::Recorded => moved = true,
            Cancelled::NotCancellable => return Err(StartError::Processing),
            Cancelled::Cancelled => {}
        }
    }
    Ok(moved)
}

/// Creates the next attempt's payment at `provider` and answers `o` moved to PAYING with it as
/// its open attempt (the earlier ones recorded cancelled).
async fn with_new_attempt(app: &App, o: &Order, provider: Provider) -> Result<Order, StartError> {
    let n = o.attempts.len() as u32 + 1;
    let req = PaymentRequest {
        attempt_key: format!("pay_{}_{n}", o.id),
        order_id: o.id.clone(),
        // what the buyer pays: the amount less its discount (docs/order-record.md)
        amount: o.pay_amount(),
        currency: o.currency.to_string(),
    };
    let created = app
        .providers
        .get(provider)
        .create_payment(&req)
        .await
        .map_err(StartError::Unavailable)?
        .map_err(StartError::Refused)?;
    let now = clock::now_ms();
    let mut next = o.apply(OrderAction::StartPayment, &By::buyer("payment_started"), now).map_err(OrderError::from)?;
    for a in next.attempts.iter_mut().filter(|a| a.state.unsettled()) {
        a.state = AttemptState::Cancelled;
    }
    next.attempts.push(PaymentAttempt {
        attempt: n,
        payment_id: created.payment_id,
        provider,
        state: AttemptState::Open,
        created_at_ms: now,
        redirect_url: created.redirect_url,
        client_secret: created.client_secret,
    });
    Ok(next)
}

/// The attempt that is still open on a PAYING order.
fn open_attempt(o: &Order) -> Option<&PaymentAttempt> {
    (o.status == OrderStatus::Paying).then(|| o.current_attempt()).flatten().filter(|a| a.state == AttemptState::Open)
}

/// What cancelling an attempt at its provider came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// The provider cancelled it (or it had failed, or the provider never knew it).
    Cancelled,
    /// Too late: it had succeeded; the payment was applied (the order is PAID, or its money is
    /// being refunded).
    Paid,
    /// It had succeeded and applying it changed the order: the caller re-reads.
    Recorded,
    /// The provider refused: the payment is processing (Stripe answers a cancel of a
    /// `processing` intent with `payment_intent_unexpected_state`) and may still take the
    /// money. Never recorded as cancelled: the attempt stays unsettled, so the pending index
    /// keeps it and the deadline and the sweep ask again until the provider decides.
    NotCancellable,
}

/// Cancels `a` at its provider; a payment that succeeded meanwhile is applied as its webhook
/// would have been, one still processing is [`Cancelled::NotCancellable`].
pub async fn cancel_at_provider(app: &App, o: &Order, a: &PaymentAttempt) -> anyhow::Result<Cancelled> {
    let after = app.providers.get(a.provider).cancel_payment(&a.payment_id).await?;
    match after {
        Some(p) if p.state == PaymentState::Succeeded => {
            let r = apply_found(app, o, a, &p).await?;
            Ok(if r == Some(PaymentResult::Applied) { Cancelled::Paid } else { Cancelled::Recorded })
        }
        Some(p) if p.state == PaymentState::Processing => {
            app.count(names::PAYMENTS_NOT_CANCELLABLE, 1);
            tracing::warn!(order_id = %o.id, payment_id = a.payment_id, "payment processing at its provider: not cancellable");
            Ok(Cancelled::NotCancellable)
        }
        _ => Ok(Cancelled::Cancelled),
    }
}

/// Applies a payment the provider reports succeeded, as its webhook would (`None`: refused, e.g.
/// a wrong amount — recorded and refunded by [`payments::apply`]).
async fn apply_found(
    app: &App,
    o: &Order,
    a: &PaymentAttempt,
    p: &ProviderPayment,
) -> anyhow::Result<Option<PaymentResult>> {
    let n = PaymentNotice {
        payment_id: a.payment_id.clone(),
        provider: a.provider,
        order_id: o.id.clone(),
        amount: p.amount,
        currency: p.currency.clone(),
        succeeded: true,
    };
    // Judged now, not at the deadline (review protocol-3 N10, accepted): the providers do not
    // report when they captured, so a query that runs late cannot tell a payment made in time
    // from one made after the deadline; the simulator found the latter paid late. Past the
    // grace it is refunded, which the deadline rule allows.
    match payments::apply(app, &n).await {
        Ok(r) => {
            if r == PaymentResult::Applied {
                app.count(names::PAYMENTS_RECOVERED, 1);
                tracing::warn!(order_id = %o.id, payment_id = a.payment_id, "payment found succeeded at the provider without its webhook");
            }
            Ok(Some(r))
        }
        Err(payments::PaymentError::Store(e)) => Err(e),
        Err(e) => {
            tracing::warn!(order_id = %o.id, payment_id = a.payment_id, error = %e, "payment found at the provider not applied");
            Ok(None)
        }
    }
}

/// What became of a PAYING order at its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeadlineOutcome {
    /// Its payment had succeeded: applied (PAID, or refunded if too late).
    Paid,
    Expired,
    /// The provider is still processing: asked again in this many seconds.
    Waiting(u32),
    /// The order moved meanwhile: the caller re-reads.
    Moved,
}

/// Decides a PAYING order whose deadline has passed by asking its provider (module docs).
pub async fn at_deadline(app: &App, o: &Order) -> anyhow::Result<DeadlineOutcome> {
    debug_assert_eq!(o.status, OrderStatus::Paying);
    app.count(names::PAYMENTS_QUERIED, 1);
    let Some(a) = o.current_attempt() else {
        return expire(app, o, None).await;
    };
    let provider = app.providers.get(a.provider);
    let now_ms = clock::now_ms();
    let now = now_ms / 1000;
    let found = provider.payment(&a.payment_id).await?;
    let state = found.as_ref().map(|p| p.state);
    if let (Some(PaymentState::Succeeded), Some(p)) = (state, found.as_ref()) {
        return Ok(match apply_found(app, o, a, p).await? {
            Some(_) => DeadlineOutcome::Paid,
            None => DeadlineOutcome::Moved,
        });
    }
    let grace = app.config.payment_grace_s;
    if state == Some(PaymentState::Processing) && !o.payment_closed(now_ms, grace) {
        let grace_ends = o.payment_closes_at(grace);
        let wait = app.config.payment_query_every_s.min(grace_ends - now).clamp(1, MAX_DELAY_SECONDS) as u32;
        let msg = Message::PaymentTimeout { schema: 1, order_id: o.id.to_string(), due_at: now + i64::from(wait) };
        app.messages.send(&msg, wait).await?;
        tracing::info!(order_id = %o.id, wait, "payment still processing at the deadline; asking again");
        return Ok(DeadlineOutcome::Waiting(wait));
    }
    // not paid: make sure it never can be before the order closes
    let final_state = match state {
        Some(PaymentState::Open) | Some(PaymentState::Processing) => match cancel_at_provider(app, o, a).await? {
            Cancelled::Paid => return Ok(DeadlineOutcome::Paid),
            Cancelled::Recorded => return Ok(DeadlineOutcome::Moved),
            Cancelled::Cancelled => Some(AttemptState::Cancelled),
            // still processing past the grace (review protocol-3 N1): the order closes and its
            // stock goes back, but the attempt stays open — the order stays in the pending index
            // and `settle_stray_attempts` asks at every sweep until the provider decides; a
            // success then is refunded (the order is closed), a failure marks the attempt
            Cancelled::NotCancellable => None,
        },
        Some(PaymentState::Failed) => Some(AttemptState::Failed),
        _ => Some(AttemptState::Cancelled),
    };
    expire(app, o, final_state).await
}

/// CAS PAYING → EXPIRED, recording how its open attempt ended.
async fn expire(app: &App, o: &Order, attempt_state: Option<AttemptState>) -> anyhow::Result<DeadlineOutcome> {
    let by = By::system(app.function.as_str(), "payment_deadline");
    let mut next = o.apply(OrderAction::Expire, &by, clock::now_ms())?;
    if let (Some(st), Some(a)) = (attempt_state, next.attempts.last_mut()) {
        if a.state == AttemptState::Open {
            a.state = st;
        }
    }
    if app.orders.replace(o, &next).await? {
        app.count(names::ORDERS_EXPIRED, 1);
        tracing::info!(order_id = %o.id, "paying order expired: its provider reports no payment");
        return Ok(DeadlineOutcome::Expired);
    }
    Ok(DeadlineOutcome::Moved)
}

/// Settles the attempts that could still take money (open, or failed: a failed payment can be
/// retried at the provider) other than a PAYING order's current one — the order paid by
/// another payment, cancelled by an admin, back to PENDING_PAYMENT after a failure, or closed
/// meanwhile. The simulator found both ways money was lost: an attempt that succeeded with its
/// webhook lost while a second payment paid the order, and a failed payment retried
/// successfully at the provider with its webhook lost before the order expired. Each is asked
/// of its provider: succeeded → applied as its webhook would have been (paid, or refunded if
/// the order is paid or closed); otherwise cancelled there and marked. Answers how many there
/// were. Run at the order's deadline (its timeout message, or reconcile: such an order stays in
/// the pending index until none is left).
pub async fn settle_stray_attempts(app: &App, o: &Order) -> anyhow::Result<usize> {
    let open: Vec<PaymentAttempt> = o
        .attempts
        .iter()
        .filter(|a| a.state.unsettled() && !(o.status == OrderStatus::Paying && o.current_attempt() == Some(*a)))
        .cloned()
        .collect();
    for a in &open {
        let provider = app.providers.get(a.provider);
        let now_state = match provider.payment(&a.payment_id).await? {
            Some(p) if p.state == PaymentState::Succeeded => Some(p),
            _ => provider.cancel_payment(&a.payment_id).await?,
        };
        if now_state.as_ref().is_some_and(|p| p.state == PaymentState::Processing) {
            // not cancellable yet: left unsettled, asked again at the next sweep
            app.count(names::PAYMENTS_NOT_CANCELLABLE, 1);
            tracing::info!(order_id = %o.id, payment_id = a.payment_id, "stray attempt still processing; asked again later");
            continue;
        }
        let cur = reread(app, &o.id).await?.ok_or_else(|| anyhow::anyhow!("order {} vanished", o.id))?;
        match now_state {
            Some(p) if p.state == PaymentState::Succeeded => {
                // recorded (and owed back if the order is paid or closed) by the callback path,
                // which also marks the attempt
                apply_found(app, &cur, a, &p).await?;
            }
            _ => mark(app, &o.id, &a.payment_id, AttemptState::Cancelled).await?,
        }
    }
    Ok(open.len())
}

/// Marks one attempt (compare-and-set, re-read on a lost race).
async fn mark(app: &App, id: &OrderId, payment_id: &str, state: AttemptState) -> anyhow::Result<()> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let Some(o) = reread(app, id).await? else { return Ok(()) };
        let Some(i) = o.attempts.iter().position(|a| a.payment_id == payment_id && a.state.unsettled()) else {
            return Ok(());
        };
        let next = o.next(clock::now_ms(), |n| n.attempts[i].state = state);
        if app.orders.replace(&o, &next).await? {
            return Ok(());
        }
        super::backoff(attempt).await;
    }
    anyhow::bail!("order {id} kept changing under the attempt's mark; retry")
}

/// Reads `id` again for a caller that lost a race.
pub async fn reread(app: &App, id: &OrderId) -> anyhow::Result<Option<Order>> {
    Ok(match app.orders.get(id).await? {
        Some(OrderRecord::Order(o)) => Some(*o),
        _ => None,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod stray_tests;
