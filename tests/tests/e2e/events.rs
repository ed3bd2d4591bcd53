//! The event flow and self-healing (docs/architecture.md, "Orphan check", "Events and self-healing"): every failure is survived automatically,
//! and the invariants hold at the end of each scenario.

use crate::common::{advance_clock, eventually, spawn, spawn_opts, spawn_with};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn paying_sells_and_cancelling_or_expiring_puts_stock_back_on_sale() {
    // the payment must land before the deadline even on a loaded machine (past it, the order
    // expires and the payment is refunded: protocol review #6)
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "5")]).await;
    s.sku("FLOW", 100, 9, 2, None).await;
    let paid = s.order_id("u1", "k", json!([{"sku": "FLOW", "quantity": 3}])).await;
    let cancelled = s.order_id("u2", "k", json!([{"sku": "FLOW", "quantity": 2}])).await;
    let expired = s.order_id("u3", "k", json!([{"sku": "FLOW", "quantity": 1}])).await;
    assert_eq!(s.pay(&paid, "p1", 300, "SUCCEEDED").await.body["result"], "applied");
    assert_eq!(s.cancel("u2", &cancelled).await.status, 200);
    eventually("locks to follow their orders", WAIT, || async {
        let (a, b, c) = (s.lock_status(&paid).await, s.lock_status(&cancelled).await, s.lock_status(&expired).await);
        (a.as_deref() == Some("SOLD") && b.as_deref() == Some("RELEASED") && c.as_deref() == Some("RELEASED"))
            .then_some(())
    })
    .await;
    assert_eq!(s.get_order("u3", &expired).await.body["status"], "EXPIRED");
    let v = s.view("FLOW").await;
    assert_eq!((v["sold"].as_i64(), v["locked"].as_i64(), v["available"].as_i64()), (Some(3), Some(0), Some(6)));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_crash_after_freeze_is_released_by_the_check_and_a_later_retry_gets_reservation_expired() {
    let s = spawn_with(&[
        ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "2"),
        ("HOLDFAST_FAULTS", "create-order.after-freeze"),
    ])
    .await;
    s.sku("ORPH", 100, 5, 1, None).await;
    let crashed = s.order("kim", "k-crash", json!([{"sku": "ORPH", "quantity": 2}])).await;
    assert_eq!(crashed.status, 500, "{}", crashed.body);
    assert_eq!(s.view("ORPH").await["locked"], 2, "the freeze happened, the order did not");
    s.local.set_faults("").unwrap();
    // an order that was written is left alone by its check
    let fine = s.order_id("lee", "k-fine", json!([{"sku": "ORPH", "quantity": 1}])).await;
    eventually("the orphan freeze to be released", WAIT, || async {
        (s.view("ORPH").await["locked"] == 1).then_some(())
    })
    .await;
    let retry = s.order("kim", "k-crash", json!([{"sku": "ORPH", "quantity": 2}])).await;
    assert_eq!((retry.status, retry.body["code"].as_str()), (409, Some("reservation_expired")), "{}", retry.body);
    assert_eq!(s.get_order("lee", &fine).await.body["status"], "PENDING_PAYMENT");
    let v = s.view("ORPH").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(4), Some(1)));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_retry_right_after_a_crash_completes_the_same_checkout() {
    let s = spawn_with(&[("HOLDFAST_FAULTS", "create-order.after-freeze")]).await;
    s.sku("RET", 100, 5, 1, None).await;
    assert_eq!(s.order("max", "k", json!([{"sku": "RET", "quantity": 1}])).await.status, 500);
    s.local.set_faults("").unwrap();
    let a = s.order("max", "k", json!([{"sku": "RET", "quantity": 1}])).await;
    assert_eq!((a.status, a.body["status"].as_str()), (201, Some("PENDING_PAYMENT")), "{}", a.body);
    let v = s.view("RET").await;
    assert_eq!(v["locked"], 1, "one freeze, not two");
    s.assert_invariants().await;
}

