//! The order lifecycle sections: paid and refused orders, after-sale, round trips, false sold-outs and public reads.

use super::*;

pub(crate) async fn paid_lifecycles(endpoint: &str, n: usize) -> anyhow::Result<Value> {
    paid_lifecycles_of(endpoint, n, false, "5").await
}

/// `n` paid lifecycles of one unit, each line drawn on a campaign's quota when `campaign`, with
/// the pending-checkout cap `max_pending` ("0" = off).
pub(crate) async fn paid_lifecycles_of(
    endpoint: &str,
    n: usize,
    campaign: bool,
    max_pending: &str,
) -> anyhow::Result<Value> {
    let b = Bench::start(
        endpoint,
        &[
            ("HOLDFAST_PAYMENT_TTL_SECONDS", "3"),
            ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "1"),
            ("HOLDFAST_MAX_PENDING_PER_USER", max_pending),
        ],
    )
    .await?;
    b.sku("COST", 1_000_000, 1).await;
    let (line, amount) = if campaign {
        let now = holdfast::clock::now_s();
        let spec = json!({"name": "bench", "starts_at": holdfast::clock::rfc3339((now - 5) * 1000),
            "ends_at": holdfast::clock::rfc3339((now + 3600) * 1000),
            "items": [{"sku": "COST", "quota": 1_000_000, "price": 900, "per_user_limit": 5}]});
        b.call("PUT", "/admin/campaigns/BENCH", Some(&b.admin), &[], Some(spec)).await;
        (json!([{"sku": "COST", "quantity": 1, "campaign_id": "BENCH"}]), 900)
    } else {
        (json!([{"sku": "COST", "quantity": 1}]), 1000)
    };
    // warm the SKU cache of create-order, as a warm Lambda has it
    let (_, o) = b.order_items("warm", "warm", line.clone()).await;
    b.pay(o["order_id"].as_str().unwrap_or_default(), amount).await;
    b.drain(Duration::from_secs(4)).await;
    let before = usage::snapshot();
    let emf_before = holdfast::telemetry::emitted_lines();
    for chunk in (0..n).collect::<Vec<_>>().chunks(8) {
        join_all(chunk.iter().map(|i| {
            let b = &b;
            let line = line.clone();
            async move {
                let (st, o) = b.order_items(&format!("u{i}"), "k", line).await;
                if st == 201 {
                    b.pay(o["order_id"].as_str().unwrap_or_default(), amount).await;
                }
            }
        }))
        .await;
    }
    b.drain(Duration::from_secs(5)).await;
    let u = delta(&before, &usage::snapshot());
    let emf = emf_json(&emf_before, &holdfast::telemetry::emitted_lines(), n as f64);
    let snap = b.stack.snapshot().await?;
    let sold = snap.reservations.iter().filter(|r| r.status.as_str() == "SOLD").count();
    b.stack.shutdown().await;
    Ok(json!({"lifecycles": n, "paid_and_sold": sold - 1, "usage": usage_json(&u, n as f64), "emf": emf}))
}

