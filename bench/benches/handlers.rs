//! Every Lambda handler end to end over in-memory ports: the event as Lambda delivers it in,
//! the response out. What is measured is Holdfast's own CPU per invocation (parsing,
//! validation, domain decisions, JSON out); the AWS round trips are what the ports stand for.
//!
//! Each benchmark checks once, before measuring, that it exercises the path it is named after.

use aws_lambda_events::encodings::Body;
use criterion::{criterion_group, BatchSize, Criterion};
use holdfast::app::App;
use holdfast::clock;
use holdfast::domain::events::EventKind;
use holdfast::domain::order::{Order, OrderAction};
use holdfast::domain::reservation::ReservationKind;
use holdfast::domain::signature;
use holdfast::domain::{IdempotencyKey, Quantity, UserId};
use holdfast::handlers;
use holdfast::http::{Request, Response};
use holdfast::ports::Message;
use holdfast::service::orders;
use holdfast::service::stock::LineRequest;
use holdfast_bench::{
    app, create_order_request, envelope, http_request, modify_record, quiet_metrics, runtime, sku, sqs_event, stock,
    stream_event, SECRET,
};
use serde_json::json;
use std::rc::Rc;
use tokio::runtime::Runtime;

const USER: &str = "auth0|bench-user";

/// The most orders the create-order benchmark's shop holds before a fresh one replaces it.
const SHOP_ORDERS: u64 = 1_000;

fn body_of(r: &Response) -> &str {
    match &r.body {
        Some(Body::Text(t)) => t,
        _ => "",
    }
}

/// Asserts a response before the measurement starts.
fn expect(r: &Response, status: i64, contains: &str) {
    assert_eq!(r.status_code, status, "{}", body_of(r));
    assert!(body_of(r).contains(contains), "{}", body_of(r));
}

/// A PENDING_PAYMENT order of one unit of HOT, through the order service.
fn new_order(rt: &Runtime, app: &App, key: &str) -> Order {
    let user = UserId::parse(USER).unwrap();
    let key = IdempotencyKey::parse(key).unwrap();
    let lines = vec![LineRequest::plain(sku("HOT"), Quantity::new(1).unwrap())];
    rt.block_on(orders::create(app, &user, &key, lines)).unwrap().0
}

fn callback(o: &Order, payment_id: &str) -> Request {
    let body = json!({
        "payment_id": payment_id,
        "order_id": o.id.as_str(),
        "amount": o.amount,
        "currency": o.currency.as_str(),
        "status": "SUCCEEDED",
    })
    .to_string();
    let sig = signature::sign(SECRET.as_bytes(), clock::now_s(), body.as_bytes());
    http_request(
        "POST /payments/callback",
        &[],
        &[("x-signature", &sig), ("content-type", "application/json")],
        None,
        Some(body),
    )
}

