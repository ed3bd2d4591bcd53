//! The stock journal (docs/after-sale.md, "Stock journal"): after a mixed run on one SKU —
//! admin adjustments and a shard-count change by an admin with a known `sub`, checkouts, a
//! payment, a cancel, an expiry — the journal read over HTTP pages newest first, sums to the
//! counters, names the admin on adjustments and the order on every lock move, and the
//! reconcile check holds.

use super::common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const SKU: &str = "JRNL";

/// Every entry of the SKU's journal through the route, `limit` per page.
async fn all_entries(s: &Stack, token: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/admin/skus/{SKU}/journal?limit={limit}&cursor={c}"),
            None => format!("/admin/skus/{SKU}/journal?limit={limit}"),
        };
        let a = s.get(&path, Some(token)).await;
        assert_eq!(a.status, 200, "{}", a.body);
        let page = a.body["entries"].as_array().expect("entries").clone();
        assert!(page.len() <= limit);
        out.extend(page);
        match a.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
}

fn sums(entries: &[Value]) -> (i64, i64, i64) {
    let d = |e: &Value, k: &str| e["after"][k].as_i64().unwrap() - e["before"][k].as_i64().unwrap();
    entries.iter().fold((0, 0, 0), |(a, l, s), e| (a + d(e, "available"), l + d(e, "locked"), s + d(e, "sold")))
}

