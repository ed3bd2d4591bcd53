//! The order service: create-order (docs/architecture.md, "Checkout"), read, cancel, payment timeout ("Payment timeout").

use super::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest};
use crate::clock;
use crate::context::App;
use crate::domain::money::{Money, MoneyError};
use crate::domain::order::{
    AttemptState, By, Order, OrderAction, OrderDetails, OrderLine, OrderLog, OrderRecord, OrderStatus,
};
use crate::domain::reservation::{LockStatus, Reservation, ReservationKind};
use crate::domain::{Currency, IdempotencyKey, OrderId, ReservationId, Sku, UserId};
use crate::faults::{self, InjectedCrash};
use crate::ports::{Message, MAX_DELAY_SECONDS};
use crate::telemetry::names;
use sha2::{Digest, Sha256};

mod record;
pub mod recorded;
mod steps;
pub use record::checkout_hash;
pub use recorded::{OnOutage, Recorded};
// the errors and the owner's read live a floor down, where paying and after-sale reach them too
pub use super::lookup::{get_owned, OrderError, StockRefusal};

/// A canonical fingerprint of an order's lines (merged, sorted): the body an
/// Idempotency-Key is bound to. A line without a campaign hashes as it always did.
pub fn request_hash(lines: &[LineRequest]) -> String {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.sku.as_str().as_bytes());
        h.update(b":");
        h.update(l.quantity.get().to_string().as_bytes());
        if let Some(c) = &l.campaign {
            h.update(b"@");
            h.update(c.as_str().as_bytes());
        }
        for d in &l.dates {
            h.update(b"+");
            h.update(d.to_string().as_bytes());
        }
        h.update(b"\n");
    }
    hex::encode(&h.finalize()[..16])
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error(transparent)]
    Freeze(#[from] FreezeError),
    /// A queued campaign's item without a valid admission token (docs/waiting-room.md).
    #[error(transparent)]
    Admission(#[from] super::queue::AdmissionRefusal),
    #[error("one order may hold the items of one queued campaign")]
    TwoQueues,
    #[error("Idempotency-Key already used with another body")]
    KeyReused,
    #[error("the reservation of this checkout expired; start a new checkout")]
    ReservationExpired,
    #[error("SKUs of one order must share a currency")]
    MixedCurrency,
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Crash(#[from] InjectedCrash),
    /// A SUPPLIER checkout refused before anything was written (docs/suppliers.md).
    #[error(transparent)]
    Supplier(#[from] super::supplier::QuoteError),
    /// The order could not be written and the checkout was voided: a new checkout (new
    /// Idempotency-Key) is the only way forward.
    #[error("checkout aborted: {0:#}")]
    Aborted(anyhow::Error),
    #[error(transparent)]
    Store(anyhow::Error),
    /// The line's SKU or campaign item admits no more checkouts this second (docs/operations.md).
    #[error("{0} admits no more checkouts now; retry after {1} s")]
    RateLimited(Sku, u64),
    /// The record's discount does not fit the order's amount (docs/order-record.md).
    #[error(transparent)]
    Discount(#[from] crate::domain::order::details::DiscountError),
    /// No order yet: the store was out of reach and the checkout was recorded, to be written
    /// once it answers (answered 202 `RECORDED`; [`recorded`]).
    #[error("the store is out of reach; the checkout was recorded and is written once it answers")]
    Recorded(Box<Recorded>),
}

impl From<anyhow::Error> for CreateError {
    fn from(e: anyhow::Error) -> Self {
        CreateError::Store(e)
    }
}

/// Creates the order of one checkout, or returns the one it already created.
/// Round trips after validation: (freeze ∥ reservation-check message), then (order put ∥
/// payment-timeout message) — two sequential steps.
pub async fn create(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    lines: Vec<LineRequest>,
) -> Result<(Order, bool), CreateError> {
    create_admitted(app, user, key, lines, None).await
}

/// [`create`] with the admission token a queued campaign's items need (docs/waiting-room.md):
/// verified before anything is written, spent in the freeze's own transaction.
pub async fn create_admitted(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    lines: Vec<LineRequest>,
    admission_token: Option<&str>,
) -> Result<(Order, bool), CreateError> {
    create_with(app, user, key, lines, &OrderDetails::default(), admission_token).await
}

/// [`create_admitted`] with the order record (docs/order-record.md): delivery, remark and a
/// discount, checked against the amount before anything is written and bound to the key.
pub async fn create_with(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    lines: Vec<LineRequest>,
    details: &OrderDetails,
    admission_token: Option<&str>,
) -> Result<(Order, bool), CreateError> {
    checkout(app, user, key, lines, details, admission_token, OnOutage::Record).await
}

/// [`create_with`], and what to do if the freeze cannot reach the store ([`recorded`]).
async fn checkout(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    lines: Vec<LineRequest>,
    details: &OrderDetails,
    admission_token: Option<&str>,
    on_outage: OnOutage,
) -> Result<(Order, bool), CreateError> {
    let id = OrderId::derive(user, key);
    let hash = checkout_hash(&lines, details);
    let rid = ReservationId::for_order(&id);
    let metas = steps::checked_metas(app, &lines, &rid).await?;
    let now = clock::now_s();
    let steps::LineCampaigns { campaigns, admissions, end: campaign_end, queued } =
        steps::line_campaigns(app, &lines, &metas).await?;
    // a discount the amount cannot carry is refused before anything is written (a retry of a
    // checkout that committed is answered its order)
    if let Err(e) = details.pay_amount(record::expected_amount(&lines, &metas, &campaigns)) {
        return steps::refused(app, &id, &hash, e.into()).await;
    }
    // Before anything is written (a refused checkout touches no shard; a replay that already
    // froze is admitted again only if there is room): a queued campaign's items need a token
    let admission = match &queued {
        // a token without a queued campaign is a waitlist's (docs/waitlist.md)
        None => super::waitlist::admission_of(app, &lines, user, admission_token).await?,
        Some(c) => super::queue::admission_of(app, c, user, admission_token).await?.map(Some),
    };
    let admission = match admission {
        Ok(a) => a,
        Err(refusal) => return steps::refused(app, &id, &hash, refusal.into()).await,
    };
    if let Err((sku, s)) = super::sale::admit(app, &admissions) {
        return steps::refused(app, &id, &hash, CreateError::RateLimited(sku, s)).await;
    }
    let bookings = match steps::quoted_bookings(app, &id, &hash, &lines, &metas).await? {
        Ok(b) => b,
        Err(replayed) => return Ok(replayed),
    };
    // a SUPPLIER order holds its (stockless) lock while it waits for the supplier too
    let supplier_wait = if bookings.is_empty() { 0 } else { app.config.supplier_timeout_s };
    let req = FreezeRequest {
        id: rid.clone(),
        kind: ReservationKind::Order,
        user: Some(user.clone()),
        request_hash: hash.clone(),
        lines,
        // unpaid campaign orders expire when their campaign ends, plus its grace (docs/campaigns.md)
        expires_at: (now + supplier_wait + app.config.payment_ttl_s).min(campaign_end),
        admission,
    };
    let frozen = steps::freeze_with_check(app, &id, &req, &metas, now).await;
    let frozen = recorded::or_record(app, on_outage, key, &req, details, &metas, frozen).await?;
    let reservation = match steps::reservation_of(app, &id, frozen).await? {
        Ok(r) => r,
        Err(replayed) => return Ok(replayed),
    };
    let mut order = order_of(&id, user, &reservation)?;
    if !bookings.is_empty() {
        // not payable until its supplier confirms; until then `pay_expire_at` is the supplier
        // deadline (the sweep's index reads it), and the payment deadline starts at confirmation
        order.status = OrderStatus::AwaitingSupplier;
        order.supplier = bookings;
        order.pay_expire_at = reservation.created_at_ms / 1000 + app.config.supplier_timeout_s;
    }
    if let Err(e) = details.pay_amount(order.amount) {
        return record::refuse_after_freeze(app, &id, &hash, e).await;
    }
    // the record, and the log's first entry: the buyer's checkout (docs/order-record.md)
    order.details = details.clone();
    order.log = OrderLog::created(order.status, &By::buyer("checkout"), order.created_at_ms);
    let (order, replayed) = write_order(app, order).await?;
    if !replayed && order.status == OrderStatus::AwaitingSupplier {
        // The order is written: a slow supplier must not turn it into a 503. Booking gets one
        // call's budget here; whatever is not booked by then, the first poll books.
        let booked = tokio::time::timeout(app.budget.operation, super::supplier::book_new(app, order.clone())).await;
        return Ok((booked.unwrap_or(order), false));
    }
    Ok((order, replayed))
}

/// The order a committed checkout wrote under `id` (the same user, key and body: its
/// [`checkout_hash`] is `hash`), if there is one: what a retry is answered before any refusal
/// (the sales switch, an admission rate) can turn it away.
pub async fn replay_of(app: &App, id: &OrderId, hash: &str) -> anyhow::Result<Option<Order>> {
    Ok(match app.orders.get(id).await? {
        Some(OrderRecord::Order(o)) if o.request_hash == hash => Some(*o),
        _ => None,
    })
}

fn single_currency<'a>(mut it: impl Iterator<Item = &'a Currency>) -> Result<Currency, CreateError> {
    let first = it.next().cloned().ok_or(CreateError::MixedCurrency)?;
    if it.all(|c| *c == first) {
        Ok(first)
    } else {
        Err(CreateError::MixedCurrency)
    }
}

/// The order a reservation stands for: its lines, prices and currency as the reservation
/// recorded them (never the SKUs' metadata as it is now: a replay after a price or currency
/// change writes the order the freeze priced). Deterministic, so a concurrent replay that writes
/// it writes the same item.
fn order_of(id: &OrderId, user: &UserId, r: &Reservation) -> Result<Order, CreateError> {
    let currency = single_currency(r.lines.iter().map(|l| &l.currency))?;
    let mut amount: u64 = 0;
    for l in &r.lines {
        amount = amount.checked_add(Money::line_total(l.unit_price, l.units_charged())?).ok_or(MoneyError::Overflow)?;
    }
    Ok(Order {
        id: id.clone(),
        user: user.clone(),
        status: OrderStatus::PendingPayment,
        lines: r
            .lines
            .iter()
            .map(|l| OrderLine {
                sku: l.sku.clone(),
                quantity: l.quantity,
                unit_price: l.unit_price,
                dates: l.dates.clone(),
                campaign: l.campaign.as_ref().map(|c| c.campaign_id.clone()),
            })
            .collect(),
        amount,
        currency,
        pay_expire_at: r.expires_at,
        created_at_ms: r.created_at_ms,
        updated_at_ms: r.created_at_ms,
        version: 1,
        payment_id: None,
        payments: Vec::new(),
        request_hash: r.request_hash.clone(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: Vec::new(),
        attempts: Vec::new(),
        review: None,
        correlation: crate::telemetry::correlation(),
        settled_at_ms: None,
        details: OrderDetails::default(),
        log: OrderLog::default(),
    })
}

/// Puts the order (∥ its payment-timeout message). If the put fails for a reason other than
/// "exists", the id is voided and the stock released at once.
async fn write_order(app: &App, order: Order) -> Result<(Order, bool), CreateError> {
    // `cfg!` makes the crash branch (and its point name) vanish from builds without faults: a
    // captured `false` inside `join!` is not folded away on its own.
    let crash_before_timeout = cfg!(feature = "faults") && crate::fault!(app.faults, faults::AFTER_ORDER_PUT);
    let (timeout, wait) = if order.status == OrderStatus::AwaitingSupplier {
        // polled until its supplier decides; the payment timeout is sent at confirmation
        super::supplier::first_poll(&order)
    } else {
        let wait = (order.pay_expire_at - clock::now_s()).clamp(0, MAX_DELAY_SECONDS) as u32;
        (Message::PaymentTimeout { schema: 1, order_id: order.id.to_string(), due_at: order.pay_expire_at }, wait)
    };
    let send = async {
        if crash_before_timeout {
            return Ok(());
        }
        app.messages.send(&timeout, wait).await
    };
    let (put, sent) = tokio::join!(app.orders.put_new(&order), send);
    match put {
        Ok(true) => {
            if cfg!(feature = "faults") && crash_before_timeout {
                return Err(InjectedCrash(faults::AFTER_ORDER_PUT).into());
            }
            if let Err(e) = sent {
                // Reconcile expires it at deadline + grace if no timeout message arrives.
                tracing::warn!(order_id = %order.id, error = format!("{e:#}"), "payment-timeout message not sent");
            }
            tracing::info!(order_id = %order.id, "order created");
            Ok((order, false))
        }
        Ok(false) => match app.orders.get(&order.id).await? {
            Some(OrderRecord::Order(o)) if o.request_hash == order.request_hash => Ok((*o, true)),
            Some(OrderRecord::Order(_)) => Err(CreateError::KeyReused),
            _ => Err(CreateError::ReservationExpired),
        },
        Err(e) => {
            tracing::error!(order_id = %order.id, error = format!("{e:#}"), "order put failed; voiding and releasing");
            match app.orders.put_void(&order.id).await {
                Ok(true) => {
                    let _ = stock::release(app, &ReservationId::for_order(&order.id)).await;
                    Err(CreateError::Aborted(e))
                }
                // The VOID lost to an order: the put we saw fail was applied and only its
                // response was lost (protocol review #2). Answer it as the replay it is.
                Ok(false) => match app.orders.get(&order.id).await? {
                    Some(OrderRecord::Order(o)) if o.request_hash == order.request_hash => Ok((*o, true)),
                    Some(OrderRecord::Order(_)) => Err(CreateError::KeyReused),
                    _ => Err(CreateError::ReservationExpired),
                },
                // Neither written nor voided: nothing is known to be lost yet, so the client
                // retries with the same key (a retry replays the freeze and puts the order).
                Err(void_err) => {
                    tracing::error!(order_id = %order.id, error = format!("{void_err:#}"), "VOID put failed too");
                    Err(CreateError::Store(e))
                }
            }
        }
    }
}

/// PENDING_PAYMENT (or PAYING) → CANCELLED (compare-and-set). The stock is released by the
/// event flow. A PAYING order's payment is cancelled at its provider first; if the provider
/// answers that it already succeeded, the order is paid instead and the cancel refused.
pub async fn cancel(app: &App, user: &UserId, id: &OrderId) -> Result<Order, OrderError> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = get_owned(app, user, id).await?;
        let mut next = o.apply(OrderAction::Cancel, &By::buyer("buyer_cancel"), clock::now_ms())?;
        if let Some(a) =
            o.current_attempt().filter(|a| o.status == OrderStatus::Paying && a.state == AttemptState::Open)
        {
            match super::paying::cancel_at_provider(app, &o, a).await? {
                super::paying::Cancelled::Cancelled => {}
                super::paying::Cancelled::NotCancellable => return Err(OrderError::PaymentProcessing),
                // paid (or changed) meanwhile: decide again on what is stored now
                _ => continue,
            }
            if let Some(a) = next.attempts.last_mut() {
                a.state = AttemptState::Cancelled;
            }
        }
        let next = Order { cancel_reason: Some("cancelled by user".into()), ..next };
        if app.orders.replace(&o, &next).await? {
            tracing::info!(order_id = %id, "order cancelled");
            return Ok(next);
        }
        // A put that was applied but lost its response fails its condition on the SDK's retry
        // (protocol review #10): if what is stored now is exactly our write, the cancel won.
        if let Ok(Some(OrderRecord::Order(now))) = app.orders.get(id).await {
            if now.status == OrderStatus::Cancelled
                && now.version == next.version
                && now.updated_at_ms == next.updated_at_ms
            {
                return Ok(*now);
            }
        }
        super::backoff(attempt).await;
    }
    Err(OrderError::Store(anyhow::anyhow!("order {id} kept changing under the cancel; retry")))
}

/// CAS PENDING_PAYMENT → EXPIRED; `false` if the order moved first (caller re-reads). A PAYING
/// order is never expired here: [`super::paying::at_deadline`] asks its provider first.
pub async fn expire(app: &App, o: &Order) -> anyhow::Result<bool> {
    let next = o.apply(OrderAction::Expire, &By::system(app.function.as_str(), "payment_deadline"), clock::now_ms())?;
    let won = app.orders.replace(o, &next).await?;
    if won {
        app.count(names::ORDERS_EXPIRED, 1);
        tracing::info!(order_id = %o.id, "order expired");
    }
    Ok(won)
}

#[cfg(test)]
mod tests;
