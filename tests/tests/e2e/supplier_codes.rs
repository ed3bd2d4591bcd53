//! Codes issued by the supplier at payment, end to end (docs/suppliers.md, "Codes issued by the
//! supplier"): a `SUPPLIER` SKU of unit `CODE` is booked like any supplier SKU; once its order is
//! paid the payment-timeout consumer asks the local stack's simulated supplier (a real HTTP peer)
//! for the codes, retrying after 1, 2 and 4 s; the codes are sealed on the order and shown only
//! to the paid owner; an operator reissues what the retries could not get. Invariants clean at
//! the end of every scenario.

use crate::common::{eventually, problem, spawn, Stack};
use holdfast_local::peers::supplier::SimBooking;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// A gift card the supplier issues at payment; `issue_failures`: its first n issue calls fail.
async fn gift_sku(s: &Stack, sku: &str, issue_failures: u32) {
    let spec = json!({
        "name": format!("{sku} gift card"),
        "price": 2_500,
        "currency": "EUR",
        "model": {"management": "SUPPLIER", "unit": "CODE"},
        "supplier": {"adapter": "simulated", "confirm_after_seconds": 0, "issue_failures": issue_failures},
    });
    let a = s.put_sku(sku, spec).await;
    assert_eq!(a.status, 201, "create {sku}: {}", a.body);
    assert_eq!(a.body["model"]["unit"], "CODE", "{}", a.body);
}

/// A paid order of `quantity` gift cards by `user`; its id and its booking's key.
async fn paid_order(s: &Stack, user: &str, key: &str, sku: &str, quantity: u32) -> (String, String) {
    let id = s.order_id(user, key, json!([{"sku": sku, "quantity": quantity}])).await;
    s.order_reaches(user, &id, "PENDING_PAYMENT").await;
    let early = s.codes_of(user, &id).await;
    problem(&early, 409, "not_paid");
    let pay = s.pay(&id, &format!("pay-{key}"), 2_500 * u64::from(quantity), "SUCCEEDED").await;
    assert_eq!((pay.status, pay.body["result"].as_str()), (200, Some("applied")), "{}", pay.body);
    (id.clone(), format!("{id}.{sku}"))
}

/// The peer's record of the booking under `key`.
fn peer(s: &Stack, key: &str) -> SimBooking {
    s.local.supplier.booking_for(key).expect("booked at the supplier")
}

/// Waits until the buyer is shown the codes; returns them.
async fn codes_shown(s: &Stack, user: &str, id: &str) -> Vec<String> {
    eventually(&format!("the codes of {id}"), WAIT, || async {
        let a = s.codes_of(user, id).await;
        (a.status == 200).then(|| {
            a.body["codes"]
                .as_array()
                .expect("codes")
                .iter()
                .map(|c| c["code"].as_str().expect("code").to_owned())
                .collect()
        })
    })
    .await
}

fn codes_status(order: &Value) -> Option<&str> {
    order["supplier"][0]["codes"].as_str()
}

