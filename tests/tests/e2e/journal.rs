//! The stock journal (docs/after-sale.md, "Stock journal"): after a mixed run on one SKU —
//! admin adjustments and a shard-count change by an admin with a known `sub`, checkouts, a
//! payment, a cancel, an expiry — the journal read over HTTP pages newest first, sums to the
//! counters, names the admin on adjustments and the order on every lock move, and the
//! reconcile check holds. And the journal's partitions (docs/after-sale.md, "Where entries
//! live"): read by DynamoDB and by the in-memory store alike, a table written before the spread
//! included.

use super::common::*;
use holdfast::ports::Journal;
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

/// An entry of shard `shard` at `at_ms`, caused by `cause`.
fn entry(sku: &str, shard: u16, at_ms: i64, cause: &str) -> holdfast::domain::journal::Entry {
    use holdfast::domain::invariants::ShardCounts;
    holdfast::domain::journal::Entry {
        sku: holdfast::domain::Sku::parse(sku).unwrap(),
        shard,
        campaign: None,
        before: ShardCounts { available: 10, locked: 0, sold: 0 },
        after: ShardCounts { available: 9, locked: 1, sold: 0 },
        quantity: 1,
        cause: cause.to_owned(),
        actor: "system".into(),
        why: "freeze".into(),
        reason: None,
        at_ms,
        seq: holdfast::domain::journal::entry_key(at_ms, &format!("{:021}", at_ms * 7 + i64::from(shard))),
    }
}

/// Every page of a read, newest first (`for_sku`) and oldest first (`since`), `limit` at a time.
async fn reads(j: &dyn Journal, sku: &str, spread: u16, limit: usize) -> (Vec<String>, Vec<String>) {
    let sku = holdfast::domain::Sku::parse(sku).unwrap();
    let (mut newest, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let (page, next) = j.for_sku(&sku, spread, cursor.as_deref(), limit).await.expect("for_sku");
        assert!(page.len() <= limit);
        newest.extend(page.iter().map(|e| format!("{}:{}", e.shard, e.seq)));
        match next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    let (mut oldest, mut after) = (Vec::new(), None::<String>);
    loop {
        let (page, next) = j.since(&sku, spread, after.as_deref(), limit).await.expect("since");
        assert!(page.len() <= limit);
        oldest.extend(page.iter().map(|e| format!("{}:{}", e.shard, e.seq)));
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    (newest, oldest)
}

#[tokio::test]
async fn a_skus_journal_is_spread_over_its_shards_partitions_and_reads_the_same_from_both_stores() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let s = spawn().await;
    let sku = format!("SPREAD{}", fastrand::u32(..));
    let dynamo = s.local.app("stock-api").expect("stock-api").journal.clone();
    let memory = holdfast::adapters::memory::MemoryJournal::new();
    // shards 0..=2 and a quota shard 66 (partition 2), interleaved in time
    let now: Vec<_> = (0..12).map(|i| entry(&sku, [0, 1, 2, 66][i % 4], 1_700_000_000_000 + i as i64, "o")).collect();
    dynamo.put(&now).await.expect("put");
    memory.put(&now).await.expect("put");
    // entries written before the journal was spread: every shard's in `J#<sku>`
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    let table = s.local.resources.table("JournalTable").unwrap().to_owned();
    let before: Vec<_> = (0..5).map(|i| entry(&sku, [0, 2, 1, 3, 0][i], 1_699_999_999_000 + i as i64, "old")).collect();
    for e in &before {
        let mut it = holdfast::adapters::dynamo::journal::encode(e);
        assert_eq!(it["pk"], AttributeValue::S(format!("J#{sku}#{}", e.shard % 64)), "written to its partition");
        it.insert("pk".into(), AttributeValue::S(format!("J#{sku}")));
        ddb.put_item().table_name(&table).set_item(Some(it)).send().await.unwrap();
    }
    memory.put(&before).await.expect("put");

    for (spread, limit) in [(3, 2), (3, 100), (2, 3), (1, 1), (64, 4)] {
        let (d, m) = (reads(dynamo.as_ref(), &sku, spread, limit).await, reads(&memory, &sku, spread, limit).await);
        assert_eq!(d, m, "spread {spread}, {limit} a page: DynamoDB and memory read the same");
        let (newest, oldest) = d;
        // the entries of the partitions below the spread, by key
        let mut all: Vec<_> = now.iter().chain(&before).filter(|e| e.shard % 64 < spread).collect();
        all.sort_by(|a, b| a.seq.cmp(&b.seq));
        let mut want: Vec<String> = all.iter().map(|e| format!("{}:{}", e.shard, e.seq)).collect();
        assert_eq!(oldest, want, "spread {spread}: every entry of its partitions, oldest first, once");
        want.reverse();
        assert_eq!(newest, want, "spread {spread}: newest first");
    }
}
