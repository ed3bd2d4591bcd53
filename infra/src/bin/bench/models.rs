//! The inventory model sections: each model's freeze and order cost, code pools and supplier SKUs.

use super::*;

/// The hot-SKU ceiling model: each freeze writes its shard item in a transaction (2 write units
/// per KB-item) on that shard's partition (≤ 1,000 WCU/s), and its frozen-by-age entry on one of
/// 64 index buckets, written once and removed once (1 WCU each).
/// Inventory models (docs/inventory-models.md): the DynamoDB writes of placing one order under
/// each model — the freeze transaction, the order put and their index entries, measured by the
/// adapters' meter with the stock journal paused and nothing else due (payment deadline and
/// orphan check far away) — then the paid lifecycle of a pay-time SKU.
pub(crate) async fn models_section(endpoint: &str, n: usize) -> anyhow::Result<Value> {
    let mut o = Options::new(endpoint, PathBuf::from("template.yaml"));
    o.paused = vec!["stock-journal".into()];
    let stack = LocalStack::start(o).await?;
    let admin = stack.token("admin", &["stock:admin"]);
    let api = ApiClient::new(&stack.base_url);
    let b = Bench { stack, api, admin };
    let put = |sku: &'static str, model: Value, bundle: Option<Value>| {
        let mut spec = json!({"name": sku, "price": 1000, "currency": "EUR", "shards": 1, "model": model});
        if let Some(x) = bundle {
            spec["bundle"] = x;
        }
        (sku, spec)
    };
    let day = |d: i64| holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s() + d * 86_400).to_string();
    let nights = json!([day(5), day(6), day(7)]);
    for (sku, spec) in [
        put("SINGLE", json!({}), None),
        put("CHILD1", json!({}), None),
        put("CHILD2", json!({}), None),
        put(
            "KIT",
            json!({"unit": "BUNDLE"}),
            Some(json!([{"sku": "CHILD1", "quantity": 2}, {"sku": "CHILD2", "quantity": 1}])),
        ),
        put("NIGHT", json!({"unit": "CALENDAR"}), None),
        put("TOPUP", json!({"management": "UNLIMITED"}), None),
        put("PAYTIME", json!({"deduct": "AT_PAYMENT"}), None),
    ] {
        b.call("PUT", &format!("/admin/skus/{sku}"), Some(&b.admin), &[], Some(spec)).await;
    }
    for sku in ["SINGLE", "CHILD1", "CHILD2", "PAYTIME"] {
        let body = json!({"adjustment_id": "init", "delta": 1_000_000, "reason": "bench"});
        b.call("POST", &format!("/admin/skus/{sku}/adjustments"), Some(&b.admin), &[], Some(body)).await;
    }
    let body = json!({"adjustment_id": "init", "delta": 1_000_000, "reason": "bench", "dates": nights});
    b.call("POST", "/admin/skus/NIGHT/adjustments", Some(&b.admin), &[], Some(body)).await;
    let mut out = serde_json::Map::new();
    for (name, line) in [
        ("quantity_single", json!({"sku": "SINGLE", "quantity": 1})),
        ("bundle_of_two_children", json!({"sku": "KIT", "quantity": 1})),
        ("calendar_three_nights", json!({"sku": "NIGHT", "quantity": 1, "dates": nights})),
        ("unlimited", json!({"sku": "TOPUP", "quantity": 1})),
        ("at_payment_order", json!({"sku": "PAYTIME", "quantity": 1})),
    ] {
        eprintln!("bench models: {name} …");
        // warm create-order's SKU cache, as a warm Lambda has it
        b.order_items(&format!("warm-{name}"), "k", json!([line])).await;
        // (the orders' reservation checks and payment deadlines are minutes away: nothing else runs)
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let before = usage::snapshot();
        for i in 0..n {
            let (st, body) = b.order_items(&format!("{name}-{i}"), "k", json!([line])).await;
            anyhow::ensure!(st == 201, "{name}: {st} {body}");
        }
        let u = delta(&before, &usage::snapshot());
        out.insert(name.into(), usage_json(&u, n as f64));
    }
    // the pay-time stock moves when paid: one more conditional write in the confirm
    let ids: Vec<String> = b
        .stack
        .snapshot()
        .await?
        .orders
        .iter()
        .filter(|(_, r)| matches!(r, holdfast::domain::order::OrderRecord::Order(o) if o.lines[0].sku.as_str() == "PAYTIME" && !o.user.as_str().starts_with("warm")))
        .map(|(id, _)| id.to_string())
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    for id in &ids {
        b.pay(id, 1000).await;
    }
    // the confirm runs off the stream: wait until every pay-time lock is sold
    for _ in 0..60 {
        let snap = b.stack.snapshot().await?;
        if snap
            .reservations
            .iter()
            .filter(|r| ids.iter().any(|i| i == r.id.as_str()))
            .all(|r| r.status.as_str() == "SOLD")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let u = delta(&before, &usage::snapshot());
    out.insert("at_payment_pay_and_confirm".into(), usage_json(&u, ids.len() as f64));
    out.insert("code_pool".into(), code_pool_costs(&b, n).await?);
    out.insert("at_shipment".into(), at_shipment_costs(&b, n).await?);
    out.insert("warehouse".into(), kinds::warehouse_costs(&b, n).await?);
    out.insert("backorder".into(), kinds::backorder_costs(&b, n).await?);
    out.insert("supplier_codes".into(), kinds::supplier_code_costs(&b, n).await?);
    let shards: Vec<(u32, f64)> = [1, 4, 16, 64].iter().map(|s| (*s, ceiling(*s))).collect();
    out.insert(
        "hot_calendar_date_ceiling_model".into(),
        json!({"per_date_freezes_s_by_shards": shards,
               "note": "a date is a cell with its own shards: bookings/s through one hot night = the hot-SKU ceiling at the calendar SKU's shard count; a booking of k nights writes k cells in one transaction, so it is bounded by its hottest night"}),
    );
    b.stack.shutdown().await;
    Ok(Value::Object(out))
}