/// After the money (docs/after-sale.md): `n` paid orders refunded by their buyers, each through
/// the whole flow (REFUNDING, restock, refund issued at the simulated provider, its webhook,
/// REFUNDED), and what the stock journal costs.
/// With `journal` false the stock-journal function is not run: the difference is what the journal
/// costs, all of it off the request path.
pub(crate) async fn after_sale_section(endpoint: &str, n: usize, journal: bool) -> anyhow::Result<Value> {
    let mut o = Options::new(endpoint, PathBuf::from("template.yaml"));
    o.env.insert("HOLDFAST_SIM_PROVIDER_DELAY_MS".into(), "50".into());
    // payment timeouts and orphan checks due within the drain, as in the paid-order run
    o.env.insert("HOLDFAST_PAYMENT_TTL_SECONDS".into(), "3".into());
    o.env.insert("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS".into(), "1".into());
    if !journal {
        o.paused = vec!["stock-journal".into()];
    }
    let stack = LocalStack::start(o).await?;
    let admin = stack.token("admin", &["stock:admin"]);
    let api = ApiClient::new(&stack.base_url);
    let b = Bench { stack, api, admin };
    b.sku("COST", 1_000_000, 1).await;
    let line = json!([{"sku": "COST", "quantity": 1}]);
    let (_, o) = b.order_items("warm", "warm", line.clone()).await;
    b.pay(o["order_id"].as_str().unwrap_or_default(), 1000).await;
    b.drain(Duration::from_secs(3)).await;
    // paid orders, measured: everything they cost, the journal's stream writes included
    let before_paid = usage::snapshot();
    let mut ids = Vec::new();
    for i in 0..n {
        let (st, o) = b.order_items(&format!("u{i}"), "k", line.clone()).await;
        if st == 201 {
            let id = o["order_id"].as_str().unwrap_or_default().to_owned();
            b.pay(&id, 1000).await;
            ids.push((format!("u{i}"), id));
        }
    }
    b.drain(Duration::from_secs(4)).await;
    let paid = delta(&before_paid, &usage::snapshot());
    // refunds before shipping, measured from the request to REFUNDED
    let before = usage::snapshot();
    for (user, id) in &ids {
        let t = b.stack.user_token(user);
        b.call("POST", &format!("/orders/{id}/refund"), Some(&t), &[], Some(json!({"reason": "bench"}))).await;
    }
    b.drain(Duration::from_secs(4)).await;
    let refunded = delta(&before, &usage::snapshot());
    let snap = b.stack.snapshot().await?;
    let done = snap
        .orders
        .iter()
        .filter(|(_, r)| matches!(r, holdfast::domain::order::OrderRecord::Order(o) if o.status.as_str() == "REFUNDED"))
        .count();
    let restocked = snap.reservations.iter().filter(|r| r.status.as_str() == "RESTOCKED").count();
    let at_provider = b.stack.provider.refunds().len();
    // journal entries of the run, read back through the admin route (outside the measured windows)
    let mut entries = 0usize;
    let mut cursor: Option<String> = None;
    loop {
        let q = cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let (_, page) =
            b.call("GET", &format!("/admin/skus/COST/journal?limit=100{q}"), Some(&b.admin), &[], None).await;
        entries += page["entries"].as_array().map_or(0, Vec::len);
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    b.stack.shutdown().await;
    let journal_writes = |u: &Usage| u.calls.get("dynamodb:BatchWriteItem").copied().unwrap_or(0);
    Ok(json!({
        "orders": ids.len(),
        "refunded": done,
        "restocked": restocked,
        "refunds_at_provider": at_provider,
        "journal_entries_total": entries,
        "paid_order": usage_json(&paid, ids.len() as f64),
        "refund_before_shipping": usage_json(&refunded, ids.len() as f64),
        "journal_batch_writes": {"paid_window": journal_writes(&paid), "refund_window": journal_writes(&refunded)},
    }))
}

pub(crate) async fn refused(endpoint: &str, n: usize, fast_path: bool) -> anyhow::Result<Value> {
    let cache = if fast_path { "1000" } else { "0" };
    let b = Bench::start(
        endpoint,
        &[
            ("HOLDFAST_SOLDOUT_CACHE_MS", cache),
            ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "1"),
            ("HOLDFAST_PAYMENT_TTL_SECONDS", "3"),
        ],
    )
    .await?;
    b.sku("GONE", 1, 8).await;
    b.order("first", "k", "GONE", 1).await;
    b.drain(Duration::from_secs(2)).await;
    let before = usage::snapshot();
    let emf_before = holdfast::telemetry::emitted_lines();
    let mut refusals = 0;
    for i in 0..n {
        let (st, body) = b.order(&format!("late-{i}"), "k", "GONE", 1).await;
        refusals += usize::from(st == 409 && body["code"] == "insufficient_stock");
    }
    b.drain(Duration::from_secs(2)).await;
    let u = delta(&before, &usage::snapshot());
    let emf = emf_json(&emf_before, &holdfast::telemetry::emitted_lines(), n as f64);
    b.stack.shutdown().await;
    Ok(
        json!({"requests": n, "refused": refusals, "fast_path": fast_path, "usage": usage_json(&u, n as f64), "emf": emf}),
    )
}

