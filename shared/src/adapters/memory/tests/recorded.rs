//! Backorder checkouts during a store outage (docs/inventory-models.md, "Accepted during a store
//! outage"): recorded, answered without an order, written once the store answers; nothing else
//! is recorded, and the recording is never a second order.

use super::*;
use crate::domain::model::InventoryModel;
use crate::domain::model::Oversell;
use crate::domain::reservation::BackorderLine;
use crate::ports::Message;
use crate::service::orders::recorded::{self, RecordedOutcome};

fn backorder(s: &str, shards: u16) -> SkuMeta {
    SkuMeta { model: InventoryModel { oversell: Oversell::Backorder, ..Default::default() }, ..meta(s, shards, None) }
}

/// The recorded checkouts sent so far: (user, key, attempt, delay).
fn recordings(w: &MemoryWorld) -> Vec<(Message, u32)> {
    w.messages.sent().into_iter().filter(|(m, _)| matches!(m, Message::RecordedCheckout { .. })).collect()
}

/// The consumer, on one recorded checkout message.
async fn consume(app: &App, m: &Message) -> RecordedOutcome {
    let Message::RecordedCheckout { user, key, lines, details, recorded_at, attempt, .. } = m else {
        panic!("not a recorded checkout: {m:?}")
    };
    recorded::complete(app, user, key, lines, details, *recorded_at, *attempt).await.unwrap()
}

#[tokio::test]
async fn a_backorder_checkout_the_store_cannot_take_is_recorded_and_written_once_it_answers() {
    let (app, w) = world(&[(backorder("B", 2), &[1, 1]), (meta("Q", 1, None), &[5])]);
    w.stock.set_outage(&[sku("B"), sku("Q")]);
    let r = match checkout(&app, "alice", "k1", &[("B", 3)]).await {
        Err(CreateError::Recorded(r)) => r,
        other => panic!("expected a recording, got {other:?}"),
    };
    let id = OrderId::derive(&user("alice"), &IdempotencyKey::parse("k1").unwrap());
    assert_eq!((r.order_id.clone(), r.amount), (id.clone(), 1500));
    let sent = recordings(&w);
    assert_eq!(sent.len(), 1);
    assert!(matches!(&sent[0], (Message::RecordedCheckout { attempt: 1, .. }, 0)), "{sent:?}");
    assert!(w.orders.get(&id).await.unwrap().is_none(), "no order yet");
    assert_eq!(totals(&w, "B"), counts(2, 0, 0), "nothing held");

    // only checkouts whose every line may be sold short are recorded
    for (key, l) in [("k2", vec![("Q", 1)]), ("k3", vec![("B", 1), ("Q", 1)])] {
        match checkout(&app, "alice", key, &l).await {
            Err(CreateError::Freeze(FreezeError::Store(_))) => {}
            other => panic!("{l:?}: expected the outage's error, got {other:?}"),
        }
    }
    assert_eq!(recordings(&w).len(), 1, "nothing else recorded");

    // the consumer while the store is still out: recorded again, later
    assert_eq!(consume(&app, &sent[0].0).await, RecordedOutcome::Again(2));
    let again = recordings(&w);
    assert!(matches!(&again[1], (Message::RecordedCheckout { attempt: 2, .. }, 2)), "{again:?}");
    assert!(w.orders.get(&id).await.unwrap().is_none());

    // the store answers: the order is written, the units that exist held, the rest backordered
    w.stock.set_outage(&[]);
    assert_eq!(consume(&app, &again[1].0).await, RecordedOutcome::Written { replayed: false });
    let o = order(&w, &id).await;
    assert_eq!((o.status, o.amount), (OrderStatus::PendingPayment, 1500));
    let lock = w.stock.get_reservation(&ReservationId::for_order(&id)).await.unwrap().unwrap();
    assert_eq!(lock.lines[0].backorder, Some(BackorderLine { short: 1, filled: 0 }));
    assert_eq!(totals(&w, "B"), counts(0, 2, 0));
    assert_invariants(&w);

    // a second delivery, and the buyer's retry, are the same order
    assert_eq!(consume(&app, &sent[0].0).await, RecordedOutcome::Written { replayed: true });
    let (retry, replayed) = checkout(&app, "alice", "k1", &[("B", 3)]).await.unwrap();
    assert!(replayed);
    assert_eq!(retry.id, id);
    assert_eq!(w.orders.records().len(), 1);
    assert_invariants(&w);
}

#[tokio::test]
async fn a_recorded_checkout_the_store_refuses_once_back_writes_nothing() {
    let (app, w) = world(&[(backorder("B", 1), &[4])]);
    w.stock.set_outage(&[sku("B")]);
    assert!(matches!(checkout(&app, "bob", "k", &[("B", 1)]).await, Err(CreateError::Recorded(_))));
    w.stock.set_outage(&[]);
    // the buyer used the key again with another body before the recording was written
    let (o, _) = checkout(&app, "bob", "k", &[("B", 2)]).await.unwrap();
    let sent = recordings(&w);
    assert!(matches!(consume(&app, &sent[0].0).await, RecordedOutcome::Refused(_)));
    assert_eq!(order(&w, &o.id).await.lines[0].quantity, 2, "the written order untouched");
    assert_eq!(totals(&w, "B"), counts(2, 2, 0));
    assert_invariants(&w);
}
