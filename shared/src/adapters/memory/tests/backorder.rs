//! Backorders (docs/inventory-models.md, "Backorders (oversell allowed)"): a short checkout of a
//! BACKORDER SKU accepted, paid, filled FIFO by restocks, cancelled without stranding anything.

use super::*;
use crate::domain::model::InventoryModel;
use crate::domain::model::Oversell;
use crate::domain::reservation::BackorderLine;
use crate::service::stock::backorders;

fn backorder(s: &str, shards: u16) -> SkuMeta {
    SkuMeta { model: InventoryModel { oversell: Oversell::Backorder, ..Default::default() }, ..meta(s, shards, None) }
}

async fn lock_of(w: &MemoryWorld, o: &Order) -> Reservation {
    w.stock.get_reservation(&ReservationId::for_order(&o.id)).await.unwrap().unwrap()
}

async fn pay(app: &App, o: &Order, payment_id: &str) {
    assert!(matches!(payments::apply(app, &notice(o, payment_id)).await, Ok(PaymentResult::Applied)));
    stock::confirm(app, &ReservationId::for_order(&o.id), OnReleased::Retake).await.unwrap();
}

async fn restock(app: &App, id: &str, delta: i64) {
    admin::adjust(app, &sku("B"), id, delta, "restock", Some("admin"), &[]).await.unwrap();
}

#[tokio::test]
async fn a_short_checkout_is_accepted_paid_and_filled_oldest_first_by_restocks() {
    let (app, w) = world(&[(backorder("B", 2), &[1, 1])]);
    let (first, _) = checkout(&app, "alice", "k1", &[("B", 5)]).await.unwrap();
    assert_eq!(totals(&w, "B"), counts(0, 2, 0), "the units that exist are frozen");
    assert_eq!(lock_of(&w, &first).await.lines[0].backorder, Some(BackorderLine { short: 3, filled: 0 }));
    let t0 = clock::now_ms();
    while clock::now_ms() == t0 {
        tokio::task::yield_now().await;
    }
    let (second, _) = checkout(&app, "bob", "k2", &[("B", 2)]).await.unwrap();
    assert_eq!(totals(&w, "B"), counts(0, 2, 0), "wholly backordered");
    let b = w.stock.read_backlog(&sku("B")).await.unwrap();
    assert_eq!((b.ordered, b.filled, b.cancelled, b.open.len()), (5, 0, 0, 2));
    assert_invariants(&w);

    pay(&app, &first, "p1").await;
    assert_eq!(order(&w, &first.id).await.status, OrderStatus::Paid);
    assert_eq!(totals(&w, "B"), counts(0, 0, 2));
    assert_invariants(&w);

    // 4 units arrive: the first order's 3 first, then 1 of the second's 2
    restock(&app, "r1", 4).await;
    assert_eq!(lock_of(&w, &first).await.lines[0].backorder, Some(BackorderLine { short: 3, filled: 3 }));
    assert_eq!(lock_of(&w, &second).await.lines[0].backorder, Some(BackorderLine { short: 2, filled: 1 }));
    assert_eq!(totals(&w, "B"), counts(0, 1, 5), "sold into the paid order, frozen into the unpaid one");
    let b = w.stock.read_backlog(&sku("B")).await.unwrap();
    assert_eq!((b.ordered, b.filled, b.waiting()), (5, 4, 1));
    assert_eq!(b.open, vec![ReservationId::for_order(&second.id)]);
    assert_invariants(&w);

    // a second pass, and the replayed adjustment, fill nothing twice
    assert_eq!(backorders::fill(&app, &sku("B")).await.unwrap().units, 0);
    restock(&app, "r1", 4).await;
    assert_eq!(totals(&w, "B"), counts(0, 1, 5));
    pay(&app, &second, "p2").await;
    restock(&app, "r2", 3).await;
    assert_eq!(totals(&w, "B"), counts(2, 0, 7));
    assert_eq!(w.stock.read_backlog(&sku("B")).await.unwrap().waiting(), 0);
    assert_invariants(&w);
}

