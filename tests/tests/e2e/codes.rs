//! Code pools end to end (docs/code-pools.md): a flash sale of unique codes over HTTP on the
//! local stack — every code handed out once, released codes handed out again, a code shown to
//! nobody but its paid owner and in no log line — and the upload's refusals.

use crate::common::{advance_clock, capture_logs, eventually, size, spawn, spawn_with, Answer, Stack};
use futures::future::join_all;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

async fn pool_sku(s: &Stack, sku: &str, shards: u16) {
    let spec = json!({"name": "gift card", "price": 1000, "currency": "EUR", "shards": shards,
                      "model": {"management": "CODE_POOL"}});
    let a = s.call("PUT", &format!("/admin/skus/{sku}"), Some(&s.admin), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
}

async fn upload(s: &Stack, sku: &str, batch: &str, codes: &[String]) -> Answer {
    s.post(&format!("/admin/skus/{sku}/codes"), &s.admin, json!({"batch_id": batch, "codes": codes})).await
}

async fn pool(s: &Stack, sku: &str) -> Value {
    let a = s.get(&format!("/admin/skus/{sku}/codes"), Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body
}

/// Four buyers per code race for a pool: each holder gets a distinct code, nobody a false sold-out,
/// and the codes of orders never paid go back to the pool and sell again. `HOLDFAST_SOAK_CODES`
/// sets the pool's size; `make test` races 80 buyers for 20 codes, `make soak` 400 for 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_buyers_per_code_each_holder_gets_a_distinct_code_and_released_codes_sell_again() {
    let n = size("HOLDFAST_SOAK_CODES", 20);
    let logs = capture_logs();
    // The deadline outlasts the race on a loaded machine (a payment after it is refunded, not
    // applied); the test clock then moves past it instead of waiting it out.
    let ttl = Duration::from_secs(90);
    let s = spawn_with(&[
        ("HOLDFAST_PAYMENT_TTL_SECONDS", &ttl.as_secs().to_string()),
        ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "5"),
    ])
    .await;
    pool_sku(&s, "GIFT", 4).await;
    let uploaded: Vec<String> = (0..n).map(|i| format!("GIFT-{:04}-{:08X}", i, fastrand::u32(..))).collect();
    let a = upload(&s, "GIFT", "b-1", &uploaded).await;
    assert_eq!((a.status, a.body["added"].as_u64(), a.body["duplicates"].as_u64()), (201, Some(n as u64), Some(0)));
    let p = pool(&s, "GIFT").await;
    assert_eq!((p["uploaded"].as_u64(), p["available"].as_u64()), (Some(n as u64), Some(n as u64)), "{p}");

    // four buyers per code at once; four in five holders pay at once, the others never do
    let race = std::time::Instant::now();
    let results = join_all((0..4 * n).map(|i| {
        let s = &s;
        async move {
            let user = format!("buyer-{i}");
            let a = s.checkout(&user, "k", json!([{"sku": "GIFT", "quantity": 1}])).await;
            if a.status == 201 {
                let id = a.body["order_id"].as_str().unwrap().to_owned();
                // not visible before payment, nor to anyone else
                let early = s.codes_of(&user, &id).await;
                assert_eq!((early.status, early.body["code"].as_str()), (409, Some("not_paid")), "{}", early.body);
                if i % 5 != 0 {
                    let paid = s.pay(&id, &format!("pay-{id}"), 1000, "SUCCEEDED").await;
                    assert_eq!(paid.status, 200, "{}", paid.body);
                }
                return (user, a.status, Some(id), i % 5 != 0);
            }
            (user, a.status, None, false)
        }
    }))
    .await;
    let created: Vec<_> = results.iter().filter(|r| r.1 == 201).collect();
    let refused = results.iter().filter(|r| r.1 == 409).count();
    // (how long the race took is printed for the README's figure, never asserted)
    eprintln!("{} buyers for {n} codes: race over in {:.1} s", 4 * n, race.elapsed().as_secs_f64());
    assert_eq!((created.len(), refused), (n, 3 * n), "exactly {n} holders, no false sold-out");
    let paid: Vec<(String, String)> =
        created.iter().filter(|r| r.3).map(|r| (r.0.clone(), r.2.clone().unwrap())).collect();
    let unpaid_ids: Vec<(String, String)> =
        created.iter().filter(|r| !r.3).map(|r| (r.0.clone(), r.2.clone().unwrap())).collect();
    let unpaid = unpaid_ids.len();
    assert!(unpaid > 0 && !paid.is_empty(), "both kinds of holder: {unpaid} unpaid of {n}");

    // the unpaid ones expire and their codes go back to the pool: the deadline and the sweep's
    // grace pass on the test clock, and the sweep expires the overdue orders (their timeout
    // messages are still on their way: SQS delays keep real time)
    let stale = s.local.app("reconcile-worker").expect("reconcile-worker").config.stale_lock_s;
    advance_clock(ttl + Duration::from_secs(stale as u64 + 1));
    s.reconcile().await;
    for (user, id) in &unpaid_ids {
        assert_eq!(s.get_order(user, id).await.body["status"], "EXPIRED");
    }
    eventually("the unpaid orders' codes back in the pool", Duration::from_secs(60), || async {
        let (av, lk, sd) = s.exact("GIFT").await;
        ((av, lk, sd) == (unpaid as i64, 0, paid.len() as i64)).then_some(())
    })
    .await;
    // … and are handed out again
    let second = join_all((0..unpaid).map(|i| {
        let s = &s;
        async move {
            let user = format!("late-{i}");
            let a = s.checkout(&user, "k", json!([{"sku": "GIFT", "quantity": 1}])).await;
            assert_eq!(a.status, 201, "{}", a.body);
            let id = a.body["order_id"].as_str().unwrap().to_owned();
            let paid = s.pay(&id, &format!("pay-{id}"), 1000, "SUCCEEDED").await;
            assert_eq!(paid.status, 200, "{}", paid.body);
            (user, id)
        }
    }))
    .await;
    let sold_out = s.checkout("one-too-many", "k", json!([{"sku": "GIFT", "quantity": 1}])).await;
    assert_eq!((sold_out.status, sold_out.body["code"].as_str()), (409, Some("insufficient_stock")));

    // every paid order shows exactly one code to its owner: 100 distinct codes, the uploaded set
    let mut seen = HashSet::new();
    for (user, id) in paid.iter().chain(&second) {
        // shown once the payment's stock move ran (503 with Retry-After until then)
        let a = eventually("the codes of a paid order", Duration::from_secs(30), || async {
            let a = s.codes_of(user, id).await;
            (a.status != 503).then_some(a)
        })
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.headers.get("cache-control").and_then(|v| v.to_str().ok()), Some("private, no-store"));
        let codes = a.body["codes"].as_array().unwrap();
        assert_eq!(codes.len(), 1, "{}", a.body);
        assert_eq!(codes[0]["sku"], "GIFT");
        let code = codes[0]["code"].as_str().unwrap().to_owned();
        assert!(seen.insert(code.clone()), "code handed out twice: order {id}");
        let other = s.codes_of("someone-else", id).await;
        assert_eq!(other.status, 404, "another user must not see it: {}", other.body);
    }
    assert_eq!(seen, uploaded.iter().cloned().collect::<HashSet<_>>());
    let p = pool(&s, "GIFT").await;
    assert_eq!(
        (p["available"].as_u64(), p["sold"].as_u64(), p["low"].as_bool()),
        (Some(0), Some(n as u64), Some(true))
    );
    assert!(uploaded.iter().all(|c| !p.to_string().contains(c.as_str())));
    s.assert_invariants().await;

    // no code appears in any log line of the run
    let text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(text.lines().count() > 100, "the capture must see the stack's logs");
    for c in &uploaded {
        assert!(!text.contains(c.as_str()), "a code appeared in a log line");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batches_are_refused_with_a_problem_and_write_nothing() {
    let s = spawn().await;
    pool_sku(&s, "VOUCH", 2).await;
    s.sku("PLAIN", 100, 5, 1, None).await;
    let codes: Vec<String> = (0..10).map(|i| format!("V-{i:03}-ABCDEFGH")).collect();
    assert_eq!(upload(&s, "VOUCH", "first", &codes).await.status, 201);
    let before = pool(&s, "VOUCH").await;

    let problem = |a: &Answer, status: u16, code: &str| {
        assert_eq!((a.status, a.body["code"].as_str()), (status, Some(code)), "{}", a.body);
        assert_eq!(a.headers.get("content-type").and_then(|v| v.to_str().ok()), Some("application/problem+json"));
    };
    problem(&upload(&s, "VOUCH", "empty", &[]).await, 422, "validation_failed");
    let many: Vec<String> = (0..1001).map(|i| format!("M-{i:05}")).collect();
    problem(&upload(&s, "VOUCH", "many", &many).await, 422, "validation_failed");
    let ctl = upload(&s, "VOUCH", "ctl", &["GOOD-1".into(), "BAD\u{0007}CODE".into()]).await;
    problem(&ctl, 422, "validation_failed");
    assert_eq!(ctl.body["field"], "codes[1]");
    problem(&upload(&s, "VOUCH", "bad id!", &["X-1".into()]).await, 422, "validation_failed");
    problem(&upload(&s, "PLAIN", "p", &["X-1".into()]).await, 422, "validation_failed");
    problem(&upload(&s, "NOPE", "p", &["X-1".into()]).await, 404, "not_found");
    let huge = json!({"batch_id": "huge", "codes": ["x".repeat(1024 * 1024)]}).to_string();
    let a = s.call("POST", "/admin/skus/VOUCH/codes", Some(&s.admin), &[], Some(huge)).await;
    problem(&a, 413, "payload_too_large");
    let a = s.call("POST", "/admin/skus/VOUCH/codes", Some(&s.admin), &[], Some("{\"batch_id\":".into())).await;
    problem(&a, 400, "malformed_json");
    let a = s
        .call(
            "POST",
            "/admin/skus/VOUCH/codes",
            Some(&s.user("eve")),
            &[],
            Some(json!({"batch_id":"x","codes":["A-1"]}).to_string()),
        )
        .await;
    assert!(a.status == 401 || a.status == 403, "a buyer cannot upload: {}", a.body);
    let adj = s
        .post("/admin/skus/VOUCH/adjustments", &s.admin, json!({"adjustment_id": "a", "delta": 5, "reason": "more"}))
        .await;
    problem(&adj, 422, "validation_failed");
    // the same batch again answers the same; the same id with other codes is refused
    let again = upload(&s, "VOUCH", "first", &codes).await;
    assert_eq!((again.status, again.body["added"].as_u64()), (200, Some(10)), "{}", again.body);
    problem(&upload(&s, "VOUCH", "first", &codes[..5]).await, 422, "idempotency_key_reused");
    assert_eq!(pool(&s, "VOUCH").await, before, "nothing written by a refused batch");

    // duplicates (already pooled, or twice in the batch) are refused, counted and shown masked
    let mut mixed = codes[..3].to_vec();
    mixed.push("V-NEW-0001-XYZW".into());
    mixed.push("V-NEW-0001-XYZW".into());
    let a = upload(&s, "VOUCH", "second", &mixed).await;
    assert_eq!((a.status, a.body["added"].as_u64(), a.body["duplicates"].as_u64()), (201, Some(1), Some(4)));
    let shown = a.body["duplicate_codes"].to_string();
    assert!(shown.contains("XYZW") && !shown.contains("V-NEW") && !shown.contains("V-000"), "{shown}");
    assert_eq!(pool(&s, "VOUCH").await["uploaded"], 11);

    // a line over the per-line cap is refused before any write
    let a = s.order("bob", "k", json!([{"sku": "VOUCH", "quantity": 21}])).await;
    problem(&a, 422, "validation_failed");
    assert_eq!(s.exact("VOUCH").await, (11, 0, 0));
    // a cancelled order gives its codes back; a refunded paid order keeps them sold
    let id = s.order_id("bob", "k2", json!([{"sku": "VOUCH", "quantity": 2}])).await;
    assert_eq!(s.cancel("bob", &id).await.status, 200);
    eventually("the cancelled order's codes back", Duration::from_secs(60), || async {
        (s.exact("VOUCH").await == (11, 0, 0)).then_some(())
    })
    .await;
    s.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_claimed_by_a_checkout_that_died_go_back_through_reconcile_and_sell_again() {
    let s = spawn_with(&[("HOLDFAST_CODE_CLAIM_QUIET_MS", "500")]).await;
    pool_sku(&s, "CARD", 2).await;
    let codes: Vec<String> = (0..3).map(|i| format!("CARD-{i}-{:08X}", fastrand::u32(..))).collect();
    assert_eq!(upload(&s, "CARD", "b", &codes).await.status, 201);
    s.local.set_faults("create-order.after-code-claim").unwrap();
    let a = s.order("ivy", "k", json!([{"sku": "CARD", "quantity": 2}])).await;
    assert!(a.status >= 500, "the checkout dies after its claim: {}", a.body);
    s.local.set_faults("").unwrap();
    // two positions are claimed and bound to nothing: the pool identity is broken until repaired
    assert!(s.violations().await.iter().any(|v| matches!(v, holdfast::domain::invariants::Violation::CodePool { .. })));
    // the claimed shard's quiet period passes (on the test clock)
    advance_clock(Duration::from_millis(800));
    let report = s.reconcile().await;
    assert_eq!(report["codes_returned"], 2, "{report}");
    assert_eq!(s.reconcile().await["codes_returned"], 0, "a second run returns nothing twice");
    s.assert_invariants().await;
    // all three sell, each once
    let id = s.order_id("ivy", "k2", json!([{"sku": "CARD", "quantity": 3}])).await;
    assert_eq!(s.pay(&id, "p-1", 3000, "SUCCEEDED").await.status, 200);
    let a = eventually("the codes of the paid order", Duration::from_secs(30), || async {
        let a = s.codes_of("ivy", &id).await;
        (a.status == 200).then_some(a)
    })
    .await;
    let got: HashSet<String> =
        a.body["codes"].as_array().unwrap().iter().map(|c| c["code"].as_str().unwrap().to_owned()).collect();
    assert_eq!(got, codes.iter().cloned().collect::<HashSet<_>>());
    s.assert_invariants().await;
}

/// Security review L6: a sold code's sealed item copied by a direct table write into the slot
/// of another order does not open there. The seal binds the SKU, the fingerprint and the slot
/// the code was uploaded to; read elsewhere, it is accepted only if it left that slot by a
/// give-back or a release, and this one is still held by its SOLD lock. The reveal answers a
/// 409 (not retried) and logs an error; the wrong code is never shown (nor the right one: it was overwritten).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sold_code_copied_into_another_orders_slot_by_a_table_write_is_refused_at_reveal() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let logs = capture_logs();
    let s = spawn().await;
    pool_sku(&s, "SEAL", 1).await;
    let codes: Vec<String> = (0..2).map(|i| format!("SEAL-{i}-{:08X}", fastrand::u32(..))).collect();
    assert_eq!(upload(&s, "SEAL", "b", &codes).await.status, 201);
    let reveal = |user: &'static str, id: String| {
        let s = &s;
        async move {
            eventually("the paid order's lock to be SOLD", Duration::from_secs(30), || async {
                let a = s.codes_of(user, &id).await;
                (a.status != 503).then_some(a)
            })
            .await
        }
    };
    // ann buys, pays and sees her code (slot 0#0)
    let ann = s.order_id("ann", "k", json!([{"sku": "SEAL", "quantity": 1}])).await;
    assert_eq!(s.pay(&ann, "p-ann", 1000, "SUCCEEDED").await.status, 200);
    let a = reveal("ann", ann.clone()).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let anns = a.body["codes"][0]["code"].as_str().unwrap().to_owned();
    assert!(codes.contains(&anns));
    // bob's checkout binds the next slot (0#1); a table writer copies ann's sold code over it
    let bob = s.order_id("bob", "k", json!([{"sku": "SEAL", "quantity": 1}])).await;
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    let table = s.local.resources.table("StockTable").unwrap();
    let item = |pk: &'static str| {
        let (ddb, table) = (&ddb, &table);
        async move {
            ddb.get_item()
                .table_name(*table)
                .key("pk", AttributeValue::S(pk.into()))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .unwrap_or_else(|| panic!("{pk} is stored"))
        }
    };
    let sold = item("CODE#SEAL#0#0").await;
    let bobs = item("CODE#SEAL#0#1").await;
    assert!(sold.contains_key("o") && bobs.contains_key("o"), "both slots are bound to their orders");
    // sealed for their slot: v3 under the stack's KMS key (v2 where no key is configured)
    assert!(sold["sc"].as_s().unwrap().starts_with("v3.0.0."), "new uploads are sealed for their slot");
    ddb.update_item()
        .table_name(table)
        .key("pk", AttributeValue::S("CODE#SEAL#0#1".into()))
        .update_expression("SET fp = :fp, kid = :kid, sc = :sc")
        .expression_attribute_values(":fp", sold["fp"].clone())
        .expression_attribute_values(":kid", sold["kid"].clone())
        .expression_attribute_values(":sc", sold["sc"].clone())
        .send()
        .await
        .unwrap();
    assert_eq!(s.pay(&bob, "p-bob", 1000, "SUCCEEDED").await.status, 200);
    let b = reveal("bob", bob.clone()).await;
    assert_eq!((b.status, b.body["code"].as_str()), (409, Some("invalid_transition")), "refused: {}", b.body);
    assert!(b.body["detail"].as_str().unwrap().contains("integrity check"), "{}", b.body);
    let text = b.body.to_string();
    assert!(!text.contains(&anns), "ann's code is never shown to bob: {text}");
    assert!(!codes.iter().any(|c| text.contains(c.as_str())), "no code in the refusal: {text}");
    // … with an error log naming the order and the slot, and no code in it either
    let lines = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let refusal = lines
        .lines()
        .find(|l| l.contains("a stored code was refused at reveal") && l.contains(&bob))
        .unwrap_or_else(|| panic!("an error log for the refused code"));
    assert!(refusal.contains("\"level\":\"ERROR\""), "{refusal}");
    assert!(refusal.contains("still holds it"), "{refusal}");
    assert!(!codes.iter().any(|c| lines.contains(c.as_str())), "no code in any log line");
    // ann's own reveal is untouched
    let again = s.codes_of("ann", &ann).await;
    assert_eq!((again.status, again.body["codes"][0]["code"].as_str()), (200, Some(anns.as_str())));
}

