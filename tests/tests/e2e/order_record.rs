//! The order record and the order log (docs/order-record.md), end to end over HTTP on the local
//! stack: delivery, remark and discount taken at checkout, charged at the pay amount, shown to the
//! owner and the admin only and never logged; every status change of a refunded order in its log
//! with its actor; and bad input refused with nothing written.

use super::common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn delivery() -> Value {
    json!({"name": "Zofia Kowalska-Brzęczyszczykiewicz", "phone": "+48 22 555 0199",
           "address": ["ul. Marszałkowska 84/92", "lok. 117"], "postcode": "00-514", "country": "PL"})
}

const REMARK: &str = "Zostawić u sąsiada spod 118";

async fn checkout(s: &Stack, user: &str, key: &str, body: Value) -> Answer {
    let t = s.user(user);
    s.call("POST", "/orders", Some(&t), &[("idempotency-key", key)], Some(body.to_string())).await
}

async fn start_payment(s: &Stack, user: &str, id: &str) -> Answer {
    s.call("POST", &format!("/orders/{id}/payments"), Some(&s.user(user)), &[], None).await
}

/// The buyer on the simulated provider's page: succeeds, the webhook is delivered.
async fn pay_on_page(redirect_url: &str) {
    let r = reqwest::Client::new()
        .post(redirect_url)
        .json(&json!({"outcome": "succeed", "webhook": "deliver"}))
        .send()
        .await
        .expect("the provider's page answers");
    assert!(r.status().is_success(), "pay page: {}", r.status());
}

#[tokio::test]
async fn an_order_with_a_delivery_remark_and_discount_is_paid_at_its_pay_amount_and_shown_to_its_owner_and_admins_only()
{
    let logs = capture_logs();
    let s = spawn().await;
    s.sku("REC", 1_000, 5, 1, None).await;
    let body = json!({"items": [{"sku": "REC", "quantity": 2}], "delivery": delivery(), "remark": REMARK,
                      "discount": 350});
    let a = checkout(&s, "ola", "k1", body.clone()).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let id = a.body["order_id"].as_str().expect("order_id").to_owned();
    assert_eq!(
        (a.body["amount"].as_u64(), a.body["discount"].as_u64(), a.body["pay_amount"].as_u64()),
        (Some(2_000), Some(350), Some(1_650))
    );
    assert_eq!(a.body["delivery"], delivery());
    assert_eq!(a.body["remark"], REMARK);
    // the same key and body: the same order; the same key with another delivery: a reused key
    let again = checkout(&s, "ola", "k1", body.clone()).await;
    assert_eq!((again.status, again.body["order_id"].as_str()), (201, Some(id.as_str())), "{}", again.body);
    let mut moved = body.clone();
    moved["delivery"]["address"] = json!(["ul. Nowy Świat 1"]);
    problem(&checkout(&s, "ola", "k1", moved).await, 422, "idempotency_key_reused");
    let mut cheaper = body.clone();
    cheaper["discount"] = json!(351);
    problem(&checkout(&s, "ola", "k1", cheaper).await, 422, "idempotency_key_reused");

    // the owner sees the record; another buyer gets the 404 of a missing order
    let mine = s.get_order("ola", &id).await;
    assert_eq!((mine.status, &mine.body["delivery"], &mine.body["remark"]), (200, &delivery(), &json!(REMARK)));
    let theirs = s.get_order("eve", &id).await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    assert!(!theirs.body.to_string().contains("Kowalska"), "{}", theirs.body);
    // and the admin view shows it
    let admin = s.admin_view(&id).await;
    assert_eq!((&admin["order"]["delivery"], admin["order"]["pay_amount"].as_u64()), (&delivery(), Some(1_650)));

    // the provider is asked for the pay amount, and that payment pays the order
    let started = start_payment(&s, "ola", &id).await;
    assert_eq!((started.status, started.body["amount"].as_u64()), (201, Some(1_650)), "{}", started.body);
    let at_provider = s.local.provider.payments();
    assert_eq!(at_provider.iter().map(|p| p.amount).collect::<Vec<_>>(), [1_650], "charged the pay amount");
    pay_on_page(started.body["redirect_url"].as_str().expect("redirect_url")).await;
    let paid = s.order_reaches("ola", &id, "PAID").await;
    assert_eq!(paid["refunds_requested"], 0, "paid in full at the pay amount: {paid}");
    s.lock_reaches(&id, "SOLD").await;
    let admin = s.admin_view(&id).await;
    assert_eq!(admin["payments"][0]["amount"], 1_650, "{admin}");
    // an undiscounted order beside it is charged its whole amount
    let plain = s.order_id("eve", "k2", json!([{"sku": "REC", "quantity": 1}])).await;
    let p = s.get_order("eve", &plain).await.body;
    assert_eq!((p["discount"].as_u64(), p["pay_amount"].as_u64(), p.get("delivery")), (Some(0), Some(1_000), None));

    // personal data never reaches a log line (the stack runs in this process)
    tokio::time::sleep(Duration::from_millis(500)).await;
    let text = logs.text();
    assert!(text.contains(&id), "the logs were captured");
    for secret in ["Kowalska", "555 0199", "Marszałkowska", "00-514", "sąsiada", "Nowy Świat"] {
        assert!(!text.contains(secret), "{secret} in a log line");
    }
    s.assert_invariants().await;
}

