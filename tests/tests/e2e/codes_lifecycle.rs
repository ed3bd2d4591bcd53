//! A sold code's life after the sale, end to end (docs/code-pools.md, "Redemption", "Expiry"):
//! redeemed once by the merchant's system, never refunded once redeemed, shown expired to its
//! owner and never sold once expired — and the redemption route's refusals.

use crate::common::{advance_clock, problem, spawn, Stack};
use serde_json::{json, Value};
use std::time::Duration;

async fn upload(s: &Stack, sku: &str, body: Value) -> crate::common::Answer {
    s.post(&format!("/admin/skus/{sku}/codes"), &s.admin, body).await
}

/// A paid order of one code of `sku` for `user`, its lock SOLD; the order id.
async fn bought(s: &Stack, user: &str, sku: &str) -> String {
    let a = s.checkout(user, &format!("k-{user}"), json!([{"sku": sku, "quantity": 1}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let id = a.body["order_id"].as_str().unwrap().to_owned();
    let paid = s.pay(&id, &format!("pay-{id}"), 1000, "SUCCEEDED").await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    s.lock_reaches(&id, "SOLD").await;
    id
}

/// The one code `user` is shown for order `id`.
async fn shown(s: &Stack, user: &str, id: &str) -> Value {
    let a = s.codes_of(user, id).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["codes"].as_array().map(Vec::len), Some(1), "{}", a.body);
    a.body["codes"][0].clone()
}

fn redeem_path(id: &str) -> String {
    format!("/admin/orders/{id}/codes/redeem")
}

#[tokio::test]
async fn a_sold_code_is_redeemed_once_never_refunded_and_bad_redemptions_change_nothing() {
    let s = spawn().await;
    s.model_sku("RDM", 1000, 1, json!({"management": "CODE_POOL"}), None).await;
    let up = upload(&s, "RDM", json!({"batch_id": "b1", "codes": ["GIFT-RDM-0001", "GIFT-RDM-0002"]})).await;
    assert_eq!(up.status, 201, "{}", up.body);
    let id = bought(&s, "u1", "RDM").await;
    let redeemer = s.local.token("pos-system", &["stock:codes"]);
    let redeem = |code: &str| redeem_raw(&s, &id, &redeemer, json!({ "code": code }));
    // never shown to its buyer: it cannot have been used
    problem(&redeem("GIFT-RDM-0001").await, 409, "invalid_transition");
    let code = shown(&s, "u1", &id).await;
    assert_eq!((code["state"].as_str(), &code["expire_time"]), (Some("VALID"), &Value::Null), "{code}");
    let value = code["code"].as_str().unwrap().to_owned();

    // bad input: a clear problem each time, and nothing written
    let before = s.fingerprint().await;
    let raw = |token: Option<String>, body: &str| raw_call(&s, &id, token, body.to_owned());
    problem(&raw(Some(redeemer.clone()), "{not json").await, 400, "malformed_json");
    problem(&redeem_raw(&s, &id, &redeemer, json!({"code": 7})).await, 422, "validation_failed");
    problem(&redeem_raw(&s, &id, &redeemer, json!({"code": value, "at": "now"})).await, 422, "validation_failed");
    problem(&redeem_raw(&s, &id, &redeemer, json!({})).await, 422, "validation_failed");
    problem(&redeem("").await, 422, "validation_failed");
    problem(&redeem(&"X".repeat(129)).await, 422, "validation_failed");
    problem(&raw(Some(redeemer.clone()), &" ".repeat(70_000)).await, 413, "payload_too_large");
    problem(&redeem("NOT-A-CODE-OF-THIS-ORDER").await, 404, "not_found");
    problem(&redeem("GIFT-RDM-0002").await, 404, "not_found");
    let other = s.post(&redeem_path("01J00000000000000000000000"), &redeemer, json!({ "code": value })).await;
    problem(&other, 404, "not_found");
    assert_eq!(raw(None, &json!({ "code": value }).to_string()).await.status, 401);
    assert_eq!(raw(Some("not-a-jwt".into()), &json!({ "code": value }).to_string()).await.status, 401);
    assert_eq!(raw(Some(s.user("u1")), &json!({ "code": value }).to_string()).await.status, 403, "the buyer");
    let orders_admin = s.local.token("cs-agent", &["orders:admin"]);
    assert_eq!(raw(Some(orders_admin), &json!({ "code": value }).to_string()).await.status, 403, "not the codes scope");
    assert_eq!(s.fingerprint().await, before, "refused redemptions wrote nothing");

    // once: the first redemption is recorded, a second is refused and names it
    let done = redeem(&value).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!((done.body["state"].as_str(), done.body["code"].as_str()), (Some("REDEEMED"), Some("••••0001")));
    let at = done.body["redeemed_at"].as_str().unwrap().to_owned();
    let again = redeem(&value).await;
    problem(&again, 409, "already_redeemed");
    assert!(again.body["detail"].as_str().unwrap().contains(&at), "{}", again.body);
    let admin_again = s.post(&redeem_path(&id), &s.admin, json!({ "code": value })).await;
    problem(&admin_again, 409, "already_redeemed");
    let code = shown(&s, "u1", &id).await;
    assert_eq!((code["state"].as_str(), code["redeemed_at"].as_str()), (Some("REDEEMED"), Some(at.as_str())));
    assert_eq!(s.admin_view(&id).await["locks"][0]["code_fate"], "REDEEMED");

    // a redeemed code is never refunded: the buyer is refused and nothing changes
    let before = s.fingerprint().await;
    let refund = s.post(&format!("/orders/{id}/refund"), &s.user("u1"), json!({"reason": "want my money"})).await;
    problem(&refund, 409, "codes_redeemed");
    assert_eq!(s.get_order("u1", &id).await.body["status"], "PAID");
    assert_eq!(s.fingerprint().await, before, "the refused refund wrote nothing");
    assert!(s.local.provider.refunds().iter().all(|r| r.body.order_id != id), "no money moved");
    s.assert_invariants().await;
}

async fn redeem_raw(s: &Stack, id: &str, token: &str, body: Value) -> crate::common::Answer {
    s.post(&redeem_path(id), token, body).await
}

async fn raw_call(s: &Stack, id: &str, token: Option<String>, body: String) -> crate::common::Answer {
    s.call("POST", &redeem_path(id), token.as_deref(), &[], Some(body)).await
}

#[tokio::test]
async fn an_expired_code_is_shown_expired_never_redeemed_and_never_sold_to_a_new_buyer() {
    let s = spawn().await;
    s.model_sku("XPR", 1000, 1, json!({"management": "CODE_POOL"}), None).await;
    let now = holdfast::clock::now_ms();
    let soon = holdfast::clock::rfc3339(now + 60_000);
    // an expire time that is not a date, or in the past, is refused and nothing is stored
    let bad = |t: Value| upload(&s, "XPR", json!({"batch_id": "bad", "codes": ["XPR-BAD-0001"], "expire_time": t}));
    for t in [json!("tomorrow"), json!(17), json!(holdfast::clock::rfc3339(now - 1_000))] {
        let a = bad(t).await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["field"], "expire_time", "{}", a.body);
    }
    let pool = s.get("/admin/skus/XPR/codes", Some(&s.admin)).await;
    assert_eq!(pool.body["uploaded"], 0, "{}", pool.body);
    let a = upload(
        &s,
        "XPR",
        json!({"batch_id": "soon", "codes": ["XPR-SOON-0001", "XPR-SOON-0002"], "expire_time": soon}),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let a = upload(&s, "XPR", json!({"batch_id": "late", "codes": ["XPR-LATE-0001"]})).await;
    assert_eq!(a.status, 201, "{}", a.body);

    let first = bought(&s, "u1", "XPR").await;
    let code = shown(&s, "u1", &first).await;
    assert_eq!((code["code"].as_str(), code["state"].as_str()), (Some("XPR-SOON-0001"), Some("VALID")), "{code}");
    let until = code["expire_time"].as_str().unwrap().to_owned();
    assert_eq!(holdfast::clock::parse_rfc3339(&until), holdfast::clock::parse_rfc3339(&soon));

    // a minute later the batch has expired
    advance_clock(Duration::from_secs(61));
    let code = shown(&s, "u1", &first).await;
    assert_eq!((code["state"].as_str(), code["expire_time"].as_str()), (Some("EXPIRED"), Some(until.as_str())));
    let redeemer = s.local.token("pos-system", &["stock:codes"]);
    let a = s.post(&redeem_path(&first), &redeemer, json!({"code": "XPR-SOON-0001"})).await;
    problem(&a, 409, "code_expired");
    // the next buyer reaches the other expired code first: it is retired, never sold
    let second = bought(&s, "u2", "XPR").await;
    let code = shown(&s, "u2", &second).await;
    assert_eq!((code["code"].as_str(), code["state"].as_str()), (Some("XPR-LATE-0001"), Some("VALID")), "{code}");
    let pool = s.get("/admin/skus/XPR/codes", Some(&s.admin)).await;
    let n = |k: &str| pool.body[k].as_i64().unwrap();
    assert_eq!((n("uploaded"), n("expired"), n("available"), n("locked"), n("sold")), (3, 1, 0, 0, 2), "{}", pool.body);
    let third = s.checkout("u3", "k-u3", json!([{"sku": "XPR", "quantity": 1}])).await;
    problem(&third, 409, "insufficient_stock");
    // an expired code never redeemed was still shown: the buyer's refund waits for review
    let refund = s.post(&format!("/orders/{first}/refund"), &s.user("u1"), json!({"reason": "it expired"})).await;
    assert_eq!((refund.status, refund.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", refund.body);
    s.assert_invariants().await;
}
