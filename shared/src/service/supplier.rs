//! SUPPLIER orders (docs/suppliers.md): quote at checkout, book after the order is written,
//! poll the bookings from the payment-timeout queue until they confirm (→ PENDING_PAYMENT, the
//! payment deadline starts then) or fail / time out (→ FAILED), and cancel the bookings of an
//! order that closes unpaid or is refunded before service.

use crate::clock;
use crate::context::App;
use crate::domain::events::releases_bookings;
use crate::domain::order::{By, Order, OrderAction, OrderRecord, OrderStatus};
use crate::domain::supplier::{self, BookingStatus, CancelPlan, PollDecision, SupplierBooking, SupplierConfig};
use crate::domain::{OrderId, Sku};
use crate::ports::{BookingRequest, Message, UnknownBooking, MAX_DELAY_SECONDS};
use crate::service::stock::LineRequest;
use crate::telemetry::names;
use std::collections::HashMap;

/// Why a SUPPLIER checkout is refused before anything is written.
#[derive(Debug, thiserror::Error)]
pub enum QuoteError {
    #[error("a SUPPLIER SKU ({0}) cannot share an order with stocked SKUs; order it on its own")]
    Mixed(Sku),
    #[error("{0} is a SUPPLIER SKU and takes no campaign")]
    Campaign(Sku),
    #[error("insufficient stock of {0}")]
    Short(Sku),
    #[error("a line of {0} (codes issued by its supplier) asks for at most {max} codes", max = supplier::codes::MAX_CODES_PER_LINE)]
    TooManyCodes(Sku),
    #[error("the supplier of {0} did not answer; retry")]
    Unavailable(Sku, #[source] anyhow::Error),
}

/// The settings of each SUPPLIER line (empty: not a SUPPLIER order). An order is all SUPPLIER
/// lines or none (docs/suppliers.md, "Limits").
pub fn lines_of<'a>(
    lines: &'a [LineRequest],
    metas: &'a HashMap<Sku, crate::ports::SkuMeta>,
) -> Result<Vec<(&'a LineRequest, &'a SupplierConfig)>, QuoteError> {
    let mut out = Vec::new();
    for l in lines {
        if let Some(c) = metas.get(&l.sku).and_then(|m| {
            m.supplier.as_ref().filter(|_| crate::domain::kind::Kind::of(&m.model).rules().books_supplier)
        }) {
            if l.campaign.is_some() {
                return Err(QuoteError::Campaign(l.sku.clone()));
            }
            let codes = metas
                .get(&l.sku)
                .is_some_and(|m| crate::domain::kind::Kind::of(&m.model).rules().codes_from_supplier());
            if codes && l.quantity.get() > supplier::codes::MAX_CODES_PER_LINE {
                return Err(QuoteError::TooManyCodes(l.sku.clone()));
            }
            out.push((l, c));
        }
    }
    if !out.is_empty() && out.len() != lines.len() {
        return Err(QuoteError::Mixed(out[0].0.sku.clone()));
    }
    Ok(out)
}

/// The cache key of a SKU's quote under its settings. `Debug` of the settings, not JSON: it
/// cannot fail, so no two settings ever share a key through a failed serialisation.
fn quote_key(sku: &Sku, c: &SupplierConfig) -> String {
    format!("{sku}|{c:?}")
}

/// Asks each line's supplier for a quote (cached per warm Lambda ≤ 30 s); a line above its
/// quote is `Short`.
pub async fn check_quotes(app: &App, lines: &[(&LineRequest, &SupplierConfig)]) -> Result<(), QuoteError> {
    let ttl = app.config.supplier_quote_cache_ms;
    let quotes = futures::future::join_all(lines.iter().map(|(l, c)| async move {
        let key = quote_key(&l.sku, c);
        let now = clock::now_ms();
        if let Some(a) = app.caches.quote(&key, now, ttl) {
            return Ok(a);
        }
        let req = BookingRequest { key: "", sku: &l.sku, config: c, quantity: l.quantity.get(), dates: &l.dates };
        let q = app.supplier.quote(&req).await.map_err(|e| {
            app.count(names::SUPPLIER_ERRORS, 1);
            QuoteError::Unavailable(l.sku.clone(), e)
        })?;
        app.caches.put_quote(&key, q.available, now, ttl);
        Ok(q.available)
    }))
    .await;
    for ((l, _), q) in lines.iter().zip(quotes) {
        if q?.is_some_and(|a| u64::from(l.quantity.get()) > a) {
            return Err(QuoteError::Short(l.sku.clone()));
        }
    }
    Ok(())
}