/// Issue 26: codes sealed under the stack's KMS key (envelope encryption; the emulator's KMS).
/// An upload makes one data key (KMS `GenerateDataKey`, encryption context = purpose + SKU) and
/// stores it, encrypted, in front of every code it seals (`v3.<shard>.<pos>.<data key>.<sealed>`);
/// the paid buyer's reveal opens it with one `Decrypt` (then cached) and shows the code. A sold
/// code copied by a direct table write into another order's slot fails to open there — as it
/// is, and with its slot prefix rewritten to the new slot — and KMS itself refuses the data key
/// under another SKU's encryption context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_sealed_under_kms_open_for_their_buyer_and_a_copy_into_another_slot_does_not() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use holdfast::adapters::usage;
    use holdfast::domain::codes::{key_context, wrapped_key, StoredCode};
    let s = spawn().await;
    pool_sku(&s, "KMSV", 1).await;
    let codes: Vec<String> = (0..3).map(|i| format!("KMSV-{i}-{:08X}", fastrand::u32(..))).collect();
    let kms_calls = |op: &str| usage::snapshot().calls.get(op).copied().unwrap_or(0);
    let (g0, d0) = (kms_calls("kms:GenerateDataKey"), kms_calls("kms:Decrypt"));
    assert_eq!(upload(&s, "KMSV", "b", &codes).await.status, 201);
    let per_upload = kms_calls("kms:GenerateDataKey") - g0;
    assert_eq!((per_upload, kms_calls("kms:Decrypt") - d0), (1, 0), "one GenerateDataKey for a batch of 3");
    let ddb = aws_sdk_dynamodb::Client::new(&s.local.sdk);
    let table = s.local.resources.table("StockTable").unwrap().to_owned();
    let item = |pk: String| {
        let (ddb, table) = (ddb.clone(), table.clone());
        async move {
            ddb.get_item()
                .table_name(table)
                .key("pk", AttributeValue::S(pk.clone()))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .unwrap_or_else(|| panic!("{pk} is stored"))
        }
    };
    let put_code = |pk: &'static str, fp: AttributeValue, kid: AttributeValue, sc: String| {
        let (ddb, table) = (ddb.clone(), table.clone());
        async move {
            ddb.update_item()
                .table_name(table)
                .key("pk", AttributeValue::S(pk.into()))
                .update_expression("SET fp = :fp, kid = :kid, sc = :sc")
                .expression_attribute_values(":fp", fp)
                .expression_attribute_values(":kid", kid)
                .expression_attribute_values(":sc", AttributeValue::S(sc))
                .send()
                .await
                .unwrap();
        }
    };
    let reveal = |user: &'static str, id: String| {
        let s = &s;
        async move {
            eventually("the paid order's lock to be SOLD", Duration::from_secs(120), || async {
                let a = s.codes_of(user, &id).await;
                (a.status != 503).then_some(a)
            })
            .await
        }
    };
    let first = item("CODE#KMSV#0#0".into()).await;
    let sc = first["sc"].as_s().unwrap().to_owned();
    assert!(sc.starts_with("v3.0.0."), "sealed under a KMS data key, for its slot: {sc}");
    assert_eq!(first["kid"].as_s().unwrap(), "kms");
    assert!(!codes.iter().any(|c| sc.contains(c.as_str())));

    // ann buys, pays and sees her code: one Decrypt
    let ann = s.order_id("ann", "k", json!([{"sku": "KMSV", "quantity": 1}])).await;
    assert_eq!(s.pay(&ann, "p-ann", 1000, "SUCCEEDED").await.status, 200);
    let a = reveal("ann", ann.clone()).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let anns = a.body["codes"][0]["code"].as_str().unwrap().to_owned();
    assert!(codes.contains(&anns));
    let per_reveal = kms_calls("kms:Decrypt") - d0;
    assert_eq!(per_reveal, 1, "one Decrypt for the first reveal");

    // bob's and carol's checkouts bind the next slots; a table writer copies ann's sold code
    // over bob's as it is, and over carol's with the slot prefix rewritten to carol's slot
    let bob = s.order_id("bob", "k", json!([{"sku": "KMSV", "quantity": 1}])).await;
    let carol = s.order_id("carol", "k", json!([{"sku": "KMSV", "quantity": 1}])).await;
    assert!(item("CODE#KMSV#0#1".into()).await.contains_key("o"));
    assert!(item("CODE#KMSV#0#2".into()).await.contains_key("o"));
    put_code("CODE#KMSV#0#1", first["fp"].clone(), first["kid"].clone(), sc.clone()).await;
    put_code("CODE#KMSV#0#2", first["fp"].clone(), first["kid"].clone(), sc.replacen("v3.0.0.", "v3.0.2.", 1)).await;
    for (user, id) in [("bob", &bob), ("carol", &carol)] {
        assert_eq!(s.pay(id, &format!("p-{user}"), 1000, "SUCCEEDED").await.status, 200);
        let b = reveal(user, id.clone()).await;
        assert_eq!((b.status, b.body["code"].as_str()), (409, Some("invalid_transition")), "{user}: {}", b.body);
        assert!(b.body["detail"].as_str().unwrap().contains("integrity check"), "{}", b.body);
        let text = b.body.to_string();
        assert!(!codes.iter().any(|c| text.contains(c.as_str())), "no code shown to {user}: {text}");
    }
    // ann's own reveal is untouched, and her data key now comes from the warm cache
    let again = s.codes_of("ann", &ann).await;
    assert_eq!((again.status, again.body["codes"][0]["code"].as_str()), (200, Some(anns.as_str())));
    assert_eq!(kms_calls("kms:Decrypt") - d0, 1, "the data key was opened once for all reveals");
    eprintln!(
        "KMS calls: {per_upload} GenerateDataKey per upload (3 codes), {per_reveal} Decrypt per cold reveal, 0 warm"
    );

    // the emulator's KMS binds the SKU: the same data key under another SKU's context is refused
    let stored = StoredCode {
        fingerprint: first["fp"].as_s().unwrap().to_owned(),
        kid: "kms".into(),
        sealed: sc.clone(),
        ..Default::default()
    };
    let wrapped = wrapped_key(&stored).unwrap().expect("a v3 code carries its data key");
    let keys = s.local.app("orders-api").unwrap().code_key_service.clone().expect("orders-api has the KMS key");
    let sku = |n: &str| holdfast::domain::Sku::parse(n).unwrap();
    assert!(keys.decrypt_data_key(&wrapped, &key_context(&sku("KMSV"))).await.unwrap().is_some());
    assert!(
        keys.decrypt_data_key(&wrapped, &key_context(&sku("OTHER"))).await.unwrap().is_none(),
        "KMS checks the context"
    );
}