/// Refused checkouts of a drop (a live campaign): `sold_out`, its one-unit quota sold (and
/// paid) before `n` late buyers each ask for it; else `not admitted`, a queued drop's checkout
/// without an admission token. Priced all-in per refused request, with the deployed defaults
/// (the sold-out fast path on).
pub(crate) async fn refused_drop(endpoint: &str, n: usize, sold_out: bool) -> anyhow::Result<Value> {
    let b = Bench::start(
        endpoint,
        &[("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "1"), ("HOLDFAST_PAYMENT_TTL_SECONDS", "3")],
    )
    .await?;
    b.sku("DROP", 1_000, 1).await;
    let now = holdfast::clock::now_s();
    let mut spec = json!({"name": "drop", "starts_at": holdfast::clock::rfc3339((now - 5) * 1000),
        "ends_at": holdfast::clock::rfc3339((now + 3600) * 1000),
        "items": [{"sku": "DROP", "quota": if sold_out { 1 } else { 1_000 }, "price": 900, "per_user_limit": 1}]});
    if !sold_out {
        spec["queue"] = json!({"rate": 10, "token_ttl_seconds": 120});
    }
    let (st, body) = b.call("PUT", "/admin/campaigns/DROP", Some(&b.admin), &[], Some(spec)).await;
    anyhow::ensure!(st < 300, "campaign not set: {st} {body}");
    let line = json!([{"sku": "DROP", "quantity": 1, "campaign_id": "DROP"}]);
    if sold_out {
        let (_, o) = b.order_items("first", "k", line.clone()).await;
        b.pay(o["order_id"].as_str().unwrap_or_default(), 900).await;
    }
    // one refusal before measuring: the warm Lambda's caches (SKU, campaign, sold-out mark)
    b.order_items("warm", "k", line.clone()).await;
    b.drain(Duration::from_secs(2)).await;
    let before = usage::snapshot();
    let emf_before = holdfast::telemetry::emitted_lines();
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..n {
        let (st, body) = b.order_items(&format!("late-{i}"), "k", line.clone()).await;
        *answers.entry(format!("{st} {}", body["code"].as_str().unwrap_or("-"))).or_default() += 1;
    }
    b.drain(Duration::from_secs(2)).await;
    let u = delta(&before, &usage::snapshot());
    let emf = emf_json(&emf_before, &holdfast::telemetry::emitted_lines(), n as f64);
    b.stack.shutdown().await;
    Ok(json!({"requests": n, "answers": answers, "usage": usage_json(&u, n as f64), "emf": emf}))
}

/// Sequential AWS round trips of one create-order, measured from the request trace: requests
/// whose lifetimes overlap ran in parallel and count as one round trip.
pub(crate) async fn round_trips(endpoint: &str) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[]).await?;
    b.sku("RT", 100, 1).await;
    b.sku("SHORT", 0, 8).await;
    b.call(
        "PUT",
        "/admin/skus/SHORT",
        Some(&b.admin),
        &[],
        Some(json!({"name": "SHORT", "price": 1000, "currency": "EUR", "shards": 8})),
    )
    .await;
    // one unit on each of 8 shards: a 3-unit line fits on no single shard
    b.call(
        "POST",
        "/admin/skus/SHORT/adjustments",
        Some(&b.admin),
        &[],
        Some(json!({"adjustment_id": "a", "delta": 8, "reason": "bench"})),
    )
    .await;
    b.order("warm", "warm", "RT", 1).await; // warm caches
    b.order("warm", "warm2", "SHORT", 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut out = serde_json::Map::new();
    // the first 1.5 s after the warm-up (past the 1 s sales-switch cache), the next at once
    for (label, sku, q) in
        [("create_order", "RT", 1), ("create_order_switch_cached", "RT", 1), ("create_order_shard_short", "SHORT", 3)]
    {
        usage::trace_start();
        let (st, _) = b.order("rt", label, sku, q).await;
        let rounds: Vec<Vec<String>> = usage::trace_rounds()
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .filter(|op| {
                        !op.starts_with("lambda:")
                            && !op.starts_with("apigateway:")
                            && !op.contains("rule target")
                            && op != "sqs:ReceiveMessage"
                            && op != "sqs:DeleteMessageBatch"
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|r| !r.is_empty())
            .collect();
        out.insert(label.into(), json!({"status": st, "round_trips": rounds.len(), "rounds": rounds}));
    }
    b.stack.shutdown().await;
    Ok(Value::Object(out))
}

/// A sharded run with uneven demand: a refusal is false if the SKU still had the units.
pub(crate) async fn false_sold_out(endpoint: &str) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[]).await?;
    b.sku("HOT", 160, 8).await;
    let internal = b.stack.token("bench", &["reservations:write"]);
    let results = join_all((0..300).map(|i| {
        let (b, internal) = (&b, &internal);
        async move {
            let q = 1 + i % 3;
            let (st, _) = b
                .call(
                    "POST",
                    "/reservations",
                    Some(internal),
                    &[],
                    Some(json!({"order_id": format!("h{i}"), "items": [{"sku": "HOT", "quantity": q}]})),
                )
                .await;
            (q, st)
        }
    }))
    .await;
    let granted: u32 = results.iter().filter(|(_, st)| *st == 201).map(|(q, _)| q).sum();
    let (_, v) = b.call("GET", "/skus/HOT", None, &[], None).await;
    let left = v["available"].as_i64().unwrap_or(-1);
    let smallest_refused =
        results.iter().filter(|(_, st)| *st == 409).map(|(q, _)| i64::from(*q)).min().unwrap_or(i64::MAX);
    b.stack.shutdown().await;
    Ok(json!({"requests": 300, "units": 160, "shards": 8, "granted_units": granted, "left": left,
              "false_sold_outs": u32::from(left >= smallest_refused), "identity_holds": i64::from(granted) + left == 160}))
}

