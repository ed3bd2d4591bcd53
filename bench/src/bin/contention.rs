//! The contention model (DESIGN §23, `make bench-contention`): checkouts offered on one SKU at a
//! steady rate × the SKU's shard count, through the real freeze (`service::stock::freeze`, its
//! re-plans after a conflict or a throttle included) over the in-memory store wrapped in
//! `adapters::emulate` with conflicts (window `W`) and per-item throttling (1,000 WCU/s, 2 WCU
//! a transactional write, 100 ms of burst) switched on, and every lock transaction and shard
//! read taking `rtt` ms.
//!
//! Everything runs in **model time**: tokio's paused clock on one thread, the jitter generator
//! seeded, so a run is the same run every time and its latencies are the model's, not this
//! machine's. Each run offers `rate` checkouts/s for `--seconds` (evenly spaced, one unit each,
//! each buyer its own), with 90 % as many units as checkouts, so the SKU sells out near the end
//! and every refusal is judged: a **false sold-out** is an `insufficient_stock` answer while the
//! shards together still held a unit at the moment of the answer.
//!
//! `cargo run -p holdfast-bench --bin contention -- [--out bench/CONTENTION.md] [--seconds S]
//! [--window W] [--rtt MS]`

use holdfast::adapters::emulate::{seed_model, Emulated, Switches};
use holdfast::adapters::memory::{MemoryBus, MemoryMessages, MemoryOrders, MemoryStock};
use holdfast::config::Config;
use holdfast::domain::reservation::ReservationKind;
use holdfast::domain::{Currency, OrderId, Quantity, ReservationId, Sku, UserId};
use holdfast::ports::SkuMeta;
use holdfast::service::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

const SHARDS: [u16; 5] = [1, 2, 4, 8, 16];
/// Offered checkouts per second per shard.
const PER_SHARD: [u32; 6] = [100, 150, 200, 300, 400, 500];

struct Args {
    out: Option<String>,
    seconds: f64,
    window_ms: u64,
    rtt_ms: u64,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        out: None,
        seconds: 2.0,
        window_ms: holdfast::adapters::emulate::DEFAULT_CONFLICT_WINDOW_MS,
        rtt_ms: 10,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| anyhow::anyhow!("{k} needs a value"));
        match k.as_str() {
            "--out" => a.out = Some(v()?),
            "--seconds" => a.seconds = v()?.parse()?,
            "--window" => a.window_ms = v()?.parse()?,
            "--rtt" => a.rtt_ms = v()?.parse()?,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    Ok(a)
}

fn sku() -> Sku {
    Sku::parse("DROP").expect("sku")
}

#[derive(Debug, Default, Clone)]
struct Row {
    shards: u16,
    offered: u32,
    checkouts: usize,
    sold: usize,
    short: usize,
    false_sold_outs: usize,
    busy: usize,
    retries_per_checkout: f64,
    p50_ms: u64,
    p99_ms: u64,
    conflicts: u64,
    throttles: u64,
}

impl Row {
    /// Checkouts that got an answer other than "busy, retry" among those the stock could serve.
    fn success(&self) -> f64 {
        let servable = self.checkouts - self.short;
        if servable == 0 {
            1.0
        } else {
            self.sold as f64 / servable as f64
        }
    }
}

async fn run(shards: u16, rate: u32, a: &Args) -> anyhow::Result<Row> {
    seed_model(35);
    let checkouts = (f64::from(rate) * a.seconds).round() as usize;
    let units = (checkouts * 9 / 10) as i64;
    let mut config = Config::from_lookup(&|_| None)?;
    config.sku_cache_ms = 60_000;
    let mem = Arc::new(MemoryStock::new());
    let n = i64::from(shards);
    let per: Vec<i64> = (0..n).map(|i| units / n + i64::from(i < units % n)).collect();
    mem.seed(
        SkuMeta {
            fences: Vec::new(),
            warehouses: None,
            controls: Default::default(),
            sku: sku(),
            name: "drop".into(),
            price: 500,
            currency: Currency::parse("EUR")?,
            shards,
            slots: shards,
            per_user_limit: None,
            stocked: 0,
            version: 1,
            paused: false,
            model: Default::default(),
            bundle: Vec::new(),
            supplier: None,
        },
        &per,
    );
    let switches = Switches::parse(&format!("conflicts={},throttle,rtt={}", a.window_ms, a.rtt_ms))?;
    let store = Arc::new(Emulated::new(mem.clone(), switches));
    let app = Arc::new(holdfast::app::with_ports(
        "create-order",
        config,
        store.clone(),
        Arc::new(MemoryOrders::new()),
        Arc::new(MemoryMessages::new()),
        Arc::new(MemoryBus::new()),
    )?);
    let t0 = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / f64::from(rate));
    let mut tasks = Vec::with_capacity(checkouts);
    for i in 0..checkouts {
        let (app, mem) = (app.clone(), mem.clone());
        let at = t0 + gap * u32::try_from(i)?;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let lines = vec![LineRequest::plain(sku(), Quantity::new(1).expect("1"))];
            let req = FreezeRequest {
                admission: None,
                id: ReservationId::for_order(&OrderId::parse(&format!("c{i}")).expect("id")),
                kind: ReservationKind::Order,
                user: Some(UserId::parse(&format!("buyer-{i}")).expect("user")),
                request_hash: holdfast::service::orders::request_hash(&lines),
                lines,
                expires_at: holdfast::clock::now_s() + 900,
            };
            let started = Instant::now();
            let metas = stock::metas(&app, &[sku()]).await;
            let answer = match metas {
                Ok(m) => stock::freeze(&app, &req, &m).await,
                Err(e) => Err(e),
            };
            let left: i64 = mem.shards(&sku()).iter().map(|c| c.available).sum();
            (answer, left, started.elapsed())
        }));
    }
    let mut row = Row { shards, offered: rate, checkouts, ..Row::default() };
    let mut latencies = Vec::with_capacity(checkouts);
    for t in tasks {
        let (answer, left, took) = t.await?;
        match answer {
            Ok(Frozen::Created(_)) => {
                row.sold += 1;
                latencies.push(took);
            }
            Err(FreezeError::Insufficient(_)) => {
                row.short += 1;
                if left >= 1 {
                    row.false_sold_outs += 1;
                }
            }
            Err(FreezeError::Contention) => row.busy += 1,
            Err(FreezeError::Store(e)) if holdfast::ports::is_throttled(&e) => row.busy += 1,
            Err(e) => anyhow::bail!("unexpected answer: {e}"),
            Ok(Frozen::Replayed(_)) => anyhow::bail!("a replay in a run of distinct orders"),
        }
    }
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .map_or(0, |d| d.as_millis() as u64)
    };
    row.p50_ms = pct(0.50);
    row.p99_ms = pct(0.99);
    let answered = row.sold + row.busy + row.short;
    row.retries_per_checkout =
        store.stats.freezes_tried().saturating_sub(answered as u64) as f64 / answered.max(1) as f64;
    row.conflicts = store.stats.conflicts();
    row.throttles = store.stats.throttles();
    Ok(row)
}

