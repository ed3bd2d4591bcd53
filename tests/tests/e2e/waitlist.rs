//! "Notify me" waitlists of sold-out SKUs (docs/waitlist.md) end to end over HTTP on the local
//! stack: units that come back (a hold's expiry, a restock) tell exactly that many waitlisted
//! buyers in join order, each with an admission token its checkout spends once in the freeze;
//! an unused token's expiry hands the unit to the next in line; joins are idempotent and
//! bounded; bad input is refused with nothing written. Invariants are clean at the end of each.

use crate::common::{advance_clock, eventually, problem, spawn_with, Answer, Stack, SIGNAL_WAIT};
use serde_json::{json, Value};
use std::time::Duration;

async fn join(s: &Stack, sku: &str, user: &str) -> Answer {
    s.call("POST", &format!("/skus/{sku}/waitlist"), Some(&s.user(user)), &[], None).await
}

async fn me(s: &Stack, sku: &str, user: &str) -> Answer {
    s.get(&format!("/skus/{sku}/waitlist/me"), Some(&s.user(user))).await
}

async fn leave(s: &Stack, sku: &str, user: &str) -> Answer {
    s.call("DELETE", &format!("/skus/{sku}/waitlist"), Some(&s.user(user)), &[], None).await
}

async fn checkout(s: &Stack, user: &str, key: &str, sku: &str, token: Option<&str>) -> Answer {
    let mut body = json!({"items": [{"sku": sku, "quantity": 1}]});
    if let Some(t) = token {
        body["admission_token"] = json!(t);
    }
    s.call("POST", "/orders", Some(&s.user(user)), &[("idempotency-key", key)], Some(body.to_string())).await
}

/// Waits until `user`'s entry reads `state`; returns it.
async fn reaches(s: &Stack, sku: &str, user: &str, state: &str) -> Value {
    eventually(&format!("{user} {state} on {sku}"), SIGNAL_WAIT, || async {
        let a = me(s, sku, user).await;
        (a.status == 200 && a.body["state"] == state).then_some(a.body)
    })
    .await
}

/// The must-show: a sold-out SKU with three waitlisted buyers gets two units back by hold
/// expiry; exactly the first two are told (in join order) and check out with their tokens, the
/// third stays WAITING. A repeat join answers the same entry.
#[tokio::test]
async fn two_units_back_by_hold_expiry_tell_exactly_the_first_two_waitlisted_buyers_who_check_out() {
    // the holds live 20 s: long enough for the three joins (measured one by one, apart) to find
    // the SKU sold out on a loaded machine
    let s = spawn_with(&[("HOLDFAST_PAYMENT_TTL_SECONDS", "20")]).await;
    s.sku("WLA", 1000, 2, 1, None).await;
    // two holders take the last units and never pay
    for h in ["h1", "h2"] {
        assert_eq!(checkout(&s, h, "k", "WLA", None).await.status, 201);
    }
    for (i, u) in ["ann", "bob", "cy"].iter().enumerate() {
        // what one join costs, measured in the adapters (printed; docs/waitlist.md, "Costs")
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let before = holdfast::adapters::usage::snapshot();
        let a = join(&s, "WLA", u).await;
        let used = holdfast::adapters::usage::snapshot();
        eprintln!(
            "waitlist join {u}: {:.1} WRU, {:.1} RRU",
            used.write_units - before.write_units,
            used.read_units - before.read_units
        );
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!((a.body["sku"].as_str(), a.body["state"].as_str()), (Some("WLA"), Some("WAITING")));
        assert_eq!(a.body["position"].as_u64(), Some(i as u64 + 1), "{}", a.body);
        assert!(a.body.get("admission_token").is_none());
    }
    // a repeat join is the same entry
    let again = join(&s, "WLA", "ann").await;
    assert_eq!((again.status, again.body["position"].as_u64()), (200, Some(1)), "{}", again.body);
    // two joins of one new buyer at once: one entry, answered to both (one 201, one 200)
    let (a, b) = tokio::join!(join(&s, "WLA", "dee"), join(&s, "WLA", "dee"));
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [200, 201], "{} {}", a.body, b.body);
    assert_eq!((a.body["position"].as_u64(), b.body["position"].as_u64()), (Some(4), Some(4)));
    assert_eq!(leave(&s, "WLA", "dee").await.status, 204);
    // the holds expire: two units back, the first two told, in order
    let ann = reaches(&s, "WLA", "ann", "NOTIFIED").await;
    let bob = reaches(&s, "WLA", "bob", "NOTIFIED").await;
    for b in [&ann, &bob] {
        assert!(b["admission_token"].as_str().is_some_and(|t| t.starts_with("v1.")), "{b}");
        assert!(b["expires_at"].is_string(), "{b}");
    }
    // the third stays waiting, after a sweep too
    s.reconcile().await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let before = holdfast::adapters::usage::snapshot();
    let cy = me(&s, "WLA", "cy").await;
    let used = holdfast::adapters::usage::snapshot();
    eprintln!(
        "waitlist me (2 tokens out): {:.1} WRU, {:.1} RRU",
        used.write_units - before.write_units,
        used.read_units - before.read_units
    );
    assert_eq!((cy.status, cy.body["state"].as_str()), (200, Some("WAITING")), "{}", cy.body);
    assert!(cy.body.get("admission_token").is_none());
    // both check out with their tokens; the entries read USED
    for (u, b) in [("ann", &ann), ("bob", &bob)] {
        let o = checkout(&s, u, "wk", "WLA", b["admission_token"].as_str()).await;
        assert_eq!(o.status, 201, "{u}: {}", o.body);
        assert_eq!(me(&s, "WLA", u).await.body["state"], "USED");
    }
    assert_eq!(me(&s, "WLA", "cy").await.body["state"], "WAITING", "no unit left for the third");
    s.assert_invariants().await;
}

