//! The order after PAID (docs/after-sale.md, "Lifecycle"): ship, confirm receipt or
//! auto-complete, refund before shipping, return after shipping, and the admin's cancel of a
//! pending order. Each is one compare-and-set through the transition table of
//! `domain::order`; the stream announces it on the bus, where stock-events restocks and the
//! refunds function issues refunds. Nothing here touches stock or a provider, except the
//! shipment of an order held until shipment, which takes its held units first.

use super::lookup::{OrderError, StockRefusal};
use crate::clock;
use crate::context::App;
use crate::domain::kind::{held_until_shipment, BuyerRefund, Kind};
use crate::domain::order::{By, Order, OrderAction, OrderRecord, OrderStatus, RefundReview, ReturnInfo, Shipment};
use crate::domain::refund::RefundReason;
use crate::domain::reservation::{CodeFate, LockStatus};
use crate::domain::{OrderId, ReservationId, UserId};
use crate::telemetry::names;

/// Who asks: the buyer (must own the order) or an admin (any order).
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    Buyer(&'a UserId),
    Admin,
}

/// A requested change, decided purely from the order as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Ship { carrier: String, tracking_number: String },
    ConfirmReceipt,
    AutoComplete,
    Refund { reason: String },
    RequestReturn { reason: String },
    ReceiveReturn { restock: bool },
    AdminCancel { reason: String },
}

impl Change {
    /// The cause code of the order log entry this change writes (docs/order-record.md).
    pub fn cause(&self) -> &'static str {
        match self {
            Change::Ship { .. } => "shipped",
            Change::ConfirmReceipt => "receipt_confirmed",
            Change::AutoComplete => "auto_completed",
            Change::Refund { .. } => "refund_requested",
            Change::RequestReturn { .. } => "return_requested",
            Change::ReceiveReturn { .. } => "return_received",
            Change::AdminCancel { .. } => "admin_cancel",
        }
    }

    /// Who makes it: the buyer, the admin by `sub`, or (an admin-side change nobody signed, the
    /// automatic completion) the function that runs it.
    pub fn by(&self, caller: Caller<'_>, admin: Option<&str>, function: &str) -> By {
        match (caller, admin) {
            (Caller::Buyer(_), _) => By::buyer(self.cause()),
            (Caller::Admin, Some(sub)) => By::admin(sub, self.cause()),
            (Caller::Admin, None) => By::system(function, self.cause()),
        }
    }

    pub fn action(&self) -> OrderAction {
        match self {
            Change::Ship { .. } => OrderAction::Ship,
            Change::ConfirmReceipt | Change::AutoComplete => OrderAction::Complete,
            Change::Refund { .. } => OrderAction::StartRefund,
            Change::RequestReturn { .. } => OrderAction::RequestReturn,
            Change::ReceiveReturn { .. } => OrderAction::ReceiveReturn,
            Change::AdminCancel { .. } => OrderAction::Cancel,
        }
    }
}

/// The order after `change` made `by` someone, or why not. Pure. `auto_complete_after_s` dates a
/// shipment's automatic completion.
pub fn decide(
    o: &Order,
    change: &Change,
    now_ms: i64,
    auto_complete_after_s: i64,
    by: &By,
) -> Result<Order, OrderError> {
    if let Change::AutoComplete = change {
        let due = o.shipment.as_ref().is_some_and(|s| now_ms / 1000 >= s.auto_complete_at);
        if !due {
            return Err(OrderError::Invalid(crate::domain::order::InvalidTransition {
                from: o.status,
                action: OrderAction::Complete,
            }));
        }
    }
    if let Change::Ship { .. } = change {
        // the stock-lost mark is the oversold refund, written in the same compare-and-set that
        // asked for the money back (service/refunds.rs, `request_for_oversell`)
        if o.refunds.iter().any(|r| r.reason == RefundReason::Oversold) && !crate::mutant!("p2-3-ship-lost-stock") {
            return Err(StockRefusal::StockLost.into());
        }
    }
    let mut next = o.apply(change.action(), by, now_ms)?;
    match change {
        Change::Ship { carrier, tracking_number } => {
            next.shipment = Some(Shipment {
                carrier: carrier.clone(),
                tracking_number: tracking_number.clone(),
                shipped_at_ms: now_ms,
                auto_complete_at: now_ms / 1000 + auto_complete_after_s,
                shipped_by: None,
            });
        }
        Change::Refund { reason } => {
            next.cancel_reason = Some(reason.clone());
            if let Some(with) = super::refunds::with_refund_requested(&next, RefundReason::BuyerRequest, now_ms) {
                next = Order { version: next.version, ..with };
            }
            // the payment may have been refunded already (an oversell): then it is done now
            super::refunds::finish_if_refunded(&mut next, now_ms);
        }
        Change::RequestReturn { reason } => {
            next.return_info = Some(ReturnInfo {
                reason: reason.clone(),
                requested_at_ms: now_ms,
                restock: None,
                received_at_ms: None,
                received_by: None,
            });
        }
        Change::ReceiveReturn { restock } => {
            if let Some(r) = next.return_info.as_mut() {
                r.restock = Some(*restock);
                r.received_at_ms = Some(now_ms);
            }
            if let Some(with) = super::refunds::with_refund_requested(&next, RefundReason::Return, now_ms) {
                next = Order { version: next.version, ..with };
            }
        }
        Change::AdminCancel { reason } => next.cancel_reason = Some(format!("cancelled by admin: {reason}")),
        Change::ConfirmReceipt | Change::AutoComplete => {}
    }
    Ok(next)
}

