//! The order port, the messages and the bus.

use super::*;
use crate::domain::order::{By, OrderLog, Provider};

fn stored_order(id: &str, buyer: &str, created_at_ms: i64) -> Order {
    Order {
        id: OrderId::parse(id).unwrap(),
        user: user(buyer),
        status: OrderStatus::PendingPayment,
        lines: vec![OrderLine { campaign: None, sku: sku("A"), quantity: 1, unit_price: 500, dates: Vec::new() }],
        amount: 500,
        currency: eur(),
        pay_expire_at: created_at_ms / 1000 + 900,
        created_at_ms,
        updated_at_ms: created_at_ms,
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

#[tokio::test]
async fn a_users_orders_are_listed_newest_first_a_page_at_a_time() {
    let w = MemoryWorld::default();
    for (id, who, at) in [("o1", "alice", 1_000), ("o2", "alice", 3_000), ("o3", "alice", 2_000), ("o4", "bob", 4_000)]
    {
        assert!(w.orders.put_new(&stored_order(id, who, at)).await.unwrap());
    }
    assert!(!w.orders.put_new(&stored_order("o1", "alice", 9_000)).await.unwrap(), "puts only if absent");
    assert!(!w.orders.put_void(&OrderId::parse("o1").unwrap()).await.unwrap());

    let ids = |v: &[Order]| v.iter().map(|o| o.id.to_string()).collect::<Vec<_>>();
    let (page, next) = w.orders.list_for_user(&user("alice"), None, 2).await.unwrap();
    assert_eq!(ids(&page), ["o2", "o3"]);
    assert_eq!(next, Some(OrderCursor { created_at_ms: 2_000, order_id: OrderId::parse("o3").unwrap() }));
    let (page, next) = w.orders.list_for_user(&user("alice"), next.as_ref(), 2).await.unwrap();
    assert_eq!((ids(&page), next), (vec!["o1".to_owned()], None));
}

#[tokio::test]
async fn an_order_is_replaced_only_from_the_version_it_was_read_at() {
    let w = MemoryWorld::default();
    let o = stored_order("o1", "alice", 1_000);
    w.orders.put_new(&o).await.unwrap();
    let by = By::provider(Provider::Generic, "payment_succeeded");
    let paid = o.apply(crate::domain::order::OrderAction::Pay, &by, 2_000).unwrap();
    assert!(w.orders.replace(&o, &paid).await.unwrap());
    assert!(!w.orders.replace(&o, &paid).await.unwrap(), "stale version");
    assert!(w.orders.pending_due(i64::MAX).await.unwrap().is_empty(), "no longer pending");
    let ghost = stored_order("o9", "alice", 1_000);
    assert!(!w.orders.replace(&ghost, &ghost).await.unwrap(), "nothing to replace");
}

#[tokio::test]
async fn a_status_change_is_stored_only_with_its_log_entry_and_the_record_is_kept() {
    use crate::domain::order::{Delivery, OrderAction, OrderDetails};
    let w = MemoryWorld::default();
    let mut o = stored_order("o1", "alice", 1_000);
    o.details = OrderDetails {
        delivery: Some(Delivery {
            name: "Ana".into(),
            phone: "+49 30 1234567".into(),
            address: vec!["Hauptstraße 5".into()],
            postcode: None,
            country: "DE".into(),
        }),
        remark: Some("ring twice".into()),
        discount: 100,
    };
    o.log = OrderLog::created(OrderStatus::PendingPayment, &By::buyer("checkout"), 1_000);
    assert!(w.orders.put_new(&o).await.unwrap());
    // a write that changes the status without its entry is an error, and writes nothing
    let silent = o.next(2_000, |x| x.status = OrderStatus::Cancelled);
    assert!(w.orders.replace(&o, &silent).await.is_err());
    // an entry without the change neither
    let mut stray = o.next(2_000, |_| {});
    stray.log.record(OrderStatus::PendingPayment, OrderStatus::Cancelled, &By::buyer("buyer_cancel"), 2_000);
    assert!(w.orders.replace(&o, &stray).await.is_err());
    let stored = |w: &MemoryWorld| match w.orders.records().pop() {
        Some((_, OrderRecord::Order(o))) => *o,
        other => panic!("{other:?}"),
    };
    assert_eq!(stored(&w), o, "nothing was written");
    let cancelled = o.apply(OrderAction::Cancel, &By::buyer("buyer_cancel"), 2_000).unwrap();
    assert!(w.orders.replace(&o, &cancelled).await.unwrap());
    let now = stored(&w);
    assert_eq!(
        (now.status, now.log.total, now.details.discount, now.pay_amount()),
        (OrderStatus::Cancelled, 2, 100, 400)
    );
    assert_eq!(now.details, o.details, "the record stays as the checkout gave it");
    assert_eq!(now.log.entries[1].actor, crate::domain::order::Actor::Buyer);
}

#[tokio::test]
async fn the_bus_rejects_as_many_events_as_it_was_told_to() {
    let w = MemoryWorld::default();
    let o = stored_order("o1", "alice", 1_000);
    let ev = crate::domain::events::OrderEvent::of(EventKind::OrderCreated, &o, None);
    w.bus.fail_next(2);
    assert_eq!(w.bus.publish(&[ev.clone(), ev.clone(), ev.clone()]).await.unwrap(), [false, false, true]);
    assert_eq!(w.bus.publish(std::slice::from_ref(&ev)).await.unwrap(), [true]);
    assert_eq!(w.bus.published().len(), 2);
}

#[tokio::test]
async fn a_processing_payment_is_not_cancellable_as_at_stripe_and_an_open_one_is() {
    use crate::ports::{PaymentProvider, PaymentRequest, PaymentState};
    let p = MemoryProvider::default();
    let req = |n: u32| PaymentRequest {
        attempt_key: format!("pay_o1_{n}"),
        order_id: OrderId::parse("o1").unwrap(),
        amount: 500,
        currency: "EUR".into(),
    };
    let debit = p.create_payment(&req(1)).await.unwrap().unwrap().payment_id;
    let card = p.create_payment(&req(2)).await.unwrap().unwrap().payment_id;
    p.settle(&debit, PaymentState::Processing);
    let after = p.cancel_payment(&debit).await.unwrap().unwrap();
    assert_eq!(after.state, PaymentState::Processing, "refused: it may still take the money");
    p.settle(&debit, PaymentState::Succeeded);
    assert_eq!(p.payment(&debit).await.unwrap().unwrap().state, PaymentState::Succeeded);
    assert_eq!(p.cancel_payment(&card).await.unwrap().unwrap().state, PaymentState::Cancelled);
}

#[test]
fn the_backstop_indexes_hold_exactly_the_orders_that_owe_something() {
    use crate::domain::refund::{RefundReason, RefundRecord, RefundStatus};
    use crate::ports::OrderIndex;
    let base = stored_order("o1", "alice", 1_000);
    assert_eq!(OrderIndex::StockToSettle.value_of(&base), None);
    // a refunded order owes a restock until the sweep finds it restocked
    let refunded = base.next(5_000, |o| o.status = OrderStatus::Refunded);
    assert_eq!(OrderIndex::StockToSettle.value_of(&refunded), Some(5_000));
    let settled = refunded.next(6_000, |o| o.settled_at_ms = Some(6_000));
    assert_eq!(OrderIndex::StockToSettle.value_of(&settled), None);
    // an ISSUED refund is asked about until confirmed
    let paid = crate::domain::order::PaymentRecord {
        payment_id: "p1".into(),
        provider: crate::domain::order::Provider::Generic,
        succeeded: true,
        amount: 500,
        currency: "EUR".into(),
        outcome: crate::domain::order::PaymentOutcome::Applied,
        at_ms: 2_000,
    };
    let mut r = RefundRecord::requested(&paid, 500, RefundReason::BuyerRequest, 3_000);
    r.status = RefundStatus::Issued;
    r.issued_at_ms = Some(4_000);
    let issued = refunded.next(7_000, |o| o.refunds.push(r.clone()));
    assert_eq!(OrderIndex::RefundsIssued.value_of(&issued), Some(4_000));
    let confirmed = issued.next(8_000, |o| o.refunds[0].status = RefundStatus::Confirmed);
    assert_eq!(OrderIndex::RefundsIssued.value_of(&confirmed), None);
    // a held refund is listed while it waits
    let held = base.next(9_000, |o| {
        o.status = OrderStatus::RefundRequested;
        o.review = Some(crate::domain::order::RefundReview {
            reason: "x".into(),
            because: "amount_above_threshold".into(),
            requested_at_ms: 9_000,
            approved: None,
            decided_by: None,
            decision_reason: None,
            decided_at_ms: None,
        });
    });
    assert_eq!(OrderIndex::ReviewsPending.value_of(&held), Some(9_000));
    assert_eq!(OrderIndex::ReviewsPending.value_of(&held.next(10_000, |o| o.status = OrderStatus::Paid)), None);
}