/// Refusals with nothing written (no auth, unknown SKU, not sold out, malformed, wrong-typed or
/// oversize body, a kind without waitlists, the bounds), tokens bound to their buyer and SKU and spent
/// once, a restock telling the first in line, an unused token's expiry handing the unit to the
/// next, and leaving.
#[tokio::test]
async fn bad_input_writes_nothing_tokens_bind_and_spend_once_and_an_expired_token_hands_the_unit_on() {
    let s = spawn_with(&[
        ("HOLDFAST_WAITLIST_MAX_PER_SKU", "2"),
        ("HOLDFAST_WAITLIST_MAX_PER_USER", "2"),
        ("HOLDFAST_WAITLIST_TOKEN_TTL_SECONDS", "30"),
    ])
    .await;
    for sku in ["WLB", "WLC", "WLD"] {
        s.sku(sku, 500, 0, 1, None).await;
    }
    s.sku("WLFREE", 500, 5, 1, None).await;
    s.model_sku("WLROOM", 500, 1, json!({"unit": "CALENDAR"}), None).await;
    // refused, nothing written
    let no_auth = s.call("POST", "/skus/WLB/waitlist", None, &[], None).await;
    assert_eq!(no_auth.status, 401, "{}", no_auth.body);
    problem(&join(&s, "NOPE", "ann").await, 404, "not_found");
    problem(&join(&s, "WLFREE", "ann").await, 409, "not_sold_out");
    problem(&join(&s, "WLROOM", "ann").await, 422, "not_waitlistable");
    let token = s.user("ann");
    let call = |body: &'static str| s.call("POST", "/skus/WLB/waitlist", Some(&token), &[], Some(body.to_owned()));
    problem(&call("{not json").await, 400, "malformed_json");
    problem(&call("[1]").await, 422, "validation_failed");
    problem(&call(r#"{"sku": 7}"#).await, 422, "validation_failed");
    let oversize = format!(r#"{{"pad": "{}"}}"#, "x".repeat(20_000));
    let big = s.call("POST", "/skus/WLB/waitlist", Some(&token), &[], Some(oversize)).await;
    problem(&big, 413, "payload_too_large");
    for sku in ["WLB", "WLFREE"] {
        assert_eq!(me(&s, sku, "ann").await.status, 404, "{sku}: nothing written");
    }
    problem(&me(&s, "WLROOM", "ann").await, 422, "not_waitlistable");
    problem(&leave(&s, "WLB", "ann").await, 404, "not_found");
    // the bounds: two per SKU, two per buyer
    assert_eq!(join(&s, "WLB", "ann").await.status, 201);
    assert_eq!(join(&s, "WLB", "bob").await.status, 201);
    problem(&join(&s, "WLB", "cy").await, 409, "waitlist_full");
    assert_eq!(me(&s, "WLB", "cy").await.status, 404, "nothing written");
    assert_eq!(join(&s, "WLC", "ann").await.status, 201);
    problem(&join(&s, "WLD", "ann").await, 409, "too_many_waitlists");
    assert_eq!(me(&s, "WLD", "ann").await.status, 404, "nothing written");
    // a restock of one unit tells the first in line only
    s.stock("WLB", "back", 1).await;
    let ann = reaches(&s, "WLB", "ann", "NOTIFIED").await;
    let ann_token = ann["admission_token"].as_str().unwrap().to_owned();
    assert_eq!(me(&s, "WLB", "bob").await.body["state"], "WAITING");
    // tokens bind buyer and SKU; forged ones admit nothing
    problem(&checkout(&s, "bob", "k1", "WLB", Some(&ann_token)).await, 403, "admission_invalid");
    s.stock("WLC", "back", 1).await;
    problem(&checkout(&s, "ann", "k2", "WLC", Some(&ann_token)).await, 403, "admission_invalid");
    let last = if ann_token.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &ann_token[..ann_token.len() - 1]);
    problem(&checkout(&s, "ann", "k3", "WLB", Some(&forged)).await, 403, "admission_invalid");
    problem(&checkout(&s, "ann", "k4", "WLB", Some("v1.x.y.z")).await, 403, "admission_invalid");
    assert_eq!(s.exact("WLB").await, (1, 0, 0), "refused checkouts took nothing");
    // ann's token runs out unused: it admits nothing, and the unit goes to bob
    advance_clock(Duration::from_secs(31));
    problem(&checkout(&s, "ann", "k5", "WLB", Some(&ann_token)).await, 403, "admission_invalid");
    assert_eq!(me(&s, "WLB", "ann").await.body["state"], "EXPIRED");
    let bob = reaches(&s, "WLB", "bob", "NOTIFIED").await;
    let bob_token = bob["admission_token"].as_str().unwrap().to_owned();
    // one token sells once
    let o = checkout(&s, "bob", "k6", "WLB", Some(&bob_token)).await;
    assert_eq!(o.status, 201, "{}", o.body);
    s.stock("WLB", "more", 1).await;
    problem(&checkout(&s, "bob", "k7", "WLB", Some(&bob_token)).await, 409, "admission_used");
    assert_eq!(s.exact("WLB").await, (1, 1, 0), "the used token took nothing more");
    // leaving: 204, the entry reads LEFT, its place is free again
    assert_eq!(leave(&s, "WLC", "ann").await.status, 204);
    assert_eq!(me(&s, "WLC", "ann").await.body["state"], "LEFT");
    assert_eq!(leave(&s, "WLC", "ann").await.status, 204, "leaving again");
    s.assert_invariants().await;
}
