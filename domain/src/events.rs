//! Domain events announced by the order table's stream (the outbox, docs/architecture.md, "Events and self-healing").

use super::order::{Order, OrderStatus};
use serde::{Deserialize, Serialize};

/// The event source on the bus.
pub const SOURCE: &str = "holdfast.orders";
/// The only schema version consumers accept; anything else is rejected to the DLQ.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    OrderCreated,
    OrderPaid,
    OrderCancelled,
    OrderExpired,
    RefundRequested,
    OversellDetected,
    OrderShipped,
    OrderCompleted,
    OrderRefunding,
    OrderRefunded,
    OrderReturnRequested,
    OrderReturned,
    /// A SUPPLIER order failed (a booking refused, or no confirmation in time): notify the buyer;
    /// its lock is released and its bookings cancelled (docs/suppliers.md).
    OrderFailed,
    /// A SUPPLIER order closed unpaid (cancelled, expired, failed), or paid and then refunded
    /// before service (its lock restocks, [`Order::restocks`]): its bookings are to be cancelled
    /// at the supplier, by the refunds (compensation) consumer.
    SupplierCancelRequested,
}

pub const ALL_KINDS: [EventKind; 14] = [
    EventKind::OrderCreated,
    EventKind::OrderPaid,
    EventKind::OrderCancelled,
    EventKind::OrderExpired,
    EventKind::RefundRequested,
    EventKind::OversellDetected,
    EventKind::OrderShipped,
    EventKind::OrderCompleted,
    EventKind::OrderRefunding,
    EventKind::OrderRefunded,
    EventKind::OrderReturnRequested,
    EventKind::OrderReturned,
    EventKind::OrderFailed,
    EventKind::SupplierCancelRequested,
];

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::OrderCreated => "OrderCreated",
            EventKind::OrderPaid => "OrderPaid",
            EventKind::OrderCancelled => "OrderCancelled",
            EventKind::OrderExpired => "OrderExpired",
            EventKind::RefundRequested => "RefundRequested",
            EventKind::OversellDetected => "OversellDetected",
            EventKind::OrderShipped => "OrderShipped",
            EventKind::OrderCompleted => "OrderCompleted",
            EventKind::OrderRefunding => "OrderRefunding",
            EventKind::OrderRefunded => "OrderRefunded",
            EventKind::OrderReturnRequested => "OrderReturnRequested",
            EventKind::OrderReturned => "OrderReturned",
            EventKind::OrderFailed => "OrderFailed",
            EventKind::SupplierCancelRequested => "SupplierCancelRequested",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ALL_KINDS.into_iter().find(|k| k.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLine {
    pub sku: String,
    pub quantity: u32,
}

/// The `detail` of every Holdfast event. Unknown fields are refused: a consumer never applies
/// a message it does not fully understand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventDetail {
    pub schema: u32,
    pub order_id: String,
    pub user_id: String,
    pub status: String,
    pub version: u64,
    pub amount: u64,
    pub currency: String,
    pub lines: Vec<EventLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    /// `RefundRequested`: the refund record on the order this announces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_id: Option<String>,
    /// `OrderReturned`: whether the goods go back on sale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restock: Option<bool>,
    /// The order's correlation id (docs/operations.md, "Correlation id").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderEvent {
    pub kind: EventKind,
    pub detail: EventDetail,
}

impl OrderEvent {
    pub fn of(kind: EventKind, order: &Order, payment_id: Option<String>) -> Self {
        OrderEvent {
            kind,
            detail: EventDetail {
                schema: SCHEMA_VERSION,
                order_id: order.id.to_string(),
                user_id: order.user.to_string(),
                status: order.status.as_str().to_owned(),
                version: order.version,
                amount: order.amount,
                currency: order.currency.to_string(),
                lines: order.lines.iter().map(|l| EventLine { sku: l.sku.to_string(), quantity: l.quantity }).collect(),
                payment_id,
                refund_id: None,
                restock: order.return_info.as_ref().and_then(|r| r.restock),
                correlation_id: order.correlation.clone(),
            },
        }
    }
}

pub use super::order::releases_bookings;

