//! The order port, the messages and the bus.

use super::*;

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
    let paid = o.next(2_000, |x| x.status = OrderStatus::Paid);
    assert!(w.orders.replace(&o, &paid).await.unwrap());
    assert!(!w.orders.replace(&o, &paid).await.unwrap(), "stale version");
    assert!(w.orders.pending_due(i64::MAX).await.unwrap().is_empty(), "no longer pending");
    let ghost = stored_order("o9", "alice", 1_000);
    assert!(!w.orders.replace(&ghost, &ghost).await.unwrap(), "nothing to replace");
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
