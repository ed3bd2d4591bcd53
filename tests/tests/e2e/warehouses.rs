//! Warehouses (docs/inventory-models.md, "Warehouses") end to end over HTTP: a SKU kept per
//! warehouse, stocked per warehouse through the adjustment route, a `split` order taken from two
//! warehouses, a `single` order refused when no warehouse alone holds it, a refund and a cancel
//! giving each warehouse back its own units, the customer-service view showing each line's
//! allocation, bad input refused with nothing written, invariants clean at the end.

use crate::common::{eventually, problem, spawn, Stack};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

async fn warehoused(s: &Stack, sku: &str, allocation: &str) {
    let spec = json!({"name": format!("{sku} name"), "price": 100, "currency": "EUR", "shards": 2,
                      "model": {"unit": "WAREHOUSE"}, "warehouses": ["SH", "BJ"], "allocation": allocation});
    let a = s.put_sku(sku, spec).await;
    assert_eq!(a.status, 201, "create {sku}: {}", a.body);
    assert_eq!(a.body["allocation"], allocation, "{}", a.body);
}

async fn stock_in(s: &Stack, sku: &str, warehouse: &str, delta: i64) -> crate::common::Answer {
    let body = json!({"adjustment_id": format!("in-{warehouse}-{delta}"), "delta": delta, "reason": "delivery",
                      "warehouse": warehouse});
    s.post(&format!("/admin/skus/{sku}/adjustments"), &s.admin, body).await
}

