//! Pushed outcomes (docs/push.md) end to end on the local stack: buyers connected over
//! WebSocket (`ws://…/ws?token=`) are told their own orders' outcomes and nobody else's, a
//! connection without a valid token is refused at the upgrade, ping answers pong, a connection
//! the API no longer has is removed on the first push to it, and a queued buyer is pushed
//! ADMITTED with their token. Invariants are clean at the end of each.

use crate::common::{eventually, size, spawn, Stack, SIGNAL_WAIT};
use futures::{SinkExt, StreamExt};
use holdfast::ports::push::Connections;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn ws_url(s: &Stack, query: &str) -> String {
    format!("{}/ws?{query}", s.local.base_url.replacen("http://", "ws://", 1))
}

async fn connect(s: &Stack, query: &str) -> Socket {
    let (ws, resp) = tokio_tungstenite::connect_async(ws_url(s, query)).await.expect("the upgrade is accepted");
    assert_eq!(resp.status(), 101);
    ws
}

/// The next JSON text frame, within `wait`.
async fn next_frame(ws: &mut Socket, wait: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return Some(serde_json::from_str(&t).expect("a JSON frame")),
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

/// Frames until one satisfies `want` (the others returned too, in order).
async fn frame_where(ws: &mut Socket, what: &str, want: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
    let mut seen = Vec::new();
    let start = Instant::now();
    while start.elapsed() < SIGNAL_WAIT {
        if let Some(f) = next_frame(ws, Duration::from_secs(5)).await {
            if want(&f) {
                return (f, seen);
            }
            seen.push(f);
        }
    }
    panic!("no frame {what} within {SIGNAL_WAIT:?}; saw {seen:?}");
}

async fn ping(ws: &mut Socket) {
    ws.send(Message::text(r#"{"action":"ping"}"#)).await.expect("ping sent");
    let (pong, _) = frame_where(ws, "pong", |f| f["type"] == "pong").await;
    assert_eq!(pong, json!({"type": "pong"}));
}

async fn paid_order(s: &Stack, user: &str, key: &str, sku: &str) -> (String, Instant) {
    let a = s.order(user, key, json!([{"sku": sku, "quantity": 1}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let id = a.body["order_id"].as_str().expect("an order id").to_owned();
    let paid = s.pay(&id, &format!("pay-{key}"), 500, "SUCCEEDED").await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    (id, Instant::now())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Two buyers connected: each is told PAID for their own orders, with the order id, and never
/// hears of the other's; ping → pong. The event → message latency is printed (p50/p99 over
/// `HOLDFAST_PUSH_ORDERS` orders, 10 in `make test`; docs/push.md has a 50-order run).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_buyer_is_told_their_order_is_paid_and_another_buyer_hears_nothing_of_it() {
    let n = size("HOLDFAST_PUSH_ORDERS", 10);
    let s = spawn().await;
    s.sku("PUSHMUG", 500, (2 * n) as i64, 2, None).await;
    let mut ann = connect(&s, &format!("token={}", s.user("ann"))).await;
    let mut bob = connect(&s, &format!("token={}", s.user("bob"))).await;
    ping(&mut ann).await;
    ping(&mut bob).await;

    let mut latencies = Vec::new();
    let mut ann_orders = Vec::new();
    for i in 0..n {
        let (id, paid_at) = paid_order(&s, "ann", &format!("ann-{i}"), "PUSHMUG").await;
        let (frame, _) = frame_where(&mut ann, "PAID for ann's order", |f| f["order_id"] == id.as_str()).await;
        latencies.push(paid_at.elapsed());
        assert_eq!((frame["type"].as_str(), frame["status"].as_str()), (Some("order"), Some("PAID")), "{frame}");
        assert!(frame["at"].as_str().is_some_and(|a| !a.is_empty()), "{frame}");
        ann_orders.push(id);
    }
    // bob's own order reaches bob; nothing of ann's came to him before it, or with it
    let (bobs, _) = paid_order(&s, "bob", "bob-0", "PUSHMUG").await;
    let (frame, before) = frame_where(&mut bob, "PAID for bob's order", |f| f["order_id"] == bobs.as_str()).await;
    assert_eq!(frame["status"], "PAID");
    for f in &before {
        assert!(!ann_orders.iter().any(|o| f["order_id"] == o.as_str()), "bob was told of ann's order: {f}");
    }
    while let Some(f) = next_frame(&mut ann, Duration::from_millis(300)).await {
        assert_ne!(f["order_id"], bobs.as_str(), "ann was told of bob's order: {f}");
    }
    // both leave: $disconnect forgets them; what the connection table cost, per buyer
    ann.close(None).await.unwrap();
    bob.close(None).await.unwrap();
    let table = s.local.resources.table("ConnectionTable").unwrap().to_owned();
    let connections = holdfast::adapters::dynamo::connections::DynamoConnections::new(
        aws_sdk_dynamodb::Client::new(&s.local.sdk),
        table,
    );
    for u in ["ann", "bob"] {
        eventually("the buyer's connection forgotten", SIGNAL_WAIT, || {
            let c = &connections;
            async move { c.of_user(u, holdfast::clock::now_s()).await.unwrap().is_empty().then_some(()) }
        })
        .await;
    }
    let usage = holdfast::adapters::usage::snapshot();
    let conn: Vec<(&String, u64)> =
        usage.writes.iter().filter(|(k, _)| k.contains(" CONN ")).map(|(k, w)| (k, w.requests)).collect();
    let frames = n + 1;
    println!(
        "connection table writes for 2 buyers, {frames} order frames and 2 pongs: {conn:?}; push-api invocations {}, PostToConnection {}",
        usage.calls.get("lambda:Invoke:push-api").copied().unwrap_or(0),
        usage.calls.get("execute-api:ManageConnections").copied().unwrap_or(0),
    );
    // by construction: 2 puts at connect and 2 deletes at disconnect per buyer, 1 mark per frame
    let count = |label: &str| conn.iter().filter(|(k, _)| k.as_str() == label).map(|(_, n)| n).sum::<u64>();
    assert_eq!((count("PutItem CONN U"), count("PutItem CONN C")), (2, 2), "{conn:?}");
    assert_eq!(count("PutItem CONN S"), frames as u64, "{conn:?}");
    assert_eq!(count("DeleteItem CONN U") + count("DeleteItem CONN C"), 4, "{conn:?}");
    latencies.sort();
    println!(
        "push latency, payment answered → PAID frame received, {n} orders: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies[latencies.len() - 1]
    );
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// No token, a token signed with another key, an expired one, one without the `orders:read`
/// scope: the upgrade is refused (401) and no connection is recorded; a good one is let
/// through. (A token before its `nbf`: `adapters::jwks::tests`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_a_valid_token_is_refused_at_the_upgrade() {
    let s = spawn().await;
    let forged = holdfast_local::auth::mint("not-the-stacks-key", "ann", holdfast_local::auth::USER_SCOPES, 3600);
    let expired = holdfast_local::auth::mint(&s.local.jwt_secret, "ann", holdfast_local::auth::USER_SCOPES, -60);
    let unscoped = holdfast_local::auth::mint(&s.local.jwt_secret, "ann", &["orders:write"], 3600);
    for query in [
        "".to_owned(),
        "token=".to_owned(),
        format!("token={forged}"),
        format!("token={expired}"),
        format!("token={unscoped}"),
    ] {
        match tokio_tungstenite::connect_async(ws_url(&s, &query)).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401, "{query}"),
            Err(e) => panic!("{query}: refused otherwise than by HTTP: {e}"),
            Ok(_) => panic!("{query}: a connection without a valid token was let through"),
        }
    }
    let mut ok = connect(&s, &format!("token={}", s.user("ann"))).await;
    ping(&mut ok).await;
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A connection the API no longer has (its client vanished, `$disconnect` never came) is still
/// in the connection table: the first push to it gets 410 and removes it; the buyer's live
/// connection is told all the same, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gone_connection_is_removed_on_the_first_push_to_it() {
    let s = spawn().await;
    s.sku("PUSHGONE", 500, 5, 1, None).await;
    let table = s.local.resources.table("ConnectionTable").expect("the connection table").to_owned();
    let connections = holdfast::adapters::dynamo::connections::DynamoConnections::new(
        aws_sdk_dynamodb::Client::new(&s.local.sdk),
        table,
    );
    // one watch chain per ticket (docs/push.md): the mark's condition on the table itself
    let now = holdfast::clock::now_s();
    assert!(connections.start_watch("cat", "drop", now + 60, now).await.unwrap());
    assert!(!connections.start_watch("cat", "drop", now + 60, now).await.unwrap(), "a second chain");
    assert!(connections.start_watch("cat", "drop", now + 60, now + 61).await.unwrap(), "an expired mark blocks");
    connections.end_watch("cat", "drop").await.unwrap();
    assert!(connections.start_watch("cat", "drop", now + 60, now).await.unwrap(), "an ended chain's mark stays");
    connections.end_watch("cat", "drop").await.unwrap();
    connections.open("cat", "vanished0000000=", holdfast::clock::now_s() + 600).await.unwrap();
    let mut live = connect(&s, &format!("token={}", s.user("cat"))).await;
    ping(&mut live).await;
    assert_eq!(connections.of_user("cat", holdfast::clock::now_s()).await.unwrap().len(), 2);

    let (id, _) = paid_order(&s, "cat", "cat-0", "PUSHGONE").await;
    let (frame, _) = frame_where(&mut live, "PAID", |f| f["order_id"] == id.as_str()).await;
    assert_eq!(frame["status"], "PAID");
    let left = eventually("the gone connection removed", SIGNAL_WAIT, || {
        let c = &connections;
        async move {
            let open = c.of_user("cat", holdfast::clock::now_s()).await.unwrap();
            (!open.contains(&"vanished0000000=".to_owned())).then_some(open)
        }
    })
    .await;
    assert_eq!(left.len(), 1, "the live connection stays: {left:?}");
    assert_eq!(connections.user_of("vanished0000000=").await.unwrap(), None);
    // closing the live one runs $disconnect: nothing of cat is left
    live.close(None).await.unwrap();
    eventually("the closed connection forgotten", SIGNAL_WAIT, || {
        let c = &connections;
        async move { c.of_user("cat", holdfast::clock::now_s()).await.unwrap().is_empty().then_some(()) }
    })
    .await;
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A buyer in a drop's queue watches their ticket (`{"action":"watch"}`): told WAITING with
/// their position at once, then pushed ADMITTED with the admission token when their time
/// comes (no polling), and the token checks out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_buyer_is_pushed_admitted_with_their_token() {
    let s = spawn().await;
    s.sku("PUSHSNKR", 1000, 3, 1, None).await;
    let starts = holdfast::clock::now_ms() + 3_000;
    let body = json!({
        "name": "push drop",
        "starts_at": holdfast::clock::rfc3339(starts),
        "ends_at": holdfast::clock::rfc3339(starts + 3_600_000),
        "items": [{"sku": "PUSHSNKR", "quota": 3, "shards": 1}],
        // one counter: eve (second to join) is position 2, admitted 2 s after the start: she
        // watches while still WAITING
        "queue": {"rate": 1, "token_ttl_seconds": 120, "counters": 1},
    });
    let a = s.call("PUT", "/admin/campaigns/pushdrop", Some(&s.admin), &[], Some(body.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    for u in ["dee", "eve"] {
        let j = s.call("POST", "/campaigns/pushdrop/queue", Some(&s.user(u)), &[], None).await;
        assert_eq!(j.status, 201, "{}", j.body);
    }
    let mut eve = connect(&s, &format!("token={}", s.user("eve"))).await;
    eve.send(Message::text(r#"{"action":"watch","campaign_id":"pushdrop"}"#)).await.unwrap();
    let (waiting, _) = frame_where(&mut eve, "the ticket now", |f| f["type"] == "queue").await;
    assert_eq!((waiting["state"].as_str(), waiting["campaign_id"].as_str()), (Some("WAITING"), Some("pushdrop")));
    assert!(waiting["position"].as_u64().is_some() && waiting.get("admission_token").is_none(), "{waiting}");

    let (admitted, _) = frame_where(&mut eve, "ADMITTED", |f| f["type"] == "queue" && f["state"] == "ADMITTED").await;
    let pushed_at = holdfast::clock::now_ms();
    let position = admitted["position"].as_u64().expect("a position") as i64;
    // rate 1/s: position n is admitted at the (stored, whole-second) start + n s
    let due = (starts / 1000) * 1000 + position * 1000;
    assert!(pushed_at >= due, "pushed before its time: {admitted}");
    println!("ADMITTED pushed {} ms after position {position}'s admission time", pushed_at - due);
    let token = admitted["admission_token"].as_str().expect("the token comes with ADMITTED");
    let body =
        json!({"items": [{"sku": "PUSHSNKR", "quantity": 1, "campaign_id": "pushdrop"}], "admission_token": token});
    let order =
        s.call("POST", "/orders", Some(&s.user("eve")), &[("idempotency-key", "eve-1")], Some(body.to_string())).await;
    assert_eq!(order.status, 201, "the pushed token checks out: {}", order.body);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A code pool order: PAID is pushed, then `codes_ready` once its lock sold (`CodesReady` from
/// stock-events), and the codes read at once after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_code_buyer_is_told_when_the_codes_can_be_read() {
    let s = spawn().await;
    let spec = json!({"name": "gift card", "price": 500, "currency": "EUR", "shards": 1,
                      "model": {"management": "CODE_POOL"}});
    let a = s.call("PUT", "/admin/skus/PUSHCARD", Some(&s.admin), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let up = s.post("/admin/skus/PUSHCARD/codes", &s.admin, json!({"batch_id": "b1", "codes": ["PUSH-CODE-1"]})).await;
    assert_eq!(up.status, 201, "{}", up.body);
    let mut fay = connect(&s, &format!("token={}", s.user("fay"))).await;
    ping(&mut fay).await;
    let (id, _) = paid_order(&s, "fay", "fay-0", "PUSHCARD").await;
    let (ready, _) =
        frame_where(&mut fay, "codes_ready", |f| f["order_id"] == id.as_str() && f["codes_ready"] == true).await;
    assert_eq!((ready["type"].as_str(), ready["status"].as_str()), (Some("order"), Some("PAID")), "{ready}");
    let codes = s.codes_of("fay", &id).await;
    assert_eq!(codes.status, 200, "readable once pushed: {}", codes.body);
    assert_eq!(codes.body["codes"][0]["code"], "PUSH-CODE-1");
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A buyer who connects with `?campaign=` watches their ticket from the start: when their time
/// comes and the drop has sold out meanwhile, they are pushed SOLD_OUT (never ADMITTED into
/// nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watching_buyer_is_pushed_sold_out_when_the_drop_sold_out_before_their_turn() {
    let s = spawn().await;
    s.sku("PUSHLAST", 1000, 1, 1, None).await;
    let starts = holdfast::clock::now_ms() + 2_000;
    let body = json!({
        "name": "one unit",
        "starts_at": holdfast::clock::rfc3339(starts),
        "ends_at": holdfast::clock::rfc3339(starts + 3_600_000),
        "items": [{"sku": "PUSHLAST", "quota": 1, "shards": 1}],
        // one counter: tickets in join order, so eve is 8th, due 8 s after the start
        "queue": {"rate": 1, "token_ttl_seconds": 120, "counters": 1},
    });
    let a = s.call("PUT", "/admin/campaigns/pushout", Some(&s.admin), &[], Some(body.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    for u in ["dee", "f1", "f2", "f3", "f4", "f5", "f6", "eve"] {
        let j = s.call("POST", "/campaigns/pushout/queue", Some(&s.user(u)), &[], None).await;
        assert_eq!(j.status, 201, "{}", j.body);
    }
    let mut eve = connect(&s, &format!("token={}&campaign=pushout", s.user("eve"))).await;
    // dee, first in line, buys the one unit
    let dee = eventually("dee admitted", SIGNAL_WAIT, || async {
        let a = s.get("/campaigns/pushout/queue/me", Some(&s.user("dee"))).await.body;
        (a["state"] == "ADMITTED").then_some(a)
    })
    .await;
    let body = json!({"items": [{"sku": "PUSHLAST", "quantity": 1, "campaign_id": "pushout"}],
                      "admission_token": dee["admission_token"]});
    let order =
        s.call("POST", "/orders", Some(&s.user("dee")), &[("idempotency-key", "dee-1")], Some(body.to_string())).await;
    assert_eq!(order.status, 201, "{}", order.body);
    let id = order.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(s.pay(&id, "pay-dee", 1000, "SUCCEEDED").await.status, 200);
    s.lock_reaches(&id, "SOLD").await;
    let (sold_out, before) = frame_where(&mut eve, "SOLD_OUT", |f| f["type"] == "queue").await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!((sold_out["state"].as_str(), sold_out["campaign_id"].as_str()), (Some("SOLD_OUT"), Some("pushout")));
    assert!(sold_out.get("admission_token").is_none(), "{sold_out}");
    println!(
        "SOLD_OUT pushed {} ms after eve's admission time",
        holdfast::clock::now_ms() - ((starts / 1000) * 1000 + 8_000)
    );
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// A waitlisted buyer (docs/waitlist.md) is pushed their turn when a unit comes back: the
/// waitlist's own `WaitlistNotified` event becomes `{"type":"waitlist",…}` on their connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waitlisted_buyer_is_pushed_their_turn_when_a_unit_comes_back() {
    let s = spawn().await;
    s.sku("PUSHWL", 500, 1, 1, None).await;
    let a = s.order("gil", "gil-0", json!([{"sku": "PUSHWL", "quantity": 1}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let held = a.body["order_id"].as_str().unwrap().to_owned();
    let join = s.call("POST", "/skus/PUSHWL/waitlist", Some(&s.user("hal")), &[], None).await;
    assert_eq!(join.status, 201, "{}", join.body);
    let mut hal = connect(&s, &format!("token={}", s.user("hal"))).await;
    ping(&mut hal).await;
    assert_eq!(s.cancel("gil", &held).await.status, 200);
    let (turn, _) = frame_where(&mut hal, "the waitlist's turn", |f| f["type"] == "waitlist").await;
    assert_eq!((turn["sku"].as_str(), turn["state"].as_str()), (Some("PUSHWL"), Some("NOTIFIED")), "{turn}");
    assert_eq!(turn["position"], join.body["position"]);
    let me = s.get("/skus/PUSHWL/waitlist/me", Some(&s.user("hal"))).await;
    assert_eq!((me.status, me.body["state"].as_str()), (200, Some("NOTIFIED")), "{}", me.body);
    s.assert_invariants().await;
    s.local.shutdown().await;
}
