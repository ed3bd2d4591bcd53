//! The stock service over HTTP (`/reservations`, stock admin and view): never oversell.

use crate::common::{eventually, spawn, Stack};
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::Duration;

async fn reserve(s: &Stack, order_id: &str, items: Value) -> (u16, Value) {
    let a = s.post("/reservations", &s.internal, json!({"order_id": order_id, "items": items})).await;
    (a.status, a.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_hundred_buyers_for_a_hundred_units_get_exactly_a_hundred() {
    let s = spawn().await;
    s.sku("FLASH", 999, 100, 1, None).await;
    let results = join_all((0..400).map(|i| {
        let s = &s;
        async move { reserve(s, &format!("ext-{i}"), json!([{"sku": "FLASH", "quantity": 1}])).await }
    }))
    .await;
    let ok = results.iter().filter(|(st, _)| *st == 201).count();
    let refused =
        results.iter().filter(|(st, b)| *st == 409 && b["code"] == "insufficient_stock" && b["sku"] == "FLASH").count();
    assert_eq!((ok, refused), (100, 300), "{:?}", results.iter().find(|(st, _)| *st != 201 && *st != 409));
    let v = s.view("FLASH").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64(), v["sold"].as_i64()), (Some(0), Some(100), Some(0)));
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sharded_sku_refuses_nobody_while_it_has_enough_in_total() {
    let s = spawn().await;
    s.sku("HOT", 500, 64, 8, None).await;
    // uneven demand: 1, 2 and 3 units; 100 requests want far more than 64
    let results =
        join_all(
            (0..100).map(|i| {
                let s = &s;
                async move {
                    (1 + i % 3, reserve(s, &format!("h-{i}"), json!([{"sku": "HOT", "quantity": 1 + i % 3}])).await)
                }
            }),
        )
        .await;
    let granted: i64 = results.iter().filter(|(_, (st, _))| *st == 201).map(|(q, _)| *q as i64).sum();
    for (_, (st, b)) in &results {
        assert!(*st == 201 || (*st == 409 && b["code"] == "insufficient_stock"), "{st} {b}");
    }
    let v = s.view("HOT").await;
    let left = v["available"].as_i64().unwrap();
    assert_eq!(granted + left, 64);
    // nothing was refused that the remainder could still have served
    let smallest_refused = results.iter().filter(|(_, (st, _))| *st == 409).map(|(q, _)| *q as i64).min().unwrap();
    assert!(left < smallest_refused, "{left} units left but a request for {smallest_refused} was refused");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_line_no_single_shard_can_hold_is_split_across_shards() {
    let s = spawn().await;
    s.sku("SPLIT", 100, 8, 8, None).await; // one unit per shard
    let (st, b) = reserve(&s, "three", json!([{"sku": "SPLIT", "quantity": 3}])).await;
    assert_eq!(st, 201, "{b}");
    let (st, b) = reserve(&s, "six", json!([{"sku": "SPLIT", "quantity": 6}])).await;
    assert_eq!((st, b["code"].as_str()), (409, Some("insufficient_stock")));
    let (st, _) = reserve(&s, "five", json!([{"sku": "SPLIT", "quantity": 5}])).await;
    assert_eq!(st, 201);
    let v = s.view("SPLIT").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(0), Some(8)));
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replayed_freeze_freezes_once_however_often_and_concurrently_it_comes() {
    let s = spawn().await;
    s.sku("R", 100, 10, 2, None).await;
    let results = join_all((0..20).map(|_| reserve(&s, "same-order", json!([{"sku": "R", "quantity": 2}])))).await;
    assert!(results.iter().all(|(st, _)| *st == 201 || *st == 200), "{results:?}");
    assert_eq!(results.iter().filter(|(st, _)| *st == 201).count(), 1);
    let first = &results[0].1;
    assert!(results.iter().all(|(_, b)| b["items"] == first["items"] && b["expires_at"] == first["expires_at"]));
    let v = s.view("R").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(8), Some(2)));
    // same id, other body: refused, nothing changes
    let (st, b) = reserve(&s, "same-order", json!([{"sku": "R", "quantity": 3}])).await;
    assert_eq!((st, b["code"].as_str()), (422, Some("idempotency_key_reused")));
    assert_eq!(s.view("R").await["locked"], 2);
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_order_whose_third_line_lacks_stock_freezes_nothing() {
    let s = spawn().await;
    s.sku("A", 100, 5, 1, None).await;
    s.sku("B", 100, 5, 4, None).await;
    s.sku("C", 100, 1, 1, None).await;
    let (st, b) = reserve(
        &s,
        "multi",
        json!([{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 2}, {"sku": "C", "quantity": 2}]),
    )
    .await;
    assert_eq!((st, b["code"].as_str(), b["sku"].as_str()), (409, Some("insufficient_stock"), Some("C")));
    for (sku, av) in [("A", 5), ("B", 5), ("C", 1)] {
        let v = s.view(sku).await;
        assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(av), Some(0)), "{sku}");
    }
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_per_user_limit_of_one_lets_one_concurrent_freeze_through_and_comes_back_on_release() {
    let s = spawn().await;
    s.sku("LIM", 100, 50, 4, Some(1)).await;
    let results = join_all((0..10).map(|i| {
        let s = &s;
        async move {
            let a = s
                .post(
                    "/reservations",
                    &s.internal,
                    json!({"order_id": format!("l-{i}"), "user_id": "carol", "items": [{"sku": "LIM", "quantity": 1}]}),
                )
                .await;
            (a.status, a.body, i)
        }
    }))
    .await;
    let winners: Vec<_> = results.iter().filter(|(st, _, _)| *st == 201).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert!(results
        .iter()
        .filter(|(st, _, _)| *st != 201)
        .all(|(st, b, _)| *st == 409 && b["code"] == "purchase_limit_exceeded"));
    // a different user is not limited by carol
    let other = s
        .post(
            "/reservations",
            &s.internal,
            json!({"order_id": "dave-1", "user_id": "dave", "items": [{"sku": "LIM", "quantity": 1}]}),
        )
        .await;
    assert_eq!(other.status, 201);
    let won = winners[0].2;
    let rel = s.post(&format!("/reservations/l-{won}/release"), &s.internal, json!({})).await;
    assert_eq!((rel.status, rel.body["status"].as_str()), (200, Some("RELEASED")));
    let again = s
        .post(
            "/reservations",
            &s.internal,
            json!({"order_id": "l-again", "user_id": "carol", "items": [{"sku": "LIM", "quantity": 1}]}),
        )
        .await;
    assert_eq!(again.status, 201, "{}", again.body);
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirms_and_releases_in_any_order_move_each_lock_at_most_once() {
    let s = spawn().await;
    s.sku("CR", 100, 20, 2, None).await;
    for i in 0..4 {
        let (st, _) = reserve(&s, &format!("cr-{i}"), json!([{"sku": "CR", "quantity": 2}])).await;
        assert_eq!(st, 201);
    }
    let calls = (0..4).flat_map(|i| (0..6).map(move |k| (i, if (i + k) % 2 == 0 { "confirm" } else { "release" })));
    let results = join_all(calls.map(|(i, op)| {
        let s = &s;
        async move { (i, op, s.post(&format!("/reservations/cr-{i}/{op}"), &s.internal, json!({})).await) }
    }))
    .await;
    let mut sold = 0;
    for i in 0..4 {
        let mine: Vec<_> = results.iter().filter(|(j, _, _)| *j == i).collect();
        let ok: Vec<&str> = mine
            .iter()
            .filter(|(_, _, a)| a.status == 200)
            .map(|(_, _, a)| a.body["status"].as_str().unwrap())
            .collect();
        assert!(!ok.is_empty());
        // every successful answer agrees on one final status; the others are 409
        assert!(ok.iter().all(|st| *st == ok[0]), "{ok:?}");
        assert!(mine.iter().all(|(_, _, a)| a.status == 200
            || (a.status == 409
                && (a.body["code"] == "invalid_transition" || a.body["code"] == "reservation_expired"))));
        if ok[0] == "SOLD" {
            sold += 2;
        }
    }
    let v = s.view("CR").await;
    assert_eq!(
        (v["sold"].as_i64(), v["locked"].as_i64(), v["available"].as_i64()),
        (Some(sold), Some(0), Some(20 - sold))
    );
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_external_reservation_past_its_ttl_is_released_by_itself() {
    let s = spawn().await;
    s.sku("TTL", 100, 3, 1, None).await;
    let a = s
        .post(
            "/reservations",
            &s.internal,
            json!({"order_id": "ttl-1", "ttl_seconds": 2, "items": [{"sku": "TTL", "quantity": 3}]}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(s.view("TTL").await["available"], 0);
    eventually("the lapsed hold to be released", Duration::from_secs(30), || async {
        let v = s.view("TTL").await;
        (v["available"] == 3 && v["locked"] == 0).then_some(())
    })
    .await;
    let c = s.post("/reservations/ttl-1/confirm", &s.internal, json!({})).await;
    assert_eq!((c.status, c.body["code"].as_str()), (409, Some("reservation_expired")));
    s.assert_invariants().await;
}

#[tokio::test]
async fn changing_the_shard_count_keeps_every_unit_and_lock() {
    let s = spawn().await;
    s.sku("RS", 100, 30, 4, None).await;
    for i in 0..5 {
        assert_eq!(reserve(&s, &format!("rs-{i}"), json!([{"sku": "RS", "quantity": 2}])).await.0, 201);
    }
    for shards in [16, 2, 1, 8] {
        let a = s
            .call(
                "PUT",
                "/admin/skus/RS",
                Some(&s.admin),
                &[],
                Some(json!({"name": "RS", "price": 100, "currency": "EUR", "shards": shards}).to_string()),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
        let v = s.view("RS").await;
        assert_eq!(
            (v["available"].as_i64(), v["locked"].as_i64(), v["total"].as_i64()),
            (Some(20), Some(10), Some(30))
        );
        s.assert_invariants().await;
    }
    for i in 0..5 {
        assert_eq!(s.post(&format!("/reservations/rs-{i}/release"), &s.internal, json!({})).await.status, 200);
    }
    assert_eq!(reserve(&s, "rs-all", json!([{"sku": "RS", "quantity": 30}])).await.0, 201);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_replayed_adjustment_answers_the_same_even_when_it_took_the_last_units() {
    let s = spawn().await;
    s.sku("ADJ", 100, 10, 2, None).await;
    let take = json!({"adjustment_id": "shrink-1", "delta": -10, "reason": "damaged"});
    let first = s.post("/admin/skus/ADJ/adjustments", &s.admin, take.clone()).await;
    assert_eq!((first.status, first.body["available"].as_i64()), (201, Some(0)));
    let again = s.post("/admin/skus/ADJ/adjustments", &s.admin, take).await;
    assert_eq!((again.status, again.body["available"].as_i64()), (200, Some(0)), "{}", again.body);
    let more = s
        .post("/admin/skus/ADJ/adjustments", &s.admin, json!({"adjustment_id": "shrink-2", "delta": -1, "reason": "x"}))
        .await;
    assert_eq!((more.status, more.body["code"].as_str()), (409, Some("insufficient_stock")));
    s.assert_invariants().await;
}