async fn counters(s: &Stack) -> (i64, i64, i64) {
    let snap = s.local.snapshot().await.expect("snapshot");
    let sku = snap.skus.iter().find(|k| k.sku.as_str() == SKU).expect("the SKU");
    sku.shards.iter().fold((0, 0, 0), |(a, l, d), c| (a + c.available, l + c.locked, d + c.sold))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_journal_of_a_mixed_run_pages_newest_first_sums_to_the_counters_and_names_every_cause() {
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "3")]).await;
    let ops = s.local.token("ops-alice", &["stock:admin"]);
    let spec = json!({"name": "Journal hat", "price": 500, "currency": "EUR", "shards": 2});
    let a = s.call("PUT", &format!("/admin/skus/{SKU}"), Some(&ops), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    for (id, delta, reason) in [("adj-1", 10, "delivery"), ("adj-2", -2, "damaged in store")] {
        let b = json!({"adjustment_id": id, "delta": delta, "reason": reason});
        let a = s.post(&format!("/admin/skus/{SKU}/adjustments"), &ops, b).await;
        assert_eq!(a.status, 201, "{}", a.body);
    }
    // a shard-count change moves available units between shards: a rebalance by ops-alice
    let spec = json!({"name": "Journal hat", "price": 500, "currency": "EUR", "shards": 3});
    let a = s.call("PUT", &format!("/admin/skus/{SKU}"), Some(&ops), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 200, "{}", a.body);

    let paid = s.order_id("buyer-a", "k", json!([{"sku": SKU, "quantity": 2}])).await;
    let cancelled = s.order_id("buyer-b", "k", json!([{"sku": SKU, "quantity": 1}])).await;
    let expired = s.order_id("buyer-c", "k", json!([{"sku": SKU, "quantity": 1}])).await;
    assert_eq!(s.pay(&paid, "pay-1", 1000, "SUCCEEDED").await.status, 200);
    assert_eq!(s.cancel("buyer-b", &cancelled).await.status, 200);
    for (id, want) in [(&paid, "SOLD"), (&cancelled, "RELEASED"), (&expired, "RELEASED")] {
        eventually(&format!("{id} to be {want}"), Duration::from_secs(40), || async {
            (s.lock_status(id).await.as_deref() == Some(want)).then_some(())
        })
        .await;
    }

    // the stream consumer catches up with the last write: the journal sums to the counters
    let now = counters(&s).await;
    assert_eq!(now, (6, 0, 2));
    let entries = eventually("the journal to sum to the counters", Duration::from_secs(30), || async {
        let e = all_entries(&s, &s.admin, 100).await;
        (sums(&e) == now).then_some(e)
    })
    .await;

    // paged by 3 it is the same list, newest first, every id once
    let paged = all_entries(&s, &ops, 3).await;
    assert_eq!(paged, entries);
    let ids: Vec<&str> = paged.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first, no repeats: {ids:?}");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());

    // adjustments and the rebalance carry the admin's sub and reason
    let by = |why: &str| paged.iter().filter(|e| e["why"] == why).cloned().collect::<Vec<_>>();
    let adjusts = by("adjust");
    assert!(!adjusts.is_empty());
    assert!(adjusts.iter().all(|e| e["actor"] == "ops-alice"), "{adjusts:#?}");
    assert!(adjusts.iter().any(|e| e["cause"] == "adj-1" && e["reason"] == "delivery"));
    assert!(adjusts.iter().any(|e| e["cause"] == "adj-2" && e["reason"] == "damaged in store"));
    let rebalances = by("rebalance");
    assert!(!rebalances.is_empty() && rebalances.iter().all(|e| e["actor"] == "ops-alice"), "{rebalances:#?}");
    assert_eq!(by("create").len(), 2, "one creation per shard the SKU was created with");
    let zero = json!({"available": 0, "locked": 0, "sold": 0});
    assert!(rebalances.iter().any(|e| e["shard"] == 2 && e["before"] == zero), "the rebalance created shard 2");

    // every lock move names its order; the freeze names its buyer
    let moves = |why: &str, cause: &str| paged.iter().filter(|e| e["why"] == why && e["cause"] == cause).count();
    assert!(moves("freeze", &paid) >= 1 && moves("sell", &paid) >= 1);
    assert!(moves("freeze", &cancelled) >= 1 && moves("release", &cancelled) >= 1);
    assert!(moves("freeze", &expired) >= 1 && moves("release", &expired) >= 1);
    assert!(paged
        .iter()
        .filter(|e| e["why"] == "freeze" && e["cause"] == paid.as_str())
        .all(|e| e["actor"] == "buyer-a"));
    assert!(paged.iter().filter(|e| e["why"] == "sell").all(|e| e["actor"] == "system"));
    let q: i64 = paged.iter().filter(|e| e["why"] == "sell").map(|e| e["quantity"].as_i64().unwrap()).sum();
    assert_eq!(q, 2);

    // the same entries by cause id, from the index (what GET /admin/orders/{id} reads)
    let app = s.local.app("stock-api").expect("stock-api");
    let by_cause = eventually("the by-ref index", Duration::from_secs(10), || async {
        let v = app.journal.for_cause(&paid).await.expect("for_cause");
        (v.len() == moves("freeze", &paid) + moves("sell", &paid)).then_some(v)
    })
    .await;
    assert!(by_cause.iter().all(|e| e.cause == paid && e.sku.as_str() == SKU));

    // bad input: 4xx problem+json, nothing written
    for q in ["limit=0", "limit=101", "limit=ten", "cursor=not-a-cursor", "cursor=0000000000001%23%2F"] {
        let a = s.get(&format!("/admin/skus/{SKU}/journal?{q}"), Some(&ops)).await;
        assert_eq!((a.status, a.body["code"].as_str()), (422, Some("validation_failed")), "{q}: {}", a.body);
    }
    let a = s.get("/admin/skus/NOPE/journal", Some(&ops)).await;
    assert_eq!(a.status, 404, "{}", a.body);
    assert_eq!(s.get(&format!("/admin/skus/{SKU}/journal"), Some(&s.user("buyer-a"))).await.status, 403);
    assert_eq!(s.get(&format!("/admin/skus/{SKU}/journal"), None).await.status, 401);
    assert_eq!(all_entries(&s, &ops, 100).await, entries, "reads wrote nothing");

    // the reconcile check agrees, and every invariant holds
    let rep = s.reconcile().await;
    assert_eq!(rep["violations"], json!([]), "{rep}");
    assert!(rep["journals_held"].as_u64() >= Some(1), "{rep}");
    assert_eq!(rep["journals_incomplete"], 0, "{rep}");
    s.assert_invariants().await;
}
