//! The waiting room (docs/waiting-room.md), measured on the local stack: what a join, a
//! where-am-I read and a queued checkout cost in DynamoDB units, joins per second the local
//! stack sustains, and how soon the waiting read SOLD_OUT after the last unit sells.

use super::prices::delta;
use super::Bench;
use futures::future::join_all;
use holdfast::adapters::usage;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const JOINERS: usize = 200;

fn at_ms(ms: i64) -> String {
    holdfast::clock::rfc3339(ms)
}

pub(crate) async fn queue_section(endpoint: &str) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[]).await?;
    b.sku("QSKU", 5, 1).await;
    let now = holdfast::clock::now_ms();
    let body = json!({"name": "bench drop", "starts_at": at_ms(now - 1000), "ends_at": at_ms(now + 3_600_000),
                      "items": [{"sku": "QSKU", "quota": 5}], "queue": {"rate": 10000, "token_ttl_seconds": 120}});
    let (st, v) = b.call("PUT", "/admin/campaigns/qbench", Some(&b.admin), &[], Some(body)).await;
    anyhow::ensure!(st == 201, "campaign: {st} {v}");
    let tok = |u: &str| b.stack.user_token(u);
    // one join, one read, on a warm stack
    let warm = tok("warm");
    b.call("POST", "/campaigns/qbench/queue", Some(&warm), &[], None).await;
    let t = tok("one");
    let before = usage::snapshot();
    let (st, _) = b.call("POST", "/campaigns/qbench/queue", Some(&t), &[], None).await;
    anyhow::ensure!(st == 201, "join: {st}");
    let join = delta(&before, &usage::snapshot());
    let before = usage::snapshot();
    let (st, place) = b.call("GET", "/campaigns/qbench/queue/me", Some(&t), &[], None).await;
    anyhow::ensure!(st == 200, "me: {st}");
    let me = delta(&before, &usage::snapshot());
    // a plain campaign checkout against a queued one: the token's cost in the freeze
    let token = place["admission_token"].as_str().unwrap_or_default().to_owned();
    let items = json!([{"sku": "QSKU", "quantity": 1, "campaign_id": "qbench"}]);
    let before = usage::snapshot();
    let (st, o) = b
        .call(
            "POST",
            "/orders",
            Some(&t),
            &[("idempotency-key", "q1")],
            Some(json!({"items": items, "admission_token": token})),
        )
        .await;
    anyhow::ensure!(st == 201, "queued checkout: {st} {o}");
    let queued_checkout = delta(&before, &usage::snapshot());
    // joins per second on the local stack: JOINERS buyers, 20 at a time
    let started = Instant::now();
    for chunk in (0..JOINERS).collect::<Vec<_>>().chunks(20) {
        let b = &b;
        join_all(chunk.iter().map(|i| {
            let t = b.stack.user_token(&format!("j{i}"));
            async move { b.call("POST", "/campaigns/qbench/queue", Some(&t), &[], None).await }
        }))
        .await;
    }
    let joins_per_s = JOINERS as f64 / started.elapsed().as_secs_f64();
    // sell the rest, then time until a waiting buyer reads SOLD_OUT
    let mut sold = 1;
    let mut i = 0;
    while sold < 5 && i < JOINERS {
        let t = tok(&format!("j{i}"));
        i += 1;
        let (_, p) = b.call("GET", "/campaigns/qbench/queue/me", Some(&t), &[], None).await;
        let Some(token) = p["admission_token"].as_str() else { continue };
        let body =
            json!({"items": [{"sku": "QSKU", "quantity": 1, "campaign_id": "qbench"}], "admission_token": token});
        let (st, o) = b.call("POST", "/orders", Some(&t), &[("idempotency-key", "k")], Some(body)).await;
        if st == 201 {
            let id = o["order_id"].as_str().unwrap_or_default().to_owned();
            b.pay(&id, 1000).await;
            sold += 1;
        }
    }
    let orders = [o["order_id"].as_str().unwrap_or_default().to_owned()];
    b.pay(&orders[0], 1000).await;
    b.drain(Duration::from_millis(500)).await;
    let last_sold = Instant::now();
    let waiting = tok(&format!("j{}", JOINERS - 1));
    let mut told = None;
    for _ in 0..100 {
        let (_, p) = b.call("GET", "/campaigns/qbench/queue/me", Some(&waiting), &[], None).await;
        if p["state"] == "SOLD_OUT" {
            told = Some(last_sold.elapsed().as_millis());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let units = |u: &usage::Usage| json!({"write_units": u.write_units, "read_units": u.read_units, "calls": u.calls});
    Ok(json!({
        "how": "local stack over the emulator; usage::snapshot() deltas around one request on a warm stack (a join after a first join, its where-am-I once admitted, a queued checkout vs its order put); joins/s: 200 buyers, 20 at a time, on this 2-core machine (the emulator serialises DynamoDB requests); sold-out: from the last sale's confirm (queues drained) to a waiting buyer's first SOLD_OUT, polled every 100 ms",
        "join": units(&join),
        "where_am_i_admitted": units(&me),
        "queued_checkout_create_order": units(&queued_checkout),
        "joins_per_s_local": joins_per_s,
        "sold_out_seen_after_ms": told,
    }))
}