/// The highest offered rate per shard at which every shard count kept success ≥ 99.9 %, p99 ≤
/// 500 ms (model time) and no false sold-out.
fn planning_figure(rows: &[Row]) -> Option<u32> {
    PER_SHARD
        .iter()
        .copied()
        .filter(|per| {
            rows.iter()
                .filter(|r| r.offered == per * u32::from(r.shards))
                .all(|r| r.success() >= 0.999 && r.p99_ms <= 500 && r.false_sold_outs == 0)
        })
        .max()
}

fn main() -> anyhow::Result<()> {
    std::env::set_var("HOLDFAST_QUIET_METRICS", "1");
    let a = args()?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?;
    let mut rows = Vec::new();
    for &n in &SHARDS {
        for &per in &PER_SHARD {
            let row = rt.block_on(run(n, per * u32::from(n), &a))?;
            eprintln!(
                "shards {:>2} offered {:>5}/s: success {:.4}, retries {:.2}, p50 {} ms, p99 {} ms, false sold-outs {}",
                row.shards,
                row.offered,
                row.success(),
                row.retries_per_checkout,
                row.p50_ms,
                row.p99_ms,
                row.false_sold_outs
            );
            rows.push(row);
        }
    }
    let figure = planning_figure(&rows);
    let mut md = String::new();
    md.push_str("# Contention model (`make bench-contention`)\n\n");
    md.push_str(&format!(
        "Generated by `bench/src/bin/contention.rs` (DESIGN §23). Model time, not a measurement on AWS: \
         the real freeze (re-plans included) over the in-memory store with `adapters::emulate`'s \
         conflicts (window W = {} ms from an item's last commit) and per-item throttling (1,000 WCU/s, \
         2 WCU a transactional write, 100 ms burst), each lock transaction and shard read taking \
         {} ms; {} s of steady arrivals per row, one unit each, 90 % as many units as checkouts.\n\n",
        a.window_ms, a.rtt_ms, a.seconds
    ));
    md.push_str(
        "success = sold / (checkouts − true sold-outs); retries = freeze transactions tried per answered \
         checkout beyond the first; p50/p99 = model-time latency of the successful freezes; false sold-outs \
         = `insufficient_stock` answered while a unit was still available (must be 0).\n\n",
    );
    md.push_str("| shards | offered/s | per shard/s | success | retries/checkout | p50 ms | p99 ms | false sold-outs | busy | conflicts | throttles |\n");
    md.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {:.2} % | {:.2} | {} | {} | {} | {} | {} | {} |\n",
            r.shards,
            r.offered,
            r.offered / u32::from(r.shards),
            100.0 * r.success(),
            r.retries_per_checkout,
            r.p50_ms,
            r.p99_ms,
            r.false_sold_outs,
            r.busy,
            r.conflicts,
            r.throttles
        ));
    }
    md.push_str(&format!(
        "\n**Per-shard planning figure**: {} checkouts/s per shard — the highest offered rate per shard at \
         which every shard count kept success ≥ 99.9 %, p99 ≤ 500 ms and no false sold-out \
         (docs/capacity.md).\n",
        figure.map_or_else(|| "none of the rates".to_owned(), |f| f.to_string())
    ));
    let false_sold_outs: usize = rows.iter().map(|r| r.false_sold_outs).sum();
    match &a.out {
        Some(path) => std::fs::write(path, &md)?,
        None => print!("{md}"),
    }
    anyhow::ensure!(false_sold_outs == 0, "{false_sold_outs} false sold-outs");
    Ok(())
}