/// Applies `change` to the order with compare-and-set, re-reading on a lost race. A repeat of
/// a change that already happened (same target status) answers the order as it is.
pub async fn apply(app: &App, caller: Caller<'_>, id: &OrderId, change: Change) -> Result<Order, OrderError> {
    apply_as(app, caller, id, change, None).await
}

/// [`apply`], recording the admin who made the change (`actor`, the JWT `sub`) on what it wrote:
/// the shipment, the received return, the cancel reason (security review L7).
pub async fn apply_as(
    app: &App,
    caller: Caller<'_>,
    id: &OrderId,
    change: Change,
    actor: Option<&str>,
) -> Result<Order, OrderError> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = match (app.orders.get(id).await?, caller) {
            (Some(OrderRecord::Order(o)), Caller::Buyer(u)) if &o.user == u => *o,
            (Some(OrderRecord::Order(o)), Caller::Admin) => *o,
            _ => return Err(OrderError::NotFound),
        };
        // a held refund is decided by an admin, never by asking again
        if matches!((&change, caller), (Change::Refund { .. }, Caller::Buyer(_)))
            && o.status == OrderStatus::RefundRequested
        {
            return Ok(o);
        }
        let now = clock::now_ms();
        let by = change.by(caller, actor, &app.function);
        let next = match decide(&o, &change, now, app.config.auto_complete_after_s, &by) {
            Ok(n) => n,
            Err(OrderError::Invalid(t)) if replayed(&o, &change) => {
                tracing::debug!(order_id = %id, ?t, "after-sale change already applied");
                return Ok(o);
            }
            Err(e) => return Err(e),
        };
        // a buyer's refund the policy holds for an admin (docs/payments.md, "Refund review")
        let mut held = match (&change, caller) {
            (Change::Refund { .. }, Caller::Buyer(_)) => review_needed(app, &o),
            _ => None,
        };
        if held.is_none() {
            held = stock_allows(app, caller, &o, &change).await?;
        }
        let mut next = match (held, &change) {
            (Some(because), Change::Refund { reason }) => hold_for_review(&o, reason, because, now)?,
            _ => next,
        };
        // An admin's cancel of a PAYING order cancels its payment at the provider first, as the
        // buyer's does (review protocol-3 N5): the provider's page must not take money after it.
        if let (Change::AdminCancel { .. }, Some(a)) = (&change, open_paying_attempt(&o)) {
            use super::paying::{cancel_at_provider, Cancelled};
            match cancel_at_provider(app, &o, a).await? {
                Cancelled::Cancelled => {
                    if let Some(a) = next.attempts.last_mut() {
                        a.state = crate::domain::order::AttemptState::Cancelled;
                    }
                }
                Cancelled::NotCancellable => return Err(OrderError::PaymentProcessing),
                // paid (or changed) meanwhile: decide again on what is stored now
                Cancelled::Paid | Cancelled::Recorded => continue,
            }
        }
        if let (Some(by), Caller::Admin) = (actor, caller) {
            stamp_actor(&mut next, &change, by);
        }
        if app.orders.replace(&o, &next).await? {
            if next.status == OrderStatus::RefundRequested {
                app.count(names::REFUNDS_HELD_FOR_REVIEW, 1);
            }
            if let Change::AutoComplete = change {
                app.count(names::ORDERS_AUTO_COMPLETED, 1);
            }
            if next.refunds.len() > o.refunds.len() {
                app.count(names::REFUNDS_REQUESTED, 1);
            }
            tracing::info!(order_id = %id, from = o.status.as_str(), to = next.status.as_str(), "order moved");
            return Ok(next);
        }
        super::backoff(attempt).await;
    }
    Err(OrderError::Store(anyhow::anyhow!("order {id} kept changing; retry")))
}

