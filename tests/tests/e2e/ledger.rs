//! The daily ledger report over HTTP on the local stack (docs/operations.md, "Daily ledger
//! report"): a day of orders of several kinds reports clean with totals that match the stock
//! views and the orders placed; a counter written behind the ledgers' back, and a journal entry
//! lost, are each named by kind and SKU, and the report is clean again once they are undone.

use crate::common::{eventually, problem, spawn, Stack};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(40);

fn today() -> String {
    holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s()).to_string()
}

async fn ledger(s: &Stack, day: &str) -> Value {
    let a = s.get(&format!("/admin/ledger/{day}"), Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

/// The report once it is clean (the journal trails the counters by its stream: a write of the
/// last moment may not be journaled yet).
async fn clean_report(s: &Stack) -> Value {
    eventually("a clean ledger report", WAIT, || async {
        let r = ledger(s, &today()).await;
        (r["clean"] == true).then_some(r)
    })
    .await
}

/// The report once it is clean and the journal has caught up with the counters: a release
/// moves the counters after its lock reads RELEASED, and the journal trails them by its stream,
/// so a report can be clean (a lag seen by one read only is not a difference) while its journal
/// totals are still a step behind its stock totals.
async fn settled_report(s: &Stack) -> Value {
    eventually("a clean report with the journal caught up", WAIT, || async {
        let r = ledger(s, &today()).await;
        let t = &r["totals"];
        let caught_up = ["available", "frozen", "sold"].iter().all(|k| t["journal"][k] == t["stock"][k]);
        (r["clean"] == true && caught_up).then_some(r)
    })
    .await
}

/// Pays `id` on the simulated provider's page, as its buyer would.
async fn pay_at_provider(s: &Stack, user: &str, id: &str) {
    let a = s.call("POST", &format!("/orders/{id}/payments"), Some(&s.user(user)), &[], None).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let r = reqwest::Client::new()
        .post(a.body["redirect_url"].as_str().expect("redirect_url"))
        .json(&json!({"outcome": "succeed", "webhook": "deliver"}))
        .send()
        .await
        .expect("the provider's page answers");
    assert!(r.status().is_success(), "pay page: {}", r.status());
    s.order_reaches(user, id, "PAID").await;
    s.lock_reaches(id, "SOLD").await;
}

fn differences(r: &Value) -> Vec<(String, String)> {
    r["differences"]
        .as_array()
        .expect("differences")
        .iter()
        .map(|d| (d["kind"].as_str().unwrap_or("").to_owned(), d["subject"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[tokio::test]
async fn a_day_of_plain_code_and_campaign_orders_reports_clean_with_totals_that_match() {
    let s = spawn().await;
    s.sku("PLAIN", 500, 10, 2, None).await;
    s.model_sku("CODES", 1000, 1, json!({"management": "CODE_POOL"}), None).await;
    let codes: Vec<String> = (0..3).map(|i| format!("LEDGER-{i}-{:08X}", fastrand::u32(..))).collect();
    let up = s.post("/admin/skus/CODES/codes", &s.admin, json!({"batch_id": "b1", "codes": codes})).await;
    assert_eq!(up.status, 201, "{}", up.body);
    s.sku("DROP", 800, 10, 1, None).await;
    let at = |off: i64| holdfast::clock::rfc3339((holdfast::clock::now_s() + off) * 1000);
    let body = json!({"name": "drop", "starts_at": at(-5), "ends_at": at(600),
                      "items": [{"sku": "DROP", "quota": 5, "price": 400}]});
    let c = s.call("PUT", "/admin/campaigns/c1", Some(&s.admin), &[], Some(body.to_string())).await;
    assert_eq!(c.status, 201, "{}", c.body);

    let plain = s.order_id("ann", "k1", json!([{"sku": "PLAIN", "quantity": 2}])).await;
    pay_at_provider(&s, "ann", &plain).await;
    let code = s.order_id("bob", "k1", json!([{"sku": "CODES", "quantity": 1}])).await;
    pay_at_provider(&s, "bob", &code).await;
    let in_campaign = s.order_id("cat", "k1", json!([{"sku": "DROP", "quantity": 1, "campaign_id": "c1"}])).await;
    assert_eq!(s.lock_status(&in_campaign).await.as_deref(), Some("FROZEN"));
    let cancelled = s.order_id("dan", "k1", json!([{"sku": "PLAIN", "quantity": 1}])).await;
    assert_eq!(s.cancel("dan", &cancelled).await.status, 200);
    s.lock_reaches(&cancelled, "RELEASED").await;

    let r = settled_report(&s).await;
    let t = &r["totals"];
    assert_eq!((r["date"].as_str(), r["complete"].as_bool()), (Some(today().as_str()), Some(true)), "{r}");
    assert_eq!(r["differences_total"], 0);
    // the counters: the same as each SKU's own view
    let mut want = (0, 0, 0);
    for sku in ["PLAIN", "CODES", "DROP"] {
        let (a, f, so) = s.exact(sku).await;
        want = (want.0 + a, want.1 + f, want.2 + so);
    }
    let st = &t["stock"];
    assert_eq!(
        (st["available"].as_i64(), st["frozen"].as_i64(), st["sold"].as_i64()),
        (Some(want.0), Some(want.1), Some(want.2)),
        "{r}"
    );
    assert_eq!(want, (8 + 2 + 9, 1, 3), "one campaign unit frozen; 2 plain and 1 code sold");
    // the day's orders and locks, by status, with their units
    assert_eq!(t["orders"], json!({"PAID": 2, "PENDING_PAYMENT": 1, "CANCELLED": 1}), "{r}");
    assert_eq!(t["locks"]["SOLD"], json!({"locks": 2, "units": 3}));
    assert_eq!(t["locks"]["FROZEN"], json!({"locks": 1, "units": 1}));
    assert_eq!(t["locks"]["RELEASED"], json!({"locks": 1, "units": 1}));
    // every SKU was made today: the day's journal moved the counters from zero to where they are
    let j = &t["journal"];
    assert!(j["skus_checked"].as_u64() >= Some(3) && j["skus_unchecked"] == 0, "{r}");
    assert_eq!(
        (j["available"].as_i64(), j["frozen"].as_i64(), j["sold"].as_i64()),
        (Some(want.0), Some(want.1), Some(want.2)),
        "{r}"
    );
    // the money: two orders paid today, captured at the provider and matched by the settlement
    let m = &t["money"];
    assert_eq!((m["paid_orders"].as_u64(), m["captured"]["EUR"].as_u64()), (Some(2), Some(2 * 500 + 1000)), "{r}");
    assert_eq!(m["payments_matched"], 2, "{r}");
    let skus: Vec<&str> = r["skus"].as_array().unwrap().iter().filter_map(|k| k["sku"].as_str()).collect();
    assert!(["CODES", "DROP", "PLAIN"].iter().all(|k| skus.contains(k)), "{skus:?}");
    let plain_row = r["skus"].as_array().unwrap().iter().find(|k| k["sku"] == "PLAIN").unwrap();
    assert_eq!(plain_row["shards"].as_array().unwrap().len(), 2, "per shard: {plain_row}");
    // another day has no orders, and the same counters
    let yesterday = holdfast::domain::model::Day::of_epoch_s(holdfast::clock::now_s() - 86_400).to_string();
    let y = ledger(&s, &yesterday).await;
    assert_eq!((y["totals"]["orders"].clone(), y["clean"].clone()), (json!({}), json!(true)), "{y}");
    assert_eq!(y["totals"]["stock"], r["totals"]["stock"]);

    // bad input: not a date, not a real date, in the future; no token, a buyer's token
    let before = s.fingerprint().await;
    for bad in ["yesterday", "2026-13-01", "2026-2-01", "2999-01-01"] {
        problem(&s.get(&format!("/admin/ledger/{bad}"), Some(&s.admin)).await, 422, "validation_failed");
    }
    assert_eq!(s.get(&format!("/admin/ledger/{}", today()), None).await.status, 401);
    assert_eq!(s.get(&format!("/admin/ledger/{}", today()), Some(&s.user("ann"))).await.status, 403);
    assert_eq!(s.fingerprint().await, before, "a report writes nothing");
    s.assert_invariants().await;
}

#[tokio::test]
async fn a_counter_written_behind_the_ledgers_back_and_a_lost_journal_entry_are_named_then_clean_once_undone() {
    let s = spawn().await;
    s.sku("PLANT", 500, 10, 1, None).await;
    let id = s.order_id("ann", "k1", json!([{"sku": "PLANT", "quantity": 1}])).await;
    pay_at_provider(&s, "ann", &id).await;
    clean_report(&s).await;
    let counted = || holdfast::telemetry::snapshot().get("LedgerDifferences").copied().unwrap_or(0);
    let before = counted();

    // a frozen counter raised by a raw write, as a broken script or a hand-made repair would
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    let table = s.local.resources.table("StockTable").unwrap().to_owned();
    let add_frozen = |n: i64| {
        ddb.update_item()
            .table_name(&table)
            .key("pk", AttributeValue::S("SKU#PLANT#0".into()))
            .update_expression("ADD lk :n")
            .expression_attribute_values(":n", AttributeValue::N(n.to_string()))
            .send()
    };
    add_frozen(1).await.unwrap();
    let r = ledger(&s, &today()).await;
    assert_eq!(r["clean"], false, "{r}");
    let d = differences(&r);
    assert!(d.contains(&("locked_mismatch".into(), "PLANT".into())), "{r}");
    assert!(d.contains(&("total_mismatch".into(), "PLANT".into())), "{r}");
    assert!(d.iter().all(|(_, subject)| subject == "PLANT"), "only the planted SKU: {r}");
    let locked = r["differences"].as_array().unwrap().iter().find(|x| x["kind"] == "locked_mismatch").unwrap();
    assert_eq!((locked["expected"].as_i64(), locked["found"].as_i64()), (Some(0), Some(1)), "no FROZEN lock, 1 frozen");
    assert!(counted() >= before + 2, "LedgerDifferences counted");
    // … the invariants the tests check see the same
    assert!(!s.violations().await.is_empty());
    add_frozen(-1).await.unwrap();
    clean_report(&s).await;

    // a journal entry of the day lost: the entries no longer chain
    let journal = s.local.resources.table("JournalTable").unwrap().to_owned();
    let entries = ddb
        .query()
        .table_name(&journal)
        .key_condition_expression("pk = :pk")
        // the SKU's one shard's partition of the journal (docs/after-sale.md, "Where entries live")
        .expression_attribute_values(":pk", AttributeValue::S("J#PLANT#0".into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert!(entries.len() >= 3, "create, stock, freeze, sell …: {}", entries.len());
    let lost = entries[entries.len() / 2].clone();
    ddb.delete_item()
        .table_name(&journal)
        .key("pk", lost["pk"].clone())
        .key("sk", lost["sk"].clone())
        .send()
        .await
        .unwrap();
    let r = ledger(&s, &today()).await;
    assert_eq!(differences(&r), vec![("journal_gap".to_owned(), "PLANT".to_owned())], "{r}");
    ddb.put_item().table_name(&journal).set_item(Some(lost)).send().await.unwrap();
    clean_report(&s).await;
    s.assert_invariants().await;
}
