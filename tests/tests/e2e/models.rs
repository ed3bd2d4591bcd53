//! Inventory models end to end (docs/inventory-models.md): calendar dates, bundles, unlimited
//! SKUs and pay-time deduction, over HTTP on the local stack, invariants clean per date and per
//! SKU at the end.

use crate::common::{counters, eventually, size, spawn, Stack};
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::Duration;

/// `YYYY-MM-DD`, `days` from today (UTC).
fn day(days: i64) -> String {
    holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s() + days * 86_400).to_string()
}

/// A SKU of `model`, with its bundle's children if it is one.
async fn model_sku(s: &Stack, sku: &str, price: u64, shards: u16, model: Value, bundle: Option<Value>) {
    let Some(b) = bundle else { return s.model_sku(sku, price, shards, model, None).await };
    let spec = json!({"name": format!("{sku} name"), "price": price, "currency": "EUR", "shards": shards,
                      "model": model, "bundle": b});
    let a = s.put_sku(sku, spec).await;
    assert_eq!(a.status, 201, "create {sku}: {}", a.body);
}

async fn stock_dates(s: &Stack, sku: &str, id: &str, delta: i64, dates: &[String]) {
    let a = s
        .post(
            &format!("/admin/skus/{sku}/adjustments"),
            &s.admin,
            json!({"adjustment_id": id, "delta": delta, "reason": "allotment", "dates": dates}),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
}

async fn calendar(s: &Stack, sku: &str, from: &str, to: &str) -> Vec<Value> {
    let a = s.get(&format!("/skus/{sku}/calendar?from={from}&to={to}"), None).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["dates"].as_array().expect("dates").clone()
}

async fn counters_now(s: &Stack, sku: &str) -> (i64, i64, i64) {
    s.exact(sku).await
}

async fn cell_now(s: &Stack, sku: &str, date: &str) -> (i64, i64, i64) {
    counters_now(s, &format!("{sku}@{date}")).await
}

#[tokio::test]
async fn a_hundred_buyers_for_the_last_ten_rooms_of_one_night_get_ten_three_night_bookings() {
    let s = spawn().await;
    model_sku(&s, "HOTEL", 12_000, 4, json!({"unit": "CALENDAR"}), None).await;
    let (d1, d2, d3) = (day(10), day(11), day(12));
    stock_dates(&s, "HOTEL", "wide", 200, &[d1.clone(), d3.clone()]).await;
    stock_dates(&s, "HOTEL", "tight", 10, std::slice::from_ref(&d2)).await;
    let nights = json!([d1, d2, d3]);
    let answers =
        join_all((0..100).map(|i| {
            let (s, nights) = (&s, nights.clone());
            async move {
                s.order(&format!("guest-{i}"), "k", json!([{"sku": "HOTEL", "quantity": 1, "dates": nights}])).await
            }
        }))
        .await;
    let ok = answers.iter().filter(|a| a.status == 201).count();
    let short = answers
        .iter()
        .filter(|a| {
            a.status == 409
                && a.body["code"] == "insufficient_stock"
                && a.body["sku"] == "HOTEL"
                && a.body["date"] == d2
        })
        .count();
    assert_eq!(
        (ok, short),
        (10, 90),
        "{:?}",
        answers.iter().find(|a| a.status != 201 && a.body["date"] != d2).map(|a| (a.status, &a.body))
    );
    let booked = answers.iter().find(|a| a.status == 201).unwrap();
    assert_eq!(booked.body["amount"], 36_000, "three nights at the nightly price: {}", booked.body);
    assert_eq!(booked.body["items"][0]["dates"], nights, "the order lists its dates");
    assert_eq!(cell_now(&s, "HOTEL", &d2).await, (0, 10, 0), "no night oversold");
    assert_eq!(cell_now(&s, "HOTEL", &d1).await, (190, 10, 0), "the refused bookings took nothing");
    assert_eq!(cell_now(&s, "HOTEL", &d3).await, (190, 10, 0));
    // the public calendar, eventually consistent: d2 shows sold out, a day never stocked zeros
    let view = eventually("the calendar shows the bookings", Duration::from_secs(20), || async {
        let v = calendar(&s, "HOTEL", &d1, &day(13)).await;
        (v.len() == 4 && v[1]["available"] == 0).then_some(v)
    })
    .await;
    assert_eq!(counters(&view[0]), (190, 10, 0));
    assert_eq!((view[3]["date"].as_str(), counters(&view[3])), (Some(day(13).as_str()), (0, 0, 0)));
    // pay one booking, cancel another: each night moves
    let paid = booked.body["order_id"].as_str().unwrap().to_owned();
    let buyer = booked.body["user_id"].as_str().unwrap().to_owned();
    assert_eq!(s.pay(&paid, "pay-hotel", 36_000, "SUCCEEDED").await.status, 200);
    let other = answers.iter().filter(|a| a.status == 201).nth(1).unwrap();
    let a = s.cancel(other.body["user_id"].as_str().unwrap(), other.body["order_id"].as_str().unwrap()).await;
    assert_eq!(a.status, 200, "{}", a.body);
    eventually("the paid nights are sold, the cancelled ones free", Duration::from_secs(30), || async {
        (cell_now(&s, "HOTEL", &d2).await == (1, 8, 1)).then_some(())
    })
    .await;
    assert_eq!(s.get_order(&buyer, &paid).await.body["status"], "PAID");
    s.assert_invariants().await;
    // reconcile checks every date's identity and finds nothing to repair
    let report = s.reconcile().await;
    assert_eq!(report["violations"], json!([]), "{report}");
    assert!(report["skus_checked"].as_u64().unwrap_or(0) >= 4, "the SKU and its three dates: {report}");
}

#[tokio::test]
async fn a_bundle_short_of_one_child_freezes_nothing_and_a_paid_bundle_sells_its_children() {
    let s = spawn().await;
    s.sku("LENS", 300, 10, 2, None).await;
    s.sku("BAG", 200, 1, 1, None).await;
    model_sku(
        &s,
        "KIT",
        700,
        1,
        json!({"unit": "BUNDLE"}),
        Some(json!([{"sku": "LENS", "quantity": 2}, {"sku": "BAG", "quantity": 1}])),
    )
    .await;
    assert_eq!(s.view("KIT").await["available"], 1, "the fewest kits the children make");
    let a = s.order("u1", "k1", json!([{"sku": "KIT", "quantity": 2}])).await;
    assert_eq!(
        (a.status, &a.body["code"], &a.body["sku"]),
        (409, &json!("insufficient_stock"), &json!("BAG")),
        "{}",
        a.body
    );
    assert_eq!(counters_now(&s, "LENS").await, (10, 0, 0), "the short bundle froze nothing");
    assert_eq!(counters_now(&s, "BAG").await, (1, 0, 0));
    let a = s.order("u1", "k2", json!([{"sku": "KIT", "quantity": 1}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!((a.body["amount"].as_u64(), a.body["items"][0]["sku"].as_str()), (Some(700), Some("KIT")));
    assert_eq!(counters_now(&s, "LENS").await, (8, 2, 0));
    assert_eq!(counters_now(&s, "BAG").await, (0, 1, 0));
    let id = a.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(s.pay(&id, "pay-kit", 700, "SUCCEEDED").await.status, 200);
    eventually("the bundle's children are sold", Duration::from_secs(30), || async {
        (counters_now(&s, "LENS").await == (8, 0, 2) && counters_now(&s, "BAG").await == (0, 0, 1)).then_some(())
    })
    .await;
    // a cancelled bundle gives its children back
    s.post(
        "/admin/skus/BAG/adjustments",
        &s.admin,
        json!({"adjustment_id": "more", "delta": 1, "reason": "found one"}),
    )
    .await;
    let id2 = s.order_id("u2", "k", json!([{"sku": "KIT", "quantity": 1}])).await;
    assert_eq!(s.cancel("u2", &id2).await.status, 200);
    eventually("the cancelled bundle's children are back", Duration::from_secs(30), || async {
        (counters_now(&s, "LENS").await == (8, 0, 2) && counters_now(&s, "BAG").await == (1, 0, 1)).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test]
async fn an_order_mixing_a_calendar_line_a_bundle_and_a_plain_sku_is_all_or_nothing() {
    let s = spawn().await;
    model_sku(&s, "ROOM", 9_000, 1, json!({"unit": "CALENDAR"}), None).await;
    let (d1, d2) = (day(3), day(4));
    stock_dates(&s, "ROOM", "r", 1, &[d1.clone(), d2.clone()]).await;
    s.sku("TOWEL", 100, 5, 1, None).await;
    s.sku("SOAP", 50, 0, 1, None).await;
    model_sku(
        &s,
        "SPA",
        400,
        1,
        json!({"unit": "BUNDLE"}),
        Some(json!([{"sku": "TOWEL", "quantity": 1}, {"sku": "SOAP", "quantity": 1}])),
    )
    .await;
    s.sku("BREAKFAST", 1_500, 10, 2, None).await;
    let lines = json!([
        {"sku": "ROOM", "quantity": 1, "dates": [d1, d2]},
        {"sku": "SPA", "quantity": 1},
        {"sku": "BREAKFAST", "quantity": 2}
    ]);
    let a = s.order("g", "k1", lines.clone()).await;
    assert_eq!((a.status, &a.body["sku"]), (409, &json!("SOAP")), "{}", a.body);
    let untouched = [(cell_now(&s, "ROOM", &d1).await), cell_now(&s, "ROOM", &d2).await];
    assert_eq!(untouched, [(1, 0, 0), (1, 0, 0)]);
    assert_eq!(counters_now(&s, "TOWEL").await, (5, 0, 0));
    assert_eq!(counters_now(&s, "BREAKFAST").await, (10, 0, 0));
    assert!(s.local.snapshot().await.unwrap().reservations.is_empty(), "nothing frozen");
    s.post("/admin/skus/SOAP/adjustments", &s.admin, json!({"adjustment_id": "s", "delta": 3, "reason": "delivery"}))
        .await;
    let a = s.order("g", "k2", lines).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.body["amount"], 2 * 9_000 + 400 + 2 * 1_500);
    assert_eq!(cell_now(&s, "ROOM", &d2).await, (0, 1, 0));
    assert_eq!((counters_now(&s, "TOWEL").await, counters_now(&s, "SOAP").await), ((4, 1, 0), (2, 1, 0)));
    assert_eq!(counters_now(&s, "BREAKFAST").await, (8, 2, 0));
    s.assert_invariants().await;
}

/// More buyers pay at once than a pay-time SKU has units: one sale per unit, a refund each for
/// the rest, never a negative counter. `HOLDFAST_SOAK_PAYTIME_UNITS` sets the units (twice as
/// many buyers); `make test` races 8 buyers for 4, `make soak` 20 for 10.
#[tokio::test]
async fn more_buyers_paying_than_pay_time_units_get_one_sale_per_unit_and_a_refund_each_for_the_rest() {
    let units = size("HOLDFAST_SOAK_PAYTIME_UNITS", 4);
    let buyers = 2 * units;
    let s = spawn().await;
    s.model_sku("WATCH", 50_000, 2, json!({"deduct": "AT_PAYMENT"}), None).await;
    s.stock("WATCH", "i", units as i64).await;
    let mut orders = Vec::new();
    for i in 0..buyers {
        orders
            .push((format!("b{i}"), s.order_id(&format!("b{i}"), "k", json!([{"sku": "WATCH", "quantity": 1}])).await));
    }
    assert_eq!(counters_now(&s, "WATCH").await, (units as i64, 0, 0), "nothing is held before payment");
    let paid = join_all(orders.iter().enumerate().map(|(i, (_, id))| {
        let s = &s;
        async move { s.pay(id, &format!("p{i}"), 50_000, "SUCCEEDED").await.status }
    }))
    .await;
    assert!(paid.iter().all(|st| *st == 200), "{paid:?}");
    // every payment settles: `units` took a unit, the others found none and are refunded. A
    // payment whose deduction lost a shard race is retried by the stock-events queue after its
    // 60 s visibility timeout; under load a big race takes a few such rounds.
    let settle = Duration::from_secs(180);
    eventually("every unit sold", settle, || async {
        (counters_now(&s, "WATCH").await == (0, 0, units as i64)).then_some(())
    })
    .await;
    let refunded = eventually("a refund for every payment that found no unit", settle, || async {
        let mut refunds = 0;
        for (_, id) in &orders {
            let v = s.admin_view(id).await;
            if v["refunds"].as_array().is_some_and(|r| r.iter().any(|r| r["reason"] == "oversold")) {
                refunds += 1;
            }
        }
        (refunds == buyers - units).then_some(refunds)
    })
    .await;
    assert_eq!(refunded, buyers - units);
    let snap = s.local.snapshot().await.unwrap();
    assert!(snap.skus.iter().flat_map(|k| &k.shards).all(|c| c.available >= 0), "never negative");
    let oversold = snap.reservations.iter().filter(|r| r.oversold).count();
    assert_eq!(oversold, buyers - units);
    s.assert_invariants().await;
}

/// An unlimited SKU takes every order and moves no counter. `HOLDFAST_SOAK_UNLIMITED_ORDERS`
/// sets how many (50 at a time); `make test` places 100 — two waves, each far past any stock
/// the SKU could have, since it has none — and `make soak` 1,000.
#[tokio::test]
async fn an_unlimited_sku_takes_every_order_without_a_counter() {
    let n = size("HOLDFAST_SOAK_UNLIMITED_ORDERS", 100);
    let s = spawn().await;
    s.model_sku("TOPUP", 1_000, 1, json!({"management": "UNLIMITED"}), None).await;
    let v = s.view("TOPUP").await;
    assert_eq!((v["available"].clone(), v["unlimited"].clone()), (Value::Null, json!(true)), "{v}");
    let mut created = 0;
    for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
        let answers = join_all(chunk.iter().map(|i| {
            let s = &s;
            async move { s.order(&format!("p{i}"), "k", json!([{"sku": "TOPUP", "quantity": 2}])).await }
        }))
        .await;
        assert!(
            answers.iter().all(|a| a.status == 201),
            "{:?}",
            answers.iter().find(|a| a.status != 201).map(|a| &a.body)
        );
        created += answers.len();
    }
    assert_eq!(created, n);
    let snap = s.local.snapshot().await.unwrap();
    let topup = snap.skus.iter().find(|k| k.sku.as_str() == "TOPUP").expect("the SKU");
    assert!(topup.shards.iter().all(|c| (c.available, c.locked, c.sold) == (0, 0, 0)), "no counter moved");
    assert_eq!(
        snap.reservations.iter().filter(|r| r.status.as_str() == "FROZEN").count(),
        n,
        "each order has its lock"
    );
    let a = s.get("/admin/skus/TOPUP/journal", Some(&s.admin)).await;
    assert_eq!(a.body["entries"], json!([]), "no stock journal entries: {}", a.body);
    s.assert_invariants().await;
}

#[tokio::test]
async fn bad_models_dates_and_bundles_get_a_clear_4xx_and_write_nothing() {
    let s = spawn().await;
    s.sku("PLAIN", 100, 5, 1, None).await;
    model_sku(&s, "CAL", 100, 1, json!({"unit": "CALENDAR"}), None).await;
    model_sku(&s, "BUN", 100, 1, json!({"unit": "BUNDLE"}), Some(json!([{"sku": "PLAIN", "quantity": 1}]))).await;
    let base = json!({"name": "x", "price": 1, "currency": "EUR"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let refused_puts = [
        ("NEW1", with("model", json!({"management": "NONSENSE"}))),
        ("NEW2", with("model", json!({"unit": "calendar"}))),
        ("NEW3", with("model", json!({"management": "UNLIMITED", "unit": "CALENDAR"}))),
        ("NEW4", with("model", json!({"management": "UNLIMITED", "deduct": "AT_PAYMENT"}))),
        ("NEW5", with("model", json!({"unit": "BUNDLE"}))),
        ("NEW6", {
            let mut b = with("model", json!({"unit": "BUNDLE"}));
            b["bundle"] = json!([{"sku": "NEW6", "quantity": 1}]);
            b
        }),
        ("NEW7", {
            let mut b = with("model", json!({"unit": "BUNDLE"}));
            b["bundle"] = json!([{"sku": "NOPE", "quantity": 1}]);
            b
        }),
        ("NEW8", {
            let mut b = with("model", json!({"unit": "BUNDLE"}));
            b["bundle"] = json!([{"sku": "BUN", "quantity": 1}]);
            b
        }),
        ("NEW9", {
            let mut b = with("model", json!({"unit": "BUNDLE"}));
            b["bundle"] = json!([{"sku": "CAL", "quantity": 1}]);
            b
        }),
        ("NEW10", with("bundle", json!([{"sku": "PLAIN", "quantity": 1}]))),
        ("NEW11", {
            let mut b = with("model", json!({"unit": "BUNDLE"}));
            b["bundle"] = json!([{"sku": "PLAIN", "quantity": 0}]);
            b
        }),
        ("PLAIN", with("model", json!({"unit": "CALENDAR"}))),
    ];
    for (sku, body) in refused_puts {
        let a = s.put_sku(sku, body.clone()).await;
        assert!((400..500).contains(&a.status) && a.body["code"].is_string(), "{sku} {body}: {} {}", a.status, a.body);
        let ct = a.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(ct.starts_with("application/problem+json"), "{sku}: {ct}");
    }
    for sku in ["NEW1", "NEW3", "NEW5", "NEW6", "NEW7", "NEW8", "NEW9", "NEW10", "NEW11"] {
        assert_eq!(s.get(&format!("/skus/{sku}"), None).await.status, 404, "{sku} was not created");
    }
    assert_eq!(s.view("PLAIN").await["model"]["unit"], "SINGLE", "the model did not change");
    let adj = |dates: Option<Value>| {
        let mut b = json!({"adjustment_id": "a1", "delta": 5, "reason": "r"});
        if let Some(d) = dates {
            b["dates"] = d;
        }
        b
    };
    for (sku, body) in [
        ("BUN", adj(None)),
        ("CAL", adj(None)),
        ("CAL", adj(Some(json!([])))),
        ("CAL", adj(Some(json!(["2027-02-30"])))),
        ("CAL", adj(Some(json!(["27-01-01"])))),
        ("CAL", adj(Some(json!([day(1), day(1)])))),
        ("PLAIN", adj(Some(json!([day(1)])))),
    ] {
        let a = s.post(&format!("/admin/skus/{sku}/adjustments"), &s.admin, body.clone()).await;
        assert!((400..500).contains(&a.status) && a.body["code"].is_string(), "{sku} {body}: {} {}", a.status, a.body);
    }
    assert_eq!(counters_now(&s, "PLAIN").await, (5, 0, 0));
    for (items, field) in [
        (json!([{"sku": "CAL", "quantity": 1}]), "dates"),
        (json!([{"sku": "CAL", "quantity": 1, "dates": []}]), "items"),
        (json!([{"sku": "CAL", "quantity": 1, "dates": [day(-3)]}]), "dates"),
        (json!([{"sku": "CAL", "quantity": 1, "dates": ["2027-13-01"]}]), "items"),
        (json!([{"sku": "CAL", "quantity": 1, "dates": [day(1), day(1)]}]), "dates"),
        (json!([{"sku": "PLAIN", "quantity": 1, "dates": [day(1)]}]), "dates"),
        (
            json!([{"sku": "CAL", "quantity": 1, "dates": [day(1)]}, {"sku": "CAL", "quantity": 1, "dates": [day(2)]}]),
            "items",
        ),
        (json!([{"sku": "CAL@2027-01-01", "quantity": 1}]), "items"),
    ] {
        let a = s.order("u", &format!("k-{}", items.to_string().len()), items.clone()).await;
        assert!((400..500).contains(&a.status) && a.body["code"].is_string(), "{items}: {} {}", a.status, a.body);
        assert!(
            a.body["field"].as_str().is_some_and(|f| f.starts_with(field)),
            "{items}: field {} (wanted {field})",
            a.body["field"]
        );
    }
    for q in
        ["", "?from=2027-01-01", "?from=2027-01-02&to=2027-01-01", "?from=2027-01-01&to=2028-06-01", "?from=x&to=y"]
    {
        let a = s.get(&format!("/skus/CAL/calendar{q}"), None).await;
        assert_eq!(a.status, 422, "{q}: {}", a.body);
    }
    assert_eq!(s.get("/skus/PLAIN/calendar?from=2027-01-01&to=2027-01-02", None).await.status, 422);
    assert_eq!(s.get("/skus/NOPE/calendar?from=2027-01-01&to=2027-01-02", None).await.status, 404);
    assert_eq!(s.post("/admin/skus/BUN/pause", &s.admin, json!({})).await.status, 422);
    let snap = s.local.snapshot().await.unwrap();
    assert!(snap.reservations.is_empty(), "no refused line froze anything");
    assert!(snap.skus.iter().all(|k| !k.sku.as_str().starts_with("CAL@")), "no date cell was created");
    s.assert_invariants().await;
}
