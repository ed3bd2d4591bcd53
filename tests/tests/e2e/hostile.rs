//! Hostile input on every route and consumer: each is refused with a clear 4xx (or, for
//! messages, refused into the DLQ) and nothing is written.

use crate::common::{eventually, spawn_opts, WEBHOOK_SECRET};
use holdfast::domain::signature;
use serde_json::json;
use std::time::Duration;

/// (method, path, token, headers, body, expected status)
type Case<'a> = (&'a str, String, Option<&'a str>, Vec<(&'a str, &'a str)>, Option<String>, u16);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hostile_requests_on_every_route_get_a_clear_4xx_and_write_nothing() {
    let s = spawn_opts(&[], |_| {}).await;
    s.sku("SAFE", 100, 10, 2, Some(5)).await;
    let order = s.order_id("owner", "k", json!([{"sku": "SAFE", "quantity": 1}])).await;
    let before = s.fingerprint().await;
    let user = s.user("mallory");
    let admin = s.admin.clone();
    let internal = s.internal.clone();
    let big = format!("{{\"items\":[{{\"sku\":\"SAFE\",\"quantity\":1}}],\"pad\":\"{}\"}}", "x".repeat(20_000));
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let none_alg = {
        let t = s.user("mallory");
        let payload = t.split('.').nth(1).unwrap().to_owned();
        format!("eyJhbGciOiJub25lIn0.{payload}.")
    };
    let wrong_key = holdfast_local::auth::mint("not-the-secret", "mallory", &["stock:admin"], 60);
    let ok_items = json!({"items": [{"sku": "SAFE", "quantity": 1}]}).to_string();
    let k = [("idempotency-key", "hostile")];
    let cases: Vec<Case> = vec![
        // create-order
        ("POST", "/orders".into(), None, k.to_vec(), Some(ok_items.clone()), 401),
        ("POST", "/orders".into(), Some(none_alg.as_str()), k.to_vec(), Some(ok_items.clone()), 401),
        ("POST", "/orders".into(), Some(wrong_key.as_str()), k.to_vec(), Some(ok_items.clone()), 401),
        ("POST", "/orders".into(), Some(user.as_str()), vec![], Some(ok_items.clone()), 400),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            vec![("idempotency-key", "has space")],
            Some(ok_items.clone()),
            422,
        ),
        ("POST", "/orders".into(), Some(user.as_str()), k.to_vec(), Some(big.clone()), 413),
        ("POST", "/orders".into(), Some(user.as_str()), k.to_vec(), Some(deep.clone()), 400),
        ("POST", "/orders".into(), Some(user.as_str()), k.to_vec(), Some("{\"items\":".into()), 400),
        ("POST", "/orders".into(), Some(user.as_str()), k.to_vec(), Some("{\"items\":[]}".into()), 422),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":0}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":-2}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":18446744073709551616}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":\"1\"}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"S\u{0}AFE\",\"quantity\":1}]}".into()),
            400,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"S\\u0000AFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SÄFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"NOPE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":9}]}".into()),
            409,
        ),
        (
            "POST",
            "/orders".into(),
            Some(user.as_str()),
            k.to_vec(),
            Some("{\"items\":[{\"sku\":\"SAFE\",\"quantity\":1}],\"amount\":0}".into()),
            422,
        ),
        // orders-api
        ("GET", format!("/orders/{order}"), Some(user.as_str()), vec![], None, 404),
        ("POST", format!("/orders/{order}/cancel"), Some(user.as_str()), vec![], None, 404),
        ("GET", "/orders/..%2F..%2Fetc".into(), Some(user.as_str()), vec![], None, 404),
        ("GET", "/orders?limit=100000".into(), Some(user.as_str()), vec![], None, 422),
        ("GET", "/orders?cursor=%00%01".into(), Some(user.as_str()), vec![], None, 422),
        ("GET", "/orders".into(), None, vec![], None, 401),
        // stock-api
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(user.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":1,\"currency\":\"EUR\"}".into()),
            403,
        ),
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":-1,\"currency\":\"EUR\"}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":9223372036854775808,\"currency\":\"EUR\"}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":1,\"currency\":\"euro\"}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":1,\"currency\":\"EUR\",\"shards\":65}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/skus/SAFE".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"a\\u0007b\",\"price\":1,\"currency\":\"EUR\"}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/skus/B%C3%84D".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"name\":\"x\",\"price\":1,\"currency\":\"EUR\"}".into()),
            422,
        ),
        ("PUT", "/admin/skus/SAFE".into(), Some(admin.as_str()), vec![], Some(big.clone()), 413),
        (
            "POST",
            "/admin/skus/SAFE/adjustments".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"adjustment_id\":\"a\",\"delta\":-11,\"reason\":\"r\"}".into()),
            409,
        ),
        (
            "POST",
            "/admin/skus/SAFE/adjustments".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"adjustment_id\":\"a\",\"delta\":99999999999999,\"reason\":\"r\"}".into()),
            422,
        ),
        (
            "POST",
            "/admin/skus/SAFE/adjustments".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"adjustment_id\":\"a\",\"delta\":0,\"reason\":\"r\"}".into()),
            422,
        ),
        (
            "POST",
            "/admin/skus/SAFE/adjustments".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"adjustment_id\":\"init-SAFE\",\"delta\":5,\"reason\":\"r\"}".into()),
            422,
        ),
        (
            "POST",
            "/admin/skus/NOPE/adjustments".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"adjustment_id\":\"a\",\"delta\":5,\"reason\":\"r\"}".into()),
            404,
        ),
        ("GET", "/skus/NOPE".into(), None, vec![], None, 404),
        ("GET", "/skus/%E2%98%83".into(), None, vec![], None, 404),
        // reservations
        ("POST", "/reservations".into(), Some(user.as_str()), vec![], Some(ok_items.clone()), 403),
        (
            "POST",
            "/reservations".into(),
            Some(internal.as_str()),
            vec![],
            Some("{\"order_id\":\"x y\",\"items\":[{\"sku\":\"SAFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/reservations".into(),
            Some(internal.as_str()),
            vec![],
            Some("{\"order_id\":\"ok\",\"ttl_seconds\":0,\"items\":[{\"sku\":\"SAFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/reservations".into(),
            Some(internal.as_str()),
            vec![],
            Some("{\"order_id\":\"ok\",\"ttl_seconds\":1.5,\"items\":[{\"sku\":\"SAFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/reservations".into(),
            Some(internal.as_str()),
            vec![],
            Some("{\"order_id\":\"ok\",\"user_id\":\"a\\nb\",\"items\":[{\"sku\":\"SAFE\",\"quantity\":1}]}".into()),
            422,
        ),
        (
            "POST",
            "/reservations".into(),
            Some(internal.as_str()),
            vec![],
            Some("{\"order_id\":\"ok\",\"user_id\":\"u\",\"items\":[{\"sku\":\"SAFE\",\"quantity\":6}]}".into()),
            409,
        ),
        ("POST", format!("/reservations/{order}/confirm"), Some(internal.as_str()), vec![], None, 404),
        ("POST", "/reservations/nope/release".into(), Some(internal.as_str()), vec![], None, 404),
        // payment-callback
        ("POST", "/payments/callback".into(), None, vec![], Some(ok_items.clone()), 401),
        ("POST", "/payments/callback".into(), None, vec![("x-signature", "t=0,v1=")], Some(ok_items.clone()), 401),
        ("POST", "/payments/callback".into(), None, vec![], Some(big.clone()), 413),
        // unknown routes
        ("DELETE", "/orders".into(), Some(user.as_str()), vec![], None, 404),
        ("GET", "/admin/stock/SAFE".into(), Some(admin.as_str()), vec![], None, 404),
        // the sale room (the rest: tests/tests/e2e/sale.rs)
        (
            "PUT",
            "/admin/sales-switch".into(),
            Some(admin.as_str()),
            vec![],
            Some("{\"mode\":\"SHUT\",\"reason\":\"x\"}".into()),
            422,
        ),
        (
            "PUT",
            "/admin/sales-switch".into(),
            Some(user.as_str()),
            vec![],
            Some("{\"mode\":\"OPEN\",\"reason\":\"x\"}".into()),
            403,
        ),
        ("GET", "/admin/campaigns/nope/stats".into(), Some(admin.as_str()), vec![], None, 404),
        ("GET", "/admin/machinery".into(), Some(user.as_str()), vec![], None, 403),
    ];
    for (method, path, token, headers, body, want) in cases {
        let a = s.call(method, &path, token, &headers, body).await;
        assert_eq!(a.status, want, "{method} {path}: {}", a.body);
        if a.status != 401 && a.status != 403 && a.status != 404 || a.body.get("code").is_some() {
            assert!(
                a.body.get("code").is_some() || a.body.get("message").is_some(),
                "{method} {path}: unclear error {}",
                a.body
            );
        }
    }
    // a correctly signed body that is not a valid notice, and a valid one for an unknown order
    for (body, want) in [
        (json!({"payment_id": "p", "order_id": order, "amount": -5, "currency": "EUR", "status": "SUCCEEDED"}), 422),
        (json!({"payment_id": "p", "order_id": order, "amount": 100, "currency": "EUR", "status": "MAYBE"}), 422),
        (
            json!({"payment_id": "p", "order_id": "o-none", "amount": 100, "currency": "EUR", "status": "SUCCEEDED"}),
            404,
        ),
        (
            json!({"payment_id": "p", "order_id": order, "amount": 100, "currency": "EUR", "status": "SUCCEEDED", "admin": true}),
            422,
        ),
    ] {
        let b = body.to_string();
        let sig = signature::sign(WEBHOOK_SECRET.as_bytes(), holdfast::clock::now_s(), b.as_bytes());
        let a = s.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(b)).await;
        assert_eq!(a.status, want, "{}", a.body);
    }
    assert_eq!(s.fingerprint().await, before, "a refused request wrote something");
}