#[tokio::test]
async fn codes_are_issued_at_payment_and_shown_to_their_paid_owner_only() {
    let s = spawn().await;
    gift_sku(&s, "GIFT", 0).await;
    let (id, key) = paid_order(&s, "ann", "k1", "GIFT", 2).await;
    let shown = codes_shown(&s, "ann", &id).await;
    assert_eq!(shown.len(), 2);
    let booking = peer(&s, &key);
    assert_eq!((booking.issue_calls, &booking.codes), (1, &shown), "one call, the supplier's own codes");
    // another buyer: not found, the codes never in the answer
    let other = s.codes_of("bo", &id).await;
    problem(&other, 404, "not_found");
    assert!(!other.body.to_string().contains(&shown[0]));
    // shown again: the same codes, nothing asked of the supplier again
    assert_eq!(codes_shown(&s, "ann", &id).await, shown);
    assert_eq!(peer(&s, &key).issue_calls, 1);
    assert_eq!(codes_status(&s.order_reaches("ann", &id, "PAID").await), Some("ISSUED"));
    // stored sealed: the order item never holds a code in clear
    let stored = s.fingerprint().await;
    assert!(shown.iter().all(|c| !stored.contains(c.as_str())), "a code in clear in the store");
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn a_supplier_failing_twice_is_retried_and_issues_one_set_of_codes() {
    let s = spawn().await;
    gift_sku(&s, "FLAKY", 2).await;
    let (id, key) = paid_order(&s, "cy", "k1", "FLAKY", 3).await;
    let shown = codes_shown(&s, "cy", &id).await;
    let booking = peer(&s, &key);
    assert_eq!(booking.issue_calls, 3, "failed twice, issued by the second retry: {booking:?}");
    assert_eq!(booking.codes, shown, "exactly one set of codes");
    assert_eq!(shown.len(), 3);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn spent_retries_leave_the_order_paid_with_codes_pending_and_the_reissue_delivers_them() {
    let s = spawn().await;
    // four failures: the attempt at payment and its three retries (after 1, 2 and 4 s)
    gift_sku(&s, "DOWN", 4).await;
    let (id, key) = paid_order(&s, "di", "k1", "DOWN", 1).await;
    let o = eventually("the retries spent", WAIT, || async {
        let o = s.order_reaches("di", &id, "PAID").await;
        (codes_status(&o) == Some("GAVE_UP")).then_some(o)
    })
    .await;
    assert_eq!(o["status"], "PAID");
    assert_eq!(peer(&s, &key).issue_calls, 4);
    problem(&s.codes_of("di", &id).await, 409, "codes_pending");
    let path = format!("/admin/orders/{id}/codes/reissue");
    let ops = s.local.token("ops", &["stock:codes"]);
    // bad input first: each refused, nothing written
    let before = s.fingerprint().await;
    let buyer = s.user("di");
    let body = json!({"reason": "supplier back up"});
    let cases: Vec<(Option<&str>, String, String, u16, &str)> = vec![
        (None, path.clone(), body.to_string(), 401, ""),
        (Some(buyer.as_str()), path.clone(), body.to_string(), 403, ""),
        (Some(ops.as_str()), path.clone(), "{not json".into(), 400, "malformed_json"),
        (Some(ops.as_str()), path.clone(), json!({"reason": 5}).to_string(), 422, "validation_failed"),
        (Some(ops.as_str()), path.clone(), json!({"reason": ""}).to_string(), 422, "validation_failed"),
        (Some(ops.as_str()), path.clone(), json!({"reason": "x", "extra": 1}).to_string(), 422, "validation_failed"),
        (Some(ops.as_str()), "/admin/orders/o-unknown-1/codes/reissue".into(), body.to_string(), 404, "not_found"),
    ];
    for (token, p, b, status, code) in cases {
        let a = s.call("POST", &p, token, &[], Some(b.clone())).await;
        assert_eq!(a.status, status, "{p} {b}: {}", a.body);
        if !code.is_empty() {
            assert_eq!(a.body["code"], code, "{p} {b}: {}", a.body);
        }
    }
    assert_eq!(s.fingerprint().await, before, "a refused reissue wrote something");
    let r = s.post(&path, &ops, body.clone()).await;
    assert_eq!(
        (r.status, r.body["codes_status"].as_str(), r.body["codes"].as_u64()),
        (200, Some("ISSUED"), Some(1)),
        "{}",
        r.body
    );
    let shown = codes_shown(&s, "di", &id).await;
    assert_eq!(peer(&s, &key).codes, shown);
    // issued: a second reissue is the wrong state
    problem(&s.post(&path, &ops, body).await, 409, "invalid_transition");
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn a_supplier_that_never_issues_leaves_the_reissue_refused_and_nothing_written() {
    let s = spawn().await;
    gift_sku(&s, "NEVER", 1_000).await;
    gift_sku(&s, "LATER", 0).await;
    let (id, _) = paid_order(&s, "ed", "k1", "NEVER", 1).await;
    eventually("the retries spent", WAIT, || async {
        (codes_status(&s.order_reaches("ed", &id, "PAID").await) == Some("GAVE_UP")).then_some(())
    })
    .await;
    let ops = s.local.token("ops", &["stock:admin"]);
    let body = json!({"reason": "ticket 42"});
    let before = s.fingerprint().await;
    let r = s.post(&format!("/admin/orders/{id}/codes/reissue"), &ops, body.clone()).await;
    problem(&r, 503, "temporarily_unavailable");
    assert_eq!(s.fingerprint().await, before, "a failed reissue wrote something");
    problem(&s.codes_of("ed", &id).await, 409, "codes_pending");
    // an unpaid order: the wrong state, nothing asked of the supplier
    let unpaid = s.order_id("ed", "k2", json!([{"sku": "LATER", "quantity": 1}])).await;
    s.order_reaches("ed", &unpaid, "PENDING_PAYMENT").await;
    problem(&s.post(&format!("/admin/orders/{unpaid}/codes/reissue"), &ops, body).await, 409, "invalid_transition");
    assert_eq!(peer(&s, &format!("{unpaid}.LATER")).issue_calls, 0, "nothing issued for an unpaid order");
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A paid order whose issue message never ran (the callback died after the payment's write):
/// it is in DynamoDB's `pending-by-deadline` index by its issue's due time, and the reconcile
/// sweep's overdue-orders arm issues its codes.
#[tokio::test]
async fn a_lost_issue_is_found_by_the_sweep_in_the_pending_index_and_issued() {
    use holdfast::domain::order::OrderRecord;
    use holdfast::domain::supplier::codes::{IssueStatus, SWEEP_AFTER_S};
    let s = spawn().await;
    // every automatic attempt fails, so the order is left GAVE_UP; it is then put back to the
    // state a lost message leaves (PENDING, nothing queued) through the order store itself
    gift_sku(&s, "LOST", 4).await;
    let (id, key) = paid_order(&s, "fa", "k1", "LOST", 1).await;
    eventually("the retries spent", WAIT, || async {
        (codes_status(&s.order_reaches("fa", &id, "PAID").await) == Some("GAVE_UP")).then_some(())
    })
    .await;
    let app = s.local.app("reconcile-worker").expect("reconcile-worker");
    let oid = holdfast::domain::OrderId::parse(&id).expect("id");
    let Some(OrderRecord::Order(o)) = app.orders.get(&oid).await.expect("get") else { panic!("no order") };
    let lost = o.next(holdfast::clock::now_ms(), |x| {
        let c = x.supplier[0].codes.as_mut().expect("issue");
        c.status = IssueStatus::Pending;
    });
    assert!(app.orders.replace(&o, &lost).await.expect("replace"));
    assert_eq!(codes_status(&s.get_order("fa", &id).await.body), Some("PENDING"));
    let stale = app.config.stale_lock_s;
    crate::common::advance_clock(Duration::from_secs((SWEEP_AFTER_S + stale + 1) as u64));
    let report = s.reconcile().await;
    assert!(report["overdue_orders"].as_u64().unwrap_or(0) >= 1, "{report}");
    let shown = codes_shown(&s, "fa", &id).await;
    assert_eq!(peer(&s, &key).codes, shown, "the fifth call issued them");
    s.assert_invariants().await;
    s.local.shutdown().await;
}