/// Most held refunds one `GET /admin/refund-reviews` page reads from the index before it sorts
/// them: held refunds wait for people, so they are few; a backlog past this is read page by
/// page from the oldest.
pub const REVIEW_SCAN: usize = 500;

/// Buyers' refunds held for review, oldest request first, after `after` (`(requested_at_ms,
/// order id)` of the last one of the previous page), at most `limit`; the second value is the
/// cursor of the next page (`None`: no more). From the `reviews-pending` index, which may lag
/// a decision by a moment: an order no longer held when read is left out.
pub async fn held_refunds(
    app: &App,
    after: Option<(i64, OrderId)>,
    limit: usize,
) -> anyhow::Result<(Vec<Order>, Option<(i64, OrderId)>)> {
    use crate::ports::OrderIndex;
    use futures::StreamExt;
    let from = after.as_ref().map_or(0, |(t, _)| *t);
    let mut ids = app.orders.between(OrderIndex::ReviewsPending, from, i64::MAX).await?;
    ids.truncate(REVIEW_SCAN);
    let mut held: Vec<Order> =
        futures::stream::iter(ids.into_iter().map(|id| async move { app.orders.get(&id).await }))
            .buffer_unordered(8)
            .filter_map(|r| async move {
                match r {
                    Ok(Some(OrderRecord::Order(o))) => Some(Ok(*o)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                }
            })
            .collect::<Vec<anyhow::Result<Order>>>()
            .await
            .into_iter()
            .collect::<anyhow::Result<_>>()?;
    let key = |o: &Order| (o.review.as_ref().map_or(0, |r| r.requested_at_ms), o.id.clone());
    held.retain(|o| {
        crate::ports::OrderIndex::ReviewsPending.value_of(o).is_some() && after.as_ref().is_none_or(|a| key(o) > *a)
    });
    held.sort_by_key(key);
    let next = (held.len() > limit).then(|| key(&held[limit - 1]));
    held.truncate(limit);
    Ok((held, next))
}

/// The open attempt of a PAYING order: what a cancel must cancel at the provider first.
fn open_paying_attempt(o: &Order) -> Option<&crate::domain::order::PaymentAttempt> {
    o.current_attempt()
        .filter(|a| o.status == OrderStatus::Paying && a.state == crate::domain::order::AttemptState::Open)
}

/// Records the admin who made `change` on what it wrote.
fn stamp_actor(next: &mut Order, change: &Change, by: &str) {
    match change {
        Change::Ship { .. } => {
            if let Some(s) = next.shipment.as_mut() {
                s.shipped_by = Some(by.to_owned());
            }
        }
        Change::ReceiveReturn { .. } => {
            if let Some(r) = next.return_info.as_mut() {
                r.received_by = Some(by.to_owned());
            }
        }
        Change::AdminCancel { reason } => next.cancel_reason = Some(format!("cancelled by admin ({by}): {reason}")),
        _ => {}
    }
}

/// Why a buyer's refund of `o` waits for an admin, judged from the order alone: a confirmed
/// supplier booking (the supplier may charge for it), or an amount above
/// `HOLDFAST_REFUND_REVIEW_ABOVE`. Revealed codes are judged on the lock ([`stock_allows`]).
fn review_needed(app: &App, o: &Order) -> Option<&'static str> {
    if o.status != OrderStatus::Paid {
        return None;
    }
    if o.supplier.iter().any(|b| b.status == crate::domain::supplier::BookingStatus::Confirmed) {
        return Some("supplier_confirmed");
    }
    if app.config.refund_review_above.is_some_and(|limit| o.pay_amount() > limit) {
        return Some("amount_above_threshold");
    }
    None
}