/// Code pools (docs/code-pools.md): write units of uploading codes, of placing an order that
/// takes one code (claim + freeze) and of paying it (confirm), measured by the adapters' meter;
/// and the claims per second one pool sustains in the ceiling model.
pub(crate) async fn code_pool_costs(b: &Bench, n: usize) -> anyhow::Result<Value> {
    let spec =
        json!({"name": "codes", "price": 1000, "currency": "EUR", "shards": 1, "model": {"management": "CODE_POOL"}});
    b.call("PUT", "/admin/skus/CODES", Some(&b.admin), &[], Some(spec)).await;
    let codes: Vec<String> = (0..(n + 1) * 2).map(|i| format!("BENCH-CODE-{i:06}")).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    let (st, body) = b
        .call("POST", "/admin/skus/CODES/codes", Some(&b.admin), &[], Some(json!({"batch_id": "b", "codes": codes})))
        .await;
    anyhow::ensure!(st == 201, "upload: {st} {body}");
    let upload = usage_json(&delta(&before, &usage::snapshot()), codes.len() as f64);
    let line = json!({"sku": "CODES", "quantity": 1});
    b.order_items("warm-codes", "k", json!([line])).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    let mut ids = Vec::new();
    for i in 0..n {
        let (st, body) = b.order_items(&format!("codes-{i}"), "k", json!([line])).await;
        anyhow::ensure!(st == 201, "code order: {st} {body}");
        ids.push(body["order_id"].as_str().unwrap_or_default().to_owned());
    }
    let order = usage_json(&delta(&before, &usage::snapshot()), n as f64);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    for id in &ids {
        b.pay(id, 1000).await;
    }
    for _ in 0..60 {
        let snap = b.stack.snapshot().await?;
        let sold = snap.reservations.iter().filter(|r| ids.iter().any(|i| i == r.id.as_str()));
        if sold.clone().count() == ids.len() && sold.into_iter().all(|r| r.status.as_str() == "SOLD") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pay = usage_json(&delta(&before, &usage::snapshot()), ids.len() as f64);
    let ceil: Vec<(u32, f64)> = [1, 4, 16, 64].iter().map(|s| (*s, code_ceiling(*s))).collect();
    Ok(json!({
        "upload_per_code": upload,
        "order_of_one_code": order,
        "pay_and_confirm_of_one_code": pay,
        "claims_s_by_shards_ceiling_model": ceil,
        "note": "a code handed out writes its shard twice on the shard's partition: the claim (UpdateItem, 1 WCU) and the freeze transaction (2 WCU); the code's own slot is its own item. One shard partition (1,000 WCU/s) so sustains ~333 claims/s; shards add up until the frozen-by-age index (64 buckets) binds",
    }))
}

/// Deduction at shipment (docs/inventory-models.md, "Deduction at shipment"): the write units of
/// placing an order (a freeze, as for `QUANTITY`), of paying it (the confirm leaves the lock held:
/// no stock write) and of shipping it (the take — one transaction like a confirm — then the
/// order's compare-and-set), measured by the adapters' meter.
pub(crate) async fn at_shipment_costs(b: &Bench, n: usize) -> anyhow::Result<Value> {
    let spec =
        json!({"name": "ships", "price": 1000, "currency": "EUR", "shards": 1, "model": {"deduct": "AT_SHIPMENT"}});
    b.call("PUT", "/admin/skus/SHIPS", Some(&b.admin), &[], Some(spec)).await;
    let body = json!({"adjustment_id": "init", "delta": 1_000_000, "reason": "bench"});
    b.call("POST", "/admin/skus/SHIPS/adjustments", Some(&b.admin), &[], Some(body)).await;
    let line = json!({"sku": "SHIPS", "quantity": 1});
    b.order_items("warm-ships", "k", json!([line])).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    let mut ids = Vec::new();
    for i in 0..n {
        let (st, body) = b.order_items(&format!("ships-{i}"), "k", json!([line])).await;
        anyhow::ensure!(st == 201, "at-shipment order: {st} {body}");
        ids.push(body["order_id"].as_str().unwrap_or_default().to_owned());
    }
    let order = usage_json(&delta(&before, &usage::snapshot()), n as f64);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = usage::snapshot();
    for id in &ids {
        b.pay(id, 1000).await;
    }
    // the confirm runs off the stream and writes nothing: let it run
    tokio::time::sleep(Duration::from_millis(4000)).await;
    let pay = usage_json(&delta(&before, &usage::snapshot()), ids.len() as f64);
    let before = usage::snapshot();
    for id in &ids {
        let body = json!({"carrier": "DHL", "tracking_number": format!("T-{id}")});
        let (st, a) = b.call("POST", &format!("/admin/orders/{id}/ship"), Some(&b.admin), &[], Some(body)).await;
        anyhow::ensure!(st == 200, "ship: {st} {a}");
    }
    let ship = usage_json(&delta(&before, &usage::snapshot()), ids.len() as f64);
    let snap = b.stack.snapshot().await?;
    let sold = snap.reservations.iter().filter(|r| ids.iter().any(|i| i == r.id.as_str()));
    anyhow::ensure!(
        sold.clone().count() == n && sold.into_iter().all(|r| r.status.as_str() == "SOLD"),
        "not all taken"
    );
    Ok(json!({
        "order": order,
        "pay_and_confirm": pay,
        "ship": ship,
        "note": "the order freezes as a QUANTITY order does; the payment's confirm leaves the lock FROZEN (no stock write); the shipment's take is one transaction (lock, shard, pending-free) before the order's compare-and-set",
    }))
}

/// Claims/s a code pool sustains with `shards` shards (see [`code_pool_costs`]).
pub(crate) fn code_ceiling(shards: u32) -> f64 {
    let per_shard = 1000.0 / 3.0;
    let index = f64::from(holdfast::adapters::dynamo::INDEX_BUCKETS) * 1000.0 / 2.0;
    (per_shard * f64::from(shards)).min(index)
}

/// SUPPLIER orders (docs/suppliers.md): what polling a booking costs — SQS messages sent,
/// DynamoDB read/write units, supplier calls — from the checkout to the decision, per booking
/// (one line per order), for a supplier confirming after 2 s, after 60 s, and one that never
/// answers (timed out at `timeout_s`). The figures at the production timeout (1800 s) are
/// computed from the measured per-poll cost and the polling schedule.
pub(crate) async fn supplier_section(endpoint: &str, n: usize, timeout_s: i64) -> anyhow::Result<Value> {
    use holdfast::domain::order::{OrderRecord, OrderStatus};
    let t = timeout_s.to_string();
    let mut o = Options::new(endpoint, PathBuf::from("template.yaml"));
    o.paused = vec!["stock-journal".into()];
    o.env.insert("HOLDFAST_SUPPLIER_TIMEOUT_SECONDS".into(), t);
    let stack = LocalStack::start(o).await?;
    let admin = stack.token("admin", &["stock:admin"]);
    let api = ApiClient::new(&stack.base_url);
    let b = Bench { stack, api, admin };
    let ddb = aws_sdk_dynamodb::Client::new(&b.stack.sdk);
    let table = b.stack.resources.table("OrderTable")?.to_owned();
    let mut out = serde_json::Map::new();
    for (name, settings, want) in [
        ("confirm_after_2s", json!({"confirm_after_seconds": 2}), OrderStatus::PendingPayment),
        ("confirm_after_60s", json!({"confirm_after_seconds": 60}), OrderStatus::PendingPayment),
        ("silent_timeout", json!({"outcome": "silent"}), OrderStatus::Failed),
    ] {
        eprintln!("bench supplier: {name} …");
        let sku = name.replace('_', "-").to_uppercase();
        let mut supplier = json!({"adapter": "simulated"});
        for (k, v) in settings.as_object().into_iter().flatten() {
            supplier[k] = v.clone();
        }
        let spec = json!({"name": sku, "price": 1000, "currency": "EUR",
                          "model": {"management": "SUPPLIER"}, "supplier": supplier});
        b.call("PUT", &format!("/admin/skus/{sku}"), Some(&b.admin), &[], Some(spec)).await;
        // warm create-order's SKU cache and the quote cache, as a warm Lambda has them
        // (then cancelled, its compensation done, so its polls stop before the measurement)
        let warm_user = format!("warm-{name}");
        let (_, warm) = b.order_items(&warm_user, "k", json!([{"sku": sku, "quantity": 1}])).await;
        let warm_id = warm["order_id"].as_str().unwrap_or_default().to_owned();
        let t = b.stack.user_token(&warm_user);
        b.call("POST", &format!("/orders/{warm_id}/cancel"), Some(&t), &[], None).await;
        tokio::time::sleep(Duration::from_millis(5000)).await;
        let before = usage::snapshot();
        let mut ids = Vec::new();
        for i in 0..n {
            let (st, body) = b.order_items(&format!("{name}-{i}"), "k", json!([{"sku": sku, "quantity": 1}])).await;
            anyhow::ensure!(st == 201, "{name}: {st} {body}");
            ids.push(body["order_id"].as_str().unwrap_or_default().to_owned());
        }
        let checkout = delta(&before, &usage::snapshot());
        let started = Instant::now();
        loop {
            let orders = holdfast::adapters::dynamo::orders::dump(&ddb, &table).await?;
            let done = ids.iter().all(|id| {
                orders
                    .iter()
                    .any(|(oid, r)| oid.as_str() == id && matches!(r, OrderRecord::Order(o) if o.status == want))
            });
            if done {
                break;
            }
            anyhow::ensure!(started.elapsed() < Duration::from_secs(timeout_s as u64 + 120), "{name}: not decided");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // the decision's own writes, its events and (failed orders) the compensation
        tokio::time::sleep(Duration::from_millis(3000)).await;
        let all = delta(&before, &usage::snapshot());
        let polling = delta(&checkout, &all);
        let bookings = b.stack.supplier.bookings();
        let mine: Vec<_> = bookings.iter().filter(|x| ids.iter().any(|id| x.key.starts_with(id.as_str()))).collect();
        let status_calls: u32 = mine.iter().map(|x| x.status_calls).sum();
        let per = n as f64;
        out.insert(
            name.into(),
            json!({
                "bookings": n,
                "decided_after_s": started.elapsed().as_secs_f64(),
                "polls_per_booking": f64::from(status_calls) / per,
                "checkout": usage_json(&checkout, per),
                "polling_to_decision": usage_json(&polling, per),
                "whole": usage_json(&all, per),
            }),
        );
    }
    // the production timeout, computed: the silent case's measured whole (checkout, polls,
    // failure, compensation) with its polls brought to the schedule's count at 1800 s, at the
    // per-poll cost measured in the 60 s case (a poll that learns nothing writes nothing)
    let (silent, slow) = (&out["silent_timeout"], &out["confirm_after_60s"]);
    let num = |v: &Value| v.as_f64().unwrap_or(0.0);
    let slow_polls = num(&slow["polls_per_booking"]).max(1.0);
    let per_poll_reads = num(&slow["polling_to_decision"]["read_units"]) / slow_polls;
    let per_poll_sends = num(&slow["polling_to_decision"]["per_unit_calls"]["sqs:SendMessage"]) / slow_polls;
    let at_1800 = f64::from(holdfast::domain::supplier::polls_until(1800));
    let extra = at_1800 - num(&silent["polls_per_booking"]);
    out.insert(
        "timeout_1800s_computed".into(),
        json!({
            "polls_per_booking": at_1800,
            "sqs_messages_sent_per_booking": num(&silent["whole"]["per_unit_calls"]["sqs:SendMessage"]) + extra * per_poll_sends,
            "rule_target_deliveries_per_booking": num(&silent["whole"]["per_unit_calls"]["sqs:SendMessage(rule target)"]),
            "read_units_per_booking": num(&silent["whole"]["read_units"]) + extra * per_poll_reads,
            "write_units_per_booking": num(&silent["whole"]["write_units"]),
            "per_poll": {"read_units": per_poll_reads, "sqs_messages_sent": per_poll_sends, "write_units": 0.0},
            "note": "silent_timeout's measured whole, its polls brought to polls_until(1800) = 45 at the per-poll cost measured in confirm_after_60s",
        }),
    );
    out.insert("supplier_timeout_s".into(), json!(timeout_s));
    b.stack.shutdown().await;
    Ok(Value::Object(out))
}