#[tokio::test]
async fn the_log_of_a_refunded_order_lists_every_step_with_its_actor() {
    // a refund of more than 100 waits for an admin: one more actor in the log
    let s = spawn_with(&[("HOLDFAST_REFUND_REVIEW_ABOVE", "100")]).await;
    s.sku("LOG", 500, 3, 1, None).await;
    let a = checkout(&s, "bo", "k1", json!({"items": [{"sku": "LOG", "quantity": 1}], "discount": 100})).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let id = a.body["order_id"].as_str().expect("order_id").to_owned();
    let started = start_payment(&s, "bo", &id).await;
    assert_eq!(started.status, 201, "{}", started.body);
    pay_on_page(started.body["redirect_url"].as_str().expect("redirect_url")).await;
    s.order_reaches("bo", &id, "PAID").await;
    s.lock_reaches(&id, "SOLD").await;
    let asked = s.post(&format!("/orders/{id}/refund"), &s.user("bo"), json!({"reason": "changed my mind"})).await;
    assert_eq!((asked.status, asked.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", asked.body);
    let decided = s
        .post(&format!("/admin/orders/{id}/refund-decision"), &s.admin, json!({"approve": true, "reason": "ok"}))
        .await;
    assert_eq!((decided.status, decided.body["status"].as_str()), (200, Some("REFUNDING")), "{}", decided.body);
    s.order_reaches("bo", &id, "REFUNDED").await;

    let log = s.get(&format!("/admin/orders/{id}/log"), Some(&s.admin)).await;
    assert_eq!(log.status, 200, "{}", log.body);
    assert_eq!((log.body["order_id"].as_str(), log.body["status"].as_str()), (Some(id.as_str()), Some("REFUNDED")));
    let steps: Vec<(Value, Value, Value, Value)> = log.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e["from"].clone(), e["to"].clone(), e["actor"].clone(), e["cause"].clone()))
        .collect();
    let want = [
        (Value::Null, "PENDING_PAYMENT", "buyer", "checkout"),
        (json!("PENDING_PAYMENT"), "PAYING", "buyer", "payment_started"),
        (json!("PAYING"), "PAID", "provider:generic", "payment_succeeded"),
        (json!("PAID"), "REFUND_REQUESTED", "buyer", "amount_above_threshold"),
        (json!("REFUND_REQUESTED"), "REFUNDING", "admin:admin", "refund_approved"),
        (json!("REFUNDING"), "REFUNDED", "provider:generic", "refund_confirmed"),
    ]
    .map(|(f, t, a, c)| (f, json!(t), json!(a), json!(c)));
    assert_eq!(steps, want, "{}", log.body);
    let at: Vec<&str> = log.body["entries"].as_array().unwrap().iter().map(|e| e["at"].as_str().unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "in order: {at:?}");
    assert_eq!(log.body["dropped"], 0);
    // what goes back is what was charged
    let admin = s.admin_view(&id).await;
    assert_eq!(
        (admin["refunds"][0]["amount"].as_u64(), admin["refunds"][0]["status"].as_str()),
        (Some(400), Some("CONFIRMED"))
    );

    // an admin's cancel of another order: its log names the admin
    let other = s.order_id("bo", "k2", json!([{"sku": "LOG", "quantity": 1}])).await;
    let c = s.post(&format!("/admin/orders/{other}/cancel"), &s.admin, json!({"reason": "fraud check"})).await;
    assert_eq!(c.status, 200, "{}", c.body);
    let log = s.get(&format!("/admin/orders/{other}/log"), Some(&s.admin)).await.body;
    assert_eq!(
        (log["entries"][1]["actor"].as_str(), log["entries"][1]["cause"].as_str()),
        (Some("admin:admin"), Some("admin_cancel"))
    );
    assert!(!log.to_string().contains("fraud"), "a reason typed by a person is not a cause: {log}");

    // the route: admins only, 404 for an unknown order
    assert_eq!(s.get(&format!("/admin/orders/{id}/log"), Some(&s.user("bo"))).await.status, 403);
    assert_eq!(s.get(&format!("/admin/orders/{id}/log"), None).await.status, 401);
    problem(&s.get("/admin/orders/no-such-order/log", Some(&s.admin)).await, 404, "not_found");
    problem(&s.get("/admin/orders/a%20b/log", Some(&s.admin)).await, 404, "not_found");
    s.assert_invariants().await;
}