/// The bookings a new SUPPLIER order starts with: one PENDING per line, no id yet.
/// A `SUPPLIER_CODES` line's booking is marked: its codes are asked for at payment.
pub fn bookings_for(
    lines: &[(&LineRequest, &SupplierConfig)],
    metas: &HashMap<Sku, crate::ports::SkuMeta>,
) -> Vec<SupplierBooking> {
    let issues = |sku: &Sku| {
        metas.get(sku).is_some_and(|m| crate::domain::kind::Kind::of(&m.model).rules().codes_from_supplier())
    };
    lines
        .iter()
        .map(|(l, c)| SupplierBooking {
            sku: l.sku.clone(),
            quantity: l.quantity.get(),
            booking_id: None,
            status: BookingStatus::Pending,
            config: (*c).clone(),
            cancel_started_ms: None,
            issues_codes: issues(&l.sku),
            codes: None,
        })
        .collect()
}

/// The first poll of a new SUPPLIER order (sent with the order put).
pub fn first_poll(o: &Order) -> (Message, u32) {
    let started_at = o.created_at_ms / 1000;
    let msg = Message::SupplierPoll { schema: 1, order_id: o.id.to_string(), attempt: 1, started_at };
    (msg, supplier::next_poll_delay(started_at, started_at, o.pay_expire_at))
}

/// Books every booking that has no id yet (idempotent by order and SKU), without writing.
/// `true` if an id was learnt. A supplier that does not answer leaves the booking for the next
/// poll.
async fn book_missing(app: &App, o: &Order, bookings: &mut [SupplierBooking]) -> bool {
    let mut learnt = false;
    for b in bookings.iter_mut().filter(|b| b.booking_id.is_none()) {
        let key = supplier::booking_key(&o.id, &b.sku);
        let req = BookingRequest { key: &key, sku: &b.sku, config: &b.config, quantity: b.quantity, dates: &[] };
        match app.supplier.book(&req).await {
            Ok(id) => {
                b.booking_id = Some(id);
                learnt = true;
            }
            Err(e) => {
                app.count(names::SUPPLIER_ERRORS, 1);
                tracing::warn!(order_id = %o.id, sku = %b.sku, error = format!("{e:#}"), "supplier book failed; the poll retries");
            }
        }
    }
    learnt
}

/// After the order put: books its lines and records the booking ids (best effort: the poll
/// books whatever is still missing).
pub async fn book_new(app: &App, mut o: Order) -> Order {
    for attempt in 1..=3 {
        let mut bookings = o.supplier.clone();
        if !book_missing(app, &o, &mut bookings).await {
            return o;
        }
        let next = o.next(clock::now_ms(), |n| n.supplier = bookings);
        match app.orders.replace(&o, &next).await {
            Ok(true) => return next,
            Ok(false) => match app.orders.get(&o.id).await {
                // a poll (or a cancel) got there first: answer what is stored
                Ok(Some(OrderRecord::Order(now))) if now.status != OrderStatus::AwaitingSupplier => return *now,
                Ok(Some(OrderRecord::Order(now))) if now.supplier.iter().all(|b| b.booking_id.is_some()) => {
                    return *now
                }
                Ok(Some(OrderRecord::Order(now))) => o = *now,
                _ => return o,
            },
            Err(e) => {
                tracing::warn!(order_id = %o.id, error = format!("{e:#}"), "booking ids not recorded; the poll retries");
                return o;
            }
        }
        super::backoff(attempt).await;
    }
    o
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollOutcome {
    /// Every booking confirmed: the order is PENDING_PAYMENT.
    Confirmed,
    /// The order FAILED (a booking refused, or the supplier timeout passed).
    Failed(String),
    /// Still waiting: polled again in this many seconds.
    Waiting(u32),
    /// The order is not awaiting its supplier (already decided, cancelled, unknown).
    Ignored,
}

/// One poll of a SUPPLIER order (the `SupplierPoll` message, and the sweep for an order whose
/// poll was lost): books what is missing, asks each pending booking's status, and decides.
pub async fn poll(app: &App, id: &OrderId, attempt: u32, started_at: i64) -> anyhow::Result<PollOutcome> {
    app.count(names::SUPPLIER_POLLS, 1);
    for cas in 1..=super::CAS_ATTEMPTS {
        let o = match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) if o.status == OrderStatus::AwaitingSupplier => o,
            _ => return Ok(PollOutcome::Ignored),
        };
        let mut bookings = o.supplier.clone();
        let booked = book_missing(app, &o, &mut bookings).await;
        let changed = refresh_statuses(app, id, &mut bookings).await || booked;
        let now = clock::now_s();
        let deadline = o.pay_expire_at;
        let decision = supplier::decide(&bookings, now, deadline);
        let now_ms = clock::now_ms();
        match decision {
            PollDecision::Confirm => {
                if let Some(out) = confirm(app, &o, bookings, attempt).await? {
                    return Ok(out);
                }
            }
            PollDecision::Fail(reason) => {
                let Ok(next) =
                    o.apply(OrderAction::SupplierFail, &By::system(app.function.as_str(), "supplier_failed"), now_ms)
                else {
                    return Ok(PollOutcome::Ignored);
                };
                let refused = bookings.iter().any(|b| b.status == BookingStatus::Failed);
                let next = Order { supplier: bookings, cancel_reason: Some(reason.clone()), ..next };
                if app.orders.replace(&o, &next).await? {
                    app.count(if refused { names::SUPPLIER_REFUSED } else { names::SUPPLIER_TIMEOUTS }, 1);
                    tracing::warn!(order_id = %id, attempt, reason, "supplier order failed");
                    return Ok(PollOutcome::Failed(reason));
                }
            }
            PollDecision::Wait => {
                if !changed || app.orders.replace(&o, &o.next(now_ms, |n| n.supplier = bookings)).await? {
                    let delay = supplier::next_poll_delay(started_at, now, deadline);
                    let msg = Message::SupplierPoll {
                        schema: 1,
                        order_id: id.to_string(),
                        attempt: attempt.saturating_add(1),
                        started_at,
                    };
                    app.messages.send(&msg, delay).await?;
                    return Ok(PollOutcome::Waiting(delay));
                }
            }
        }
        super::backoff(cas).await;
    }
    anyhow::bail!("order {id} kept changing under the supplier poll; the message will be retried")
}