fn http_benches(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("handler");

    // create-order: a new checkout (new Idempotency-Key) every iteration, against a shop of at
    // most `SHOP_ORDERS` orders: the in-memory store keeps every order, and a store that grows by
    // one order an iteration made the figure grow with the run's length (18.6 µs over 3 s, 22.3 µs
    // over 20 s), which no Lambda sees (its store is DynamoDB). A full shop is set aside in the
    // setup, outside the measurement, and dropped after it.
    {
        let fresh = || {
            let (app, w) = app("create-order");
            stock(&w, "HOT", 8, None);
            expect(
                &rt.block_on(handlers::http("create-order", &app, create_order_request(USER, "warm"))).unwrap(),
                201,
                "PENDING_PAYMENT",
            );
            Rc::new((app, w))
        };
        let mut shop = fresh();
        let mut full = Vec::new();
        let mut n = 0_u64;
        g.bench_function("create-order", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    if n.is_multiple_of(SHOP_ORDERS) {
                        full.push(std::mem::replace(&mut shop, fresh()));
                    }
                    (Rc::clone(&shop), create_order_request(USER, &format!("key-{n}")))
                },
                |(shop, req)| rt.block_on(handlers::http("create-order", &shop.0, req)),
                BatchSize::SmallInput,
            )
        });
        drop(full);
    }

    // orders-api: GET /orders/{order_id} of the caller's order.
    {
        let (app, w) = app("orders-api");
        stock(&w, "HOT", 1, None);
        let o = new_order(&rt, &app, "k1");
        let req = http_request("GET /orders/{order_id}", &[("order_id", o.id.as_str())], &[], Some(USER), None);
        expect(&rt.block_on(handlers::http("orders-api", &app, req.clone())).unwrap(), 200, o.id.as_str());
        g.bench_function("orders-api", |b| {
            b.iter_batched(
                || req.clone(),
                |req| rt.block_on(handlers::http("orders-api", &app, req)),
                BatchSize::SmallInput,
            )
        });
    }

    // payment-callback: the same signed callback again (a duplicate: identical work each time),
    // and a first-time apply on a fresh order.
    {
        let (app, w) = app("payment-callback");
        stock(&w, "HOT", 1, None);
        let o = new_order(&rt, &app, "k1");
        let req = callback(&o, "pay-1");
        expect(&rt.block_on(handlers::http("payment-callback", &app, req.clone())).unwrap(), 200, "\"applied\"");
        expect(&rt.block_on(handlers::http("payment-callback", &app, req.clone())).unwrap(), 200, "\"duplicate\"");
        g.bench_function("payment-callback", |b| {
            b.iter_batched(
                || req.clone(),
                |req| rt.block_on(handlers::http("payment-callback", &app, req)),
                BatchSize::SmallInput,
            )
        });

        let mut n = 0_u64;
        g.bench_function("payment-callback-first", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    callback(&new_order(&rt, &app, &format!("fresh-{n}")), "pay-1")
                },
                |req| rt.block_on(handlers::http("payment-callback", &app, req)),
                BatchSize::SmallInput,
            )
        });
        let last = callback(&new_order(&rt, &app, "check"), "pay-1");
        expect(&rt.block_on(handlers::http("payment-callback", &app, last)).unwrap(), 200, "\"applied\"");
    }

    // reservations: POST /reservations of another order system, a new order id each time.
    {
        let (app, w) = app("reservations");
        stock(&w, "HOT", 8, None);
        let req = |n: u64| {
            let body =
                json!({"order_id": format!("ext-{n}"), "ttl_seconds": 600, "items": [{"sku": "HOT", "quantity": 1}]})
                    .to_string();
            http_request(
                "POST /reservations",
                &[],
                &[("content-type", "application/json")],
                Some("partner-system"),
                Some(body),
            )
        };
        expect(&rt.block_on(handlers::http("reservations", &app, req(0))).unwrap(), 201, "FROZEN");
        let mut n = 0_u64;
        g.bench_function("reservations", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    req(n)
                },
                |req| rt.block_on(handlers::http("reservations", &app, req)),
                BatchSize::SmallInput,
            )
        });
    }

    // stock-api: GET /skus/{sku} of an 8-shard SKU.
    {
        let (app, w) = app("stock-read");
        stock(&w, "HOT", 8, None);
        let req = http_request("GET /skus/{sku}", &[("sku", "HOT")], &[], Some(USER), None);
        expect(&rt.block_on(handlers::http("stock-read", &app, req.clone())).unwrap(), 200, "\"available\"");
        g.bench_function("stock-read", |b| {
            b.iter_batched(
                || req.clone(),
                |req| rt.block_on(handlers::http("stock-read", &app, req)),
                BatchSize::SmallInput,
            )
        });
    }

    g.finish();
}

