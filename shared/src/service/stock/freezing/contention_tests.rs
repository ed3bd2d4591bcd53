//! The freeze under DynamoDB's behaviours under load (`adapters::emulate`), through the service
//! layer on the memory store, in model time (tokio's paused clock): conflicts re-plan onto other
//! shards and sell exactly the stock with no false sold-out; a throttled hot shard spreads.
//!
//! A **false sold-out** is an `insufficient_stock` answer given while the SKU's shards together
//! held at least the buyer's quantity available at the moment of the answer (read right after
//! it, with no other task run in between on the current-thread runtime); and, at quiescence,
//! any unit left available after a buyer was refused as short.

use crate::adapters::emulate::{Emulated, Switches};
use crate::adapters::memory::{MemoryBus, MemoryMessages, MemoryOrders, MemoryStock};
use crate::app::App;
use crate::config::Config;
use crate::domain::allocation::start_shard;
use crate::domain::reservation::ReservationKind;
use crate::domain::{Currency, OrderId, Quantity, ReservationId, Sku, UserId};
use crate::ports::SkuMeta;
use crate::service::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest};
use crate::telemetry::{self, names};
use std::sync::Arc;

fn sku() -> Sku {
    Sku::parse("DROP").unwrap()
}

fn meta(shards: u16) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(),
        name: "drop".into(),
        price: 500,
        currency: Currency::parse("EUR").unwrap(),
        shards,
        slots: shards,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

fn world(switches: &str, shards: &[i64]) -> (Arc<App>, Arc<MemoryStock>, Arc<Emulated<MemoryStock>>) {
    let mut config = Config::from_lookup(&|_| None).unwrap();
    config.sku_cache_ms = 0;
    let mem = Arc::new(MemoryStock::new());
    mem.seed(meta(shards.len() as u16), shards);
    let emulated = Arc::new(Emulated::new(mem.clone(), Switches::parse(switches).unwrap()));
    let app = crate::app::with_ports(
        "create-order",
        config,
        emulated.clone(),
        Arc::new(MemoryOrders::new()),
        Arc::new(MemoryMessages::new()),
        Arc::new(MemoryBus::new()),
    )
    .unwrap();
    (Arc::new(app), mem, emulated)
}

fn request(order: &str) -> FreezeRequest {
    let lines = vec![LineRequest::plain(sku(), Quantity::new(1).unwrap())];
    FreezeRequest {
        admission: None,
        id: ReservationId::for_order(&OrderId::parse(order).unwrap()),
        kind: ReservationKind::Order,
        user: Some(UserId::parse(&format!("buyer-{order}")).unwrap()),
        request_hash: crate::service::orders::request_hash(&lines),
        lines,
        expires_at: crate::clock::now_s() + 900,
    }
}

#[derive(Debug, Default)]
struct Outcome {
    sold: usize,
    short: usize,
    false_sold_outs: usize,
    busy: usize,
    /// Freezes whose pieces landed on another shard than their start shard.
    moved: usize,
}

/// `orders` buyers of one unit each, all at once; every answer is judged the moment it comes.
async fn rush(app: &Arc<App>, mem: &Arc<MemoryStock>, orders: &[String], shards: u16) -> Outcome {
    let mut tasks = Vec::new();
    for o in orders {
        let (app, mem, o) = (app.clone(), mem.clone(), o.clone());
        tasks.push(tokio::spawn(async move {
            let metas = stock::metas(&app, &[sku()]).await.unwrap();
            let answer = stock::freeze(&app, &request(&o), &metas).await;
            let left: i64 = mem.shards(&sku()).iter().map(|c| c.available).sum();
            (o, answer, left)
        }));
    }
    let mut out = Outcome::default();
    for t in tasks {
        let (o, answer, left) = t.await.unwrap();
        match answer {
            Ok(Frozen::Created(r)) => {
                out.sold += 1;
                let start = start_shard(r.id.as_str(), &sku(), shards);
                if r.lines[0].pieces.iter().any(|p| p.shard != start) {
                    out.moved += 1;
                }
            }
            Err(FreezeError::Insufficient(_)) => {
                out.short += 1;
                if left >= 1 {
                    out.false_sold_outs += 1;
                }
            }
            Err(FreezeError::Contention) => out.busy += 1,
            Err(FreezeError::Store(e)) if crate::ports::is_throttled(&e) => out.busy += 1,
            other => panic!("{o}: {other:?}"),
        }
    }
    out
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn with_conflicts_on_200_buyers_for_100_units_on_4_shards_buy_exactly_100_and_no_one_is_falsely_sold_out() {
    fastrand::seed(35);
    let (app, mem, emulated) = world("conflicts=5,rtt=2", &[25, 25, 25, 25]);
    let orders: Vec<String> = (0..200).map(|i| format!("o{i}")).collect();
    let replans_before = telemetry::snapshot().get(names::FREEZE_REPLANS).copied().unwrap_or(0);
    let out = rush(&app, &mem, &orders, 4).await;
    eprintln!("{out:?}; {} conflicts", emulated.stats.conflicts());
    let totals = mem.shards(&sku());
    assert_eq!(out.sold, 100, "{out:?}");
    assert_eq!(totals.iter().map(|c| c.locked).sum::<i64>(), 100);
    assert_eq!(totals.iter().map(|c| c.available).sum::<i64>(), 0, "every unit sold at quiescence");
    assert_eq!(out.false_sold_outs, 0, "{out:?}");
    assert_eq!(out.sold + out.short + out.busy, 200);
    assert!(emulated.stats.conflicts() > 0, "the switch fired");
    let replans = telemetry::snapshot().get(names::FREEZE_REPLANS).copied().unwrap_or(0) - replans_before;
    assert!(replans > 0, "the conflict path's re-plans are counted");
    assert!(out.moved > 0, "re-planned freezes landed on other shards than their start: {out:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_throttled_hot_shard_spreads_its_checkouts_onto_the_other_shards_and_they_succeed() {
    fastrand::seed(35);
    let (app, mem, emulated) = world("throttle", &[200, 200, 200, 200]);
    // 120 buyers whose freezes all start on shard 0: its partition takes 50 at once
    let orders: Vec<String> = (0..)
        .map(|i| format!("h{i}"))
        .filter(|o| {
            let id = ReservationId::for_order(&OrderId::parse(o).unwrap());
            start_shard(id.as_str(), &sku(), 4) == 0
        })
        .take(120)
        .collect();
    let out = rush(&app, &mem, &orders, 4).await;
    assert!(emulated.stats.throttles() > 0, "the switch fired");
    assert_eq!((out.sold, out.short, out.busy), (120, 0, 0), "{out:?}");
    assert!(out.moved > 0, "throttled freezes moved off the hot shard: {out:?}");
    let totals = mem.shards(&sku());
    assert!(totals[0].locked < 120 && totals[1..].iter().any(|c| c.locked > 0), "{totals:?}");
}
