//! The services over the in-memory ports: the use cases of docs/architecture.md, "Stock operations" to "Events and self-healing" end to end, and the
//! DynamoDB-shaped answers of the ports themselves.

use super::*;
use crate::app::App;
use crate::clock;
use crate::domain::allocation::Piece;
use crate::domain::events::EventKind;
use crate::domain::invariants::{check_all, ShardCounts};
use crate::domain::order::{Order, OrderLine, OrderRecord, OrderStatus};
use crate::domain::reservation::{Draw, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{Currency, IdempotencyKey, OrderId, Quantity, ReservationId, Sku, UserId};
use crate::ports::{FreezeLimits, FreezeRejection, OrderCursor, OrderStore, SkuMeta, StockStore};
use crate::service::admin::{self, AdminError, SkuSpec};
use crate::service::checks::{self, CheckOutcome};
use crate::service::orders::{self, CreateError, TimeoutOutcome};
use crate::service::payments::{self, PaymentNotice, PaymentResult};
use crate::service::reconcile;
use crate::service::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest, LockChange, LockError, OnReleased};
use std::collections::HashMap;

fn config() -> Config {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    // No warm-Lambda staleness between the steps of a test.
    c.soldout_cache_ms = 0;
    c.sku_cache_ms = 0;
    c
}

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn user(u: &str) -> UserId {
    UserId::parse(u).unwrap()
}

fn eur() -> Currency {
    Currency::parse("EUR").unwrap()
}