/// Asks the supplier the status of each pending booking of `bookings` and records what moved;
/// whether anything did. A booking cancelled at the supplier's end is as good as refused; one
/// the supplier does not know is booked again under the same key at the next poll.
async fn refresh_statuses(app: &App, id: &OrderId, bookings: &mut [SupplierBooking]) -> bool {
    let mut changed = false;
    for b in bookings.iter_mut().filter(|b| b.status == BookingStatus::Pending) {
        let Some(bid) = b.booking_id.clone() else { continue };
        match app.supplier.status(&bid).await {
            Ok(BookingStatus::Cancelled) => {
                b.status = BookingStatus::Failed;
                changed = true;
            }
            Ok(st) if st != b.status => {
                b.status = st;
                changed = true;
            }
            Ok(_) => {}
            Err(e) if e.downcast_ref::<UnknownBooking>().is_some() => {
                tracing::warn!(order_id = %id, booking = %bid, "supplier does not know the booking; rebooking");
                b.booking_id = None;
                changed = true;
            }
            Err(e) => {
                app.count(names::SUPPLIER_ERRORS, 1);
                tracing::warn!(order_id = %id, booking = %bid, error = format!("{e:#}"), "supplier status failed");
            }
        }
    }
    changed
}

/// Every booking confirmed: the order becomes payable, its payment deadline starting now (not
/// at the order's creation), and its timeout message is sent. `None` when the order moved under
/// the poll (compare-and-set lost: poll again).
async fn confirm(
    app: &App,
    o: &Order,
    bookings: Vec<SupplierBooking>,
    attempt: u32,
) -> anyhow::Result<Option<PollOutcome>> {
    let (now, now_ms) = (clock::now_s(), clock::now_ms());
    let by = By::system(app.function.as_str(), "supplier_confirmed");
    let Ok(next) = o.apply(OrderAction::SupplierConfirm, &by, now_ms) else {
        return Ok(Some(PollOutcome::Ignored));
    };
    let next = Order { supplier: bookings, pay_expire_at: now + app.config.payment_ttl_s, ..next };
    if !app.orders.replace(o, &next).await? {
        return Ok(None);
    }
    let wait = app.config.payment_ttl_s.clamp(0, MAX_DELAY_SECONDS) as u32;
    let msg = Message::PaymentTimeout { schema: 1, order_id: o.id.to_string(), due_at: next.pay_expire_at };
    if let Err(e) = app.messages.send(&msg, wait).await {
        // reconcile expires it at deadline + grace if no timeout message arrives
        tracing::warn!(order_id = %o.id, error = format!("{e:#}"), "payment-timeout message not sent");
    }
    app.count(names::SUPPLIER_CONFIRMED, 1);
    // the booking was requested when the order was written (docs/suppliers.md, "KPIs")
    let waited_ms = supplier::confirm_wait_ms(o.created_at_ms, now_ms);
    crate::telemetry::measure(&app.function, names::SUPPLIER_CONFIRM_MS, waited_ms, "Milliseconds");
    tracing::info!(order_id = %o.id, attempt, "supplier confirmed; order payable");
    Ok(Some(PollOutcome::Confirmed))
}

