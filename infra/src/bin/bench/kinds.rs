//! The seeds' last kinds of stock (docs/inventory-models.md): what warehouses, backorders and
//! supplier-issued codes write, per order, measured by the adapters' meter on the models
//! section's stack (stock journal paused). Only the writes of the step measured are in each
//! window: a restock that has to happen between two measured orders happens outside it, and its
//! own asynchronous work has settled first.

use super::*;

/// How long the stack is given to finish what a measured step set going (the other model
/// sections give it the same).
const SETTLE: Duration = Duration::from_millis(1500);

/// A usage window around `f`: what the meter counted while it ran, plus what its asynchronous
/// effects (stream, bus, queues) write in the [`SETTLE`] after it. (`Bench::drain` cannot be
/// used here: every order's payment-timeout message stays delayed in its queue for minutes.)
async fn window<F: std::future::Future<Output = anyhow::Result<()>>>(f: F) -> anyhow::Result<Usage> {
    let before = usage::snapshot();
    f.await?;
    tokio::time::sleep(SETTLE).await;
    Ok(delta(&before, &usage::snapshot()))
}

/// Adds the window `u` to the running total `to` (the split orders' windows, restocks left out).
fn add(to: &mut Usage, u: &Usage) {
    for (k, v) in &u.calls {
        *to.calls.entry(k.clone()).or_default() += v;
    }
    to.read_units += u.read_units;
    to.write_units += u.write_units;
    to.events += u.events;
    for (k, w) in &u.writes {
        let t = to.writes.entry(k.clone()).or_default();
        t.requests += w.requests;
        t.write_units += w.write_units;
    }
    for (k, l) in &u.lambda {
        let t = to.lambda.entry(k.clone()).or_default();
        t.invocations += l.invocations;
        t.ms += l.ms;
        t.billed_ms += l.billed_ms;
    }
}

async fn put_sku(b: &Bench, sku: &str, spec: Value) -> anyhow::Result<()> {
    let (st, body) = b.call("PUT", &format!("/admin/skus/{sku}"), Some(&b.admin), &[], Some(spec)).await;
    anyhow::ensure!(st == 201 || st == 200, "{sku}: {st} {body}");
    Ok(())
}

async fn adjust(b: &Bench, sku: &str, id: &str, delta: i64, warehouse: Option<&str>) -> anyhow::Result<()> {
    let mut body = json!({"adjustment_id": id, "delta": delta, "reason": "bench"});
    if let Some(w) = warehouse {
        body["warehouse"] = json!(w);
    }
    let (st, a) = b.call("POST", &format!("/admin/skus/{sku}/adjustments"), Some(&b.admin), &[], Some(body)).await;
    anyhow::ensure!(st < 300, "adjust {sku}: {st} {a}");
    Ok(())
}

/// Places one order of `line` for `user`; its id.
async fn order(b: &Bench, user: &str, line: &Value) -> anyhow::Result<String> {
    let (st, body) = b.order_items(user, "k", json!([line])).await;
    anyhow::ensure!(st == 201, "{user}: {st} {body}");
    Ok(body["order_id"].as_str().unwrap_or_default().to_owned())
}

/// `n` orders of `line`, by buyers `<prefix>-0` … (one each); their ids.
async fn orders(b: &Bench, prefix: &str, line: &Value, n: usize) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(order(b, &format!("{prefix}-{i}"), line).await?);
    }
    Ok(ids)
}

/// Warehouses: an order taken whole from one warehouse, and an order split over two (each
/// restocked by one unit outside the window, so every measured order has to split).
pub(crate) async fn warehouse_costs(b: &Bench, n: usize) -> anyhow::Result<Value> {
    let spec = |allocation: &str| {
        json!({"name": "wh", "price": 1000, "currency": "EUR", "shards": 1, "model": {"unit": "WAREHOUSE"},
               "warehouses": ["SH", "BJ"], "allocation": allocation})
    };
    put_sku(b, "WHONE", spec("single")).await?;
    adjust(b, "WHONE", "init", 1_000_000, Some("SH")).await?;
    put_sku(b, "WHSPLIT", spec("split")).await?;
    let one = json!({"sku": "WHONE", "quantity": 1});
    let two = json!({"sku": "WHSPLIT", "quantity": 2});
    order(b, "warm-whone", &one).await?;
    adjust(b, "WHSPLIT", "warm-sh", 1, Some("SH")).await?;
    adjust(b, "WHSPLIT", "warm-bj", 1, Some("BJ")).await?;
    order(b, "warm-whsplit", &two).await?;
    tokio::time::sleep(SETTLE).await;
    let single = window(async { orders(b, "whone", &one, n).await.map(drop) }).await?;
    let mut split = Usage::default();
    for i in 0..n {
        adjust(b, "WHSPLIT", &format!("sh-{i}"), 1, Some("SH")).await?;
        adjust(b, "WHSPLIT", &format!("bj-{i}"), 1, Some("BJ")).await?;
        tokio::time::sleep(SETTLE).await;
        let u = window(async { order(b, &format!("whsplit-{i}"), &two).await.map(drop) }).await?;
        add(&mut split, &u);
    }
    Ok(json!({
        "order_from_one_warehouse": usage_json(&single, n as f64),
        "order_split_over_two": usage_json(&split, n as f64),
        "note": "a warehouse is a stock cell with its own shards: a line taken from one warehouse writes what a QUANTITY line writes; a split line writes one more cell (its shard, one transactional update) in the same freeze transaction",
    }))
}

