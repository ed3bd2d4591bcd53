//! `make demo`: a flash sale a newcomer can watch. One SKU (100 units on 8 shards, a per-user
//! limit), 1,000 buyers at a configurable concurrency who pay, cancel, abandon or crash
//! mid-checkout; some webhooks come twice or after the deadline. Ends with a report and
//! fails loudly unless oversell = 0 and every invariant holds.
//!
//! Flags (all optional): --buyers 1000 --concurrency 50 --units 100 --shards 8 --limit 2
//! --pay 0.55 --cancel 0.15 --abandon 0.20 --crash 0.10 --duplicate 0.2 --late 0.1 --json FILE
//! --codes (sell a CODE_POOL of `units` unique codes instead of a quantity; payers read theirs)

use futures::stream::{self, StreamExt};
use holdfast::domain::invariants::check_all;
use holdfast::domain::order::{OrderRecord, OrderStatus};
use holdfast_local::client::ApiClient;
use holdfast_local::{LocalStack, Options};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The demo stack's payment deadline, seconds.
const PAYMENT_TTL_S: u64 = 15;

/// A flash sale against a fresh local stack (`make demo DEMO_ARGS="--buyers 200"`).
#[derive(clap::Parser)]
#[command(about)]
struct Args {
    /// Buyers, each one checkout.
    #[arg(long, default_value_t = 1000)]
    buyers: usize,
    /// Buyers in flight at once.
    #[arg(long, default_value_t = 50)]
    concurrency: usize,
    /// Units on sale (or codes, with --codes).
    #[arg(long, default_value_t = 100)]
    units: i64,
    /// Shards the units are spread over.
    #[arg(long, default_value_t = 8)]
    shards: u16,
    /// Per-user limit.
    #[arg(long, default_value_t = 2)]
    limit: u32,
    /// Share of buyers who pay.
    #[arg(long, default_value_t = 0.55, value_parser = share)]
    pay: f64,
    /// Share who cancel.
    #[arg(long, default_value_t = 0.15, value_parser = share)]
    cancel: f64,
    /// Share who abandon (the payment deadline expires the order).
    #[arg(long, default_value_t = 0.20, value_parser = share)]
    abandon: f64,
    /// Share whose checkout crashes mid-way (fault injection).
    #[arg(long, default_value_t = 0.10, value_parser = share)]
    crash: f64,
    /// Share of payment webhooks delivered twice.
    #[arg(long, default_value_t = 0.2, value_parser = share)]
    duplicate: f64,
    /// Share of payment webhooks delivered after the deadline.
    #[arg(long, default_value_t = 0.1, value_parser = share)]
    late: f64,
    /// Sell a CODE_POOL of `units` unique codes instead of a quantity; payers read theirs.
    #[arg(long)]
    codes: bool,
    /// Write the report as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// A probability: a number in 0..=1.
fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share between 0 and 1")),
    }
}