#[tokio::test]
async fn a_cancelled_backorder_leaves_nothing_stranded_and_is_never_filled() {
    let (app, w) = world(&[(backorder("B", 1), &[2])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("B", 4)]).await.unwrap();
    restock(&app, "r1", 1).await;
    assert_eq!(lock_of(&w, &o).await.lines[0].backorder, Some(BackorderLine { short: 2, filled: 1 }));
    assert_eq!(totals(&w, "B"), counts(0, 3, 0));
    orders::cancel(&app, &user("alice"), &o.id).await.unwrap();
    stock::release(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    assert_eq!(totals(&w, "B"), counts(3, 0, 0), "the filled unit went back too");
    let b = w.stock.read_backlog(&sku("B")).await.unwrap();
    assert_eq!((b.ordered, b.filled, b.cancelled, b.waiting()), (2, 1, 1, 0));
    assert!(b.open.is_empty());
    restock(&app, "r2", 5).await;
    assert_eq!(totals(&w, "B"), counts(8, 0, 0), "a cancelled order is never filled");
    assert_invariants(&w);
}

#[tokio::test]
async fn a_refund_of_a_paid_backorder_restocks_what_was_filled_and_cancels_the_rest() {
    let (app, w) = world(&[(backorder("B", 1), &[1])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("B", 3)]).await.unwrap();
    pay(&app, &o, "p1").await;
    restock(&app, "r1", 1).await;
    assert_eq!(totals(&w, "B"), counts(0, 0, 2));
    let refund = crate::service::after_sale::Change::Refund { reason: "late".into() };
    crate::service::after_sale::apply(&app, crate::service::after_sale::Caller::Buyer(&user("alice")), &o.id, refund)
        .await
        .unwrap();
    stock::restock(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    assert_eq!(totals(&w, "B"), counts(2, 0, 0));
    let b = w.stock.read_backlog(&sku("B")).await.unwrap();
    assert_eq!((b.ordered, b.filled, b.cancelled), (2, 1, 1));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_move_from_a_copy_read_before_a_fill_is_refused() {
    let (app, w) = world(&[(backorder("B", 1), &[0])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("B", 2)]).await.unwrap();
    let stale = lock_of(&w, &o).await;
    restock(&app, "r1", 2).await;
    assert_eq!(totals(&w, "B"), counts(0, 2, 0));
    // the stale copy holds no pieces: its release would strand the filled units
    let refused = w.stock.move_lock(&stale, LockStatus::Released).await.unwrap();
    assert_eq!(refused, Err(crate::ports::MoveRejection::StatusChanged));
    orders::cancel(&app, &user("alice"), &o.id).await.unwrap();
    stock::release(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    assert_eq!(totals(&w, "B"), counts(2, 0, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_strict_sku_is_still_refused_short_and_a_backorder_line_never_shares_with_a_code_line() {
    let pool = InventoryModel { management: crate::domain::model::Management::CodePool, ..Default::default() };
    let (app, w) = world(&[
        (backorder("B", 1), &[0]),
        (meta("A", 1, None), &[1]),
        (SkuMeta { model: pool, ..meta("C", 1, None) }, &[0]),
    ]);
    assert!(checkout(&app, "alice", "k1", &[("A", 2)]).await.is_err());
    assert!(checkout(&app, "alice", "k2", &[("B", 1), ("C", 1)]).await.is_err());
    assert!(w.stock.reservations().is_empty(), "nothing written");
    // a plain line shares an order with a backorder line
    checkout(&app, "alice", "k3", &[("B", 2), ("A", 1)]).await.unwrap();
    assert_eq!((totals(&w, "A"), totals(&w, "B")), (counts(0, 1, 0), counts(0, 0, 0)));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_paid_order_is_not_shipped_while_units_of_it_wait_and_ships_once_they_are_filled() {
    use crate::service::after_sale::{self, Caller, Change};
    use crate::service::orders::{OrderError, StockRefusal};
    let ship = || Change::Ship { carrier: "DHL".into(), tracking_number: "T1".into() };
    let (app, w) = world(&[(backorder("B", 1), &[1])]);
    let (o, _) = checkout(&app, "alice", "k1", &[("B", 3)]).await.unwrap();
    pay(&app, &o, "p1").await;
    let refused = after_sale::apply(&app, Caller::Admin, &o.id, ship()).await;
    assert!(matches!(refused, Err(OrderError::Refused(StockRefusal::Backordered(2)))), "{refused:?}");
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Paid, "nothing written");
    restock(&app, "r1", 1).await;
    let refused = after_sale::apply(&app, Caller::Admin, &o.id, ship()).await;
    assert!(matches!(refused, Err(OrderError::Refused(StockRefusal::Backordered(1)))), "{refused:?}");
    restock(&app, "r2", 1).await;
    let shipped = after_sale::apply(&app, Caller::Admin, &o.id, ship()).await.unwrap();
    assert_eq!(shipped.status, OrderStatus::Shipped);
    assert_eq!(totals(&w, "B"), counts(0, 0, 3));
    assert_invariants(&w);
}