/// PAID → REFUND_REQUESTED with the review record; the buyer asked, `because` is the cause.
fn hold_for_review(o: &Order, reason: &str, because: &'static str, now_ms: i64) -> Result<Order, OrderError> {
    let mut next = o.apply(OrderAction::RequestRefund, &By::buyer(because), now_ms)?;
    next.review = Some(RefundReview {
        reason: reason.to_owned(),
        because: because.to_owned(),
        requested_at_ms: now_ms,
        approved: None,
        decided_by: None,
        decision_reason: None,
        decided_at_ms: None,
    });
    Ok(next)
}

/// An admin's decision on a held refund (`POST /admin/orders/{id}/refund-decision`): approved
/// → REFUNDING (the refund is requested, a code order's codes are voided: never shown again),
/// rejected → PAID. `actor` (the admin's `sub`) is recorded on the order. A repeat of the same
/// decision answers the order as it is.
pub async fn decide_refund(
    app: &App,
    id: &OrderId,
    approve: bool,
    reason: &str,
    actor: &str,
    requested_at_ms: Option<i64>,
) -> Result<Order, OrderError> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let o = match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) => *o,
            _ => return Err(OrderError::NotFound),
        };
        let now = clock::now_ms();
        // a decision names the request it decides (review protocol-3 N8): an admin's retried
        // decision of an earlier request never decides a later one unseen
        if requested_at_ms.is_some_and(|t| o.review.as_ref().map(|r| r.requested_at_ms) != Some(t)) {
            return Err(OrderError::StaleDecision);
        }
        if o.status != OrderStatus::RefundRequested {
            if o.review.as_ref().and_then(|r| r.approved) == Some(approve) {
                return Ok(o);
            }
            let action = if approve { OrderAction::StartRefund } else { OrderAction::RejectRefund };
            return Err(crate::domain::order::InvalidTransition { from: o.status, action }.into());
        }
        let mut next = if approve {
            let change = Change::Refund { reason: o.review.as_ref().map(|r| r.reason.clone()).unwrap_or_default() };
            // an operator's refund: codes already shown are voided (withdrawn from the buyer)
            stock_allows(app, Caller::Admin, &o, &change).await?;
            decide(&o, &change, now, app.config.auto_complete_after_s, &By::admin(actor, "refund_approved"))?
        } else {
            o.apply(OrderAction::RejectRefund, &By::admin(actor, "refund_rejected"), now)?
        };
        if let Some(r) = next.review.as_mut() {
            r.approved = Some(approve);
            r.decided_by = Some(actor.to_owned());
            r.decision_reason = Some(reason.to_owned());
            r.decided_at_ms = Some(now);
        }
        if app.orders.replace(&o, &next).await? {
            if approve {
                app.count(names::REFUNDS_REQUESTED, 1);
            }
            tracing::info!(order_id = %id, actor, approve, to = next.status.as_str(), "refund review decided");
            return Ok(next);
        }
        super::backoff(attempt).await;
    }
    Err(OrderError::Store(anyhow::anyhow!("order {id} kept changing; retry")))
}