#[derive(Default)]
struct Latencies(Mutex<BTreeMap<&'static str, Vec<f64>>>);

impl Latencies {
    fn record(&self, route: &'static str, d: Duration) {
        if let Ok(mut m) = self.0.lock() {
            m.entry(route).or_default().push(d.as_secs_f64() * 1000.0);
        }
    }
}

struct Client {
    api: ApiClient,
    lat: Latencies,
}

impl Client {
    async fn call(
        &self,
        route: &'static str,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> (u16, Value) {
        let t0 = Instant::now();
        let a = self.api.call(method, path, token, headers, body).await;
        self.lat.record(route, t0.elapsed());
        (a.status, a.body)
    }

    async fn pay(&self, order: &str, pid: &str, amount: u64) -> (u16, Value) {
        let t0 = Instant::now();
        let a = self.api.pay(order, pid, amount, "SUCCEEDED").await;
        self.lat.record("POST /payments/callback", t0.elapsed());
        (a.status, a.body)
    }
}

fn progress(done: usize, total: usize, ok: usize, refused: usize, started: Instant) {
    let width = 40;
    let filled = done * width / total.max(1);
    let bar: String = "█".repeat(filled) + &"░".repeat(width - filled);
    let rate = done as f64 / started.elapsed().as_secs_f64().max(0.001);
    eprint!("\r  {bar} {done:>5}/{total} buyers · {ok} orders · {refused} refused · {rate:.0}/s ");
    let _ = std::io::stderr().flush();
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    std::env::set_var("HOLDFAST_QUIET_METRICS", "1");
    let a = <Args as clap::Parser>::parse();
    let endpoint = std::env::var("HOLDFAST_EMULATOR_ENDPOINT")
        .map_err(|_| anyhow::anyhow!("run through `make demo` (it starts the emulator)"))?;
    let mut opts = Options::new(&endpoint, PathBuf::from("template.yaml"));
    // The payment deadline is short so unpaid orders expire during the run, but longer than a
    // checkout takes on the emulator at this concurrency (p50 2–5 s), so a buyer who pays at
    // once is on time and only the "late" share pays after it.
    for (k, v) in [
        ("HOLDFAST_PAYMENT_TTL_SECONDS", &PAYMENT_TTL_S.to_string()[..]),
        ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", "4"),
        ("HOLDFAST_STALE_LOCK_SECONDS", "5"),
    ] {
        opts.env.insert(k.into(), v.into());
    }
    opts.env.insert("HOLDFAST_FAULTS".into(), format!("create-order.after-freeze@{}", a.crash / 2.0));
    opts.schedule_every = Some(Duration::from_secs(3));
    opts.sqs_pollers = 3;
    let stack = LocalStack::start(opts).await?;
    let c = Arc::new(Client { api: ApiClient::new(&stack.base_url), lat: Latencies::default() });
    let admin = stack.token("admin", &["stock:admin"]);
    let sku = "FLASH-1";
    let mut spec = json!({"name": "Limited sneaker", "price": 12900, "currency": "EUR", "shards": a.shards, "per_user_limit": a.limit});
    if a.codes {
        spec["name"] = json!("Gift card");
        spec["model"] = json!({"management": "CODE_POOL"});
    }
    c.call("PUT /admin/skus/{sku}", "PUT", &format!("/admin/skus/{sku}"), Some(&admin), &[], Some(spec.to_string()))
        .await;
    if a.codes {
        let codes: Vec<String> = (0..a.units).map(|i| format!("DEMO-{i:05}-{:08X}", fastrand::u32(..))).collect();
        for (n, chunk) in codes.chunks(1000).enumerate() {
            let batch = json!({"batch_id": format!("drop-{n}"), "codes": chunk}).to_string();
            let path = format!("/admin/skus/{sku}/codes");
            let (st, body) =
                c.call("POST /admin/skus/{sku}/codes", "POST", &path, Some(&admin), &[], Some(batch)).await;
            anyhow::ensure!(st == 201, "code upload answered {st}: {body}");
        }
    } else {
        let adj = json!({"adjustment_id": "drop-1", "delta": a.units, "reason": "flash sale"}).to_string();
        let path = format!("/admin/skus/{sku}/adjustments");
        let (st, body) =
            c.call("POST /admin/skus/{sku}/adjustments", "POST", &path, Some(&admin), &[], Some(adj)).await;
        anyhow::ensure!(st == 201, "stock adjustment answered {st}: {body}");
    }

    eprintln!(
        "\nHoldfast flash sale: {} buyers, {} units of {sku} on {} shards, limit {}/user, concurrency {}",
        a.buyers, a.units, a.shards, a.limit, a.concurrency
    );
    eprintln!("  shares: pay {:.0}% · cancel {:.0}% · abandon {:.0}% · crash {:.0}% · duplicate webhooks {:.0}% · late {:.0}% of payers", a.pay * 100.0, a.cancel * 100.0, a.abandon * 100.0, a.crash * 100.0, a.duplicate * 100.0, a.late * 100.0);
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    let ok = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let intents: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());
    let late_payments: Mutex<Vec<(String, u64, String)>> = Mutex::new(Vec::new());
    let revealed: Mutex<Vec<String>> = Mutex::new(Vec::new());
    stream::iter(0..a.buyers)
        .for_each_concurrent(a.concurrency, |i| {
            let (c, stack, done, ok, refused, intents, late_payments, revealed, a) =
                (&c, &stack, &done, &ok, &refused, &intents, &late_payments, &revealed, &a);
            async move {
                let mut rng = fastrand::Rng::with_seed(i as u64);
                let user = format!("buyer-{i}");
                let token = stack.user_token(&user);
                let body = json!({"items": [{"sku": sku, "quantity": 1 + u32::from(rng.f64() < 0.2)}]}).to_string();
                let key = format!("checkout-{i}");
                let headers = [("idempotency-key", key.as_str())];
                let mut r = c.call("POST /orders", "POST", "/orders", Some(&token), &headers, Some(body.clone())).await;
                let mut crashed = false;
                if r.0 >= 500 {
                    crashed = true;
                    if rng.bool() {
                        r = c.call("POST /orders", "POST", "/orders", Some(&token), &headers, Some(body)).await;
                    }
                }
                let p = rng.f64();
                let intent = if r.0 == 201 {
                    ok.fetch_add(1, Ordering::Relaxed);
                    let id = r.1["order_id"].as_str().unwrap_or_default().to_owned();
                    let amount = r.1["amount"].as_u64().unwrap_or(0);
                    let total = a.pay + a.cancel + a.abandon;
                    if p < a.pay / total {
                        if rng.f64() < a.late {
                            late_payments.lock().map(|mut v| v.push((id, amount, format!("pay-{i}")))).ok();
                            "pay late"
                        } else {
                            c.pay(&id, &format!("pay-{i}"), amount).await;
                            if rng.f64() < a.duplicate {
                                c.pay(&id, &format!("pay-{i}"), amount).await;
                            }
                            if a.codes {
                                let path = format!("/orders/{id}/codes");
                                // shown once the payment's stock move ran (503 + Retry-After until then)
                                let mut r =
                                    c.call("GET /orders/{order_id}/codes", "GET", &path, Some(&token), &[], None).await;
                                for _ in 0..20 {
                                    if r.0 != 503 {
                                        break;
                                    }
                                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                                    r = c
                                        .call("GET /orders/{order_id}/codes", "GET", &path, Some(&token), &[], None)
                                        .await;
                                }
                                let got =
                                    r.1["codes"].as_array().into_iter().flatten().filter_map(|v| v["code"].as_str());
                                revealed.lock().map(|mut v| v.extend(got.map(str::to_owned))).ok();
                            }
                            "pay"
                        }
                    } else if p < (a.pay + a.cancel) / total {
                        c.call(
                            "POST /orders/{order_id}/cancel",
                            "POST",
                            &format!("/orders/{id}/cancel"),
                            Some(&token),
                            &[],
                            None,
                        )
                        .await;
                        "cancel"
                    } else {
                        "abandon"
                    }
                } else if crashed {
                    "crashed, gave up"
                } else {
                    refused.fetch_add(1, Ordering::Relaxed);
                    c.call("GET /skus/{sku}", "GET", &format!("/skus/{sku}"), None, &[], None).await;
                    "refused"
                };
                intents.lock().map(|mut m| *m.entry(intent).or_default() += 1).ok();
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if n % 10 == 0 || n == a.buyers {
                    progress(n, a.buyers, ok.load(Ordering::Relaxed), refused.load(Ordering::Relaxed), started);
                }
            }
        })
        .await;
    let sale_secs = started.elapsed().as_secs_f64();
    eprintln!("\n  sale over in {sale_secs:.1}s; late payers wait for their deadline, then pay …");
    tokio::time::sleep(Duration::from_secs(PAYMENT_TTL_S + 1)).await;
    for (id, amount, pid) in late_payments.lock().map(|v| v.clone()).unwrap_or_default() {
        c.pay(&id, &pid, amount).await;
    }
    eprint!("  settling (reservation checks, timeouts, reconcile) ");
    let settle = Instant::now();
    let violations = loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        eprint!(".");
        let snap = stack.snapshot().await?;
        let v = check_all(&snap);
        let pending = snap
            .orders
            .iter()
            .any(|(_, o)| matches!(o, OrderRecord::Order(o) if o.status == OrderStatus::PendingPayment));
        if (v.is_empty() && !pending) || settle.elapsed() > Duration::from_secs(120) {
            break v;
        }
    };
    eprintln!(" {:.1}s", settle.elapsed().as_secs_f64());
    let snap = stack.snapshot().await?;
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    let mut refunds = 0;
    for (_, rec) in &snap.orders {
        match rec {
            OrderRecord::Order(o) => {
                *by_state.entry(o.status.as_str().to_owned()).or_default() += 1;
                refunds += o.refund_requests();
            }
            OrderRecord::Void => *by_state.entry("VOID (orphan fenced)".into()).or_default() += 1,
        }
    }
    let view = snap.skus.iter().find(|s| s.sku.as_str() == sku).map(|s| s.totals()).unwrap_or_default();
    let metrics = holdfast::telemetry::snapshot();
    let m = |k: &str| metrics.get(k).copied().unwrap_or(0);
    let oversell = m("Oversell") + u64::from(view.sold > a.units);
    let mut lat = c.lat.0.lock().map(|l| l.clone()).unwrap_or_default();

    println!("\n== Holdfast flash-sale report ==");
    println!(
        "buyers {} · checkouts/s {:.0} (sale phase {sale_secs:.1}s, this machine, moto emulator)",
        a.buyers,
        a.buyers as f64 / sale_secs
    );
    println!("buyer intents: {:?}", intents.lock().map(|m| m.clone()).unwrap_or_default());
    println!("orders by final state: {by_state:?}");
    println!("units: stocked {} · sold {} · available {} · locked {}", a.units, view.sold, view.available, view.locked);
    println!("refunds requested {refunds} · orphans released {} · orders expired {} · repairs {} · sold-out fast-path hits {}", m("OrphansReleased"), m("OrdersExpired"), m("Repairs"), m("SoldOutFastPath"));
    println!("latency per route on this stack (ms):");
    println!("  {:<38} {:>6} {:>8} {:>8} {:>8}", "route", "calls", "p50", "p95", "p99");
    let mut routes_json = serde_json::Map::new();
    for (route, v) in lat.iter_mut() {
        let (p50, p95, p99) = (pct(v, 0.5), pct(v, 0.95), pct(v, 0.99));
        println!("  {route:<38} {:>6} {p50:>8.1} {p95:>8.1} {p99:>8.1}", v.len());
        routes_json.insert((*route).into(), json!({"calls": v.len(), "p50_ms": p50, "p95_ms": p95, "p99_ms": p99}));
    }
    let usage = holdfast::adapters::usage::snapshot();
    println!("AWS requests by operation (whole run, including settling):");
    for (op, n) in usage.calls.iter().filter(|(op, _)| !op.starts_with("lambda:")) {
        println!("  {op:<44} {n:>7}");
    }
    println!("metrics: {:?}", metrics.iter().filter(|(_, v)| **v > 0).collect::<BTreeMap<_, _>>());
    let revealed = revealed.into_inner().unwrap_or_default();
    let distinct = revealed.iter().collect::<std::collections::HashSet<_>>().len();
    let codes_twice = revealed.len() - distinct;
    if a.codes {
        println!(
            "codes shown to paid buyers {} · distinct {distinct} · handed out twice {codes_twice}",
            revealed.len()
        );
    }
    let clean = violations.is_empty() && oversell == 0 && codes_twice == 0;
    println!(
        "oversell = {oversell} · invariants {}",
        if violations.is_empty() { "clean".to_owned() } else { format!("VIOLATED: {violations:#?}") }
    );
    if let Some(path) = &a.json {
        let out = json!({
            "buyers": a.buyers, "concurrency": a.concurrency, "units": a.units, "shards": a.shards,
            "sale_seconds": sale_secs, "orders_by_state": by_state, "sold": view.sold, "refunds_requested": refunds,
            "orphans_released": m("OrphansReleased"), "repairs": m("Repairs"), "oversell": oversell,
            "invariants_clean": violations.is_empty(), "latency": routes_json,
            "codes_revealed": revealed.len(), "codes_handed_out_twice": codes_twice,
        });
        std::fs::write(path, serde_json::to_string_pretty(&out)?)?;
    }
    stack.shutdown().await;
    if !clean {
        eprintln!("\n!!! FLASH SALE FAILED: oversell {oversell}, {} invariant violations !!!", violations.len());
        std::process::exit(1);
    }
    println!("PASS: no oversell, every invariant clean");
    Ok(())
}
