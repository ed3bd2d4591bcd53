//! Orders and their state machine (docs/architecture.md, "Order state machine"). Transitions are a table; anything not in it
//! is `invalid_transition`, never a silent overwrite.

use super::model::Day;
pub use super::payment::{PaymentOutcome, PaymentRecord, Provider};
use super::{Currency, OrderId, Sku, UserId};
use serde::{Deserialize, Serialize};

pub mod codes;
mod deadline;
pub mod details;
pub mod history;

pub use details::{Delivery, OrderDetails};
pub use history::{Actor, By, LogEntry, OrderLog};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    PendingPayment,
    /// A payment was started at the provider and has not ended (docs/payments.md); like
    /// PENDING_PAYMENT its lock stays FROZEN, and at its deadline the provider is asked.
    Paying,
    Paid,
    Shipped,
    Completed,
    Cancelled,
    Expired,
    Refunding,
    Refunded,
    ReturnRequested,
    Returned,
    /// Written, its supplier bookings not all confirmed yet (docs/suppliers.md); not payable.
    AwaitingSupplier,
    /// A supplier refused or never confirmed: terminal, nothing held.
    Failed,
    /// The buyer asked for a refund an admin must decide (docs/payments.md, "Refund review");
    /// paid, its stock stays sold.
    RefundRequested,
}

pub const ALL_STATUSES: [OrderStatus; 14] = [
    OrderStatus::PendingPayment,
    OrderStatus::Paying,
    OrderStatus::Paid,
    OrderStatus::Shipped,
    OrderStatus::Completed,
    OrderStatus::Cancelled,
    OrderStatus::Expired,
    OrderStatus::Refunding,
    OrderStatus::Refunded,
    OrderStatus::ReturnRequested,
    OrderStatus::Returned,
    OrderStatus::AwaitingSupplier,
    OrderStatus::Failed,
    OrderStatus::RefundRequested,
];