/// Cancels at the supplier every booking a SUPPLIER order may still hold once it should hold
/// nothing ([`releases_bookings`]: closed unpaid — cancelled, expired, failed — or refunded
/// before service), once each: the start is recorded on the order before the call and CANCELLED
/// after it, so a redelivered event calls nothing (docs/suppliers.md, "Compensation"). Returns
/// the cancels made.
pub async fn compensate(app: &App, id: &OrderId) -> anyhow::Result<usize> {
    for cas in 1..=super::CAS_ATTEMPTS {
        let o = match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) if releases_bookings(&o) && !o.supplier.is_empty() => o,
            _ => return Ok(0),
        };
        let now_ms = clock::now_ms();
        let due = match supplier::cancel_plan(&o.supplier, now_ms) {
            CancelPlan::Done => return Ok(0),
            CancelPlan::InFlight => anyhow::bail!("order {id}: a supplier cancel is in flight; retried later"),
            CancelPlan::Cancel(due) => due,
        };
        let started = o.next(now_ms, |n| {
            for i in &due {
                n.supplier[*i].cancel_started_ms = Some(now_ms);
            }
        });
        if !app.orders.replace(&o, &started).await? {
            super::backoff(cas).await;
            continue;
        }
        // this consumer owns the cancels now
        let mut bookings = started.supplier.clone();
        let mut learnt = book_missing(app, &started, &mut bookings).await;
        let mut cancelled = 0;
        for i in &due {
            let Some(bid) = bookings[*i].booking_id.clone() else { continue };
            match app.supplier.cancel(&bid).await {
                Ok(()) => {
                    bookings[*i].status = BookingStatus::Cancelled;
                    cancelled += 1;
                    learnt = true;
                }
                Err(e) if e.downcast_ref::<UnknownBooking>().is_some() => {
                    // nothing held under that id
                    bookings[*i].status = BookingStatus::Cancelled;
                    learnt = true;
                }
                Err(e) => {
                    app.count(names::SUPPLIER_ERRORS, 1);
                    tracing::warn!(order_id = %id, booking = %bid, error = format!("{e:#}"), "supplier cancel failed");
                }
            }
        }
        app.count(names::SUPPLIER_CANCELS, cancelled as u64);
        if learnt {
            record_learnt(app, &started, &bookings).await?;
        }
        let left = bookings.iter().filter(|b| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending));
        let left = left.count();
        if left > 0 {
            anyhow::bail!("order {id}: {left} supplier cancel(s) still to make; retried later");
        }
        return Ok(cancelled);
    }
    anyhow::bail!("order {id} kept changing under the supplier cancel; retried later")
}

/// Records on the order what compensating learnt (booking ids, CANCELLED), re-reading and
/// applying it again when another write got in first (a refund confirmed meanwhile, a payment
/// recorded), at most `CAS_ATTEMPTS` times: a cancel made and not recorded would be made again
/// by the next delivery once its lease ran out (review #12). Never calls the supplier.
async fn record_learnt(app: &App, started: &Order, learnt: &[SupplierBooking]) -> anyhow::Result<()> {
    let id = &started.id;
    let mut cur = started.clone();
    for cas in 1..=super::CAS_ATTEMPTS {
        let Some(done) = with_learnt(&cur, &started.supplier, learnt, clock::now_ms()) else { return Ok(()) };
        match app.orders.replace(&cur, &done).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            // the write may have landed with its answer lost: the re-read tells
            Err(e) => {
                tracing::warn!(order_id = %id, error = format!("{e:#}"), "supplier cancels not recorded; re-reading")
            }
        }
        super::backoff(cas).await;
        cur = match app.orders.get(id).await {
            Ok(Some(OrderRecord::Order(o))) => *o,
            Ok(_) => anyhow::bail!("order {id} vanished while its supplier cancels were recorded"),
            Err(e) => {
                tracing::warn!(order_id = %id, error = format!("{e:#}"), "order not re-read; retrying");
                continue;
            }
        };
    }
    anyhow::bail!("order {id}: supplier cancels made but not recorded (the order kept changing); retried later")
}

/// `o` with what compensating learnt about each booking (`before` → `learnt`, same lines)
/// applied over what it records now: a booking id learnt where none is recorded, CANCELLED over
/// a booking still recorded CONFIRMED or PENDING. `None` when `o` already shows all of it.
fn with_learnt(o: &Order, before: &[SupplierBooking], learnt: &[SupplierBooking], now_ms: i64) -> Option<Order> {
    let mut supplier = o.supplier.clone();
    let mut changed = false;
    for ((b, was), now) in supplier.iter_mut().zip(before).zip(learnt) {
        if b.sku != now.sku {
            continue;
        }
        if b.booking_id.is_none() && now.booking_id.is_some() {
            b.booking_id = now.booking_id.clone();
            changed = true;
        }
        let open = matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending);
        if open && now.status == BookingStatus::Cancelled && was.status != BookingStatus::Cancelled {
            b.status = BookingStatus::Cancelled;
            changed = true;
        }
    }
    changed.then(|| o.next(now_ms, |n| n.supplier = supplier))
}

#[cfg(test)]
mod tests;