/// Backorders: an order placed with nothing in stock (the whole line waits: the order, its
/// shortfall and the backlog item in one transaction), then the restock that fills them all,
/// per order filled.
pub(crate) async fn backorder_costs(b: &Bench, n: usize) -> anyhow::Result<Value> {
    let spec =
        json!({"name": "later", "price": 1000, "currency": "EUR", "shards": 1, "model": {"oversell": "BACKORDER"}});
    put_sku(b, "LATER", spec).await?;
    let line = json!({"sku": "LATER", "quantity": 1});
    order(b, "warm-later", &line).await?;
    adjust(b, "LATER", "warm", 1, None).await?;
    tokio::time::sleep(SETTLE).await;
    let placed = window(async { orders(b, "later", &line, n).await.map(drop) }).await?;
    let filled = window(adjust(b, "LATER", "arrived", n as i64, None)).await?;
    let (st, v) = b.call("GET", "/admin/skus/LATER", Some(&b.admin), &[], None).await;
    anyhow::ensure!(st == 200, "view: {st} {v}");
    Ok(json!({
        "order_fully_backordered": usage_json(&placed, n as f64),
        "restock_filling_per_order": usage_json(&filled, n as f64),
        "sku_after": v,
        "note": "a checkout short of stock writes the order with its shortfall and appends it to the SKU's backlog item in the same transaction; a restock of n units fills the n oldest waiting orders, one conditional fill (lock, shard, order, backlog) per order",
    }))
}

/// Supplier-issued codes: the order (booked like any supplier SKU) and the payment with the
/// issue it queues (the supplier's codes sealed on the order), per order of one code.
pub(crate) async fn supplier_code_costs(b: &Bench, n: usize) -> anyhow::Result<Value> {
    let spec = json!({"name": "gift", "price": 1000, "currency": "EUR",
                      "model": {"management": "SUPPLIER", "unit": "CODE"},
                      "supplier": {"adapter": "simulated", "confirm_after_seconds": 0}});
    put_sku(b, "GIFTS", spec).await?;
    let line = json!({"sku": "GIFTS", "quantity": 1});
    let warm = order(b, "warm-gifts", &line).await?;
    tokio::time::sleep(2 * SETTLE).await;
    b.pay(&warm, 1000).await;
    tokio::time::sleep(2 * SETTLE).await;
    let mut ids = Vec::new();
    let placed = window(async {
        ids = orders(b, "gifts", &line, n).await?;
        Ok(())
    })
    .await?;
    let paid = window(async {
        for id in &ids {
            let (st, a) = b.pay(id, 1000).await;
            anyhow::ensure!(st == 200, "pay {id}: {st} {a}");
        }
        for (i, id) in ids.iter().enumerate() {
            let t = b.stack.user_token(&format!("gifts-{i}"));
            let mut shown = false;
            for _ in 0..60 {
                let (st, _) = b.call("GET", &format!("/orders/{id}/codes"), Some(&t), &[], None).await;
                if st == 200 {
                    shown = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            anyhow::ensure!(shown, "codes of {id} never shown");
        }
        Ok(())
    })
    .await?;
    Ok(json!({
        "order": usage_json(&placed, n as f64),
        "pay_issue_and_show": usage_json(&paid, n as f64),
        "note": "the order is a supplier booking (no stock counter); paying queues one SupplierIssue message whose consumer asks the supplier once and seals its codes on the order (one conditional write); the window includes the owner's reads of the codes until shown",
    }))
}
