//! Isolation (docs/waiting-room.md, "Isolation"): ordinary checkouts at a steady rate while a
//! drop's crowd floods the queue routes beside them, measured in one run. Quiet and flooded
//! windows alternate so drift in the machine falls on both; the ratio of the ordinary
//! checkouts' success rate and p99 (flooded / quiet) is the figure. Run twice: with the door the
//! template builds (route throttles and queue-api's reserved concurrency, door.rs) and with the
//! door open, to show what the door is for.

use super::Bench;
use futures::future::join_all;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The door at local scale: the template's parameters as a deployment would set them, the drop's
/// share sized to about a tenth of what this 2-core machine serves (~100 requests/s), as an
/// operator sizes `QueueApiReservedConcurrency` and the queue routes' throttles against the
/// account's concurrency (the template's AWS defaults are 10,000 joins/s).
pub(crate) const LOCAL_DOOR: &[(&str, &str)] = &[
    ("QueueJoinRateLimit", "5"),
    ("QueueJoinBurstLimit", "10"),
    ("QueueCheckoutRateLimit", "2"),
    ("QueueCheckoutBurstLimit", "4"),
    ("QueueApiReservedConcurrency", "1"),
];

fn setting(k: &str, default: u64) -> u64 {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[derive(Default)]
struct Window {
    flooded: bool,
    ok: usize,
    tried: usize,
    latencies_ms: Vec<f64>,
}

fn p99(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.99).ceil() as usize).saturating_sub(1).min(v.len() - 1)]
}

