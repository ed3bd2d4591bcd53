//! The stock service: freeze, confirm and release over the in-memory store.

use super::*;

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
