//! The sample events in `events/` (for `sam local invoke <Function> -e events/<file>.json`)
//! parse as the event type their function's handler takes, their bodies pass the handler's own
//! parsers, and every function has at least one. A fixture is named after its function:
//! `<function>.json` or `<function>-<what>.json`.

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::SqsEvent;
use holdfast::domain::events::{EventDetail, EventKind};
use holdfast::domain::{IdempotencyKey, OrderId, ReservationId, UserId};
use holdfast::handlers::stock_events::{parse_event, StockAction};
use holdfast::handlers::stream::StreamEvent;
use holdfast::handlers::{self, Trigger, FUNCTIONS, ROUTES};
use holdfast::ports::Message;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The secret the payment-callback fixture is signed with (the local default, docs/architecture.md, "Local stack").
const WEBHOOK_SECRET: &str = "holdfast-local-webhook-secret";

fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events")
}

/// Every fixture: file name → (function, text).
fn fixtures() -> BTreeMap<String, (&'static str, String)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(events_dir()).expect("events/ exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with(".json"), "events/{name}: only .json files belong in events/");
        let stem = name.trim_end_matches(".json");
        let function = FUNCTIONS
            .iter()
            .map(|(f, _)| *f)
            .filter(|f| stem == *f || stem.starts_with(&format!("{f}-")))
            .max_by_key(|f| f.len())
            .unwrap_or_else(|| panic!("events/{name} is not named after a function (<function>[-<what>].json)"));
        out.insert(name, (function, std::fs::read_to_string(&path).unwrap()));
    }
    out
}

fn of(function: &str) -> Vec<(String, String)> {
    fixtures().into_iter().filter(|(_, (f, _))| *f == function).map(|(n, (_, t))| (n, t)).collect()
}

fn one(name: &str) -> String {
    std::fs::read_to_string(events_dir().join(name)).unwrap_or_else(|e| panic!("events/{name}: {e}"))
}

fn http_request(name: &str, text: &str) -> ApiGatewayV2httpRequest {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("events/{name} is not an HTTP API v2 request: {e}"))
}

fn sqs_event(name: &str, text: &str) -> SqsEvent {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("events/{name} is not an SQS event: {e}"))
}

fn stream_event(name: &str, text: &str) -> StreamEvent {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("events/{name} is not a DynamoDB stream event: {e}"))
}

#[test]
fn every_function_has_a_sample_event() {
    let all = fixtures();
    for (f, _) in FUNCTIONS {
        assert!(all.values().any(|(g, _)| g == f), "no events/{f}*.json for {f}");
    }
}

#[test]
fn every_sample_event_parses_as_what_its_handler_takes() {
    for (name, (function, text)) in fixtures() {
        match handlers::trigger_of(function).unwrap() {
            Trigger::Http => {
                let req = http_request(&name, &text);
                assert_eq!(req.version.as_deref(), Some("2.0"), "events/{name}: payload version");
                let route = req.route_key.clone().unwrap_or_default();
                let routes = ROUTES.iter().find(|(f, _)| *f == function).map(|(_, r)| *r).unwrap();
                assert!(routes.iter().any(|r| r.key == route), "events/{name}: {route:?} is not a route of {function}");
                assert_eq!(req.request_context.route_key.as_deref(), Some(route.as_str()), "events/{name}");
                let (method, path) = route.split_once(' ').unwrap();
                assert_eq!(req.request_context.http.method.as_str(), method, "events/{name}: method");
                // every {param} of the route is a path parameter, substituted into rawPath
                let mut expected_path = path.to_owned();
                for seg in path.split('/').filter(|s| s.starts_with('{')) {
                    let p = seg.trim_matches(|c| c == '{' || c == '}');
                    let v =
                        req.path_parameters.get(p).unwrap_or_else(|| panic!("events/{name}: no path parameter {p}"));
                    expected_path = expected_path.replace(seg, v);
                }
                assert_eq!(req.raw_path.as_deref(), Some(expected_path.as_str()), "events/{name}: rawPath");
            }
            Trigger::Sqs => {
                let ev = sqs_event(&name, &text);
                assert!(!ev.records.is_empty(), "events/{name}: no records");
                for m in &ev.records {
                    let body = m.body.as_deref().unwrap_or("");
                    if function == "stock-events" {
                        parse_event(body)
                            .unwrap_or_else(|e| panic!("events/{name}: stock-events refuses its body: {e:#}"));
                    } else if function == "push-api" {
                        handlers::push_api::parse(body)
                            .unwrap_or_else(|e| panic!("events/{name}: push-api refuses its body: {e:#}"));
                    } else if function == "refunds" {
                        handlers::refunds::parse(body)
                            .unwrap_or_else(|e| panic!("events/{name}: refunds refuses its body: {e:#}"));
                    } else {
                        let msg = handlers::sqs::parse_message(m)
                            .unwrap_or_else(|e| panic!("events/{name}: {function} refuses its body: {e:#}"));
                        let right_kind = match msg {
                            Message::PaymentTimeout { .. }
                            | Message::SupplierPoll { .. }
                            | Message::SupplierIssue { .. } => function == "payment-timeout",
                            Message::ReservationCheck { .. } | Message::RecordedCheckout { .. } => {
                                function == "reservation-check"
                            }
                            Message::ReconcileWork { .. } => function == "reconcile-worker",
                        };
                        assert!(right_kind, "events/{name}: {function} would reject a {msg:?}");
                    }
                }
            }
            Trigger::Stream => {
                let ev = stream_event(&name, &text);
                assert!(!ev.records.is_empty(), "events/{name}: no records");
                for r in &ev.records {
                    handlers::publish_events::record_events(r)
                        .unwrap_or_else(|e| panic!("events/{name}: publish-events cannot decode a record: {e:#}"));
                }
            }
            Trigger::Schedule => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["detail-type"], "Scheduled Event", "events/{name}");
                assert_eq!(v["source"], "aws.events", "events/{name}");
            }
        }
    }
}