impl OrderStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::PendingPayment => "PENDING_PAYMENT",
            OrderStatus::Paying => "PAYING",
            OrderStatus::Paid => "PAID",
            OrderStatus::Shipped => "SHIPPED",
            OrderStatus::Completed => "COMPLETED",
            OrderStatus::Cancelled => "CANCELLED",
            OrderStatus::Expired => "EXPIRED",
            OrderStatus::Refunding => "REFUNDING",
            OrderStatus::Refunded => "REFUNDED",
            OrderStatus::ReturnRequested => "RETURN_REQUESTED",
            OrderStatus::Returned => "RETURNED",
            OrderStatus::AwaitingSupplier => "AWAITING_SUPPLIER",
            OrderStatus::Failed => "FAILED",
            OrderStatus::RefundRequested => "REFUND_REQUESTED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ALL_STATUSES.into_iter().find(|st| st.as_str() == s)
    }

    /// Closed without a sale: its stock must be released.
    pub fn is_closed_unpaid(self) -> bool {
        matches!(self, OrderStatus::Cancelled | OrderStatus::Expired | OrderStatus::Failed)
    }

    /// Open and unpaid: its lock stays FROZEN (waiting for payment or for its supplier).
    pub fn is_open_unpaid(self) -> bool {
        matches!(self, OrderStatus::PendingPayment | OrderStatus::Paying | OrderStatus::AwaitingSupplier)
    }

    /// Waiting for its buyer's payment (PENDING_PAYMENT or PAYING): its lock is FROZEN, and it
    /// is decided at its payment deadline.
    pub fn awaits_payment(self) -> bool {
        matches!(self, OrderStatus::PendingPayment | OrderStatus::Paying)
    }

    /// Paid or later: its stock must be sold.
    pub fn is_paid_or_later(self) -> bool {
        matches!(
            self,
            OrderStatus::Paid
                | OrderStatus::Shipped
                | OrderStatus::Completed
                | OrderStatus::Refunding
                | OrderStatus::Refunded
                | OrderStatus::ReturnRequested
                | OrderStatus::Returned
                | OrderStatus::RefundRequested
        )
    }

    /// Whether the order's stock should end up back on sale (restocked): refunded before
    /// shipping, or returned with `restock`.
    pub fn restocks(self, restock_on_return: bool) -> bool {
        match self {
            OrderStatus::Refunding | OrderStatus::Refunded => true,
            OrderStatus::Returned => restock_on_return,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderAction {
    Pay,
    Cancel,
    Expire,
    Ship,
    Complete,
    StartRefund,
    FinishRefund,
    RequestReturn,
    ReceiveReturn,
    /// Every supplier booking confirmed.
    SupplierConfirm,
    /// A supplier booking failed, or the supplier timeout passed.
    SupplierFail,
    /// A payment started at the provider (again: a new attempt replaces the open one).
    StartPayment,
    /// The provider reports the attempt failed or cancelled: payable again.
    PaymentFailed,
    /// The buyer asks for a refund that waits for an admin's review.
    RequestRefund,
    /// The admin refuses the requested refund.
    RejectRefund,
}

pub const ALL_ACTIONS: [OrderAction; 15] = [
    OrderAction::Pay,
    OrderAction::Cancel,
    OrderAction::Expire,
    OrderAction::Ship,
    OrderAction::Complete,
    OrderAction::StartRefund,
    OrderAction::FinishRefund,
    OrderAction::RequestReturn,
    OrderAction::ReceiveReturn,
    OrderAction::SupplierConfirm,
    OrderAction::SupplierFail,
    OrderAction::StartPayment,
    OrderAction::PaymentFailed,
    OrderAction::RequestRefund,
    OrderAction::RejectRefund,
];

/// Every allowed transition: (from, action, to).
pub const TRANSITIONS: &[(OrderStatus, OrderAction, OrderStatus)] = {
    use OrderAction::*;
    use OrderStatus::*;
    &[
        (PendingPayment, Pay, Paid),
        (PendingPayment, Cancel, Cancelled),
        (PendingPayment, Expire, Expired),
        (Paid, Ship, Shipped),
        (Shipped, Complete, Completed),
        (Paid, StartRefund, Refunding),
        (Refunding, FinishRefund, Refunded),
        (Shipped, RequestReturn, ReturnRequested),
        (Completed, RequestReturn, ReturnRequested),
        (ReturnRequested, ReceiveReturn, Returned),
        (AwaitingSupplier, SupplierConfirm, PendingPayment),
        (AwaitingSupplier, SupplierFail, Failed),
        (AwaitingSupplier, Cancel, Cancelled),
        (PendingPayment, StartPayment, Paying),
        (Paying, StartPayment, Paying),
        (Paying, PaymentFailed, PendingPayment),
        (Paying, Pay, Paid),
        (Paying, Cancel, Cancelled),
        (Paying, Expire, Expired),
        (Paid, RequestRefund, RefundRequested),
        (RefundRequested, StartRefund, Refunding),
        (RefundRequested, RejectRefund, Paid),
    ]
};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {action:?} an order that is {}", from.as_str())]
pub struct InvalidTransition {
    pub from: OrderStatus,
    pub action: OrderAction,
}

/// Where `action` takes an order in status `from`.
pub fn transition(from: OrderStatus, action: OrderAction) -> Result<OrderStatus, InvalidTransition> {
    TRANSITIONS
        .iter()
        .find(|(f, a, _)| *f == from && *a == action)
        .map(|(_, _, to)| *to)
        .ok_or(InvalidTransition { from, action })
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLine {
    pub sku: Sku,
    pub quantity: u32,
    pub unit_price: u64,
    /// A calendar line's dates (each takes `quantity`; the line's price is per date).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<Day>,
    /// The campaign the line was bought in (its price, its quota, its end: docs/campaigns.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<super::CampaignId>,
}

/// Where one payment attempt stands, as Holdfast last learned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AttemptState {
    /// Created at the provider; the buyer is paying (or has not started).
    Open,
    Succeeded,
    Failed,
    /// Cancelled at the provider (a newer attempt, the buyer's cancel, the deadline).
    Cancelled,
}

impl AttemptState {
    /// Whether the attempt can still take money: open, or failed — a failed card payment can be
    /// retried on the same payment at the provider (Stripe's `requires_payment_method`), so
    /// only a cancelled or succeeded one is final.
    pub fn unsettled(self) -> bool {
        matches!(self, AttemptState::Open | AttemptState::Failed)
    }
}

/// One payment started for an order (`POST /orders/{id}/payments`, docs/payments.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentAttempt {
    /// 1, 2, …: with the order id, the provider's idempotency key (`pay_<order>_<n>`).
    pub attempt: u32,
    pub payment_id: String,
    pub provider: Provider,
    pub state: AttemptState,
    pub created_at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// A buyer's refund that waits for an admin (docs/payments.md, "Refund review").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundReview {
    pub reason: String,
    /// Why it waits: `codes_revealed`, `supplier_confirmed`, `amount_above_threshold`.
    pub because: String,
    pub requested_at_ms: i64,
    /// Set by the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: OrderId,
    pub user: UserId,
    pub status: OrderStatus,
    pub lines: Vec<OrderLine>,
    pub amount: u64,
    pub currency: Currency,
    /// Epoch seconds.
    pub pay_expire_at: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// Incremented by every write; every write is conditional on the version it read.
    pub version: u64,
    pub payment_id: Option<String>,
    pub payments: Vec<PaymentRecord>,
    pub request_hash: String,
    pub cancel_reason: Option<String>,
    /// Every refund asked for, by refund id (docs/after-sale.md, "Refunds").
    pub refunds: Vec<super::refund::RefundRecord>,
    /// Set by the ship transition.
    pub shipment: Option<Shipment>,
    /// Set when the buyer asks to return the goods; completed when the admin receives them.
    pub return_info: Option<ReturnInfo>,
    /// The supplier bookings of a SUPPLIER order, one per line (docs/suppliers.md).
    pub supplier: Vec<super::supplier::SupplierBooking>,
    /// Payments started through Holdfast, oldest first (docs/payments.md).
    pub attempts: Vec<PaymentAttempt>,
    /// The buyer's refund request waiting for (or decided by) an admin.
    pub review: Option<RefundReview>,
    /// The correlation id of the request that created it (`X-Request-Id` or `traceparent`),
    /// carried through stream, bus and queues into every log line about the order.
    pub correlation: Option<String>,
    /// When the reconcile sweep found the stock of a restocking order back on sale (its lock
    /// RESTOCKED or RELEASED): from then on the order leaves the `stock-to-settle` index
    /// (docs/runbook.md, "Reconcile"). `None` for every other order.
    pub settled_at_ms: Option<i64>,
    /// Delivery, remark and discount (docs/order-record.md): personal data, redacted in `Debug`.
    pub details: OrderDetails,
    /// Every status change, appended by [`Order::apply`] in the write that makes it.
    pub log: OrderLog,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shipment {
    pub carrier: String,
    pub tracking_number: String,
    pub shipped_at_ms: i64,
    /// Epoch seconds at which a shipment the buyer never confirms is completed.
    pub auto_complete_at: i64,
    /// The admin (`sub`) who shipped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shipped_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReturnInfo {
    pub reason: String,
    pub requested_at_ms: i64,
    /// `Some` once received: whether the goods went back on sale (else written off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restock: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at_ms: Option<i64>,
    /// The admin (`sub`) who received the goods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_by: Option<String>,
}

impl Order {
    /// The order after `action` made `by` someone for a reason, or `invalid_transition`. Bumps
    /// the version and appends the change to the order's log (docs/order-record.md): the entry
    /// is written by the same conditional put as the status.
    pub fn apply(&self, action: OrderAction, by: &By, now_ms: i64) -> Result<Order, InvalidTransition> {
        let status = transition(self.status, action)?;
        Ok(self.next(now_ms, |o| {
            o.log.record(o.status, status, by, now_ms);
            o.status = status;
        }))
    }

    /// What payment charges: the amount less the discount (docs/order-record.md).
    pub fn pay_amount(&self) -> u64 {
        self.amount.saturating_sub(self.details.discount)
    }

    /// A copy with `change` applied and the version bumped.
    pub fn next(&self, now_ms: i64, change: impl FnOnce(&mut Order)) -> Order {
        let mut o = self.clone();
        change(&mut o);
        o.version = self.version + 1;
        o.updated_at_ms = now_ms;
        o
    }

    pub fn payment(&self, payment_id: &str, succeeded: bool) -> Option<&PaymentRecord> {
        self.payments.iter().find(|p| p.payment_id == payment_id && p.succeeded == succeeded)
    }

    pub fn refund_requests(&self) -> usize {
        self.payments.iter().filter(|p| p.outcome == PaymentOutcome::RefundRequested).count()
    }

    /// The payment that paid this order.
    pub fn applied_payment(&self) -> Option<&PaymentRecord> {
        self.payments.iter().find(|p| p.outcome == PaymentOutcome::Applied)
    }

    /// The newest payment attempt, if one was started.
    pub fn current_attempt(&self) -> Option<&PaymentAttempt> {
        self.attempts.last()
    }

    pub fn refund(&self, refund_id: &str) -> Option<&super::refund::RefundRecord> {
        self.refunds.iter().find(|r| r.refund_id == refund_id)
    }

    /// Whether the lock should be RESTOCKED at quiescence.
    pub fn restocks(&self) -> bool {
        self.status.restocks(self.return_info.as_ref().and_then(|r| r.restock).unwrap_or(false))
    }

    /// Whether a move of this order's stock or bookings may still be owed: a restocking order
    /// the sweep has not yet found restocked, or an order that should hold nothing at its
    /// supplier still holding a booking (docs/runbook.md, "Reconcile": the stock-to-settle arm).
    pub fn stock_to_settle(&self) -> bool {
        use crate::supplier::BookingStatus;
        let held = self.supplier.iter().any(|b| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending));
        (self.restocks() && self.settled_at_ms.is_none()) || (held && releases_bookings(self))
    }
}

/// A record under an order id: a real order or the VOID tombstone the reservation checker writes
/// to fence out a late create-order (docs/architecture.md, "Orphan check"). A VOID is never shown to users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderRecord {
    Order(Box<Order>),
    Void,
}