fn async_benches(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("handler");
    let no_failures = |r: aws_lambda_events::sqs::SqsBatchResponse| assert!(r.batch_item_failures.is_empty(), "{r:?}");

    // stock-events: OrderPaid for a reservation already confirmed (the `Unchanged` path), and for
    // fresh FROZEN ones (the confirm transaction).
    {
        let (app, w) = app("stock-events");
        stock(&w, "HOT", 8, None);
        let o = new_order(&rt, &app, "k1");
        // stock-events moves stock only when the stored order agrees with the event (paid)
        let paid = o
            .apply(
                OrderAction::Pay,
                &holdfast::domain::order::By::provider(Default::default(), "payment_succeeded"),
                clock::now_ms(),
            )
            .unwrap();
        assert!(rt.block_on(app.orders.replace(&o, &paid)).unwrap());
        let ev = sqs_event(&[envelope(EventKind::OrderPaid, &paid)]);
        no_failures(rt.block_on(handlers::sqs("stock-events", &app, ev.clone())).unwrap().unwrap());
        assert_eq!(w.stock.shards(&sku("HOT")).iter().map(|c| c.sold).sum::<i64>(), 1);
        g.bench_function("stock-events", |b| {
            b.iter_batched(
                || ev.clone(),
                |ev| rt.block_on(handlers::sqs("stock-events", &app, ev)),
                BatchSize::SmallInput,
            )
        });

        let mut n = 0_u64;
        g.bench_function("stock-events-fresh", |b| {
            b.iter_batched(
                || {
                    n += 1;
                    let o = new_order(&rt, &app, &format!("fresh-{n}"));
                    let paid = o
                        .apply(
                            OrderAction::Pay,
                            &holdfast::domain::order::By::provider(Default::default(), "payment_succeeded"),
                            clock::now_ms(),
                        )
                        .unwrap();
                    assert!(rt.block_on(app.orders.replace(&o, &paid)).unwrap());
                    sqs_event(&[envelope(EventKind::OrderPaid, &paid)])
                },
                |ev| rt.block_on(handlers::sqs("stock-events", &app, ev)),
                BatchSize::SmallInput,
            )
        });
        let counts = w.stock.shards(&sku("HOT"));
        assert_eq!(counts.iter().map(|c| c.locked).sum::<i64>(), 0, "every fresh lock was confirmed");
    }

    // payment-timeout: the order is not due yet, so the message is sent again (re-arm).
    {
        let (app, w) = app("payment-timeout");
        stock(&w, "HOT", 1, None);
        let o = new_order(&rt, &app, "k1");
        let msg = Message::PaymentTimeout { schema: 1, order_id: o.id.to_string(), due_at: o.pay_expire_at };
        let ev = sqs_event(&[serde_json::to_string(&msg).unwrap()]);
        let before = w.messages.sent().len();
        no_failures(rt.block_on(handlers::sqs("payment-timeout", &app, ev.clone())).unwrap().unwrap());
        assert_eq!(w.messages.sent().len(), before + 1, "re-armed");
        g.bench_function("payment-timeout", |b| {
            b.iter_batched(
                || ev.clone(),
                |ev| rt.block_on(handlers::sqs("payment-timeout", &app, ev)),
                BatchSize::SmallInput,
            )
        });
    }

    // reservation-check: due, and the order exists (Fine).
    {
        let (app, w) = app("reservation-check");
        stock(&w, "HOT", 1, None);
        let o = new_order(&rt, &app, "k1");
        let msg = Message::ReservationCheck {
            schema: 1,
            reservation_id: o.id.to_string(),
            kind: ReservationKind::Order,
            due_at: clock::now_s() - 1,
        };
        let ev = sqs_event(&[serde_json::to_string(&msg).unwrap()]);
        no_failures(rt.block_on(handlers::sqs("reservation-check", &app, ev.clone())).unwrap().unwrap());
        assert_eq!(w.stock.shards(&sku("HOT"))[0].locked, 1, "the lock of an existing order stays");
        g.bench_function("reservation-check", |b| {
            b.iter_batched(
                || ev.clone(),
                |ev| rt.block_on(handlers::sqs("reservation-check", &app, ev)),
                BatchSize::SmallInput,
            )
        });
    }

    // publish-events: one MODIFY record PENDING_PAYMENT → PAID (one OrderPaid on the bus).
    {
        let (app, w) = app("publish-events");
        stock(&w, "HOT", 1, None);
        let o = new_order(&rt, &app, "k1");
        let mut paid = o
            .apply(
                OrderAction::Pay,
                &holdfast::domain::order::By::provider(Default::default(), "payment_succeeded"),
                clock::now_ms(),
            )
            .unwrap();
        paid.payment_id = Some("pay-1".into());
        let ev = stream_event(vec![modify_record(&o, &paid)]);
        let r = rt.block_on(handlers::stream("publish-events", &app, ev.clone())).unwrap().unwrap();
        assert!(r.batch_item_failures.is_empty());
        assert_eq!(w.bus.published().last().map(|e| e.kind), Some(EventKind::OrderPaid));
        g.bench_function("publish-events", |b| {
            b.iter_batched(
                || ev.clone(),
                |ev| rt.block_on(handlers::stream("publish-events", &app, ev)),
                BatchSize::SmallInput,
            )
        });
    }

    // reconcile: nothing stale; three SKUs (1, 4 and 8 shards) with a fresh order each.
    {
        let (app, w) = app("reconcile");
        stock(&w, "HOT", 8, None);
        stock(&w, "WARM", 4, None);
        stock(&w, "COLD", 1, Some(5));
        for (i, s) in ["HOT", "WARM", "COLD"].into_iter().enumerate() {
            let user = UserId::parse(USER).unwrap();
            let key = IdempotencyKey::parse(&format!("k{i}")).unwrap();
            rt.block_on(orders::create(&app, &user, &key, vec![LineRequest::plain(sku(s), Quantity::new(1).unwrap())]))
                .unwrap();
        }
        // the schedule only seeds the sweep's items (the workers do the work): the whole sweep
        // in-process says what it found, the benchmark times the whole sweep
        let seeded = rt.block_on(handlers::schedule("reconcile", &app, json!({}))).unwrap().unwrap();
        assert!(seeded["items_seeded"].as_u64().is_some_and(|n| n > 0), "{seeded}");
        let report = rt.block_on(holdfast::service::reconcile::run(&app)).unwrap();
        assert_eq!((report.skus_checked, report.stale_locks), (3, 0), "{report:?}");
        assert!(report.violations.is_empty(), "{report:?}");
        g.bench_function("reconcile", |b| b.iter(|| rt.block_on(holdfast::service::reconcile::run(&app))));
    }

    g.finish();
}

criterion_group!(benches, http_benches, async_benches);

fn main() {
    quiet_metrics();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