#[tokio::test]
async fn orders_whose_timeout_never_comes_still_expire_through_reconcile() {
    let s = spawn_with(&[
        ("HOLDFAST_PAYMENT_TTL_SECONDS", "1"),
        ("HOLDFAST_STALE_LOCK_SECONDS", "1"),
        ("HOLDFAST_FAULTS", "payment-timeout.drop,create-order.after-order-put"),
    ])
    .await;
    s.sku("TO", 100, 5, 1, None).await;
    // crash after the order put: the client sees a 5xx, retries, gets the order; no timeout message
    let crashed = s.order("nia", "k", json!([{"sku": "TO", "quantity": 2}])).await;
    assert_eq!(crashed.status, 500);
    s.local.set_faults("payment-timeout.drop").unwrap();
    let a = s.order("nia", "k", json!([{"sku": "TO", "quantity": 2}])).await;
    assert_eq!(a.status, 201);
    let b = s.order_id("oli", "k", json!([{"sku": "TO", "quantity": 1}])).await; // its timeout is dropped
    let a = a.body["order_id"].as_str().unwrap().to_owned();
    // both timeout messages were delivered (after their 1 s delay) and dropped …
    eventually("the timeouts to be consumed (and dropped)", WAIT, || async {
        (s.local.queue_depth("PaymentTimeoutQueue").await.unwrap() == 0).then_some(())
    })
    .await;
    assert_eq!(s.get_order("oli", &b).await.body["status"], "PENDING_PAYMENT", "no timeout arrived");
    // an order waiting for its payment is not in `pending-by-deadline`: its stale lock is what
    // the sweep finds it by (core/src/ports.rs, OrderIndex::Pending)
    for id in [&a, &b] {
        let item = order_item(&s, id).await;
        assert_eq!(item.get("st").and_then(|v| v.as_s().ok()).map(String::as_str), Some("PENDING_PAYMENT"));
        assert!(!item.contains_key("pb") && !item.contains_key("pd"), "{id} in pending-by-deadline: {item:?}");
    }
    // … and the deadlines plus the sweep's 1 s grace pass (on the test clock)
    advance_clock(Duration::from_secs(3));
    let report = s.reconcile().await;
    assert_eq!(report["orders_expired"], 2, "{report}");
    assert_eq!(report["overdue_orders"], 2, "each found once, by its lock: {report}");
    assert_eq!(s.reconcile().await["orders_expired"], 0, "a second run repairs nothing twice");
    assert_eq!(s.get_order("nia", &a).await.body["status"], "EXPIRED");
    eventually("the stock to come back", WAIT, || async { (s.view("TO").await["available"] == 5).then_some(()) }).await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn dropped_stock_events_converge_through_reconcile() {
    let s = spawn_with(&[("HOLDFAST_STALE_LOCK_SECONDS", "1"), ("HOLDFAST_FAULTS", "stock-events.drop")]).await;
    s.sku("DR", 100, 5, 1, None).await;
    let paid = s.order_id("pat", "k", json!([{"sku": "DR", "quantity": 2}])).await;
    let cancelled = s.order_id("quin", "k", json!([{"sku": "DR", "quantity": 1}])).await;
    s.pay(&paid, "p", 200, "SUCCEEDED").await;
    s.cancel("quin", &cancelled).await;
    // both events reached stock-events (the local runner counts each message a rule delivers)
    // and left its queue: consumed, and dropped
    eventually("the events to be consumed (and dropped)", WAIT, || async {
        let delivered = holdfast::adapters::usage::snapshot().calls.get("sqs:SendMessage(rule target)").copied();
        (delivered >= Some(2) && s.local.queue_depth("StockEventsQueue").await.unwrap() == 0).then_some(())
    })
    .await;
    assert_eq!(s.lock_status(&paid).await.as_deref(), Some("FROZEN"), "nothing applied yet");
    // the locks grow stale (on the test clock). The fault stays on: the delivery count above
    // is every rule-fed queue's, so an event may still be on its way, and it must be lost too
    // (cleared here, a late one was applied before the sweep and the sweep found one lock, not two)
    advance_clock(Duration::from_millis(1500));
    let report = s.reconcile().await;
    assert_eq!(report["stale_locks"], 2, "{report}");
    assert_eq!(s.lock_status(&paid).await.as_deref(), Some("SOLD"));
    assert_eq!(s.lock_status(&cancelled).await.as_deref(), Some("RELEASED"));
    assert_eq!(s.reconcile().await["stale_locks"], 0);
    let v = s.view("DR").await;
    assert_eq!((v["sold"].as_i64(), v["available"].as_i64(), v["locked"].as_i64()), (Some(2), Some(3), Some(0)));
    s.assert_invariants().await;
}

#[tokio::test]
async fn stock_events_that_reach_the_dlq_converge_once_redriven() {
    let s = spawn_opts(&[("HOLDFAST_FAULTS", "stock-events.fail")], |o| o.visibility_timeout_cap = Some(1)).await;
    s.sku("DLQ", 100, 5, 1, None).await;
    let paid = s.order_id("ray", "k", json!([{"sku": "DLQ", "quantity": 1}])).await;
    s.pay(&paid, "p", 100, "SUCCEEDED").await;
    eventually("the event to land in the DLQ", Duration::from_secs(60), || async {
        (s.local.queue_depth("StockEventsDLQ").await.unwrap() == 1).then_some(())
    })
    .await;
    assert_eq!(s.lock_status(&paid).await.as_deref(), Some("FROZEN"));
    s.local.set_faults("").unwrap();
    // redrive: move every DLQ message back to its source queue
    let sqs = aws_sdk_sqs::Client::new(&s.local.sdk);
    let dlq = s.local.resources.queue_url("StockEventsDLQ").unwrap().to_owned();
    let src = s.local.resources.queue_url("StockEventsQueue").unwrap().to_owned();
    let got = sqs.receive_message().queue_url(&dlq).max_number_of_messages(10).send().await.unwrap();
    for m in got.messages() {
        sqs.send_message().queue_url(&src).message_body(m.body().unwrap()).send().await.unwrap();
        sqs.delete_message().queue_url(&dlq).receipt_handle(m.receipt_handle().unwrap()).send().await.unwrap();
    }
    eventually("the redriven event to sell the unit", WAIT, || async {
        (s.lock_status(&paid).await.as_deref() == Some("SOLD")).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn every_stock_event_delivered_three_times_and_shuffled_ends_as_if_delivered_once() {
    // the deadline must outlast creating twelve orders on a loaded machine: a payment after it is
    // refunded, not applied
    let s = spawn_opts(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "8")], |o| o.paused = vec!["stock-events".into()]).await;
    s.sku("DUP", 100, 30, 4, None).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(s.order_id(&format!("d{i}"), "k", json!([{"sku": "DUP", "quantity": 2}])).await);
    }
    for id in &ids[0..6] {
        assert_eq!(s.pay(id, &format!("pay-{id}"), 200, "SUCCEEDED").await.body["result"], "applied");
    }
    for (i, id) in ids.iter().enumerate().take(10).skip(6) {
        assert_eq!(s.cancel(&format!("d{i}"), id).await.status, 200);
    }
    // the last two expire; 12 events in all reach the (unpolled) stock-events queue
    let sqs = aws_sdk_sqs::Client::new(&s.local.sdk);
    let url = s.local.resources.queue_url("StockEventsQueue").unwrap().to_owned();
    let mut bodies = Vec::new();
    let start = std::time::Instant::now();
    while bodies.len() < 12 {
        assert!(start.elapsed() < WAIT, "only {} of 12 events arrived", bodies.len());
        let got = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(120)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        bodies.extend(got.messages().iter().filter_map(|m| m.body().map(str::to_owned)));
    }
    assert_eq!(bodies.len(), 12);
    let mut deliveries: Vec<String> = bodies.iter().flat_map(|b| [b.clone(), b.clone(), b.clone()]).collect();
    fastrand::shuffle(&mut deliveries);
    let app = s.local.app("stock-events").unwrap();
    for (n, chunk) in deliveries.chunks(10).enumerate() {
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, b)| SqsMessage {
                message_id: Some(format!("m{n}-{i}")),
                body: Some(b.clone()),
                ..Default::default()
            })
            .collect();
        let resp = holdfast::handlers::sqs("stock-events", app, SqsEvent { records }).await.unwrap().unwrap();
        assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
    }
    let v = s.view("DUP").await;
    assert_eq!((v["sold"].as_i64(), v["locked"].as_i64(), v["available"].as_i64()), (Some(12), Some(0), Some(18)));
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_retry_after_the_payment_deadline_is_refused_and_gives_the_stock_back() {
    let s =
        spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "1"), ("HOLDFAST_FAULTS", "create-order.after-freeze")]).await;
    s.sku("LATE", 100, 2, 1, None).await;
    assert_eq!(s.order("uma", "k", json!([{"sku": "LATE", "quantity": 2}])).await.status, 500);
    s.local.set_faults("").unwrap();
    // the freeze's deadline passes (on the test clock; its orphan check is 300 s away)
    advance_clock(Duration::from_millis(2200));
    let retry = s.order("uma", "k", json!([{"sku": "LATE", "quantity": 2}])).await;
    assert_eq!((retry.status, retry.body["code"].as_str()), (409, Some("reservation_expired")), "{}", retry.body);
    let v = s.view("LATE").await;
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(2), Some(0)));
    s.assert_invariants().await;
}

