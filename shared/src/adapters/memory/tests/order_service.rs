//! The order service: checkout, payment, payment timeout, the reservation check and reconcile.

use super::*;

#[tokio::test]
async fn creating_an_order_twice_with_one_key_returns_the_same_order() {
    let (app, w) = world(&[(meta("A", 2, None), &[5, 5])]);
    let (first, replayed) = checkout(&app, "alice", "k1", &[("A", 2)]).await.unwrap();
    assert!(!replayed);
    assert_eq!((first.status, first.amount, first.version), (OrderStatus::PendingPayment, 1000, 1));
    let (again, replayed) = checkout(&app, "alice", "k1", &[("A", 2)]).await.unwrap();
    assert!(replayed);
    assert_eq!(again, first);
    assert_eq!(totals(&w, "A"), counts(8, 2, 0), "one freeze");
    assert!(matches!(checkout(&app, "alice", "k1", &[("A", 3)]).await, Err(CreateError::KeyReused)));

    let sent = w.messages.sent();
    assert!(sent.iter().any(|(m, d)| matches!(m, Message::ReservationCheck { .. }) && *d == 300));
    assert!(sent
        .iter()
        .any(|(m, d)| matches!(m, Message::PaymentTimeout { order_id, .. } if order_id == first.id.as_str())
            && *d <= 900));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_payment_marks_the_order_paid_and_the_same_payment_again_is_a_duplicate() {
    let (app, w) = world(&[(meta("A", 1, None), &[5])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("A", 1)]).await.unwrap();
    assert_eq!(payments::apply(&app, &notice(&o, "p1")).await.unwrap(), PaymentResult::Applied);
    let paid = order(&w, &o.id).await;
    assert_eq!((paid.status, paid.version, paid.payment_id.as_deref()), (OrderStatus::Paid, 2, Some("p1")));

    assert_eq!(payments::apply(&app, &notice(&o, "p1")).await.unwrap(), PaymentResult::Duplicate);
    assert_eq!(order(&w, &o.id).await, paid, "a duplicate writes nothing");
    assert_eq!(payments::apply(&app, &notice(&o, "p2")).await.unwrap(), PaymentResult::RefundRequested);
    assert_eq!(order(&w, &o.id).await.refund_requests(), 1);
}

#[tokio::test]
async fn a_payment_timeout_re_arms_before_the_deadline_and_expires_the_order_once_due() {
    let (app, w) = world(&[(meta("A", 1, None), &[5])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("A", 1)]).await.unwrap();
    let before = w.messages.sent().len();
    let TimeoutOutcome::ReArmed(wait) = timeouts::payment_timeout(&app, &o.id, o.pay_expire_at).await.unwrap() else {
        panic!()
    };
    assert!((1..=900).contains(&wait));
    assert_eq!(w.messages.sent().len(), before + 1);

    let overdue = make_overdue(&w, &o, 60).await;
    assert_eq!(timeouts::payment_timeout(&app, &o.id, overdue.pay_expire_at).await.unwrap(), TimeoutOutcome::Expired);
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Expired);
    assert_eq!(timeouts::payment_timeout(&app, &o.id, overdue.pay_expire_at).await.unwrap(), TimeoutOutcome::Ignored);

    // The OrderExpired event's consumer releases the stock.
    stock::release(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    assert_eq!(totals(&w, "A"), counts(5, 0, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_reservation_check_voids_the_id_of_an_orphan_freeze_and_releases_its_stock() {
    let mut c = config();
    c.reservation_check_delay_s = 1;
    let (app, w) = world_with(c, &[(meta("A", 1, None), &[5])]);
    // A checkout that froze and died before writing its order.
    let id = OrderId::derive(&user("alice"), &IdempotencyKey::parse("k1").unwrap());
    let req = freeze_request(id.as_str(), "alice", &[("A", 2)]);
    freeze(&app, &req).await.unwrap();
    // older than the check delay, as an orphan is when its check arrives
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;

    let now = clock::now_s();
    assert_eq!(
        checks::reservation_check(&app, &req.id, ReservationKind::Order, now + 100).await.unwrap(),
        CheckOutcome::ReArmed
    );
    assert_eq!(
        checks::reservation_check(&app, &req.id, ReservationKind::Order, now - 1).await.unwrap(),
        CheckOutcome::Released
    );
    assert_eq!(w.orders.get(&id).await.unwrap(), Some(OrderRecord::Void));
    assert_eq!(totals(&w, "A"), counts(5, 0, 0));
    assert!(
        matches!(checkout(&app, "alice", "k1", &[("A", 2)]).await, Err(CreateError::ReservationExpired)),
        "the fence holds"
    );
    assert_eq!(
        checks::reservation_check(&app, &req.id, ReservationKind::Order, now - 1).await.unwrap(),
        CheckOutcome::Fine
    );
    assert_invariants(&w);
}

#[tokio::test]
async fn a_check_from_an_earlier_attempt_re_arms_for_a_lock_younger_than_the_delay() {
    let (app, w) = world(&[(meta("A", 1, None), &[5])]);
    // Attempt A sent a check due now; attempt B froze a moment ago and has not written its
    // order yet. The check must not fence B (protocol review #3).
    let id = OrderId::derive(&user("alice"), &IdempotencyKey::parse("k1").unwrap());
    let req = freeze_request(id.as_str(), "alice", &[("A", 2)]);
    freeze(&app, &req).await.unwrap();
    let before = w.messages.sent().len();
    assert_eq!(
        checks::reservation_check(&app, &req.id, ReservationKind::Order, clock::now_s() - 1).await.unwrap(),
        CheckOutcome::ReArmed
    );
    assert_eq!(w.orders.get(&id).await.unwrap(), None, "no VOID was written");
    assert_eq!(totals(&w, "A"), counts(3, 2, 0));
    let sent = w.messages.sent();
    assert_eq!(sent.len(), before + 1);
    match &sent[before] {
        (crate::ports::Message::ReservationCheck { due_at, .. }, delay) => {
            assert!(*due_at >= clock::now_s() + 298, "{due_at}");
            assert!((298..=300).contains(delay), "{delay}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_reservation_check_leaves_the_lock_of_an_existing_order_alone() {
    let (app, w) = world(&[(meta("A", 1, None), &[5])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("A", 2)]).await.unwrap();
    let rid = ReservationId::for_order(&o.id);
    assert_eq!(
        checks::reservation_check(&app, &rid, ReservationKind::Order, clock::now_s() - 1).await.unwrap(),
        CheckOutcome::Fine
    );
    assert_eq!(totals(&w, "A"), counts(3, 2, 0));
}

#[tokio::test]
async fn reconcile_expires_an_overdue_order_and_finds_the_stock_consistent() {
    let mut c = config();
    c.stale_lock_s = 1;
    let (app, w) = world_with(c, &[(meta("A", 2, None), &[5, 5]), (meta("B", 1, None), &[3])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("A", 1), ("B", 1)]).await.unwrap();
    let (fresh, _) = checkout(&app, "bob", "k1", &[("A", 1)]).await.unwrap();
    make_overdue(&w, &o, 120).await;

    let rep = reconcile::run(&app).await.unwrap();
    assert_eq!((rep.overdue_orders, rep.orders_expired), (1, 1));
    assert_eq!((rep.skus_checked, rep.skus_inconclusive), (2, 0));
    assert!(rep.violations.is_empty(), "{:?}", rep.violations);
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Expired);
    assert_eq!(order(&w, &fresh.id).await.status, OrderStatus::PendingPayment);

    let rep = reconcile::run(&app).await.unwrap();
    assert_eq!(rep.orders_expired, 0, "a second run repairs nothing twice");
}

/// An order waiting for its payment is not in `pending-by-deadline`; when its timeout is lost,
/// the lock sweep finds it by its stale lock and decides it at its deadline, paying or not.
#[tokio::test]
async fn reconcile_decides_an_overdue_order_by_its_stale_lock_whether_or_not_its_buyer_started_paying() {
    use crate::ports::OrderIndex;
    let mut c = config();
    c.stale_lock_s = 1;
    let (app, w) = world_with(c, &[(meta("A", 1, None), &[5])]);
    let (pending, _) = checkout(&app, "alice", "k1", &[("A", 1)]).await.unwrap();
    let (paying, _) = checkout(&app, "bob", "k1", &[("A", 2)]).await.unwrap();
    crate::service::paying::start(&app, &paying.user, &paying.id, None).await.unwrap();
    for id in [&pending.id, &paying.id] {
        let o = order(&w, id).await;
        assert!(o.status.awaits_payment() && OrderIndex::Pending.value_of(&o).is_none(), "{:?}", o.status);
        make_overdue(&w, &o, 120).await;
    }
    assert_eq!(order(&w, &paying.id).await.status, OrderStatus::Paying);
    assert!(w.orders.pending_due(i64::MAX).await.unwrap().is_empty(), "neither is in pending-by-deadline");

    let rep = reconcile::run(&app).await.unwrap();
    assert_eq!((rep.stale_locks, rep.overdue_orders, rep.orders_expired), (2, 2, 2), "{rep:?}");
    for id in [&pending.id, &paying.id] {
        assert_eq!(order(&w, id).await.status, OrderStatus::Expired);
    }
    let attempt = &order(&w, &paying.id).await.attempts[0];
    assert_eq!(attempt.state, crate::domain::order::AttemptState::Cancelled, "asked and cancelled at its provider");
    assert!(rep.violations.is_empty(), "{:?}", rep.violations);
    let rep = reconcile::run(&app).await.unwrap();
    assert_eq!(rep.orders_expired, 0, "a second run repairs nothing twice");
}

#[tokio::test]
async fn reconcile_releases_a_stale_orphan_freeze() {
    let (app, w) = world(&[(meta("A", 1, None), &[10])]);
    let hour_ago = clock::now_ms() - 3_600_000;
    let r = reservation("orphan-1", "alice", hour_ago, &[("A", 2, false)]);
    assert_eq!(w.stock.put_frozen(&r, &FreezeLimits::default()).await.unwrap(), Ok(()));

    let rep = reconcile::run(&app).await.unwrap();
    assert_eq!((rep.stale_locks, rep.locks_released), (1, 1));
    assert_eq!(w.orders.get(&OrderId::parse("orphan-1").unwrap()).await.unwrap(), Some(OrderRecord::Void));
    assert_eq!(totals(&w, "A"), counts(10, 0, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn the_schedule_seeds_no_sweep_while_the_last_one_is_unfinished() {
    let (app, w) = world(&[(meta("A", 1, None), &[10])]);
    let first = reconcile::seed(&app).await.unwrap();
    let items = reconcile::seed_items(&app, clock::now_ms()).len();
    assert_eq!(first, reconcile::Seeded { items_seeded: items, backlog: 0 });
    assert_eq!(w.messages.sent().len(), items);

    w.messages.set_reconcile_backlog(37);
    let skipped = reconcile::seed(&app).await.unwrap();
    assert_eq!(skipped, reconcile::Seeded { items_seeded: 0, backlog: 37 });
    assert_eq!(w.messages.sent().len(), items, "nothing more is queued over an unfinished sweep");

    w.messages.set_reconcile_backlog(0);
    assert_eq!(reconcile::seed(&app).await.unwrap().items_seeded, items);
    assert_eq!(w.messages.sent().len(), 2 * items);
}
