//! Production edges (docs/runbook.md): a poison stream record, a hung dependency, a throttled
//! hot shard. Each failure is injected for real — a record the handler cannot decode written
//! to the table, requests held or refused by the emulator's fault hook — and the test checks
//! what a caller or an operator would see.

use crate::common::{advance_clock, eventually, spawn_opts, spawn_with};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_poison_stream_record_goes_to_the_failure_queue_and_later_records_still_flow() {
    let s = spawn_opts(&[], |o| o.visibility_timeout_cap = Some(1)).await;
    s.sku("POI", 100, 5, 1, None).await;
    // An order image this build cannot decode (a status from a newer build, say), written
    // to the order table like any order: publish-events fails on it every time.
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    ddb.put_item()
        .table_name(s.local.resources.table("OrderTable").unwrap())
        .item("pk", AttributeValue::S("ORD#poison-1".into()))
        .item("st", AttributeValue::S("TELEPORTED".into()))
        .send()
        .await
        .unwrap();
    let started = Instant::now();
    // Records behind it on the stream: an order and its cancel, whose event releases stock.
    let id = s.order_id("pia", "k", json!([{"sku": "POI", "quantity": 2}])).await;
    assert_eq!(s.cancel("pia", &id).await.status, 200);
    eventually("the cancel behind the poison record to release its stock", Duration::from_secs(60), || async {
        (s.view("POI").await["locked"] == 0).then_some(())
    })
    .await;
    let flowed = started.elapsed();

    let url = s.local.resources.queue_url("PublishEventsFailureQueue").unwrap().to_owned();
    let sqs = aws_sdk_sqs::Client::new(&s.local.sdk);
    let notice: Value = eventually("the poison record's notice in the failure queue", Duration::from_secs(120), || {
        let (sqs, url) = (sqs.clone(), url.clone());
        async move {
            let out = sqs.receive_message().queue_url(&url).wait_time_seconds(1).send().await.ok()?;
            let m = out.messages().first()?;
            serde_json::from_str(m.body()?).ok()
        }
    })
    .await;
    let noticed = started.elapsed();
    eprintln!("poison record: later records flowed after {flowed:?}; failure notice after {noticed:?}");
    assert_eq!(notice["requestContext"]["condition"], "RetryAttemptsExhausted", "{notice}");
    let info = &notice["DDBStreamBatchInfo"];
    assert_eq!(info["batchSize"], 1, "the batch was bisected down to the poison record: {notice}");
    assert!(noticed < Duration::from_secs(120));

    // The runbook's replay: the notice's position reads the record back from the stream.
    let streams = aws_sdk_dynamodbstreams::Client::new(&s.local.sdk);
    let it = streams
        .get_shard_iterator()
        .stream_arn(info["streamArn"].as_str().unwrap())
        .shard_id(info["shardId"].as_str().unwrap())
        .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::AtSequenceNumber)
        .sequence_number(info["startSequenceNumber"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let recs = streams.get_records().shard_iterator(it.shard_iterator().unwrap()).limit(1).send().await.unwrap();
    let keys = recs.records()[0].dynamodb().unwrap().keys().unwrap();
    assert_eq!(keys["pk"], aws_sdk_dynamodbstreams::types::AttributeValue::S("ORD#poison-1".into()));
    // Once the poison item is dealt with (here: removed), everything else is consistent.
    ddb.delete_item()
        .table_name(s.local.resources.table("OrderTable").unwrap())
        .key("pk", AttributeValue::S("ORD#poison-1".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(s.lock_status(&id).await.as_deref(), Some("RELEASED"));
    s.assert_invariants().await;
}

/// One checkout's wall time and answer.
async fn timed_checkout(s: &crate::common::Stack, user: &str, key: &str, sku: &str) -> (Duration, u16, Value) {
    let t = Instant::now();
    let a = s.order(user, key, json!([{"sku": sku, "quantity": 1}])).await;
    (t.elapsed(), a.status, a.body)
}

#[tokio::test]
async fn a_hung_dependency_makes_checkout_answer_503_within_its_budget_and_a_retry_completes_it() {
    // Production budgets (no emulator scaling): 0.8 s per attempt, 2 attempts, 1.8 s per call,
    // 5 s per request.
    let s = spawn_with(&[("HOLDFAST_SDK_TIMEOUT_SCALE", "1")]).await;
    let sku = format!("HUNG-{}", fastrand::u32(..));
    s.sku(&sku, 100, 10, 1, None).await;

    // A slow dependency still inside the budget: the checkout succeeds, later.
    let mut figures = Vec::new();
    for (i, delay_ms) in [0u64, 200, 500].into_iter().enumerate() {
        s.local
            .set_emulator_faults(
                json!([{"match": sku, "target": "DynamoDB_20120810.TransactWriteItems", "delay_ms": delay_ms}]),
            )
            .await
            .unwrap();
        let (took, status, body) = timed_checkout(&s, "hal", &format!("slow-{i}"), &sku).await;
        assert_eq!(status, 201, "{delay_ms} ms: {body}");
        figures.push(format!("freeze +{delay_ms} ms → 201 in {} ms", took.as_millis()));
    }

    // A hung one: every freeze attempt is held 6 s, past the whole 5 s request budget (each
    // attempt gives up after 0.8 s). The checkout gives up inside its budget.
    let hold = Duration::from_secs(6);
    s.local
        .set_emulator_faults(json!([{"match": sku, "target": "DynamoDB_20120810.TransactWriteItems",
                                     "delay_ms": hold.as_millis() as u64}]))
        .await
        .unwrap();
    let hung_at = Instant::now();
    let (took, status, body) = timed_checkout(&s, "hal", "hung", &sku).await;
    figures.push(format!("freeze hung → {status} in {} ms", took.as_millis()));
    eprintln!("checkout under an injected slow dependency: {}", figures.join("; "));
    assert_eq!((status, body["code"].as_str()), (503, Some("temporarily_unavailable")), "{body}");
    assert!(took < Duration::from_secs(5), "answered after {took:?}, past the 5 s budget");

    // The held requests still land in the emulator (as a late DynamoDB write may); the retry
    // with the same key answers as the one checkout it is.
    s.local.set_emulator_faults(json!([])).await.unwrap();
    // The first held attempt lands: its freeze shows …
    eventually("the held freeze to land", Duration::from_secs(30), || async {
        (s.exact(&sku).await.1 == 4).then_some(())
    })
    .await;
    // … and the second, sent within the 1.8 s call budget, is held no longer than the first.
    tokio::time::sleep((hung_at + hold + Duration::from_secs(2)).saturating_duration_since(Instant::now())).await;
    let retry = s.order("hal", "hung", json!([{"sku": sku, "quantity": 1}])).await;
    assert_eq!(retry.status, 201, "{}", retry.body);
    let v = s.view(&sku).await;
    assert_eq!(v["locked"], 4, "three slow checkouts and the hung one, once: {v}");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_throttled_hot_shard_answers_429_busy_with_retry_after_and_then_recovers() {
    let s = spawn_with(&[("HOLDFAST_SDK_TIMEOUT_SCALE", "1")]).await;
    let sku = format!("HOT-{}", fastrand::u32(..));
    s.sku(&sku, 100, 10, 1, None).await;
    // The hot shard refuses both attempts of the SDK's bounded retry.
    s.local
        .set_emulator_faults(json!([{
            "match": sku, "target": "DynamoDB_20120810.TransactWriteItems",
            "throttle": "ThrottlingException", "remaining": 2
        }]))
        .await
        .unwrap();
    let t = Instant::now();
    let busy = s.order("tom", "k", json!([{"sku": sku, "quantity": 1}])).await;
    let took = t.elapsed();
    eprintln!("throttled checkout answered {} in {} ms", busy.status, took.as_millis());
    assert_eq!((busy.status, busy.body["code"].as_str()), (429, Some("busy")), "{}", busy.body);
    assert_eq!(busy.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"), "{:?}", busy.headers);
    assert!(took < Duration::from_secs(2), "a throttle is answered quickly, not after {took:?}");
    assert_eq!(s.view(&sku).await["locked"], 0, "nothing was frozen");
    // Retry-After later, the same key goes through.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ok = s.order("tom", "k", json!([{"sku": sku, "quantity": 1}])).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    s.local.set_emulator_faults(json!([])).await.unwrap();
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_reconcile_worker_that_crashes_mid_page_is_redelivered_and_the_sweep_completes_with_none_seeded_over_it() {
    // Orphan freezes whose checks are dropped: only the sweep can release them.
    let s = spawn_opts(
        &[
            ("HOLDFAST_STALE_LOCK_SECONDS", "1"),
            ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "1"),
            ("HOLDFAST_FAULTS", "create-order.after-freeze,reservation-check.drop"),
        ],
        |o| o.visibility_timeout_cap = Some(6),
    )
    .await;
    s.sku("RCW", 100, 50, 1, None).await;
    for i in 0..12 {
        let a = s.order(&format!("rc{i}"), "k", json!([{"sku": "RCW", "quantity": 1}])).await;
        assert_eq!(a.status, 500, "{}", a.body);
    }
    assert_eq!(s.view("RCW").await["locked"], 12);
    // their checks arrive (after the 1 s delay) and are dropped; the locks grow stale (on the
    // test clock)
    eventually("the orphan checks to be consumed (and dropped)", Duration::from_secs(30), || async {
        (s.local.queue_depth("ReservationCheckQueue").await.unwrap() == 0).then_some(())
    })
    .await;
    advance_clock(Duration::from_millis(2500));

    // The schedule seeds the sweep; every worker dies half-way through its page for a while.
    s.local.set_faults("reconcile-worker.crash-mid-page").unwrap();
    let seeded = s.local.run_schedule("reconcile").await.unwrap();
    // per bucket: stale locks, overdue orders, shipped-due, unissued refunds, stock to settle,
    // issued refunds; held refunds and fence returns once; then SKU invariants, locked totals,
    // campaign quotas, SKU journals
    assert_eq!(seeded["items_seeded"], 6 * 64 + 2 + 4, "{seeded}");
    // The next run of the schedule finds the sweep unfinished and adds nothing to it.
    let again = s.local.run_schedule("reconcile").await.unwrap();
    assert_eq!(again["items_seeded"], 0, "{again}");
    assert!(again["backlog"].as_u64().is_some_and(|b| b > 0), "{again}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.view("RCW").await["locked"], 12, "nothing released while every worker crashes");
    s.local.set_faults("").unwrap();

    // Redelivered items are redone from their cursor; the sweep finishes without a person.
    eventually("the sweep to release every orphan", Duration::from_secs(90), || async {
        (s.view("RCW").await["locked"] == 0).then_some(())
    })
    .await;
    eventually("the work queue to drain", Duration::from_secs(60), || async {
        (s.local.queue_depth("ReconcileWorkQueue").await.unwrap() == 0).then_some(())
    })
    .await;
    assert_eq!(s.local.queue_depth("ReconcileWorkDLQ").await.unwrap(), 0);
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_token_without_the_order_scopes_cannot_order_or_read_orders() {
    let s = spawn_with(&[]).await;
    s.sku("SCP", 100, 5, 1, None).await;
    let bare = s.local.token("ivy", &[]);
    let read_only = s.local.token("ivy", &["orders:read"]);
    let body = Some(json!({"items": [{"sku": "SCP", "quantity": 1}]}).to_string());
    for (t, want) in [(&bare, 403), (&read_only, 403)] {
        let a = s.call("POST", "/orders", Some(t), &[("idempotency-key", "k")], body.clone()).await;
        assert_eq!(a.status, want, "{}", a.body);
    }
    assert_eq!(s.get("/orders", Some(&bare)).await.status, 403);
    assert_eq!(s.get("/orders", Some(&read_only)).await.status, 200);
    assert_eq!(s.view("SCP").await["locked"], 0);
}

#[tokio::test]
async fn during_a_key_rotation_callbacks_signed_with_either_key_verify_and_others_do_not() {
    let s = spawn_with(&[("PAYMENT_WEBHOOK_SECRET", "key-new"), ("PAYMENT_WEBHOOK_SECRET_PREVIOUS", "key-old")]).await;
    s.sku("ROT", 100, 5, 1, None).await;
    let id = s.order_id("rob", "k", json!([{"sku": "ROT", "quantity": 1}])).await;
    let body = |p: &str| {
        json!({"payment_id": p, "order_id": id, "amount": 100, "currency": "EUR", "status": "FAILED"}).to_string()
    };
    let now = holdfast::clock::now_s();
    for (key, p, want) in [("key-old", "p1", 200), ("key-new", "p2", 200), ("key-older", "p3", 401)] {
        let b = body(p);
        let sig = holdfast::domain::signature::sign(key.as_bytes(), now, b.as_bytes());
        let a = s.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(b)).await;
        assert_eq!(a.status, want, "{key}: {}", a.body);
    }
}