fn meta(s: &str, shards: u16, per_user_limit: Option<u32>) -> SkuMeta {
    SkuMeta {
        sku: sku(s),
        name: format!("{s} name"),
        price: 500,
        currency: eur(),
        shards,
        slots: shards,
        per_user_limit,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

/// An app whose SKUs are seeded with the given shards.
fn world(skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld) {
    world_with(config(), skus)
}

fn world_with(config: Config, skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld) {
    let (app, w) = memory_app("test", config).unwrap();
    for (m, shards) in skus {
        w.stock.seed(m.clone(), shards);
    }
    (app, w)
}

fn lines(l: &[(&str, u32)]) -> Vec<LineRequest> {
    l.iter().map(|(s, q)| LineRequest::plain(sku(s), Quantity::new(u64::from(*q)).unwrap())).collect()
}

fn freeze_request(order: &str, buyer: &str, l: &[(&str, u32)]) -> FreezeRequest {
    let lines = lines(l);
    FreezeRequest {
        id: ReservationId::for_order(&OrderId::parse(order).unwrap()),
        kind: ReservationKind::Order,
        user: Some(user(buyer)),
        request_hash: orders::request_hash(&lines),
        lines,
        expires_at: clock::now_s() + 900,
    }
}

async fn freeze(app: &App, req: &FreezeRequest) -> Result<Frozen, FreezeError> {
    let skus: Vec<Sku> = req.lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await?;
    stock::freeze(app, req, &metas).await
}

fn totals(w: &MemoryWorld, s: &str) -> ShardCounts {
    w.stock.shards(&sku(s)).iter().fold(ShardCounts::default(), |a, c| ShardCounts {
        available: a.available + c.available,
        locked: a.locked + c.locked,
        sold: a.sold + c.sold,
    })
}

fn counts(available: i64, locked: i64, sold: i64) -> ShardCounts {
    ShardCounts { available, locked, sold }
}

fn assert_invariants(w: &MemoryWorld) {
    let v = check_all(&w.snapshot(300));
    assert!(v.is_empty(), "invariants violated: {v:?}");
}

async fn order(w: &MemoryWorld, id: &OrderId) -> Order {
    match w.orders.get(id).await.unwrap() {
        Some(OrderRecord::Order(o)) => *o,
        other => panic!("no order {id}: {other:?}"),
    }
}

/// Moves an order's payment deadline `secs` into the past (through the port's CAS).
async fn make_overdue(w: &MemoryWorld, o: &Order, secs: i64) -> Order {
    let next = o.next(clock::now_ms(), |x| x.pay_expire_at = clock::now_s() - secs);
    assert!(w.orders.replace(o, &next).await.unwrap());
    next
}

async fn checkout(app: &App, buyer: &str, key: &str, l: &[(&str, u32)]) -> Result<(Order, bool), CreateError> {
    orders::create(app, &user(buyer), &IdempotencyKey::parse(key).unwrap(), lines(l)).await
}

fn notice(o: &Order, payment_id: &str) -> PaymentNotice {
    PaymentNotice {
        payment_id: payment_id.into(),
        provider: crate::domain::order::Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    }
}

// ---------- stock service ----------

#[tokio::test]
async fn a_freeze_locks_the_units_and_a_replay_returns_the_same_reservation() {
    let (app, w) = world(&[(meta("A", 1, None), &[10])]);
    let req = freeze_request("o1", "alice", &[("A", 3)]);
    let Ok(Frozen::Created(first)) = freeze(&app, &req).await else { panic!("not created") };
    assert_eq!(totals(&w, "A"), counts(7, 3, 0));

    let Ok(Frozen::Replayed(again)) = freeze(&app, &req).await else { panic!("not a replay") };
    assert_eq!(again, first);
    assert_eq!(totals(&w, "A"), counts(7, 3, 0), "a replay locks nothing more");

    let other_body = FreezeRequest { request_hash: "other".into(), ..req };
    assert!(matches!(freeze(&app, &other_body).await, Err(FreezeError::RequestMismatch)));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_freeze_beyond_the_stock_is_refused_and_writes_nothing() {
    let (app, w) = world(&[(meta("A", 1, None), &[10]), (meta("B", 2, None), &[1, 1])]);
    let r = freeze(&app, &freeze_request("o1", "alice", &[("A", 2), ("B", 3)])).await;
    assert!(matches!(r, Err(FreezeError::Insufficient(s)) if s == sku("B")));
    assert_eq!(totals(&w, "A"), counts(10, 0, 0), "all lines or none");
    assert_eq!(totals(&w, "B"), counts(2, 0, 0));
    assert!(w.stock.reservations().is_empty());
}

#[tokio::test]
async fn a_line_no_single_shard_can_hold_is_split_over_several() {
    let (app, w) = world(&[(meta("A", 4, None), &[2, 2, 2, 2])]);
    let Ok(Frozen::Created(r)) = freeze(&app, &freeze_request("o1", "alice", &[("A", 5)])).await else { panic!() };
    assert!(r.lines[0].pieces.len() >= 3, "{:?}", r.lines[0].pieces);
    assert_eq!(r.lines[0].pieces.iter().map(|p| p.quantity).sum::<u32>(), 5);
    assert_eq!(totals(&w, "A"), counts(3, 5, 0));
    assert!(w.stock.shards(&sku("A")).iter().all(|c| c.available >= 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_freeze_past_the_per_user_limit_is_refused() {
    let (app, w) = world(&[(meta("A", 1, Some(2)), &[10])]);
    let over = freeze(&app, &freeze_request("o0", "alice", &[("A", 3)])).await;
    assert!(matches!(over, Err(FreezeError::LimitExceeded(_))), "more than the limit in one line");

    assert!(matches!(freeze(&app, &freeze_request("o1", "alice", &[("A", 2)])).await, Ok(Frozen::Created(_))));
    assert_eq!(w.stock.user_counter(&sku("A"), &user("alice")), Some(2));
    let again = freeze(&app, &freeze_request("o2", "alice", &[("A", 1)])).await;
    assert!(matches!(again, Err(FreezeError::LimitExceeded(s)) if s == sku("A")), "the counter refuses");
    assert!(matches!(freeze(&app, &freeze_request("o3", "bob", &[("A", 1)])).await, Ok(Frozen::Created(_))));
    assert_eq!(totals(&w, "A"), counts(7, 3, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn confirm_turns_locked_units_into_sold_and_a_duplicate_changes_nothing() {
    let (app, w) = world(&[(meta("A", 1, Some(5)), &[10])]);
    let req = freeze_request("o1", "alice", &[("A", 3)]);
    freeze(&app, &req).await.unwrap();
    assert!(
        matches!(stock::confirm(&app, &req.id, OnReleased::Retake).await, Ok(LockChange::Moved(r)) if r.status == LockStatus::Sold)
    );
    assert_eq!(totals(&w, "A"), counts(7, 0, 3));
    assert!(matches!(stock::confirm(&app, &req.id, OnReleased::Retake).await, Ok(LockChange::Unchanged(_))));
    assert!(matches!(stock::release(&app, &req.id).await, Err(LockError::InvalidTransition(LockStatus::Sold))));
    assert_eq!(totals(&w, "A"), counts(7, 0, 3));
    assert_eq!(w.stock.user_counter(&sku("A"), &user("alice")), Some(3), "sold units stay charged");
}

#[tokio::test]
async fn release_puts_the_units_back_and_gives_the_per_user_counter_back() {
    let (app, w) = world(&[(meta("A", 1, Some(2)), &[10])]);
    let req = freeze_request("o1", "alice", &[("A", 2)]);
    freeze(&app, &req).await.unwrap();
    assert!(matches!(stock::release(&app, &req.id).await, Ok(LockChange::Moved(_))));
    assert_eq!(totals(&w, "A"), counts(10, 0, 0));
    assert_eq!(w.stock.user_counter(&sku("A"), &user("alice")), Some(0));
    assert!(matches!(stock::release(&app, &req.id).await, Ok(LockChange::Unchanged(_))));
    assert!(
        matches!(freeze(&app, &freeze_request("o2", "alice", &[("A", 2)])).await, Ok(Frozen::Created(_))),
        "the limit is free again"
    );
    assert_eq!(
        stock::release(&app, &ReservationId::from_stored("nope").unwrap()).await.err().map(|e| e.to_string()),
        Some("no such reservation".into())
    );
}

#[tokio::test]
async fn confirming_a_released_lock_takes_the_units_again_or_records_one_oversell() {
    let (app, w) = world(&[(meta("A", 1, None), &[5]), (meta("B", 1, None), &[2])]);
    let a = freeze_request("o1", "alice", &[("A", 2)]);
    freeze(&app, &a).await.unwrap();
    stock::release(&app, &a.id).await.unwrap();
    assert!(matches!(
        stock::confirm(&app, &a.id, OnReleased::Refuse).await,
        Err(LockError::InvalidTransition(LockStatus::Released))
    ));
    assert!(matches!(stock::confirm(&app, &a.id, OnReleased::Retake).await, Ok(LockChange::Retaken(_))));
    assert_eq!(totals(&w, "A"), counts(3, 0, 2));

    let b = freeze_request("o2", "alice", &[("B", 2)]);
    freeze(&app, &b).await.unwrap();
    stock::release(&app, &b.id).await.unwrap();
    freeze(&app, &freeze_request("o3", "bob", &[("B", 2)])).await.unwrap();
    assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
    assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
    let oversells: Vec<_> = w.bus.published().into_iter().filter(|e| e.kind == EventKind::OversellDetected).collect();
    // marked once; announced again by the second delivery of the confirm (a crash between the
    // mark and the first announcement must not lose it; the refund is idempotent)
    assert_eq!(oversells.len(), 2, "announced per delivery");
    assert!(oversells.iter().all(|e| e.detail.order_id == "o2"));
    assert!(w.stock.get_reservation(&b.id).await.unwrap().unwrap().oversold);
    assert_eq!(totals(&w, "B"), counts(0, 2, 0), "nothing was taken twice");
}

// ---------- the stock port's DynamoDB-shaped answers ----------

fn reservation(id: &str, buyer: &str, created_at_ms: i64, l: &[(&str, u32, bool)]) -> Reservation {
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: Some(user(buyer)),
        request_hash: "h".into(),
        created_at_ms,
        expires_at: clock::now_s() + 900,
        lines: l
            .iter()
            .map(|(s, q, limited)| ReservedLine {
                sku: sku(s),
                quantity: *q,
                unit_price: 500,
                currency: eur(),
                limited: *limited,
                pieces: vec![Piece { shard: 0, quantity: *q }],
                campaign: None,
                dates: Vec::new(),
                draws: Vec::new(),
                at_payment: false,
                codes: None,
            })
            .collect(),
        oversold: false,
        code_fate: None,
        pending: false,
    }
}

#[tokio::test]
async fn a_cancelled_freeze_names_a_replay_first_then_a_limit_then_short_shards() {
    let (_, w) = world(&[(meta("A", 1, Some(1)), &[5]), (meta("B", 1, None), &[0])]);
    let limits = FreezeLimits { per_sku: HashMap::from([(sku("A"), 1)]), ..FreezeLimits::default() };
    let now = clock::now_ms();
    assert_eq!(w.stock.put_frozen(&reservation("o1", "alice", now, &[("A", 1, true)]), &limits).await.unwrap(), Ok(()));

    let both = [("A", 1, true), ("B", 1, false)];
    let replay = w.stock.put_frozen(&reservation("o1", "alice", now, &both), &limits).await.unwrap();
    assert_eq!(replay, Err(FreezeRejection::AlreadyExists));
    let limit = w.stock.put_frozen(&reservation("o2", "alice", now, &both), &limits).await.unwrap();
    assert_eq!(limit, Err(FreezeRejection::LimitExceeded(sku("A"))));
    let short = w.stock.put_frozen(&reservation("o3", "alice", now, &[("B", 1, false)]), &limits).await.unwrap();
    assert_eq!(short, Err(FreezeRejection::ShardShort(vec![sku("B")])));

    assert_eq!(w.stock.user_counter(&sku("A"), &user("alice")), Some(1), "cancelled transactions write nothing");
    assert_eq!(totals(&w, "A"), counts(4, 1, 0));
    assert_eq!(w.stock.reservations().len(), 1);
}

#[tokio::test]
async fn a_transaction_touching_one_shard_twice_is_an_error_as_in_dynamodb() {
    let (_, w) = world(&[(meta("A", 1, None), &[5]), (meta("B", 1, None), &[5])]);
    // two pieces on one shard moving the same way are planned as one action
    let mut r = reservation("o1", "alice", clock::now_ms(), &[("A", 2, false)]);
    r.lines[0].pieces = vec![Piece { shard: 0, quantity: 1 }, Piece { shard: 0, quantity: 1 }];
    w.stock.put_frozen(&r, &FreezeLimits::default()).await.unwrap().unwrap();
    assert_eq!(totals(&w, "A"), counts(3, 2, 0));
    // a pay-time line drawing on the same shard moves it another way at confirm: two actions
    let mut r = reservation("o2", "alice", clock::now_ms(), &[("A", 1, false), ("B", 1, false)]);
    r.lines[1].at_payment = true;
    r.lines[1].pieces.clear();
    r.lines[1].draws =
        vec![Draw { sku: sku("A"), date: None, quantity: 1, pieces: vec![Piece { shard: 0, quantity: 1 }] }];
    w.stock.put_frozen(&r, &FreezeLimits::default()).await.unwrap().unwrap();
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
    assert!(w.stock.move_lock(&r, LockStatus::Sold).await.is_err());
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
}

// ---------- admin ----------

#[tokio::test]
async fn an_adjustment_applies_once_per_id_and_a_shard_count_change_keeps_every_unit() {
    let (app, w) = world(&[]);
    let spec = SkuSpec {
        name: "Hat".into(),
        price: 900,
        currency: eur(),
        shards: 4,
        per_user_limit: None,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    };
    let (_, created) = admin::put_sku(&app, &sku("H"), &spec, None).await.unwrap();
    assert!(created);
    assert!(admin::adjust(&app, &sku("H"), "a1", 10, "delivery", Some("admin-1"), &[]).await.unwrap());
    assert_eq!(w.stock.shards(&sku("H")).iter().map(|c| c.available).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
    assert!(!admin::adjust(&app, &sku("H"), "a1", 10, "delivery", Some("admin-1"), &[]).await.unwrap(), "a replay");
    assert!(matches!(
        admin::adjust(&app, &sku("H"), "a1", 5, "other", Some("admin-1"), &[]).await,
        Err(AdminError::AdjustmentReused)
    ));
    assert!(admin::adjust(&app, &sku("H"), "a2", -4, "damaged", Some("admin-1"), &[]).await.unwrap());
    assert!(matches!(
        admin::adjust(&app, &sku("H"), "a3", -7, "too many", Some("admin-1"), &[]).await,
        Err(AdminError::Insufficient(7))
    ));

    // the journal's cause rides on the shards the adjustment wrote, with the admin's sub
    assert_eq!(
        w.stock.cause_of("SKU#H#0"),
        Some(crate::domain::journal::Cause::adjustment("a2", Some("admin-1"), "damaged"))
    );

    let (m, created) = admin::put_sku(&app, &sku("H"), &SkuSpec { shards: 2, ..spec }, Some("admin-2")).await.unwrap();
    assert!(!created);
    let c = w.stock.cause_of("SKU#H#2").unwrap();
    assert_eq!((c.reference.as_str(), c.actor.as_str(), c.why.as_str()), ("rebalance-v4", "admin-2", "rebalance"));
    assert_eq!((m.shards, m.slots, m.stocked), (2, 4, 6));
    assert_eq!(w.stock.shards(&sku("H")).iter().map(|c| c.available).collect::<Vec<_>>(), vec![3, 3, 0, 0]);
    let v = admin::view(&app, &sku("H")).await.unwrap().unwrap();
    assert_eq!(v.totals, counts(6, 0, 0));
    assert_invariants(&w);
}

// ---------- order service ----------

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
    let TimeoutOutcome::ReArmed(wait) = orders::payment_timeout(&app, &o.id, o.pay_expire_at).await.unwrap() else {
        panic!()
    };
    assert!((1..=900).contains(&wait));
    assert_eq!(w.messages.sent().len(), before + 1);

    let overdue = make_overdue(&w, &o, 60).await;
    assert_eq!(orders::payment_timeout(&app, &o.id, overdue.pay_expire_at).await.unwrap(), TimeoutOutcome::Expired);
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Expired);
    assert_eq!(orders::payment_timeout(&app, &o.id, overdue.pay_expire_at).await.unwrap(), TimeoutOutcome::Ignored);

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

// ---------- order port, messages, bus ----------

fn stored_order(id: &str, buyer: &str, created_at_ms: i64) -> Order {
    Order {
        id: OrderId::parse(id).unwrap(),
        user: user(buyer),
        status: OrderStatus::PendingPayment,
        lines: vec![OrderLine { sku: sku("A"), quantity: 1, unit_price: 500, dates: Vec::new() }],
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

mod campaigns {
    use super::*;
    use crate::domain::campaign::{CampaignItem, CampaignSpec};
    use crate::domain::CampaignId;
    use crate::service::campaigns as camp;

    fn cid() -> CampaignId {
        CampaignId::parse("flash").unwrap()
    }

    async fn sale(app: &App, starts_in: i64, quota: i64, per_user_limit: Option<u32>) {
        let now = clock::now_s();
        let spec = CampaignSpec {
            name: "Flash".into(),
            starts_at: now + starts_in,
            ends_at: now + starts_in + 3600,
            items: vec![CampaignItem { sku: sku("A"), price: Some(300), per_user_limit, shards: 2, quota }],
        };
        camp::put(app, &cid(), &spec).await.unwrap();
    }

    fn campaign_request(order: &str, buyer: &str, q: u32) -> FreezeRequest {
        let mut r = freeze_request(order, buyer, &[("A", q)]);
        r.lines[0].campaign = Some(cid());
        r.request_hash = orders::request_hash(&r.lines);
        r
    }

    fn quota(w: &MemoryWorld) -> ShardCounts {
        let items = w.stock.campaign_counters().items;
        items[0]
            .shards
            .iter()
            .fold(counts(0, 0, 0), |a, c| counts(a.available + c.available, a.locked + c.locked, a.sold + c.sold))
    }

    #[tokio::test]
    async fn a_campaign_freeze_takes_quota_and_stock_at_the_campaign_price_and_confirm_sells_both() {
        let (app, w) = world(&[(meta("A", 2, None), &[5, 5])]);
        sale(&app, -5, 4, None).await;
        let Ok(Frozen::Created(r)) = freeze(&app, &campaign_request("o1", "alice", 3)).await else { panic!() };
        assert_eq!(r.lines[0].unit_price, 300);
        assert_eq!((totals(&w, "A"), quota(&w)), (counts(7, 3, 0), counts(1, 3, 0)));
        stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
        assert_eq!((totals(&w, "A"), quota(&w)), (counts(7, 0, 3), counts(1, 0, 3)));
        let short = freeze(&app, &campaign_request("o2", "bob", 2)).await;
        assert!(matches!(short, Err(FreezeError::QuotaExhausted(_))), "{short:?}");
        assert_eq!(totals(&w, "A"), counts(7, 0, 3), "a refused freeze takes no stock");
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn a_sale_not_open_or_paused_is_refused_by_its_write_condition_and_resumes() {
        let (app, w) = world(&[(meta("A", 1, None), &[10])]);
        sale(&app, 3600, 5, None).await;
        let early = freeze(&app, &campaign_request("o1", "alice", 1)).await;
        assert!(matches!(early, Err(FreezeError::SaleNotStarted(_))), "{early:?}");
        let spec = CampaignSpec {
            name: "Flash".into(),
            starts_at: clock::now_s() - 5,
            ends_at: clock::now_s() + 3600,
            items: vec![CampaignItem { sku: sku("A"), price: Some(300), per_user_limit: None, shards: 2, quota: 5 }],
        };
        // an update may move the window (quotas and shards stay)
        camp::put(&app, &cid(), &spec).await.unwrap();
        camp::set_paused(&app, &cid(), true).await.unwrap();
        let paused = freeze(&app, &campaign_request("o2", "alice", 1)).await;
        assert!(matches!(paused, Err(FreezeError::SalePaused(_))), "{paused:?}");
        camp::set_paused(&app, &cid(), false).await.unwrap();
        assert!(matches!(freeze(&app, &campaign_request("o3", "alice", 1)).await, Ok(Frozen::Created(_))));
        assert_eq!(quota(&w), counts(4, 1, 0));
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn the_pending_cap_refuses_the_next_checkout_until_one_is_released() {
        let mut c = config();
        c.max_pending_per_user = 2;
        let (app, w) = world_with(c, &[(meta("A", 1, None), &[10])]);
        let first = match freeze(&app, &freeze_request("o1", "hoarder", &[("A", 1)])).await {
            Ok(Frozen::Created(r)) => r,
            other => panic!("{other:?}"),
        };
        freeze(&app, &freeze_request("o2", "hoarder", &[("A", 1)])).await.unwrap();
        let third = freeze(&app, &freeze_request("o3", "hoarder", &[("A", 1)])).await;
        assert!(matches!(third, Err(FreezeError::TooManyPending)), "{third:?}");
        assert!(freeze(&app, &freeze_request("o4", "someone-else", &[("A", 1)])).await.is_ok());
        stock::release(&app, &first.id).await.unwrap();
        assert!(freeze(&app, &freeze_request("o5", "hoarder", &[("A", 1)])).await.is_ok());
        assert_invariants(&w);
    }
}

// ---------- inventory models (docs/inventory-models.md) ----------

mod models {
    use super::*;
    use crate::domain::model::{BundleChild, Day, Deduct, InventoryModel, Management, Unit};

    fn spec(model: InventoryModel, shards: u16, bundle: Vec<BundleChild>) -> SkuSpec {
        SkuSpec {
            name: "x".into(),
            price: 100,
            currency: eur(),
            shards,
            per_user_limit: None,
            model,
            bundle,
            supplier: None,
        }
    }

    fn model(management: Management, unit: Unit, deduct: Deduct) -> InventoryModel {
        InventoryModel { management, unit, deduct }
    }

    fn day(offset: i64) -> Day {
        Day::of_epoch_s(clock::now_s() + offset * 86_400)
    }

    fn dated(s: &str, q: u32, days: &[Day]) -> LineRequest {
        LineRequest { dates: days.to_vec(), ..LineRequest::plain(sku(s), Quantity::new(u64::from(q)).unwrap()) }
    }

    fn request(order: &str, lines: Vec<LineRequest>) -> FreezeRequest {
        FreezeRequest {
            id: ReservationId::for_order(&OrderId::parse(order).unwrap()),
            kind: ReservationKind::Order,
            user: Some(user("alice")),
            request_hash: orders::request_hash(&lines),
            lines,
            expires_at: clock::now_s() + 900,
        }
    }

    fn cell(s: &str, d: Day) -> Sku {
        sku(s).cell(d)
    }

    fn cell_totals(w: &MemoryWorld, c: &Sku) -> ShardCounts {
        w.stock.shards(c).iter().fold(ShardCounts::default(), |a, c| ShardCounts {
            available: a.available + c.available,
            locked: a.locked + c.locked,
            sold: a.sold + c.sold,
        })
    }

    async fn calendar_world(nights: &[(i64, i64)]) -> (App, MemoryWorld) {
        let (app, w) = world(&[]);
        let m = model(Management::Quantity, Unit::Calendar, Deduct::AtOrder);
        admin::put_sku(&app, &sku("H"), &spec(m, 2, vec![]), None).await.unwrap();
        for (offset, units) in nights {
            admin::adjust(&app, &sku("H"), &format!("n{offset}"), *units, "rooms", None, &[day(*offset)])
                .await
                .unwrap();
        }
        (app, w)
    }

    #[tokio::test]
    async fn a_calendar_booking_takes_every_night_or_none_and_names_the_short_one() {
        let (app, w) = calendar_world(&[(1, 5), (2, 1), (3, 5)]).await;
        let nights = [day(1), day(2), day(3)];
        let Ok(Frozen::Created(r)) = freeze(&app, &request("o1", vec![dated("H", 1, &nights)])).await else { panic!() };
        assert_eq!(r.lines[0].draws.len(), 3);
        assert!(r.lines[0].pieces.is_empty());
        for d in nights {
            assert_eq!(cell_totals(&w, &cell("H", d)).locked, 1);
        }
        // the middle night is gone: a second booking is refused, naming it, and holds nothing
        let refused = freeze(&app, &request("o2", vec![dated("H", 1, &nights)])).await;
        assert!(matches!(&refused, Err(FreezeError::Insufficient(c)) if *c == cell("H", day(2))), "{refused:?}");
        assert_eq!(cell_totals(&w, &cell("H", day(1))), counts(4, 1, 0));
        assert_eq!(cell_totals(&w, &cell("H", day(3))), counts(4, 1, 0));
        // a date never stocked is short, a past date or none at all is a bad line
        assert!(matches!(
            freeze(&app, &request("o3", vec![dated("H", 1, &[day(9)])])).await,
            Err(FreezeError::Insufficient(c)) if c == cell("H", day(9))
        ));
        assert!(matches!(
            freeze(&app, &request("o4", vec![dated("H", 1, &[day(-2)])])).await,
            Err(FreezeError::Line(_))
        ));
        assert!(matches!(freeze(&app, &request("o5", vec![dated("H", 1, &[])])).await, Err(FreezeError::Line(_))));
        stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
        assert_eq!(cell_totals(&w, &cell("H", day(2))), counts(0, 0, 1));
        // adjustments are idempotent per date; a calendar SKU refuses one without dates
        assert!(!admin::adjust(&app, &sku("H"), "n1", 5, "rooms", None, &[day(1)]).await.unwrap());
        assert!(matches!(
            admin::adjust(&app, &sku("H"), "z", 5, "r", None, &[]).await,
            Err(AdminError::NotAdjustable(_))
        ));
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn a_bundle_takes_its_children_in_one_transaction_and_shows_the_fewest_it_can_make() {
        let (app, w) = world(&[(meta("A", 2, None), &[3, 2]), (meta("B", 1, None), &[1])]);
        let m = model(Management::Quantity, Unit::Bundle, Deduct::AtOrder);
        let kids = vec![BundleChild { sku: sku("A"), quantity: 2 }, BundleChild { sku: sku("B"), quantity: 1 }];
        admin::put_sku(&app, &sku("X"), &spec(m, 1, kids), None).await.unwrap();
        assert_eq!(admin::view(&app, &sku("X")).await.unwrap().unwrap().available, Some(1));
        // a bundle and its own child in one order: one write per shard
        let both = request("o1", vec![LineRequest::plain(sku("A"), Quantity::new(1).unwrap()), dated("X", 1, &[])]);
        let Ok(Frozen::Created(r)) = freeze(&app, &both).await else { panic!() };
        assert_eq!(totals(&w, "A"), counts(2, 3, 0));
        assert_eq!(totals(&w, "B"), counts(0, 1, 0));
        // B is gone: another bundle is refused and A is untouched
        assert!(
            matches!(freeze(&app, &request("o2", vec![dated("X", 1, &[])])).await, Err(FreezeError::Insufficient(s)) if s == sku("B"))
        );
        assert_eq!(totals(&w, "A"), counts(2, 3, 0));
        stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
        assert_eq!((totals(&w, "A"), totals(&w, "B")), (counts(2, 0, 3), counts(0, 0, 1)));
        assert_eq!(admin::view(&app, &sku("X")).await.unwrap().unwrap().available, Some(0));
        // nested bundles, unknown children and model changes are refused
        let nested = vec![BundleChild { sku: sku("X"), quantity: 1 }];
        assert!(matches!(admin::put_sku(&app, &sku("Y"), &spec(m, 1, nested), None).await, Err(AdminError::Model(_))));
        let unknown = vec![BundleChild { sku: sku("NOPE"), quantity: 1 }];
        assert!(matches!(admin::put_sku(&app, &sku("Y"), &spec(m, 1, unknown), None).await, Err(AdminError::Model(_))));
        assert!(matches!(
            admin::put_sku(
                &app,
                &sku("A"),
                &spec(InventoryModel { unit: Unit::Calendar, ..Default::default() }, 1, vec![]),
                None
            )
            .await,
            Err(AdminError::Model(_))
        ));
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn an_unlimited_sku_takes_orders_without_counters() {
        let (app, w) = world(&[]);
        let m = model(Management::Unlimited, Unit::Single, Deduct::AtOrder);
        admin::put_sku(&app, &sku("U"), &spec(m, 1, vec![]), None).await.unwrap();
        for i in 0..50 {
            let Ok(Frozen::Created(r)) = freeze(&app, &request(&format!("o{i}"), vec![dated("U", 3, &[])])).await
            else {
                panic!()
            };
            assert!(r.lines[0].cells().is_empty());
            stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
        }
        assert!(w.stock.shards(&sku("U")).is_empty());
        assert_eq!(admin::view(&app, &sku("U")).await.unwrap().unwrap().available, None);
        assert!(matches!(
            admin::adjust(&app, &sku("U"), "a", 5, "r", None, &[]).await,
            Err(AdminError::NotAdjustable(_))
        ));
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn a_pay_time_sku_holds_nothing_until_paid_and_the_late_payer_is_oversold() {
        let (app, w) = world(&[(
            SkuMeta { model: model(Management::Quantity, Unit::Single, Deduct::AtPayment), ..meta("P", 2, None) },
            &[1, 0],
        )]);
        let a = request("o1", vec![dated("P", 1, &[])]);
        let b = request("o2", vec![dated("P", 1, &[])]);
        assert!(matches!(freeze(&app, &a).await, Ok(Frozen::Created(_))));
        assert!(matches!(freeze(&app, &b).await, Ok(Frozen::Created(_))));
        assert_eq!(totals(&w, "P"), counts(1, 0, 0), "nothing held at order");
        assert!(matches!(stock::confirm(&app, &a.id, OnReleased::Retake).await, Ok(LockChange::Moved(_))));
        assert_eq!(totals(&w, "P"), counts(0, 0, 1));
        assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
        assert!(matches!(stock::confirm(&app, &b.id, OnReleased::Retake).await, Ok(LockChange::Oversold(_))));
        assert_eq!(totals(&w, "P"), counts(0, 0, 1), "never negative");
        let stored = w.stock.get_reservation(&b.id).await.unwrap().unwrap();
        assert!(stored.oversold && stored.status == LockStatus::Released);
        // a release of an unpaid pay-time lock gives nothing back (it held nothing)
        let c = request("o3", vec![dated("P", 1, &[])]);
        freeze(&app, &c).await.unwrap();
        stock::release(&app, &c.id).await.unwrap();
        assert_eq!(totals(&w, "P"), counts(0, 0, 1));
        assert_invariants(&w);
    }

    #[tokio::test]
    async fn an_order_mixing_a_calendar_line_a_bundle_and_a_plain_sku_is_all_or_nothing() {
        let (app, w) = calendar_world(&[(1, 2)]).await;
        w.stock.seed(meta("A", 1, None), &[4]);
        w.stock.seed(meta("B", 1, None), &[0]);
        let m = model(Management::Quantity, Unit::Bundle, Deduct::AtOrder);
        admin::put_sku(&app, &sku("X"), &spec(m, 1, vec![BundleChild { sku: sku("B"), quantity: 1 }]), None)
            .await
            .unwrap();
        let mixed = request("o1", vec![dated("A", 1, &[]), dated("H", 1, &[day(1)]), dated("X", 1, &[])]);
        assert!(matches!(freeze(&app, &mixed).await, Err(FreezeError::Insufficient(s)) if s == sku("B")));
        assert_eq!(totals(&w, "A"), counts(4, 0, 0));
        assert_eq!(cell_totals(&w, &cell("H", day(1))), counts(2, 0, 0));
        assert!(w.stock.reservations().is_empty());
        assert_invariants(&w);
    }
}

/// Code pools over the memory ports (docs/code-pools.md).
mod codes {
    use super::*;
    use crate::config::Secret;
    use crate::domain::codes::Keyring;
    use crate::domain::model::{InventoryModel, Management};
    use crate::service::codes as pool;

    fn app_with_pool(max_pending: u32) -> (App, MemoryWorld) {
        let mut c = config();
        c.code_key = Secret::new(Keyring::generate_secret("t1"));
        c.max_pending_per_user = max_pending;
        let (app, w) = memory_app("test", c).unwrap();
        (app, w)
    }

    async fn put_pool(app: &App, s: &str, shards: u16) {
        let spec = SkuSpec {
            name: "card".into(),
            price: 100,
            currency: eur(),
            shards,
            per_user_limit: None,
            model: InventoryModel { management: Management::CodePool, ..Default::default() },
            bundle: Vec::new(),
            supplier: None,
        };
        admin::put_sku(app, &sku(s), &spec, None).await.unwrap();
    }

    fn held(w: &MemoryWorld) -> Vec<(u16, u64)> {
        w.stock
            .reservations()
            .iter()
            .filter(|r| r.status != LockStatus::Released)
            .flat_map(|r| r.lines.iter().flat_map(|l| l.codes.clone().unwrap_or_default()))
            .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (g.shard, p)))
            .collect()
    }

    #[tokio::test]
    async fn a_pool_hands_each_code_out_once_takes_released_codes_back_and_never_sells_short() {
        let (app, w) = app_with_pool(0);
        put_pool(&app, "CARD", 2).await;
        let codes: Vec<String> = (0..5).map(|i| format!("CODE-{i}-XYZ")).collect();
        let (r, new) = pool::upload(&app, &sku("CARD"), "b1", &codes, Some("ops")).await.unwrap();
        assert!(new && r.added == 5 && r.duplicates == 0);
        let (again, new) = pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
        assert!(!new && again == r, "a replay answers the first result");
        assert!(matches!(
            pool::upload(&app, &sku("CARD"), "b1", &codes[..2], None).await,
            Err(pool::CodeError::BatchReused)
        ));
        let (d, _) = pool::upload(&app, &sku("CARD"), "b2", &[codes[0].clone(), "NEW-1".into(), "NEW-1".into()], None)
            .await
            .unwrap();
        assert_eq!((d.added, d.duplicates), (1, 2));
        // six codes: 2 + 4 freeze, a seventh is refused, nothing claimed by the refusal
        let a = freeze(&app, &freeze_request("o1", "a", &[("CARD", 2)])).await.unwrap();
        assert!(matches!(a, Frozen::Created(_)));
        freeze(&app, &freeze_request("o2", "b", &[("CARD", 4)])).await.unwrap();
        assert!(matches!(
            freeze(&app, &freeze_request("o3", "c", &[("CARD", 1)])).await,
            Err(FreezeError::Insufficient(_))
        ));
        let h = held(&w);
        assert_eq!(h.len(), 6);
        assert_eq!(h.iter().collect::<std::collections::HashSet<_>>().len(), 6, "no position twice");
        assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
        // a release puts o1's codes back at the tails; o3 then gets one of them
        stock::release(&app, &ReservationId::for_order(&OrderId::parse("o1").unwrap())).await.unwrap();
        assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
        freeze(&app, &freeze_request("o3", "c", &[("CARD", 1)])).await.unwrap();
        let s = pool::summary(&app, &sku("CARD")).await.unwrap();
        assert_eq!((s.uploaded, s.available, s.locked, s.sold), (6, 1, 5, 0));
        assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
        // codes cannot be adjusted, and the shard count is fixed
        assert!(matches!(
            admin::adjust(&app, &sku("CARD"), "a1", 5, "more", None, &[]).await,
            Err(AdminError::NotAdjustable(_))
        ));
    }

    #[tokio::test]
    async fn a_refused_freeze_gives_its_claimed_codes_back_and_reconcile_returns_a_dead_checkouts() {
        let (app, w) = app_with_pool(1);
        put_pool(&app, "CARD", 1).await;
        let codes: Vec<String> = (0..4).map(|i| format!("CODE-{i}-ABC")).collect();
        pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
        freeze(&app, &freeze_request("o1", "a", &[("CARD", 1)])).await.unwrap();
        // the buyer's pending cap refuses the second checkout after its codes were claimed
        assert!(matches!(
            freeze(&app, &freeze_request("o2", "a", &[("CARD", 2)])).await,
            Err(FreezeError::TooManyPending)
        ));
        assert!(check_all(&w.snapshot(300)).is_empty(), "given back: {:?}", check_all(&w.snapshot(300)));
        assert_eq!(w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].available(), 3);
        // a checkout that died after its claim: reconcile gives the codes back, once
        let head = w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].head;
        assert_eq!(w.stock.claim_codes(&sku("CARD"), 0, 2, head).await.unwrap(), Some(head));
        assert!(!check_all(&w.snapshot(300)).is_empty(), "claimed and unbound codes break the identity");
        let m = app.stock.get_skus(&[sku("CARD")]).await.unwrap().remove(&sku("CARD")).unwrap();
        assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 0).await.unwrap(), 2);
        assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 0).await.unwrap(), 0);
        assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
        // a young claim is left alone (its checkout may still bind it)
        let head = w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].head;
        w.stock.claim_codes(&sku("CARD"), 0, 1, head).await.unwrap();
        assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 60_000).await.unwrap(), 0);
    }
}