/// One scenario on a fresh stack: `door` on or off.
async fn scenario(endpoint: &str, door: bool, pairs: u64) -> anyhow::Result<Value> {
    let b = Arc::new(Bench::start_with(endpoint, &[], LOCAL_DOOR, door).await?);
    let rate = setting("HOLDFAST_ISOLATION_RATE", 5);
    let window_s = setting("HOLDFAST_ISOLATION_WINDOW_S", 6);
    let flood_rps = setting("HOLDFAST_ISOLATION_FLOOD_RPS", 200);
    b.sku("PLAIN", 1_000_000, 8).await;
    b.sku("DROP", 200, 8).await;
    let now = holdfast::clock::now_ms();
    let at = holdfast::clock::rfc3339;
    let body = json!({"name": "the drop", "starts_at": at(now - 1000), "ends_at": at(now + 3_600_000),
                      "items": [{"sku": "DROP", "quota": 200}], "queue": {"rate": 5, "token_ttl_seconds": 120}});
    let (st, v) = b.call("PUT", "/admin/campaigns/drop", Some(&b.admin), &[], Some(body)).await;
    anyhow::ensure!(st == 201, "campaign: {st} {v}");

    let flooding = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let flood_statuses: Arc<Mutex<std::collections::BTreeMap<u16, usize>>> = Arc::default();
    let crowd = Arc::new(AtomicUsize::new(0));
    // the crowd: each request a new buyer joining, or a joined one asking where it is and
    // checking out once admitted, paced at flood_rps in all
    let flood = {
        let (b, flooding, stop, statuses, crowd) =
            (b.clone(), flooding.clone(), stop.clone(), flood_statuses.clone(), crowd.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / flood_rps as f64));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                if !flooding.load(Ordering::Relaxed) {
                    continue;
                }
                let (b, statuses, crowd) = (b.clone(), statuses.clone(), crowd.clone());
                tokio::spawn(async move {
                    let n = crowd.fetch_add(1, Ordering::Relaxed);
                    let user = format!("crowd{}", n / 3);
                    let t = b.stack.user_token(&user);
                    let (st, v) = match n % 3 {
                        0 => b.call("POST", "/campaigns/drop/queue", Some(&t), &[], None).await,
                        1 => b.call("GET", "/campaigns/drop/queue/me", Some(&t), &[], None).await,
                        _ => {
                            let (_, me) = b.call("GET", "/campaigns/drop/queue/me", Some(&t), &[], None).await;
                            let token = me["admission_token"].as_str().unwrap_or("none").to_owned();
                            let items = json!([{"sku": "DROP", "quantity": 1, "campaign_id": "drop"}]);
                            let body = json!({"items": items, "admission_token": token});
                            let key = format!("drop-{user}");
                            b.call(
                                "POST",
                                "/campaigns/drop/checkout",
                                Some(&t),
                                &[("idempotency-key", &key)],
                                Some(body),
                            )
                            .await
                        }
                    };
                    let _ = v;
                    if let Ok(mut m) = statuses.lock() {
                        *m.entry(st).or_default() += 1;
                    }
                });
            }
        })
    };

    // ordinary shoppers: one checkout of PLAIN every 1/rate s, each a new buyer, whatever the flood
    let mut windows = Vec::new();
    let mut buyer = 0usize;
    for i in 0..pairs * 2 {
        let flooded = i % 2 == 1;
        flooding.store(flooded, Ordering::Relaxed);
        let window = Arc::new(Mutex::new(Window { flooded, ..Default::default() }));
        let started = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
        let mut inflight = Vec::new();
        while started.elapsed() < Duration::from_secs(window_s) {
            tick.tick().await;
            buyer += 1;
            let (b, window) = (b.clone(), window.clone());
            inflight.push(tokio::spawn(async move {
                let t0 = Instant::now();
                let (st, _) = b.order(&format!("shopper{buyer}"), &format!("k{buyer}"), "PLAIN", 1).await;
                let ms = t0.elapsed().as_secs_f64() * 1000.0;
                if let Ok(mut w) = window.lock() {
                    w.tried += 1;
                    w.ok += usize::from(st == 201);
                    w.latencies_ms.push(ms);
                }
            }));
        }
        join_all(inflight).await;
        let w = Arc::try_unwrap(window).ok().and_then(|m| m.into_inner().ok()).unwrap_or_default();
        eprintln!(
            "isolation door={door} window {i} flooded={}: {}/{} ok, p99 {:.0} ms",
            w.flooded,
            w.ok,
            w.tried,
            p99(w.latencies_ms.clone())
        );
        windows.push(w);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = flood.await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let side = |flooded: bool| {
        let ws: Vec<&Window> = windows.iter().filter(|w| w.flooded == flooded).collect();
        let ok: usize = ws.iter().map(|w| w.ok).sum();
        let tried: usize = ws.iter().map(|w| w.tried).sum();
        let lat: Vec<f64> = ws.iter().flat_map(|w| w.latencies_ms.iter().copied()).collect();
        let mut sorted = lat.clone();
        sorted.sort_by(f64::total_cmp);
        let p50 = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        (ok, tried, p50, p99(lat))
    };
    let (qok, qtried, qp50, qp99) = side(false);
    let (fok, ftried, fp50, fp99) = side(true);
    let qs = qok as f64 / qtried.max(1) as f64;
    let fs = fok as f64 / ftried.max(1) as f64;
    // pair by pair (a quiet window and the flooded one after it), so the machine's drift falls
    // on both sides of each ratio; the median of the pairs is the robust figure
    let mut pair_p99 = Vec::new();
    for pair in windows.chunks(2) {
        if let [q, f] = pair {
            pair_p99.push(p99(f.latencies_ms.clone()) / p99(q.latencies_ms.clone()).max(f64::MIN_POSITIVE));
        }
    }
    let mut sorted = pair_p99.clone();
    sorted.sort_by(f64::total_cmp);
    // the true median: the mean of the middle two of an even count
    let n = sorted.len();
    let median_pair_p99 = match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    let statuses = flood_statuses.lock().map(|m| m.clone()).unwrap_or_default();
    // the invariants at quiescence, as every end-to-end test checks them (the orders stay
    // unpaid: their timeouts are minutes away, so the queues never empty; the stream settles)
    let mut invariants = None;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let n = b.stack.snapshot().await.map(|s| holdfast::domain::invariants::check_all(&s).len()).ok();
        invariants = n;
        if n == Some(0) {
            break;
        }
    }
    Ok(json!({
        "door": door,
        "quiet": {"ok": qok, "tried": qtried, "success": qs, "p50_ms": qp50, "p99_ms": qp99},
        "flooded": {"ok": fok, "tried": ftried, "success": fs, "p50_ms": fp50, "p99_ms": fp99},
        "success_ratio": fs / qs.max(f64::MIN_POSITIVE),
        "p99_ratio": fp99 / qp99.max(f64::MIN_POSITIVE),
        "p99_ratio_per_pair": pair_p99,
        "p99_ratio_median_pair": median_pair_p99,
        "flood_requests": crowd.load(Ordering::Relaxed),
        "flood_statuses": statuses.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "invariant_violations": invariants,
    }))
}

pub(crate) async fn isolation_section(endpoint: &str) -> anyhow::Result<Value> {
    let with_door = scenario(endpoint, true, setting("HOLDFAST_ISOLATION_PAIRS", 8)).await?;
    // the open door's flood backs ordinary checkouts up by tens of seconds: two pairs show it
    let open = scenario(endpoint, false, 2).await?;
    Ok(json!({
        "how": format!(
            "local stack over the emulator on this 2-core machine, one process: ordinary checkouts (POST /orders, a new buyer each, 1 unit of an 8-shard SKU) at {} /s open loop; quiet and flooded windows of {} s alternate ({} pairs with the door, 2 without); the flood is {} requests/s at the drop's queue routes (join, where-am-I, queued checkout in turn, a new buyer every 3 requests); the door: {}",
            setting("HOLDFAST_ISOLATION_RATE", 5),
            setting("HOLDFAST_ISOLATION_WINDOW_S", 6),
            setting("HOLDFAST_ISOLATION_PAIRS", 8),
            setting("HOLDFAST_ISOLATION_FLOOD_RPS", 200),
            LOCAL_DOOR.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        ),
        "with_door": with_door,
        "door_open": open,
    }))
}