/// Whether a SUPPLIER order should hold nothing at its supplier: it closed unpaid (cancelled,
/// expired, failed), or it was paid and its stock goes back on sale (refunded before service, or
/// returned with `restock`; [`Order::restocks`]). A SUPPLIER order in this state has its bookings
/// cancelled (docs/suppliers.md, "Compensation").
pub fn releases_bookings(o: &Order) -> bool {
    o.status.is_closed_unpaid() || o.restocks()
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrderAction::*;
    use OrderStatus::*;

    #[test]
    fn every_allowed_transition_lands_where_the_design_says() {
        let expected = [
            (PendingPayment, Pay, Paid),
            (PendingPayment, Cancel, Cancelled),
            (PendingPayment, Expire, Expired),
            (Paid, Ship, Shipped),
            (Shipped, Complete, Completed),
            (Paid, StartRefund, Refunding),
            (Refunding, FinishRefund, Refunded),
            (Shipped, RequestReturn, ReturnRequested),
            (Completed, RequestReturn, ReturnRequested),
            (ReturnRequested, ReceiveReturn, Returned),
            (AwaitingSupplier, SupplierConfirm, PendingPayment),
            (AwaitingSupplier, SupplierFail, Failed),
            (AwaitingSupplier, Cancel, Cancelled),
            (PendingPayment, StartPayment, Paying),
            (Paying, StartPayment, Paying),
            (Paying, PaymentFailed, PendingPayment),
            (Paying, Pay, Paid),
            (Paying, Cancel, Cancelled),
            (Paying, Expire, Expired),
            (Paid, RequestRefund, RefundRequested),
            (RefundRequested, StartRefund, Refunding),
            (RefundRequested, RejectRefund, Paid),
        ];
        for (f, a, t) in expected {
            assert_eq!(transition(f, a), Ok(t), "{f:?} {a:?}");
        }
        assert_eq!(TRANSITIONS.len(), expected.len());
    }

    #[test]
    fn every_other_pair_is_an_invalid_transition() {
        let mut refused = 0;
        for from in ALL_STATUSES {
            for action in ALL_ACTIONS {
                let allowed = TRANSITIONS.iter().any(|(f, a, _)| *f == from && *a == action);
                match transition(from, action) {
                    Ok(_) => assert!(allowed),
                    Err(e) => {
                        assert!(!allowed);
                        assert_eq!(e, InvalidTransition { from, action });
                        refused += 1;
                    }
                }
            }
        }
        assert_eq!(refused, ALL_STATUSES.len() * ALL_ACTIONS.len() - TRANSITIONS.len());
    }

    #[test]
    fn closed_orders_cannot_be_paid_cancelled_or_expired_again() {
        for from in [Cancelled, Expired, Paid, Refunded, Returned, ReturnRequested] {
            for a in [Pay, Cancel, Expire] {
                assert!(transition(from, a).is_err(), "{from:?} {a:?}");
            }
        }
    }

    #[test]
    fn only_a_paid_unshipped_order_can_be_refunded_and_only_delivered_goods_returned() {
        for from in ALL_STATUSES {
            assert_eq!(transition(from, StartRefund).is_ok(), matches!(from, Paid | RefundRequested), "{from:?}");
            assert_eq!(transition(from, RequestReturn).is_ok(), matches!(from, Shipped | Completed), "{from:?}");
        }
        assert!(Refunding.restocks(false) && Refunded.restocks(false));
        assert!(Returned.restocks(true) && !Returned.restocks(false) && !Paid.restocks(true));
    }

    #[test]
    fn an_order_awaiting_its_supplier_cannot_be_paid_or_expired_and_failed_is_terminal() {
        for a in [Pay, Expire, Ship, StartRefund] {
            assert!(transition(AwaitingSupplier, a).is_err(), "{a:?}");
        }
        for a in ALL_ACTIONS {
            assert!(transition(Failed, a).is_err(), "{a:?}");
        }
        for from in ALL_STATUSES.into_iter().filter(|s| *s != AwaitingSupplier) {
            assert!(transition(from, SupplierConfirm).is_err() && transition(from, SupplierFail).is_err(), "{from:?}");
        }
        assert!(Failed.is_closed_unpaid() && !Failed.is_paid_or_later());
        assert!(AwaitingSupplier.is_open_unpaid() && !AwaitingSupplier.is_closed_unpaid());
    }

    #[test]
    fn statuses_round_trip_and_classify() {
        for s in ALL_STATUSES {
            assert_eq!(OrderStatus::parse(s.as_str()), Some(s));
            assert!(!(s.is_closed_unpaid() && s.is_paid_or_later()));
        }
        assert!(OrderStatus::parse("VOID").is_none());
    }
}