#[test]
fn the_sample_checkout_is_one_order_throughout() {
    let create = http_request("create-order.json", &one("create-order.json"));
    let user = create.request_context.authorizer.as_ref().and_then(|a| a.jwt.as_ref()).unwrap().claims["sub"].clone();
    let key =
        create.headers.get("idempotency-key").expect("create-order.json sends an Idempotency-Key").to_str().unwrap();
    let id = OrderId::derive(&UserId::parse(&user).unwrap(), &IdempotencyKey::parse(key).unwrap());
    holdfast::api::body::parse::<holdfast::api::orders::CreateOrderRequest>(create.body.as_deref().unwrap().as_bytes())
        .expect("create-order.json's body parses");
    for f in ["orders-api-get.json", "orders-api-cancel.json"] {
        let r = http_request(f, &one(f));
        assert_eq!(r.path_parameters["order_id"], id.as_str(), "events/{f} names the sample order");
        assert_eq!(
            r.request_context.authorizer.as_ref().unwrap().jwt.as_ref().unwrap().claims["sub"],
            user,
            "events/{f}: owner"
        );
    }
    let timeout = sqs_event("payment-timeout.json", &one("payment-timeout.json"));
    match handlers::sqs::parse_message(&timeout.records[0]).unwrap() {
        Message::PaymentTimeout { order_id, .. } => assert_eq!(order_id, id.as_str()),
        other => panic!("{other:?}"),
    }
    let check = sqs_event("reservation-check.json", &one("reservation-check.json"));
    match handlers::sqs::parse_message(&check.records[0]).unwrap() {
        Message::ReservationCheck { reservation_id, .. } => {
            assert_eq!(reservation_id, ReservationId::for_order(&id).as_str())
        }
        other => panic!("{other:?}"),
    }
    let paid = sqs_event("stock-events.json", &one("stock-events.json"));
    assert_eq!(
        parse_event(paid.records[0].body.as_deref().unwrap()).unwrap(),
        StockAction::Confirm(ReservationId::for_order(&id)),
        "stock-events.json confirms the sample order's lock"
    );
}

#[test]
fn the_stream_sample_announces_one_order_paid_which_is_the_stock_events_sample() {
    let ev = stream_event("publish-events.json", &one("publish-events.json"));
    assert_eq!(ev.records.len(), 1);
    let r = &ev.records[0];
    assert_eq!(r.event_name, "MODIFY");
    // Both images are exactly what the order adapter writes for the order they decode to.
    for (which, image) in [("OldImage", &r.change.old_image), ("NewImage", &r.change.new_image)] {
        let item = holdfast::handlers::stream::image(image).unwrap();
        let holdfast::domain::order::OrderRecord::Order(order) =
            holdfast::adapters::dynamo::orders::decode_record(&item).unwrap()
        else {
            panic!("{which} is not an order")
        };
        let encoded = holdfast::adapters::dynamo::orders::encode_order(&order).unwrap();
        assert_eq!(encoded, item, "events/publish-events.json {which} differs from encode_order of its order");
    }
    let events = handlers::publish_events::record_events(r).unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, EventKind::OrderPaid);
    // What stock-events receives is what publish-events would have put on the bus.
    let paid = sqs_event("stock-events.json", &one("stock-events.json"));
    let envelope: serde_json::Value = serde_json::from_str(paid.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(envelope["detail-type"], events[0].kind.as_str());
    assert_eq!(envelope["source"], holdfast::domain::events::SOURCE);
    let detail: EventDetail = serde_json::from_value(envelope["detail"].clone()).unwrap();
    assert_eq!(detail, events[0].detail);
}