/// Public reads of one hot SKU (4 shards) and one campaign at a steady rate: read units per 100
/// reads, with the per-warm-Lambda cache (`HOLDFAST_PUBLIC_CACHE_MS`, default 1 s) on.
pub(crate) async fn public_reads(endpoint: &str, per_second: usize, seconds: usize) -> anyhow::Result<Value> {
    public_reads_with(endpoint, per_second, seconds, &[]).await
}

/// [`public_reads`] with the stack's environment overridden (e.g. `HOLDFAST_PUBLIC_CACHE_MS`).
pub(crate) async fn public_reads_with(
    endpoint: &str,
    per_second: usize,
    seconds: usize,
    env: &[(&str, &str)],
) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, env).await?;
    b.sku("HOTREAD", 1_000, 4).await;
    let now = holdfast::clock::now_s();
    let spec = json!({"name": "reads", "starts_at": holdfast::clock::rfc3339((now - 5) * 1000),
        "ends_at": holdfast::clock::rfc3339((now + 3600) * 1000), "items": [{"sku": "HOTREAD", "quota": 100, "shards": 4}]});
    b.call("PUT", "/admin/campaigns/READS", Some(&b.admin), &[], Some(spec)).await;
    let mut out = serde_json::Map::new();
    for (label, path) in [
        ("sku_view", "/skus/HOTREAD"),
        ("campaign_view", "/campaigns/READS"),
        ("availability", "/skus/HOTREAD/availability?quantity=1&campaign_id=READS"),
    ] {
        let before = usage::snapshot();
        let start = Instant::now();
        let mut ok = 0usize;
        // spread evenly: 20 waves a second, like buyers' pages polling on their own clocks
        let waves = seconds * 20;
        let per_wave = per_second / 20;
        for _ in 0..waves {
            let tick = Instant::now();
            let answers = join_all((0..per_wave).map(|_| b.call("GET", path, None, &[], None))).await;
            ok += answers.iter().filter(|(st, _)| *st == 200).count();
            if let Some(rest) = Duration::from_millis(50).checked_sub(tick.elapsed()) {
                tokio::time::sleep(rest).await;
            }
        }
        let u = delta(&before, &usage::snapshot());
        let reads = (per_wave * waves) as f64;
        out.insert(
            label.into(),
            json!({"reads": reads, "ok": ok, "seconds": start.elapsed().as_secs_f64(),
                   "read_units": u.read_units, "read_units_per_100_reads": u.read_units * 100.0 / reads}),
        );
    }
    b.stack.shutdown().await;
    Ok(Value::Object(out))
}