/// The stock change feed (docs/operations.md, "Stock change feed"): an adjustment, a sale's
/// freeze and a release each reach the bus as `StockChanged` (per SKU and cause, per stream
/// batch), nothing is refused, and the template's sample consumer rule delivers them to its
/// queue, where a downstream reader finds each with its before/after available units.
#[tokio::test]
async fn stock_changed_events_reach_the_bus_for_an_adjustment_a_freeze_and_a_release() {
    let s = spawn().await;
    let sent = || {
        let m = holdfast::telemetry::snapshot();
        let get = |n: &str| m.get(n).copied().unwrap_or(0);
        (get(holdfast::telemetry::names::STOCK_CHANGED), get(holdfast::telemetry::names::STOCK_CHANGED_NOT_SENT))
    };
    s.sku("FEED", 100, 5, 1, None).await;
    eventually("the adjustment's StockChanged", WAIT, || async { (sent().0 >= 1).then_some(()) }).await;
    let after_adjust = sent().0;
    let id = s.order_id("fee", "k", json!([{"sku": "FEED", "quantity": 2}])).await;
    eventually("the freeze's StockChanged", WAIT, || async { (sent().0 > after_adjust).then_some(()) }).await;
    let after_freeze = sent().0;
    s.cancel("fee", &id).await;
    s.lock_reaches(&id, "RELEASED").await;
    eventually("the release's StockChanged", WAIT, || async { (sent().0 > after_freeze).then_some(()) }).await;
    assert_eq!(sent().1, 0, "the bus refused none");
    // what a downstream reader of the sample queue (StockFeedRule → StockFeedQueue) sees
    let sqs = aws_sdk_sqs::Client::new(&s.local.sdk);
    let url = s.local.resources.queue_url("StockFeedQueue").expect("the sample queue").to_owned();
    let mut causes: Vec<(String, i64, Value)> = Vec::new();
    let start = std::time::Instant::now();
    let wanted = ["adjustment", "freeze", "release"];
    while !wanted.iter().all(|w| causes.iter().any(|(c, _, _)| c == w)) {
        assert!(start.elapsed() < WAIT.max(Duration::from_secs(30)), "the sample queue holds {causes:?}");
        let got = sqs.receive_message().queue_url(&url).max_number_of_messages(10).send().await.expect("receive");
        for m in got.messages() {
            let e: Value = serde_json::from_str(m.body().unwrap_or("{}")).expect("an EventBridge event");
            assert_eq!(
                (e["source"].as_str(), e["detail-type"].as_str()),
                (Some("holdfast.stock"), Some("StockChanged"))
            );
            if e["detail"]["sku"] == "FEED" {
                let cause = e["detail"]["cause"].as_str().unwrap_or_default().to_owned();
                causes.push((
                    cause,
                    e["detail"]["available_delta"].as_i64().unwrap_or(0),
                    e["detail"]["shards"].clone(),
                ));
            }
        }
    }
    let delta = |c: &str| causes.iter().filter(|(x, _, _)| x == c).map(|(_, d, _)| d).sum::<i64>();
    assert_eq!((delta("adjustment"), delta("freeze"), delta("release")), (5, -2, 2), "{causes:?}");
    // each carries its shards' available units before and after
    assert!(causes.iter().all(|(_, _, sh)| sh.as_array().is_some_and(|a| !a.is_empty())), "{causes:?}");
    s.assert_invariants().await;
}

/// The order table's item of `id`, as stored.
async fn order_item(
    s: &crate::common::Stack,
    id: &str,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    let table = s.local.resources.table("OrderTable").unwrap();
    let got =
        ddb.get_item().table_name(table).key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("ORD#{id}")));
    got.consistent_read(true).send().await.unwrap().item.unwrap_or_else(|| panic!("order {id} is stored"))
}
