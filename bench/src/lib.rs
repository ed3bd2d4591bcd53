//! Fixtures shared by the benchmarks: apps over in-memory ports, stocked SKUs, and the events
//! each kind of Lambda receives (API Gateway HTTP API v2 requests, SQS batches, stream records).

use aws_lambda_events::apigw::{ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use holdfast::adapters::dynamo::orders::encode_order;
use holdfast::adapters::memory::MemoryWorld;
use holdfast::app::memory_app;
use holdfast::app::App;
use holdfast::config::Config;
use holdfast::domain::events::{EventKind, OrderEvent, SOURCE};
use holdfast::domain::order::Order;
use holdfast::domain::{Currency, Sku};
use holdfast::handlers::stream::{StreamEvent, StreamRecord};
use holdfast::http::Request;
use holdfast::ports::SkuMeta;
use http::header::{HeaderName, HeaderValue};
use std::collections::HashMap;

/// The webhook secret of every benchmark app.
pub const SECRET: &str = "bench-webhook-secret";
/// Units seeded per SKU: enough that no benchmark ever sells out.
pub const HUGE: i64 = 1_000_000_000;

/// Metrics go to stdout unless this is set; call first thing in a benchmark's `main`.
pub fn quiet_metrics() {
    std::env::set_var("HOLDFAST_QUIET_METRICS", "1");
}

/// A current-thread runtime, as one Lambda invocation has.
pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    }
}

/// Production defaults, with the webhook secret set and no pending-checkout cap (one benchmark
/// buyer places every order; the cap's counter write is still measured by the emulator bench).
pub fn config() -> Config {
    let mut c = match Config::from_lookup(&|_| None) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    c.webhook_secret = holdfast::config::Secret::new(SECRET);
    c.max_pending_per_user = 0;
    c
}

/// An app for `function` over fresh in-memory ports.
pub fn app(function: &str) -> (App, MemoryWorld) {
    match memory_app(function, config()) {
        Ok(x) => x,
        Err(e) => panic!("{e:#}"),
    }
}

pub fn sku(s: &str) -> Sku {
    match Sku::parse(s) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// Seeds `name` with `shards` shards holding [`HUGE`] units in all.
pub fn stock(w: &MemoryWorld, name: &str, shards: u16, per_user_limit: Option<u32>) {
    let meta = SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(name),
        name: format!("{name} (benchmark)"),
        price: 1_999,
        currency: match Currency::parse("EUR") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        },
        shards,
        slots: shards,
        per_user_limit,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    };
    let per = HUGE / i64::from(shards);
    w.stock.seed(meta, &vec![per; usize::from(shards)]);
}

/// An API Gateway HTTP API (payload v2) request as the JWT authorizer passes it on.
pub fn http_request(
    route: &str,
    path: &[(&str, &str)],
    headers: &[(&str, &str)],
    sub: Option<&str>,
    body: Option<String>,
) -> Request {
    let mut req = Request { route_key: Some(route.to_owned()), body, ..Default::default() };
    req.request_context.route_key = Some(route.to_owned());
    req.path_parameters = path.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    for (k, v) in headers {
        match (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            (Ok(k), Ok(v)) => {
                req.headers.insert(k, v);
            }
            _ => panic!("bad header {k}: {v}"),
        }
    }
    if let Some(sub) = sub {
        req.request_context.authorizer = Some(ApiGatewayRequestAuthorizer {
            jwt: Some(ApiGatewayRequestAuthorizerJwtDescription {
                claims: HashMap::from([("sub".to_owned(), sub.to_owned())]),
                scopes: None,
            }),
            ..Default::default()
        });
    }
    req
}

/// `POST /orders` of one unit of `HOT` by `user`, under its own Idempotency-Key.
pub fn create_order_request(user: &str, key: &str) -> Request {
    let body = r#"{"items":[{"sku":"HOT","quantity":1}]}"#.to_owned();
    http_request(
        "POST /orders",
        &[],
        &[("idempotency-key", key), ("content-type", "application/json")],
        Some(user),
        Some(body),
    )
}

/// One SQS batch with the given message bodies.
pub fn sqs_event(bodies: &[String]) -> SqsEvent {
    SqsEvent {
        records: bodies
            .iter()
            .enumerate()
            .map(|(i, b)| SqsMessage {
                message_id: Some(format!("m-{i}")),
                body: Some(b.clone()),
                ..Default::default()
            })
            .collect(),
    }
}

/// The EventBridge envelope of `kind` for `order`, as an SQS target receives it.
pub fn envelope(kind: EventKind, order: &Order) -> String {
    let ev = OrderEvent::of(kind, order, order.payment_id.clone());
    serde_json::json!({
        "version": "0",
        "id": "00000000-0000-0000-0000-000000000000",
        "detail-type": kind.as_str(),
        "source": SOURCE,
        "account": "123456789012",
        "time": "2026-12-01T00:00:00Z",
        "region": "eu-west-1",
        "resources": [],
        "detail": ev.detail,
    })
    .to_string()
}

/// A MODIFY stream record of the order table from `old` to `new`, as Lambda delivers it.
pub fn modify_record(old: &Order, new: &Order) -> StreamRecord {
    let image = |o: &Order| match encode_order(o) {
        Ok(it) => serde_dynamo::Item::from(it),
        Err(e) => panic!("{e:#}"),
    };
    let keys = std::collections::HashMap::from([(
        "pk".to_owned(),
        aws_sdk_dynamodb::types::AttributeValue::S(format!("ORD#{}", new.id)),
    )]);
    StreamRecord {
        aws_region: "eu-west-1".into(),
        change: aws_lambda_events::dynamodb::StreamRecord {
            approximate_creation_date_time: chrono::DateTime::UNIX_EPOCH,
            keys: serde_dynamo::Item::from(keys),
            new_image: image(new),
            old_image: image(old),
            sequence_number: Some("100".into()),
            size_bytes: 1000,
            stream_view_type: Some(aws_lambda_events::dynamodb::StreamViewType::NewAndOldImages),
        },
        event_id: "1".into(),
        event_name: "MODIFY".into(),
        event_source: Some("aws:dynamodb".into()),
        event_version: Some("1.1".into()),
        event_source_arn: Some("arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/1".into()),
        user_identity: None,
        record_format: None,
        table_name: None,
    }
}

pub fn stream_event(records: Vec<StreamRecord>) -> StreamEvent {
    StreamEvent { records }
}