/// What the order's stock says about a change its status allows, asked of each line's kind
/// (docs/inventory-models.md, "Kinds and their lifecycle"): a shipment needs the lock SOLD
/// and not lost; a refund of a kind refunded only until it is shown (codes) records, once, that
/// the codes are withdrawn — a buyer's refund of codes already shown waits for an admin
/// (`Some("codes_revealed")`), an operator's goes ahead (the codes, already shown, are voided).
async fn stock_allows(
    app: &App,
    caller: Caller<'_>,
    o: &Order,
    change: &Change,
) -> Result<Option<&'static str>, OrderError> {
    let refund = matches!(change, Change::Refund { .. });
    let buyer_refund = refund && matches!(caller, Caller::Buyer(_));
    if !matches!(change, Change::Ship { .. }) && !refund {
        return Ok(None);
    }
    // codes issued by a supplier are kept on the order (docs/suppliers.md)
    if let Some(allow) = refund.then(|| super::codes::supplier::refund_rule(o, buyer_refund)).flatten() {
        return Ok(allow);
    }
    super::codes::supplier::ship_rule(o, matches!(change, Change::Ship { .. }))?;
    let rid = ReservationId::for_order(&o.id);
    let Some(r) = app.locks.get_reservation(&rid).await? else {
        return Err(StockRefusal::NotConfirmed.into());
    };
    if let Change::Ship { .. } = change {
        if crate::mutant!("p2-3-ship-lost-stock") {
            return Ok(None);
        }
        // nothing leaves the warehouse while units of it wait for stock
        let waiting: u32 = r.lines.iter().filter_map(|l| l.backorder).map(|b| b.open()).sum();
        if waiting > 0 && !r.oversold {
            return Err(StockRefusal::Backordered(waiting).into());
        }
        return match (r.status, r.oversold) {
            (_, true) => Err(StockRefusal::StockLost.into()),
            (LockStatus::Sold, false) => Ok(None),
            // paid and held until shipment: the shipment takes the units now, conditional on
            // the lock still FROZEN, before the order's compare-and-set records it
            (LockStatus::Frozen, false) if held_until_shipment(&r) => take_at_shipment(app, &rid).await,
            (LockStatus::Frozen, false) => Err(StockRefusal::NotConfirmed.into()),
            // released (and not marked: the confirm is about to) or restocked: nothing to ship
            (LockStatus::Released | LockStatus::Restocked, false) => Err(StockRefusal::StockLost.into()),
        };
    }
    let until_shown = r.lines.iter().any(|l| Kind::of_line(l).rules().buyer_refund == BuyerRefund::UntilRevealed);
    if !until_shown {
        return Ok(None);
    }
    // The rule is the codes' (domain::codes::lifecycle::may_refund): an operator may refund
    // codes already shown and voids them; a buyer's refund waits for one (the simulator found an
    // operator's refund that withdrew nothing, after which the buyer was shown the codes); a
    // redeemed code is never refunded. Withdrawn (now or by an earlier attempt), or a released
    // lock whose codes went back to the pool unseen: the refund may go ahead.
    use crate::domain::codes::lifecycle::{may_refund, CodeRefund, Refunder};
    let by = match buyer_refund && !crate::mutant!("p2-6-refund-after-reveal") {
        true => Refunder::Buyer,
        false => Refunder::Operator,
    };
    match may_refund(app.code_pools.settle_codes(&rid, CodeFate::Withdrawn).await?, by) {
        CodeRefund::Withdraw => Ok(None),
        CodeRefund::Review => Ok(Some("codes_revealed")),
        CodeRefund::Never => Err(StockRefusal::CodesRedeemed.into()),
        // voided once, conditional on no code redeemed meanwhile (the first of the two wins)
        CodeRefund::Void => match app.code_pools.settle_codes(&rid, CodeFate::Voided).await? {
            Some(CodeFate::Redeemed) => Err(StockRefusal::CodesRedeemed.into()),
            _ => Ok(None),
        },
    }
}

/// The shipment's take of a held lock (docs/inventory-models.md, "Deduction at shipment"); one
/// released meanwhile (a refund before shipping won) has nothing to ship.
async fn take_at_shipment(app: &App, rid: &ReservationId) -> Result<Option<&'static str>, OrderError> {
    use super::stock::{LockChange::*, LockError};
    match super::stock::take_at_shipment(app, rid).await {
        Ok(Moved(_) | Unchanged(_) | Retaken(_)) => Ok(None),
        Ok(Oversold(_)) | Err(LockError::InvalidTransition(_) | LockError::NotFound) => {
            Err(StockRefusal::StockLost.into())
        }
        Err(LockError::Store(e)) => Err(OrderError::Store(e)),
    }
}