#[tokio::test]
async fn bad_records_are_refused_field_by_field_and_write_nothing() {
    let s = spawn().await;
    s.sku("BAD", 300, 5, 1, None).await;
    let before = s.fingerprint().await;
    let with = |field: &str, v: Value| {
        let mut b = json!({"items": [{"sku": "BAD", "quantity": 2}], "delivery": delivery()});
        if let Some(sub) = field.strip_prefix("delivery.") {
            b["delivery"][sub] = v;
        } else {
            b[field] = v;
        }
        b
    };
    let without = |sub: &str| {
        let mut b = json!({"items": [{"sku": "BAD", "quantity": 2}], "delivery": delivery()});
        b["delivery"].as_object_mut().unwrap().remove(sub);
        b
    };
    let long = |n: usize| json!("x".repeat(n));
    let cases: Vec<(Value, &str)> = vec![
        (with("delivery.name", json!("")), "delivery.name"),
        (with("delivery.name", json!("   ")), "delivery.name"),
        (with("delivery.name", long(101)), "delivery.name"),
        (with("delivery.name", json!("Ana\u{0}")), "delivery.name"),
        (with("delivery.name", json!(7)), "delivery.name"),
        (with("delivery.phone", json!("12")), "delivery.phone"),
        (with("delivery.phone", json!("+48 22 555 0199 ext 9")), "delivery.phone"),
        (with("delivery.phone", json!("1".repeat(33))), "delivery.phone"),
        (with("delivery.address", json!([])), "delivery.address"),
        (with("delivery.address", json!(["a", "b", "c", "d", "e"])), "delivery.address"),
        (with("delivery.address", json!(["ok", "line\nbreak"])), "delivery.address"),
        (with("delivery.address", json!("one string")), "delivery.address"),
        (with("delivery.address", json!([long(121)])), "delivery.address"),
        (with("delivery.postcode", json!("00_514")), "delivery.postcode"),
        (with("delivery.postcode", json!("")), "delivery.postcode"),
        (with("delivery.country", json!("pl")), "delivery.country"),
        (with("delivery.country", json!("XX")), "delivery.country"),
        (with("delivery.country", json!("POL")), "delivery.country"),
        (with("delivery.floor", json!(3)), "delivery.floor"),
        (without("name"), "delivery"),
        (without("phone"), "delivery"),
        (without("address"), "delivery"),
        (without("country"), "delivery"),
        (with("delivery", json!("Warszawa")), "delivery"),
        (with("remark", long(201)), "remark"),
        (with("remark", json!("two\nlines")), "remark"),
        (with("remark", json!(5)), "remark"),
        (with("discount", json!(-1)), "discount"),
        (with("discount", json!(1.5)), "discount"),
        (with("discount", json!("100")), "discount"),
        (with("discount", json!(1_000_000_000_001u64)), "discount"),
        // the amount is 600: more than it, or all of it, is refused before any stock is held
        (with("discount", json!(601)), "discount"),
        (with("discount", json!(600)), "discount"),
    ];
    for (i, (body, field)) in cases.into_iter().enumerate() {
        let a = checkout(&s, "cy", &format!("bad-{i}"), body.clone()).await;
        problem(&a, 422, "validation_failed");
        assert_eq!(a.body["field"], field, "{body}: {}", a.body);
    }
    let t = s.user("cy");
    let broken =
        s.call("POST", "/orders", Some(&t), &[("idempotency-key", "bad-json")], Some("{\"items\": [".into())).await;
    problem(&broken, 400, "malformed_json");
    assert_eq!(s.fingerprint().await, before, "nothing was written");
    assert_eq!(s.exact("BAD").await, (5, 0, 0), "no stock held");
    // a discount just short of the amount is fine: one minor unit to pay
    let ok = checkout(&s, "cy", "ok", with("discount", json!(599))).await;
    assert_eq!((ok.status, ok.body["pay_amount"].as_u64()), (201, Some(1)), "{}", ok.body);
    s.assert_invariants().await;
}
