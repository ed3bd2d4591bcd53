//! Waves: per-slot quotas inside one campaign (docs/campaigns.md, "Waves"), over HTTP on the
//! local stack. Wave boundaries are passed with the test process's clock (`advance_clock`: the
//! stack runs in this process), never slept out.

use crate::common::{advance_clock, counters, Stack};
use serde_json::{json, Value};
use std::time::Duration;

fn at(offset_s: i64) -> String {
    holdfast::clock::rfc3339((holdfast::clock::now_s() + offset_s) * 1000)
}

/// PUT /admin/campaigns/{id} over the next two hours with one item.
async fn put_campaign(s: &Stack, id: &str, item: Value) -> crate::common::Answer {
    let body = json!({"name": format!("{id} drop"), "starts_at": at(-5), "ends_at": at(7200), "items": [item]});
    s.call("PUT", &format!("/admin/campaigns/{id}"), Some(&s.admin), &[], Some(body.to_string())).await
}

/// The strongly consistent admin view (a resume of a running campaign writes nothing).
async fn waves(s: &Stack, id: &str) -> Vec<Value> {
    let a = s.post(&format!("/admin/campaigns/{id}/resume"), &s.admin, json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["items"][0]["waves"].as_array().cloned().unwrap_or_else(|| panic!("waves in {}", a.body))
}

/// (requests, write units) of the writes whose item kinds include `kind` (adapters::usage).
fn writes_of(kind: &str) -> (u64, f64) {
    let u = holdfast::adapters::usage::snapshot();
    u.writes
        .iter()
        .filter(|(k, _)| k.split(['+', ' ']).any(|p| p == kind))
        .fold((0, 0.0), |(n, w), (_, x)| (n + x.requests, w + x.write_units))
}

fn line(sku: &str, id: &str, q: u32) -> Value {
    json!([{"sku": sku, "quantity": q, "campaign_id": id}])
}

#[tokio::test]
async fn a_waves_quota_sells_out_while_the_next_waves_is_untouched() {
    let s = crate::common::spawn().await;
    s.sku("WAVE", 100, 100, 2, None).await;
    let waves_in = json!([
        {"starts_at": at(-5), "ends_at": at(60), "quota": 3},
        {"starts_at": at(60), "ends_at": at(120), "quota": 4},
    ]);
    let a = put_campaign(&s, "drop", json!({"sku": "WAVE", "shards": 2, "waves": waves_in})).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(
        (a.body["items"][0]["quota"].as_i64(), a.body["items"][0]["unsold"].as_str()),
        (Some(7), Some("return"))
    );
    let mut codes = Vec::new();
    for i in 0..5 {
        let o = s.order(&format!("early-{i}"), "k", line("WAVE", "drop", 1)).await;
        codes.push(if o.status == 201 { "ok".to_owned() } else { o.body["code"].as_str().unwrap_or("?").to_owned() });
    }
    assert_eq!(codes, ["ok", "ok", "ok", "campaign_quota_exhausted", "campaign_quota_exhausted"]);
    let w = waves(&s, "drop").await;
    assert_eq!((counters(&w[0]), &w[0]["live"], &w[0]["status"]), ((0, 3, 0), &json!(true), &json!("LIVE")));
    assert_eq!((counters(&w[1]), &w[1]["quota"], &w[1]["live"]), ((4, 0, 0), &json!(4), &json!(false)), "untouched");
    let why = s.get("/skus/WAVE/availability?quantity=1&campaign_id=drop", None).await;
    assert_eq!(
        (why.body["reason"].as_str(), why.body["campaign_available"].as_i64()),
        (Some("campaign_quota_exhausted"), Some(0)),
        "{}",
        why.body
    );
    let public = s.get("/campaigns/drop", None).await;
    assert_eq!(public.body["items"][0]["waves"][1]["status"], "SCHEDULED", "{}", public.body);
    assert_eq!(counters(&s.view("WAVE").await), (97, 3, 0), "only wave 1's units left the SKU");
    // wave 2 opens: it sells its own quota
    advance_clock(Duration::from_secs(61));
    let before = writes_of("CQ");
    for i in 0..4 {
        assert_eq!(s.order(&format!("late-{i}"), "k", line("WAVE", "drop", 1)).await.status, 201);
    }
    let after = writes_of("CQ");
    // what a waved checkout's freeze writes (printed; the same items as any campaign line's)
    eprintln!(
        "waved freeze: {:.1} WRU per transaction over {} transactions",
        (after.1 - before.1) / (after.0 - before.0).max(1) as f64,
        after.0 - before.0
    );
    assert_eq!(s.order("late-x", "k", line("WAVE", "drop", 1)).await.body["code"], "campaign_quota_exhausted");
    let w = waves(&s, "drop").await;
    assert_eq!((counters(&w[0]), counters(&w[1])), ((0, 3, 0), (0, 4, 0)));
    assert_eq!((&w[0]["live"], &w[1]["live"]), (&json!(false), &json!(true)));
    let stats = s.get("/admin/campaigns/drop/stats", Some(&s.admin)).await;
    assert_eq!(stats.body["items"][0]["waves"][1]["locked"], 4, "{}", stats.body);
    // after the last wave: ended
    advance_clock(Duration::from_secs(60));
    assert_eq!(s.order("after", "k", line("WAVE", "drop", 1)).await.body["code"], "sale_ended");
    s.assert_invariants().await;
}

#[tokio::test]
async fn with_unsold_roll_an_ended_waves_remainder_appears_in_the_next_wave() {
    let s = crate::common::spawn().await;
    s.sku("ROLL", 100, 100, 1, None).await;
    let waves_in = json!([
        {"starts_at": at(-5), "ends_at": at(30), "quota": 5},
        {"starts_at": at(30), "ends_at": at(7200), "quota": 2},
    ]);
    let item = json!({"sku": "ROLL", "waves": waves_in, "unsold": "roll"});
    assert_eq!(put_campaign(&s, "rolling", item).await.status, 201);
    let first = s.order_id("early-a", "k", line("ROLL", "rolling", 1)).await;
    assert_eq!(s.order("early-b", "k", line("ROLL", "rolling", 1)).await.status, 201);
    advance_clock(Duration::from_secs(31));
    let before = writes_of("CADJ");
    let report = s.reconcile().await;
    assert_eq!(report["wave_units_rolled"], 3, "{report}");
    let after = writes_of("CADJ");
    eprintln!("wave roll: {:.1} WRU in {} transaction(s)", after.1 - before.1, after.0 - before.0);
    let w = waves(&s, "rolling").await;
    assert_eq!((counters(&w[0]), &w[0]["rolled_out"]), ((0, 2, 0), &json!(3)));
    assert_eq!((counters(&w[1]), &w[1]["rolled_in"], &w[1]["quota"]), ((5, 0, 0), &json!(3), &json!(2)));
    assert_eq!(s.reconcile().await["wave_units_rolled"], 0, "nothing rolls twice");
    // a unit released into the ended wave after its roll rolls on the next pass
    assert_eq!(s.cancel("early-a", &first).await.status, 200);
    s.lock_reaches(&first, "RELEASED").await;
    assert_eq!(s.reconcile().await["wave_units_rolled"], 1);
    let w = waves(&s, "rolling").await;
    assert_eq!((counters(&w[0]), counters(&w[1]), &w[1]["rolled_in"]), ((0, 1, 0), (6, 0, 0), &json!(4)));
    // and the rolled units sell in wave 2
    assert_eq!(s.order("late", "k", line("ROLL", "rolling", 6)).await.status, 201);
    assert_eq!(s.order("later", "k", line("ROLL", "rolling", 1)).await.body["code"], "campaign_quota_exhausted");
    s.assert_invariants().await;
}

#[tokio::test]
async fn bad_waves_are_refused_by_name_and_nothing_is_written() {
    let s = crate::common::spawn().await;
    s.sku("BAD", 100, 10, 1, None).await;
    let before = s.fingerprint().await;
    let w = |a: i64, b: i64, q: i64| json!({"starts_at": at(a), "ends_at": at(b), "quota": q});
    // each answers 422 `validation_failed` naming the field: a broken wave rule `items.waves`,
    // the shard budget and a body that does not parse `items`
    let cases = [
        ("overlapping", json!({"sku": "BAD", "waves": [w(0, 100, 1), w(50, 200, 1)]}), "items.waves"),
        ("unordered", json!({"sku": "BAD", "waves": [w(100, 200, 1), w(0, 50, 1)]}), "items.waves"),
        ("outside the window", json!({"sku": "BAD", "waves": [w(0, 9000, 1)]}), "items.waves"),
        ("no quota", json!({"sku": "BAD", "waves": [w(0, 100, 0)]}), "items.waves"),
        ("quota not their sum", json!({"sku": "BAD", "quota": 5, "waves": [w(0, 100, 1)]}), "items.waves"),
        (
            "over the shard budget",
            json!({"sku": "BAD", "shards": 33, "waves": [w(0, 9, 1), w(10, 19, 1), w(20, 29, 1)]}),
            "items",
        ),
        ("unsold without waves", json!({"sku": "BAD", "quota": 1, "unsold": "roll"}), "items"),
        ("an unknown unsold", json!({"sku": "BAD", "unsold": "keep", "waves": [w(0, 100, 1)]}), "items[0].unsold"),
    ];
    for (why, item, field) in cases {
        let a = put_campaign(&s, "bad", item).await;
        assert_eq!(a.status, 422, "{why}: {}", a.body);
        assert_eq!(
            (a.body["code"].as_str(), a.body["field"].as_str()),
            (Some("validation_failed"), Some(field)),
            "{why}"
        );
    }
    assert_eq!(s.get("/campaigns/bad", None).await.status, 404);
    assert_eq!(s.fingerprint().await, before, "a refused campaign wrote something");
    s.assert_invariants().await;
}