/// The events one change of an order item announces. `old`/`new` are the stream images
/// (absent for inserts/deletes). A status change announces the new status; each new refund
/// request announces `RefundRequested` once (the stream carries each write once per record).
pub fn events_for_change(old: Option<&Order>, new: Option<&Order>) -> Vec<OrderEvent> {
    let Some(new) = new else { return Vec::new() };
    let mut out = Vec::new();
    let old_status = old.map(|o| o.status);
    if old_status != Some(new.status) {
        let kind = match new.status {
            OrderStatus::PendingPayment | OrderStatus::AwaitingSupplier if old.is_none() => {
                Some(EventKind::OrderCreated)
            }
            OrderStatus::Failed => Some(EventKind::OrderFailed),
            OrderStatus::Paid => Some(EventKind::OrderPaid),
            OrderStatus::Cancelled => Some(EventKind::OrderCancelled),
            OrderStatus::Expired => Some(EventKind::OrderExpired),
            OrderStatus::Shipped => Some(EventKind::OrderShipped),
            OrderStatus::Completed => Some(EventKind::OrderCompleted),
            OrderStatus::Refunding => Some(EventKind::OrderRefunding),
            OrderStatus::Refunded => Some(EventKind::OrderRefunded),
            OrderStatus::ReturnRequested => Some(EventKind::OrderReturnRequested),
            OrderStatus::Returned => Some(EventKind::OrderReturned),
            // a supplier order becoming payable, or still waiting; a payment started or failed;
            // a refund waiting for review (its stock stays sold): nothing moves
            OrderStatus::PendingPayment
            | OrderStatus::AwaitingSupplier
            | OrderStatus::Paying
            | OrderStatus::RefundRequested => None,
        };
        if let Some(kind) = kind {
            out.push(OrderEvent::of(kind, new, new.payment_id.clone()));
        }
    }
    // A SUPPLIER order that just closed unpaid, or was just refunded (its lock restocks), holds
    // bookings to cancel: announced once, when it enters that state (REFUNDING → REFUNDED, or
    // the compensation's own writes, announce nothing more).
    if !new.supplier.is_empty()
        && releases_bookings(new)
        && !old.is_some_and(releases_bookings)
        && !crate::mutant!("p2-4-refund-keeps-booking")
    {
        out.push(OrderEvent::of(EventKind::SupplierCancelRequested, new, None));
    }
    // Each refund record is announced once, when it first appears.
    let known: Vec<&str> = old.map(|o| o.refunds.iter().map(|r| r.refund_id.as_str()).collect()).unwrap_or_default();
    for r in new.refunds.iter().filter(|r| !known.contains(&r.refund_id.as_str())) {
        let mut e = OrderEvent::of(EventKind::RefundRequested, new, Some(r.payment_id.clone()));
        e.detail.refund_id = Some(r.refund_id.clone());
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::{OrderAction, OrderLine, PaymentOutcome, PaymentRecord};
    use crate::refund::{RefundReason, RefundRecord, RefundStatus};
    use crate::{Currency, OrderId, Sku, UserId};

    fn order() -> Order {
        Order {
            id: OrderId::parse("o1").unwrap(),
            user: UserId::parse("u").unwrap(),
            status: OrderStatus::PendingPayment,
            lines: vec![OrderLine {
                campaign: None,
                sku: Sku::parse("s").unwrap(),
                quantity: 2,
                unit_price: 5,
                dates: Vec::new(),
            }],
            amount: 10,
            currency: Currency::parse("EUR").unwrap(),
            pay_expire_at: 100,
            created_at_ms: 1,
            updated_at_ms: 1,
            version: 1,
            payment_id: None,
            payments: vec![],
            request_hash: "h".into(),
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

    fn kinds(v: Vec<OrderEvent>) -> Vec<EventKind> {
        v.into_iter().map(|e| e.kind).collect()
    }

    #[test]
    fn status_changes_become_events() {
        let o = order();
        assert_eq!(kinds(events_for_change(None, Some(&o))), vec![EventKind::OrderCreated]);
        for (action, kind) in [
            (OrderAction::Pay, EventKind::OrderPaid),
            (OrderAction::Cancel, EventKind::OrderCancelled),
            (OrderAction::Expire, EventKind::OrderExpired),
        ] {
            let n = o.apply(action, &crate::order::By::system("test", "test"), 2).unwrap();
            let ev = events_for_change(Some(&o), Some(&n));
            assert_eq!(kinds(ev.clone()), vec![kind]);
            assert_eq!(ev[0].detail.version, 2);
            assert_eq!(ev[0].detail.lines, vec![EventLine { sku: "s".into(), quantity: 2 }]);
        }
    }

    #[test]
    fn unchanged_status_and_deletes_announce_nothing() {
        let o = order();
        assert!(events_for_change(Some(&o), Some(&o)).is_empty());
        assert!(events_for_change(Some(&o), None).is_empty());
    }

    #[test]
    fn a_supplier_order_announces_failure_and_its_bookings_to_cancel_once() {
        use crate::supplier::{BookingStatus, SupplierBooking, SupplierConfig};
        let booking = SupplierBooking {
            sku: Sku::parse("s").unwrap(),
            quantity: 2,
            booking_id: Some("b1".into()),
            status: BookingStatus::Pending,
            config: SupplierConfig::simulated(),
            cancel_started_ms: None,
            issues_codes: false,
            codes: None,
        };
        let waiting = Order { status: OrderStatus::AwaitingSupplier, supplier: vec![booking], ..order() };
        assert_eq!(kinds(events_for_change(None, Some(&waiting))), vec![EventKind::OrderCreated]);
        let payable =
            waiting.apply(OrderAction::SupplierConfirm, &crate::order::By::system("test", "test"), 2).unwrap();
        assert!(events_for_change(Some(&waiting), Some(&payable)).is_empty(), "nothing moves yet");
        let failed = waiting.apply(OrderAction::SupplierFail, &crate::order::By::system("test", "test"), 2).unwrap();
        assert_eq!(
            kinds(events_for_change(Some(&waiting), Some(&failed))),
            vec![EventKind::OrderFailed, EventKind::SupplierCancelRequested]
        );
        let expired = payable.apply(OrderAction::Expire, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(
            kinds(events_for_change(Some(&payable), Some(&expired))),
            vec![EventKind::OrderExpired, EventKind::SupplierCancelRequested]
        );
        // the compensation's own writes on the closed order announce nothing more
        let later = expired.next(4, |o| o.supplier[0].status = BookingStatus::Cancelled);
        assert!(events_for_change(Some(&expired), Some(&later)).is_empty());
        // an order without bookings closes as it always did
        let plain = order().apply(OrderAction::Cancel, &crate::order::By::system("test", "test"), 2).unwrap();
        assert_eq!(kinds(events_for_change(Some(&order()), Some(&plain))), vec![EventKind::OrderCancelled]);
    }

    #[test]
    fn a_paid_supplier_order_refunded_or_returned_to_stock_announces_its_bookings_to_cancel_once() {
        use crate::order::ReturnInfo;
        use crate::supplier::{BookingStatus, SupplierBooking, SupplierConfig};
        let booking = SupplierBooking {
            sku: Sku::parse("s").unwrap(),
            quantity: 2,
            booking_id: Some("b1".into()),
            status: BookingStatus::Confirmed,
            config: SupplierConfig::simulated(),
            cancel_started_ms: None,
            issues_codes: false,
            codes: None,
        };
        let paid = Order { supplier: vec![booking], ..order() }
            .apply(OrderAction::Pay, &crate::order::By::system("test", "test"), 2)
            .unwrap();
        let refunding = paid.apply(OrderAction::StartRefund, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(
            kinds(events_for_change(Some(&paid), Some(&refunding))),
            vec![EventKind::OrderRefunding, EventKind::SupplierCancelRequested]
        );
        // the refund's confirmation, and the compensation's writes, announce no second cancel
        let refunded =
            refunding.apply(OrderAction::FinishRefund, &crate::order::By::system("test", "test"), 4).unwrap();
        assert_eq!(kinds(events_for_change(Some(&refunding), Some(&refunded))), vec![EventKind::OrderRefunded]);
        let cancelled = refunded.next(5, |o| o.supplier[0].status = BookingStatus::Cancelled);
        assert!(events_for_change(Some(&refunded), Some(&cancelled)).is_empty());
        // shipped: the booking is what was bought; returned with restock gives it back, once
        let shipped = paid.apply(OrderAction::Ship, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(kinds(events_for_change(Some(&paid), Some(&shipped))), vec![EventKind::OrderShipped]);
        let asked = shipped
            .apply(OrderAction::RequestReturn, &crate::order::By::system("test", "test"), 4)
            .unwrap()
            .next(4, |o| {
                o.return_info = Some(ReturnInfo {
                    reason: "r".into(),
                    requested_at_ms: 4,
                    restock: None,
                    received_at_ms: None,
                    received_by: None,
                })
            });
        assert_eq!(kinds(events_for_change(Some(&shipped), Some(&asked))), vec![EventKind::OrderReturnRequested]);
        let received = |restock: bool| {
            asked.apply(OrderAction::ReceiveReturn, &crate::order::By::system("test", "test"), 5).unwrap().next(
                5,
                |o| {
                    if let Some(r) = o.return_info.as_mut() {
                        r.restock = Some(restock);
                    }
                },
            )
        };
        assert_eq!(
            kinds(events_for_change(Some(&asked), Some(&received(true)))),
            vec![EventKind::OrderReturned, EventKind::SupplierCancelRequested]
        );
        assert_eq!(kinds(events_for_change(Some(&asked), Some(&received(false)))), vec![EventKind::OrderReturned]);
        // an order without bookings is refunded as it always was
        let plain = order().apply(OrderAction::Pay, &crate::order::By::system("test", "test"), 2).unwrap();
        let plain_refunding =
            plain.apply(OrderAction::StartRefund, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(kinds(events_for_change(Some(&plain), Some(&plain_refunding))), vec![EventKind::OrderRefunding]);
    }

    #[test]
    fn each_refund_request_is_announced_once() {
        let o = order().apply(OrderAction::Expire, &crate::order::By::system("test", "test"), 2).unwrap();
        let rec = |id: &str| {
            let p = PaymentRecord {
                payment_id: id.into(),
                provider: Default::default(),
                succeeded: true,
                amount: 10,
                currency: "EUR".into(),
                outcome: PaymentOutcome::RefundRequested,
                at_ms: 3,
            };
            RefundRecord::requested(&p, 10, RefundReason::PaymentNotApplied, 3)
        };
        let a = o.next(3, |o| o.refunds.push(rec("p1")));
        assert_eq!(kinds(events_for_change(Some(&o), Some(&a))), vec![EventKind::RefundRequested]);
        let b = a.next(4, |o| o.refunds.push(rec("p2")));
        let ev = events_for_change(Some(&a), Some(&b));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].detail.payment_id.as_deref(), Some("p2"));
        assert_eq!(ev[0].detail.refund_id.as_deref(), Some("rf_p2"));
        // issuing or confirming it later announces nothing new
        let c = b.next(5, |o| o.refunds[1].status = RefundStatus::Issued);
        assert!(events_for_change(Some(&b), Some(&c)).is_empty());
    }

    #[test]
    fn after_sale_transitions_are_announced() {
        let paid = order().apply(OrderAction::Pay, &crate::order::By::system("test", "test"), 2).unwrap();
        let shipped = paid.apply(OrderAction::Ship, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(kinds(events_for_change(Some(&paid), Some(&shipped))), vec![EventKind::OrderShipped]);
        let refunding = paid.apply(OrderAction::StartRefund, &crate::order::By::system("test", "test"), 3).unwrap();
        assert_eq!(kinds(events_for_change(Some(&paid), Some(&refunding))), vec![EventKind::OrderRefunding]);
        let asked = shipped.apply(OrderAction::RequestReturn, &crate::order::By::system("test", "test"), 4).unwrap();
        let returned = asked.apply(OrderAction::ReceiveReturn, &crate::order::By::system("test", "test"), 5).unwrap();
        assert_eq!(kinds(events_for_change(Some(&asked), Some(&returned))), vec![EventKind::OrderReturned]);
    }

    #[test]
    fn details_with_unknown_fields_are_refused() {
        let ok = serde_json::to_value(OrderEvent::of(EventKind::OrderPaid, &order(), None).detail).unwrap();
        assert!(serde_json::from_value::<EventDetail>(ok.clone()).is_ok());
        let mut bad = ok;
        bad["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<EventDetail>(bad).is_err());
    }
}
