//! The pure functions on the request paths: shard allocation, the order state machine, webhook
//! signatures, event derivation, item parsing and stream-record decoding.

use criterion::{criterion_group, Criterion};
use holdfast::api::{body, orders::CreateOrderRequest};
use holdfast::domain::allocation::{split, start_shard};
use holdfast::domain::events::events_for_change;
use holdfast::domain::order::{transition, Order, OrderAction, OrderLine, OrderStatus};
use holdfast::domain::signature;
use holdfast::domain::{Currency, OrderId, UserId};
use holdfast::handlers::publish_events::record_events;
use holdfast_bench::{modify_record, quiet_metrics, sku};
use std::hint::black_box;

fn order() -> Order {
    Order {
        id: OrderId::parse("o3f6c0d2a9b8e7f6a5b4c3d2e1f0a9b8").unwrap(),
        user: UserId::parse("auth0|5f1e2d3c4b5a69788796a5b4").unwrap(),
        status: OrderStatus::PendingPayment,
        lines: vec![
            OrderLine { campaign: None, sku: sku("SKU-HOODIE-M"), quantity: 1, unit_price: 4_999, dates: Vec::new() },
            OrderLine { campaign: None, sku: sku("SKU-MUG"), quantity: 2, unit_price: 1_250, dates: Vec::new() },
            OrderLine { campaign: None, sku: sku("SKU-STICKERS"), quantity: 5, unit_price: 199, dates: Vec::new() },
        ],
        amount: 8_494,
        currency: Currency::parse("EUR").unwrap(),
        pay_expire_at: 1_796_083_200,
        created_at_ms: 1_796_082_300_000,
        updated_at_ms: 1_796_082_300_000,
        version: 1,
        payment_id: None,
        payments: vec![],
        request_hash: "0123456789abcdef0123456789abcdef".into(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: Vec::new(),
        attempts: Vec::new(),
        review: None,
        correlation: None,
        settled_at_ms: None,
        details: Default::default(),
        log: Default::default(),
    }
}

fn paid(o: &Order) -> Order {
    let mut p = o
        .apply(
            OrderAction::Pay,
            &holdfast::domain::order::By::provider(Default::default(), "payment_succeeded"),
            o.created_at_ms + 30_000,
        )
        .unwrap();
    p.payment_id = Some("pay_1N2b3C4d5E6f7G8h".into());
    p
}

fn domain(c: &mut Criterion) {
    let mut g = c.benchmark_group("domain");

    let even8 = vec![1_000_i64; 8];
    g.bench_function("split-8", |b| b.iter(|| split(black_box(&even8), black_box(5), black_box(3))));
    let even64 = vec![1_000_i64; 64];
    g.bench_function("split-64", |b| b.iter(|| split(black_box(&even64), black_box(41), black_box(3))));
    // No shard holds the line: the multi-piece path (fullest shards first).
    let short = vec![1_i64, 3, 0, 2, 0, 4, 1, 2];
    g.bench_function("split-short", |b| b.iter(|| split(black_box(&short), black_box(2), black_box(9))));

    let s = sku("SKU-HOODIE-M");
    g.bench_function("start-shard", |b| {
        b.iter(|| start_shard(black_box("o3f6c0d2a9b8e7f6a5b4c3d2e1f0a9b8"), black_box(&s), black_box(64)))
    });

    g.bench_function("transition", |b| {
        b.iter(|| transition(black_box(OrderStatus::PendingPayment), black_box(OrderAction::Pay)))
    });

    let body = br#"{"payment_id":"pay_1N2b3C4d5E6f7G8h","order_id":"o3f6c0d2a9b8e7f6a5b4c3d2e1f0a9b8","amount":8494,"currency":"EUR","status":"SUCCEEDED","extra_padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#;
    let secret = b"whsec_benchmark_secret";
    let now = 1_796_083_200;
    let header = signature::sign(secret, now, body);
    g.bench_function("signature-verify", |b| {
        b.iter(|| signature::verify(black_box(secret), black_box(&header), black_box(body), black_box(now)))
    });

    let pending = order();
    let paid_order = paid(&pending);
    g.bench_function("events-for-change", |b| {
        b.iter(|| events_for_change(black_box(Some(&pending)), black_box(Some(&paid_order))))
    });

    let items = serde_json::json!({"items": [
        {"sku": "SKU-HOODIE-M", "quantity": 1},
        {"sku": "SKU-MUG", "quantity": 2},
        {"sku": "SKU-STICKERS", "quantity": 5},
    ]})
    .to_string();
    // From the body's bytes: the typed reader parses and validates in one pass.
    g.bench_function("parse-items", |b| {
        b.iter(|| body::parse::<CreateOrderRequest>(black_box(items.as_bytes())).unwrap())
    });

    let record = modify_record(&pending, &paid_order);
    g.bench_function("record-events", |b| b.iter(|| record_events(black_box(&record)).unwrap()));

    g.finish();
}

criterion_group!(benches, domain);

fn main() {
    quiet_metrics();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
