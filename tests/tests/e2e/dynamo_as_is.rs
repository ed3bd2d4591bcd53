//! DynamoDB as it is under load, on the emulator (DESIGN §23; `EmulateDynamoDB` in
//! infra/emulator/launcher.py): with transaction conflicts switched on for this stack's tables,
//! the freeze still sells exactly the stock.

use crate::common::{emulator, spawn, Stack};
use futures::future::join_all;
use serde_json::{json, Value};
use std::time::Duration;

/// Switches the emulator's behaviours under load on (`spec`, `HOLDFAST_EMULATE` syntax) for this
/// stack's tables only, or off with `""`; answers the emulator's view (scopes and stats).
async fn emulate(s: &Stack, spec: &str) -> Value {
    let url = format!("{}/_holdfast/emulate", emulator());
    let body = json!({"owner": s.local.prefix, "match": s.local.prefix, "switches": spec});
    let r = reqwest::Client::new().post(&url).body(body.to_string()).send().await.expect("the emulator answers");
    assert!(r.status().is_success(), "setting the emulator's switches: {}", r.status());
    r.json().await.expect("json")
}

/// A partner's reservation, retried with the same order id (the same request) while the answer
/// is "busy" (429) or "retry" (5xx), as a client does.
async fn reserve_until_answered(s: &Stack, order_id: &str, items: &Value) -> (u16, Value, u32) {
    for attempt in 0..30 {
        let a = s.post("/reservations", &s.internal, json!({"order_id": order_id, "items": items})).await;
        if a.status != 429 && a.status < 500 {
            return (a.status, a.body, attempt);
        }
        tokio::time::sleep(Duration::from_millis(20 + 10 * u64::from(attempt))).await;
    }
    panic!("{order_id}: no answer but busy after 30 tries")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_transaction_conflicts_on_the_freeze_sells_exactly_the_stock_and_refuses_no_one_falsely() {
    let s = spawn().await;
    s.sku("CONTEND", 100, 24, 4, None).await;
    let before = emulate(&s, "conflicts=40").await["stats"]["conflicts"].as_u64().unwrap_or(0);
    let items = json!([{"sku": "CONTEND", "quantity": 1}]);
    let results = join_all((0..48).map(|i| {
        let (s, items) = (&s, &items);
        async move { reserve_until_answered(s, &format!("cf-{i}"), items).await }
    }))
    .await;
    let after = emulate(&s, "").await["stats"]["conflicts"].as_u64().unwrap_or(0);
    let ok = results.iter().filter(|(st, _, _)| *st == 201).count();
    let short = results
        .iter()
        .filter(|(st, b, _)| *st == 409 && b["code"] == "insufficient_stock" && b["sku"] == "CONTEND")
        .count();
    assert_eq!((ok, short), (24, 24), "{:?}", results.iter().find(|(st, _, _)| *st != 201 && *st != 409));
    let v = s.view("CONTEND").await;
    // a false sold-out: a buyer refused while a unit stayed unsold at quiescence
    assert_eq!((v["available"].as_i64(), v["locked"].as_i64()), (Some(0), Some(24)), "{v}");
    assert!(after > before, "the emulator cancelled transactions for conflicts ({before} -> {after})");
    s.assert_invariants().await;
}
