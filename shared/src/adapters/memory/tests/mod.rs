//! The services over the in-memory ports: the use cases of docs/architecture.md, "Stock operations" to "Events and self-healing" end to end, and the
//! DynamoDB-shaped answers of the ports themselves. The helpers are here; the tests are split
//! by use case, one file each.

use super::*;
use crate::app::memory_app;
use crate::app::App;
use crate::clock;
use crate::config::Config;
use crate::domain::allocation::Piece;
use crate::domain::events::EventKind;
use crate::domain::invariants::{check_all, ShardCounts};
use crate::domain::order::{Order, OrderLine, OrderRecord, OrderStatus};
use crate::domain::reservation::{Draw, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{Currency, IdempotencyKey, OrderId, Quantity, ReservationId, Sku, UserId};
use crate::ports::{CodePools, FreezeLimits, FreezeRejection, Locks, OrderCursor, OrderStore, SkuMeta};
use crate::service::admin::{self, AdminError, SkuSpec};
use crate::service::checks::{self, CheckOutcome};
use crate::service::orders::{self, CreateError};
use crate::service::payments::{self, PaymentNotice, PaymentResult};
use crate::service::reconcile;
use crate::service::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest, LockChange, LockError, OnReleased};
use crate::service::timeouts::{self, TimeoutOutcome};
use std::collections::HashMap;

fn config() -> Config {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    // No warm-Lambda staleness between the steps of a test.
    c.soldout_cache_ms = 0;
    c.sku_cache_ms = 0;
    c
}

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn user(u: &str) -> UserId {
    UserId::parse(u).unwrap()
}

fn eur() -> Currency {
    Currency::parse("EUR").unwrap()
}

fn meta(s: &str, shards: u16, per_user_limit: Option<u32>) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(s),
        name: format!("{s} name"),
        price: 500,
        currency: eur(),
        shards,
        slots: shards,
        per_user_limit,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

/// An app whose SKUs are seeded with the given shards.
fn world(skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld) {
    world_with(config(), skus)
}

fn world_with(config: Config, skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld) {
    let (app, w) = memory_app("test", config).unwrap();
    for (m, shards) in skus {
        w.stock.seed(m.clone(), shards);
    }
    (app, w)
}

fn lines(l: &[(&str, u32)]) -> Vec<LineRequest> {
    l.iter().map(|(s, q)| LineRequest::plain(sku(s), Quantity::new(u64::from(*q)).unwrap())).collect()
}

fn freeze_request(order: &str, buyer: &str, l: &[(&str, u32)]) -> FreezeRequest {
    let lines = lines(l);
    FreezeRequest {
        admission: None,
        id: ReservationId::for_order(&OrderId::parse(order).unwrap()),
        kind: ReservationKind::Order,
        user: Some(user(buyer)),
        request_hash: orders::request_hash(&lines),
        lines,
        expires_at: clock::now_s() + 900,
    }
}

async fn freeze(app: &App, req: &FreezeRequest) -> Result<Frozen, FreezeError> {
    let skus: Vec<Sku> = req.lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await?;
    stock::freeze(app, req, &metas).await
}

fn totals(w: &MemoryWorld, s: &str) -> ShardCounts {
    w.stock.shards(&sku(s)).iter().fold(ShardCounts::default(), |a, c| ShardCounts {
        available: a.available + c.available,
        locked: a.locked + c.locked,
        sold: a.sold + c.sold,
    })
}

fn counts(available: i64, locked: i64, sold: i64) -> ShardCounts {
    ShardCounts { available, locked, sold }
}

fn assert_invariants(w: &MemoryWorld) {
    let mut v = check_all(&w.snapshot(300));
    v.extend(crate::domain::invariants::check_backlogs(&w.stock.backlogs(), &w.stock.reservations()));
    assert!(v.is_empty(), "invariants violated: {v:?}");
}

async fn order(w: &MemoryWorld, id: &OrderId) -> Order {
    match w.orders.get(id).await.unwrap() {
        Some(OrderRecord::Order(o)) => *o,
        other => panic!("no order {id}: {other:?}"),
    }
}

/// Moves an order's payment deadline `secs` into the past (through the port's CAS).
/// `o` past its payment deadline by `secs`, its lock aged with it (as old as a checkout with that
/// deadline would be).
async fn make_overdue(w: &MemoryWorld, o: &Order, secs: i64) -> Order {
    let next = o.next(clock::now_ms(), |x| x.pay_expire_at = clock::now_s() - secs);
    assert!(w.orders.replace(o, &next).await.unwrap());
    let rid = crate::domain::ReservationId::for_order(&o.id);
    if let Some(r) = w.stock.reservations().into_iter().find(|r| r.id == rid) {
        w.stock.age_lock(&rid, r.created_at_ms - (o.pay_expire_at - next.pay_expire_at) * 1000);
    }
    next
}

async fn checkout(app: &App, buyer: &str, key: &str, l: &[(&str, u32)]) -> Result<(Order, bool), CreateError> {
    orders::create(app, &user(buyer), &IdempotencyKey::parse(key).unwrap(), lines(l)).await
}

fn notice(o: &Order, payment_id: &str) -> PaymentNotice {
    PaymentNotice {
        payment_id: payment_id.into(),
        provider: crate::domain::order::Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    }
}

/// A FROZEN lock record on shard 0 of each line (`bool`: the line charges the per-user limit).
fn reservation(id: &str, buyer: &str, created_at_ms: i64, l: &[(&str, u32, bool)]) -> Reservation {
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: Some(user(buyer)),
        request_hash: "h".into(),
        created_at_ms,
        expires_at: clock::now_s() + 900,
        lines: l
            .iter()
            .map(|(s, q, limited)| ReservedLine {
                sku: sku(s),
                quantity: *q,
                unit_price: 500,
                currency: eur(),
                limited: *limited,
                pieces: vec![Piece { shard: 0, quantity: *q }],
                campaign: None,
                dates: Vec::new(),
                draws: Vec::new(),
                at_payment: false,
                at_shipment: false,
                codes: None,
                backorder: None,
            })
            .collect(),
        oversold: false,
        code_fate: None,
        pending: false,
    }
}

mod admin_service;
mod at_shipment;
mod backorder;
mod campaigns;
mod code_lifecycle;
mod codes;
mod models;
mod order_port;
mod order_service;
mod recorded;
mod sales_switch;
mod stock_port;
mod stock_service;
mod supplier_codes;
mod waitlist;
mod warehouses;