/// Whether the order already shows `change` (a retried request whose first answer was lost).
fn replayed(o: &Order, change: &Change) -> bool {
    use crate::domain::order::OrderStatus::*;
    match change {
        Change::Ship { tracking_number, .. } => {
            o.shipment.as_ref().is_some_and(|s| &s.tracking_number == tracking_number) && o.status == Shipped
        }
        Change::ConfirmReceipt => o.status == Completed,
        Change::Refund { .. } => matches!(o.status, Refunding | Refunded | RefundRequested),
        Change::RequestReturn { .. } => o.status == ReturnRequested,
        Change::ReceiveReturn { restock } => {
            o.status == Returned && o.return_info.as_ref().and_then(|r| r.restock) == Some(*restock)
        }
        Change::AutoComplete | Change::AdminCancel { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::{OrderLine, OrderStatus, PaymentOutcome, PaymentRecord, Provider};
    use crate::domain::refund::RefundStatus;
    use crate::domain::{Currency, Sku};

    fn paid() -> Order {
        Order {
            id: OrderId::parse("o1").unwrap(),
            user: UserId::parse("u").unwrap(),
            status: OrderStatus::Paid,
            lines: vec![OrderLine {
                campaign: None,
                sku: Sku::parse("s").unwrap(),
                quantity: 1,
                unit_price: 500,
                dates: Vec::new(),
            }],
            amount: 500,
            currency: Currency::parse("EUR").unwrap(),
            pay_expire_at: 10,
            created_at_ms: 0,
            updated_at_ms: 0,
            version: 2,
            payment_id: Some("p1".into()),
            payments: vec![PaymentRecord {
                payment_id: "p1".into(),
                provider: Provider::Generic,
                succeeded: true,
                amount: 500,
                currency: "EUR".into(),
                outcome: PaymentOutcome::Applied,
                at_ms: 1,
            }],
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

    #[test]
    fn a_refund_before_shipping_asks_for_the_whole_payment_back_once() {
        let o = decide(&paid(), &Change::Refund { reason: "changed my mind".into() }, 5_000, 60, &By::buyer("test"))
            .unwrap();
        assert_eq!(o.status, OrderStatus::Refunding);
        assert_eq!(o.version, 3, "one write");
        assert_eq!(o.refunds.len(), 1);
        assert_eq!((o.refunds[0].amount, o.refunds[0].status), (500, RefundStatus::Requested));
        assert_eq!(o.refunds[0].reason, RefundReason::BuyerRequest);
        assert!(decide(&o, &Change::Refund { reason: "again".into() }, 6_000, 60, &By::buyer("test")).is_err());
        assert!(replayed(&o, &Change::Refund { reason: "again".into() }));
    }

    #[test]
    fn shipping_dates_the_auto_completion_and_only_then_is_it_due() {
        let o = decide(
            &paid(),
            &Change::Ship { carrier: "DHL".into(), tracking_number: "T1".into() },
            10_000,
            60,
            &By::buyer("test"),
        )
        .unwrap();
        assert_eq!(o.shipment.as_ref().unwrap().auto_complete_at, 70);
        assert!(decide(&o, &Change::AutoComplete, 69_999, 60, &By::buyer("test")).is_err());
        assert_eq!(
            decide(&o, &Change::AutoComplete, 70_000, 60, &By::buyer("test")).unwrap().status,
            OrderStatus::Completed
        );
        assert!(decide(&paid(), &Change::ConfirmReceipt, 1, 60, &By::buyer("test")).is_err(), "not shipped yet");
        assert!(
            decide(&o, &Change::Refund { reason: "x".into() }, 1, 60, &By::buyer("test")).is_err(),
            "shipped: return instead"
        );
    }

    #[test]
    fn a_received_return_records_the_restock_choice_and_asks_for_the_refund() {
        let shipped = decide(
            &paid(),
            &Change::Ship { carrier: "DHL".into(), tracking_number: "T1".into() },
            1,
            60,
            &By::buyer("test"),
        )
        .unwrap();
        assert!(
            decide(&shipped, &Change::ReceiveReturn { restock: true }, 2, 60, &By::buyer("test")).is_err(),
            "not asked for"
        );
        let asked =
            decide(&shipped, &Change::RequestReturn { reason: "broken".into() }, 2, 60, &By::buyer("test")).unwrap();
        for restock in [true, false] {
            let back = decide(&asked, &Change::ReceiveReturn { restock }, 3, 60, &By::buyer("test")).unwrap();
            assert_eq!(back.status, OrderStatus::Returned);
            assert_eq!(back.restocks(), restock);
            assert_eq!(back.refunds[0].reason, RefundReason::Return);
        }
    }

    #[test]
    fn an_admin_cancels_only_a_pending_order() {
        let mut pending = paid();
        pending.status = OrderStatus::PendingPayment;
        let c = decide(&pending, &Change::AdminCancel { reason: "fraud".into() }, 1, 60, &By::buyer("test")).unwrap();
        assert_eq!(c.status, OrderStatus::Cancelled);
        assert_eq!(c.cancel_reason.as_deref(), Some("cancelled by admin: fraud"));
        assert!(decide(&paid(), &Change::AdminCancel { reason: "x".into() }, 1, 60, &By::buyer("test")).is_err());
    }
}