#[test]
fn the_payment_callback_sample_is_signed_with_the_local_secret() {
    let req = http_request("payment-callback.json", &one("payment-callback.json"));
    assert!(req.request_context.authorizer.is_none(), "the callback route has no JWT authorizer");
    let header = req.headers.get("x-signature").expect("X-Signature").to_str().unwrap();
    let body = req.body.as_deref().unwrap().as_bytes();
    let t: i64 = header.split(',').find_map(|p| p.strip_prefix("t=")).unwrap().parse().unwrap();
    holdfast::domain::signature::verify(WEBHOOK_SECRET.as_bytes(), header, body, t)
        .expect("signature matches at its own time");
    // Its timestamp is fixed, so against the real clock it is stale: it shows the shape only.
    assert_eq!(
        holdfast::domain::signature::verify(WEBHOOK_SECRET.as_bytes(), header, body, holdfast::clock::now_s()),
        Err(holdfast::domain::signature::SignatureError::Stale)
    );
    holdfast::handlers::payment_callback::parse_notice(body).expect("the body is a valid notice");
}

#[test]
fn the_reservation_sample_asks_for_an_internal_scope_and_valid_items() {
    let req = http_request("reservations.json", &one("reservations.json"));
    let jwt = req.request_context.authorizer.as_ref().unwrap().jwt.as_ref().unwrap();
    assert!(jwt.scopes.as_ref().unwrap().iter().any(|s| s == "reservations:write"));
    holdfast::api::body::parse::<holdfast::api::reservations::ReservationRequest>(
        req.body.as_deref().unwrap().as_bytes(),
    )
    .expect("reservations.json's body parses");
    for f in of("stock-api") {
        let r = http_request(&f.0, &f.1);
        if r.route_key.as_deref().unwrap_or("").contains("/admin/") {
            let jwt = r.request_context.authorizer.as_ref().unwrap().jwt.as_ref().unwrap();
            assert!(jwt.scopes.as_ref().unwrap().iter().any(|s| s == "stock:admin"), "events/{}: admin scope", f.0);
        }
    }
}

/// The HTTP samples, in the order a first smoke test would send them, through each function's
/// handler over one shared in-memory world (`adapters::memory`): none gets a 5xx. The
/// payment-callback sample is refused (401) because its signed timestamp is fixed and stale.
#[tokio::test]
async fn the_http_samples_run_through_their_handlers_without_a_server_error() {
    use holdfast::adapters::memory::MemoryWorld;
    let config =
        holdfast::config::Config::from_lookup(&|k| (k == "PAYMENT_WEBHOOK_SECRET").then(|| WEBHOOK_SECRET.to_owned()))
            .unwrap();
    let world = MemoryWorld::default();
    let app = |function: &str| {
        holdfast::app::with_ports(
            function,
            config.clone(),
            world.stock.clone(),
            world.orders.clone(),
            world.messages.clone(),
            world.bus.clone(),
        )
        .unwrap()
    };
    let sequence = [
        ("stock-api-put.json", 201),
        ("stock-api-adjust.json", 201),
        ("stock-read-get.json", 200),
        ("create-order.json", 201),
        ("orders-api-get.json", 200),
        ("orders-api-list.json", 200),
        ("payment-callback.json", 401),
        ("orders-api-cancel.json", 200),
        ("reservations.json", 201),
        // a campaign without a queue (none exists here): 404, no server error
        ("queue-api-me.json", 404),
    ];
    let all = fixtures();
    for (function, _) in FUNCTIONS.iter().filter(|(_, t)| *t == Trigger::Http) {
        for (name, (f, _)) in &all {
            if f == function {
                assert!(sequence.iter().any(|(n, _)| n == name), "events/{name} is not in the smoke sequence");
            }
        }
    }
    for (name, expected) in sequence {
        let (function, text) = &all[name];
        let res = handlers::http(function, &app(function), http_request(name, text)).await.unwrap();
        let body = match &res.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => t.clone(),
            other => format!("{other:?}"),
        };
        assert!(res.status_code < 500, "events/{name} → {} {body}", res.status_code);
        assert_eq!(res.status_code, expected, "events/{name} → {body}");
    }
}
