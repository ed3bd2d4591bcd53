//! Running a sale over HTTP on the local stack (docs/operations.md): the sales switch, admission
//! rates, campaign end, the live statistics and the admin SKU view, low-stock events and the
//! correlation id. Invariants are clean at the end of each.

use crate::common::{capture_logs, eventually, problem, spawn, spawn_with, Stack};
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

fn at(offset_s: i64) -> String {
    holdfast::clock::rfc3339((holdfast::clock::now_s() + offset_s) * 1000)
}

async fn set_switch(s: &Stack, mode: &str) -> Value {
    let body = json!({"mode": mode, "reason": format!("test: {mode}")}).to_string();
    let a = s.call("PUT", "/admin/sales-switch", Some(&s.admin), &[], Some(body)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

async fn campaign(s: &Stack, id: &str, ends_in: i64, extra: Value, items: Value) {
    let mut body = json!({"name": format!("{id} sale"), "starts_at": at(-5), "ends_at": at(ends_in), "items": items});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let a = s.call("PUT", &format!("/admin/campaigns/{id}"), Some(&s.admin), &[], Some(body.to_string())).await;
    assert_eq!(a.status, 201, "create campaign: {}", a.body);
}

#[tokio::test]
async fn a_closed_switch_refuses_checkouts_at_once_while_payments_and_cancels_go_on_and_open_sells_again() {
    let stack = spawn().await;
    let s = &stack;
    s.sku("SW", 500, 20, 2, None).await;
    let pending = s.order_id("ann", "k1", json!([{"sku": "SW", "quantity": 1}])).await;
    let cancelled = s.order_id("bob", "k1", json!([{"sku": "SW", "quantity": 1}])).await;
    assert_eq!(s.get("/admin/sales-switch", Some(&s.admin)).await.body["mode"], "OPEN");

    let v = set_switch(s, "CLOSED").await;
    assert_eq!((v["mode"].as_str(), v["by"].as_str()), (Some("CLOSED"), Some("admin")), "{v}");
    let set = Instant::now();
    // each function keeps the switch at most HOLDFAST_SWITCH_CACHE_MS (1 s): the first refusal
    // comes within that; the time to bite is measured in the note, not asserted here
    let mut n = 0;
    let refused = eventually("the switch to bite", Duration::from_secs(5), || {
        n += 1;
        let key = format!("closed-{n}");
        async move {
            let a = s.order("cat", &key, json!([{"sku": "SW", "quantity": 1}])).await;
            (a.status == 503).then_some(a)
        }
    })
    .await;
    println!("switch CLOSED bit after {:?}", set.elapsed());
    problem(&refused, 503, "sales_closed");
    assert!(refused.headers.get("retry-after").is_some());
    // (a well-formed hold: the reservations function's freeze checks the switch in its own
    // transaction when its cache cannot judge, after the body is validated)
    let hold = json!({"order_id": "ext-closed", "items": [{"sku": "SW", "quantity": 1}]});
    let r = eventually("the switch to bite on holds", Duration::from_secs(5), || async {
        let r = s.post("/reservations", &s.internal, hold.clone()).await;
        (r.status == 503).then_some(r)
    })
    .await;
    problem(&r, 503, "sales_closed");
    // money and cancels are never refused; nor are other writes while merely CLOSED
    assert_eq!(s.pay(&pending, "p-sw", 500, "SUCCEEDED").await.body["result"], "applied");
    assert_eq!(s.cancel("bob", &cancelled).await.status, 200);
    let grow = s
        .post("/admin/skus/SW/adjustments", &s.admin, json!({"adjustment_id": "more", "delta": 5, "reason": "r"}))
        .await;
    assert_eq!(grow.status, 201, "{}", grow.body);

    // READ_ONLY also refuses other writes, but not the levers
    set_switch(s, "READ_ONLY").await;
    let mut n = 0;
    let refused = eventually("READ_ONLY to bite", Duration::from_secs(5), || {
        n += 1;
        let id = format!("ro-{n}");
        async move {
            let a = s
                .post("/admin/skus/SW/adjustments", &s.admin, json!({"adjustment_id": id, "delta": 1, "reason": "r"}))
                .await;
            (a.status == 503).then_some(a)
        }
    })
    .await;
    problem(&refused, 503, "sales_closed");
    assert_eq!(s.post("/admin/skus/SW/pause", &s.admin, json!({})).await.status, 200);
    assert_eq!(s.post("/admin/skus/SW/resume", &s.admin, json!({})).await.status, 200);

    set_switch(s, "OPEN").await;
    let mut n = 0;
    eventually("OPEN to sell again", Duration::from_secs(5), || {
        n += 1;
        let key = format!("open-{n}");
        async move { (s.order("dan", &key, json!([{"sku": "SW", "quantity": 1}])).await.status == 201).then_some(()) }
    })
    .await;
    // a bad mode changes nothing
    let bad = s
        .call(
            "PUT",
            "/admin/sales-switch",
            Some(&s.admin),
            &[],
            Some(json!({"mode": "SHUT", "reason": "x"}).to_string()),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    let buyer = s
        .call(
            "PUT",
            "/admin/sales-switch",
            Some(&s.user("eve")),
            &[],
            Some(json!({"mode": "CLOSED", "reason": "x"}).to_string()),
        )
        .await;
    assert_eq!(buyer.status, 403, "{}", buyer.body);
    assert_eq!(s.get("/admin/sales-switch", Some(&s.admin)).await.body["mode"], "OPEN");
    s.assert_invariants().await;
}

/// 200 buyers at once, three waves a second apart, against an admission rate of 20/s: the
/// bucket admits one second's worth at once and 20 per second after, each refusal answers 429
/// `rate_limited` with `Retry-After`, and no refused checkout touched the stock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_admission_rate_refuses_the_excess_with_rate_limited_before_any_shard_is_touched() {
    let s = spawn().await;
    // sized by the property (the bucket's bound holds at any rate): 5/s, three waves of 50
    let spec = json!({"name": "hot", "price": 100, "currency": "EUR", "shards": 4, "admission_rate": 5});
    assert_eq!(s.put_sku("HOT", spec).await.status, 201);
    s.stock("HOT", "init", 1000).await;
    let started = Instant::now();
    let mut admitted = 0usize;
    let mut refused = 0usize;
    for wave in 0..3 {
        let answers = join_all((0..50).map(|i| {
            let s = &s;
            async move { s.order(&format!("b{wave}-{i}"), "k", json!([{"sku": "HOT", "quantity": 1}])).await }
        }))
        .await;
        for a in &answers {
            match a.status {
                201 => admitted += 1,
                _ => {
                    problem(a, 429, "rate_limited");
                    assert!(a.headers.get("retry-after").is_some(), "{}", a.body);
                    refused += 1;
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let bound = 5.0 + 5.0 * elapsed;
    println!("admission: {admitted} admitted, {refused} refused in {elapsed:.2} s (bound {bound:.0})");
    assert_eq!(admitted + refused, 150);
    assert!(refused > 0, "the excess is refused");
    assert!(admitted >= 5 && (admitted as f64) <= bound + 1.0, "{admitted} admitted in {elapsed:.2} s");
    // no shard write for a refused checkout: exactly the admitted units are locked
    assert_eq!(s.exact("HOT").await, (1000 - admitted as i64, admitted as i64, 0));
    s.assert_invariants().await;
}

/// Unpaid campaign orders expire when the campaign ends plus its grace, giving stock and quota
/// back; the campaign item's own admission rate applies to its checkouts.
#[tokio::test]
async fn unpaid_campaign_orders_expire_at_the_end_plus_grace_and_give_stock_and_quota_back() {
    let s = spawn().await;
    s.sku("END", 100, 10, 1, None).await;
    campaign(&s, "ending", 3, json!({"end_grace_seconds": 2}), json!([{"sku": "END", "quota": 5, "price": 50}])).await;
    let id = s.order_id("ann", "k", json!([{"sku": "END", "quantity": 2, "campaign_id": "ending"}])).await;
    let o = s.get_order("ann", &id).await.body;
    let deadline = holdfast::clock::parse_rfc3339(o["pay_expire_at"].as_str().unwrap_or_default()).unwrap_or(0) / 1000;
    assert!(deadline <= holdfast::clock::now_s() + 5, "the deadline is the campaign's end plus grace: {o}");
    let plain = s.order_id("bob", "k", json!([{"sku": "END", "quantity": 1}])).await;
    s.order_reaches("ann", &id, "EXPIRED").await;
    s.lock_reaches(&id, "RELEASED").await;
    let c = s.get("/campaigns/ending", None).await.body;
    assert_eq!(c["end_grace_seconds"], 2);
    let stats = s.get("/admin/campaigns/ending/stats", Some(&s.admin)).await;
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert_eq!(stats.body["items"][0]["available"], 5, "the quota is back: {}", stats.body);
    // an order outside the campaign keeps the ordinary deadline
    assert_eq!(s.get_order("bob", &plain).await.body["status"], "PENDING_PAYMENT");
    assert_eq!(s.exact("END").await, (9, 1, 0));

    // a campaign item's admission rate: one checkout a second
    campaign(&s, "rated", 3600, json!({}), json!([{"sku": "END", "quota": 5, "admission_rate": 1}])).await;
    let first = s.order("cat", "k", json!([{"sku": "END", "quantity": 1, "campaign_id": "rated"}])).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let second = s.order("dan", "k", json!([{"sku": "END", "quantity": 1, "campaign_id": "rated"}])).await;
    problem(&second, 429, "rate_limited");
    assert_eq!(second.body["sku"], "END");
    s.assert_invariants().await;
}

/// The console's numbers: the exact SKU view with its shards, the campaign list, the live stats
/// (counters, refusals by reason, orders by status, checkouts per second, latency), the
/// machinery page; all admin-only.
#[tokio::test]
async fn the_admin_views_show_the_sale_moving_and_are_for_admins_only() {
    let s = spawn_with(&[("HOLDFAST_LIVE_FLUSH_MS", "200")]).await;
    s.sku("LIVE", 100, 50, 3, None).await;
    campaign(&s, "live", 3600, json!({}), json!([{"sku": "LIVE", "quota": 20, "shards": 2}])).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            s.order_id(&format!("u{i}"), "k", json!([{"sku": "LIVE", "quantity": 1, "campaign_id": "live"}])).await,
        );
    }
    assert_eq!(s.pay(&ids[0], "p-live", 100, "SUCCEEDED").await.body["result"], "applied");
    assert_eq!(s.post("/admin/campaigns/live/pause", &s.admin, json!({})).await.status, 200);
    let paused = s.order("late", "k", json!([{"sku": "LIVE", "quantity": 1, "campaign_id": "live"}])).await;
    problem(&paused, 409, "sale_paused");

    // A warm create-order flushes its counters on an invocation at least HOLDFAST_LIVE_FLUSH_MS
    // after its last flush (a Lambda has no timer): a refusal that came sooner waits for the next
    // checkout. Each poll that does not see every refusal yet makes one more refused checkout.
    let refused = std::cell::Cell::new(1u64);
    let stats = eventually("the live stats to catch up", WAIT, || async {
        let a = s.get("/admin/campaigns/live/stats", Some(&s.admin)).await;
        assert_eq!(a.status, 200, "{}", a.body);
        let b = a.body;
        let settled = b["items"][0]["locked"] == 3 && b["items"][0]["sold"] == 1;
        let refusals = b["refusals"]["sale_paused"] == refused.get();
        if !refusals {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let key = format!("k{}", refused.get() + 1);
            let again = s.order("late", &key, json!([{"sku": "LIVE", "quantity": 1, "campaign_id": "live"}])).await;
            problem(&again, 409, "sale_paused");
            refused.set(refused.get() + 1);
        }
        (b["orders"]["PAID"] == 1 && b["orders"]["PENDING_PAYMENT"] == 3 && settled && refusals).then_some(b)
    })
    .await;
    assert_eq!(stats["refusals"]["sale_paused"], refused.get(), "{stats}");
    let item = &stats["items"][0];
    assert_eq!((item["quota"].as_i64(), item["locked"].as_i64()), (Some(20), Some(3)), "{stats}");
    let per_second: i64 =
        stats["checkouts_per_second"].as_array().unwrap().iter().map(|p| p["n"].as_i64().unwrap()).sum();
    assert_eq!(per_second, 4, "{stats}");
    assert!(stats["latency_ms"]["p50"].as_u64().is_some() && stats["latency_ms"]["p99"].as_u64().is_some(), "{stats}");

    let sku = s.get("/admin/skus/LIVE", Some(&s.admin)).await;
    assert_eq!(sku.status, 200, "{}", sku.body);
    let shards = sku.body["shard_counts"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    let sum = |k: &str| shards.iter().map(|c| c[k].as_i64().unwrap()).sum::<i64>();
    assert_eq!((sum("available"), sum("locked"), sum("sold")), s.exact("LIVE").await);
    assert_eq!(sku.body["locked"].as_i64(), Some(sum("locked")));

    let list = s.get("/admin/campaigns", Some(&s.admin)).await;
    assert_eq!(list.body["campaigns"][0]["campaign_id"], "live", "{}", list.body);
    assert_eq!(list.body["campaigns"][0]["paused"], true);
    // the scheduled sweep, as the schedule invokes it: it seeds the work queue and says so
    let app = s.local.app("reconcile").expect("reconcile");
    let seeded = holdfast::handlers::schedule("reconcile", app, json!({})).await.expect("a schedule function");
    assert!(seeded.is_ok(), "{seeded:?}");
    let m = s.get("/admin/machinery", Some(&s.admin)).await;
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(m.body["queues"].as_array().map(Vec::len), Some(3), "{}", m.body);
    assert!(m.body["reconcile"]["last_sweep_at"].is_string(), "{}", m.body);
    assert_eq!(m.body["reconcile"]["violations"], 0);

    let buyer = s.user("u0");
    for path in [
        "/admin/skus/LIVE",
        "/admin/campaigns",
        "/admin/campaigns/live/stats",
        "/admin/machinery",
        "/admin/sales-switch",
    ] {
        assert_eq!(s.get(path, Some(&buyer)).await.status, 403, "{path}");
        assert_eq!(s.get(path, None).await.status, 401, "{path}");
    }
    problem(&s.get("/admin/skus/NOPE", Some(&s.admin)).await, 404, "not_found");
    problem(&s.get("/admin/campaigns/nope/stats", Some(&s.admin)).await, 404, "not_found");
    let console = s.get("/console/", None).await;
    assert_eq!(console.status, 200);
    assert!(console
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html")));
    s.assert_invariants().await;
}

/// A SKU crossing its low-stock threshold sends exactly one `LowStock`; coming back above it and
/// falling again sends the next.
#[tokio::test]
async fn a_sku_crossing_its_low_stock_threshold_sends_one_low_stock_event() {
    let s = spawn().await;
    let spec = json!({"name": "low", "price": 100, "currency": "EUR", "shards": 2, "low_stock_threshold": 5});
    assert_eq!(s.put_sku("LOW", spec).await.status, 201);
    s.stock("LOW", "init", 8).await;
    let sent = || holdfast::telemetry::snapshot().get(holdfast::telemetry::names::LOW_STOCK).copied().unwrap_or(0);
    for i in 0..3 {
        s.order_id(&format!("u{i}"), "k", json!([{"sku": "LOW", "quantity": 1}])).await;
    }
    assert_eq!(s.exact("LOW").await.0, 5);
    // 8 → 5: not below the threshold yet
    s.order_id("u3", "k", json!([{"sku": "LOW", "quantity": 1}])).await;
    eventually("one LowStock", WAIT, || async { (sent() == 1).then_some(()) }).await;
    for i in 4..7 {
        s.order_id(&format!("u{i}"), "k", json!([{"sku": "LOW", "quantity": 1}])).await;
    }
    // the journal (the same stream consumer) has seen every change: no second event came
    eventually("the journal to see every order", WAIT, || async {
        let j = s.get("/admin/skus/LOW/journal?limit=100", Some(&s.admin)).await;
        (j.body["entries"].as_array().map(Vec::len).unwrap_or(0) >= 9).then_some(())
    })
    .await;
    assert_eq!(sent(), 1, "one event per crossing");
    s.stock("LOW", "more", 10).await;
    s.order_id("u8", "k", json!([{"sku": "LOW", "quantity": 1}])).await;
    // 11 available, then down below 5 again
    for i in 9..16 {
        s.order_id(&format!("u{i}"), "k", json!([{"sku": "LOW", "quantity": 1}])).await;
    }
    eventually("the second crossing's LowStock", WAIT, || async { (sent() == 2).then_some(()) }).await;
    s.assert_invariants().await;
}

/// One correlation id from the request (`X-Request-Id`, echoed) through the order stream, the
/// bus and the stock-events queue into the log lines of every function that handled the order.
#[tokio::test]
async fn one_orders_correlation_id_reaches_the_logs_of_create_order_publish_events_and_stock_events() {
    let logs = capture_logs();
    let s = spawn().await;
    s.sku("CORR", 100, 5, 1, None).await;
    let a = s
        .call(
            "POST",
            "/orders",
            Some(&s.user("ann")),
            &[("idempotency-key", "k1"), ("x-request-id", "req-corr-0001")],
            Some(json!({"items": [{"sku": "CORR", "quantity": 1}]}).to_string()),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.headers.get("x-request-id").and_then(|v| v.to_str().ok()), Some("req-corr-0001"));
    let id = a.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(s.pay(&id, "p-corr", 100, "SUCCEEDED").await.body["result"], "applied");
    s.lock_reaches(&id, "SOLD").await;
    let functions = || {
        let mut f: Vec<String> = logs
            .text()
            .lines()
            .filter(|l| l.contains("req-corr-0001"))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["span"]["function"].as_str().map(str::to_owned))
            .collect();
        f.sort();
        f.dedup();
        f
    };
    eventually("the id in three functions' logs", WAIT, || async {
        let f = functions();
        ["create-order", "publish-events", "stock-events"].iter().all(|n| f.iter().any(|x| x == n)).then_some(())
    })
    .await;
    // a traceparent's trace id is the id when no X-Request-Id is sent
    let t = s
        .call(
            "POST",
            "/orders",
            Some(&s.user("bob")),
            &[("idempotency-key", "k1"), ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")],
            Some(json!({"items": [{"sku": "CORR", "quantity": 1}]}).to_string()),
        )
        .await;
    assert_eq!(t.headers.get("x-request-id").and_then(|v| v.to_str().ok()), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    s.assert_invariants().await;
}

/// A ring-fenced campaign of 6 over 20 units: ordinary buyers get at most 14, the campaign's
/// buyers the 6; after the end plus grace the unpaid campaign orders expire and every unsold
/// fenced unit goes back on ordinary sale. The SKU's view reads `total = available + reserved +
/// locked + sold` throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ring_fenced_quota_is_kept_from_ordinary_buyers_and_returns_when_the_campaign_ends() {
    // reconcile expires an order this long past its deadline: the test clock then passes the
    // campaign's end without waiting for the payment-timeout message
    let s = spawn_with(&[("HOLDFAST_STALE_LOCK_SECONDS", "5")]).await;
    let t0 = Instant::now();
    // sized by the property: 20 units, 6 fenced
    s.sku("RF", 100, 20, 4, None).await;
    let quota = json!([{"sku": "RF", "quota": 6, "price": 50, "reserve": true, "shards": 2}]);
    // the campaign ends on the test clock, long after the buyers below (on a loaded machine 120
    // checkouts can take a minute of real time)
    campaign(&s, "fenced", 600, json!({"end_grace_seconds": 5}), quota).await;
    async fn view(s: &Stack) -> (i64, i64, i64, i64, i64) {
        let v = s.get("/admin/skus/RF", Some(&s.admin)).await.body;
        let n = |k: &str| v[k].as_i64().unwrap_or(-1);
        assert_eq!(n("total"), n("available") + n("reserved") + n("locked") + n("sold"), "{v}");
        (n("available"), n("reserved"), n("locked"), n("sold"), n("total"))
    }
    assert_eq!(view(&s).await, (14, 6, 0, 0, 20));
    // a quota larger than what is left cannot be fenced, and nothing is written
    let bad = json!({"name": "x", "starts_at": at(-5), "ends_at": at(60),
                     "items": [{"sku": "RF", "quota": 1000, "reserve": true}]});
    let a = s.call("PUT", "/admin/campaigns/too-big", Some(&s.admin), &[], Some(bad.to_string())).await;
    problem(&a, 409, "insufficient_stock");

    let answers = join_all((0..20).map(|i| {
        let s = &s;
        async move { s.order(&format!("o{i}"), "k", json!([{"sku": "RF", "quantity": 1}])).await }
    }))
    .await;
    let ordinary = answers.iter().filter(|a| a.status == 201).count();
    assert_eq!(ordinary, 14, "ordinary buyers get what is not fenced");
    for a in answers.iter().filter(|a| a.status != 201) {
        problem(a, 409, "insufficient_stock");
    }
    let mut paid = Vec::new();
    let mut unpaid = Vec::new();
    for i in 0..4 {
        let id =
            s.order_id(&format!("c{i}"), "k", json!([{"sku": "RF", "quantity": 1, "campaign_id": "fenced"}])).await;
        if i < 2 {
            assert_eq!(s.pay(&id, &format!("p-rf-{i}"), 50, "SUCCEEDED").await.body["result"], "applied");
            paid.push(id);
        } else {
            unpaid.push((format!("c{i}"), id));
        }
    }
    for id in &paid {
        s.lock_reaches(id, "SOLD").await;
    }
    assert_eq!(view(&s).await, (0, 2, 16, 2, 20));
    println!("ring-fence: sold by {:?}", t0.elapsed());
    // the end plus grace passes: the unpaid campaign orders expire, their units go back to the
    // campaign's cell, and the sweep returns what the campaign did not sell
    crate::common::advance_clock(Duration::from_secs(610));
    s.reconcile().await;
    for (user, id) in &unpaid {
        s.order_reaches(user, id, "EXPIRED").await;
        s.lock_reaches(id, "RELEASED").await;
    }
    println!("ring-fence: expired by {:?}", t0.elapsed());
    s.reconcile().await;
    assert_eq!(view(&s).await, (4, 0, 14, 2, 20));
    let c = s.get("/campaigns/fenced", None).await.body;
    assert_eq!(c["items"][0]["reserve"], true, "{c}");
    let late = s.order("late", "k", json!([{"sku": "RF", "quantity": 1}])).await;
    assert_eq!(late.status, 201, "returned units sell again: {}", late.body);
    s.assert_invariants().await;
}

/// The sale room's inputs: malformed JSON, wrong types, out-of-range numbers, unknown fields,
/// oversize bodies, no token, a buyer's token — each a clear error that changes nothing.
#[tokio::test]
async fn the_sale_room_refuses_bad_input_and_changes_nothing() {
    let s = spawn().await;
    s.sku("BAD", 100, 10, 1, None).await;
    let put = |path: &'static str, token: Option<String>, body: String| {
        let s = &s;
        async move { s.call("PUT", path, token.as_deref(), &[], Some(body)).await }
    };
    let admin = Some(s.admin.clone());
    for (body, status) in [
        ("{".to_owned(), 400),
        (json!({"mode": 1, "reason": "x"}).to_string(), 422),
        (json!({"mode": "CLOSED"}).to_string(), 422),
        (json!({"mode": "CLOSED", "reason": ""}).to_string(), 422),
        (json!({"mode": "CLOSED", "reason": "x", "extra": 1}).to_string(), 422),
        (json!({"mode": "CLOSED", "reason": "x".repeat(20_000)}).to_string(), 413),
    ] {
        assert_eq!(put("/admin/sales-switch", admin.clone(), body.clone()).await.status, status, "{body:.80}");
    }
    assert_eq!(
        put("/admin/sales-switch", None, json!({"mode": "CLOSED", "reason": "x"}).to_string()).await.status,
        401
    );
    let buyer = Some(s.user("eve"));
    assert_eq!(
        put("/admin/sales-switch", buyer, json!({"mode": "CLOSED", "reason": "x"}).to_string()).await.status,
        403
    );
    assert_eq!(s.get("/admin/sales-switch", Some(&s.admin)).await.body["mode"], "OPEN", "nothing changed");

    let sku = |extra: Value| {
        let mut b = json!({"name": "bad", "price": 100, "currency": "EUR"});
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        b.to_string()
    };
    for extra in [
        json!({"admission_rate": 0}),
        json!({"admission_rate": 100_001}),
        json!({"admission_rate": "fast"}),
        json!({"low_stock_threshold": 0}),
        json!({"low_stock_threshold": -5}),
    ] {
        let a = put("/admin/skus/BAD", admin.clone(), sku(extra.clone())).await;
        problem(&a, 422, "validation_failed");
    }
    let v = s.get("/admin/skus/BAD", Some(&s.admin)).await.body;
    assert!(v.get("admission_rate").is_none() && v.get("low_stock_threshold").is_none(), "{v}");

    let campaign = |extra: Value, item: Value| {
        let mut b = json!({"name": "x", "starts_at": at(-5), "ends_at": at(60),
                           "items": [{"sku": "BAD", "quota": 2}]});
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        b["items"][0].as_object_mut().unwrap().extend(item.as_object().unwrap().clone());
        b.to_string()
    };
    for (extra, item) in [
        (json!({"end_grace_seconds": -1}), json!({})),
        (json!({"end_grace_seconds": 86_401}), json!({})),
        (json!({}), json!({"admission_rate": 0})),
        (json!({}), json!({"reserve": "yes"})),
    ] {
        let a = put("/admin/campaigns/bad-one", admin.clone(), campaign(extra, item)).await;
        problem(&a, 422, "validation_failed");
    }
    assert_eq!(s.get("/campaigns/bad-one", None).await.status, 404, "no campaign was written");
    assert_eq!(s.exact("BAD").await, (10, 0, 0), "no unit moved");
    s.assert_invariants().await;
}