#[tokio::test]
async fn a_replayed_webhook_is_a_duplicate_and_a_stale_replay_is_refused() {
    let s = spawn_opts(&[], |_| {}).await;
    s.sku("RW", 100, 2, 1, None).await;
    let id = s.order_id("sam", "k", json!([{"sku": "RW", "quantity": 1}])).await;
    let body = json!({"payment_id": "rw-1", "order_id": id, "amount": 100, "currency": "EUR", "status": "SUCCEEDED"})
        .to_string();
    let sig = signature::sign(WEBHOOK_SECRET.as_bytes(), holdfast::clock::now_s(), body.as_bytes());
    let first = s.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(body.clone())).await;
    assert_eq!(first.body["result"], "applied");
    let replay = s.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(body.clone())).await;
    assert_eq!(replay.body["result"], "duplicate");
    let old = signature::sign(WEBHOOK_SECRET.as_bytes(), holdfast::clock::now_s() - 3600, body.as_bytes());
    let stale = s.call("POST", "/payments/callback", None, &[("x-signature", &old)], Some(body)).await;
    assert_eq!(stale.status, 401);
    assert_eq!(s.get_order("sam", &id).await.body["version"], 2);
}

#[tokio::test]
async fn forged_queue_messages_are_refused_into_the_dlq_and_never_applied() {
    let s = spawn_opts(&[], |o| o.visibility_timeout_cap = Some(1)).await;
    s.sku("FG", 100, 3, 1, None).await;
    let id = s.order_id("tia", "k", json!([{"sku": "FG", "quantity": 1}])).await;
    let before = s.fingerprint().await;
    let detail = json!({"schema": 1, "order_id": id, "user_id": "tia", "status": "PAID", "version": 2, "amount": 100, "currency": "EUR", "lines": [{"sku": "FG", "quantity": 1}]});
    let envelope = |dt: &str, d: &serde_json::Value, src: &str| {
        json!({"version": "0", "id": "x", "detail-type": dt, "source": src, "detail": d}).to_string()
    };
    let mut unknown_field = detail.clone();
    unknown_field["force"] = json!(true);
    let mut v2 = detail.clone();
    v2["schema"] = json!(2);
    let stock_forgeries = [
        envelope("OrderPaid", &unknown_field, "holdfast.orders"),
        envelope("OrderPaid", &v2, "holdfast.orders"),
        envelope("OrderPaid", &detail, "evil.source"),
        envelope("OrderRefunded", &detail, "holdfast.orders"),
        "{not json".to_owned(),
        // Well-formed Holdfast events the order's own status contradicts (security review V4):
        // the order is pending, so neither may move its stock.
        envelope("OrderPaid", &detail, "holdfast.orders"),
        envelope("OrderCancelled", &detail, "holdfast.orders"),
    ];
    let timeout_forgeries = [
        json!({"type": "PaymentTimeout", "schema": 1, "order_id": id, "due_at": 0, "extra": 1}).to_string(),
        json!({"type": "PaymentTimeout", "schema": 9, "order_id": id, "due_at": 0}).to_string(),
        json!({"type": "ReservationCheck", "schema": 1, "reservation_id": id, "kind": "order", "due_at": 0})
            .to_string(),
    ];
    let check_forgeries = [
        json!({"type": "ReservationCheck", "schema": 1, "reservation_id": "../../x", "kind": "order", "due_at": 0})
            .to_string(),
        json!({"type": "ReservationCheck", "schema": 1, "reservation_id": id, "kind": "sideways", "due_at": 0})
            .to_string(),
    ];
    let sqs = aws_sdk_sqs::Client::new(&s.local.sdk);
    for (queue, bodies) in [
        ("StockEventsQueue", stock_forgeries.to_vec()),
        ("PaymentTimeoutQueue", timeout_forgeries.to_vec()),
        ("ReservationCheckQueue", check_forgeries.to_vec()),
    ] {
        for b in bodies {
            sqs.send_message()
                .queue_url(s.local.resources.queue_url(queue).unwrap())
                .message_body(b)
                .send()
                .await
                .unwrap();
        }
    }
    for (dlq, n) in [("StockEventsDLQ", 7), ("PaymentTimeoutDLQ", 3), ("ReservationCheckDLQ", 2)] {
        eventually(&format!("{n} messages in {dlq}"), Duration::from_secs(90), || async {
            (s.local.queue_depth(dlq).await.unwrap() == n).then_some(())
        })
        .await;
    }
    assert_eq!(s.fingerprint().await, before, "a forged message was applied");
    assert_eq!(s.get_order("tia", &id).await.body["status"], "PENDING_PAYMENT");
}