/// `(available, locked, sold)` of each warehouse (declared order) and of the SKU, from the admin view.
async fn by_warehouse(s: &Stack, sku: &str) -> (Vec<(String, (i64, i64, i64))>, (i64, i64, i64)) {
    let a = s.get(&format!("/admin/skus/{sku}"), Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let b = &a.body;
    let n = |c: &Value, k: &str| c[k].as_i64().unwrap_or_else(|| panic!("{k} in {c}"));
    let each = b["warehouses"]
        .as_array()
        .unwrap_or_else(|| panic!("warehouses in {b}"))
        .iter()
        .map(|w| {
            assert_eq!(n(w, "total"), n(w, "available") + n(w, "locked") + n(w, "sold"), "{w}");
            (w["warehouse"].as_str().unwrap_or_default().to_owned(), (n(w, "available"), n(w, "locked"), n(w, "sold")))
        })
        .collect();
    (each, (n(b, "available"), n(b, "locked"), n(b, "sold")))
}

fn wh(sh: (i64, i64, i64), bj: (i64, i64, i64)) -> Vec<(String, (i64, i64, i64))> {
    vec![("SH".to_owned(), sh), ("BJ".to_owned(), bj)]
}

async fn reaches(s: &Stack, sku: &str, want: Vec<(String, (i64, i64, i64))>) {
    eventually(&format!("{sku} to show {want:?}"), WAIT, || async {
        (by_warehouse(s, sku).await.0 == want).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_split_order_takes_two_warehouses_and_a_refund_gives_each_its_units_back() {
    let s = spawn().await;
    warehoused(&s, "KETTLE", "split").await;
    assert_eq!(by_warehouse(&s, "KETTLE").await, (wh((0, 0, 0), (0, 0, 0)), (0, 0, 0)), "declared, not stocked");
    assert_eq!(stock_in(&s, "KETTLE", "SH", 3).await.status, 201);
    let a = stock_in(&s, "KETTLE", "BJ", 4).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(stock_in(&s, "KETTLE", "BJ", 4).await.status, 200, "a replayed adjustment");
    assert_eq!(by_warehouse(&s, "KETTLE").await, (wh((3, 0, 0), (4, 0, 0)), (7, 0, 0)));

    // 5 units: no warehouse holds them alone, so BJ's 4 (the fullest) and 1 from SH
    let id = s.order_id("ann", "k1", json!([{"sku": "KETTLE", "quantity": 5}])).await;
    assert_eq!(by_warehouse(&s, "KETTLE").await, (wh((2, 1, 0), (0, 4, 0)), (2, 5, 0)));
    let view = s.admin_view(&id).await;
    assert_eq!(
        view["locks"][0]["lines"][0]["allocation"],
        json!([{"warehouse": "BJ", "quantity": 4}, {"warehouse": "SH", "quantity": 1}]),
        "{view}"
    );
    let pay = s.pay(&id, "pay-1", 500, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    s.order_reaches("ann", &id, "PAID").await;
    reaches(&s, "KETTLE", wh((2, 0, 1), (0, 0, 4))).await;

    // refunded before shipping: 4 back to BJ, 1 back to SH
    let r = s.post(&format!("/orders/{id}/refund"), &s.user("ann"), json!({"reason": "changed my mind"})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    reaches(&s, "KETTLE", wh((3, 0, 0), (4, 0, 0))).await;
    s.lock_reaches(&id, "RESTOCKED").await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_single_order_no_warehouse_holds_alone_is_refused_and_a_cancel_gives_back_to_its_warehouse() {
    let s = spawn().await;
    warehoused(&s, "MUG", "single").await;
    assert_eq!(stock_in(&s, "MUG", "SH", 3).await.status, 201);
    assert_eq!(stock_in(&s, "MUG", "BJ", 3).await.status, 201);
    let before = s.fingerprint().await;
    // 4 units: together there are 6, but no one warehouse has 4
    let a = s.order("bob", "k1", json!([{"sku": "MUG", "quantity": 4}])).await;
    problem(&a, 409, "insufficient_stock");
    assert_eq!(s.fingerprint().await, before, "a refused order writes nothing");

    // 3 units: SH, the first declared, holds them
    let id = s.order_id("bob", "k2", json!([{"sku": "MUG", "quantity": 3}])).await;
    assert_eq!(by_warehouse(&s, "MUG").await, (wh((0, 3, 0), (3, 0, 0)), (3, 3, 0)));
    let view = s.admin_view(&id).await;
    assert_eq!(view["locks"][0]["lines"][0]["allocation"], json!([{"warehouse": "SH", "quantity": 3}]), "{view}");
    // the next 3 come from BJ
    let other = s.order_id("cat", "k1", json!([{"sku": "MUG", "quantity": 3}])).await;
    assert_eq!(by_warehouse(&s, "MUG").await.0, wh((0, 3, 0), (0, 3, 0)));
    assert_eq!(s.cancel("bob", &id).await.status, 200);
    reaches(&s, "MUG", wh((3, 0, 0), (0, 3, 0))).await;
    assert_eq!(s.cancel("cat", &other).await.status, 200);
    reaches(&s, "MUG", wh((3, 0, 0), (3, 0, 0))).await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn bad_warehouse_input_is_refused_by_field_and_writes_nothing() {
    let s = spawn().await;
    warehoused(&s, "PAN", "split").await;
    s.sku("PLAIN", 100, 5, 1, None).await;
    let before = s.fingerprint().await;
    let adjust = |sku: &'static str, body: Value| {
        let s = &s;
        async move { s.post(&format!("/admin/skus/{sku}/adjustments"), &s.admin, body).await }
    };
    let base = json!({"adjustment_id": "x", "delta": 5, "reason": "r"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    // a warehouse the SKU does not declare: 404, naming the field
    let a = adjust("PAN", with("warehouse", json!("XX"))).await;
    problem(&a, 404, "not_found");
    assert_eq!(a.body["field"], "warehouse", "{}", a.body);
    // no warehouse for a warehoused SKU, one for a plain SKU, a bad id, a wrong type, both dates and a warehouse
    problem(&adjust("PAN", base.clone()).await, 422, "validation_failed");
    problem(&adjust("PLAIN", with("warehouse", json!("SH"))).await, 422, "validation_failed");
    problem(&adjust("PAN", with("warehouse", json!("S H"))).await, 422, "validation_failed");
    problem(&adjust("PAN", with("warehouse", json!(7))).await, 422, "validation_failed");
    let mut both = with("warehouse", json!("SH"));
    both["dates"] = json!(["2030-01-01"]);
    problem(&adjust("PAN", both).await, 422, "validation_failed");
    problem(&adjust("NOPE", with("warehouse", json!("SH"))).await, 404, "not_found");
    assert_eq!(s.fingerprint().await, before, "refused adjustments write nothing");

    // definitions: each refusal names its field
    let spec = |extra: Value| {
        let mut b = json!({"name": "n", "price": 100, "currency": "EUR"});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            b[k] = v;
        }
        b
    };
    for (why, body, field) in [
        ("warehouses on a plain SKU", spec(json!({"warehouses": ["SH"]})), "warehouses"),
        ("no warehouses", spec(json!({"model": {"unit": "WAREHOUSE"}})), "warehouses"),
        ("twice", spec(json!({"model": {"unit": "WAREHOUSE"}, "warehouses": ["SH", "SH"]})), "warehouses"),
        (
            "paid-time",
            spec(json!({"model": {"unit": "WAREHOUSE", "deduct": "AT_PAYMENT"}, "warehouses": ["SH"]})),
            "model",
        ),
        (
            "at shipment",
            spec(json!({"model": {"unit": "WAREHOUSE", "deduct": "AT_SHIPMENT"}, "warehouses": ["SH"]})),
            "model",
        ),
    ] {
        let a = s.put_sku("NEW", body).await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["field"], field, "{why}: {}", a.body);
    }
    for bad in [json!({"allocation": "SPLIT"}), json!({"warehouses": ["a/b"]}), json!({"warehouses": "SH"})] {
        let mut body = spec(json!({"model": {"unit": "WAREHOUSE"}, "warehouses": ["SH"]}));
        for (k, v) in bad.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        problem(&s.put_sku("NEW", body).await, 422, "validation_failed");
    }
    // a declared warehouse is never dropped
    let drop = json!({"name": "n", "price": 100, "currency": "EUR", "shards": 2, "model": {"unit": "WAREHOUSE"},
                      "warehouses": ["BJ"], "allocation": "split"});
    let a = s.put_sku("PAN", drop).await;
    problem(&a, 422, "validation_failed");
    assert_eq!(a.body["field"], "warehouses", "{}", a.body);
    assert_eq!(s.fingerprint().await, before, "refused definitions write nothing");
    s.assert_invariants().await;
}
