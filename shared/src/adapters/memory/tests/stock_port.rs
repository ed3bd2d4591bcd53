//! The stock port's DynamoDB-shaped answers.

use super::*;

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
    r.lines[1].draws = vec![Draw {
        fence: None,
        warehouse: None,
        sku: sku("A"),
        date: None,
        quantity: 1,
        pieces: vec![Piece { shard: 0, quantity: 1 }],
    }];
    w.stock.put_frozen(&r, &FreezeLimits::default()).await.unwrap().unwrap();
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
    assert!(w.stock.move_lock(&r, LockStatus::Sold).await.is_err());
    assert_eq!(totals(&w, "A"), counts(2, 3, 0));
}
