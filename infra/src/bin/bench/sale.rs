//! The sale room (docs/operations.md): how soon the sales switch and a campaign pause bite, how
//! closely an admission rate holds under a steady offered load, and what the live stats cost.

use super::prices::{delta, WRU};
use super::Bench;
use futures::future::join_all;
use holdfast::adapters::usage;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const REPEATS: usize = 5;
/// Checkouts/s of the live-stats runs: what this emulator sustains (it serves ~4/s on 2 cores);
/// a flush is per time, not per checkout, so the rate only has to keep every window busy.
const RATE: f64 = 3.0;

fn at(offset_s: i64) -> String {
    holdfast::clock::rfc3339((holdfast::clock::now_s() + offset_s) * 1000)
}

async fn admin(b: &Bench, method: &str, path: &str, body: Value) -> anyhow::Result<Value> {
    let (st, v) = b.call(method, path, Some(&b.admin), &[], Some(body)).await;
    anyhow::ensure!((200..300).contains(&st), "{method} {path}: {st} {v}");
    Ok(v)
}

/// A SKU with `units` in stock and these extra settings (e.g. `admission_rate`).
async fn sku(b: &Bench, sku: &str, units: i64, extra: Value) -> anyhow::Result<()> {
    let mut spec = json!({"name": sku, "price": 1000, "currency": "EUR", "shards": 4});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    admin(b, "PUT", &format!("/admin/skus/{sku}"), spec).await?;
    let adj = json!({"adjustment_id": "init", "delta": units, "reason": "bench"});
    admin(b, "POST", &format!("/admin/skus/{sku}/adjustments"), adj).await?;
    Ok(())
}

/// A campaign that started 5 s ago and ends in an hour, with one item of a big quota; the
/// checkout line of it.
async fn campaign(b: &Bench, id: &str, sku: &str) -> anyhow::Result<Value> {
    let body = json!({"name": id, "starts_at": at(-5), "ends_at": at(3600), "items": [{"sku": sku, "quota": 100_000}]});
    admin(b, "PUT", &format!("/admin/campaigns/{id}"), body).await?;
    Ok(json!([{"sku": sku, "quantity": 1, "campaign_id": id}]))
}

/// Checkouts back to back, a fresh buyer each, until one answers `status`.
async fn until(b: &Bench, items: &Value, n: &mut usize, status: u16) -> anyhow::Result<Value> {
    let start = Instant::now();
    loop {
        *n += 1;
        let (st, v) = b.order_items(&format!("bite-{n}"), "k", items.clone()).await;
        if st == status {
            return Ok(v);
        }
        anyhow::ensure!(start.elapsed() < Duration::from_secs(15), "no {status} within 15 s; last {st} {v}");
    }
}

/// Milliseconds from the lever's answer to the first checkout refused with `code`, `REPEATS`
/// times; `undo` between, then until a checkout sells again.
async fn bite(
    b: &Bench,
    items: &Value,
    lever: (&str, &str, Value),
    undo: (&str, &str, Value),
    code: (u16, &str),
) -> anyhow::Result<Value> {
    let mut n = 0;
    let mut ms = Vec::new();
    for _ in 0..REPEATS {
        until(b, items, &mut n, 201).await?;
        admin(b, lever.0, lever.1, lever.2.clone()).await?;
        let t = Instant::now();
        let refused = until(b, items, &mut n, code.0).await?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(refused["code"] == code.1, "expected {}: {refused}", code.1);
        admin(b, undo.0, undo.1, undo.2.clone()).await?;
    }
    let max = ms.iter().copied().fold(0.0, f64::max);
    Ok(json!({"ms": ms, "max_ms": max}))
}

/// `rate` checkouts/s offered for `secs` by `tasks` buyers (buyer i first at i/rate s, then every
/// tasks/rate s), a fresh buyer token each. Open loop: a request goes at its time whatever the
/// previous one's answer (the emulator serves a few checkouts a second; a closed loop would
/// offer only that). Each answer's status and second, and the last request's second.
async fn steady(b: &Bench, tag: &str, items: &Value, tasks: usize, rate: f64, secs: f64) -> (Vec<(u16, f64)>, f64) {
    let start = tokio::time::Instant::now();
    let period = tasks as f64 / rate;
    let sends: Vec<(usize, usize, f64)> = (0..tasks)
        .flat_map(|i| (0..).map(move |k| (i, k, i as f64 / rate + k as f64 * period)).take_while(move |s| s.2 < secs))
        .collect();
    let last = sends.iter().map(|s| s.2).fold(0.0, f64::max);
    let statuses = join_all(sends.into_iter().map(|(i, k, at)| async move {
        tokio::time::sleep_until(start + Duration::from_secs_f64(at)).await;
        let st = b.order_items(&format!("{tag}-{i}-{k}"), "k", items.clone()).await.0;
        (st, start.elapsed().as_secs_f64())
    }))
    .await;
    (statuses, last)
}

fn count(answers: &[(u16, f64)], s: u16) -> usize {
    answers.iter().filter(|x| x.0 == s).count()
}

/// The second of the last answer with status `s`.
fn last(answers: &[(u16, f64)], s: u16) -> f64 {
    answers.iter().filter(|x| x.0 == s).map(|x| x.1).fold(0.0, f64::max)
}

async fn bites(endpoint: &str) -> anyhow::Result<(Value, Value)> {
    let b = Bench::start(endpoint, &[]).await?;
    sku(&b, "BITE", 1_000_000, json!({})).await?;
    let plain = json!([{"sku": "BITE", "quantity": 1}]);
    let switch = |mode: &str| ("PUT", "/admin/sales-switch", json!({"mode": mode, "reason": "bench"}));
    let sw = bite(&b, &plain, switch("CLOSED"), switch("OPEN"), (503, "sales_closed")).await?;
    let items = campaign(&b, "room", "BITE").await?;
    let pause = ("POST", "/admin/campaigns/room/pause", json!({}));
    let resume = ("POST", "/admin/campaigns/room/resume", json!({}));
    let p = bite(&b, &items, pause, resume, (409, "sale_paused")).await?;
    b.stack.shutdown().await;
    Ok((sw, p))
}

async fn admission(endpoint: &str) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[]).await?;
    sku(&b, "ADMIT", 10_000, json!({"admission_rate": 20})).await?;
    let (st, elapsed) = steady(&b, "adm", &json!([{"sku": "ADMIT", "quantity": 1}]), 200, 100.0, 10.0).await;
    let (ok, limited) = (count(&st, 201), count(&st, 429));
    let expected = 20.0 + 20.0 * elapsed;
    let (_, view) = b.call("GET", "/admin/skus/ADMIT", Some(&b.admin), &[], None).await;
    b.stack.shutdown().await;
    Ok(json!({
        "offered": st.len(), "offered_per_s": st.len() as f64 / elapsed, "elapsed_s": elapsed,
        "last_answer_s": last(&st, 201).max(last(&st, 429)), "last_429_answer_s": last(&st, 429),
        "expected_over_last_429_s": 20.0 + 20.0 * last(&st, 429),
        "created_201": ok, "rate_limited_429": limited, "other": st.len() - ok - limited,
        "admitted_per_s": ok as f64 / elapsed, "expected_admitted": expected, "expected_per_s": expected / elapsed,
        "error_pct": (ok as f64 - expected) / expected * 100.0,
        "locked": view["locked"], "locked_equals_admitted": view["locked"].as_u64() == Some(ok as u64),
    }))
}

/// Campaign checkouts (or plain ones) at 3/s for 30 s with this live-flush interval: the
/// `UpdateItem`s made (in this flow only the live counters' `ADD`s, 1 WRU each), per minute.
async fn live_run(endpoint: &str, flush_ms: &str, with_campaign: bool) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[("HOLDFAST_LIVE_FLUSH_MS", flush_ms)]).await?;
    sku(&b, "LIVE", 1_000_000, json!({})).await?;
    let items =
        if with_campaign { campaign(&b, "live", "LIVE").await? } else { json!([{"sku": "LIVE", "quantity": 1}]) };
    // the warm-up's checkout makes each function's first flush before the measured window
    b.order_items("warm", "k", items.clone()).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = usage::snapshot();
    let t = Instant::now();
    let (st, _) = steady(&b, "live", &items, 3, RATE, 30.0).await;
    // the stream's last batches reach publish-events
    tokio::time::sleep(Duration::from_secs(3)).await;
    let minutes = t.elapsed().as_secs_f64() / 60.0;
    let u = delta(&before, &usage::snapshot());
    let updates = u.calls.get("dynamodb:UpdateItem").copied().unwrap_or(0);
    let ok = count(&st, 201);
    let mut v = json!({
        "live_flush_ms": flush_ms, "campaign": with_campaign, "checkouts_201": ok, "minutes": minutes,
        "update_items": updates, "update_items_per_min": updates as f64 / minutes,
        "write_units": u.write_units, "write_units_per_checkout": u.write_units / ok.max(1) as f64,
        "checkout_write_units_without_live": (u.write_units - updates as f64) / ok.max(1) as f64,
        "calls": u.calls,
    });
    if with_campaign && flush_ms == "2000" {
        let before = usage::snapshot();
        let (_, stats) = b.call("GET", "/admin/campaigns/live/stats", Some(&b.admin), &[], None).await;
        let u = delta(&before, &usage::snapshot());
        let seen: i64 =
            stats["checkouts_per_second"].as_array().into_iter().flatten().filter_map(|p| p["n"].as_i64()).sum();
        v["stats_read"] = json!({"read_units": u.read_units, "write_units": u.write_units, "calls": u.calls,
                                 "checkouts_last_60s_shown": seen});
    }
    b.stack.shutdown().await;
    Ok(v)
}

pub(crate) async fn sale_section(endpoint: &str) -> anyhow::Result<Value> {
    eprintln!("bench: switch and pause time to bite …");
    let (switch, pause) = bites(endpoint).await?;
    eprintln!("bench: admission rate 20/s under 100/s offered …");
    let adm = admission(endpoint).await?;
    eprintln!("bench: live stats cost (3 runs of 30 s) …");
    let on = live_run(endpoint, "2000", true).await?;
    let off = live_run(endpoint, "3600000", true).await?;
    let plain = live_run(endpoint, "2000", false).await?;
    let per_min = |v: &Value| v["update_items_per_min"].as_f64().unwrap_or(0.0);
    let create_order = per_min(&on) - per_min(&off);
    let publish_events = per_min(&off) - per_min(&plain);
    let wpc = |v: &Value| v["checkout_write_units_without_live"].as_f64().unwrap_or(0.0);
    let total = per_min(&on) - per_min(&plain);
    let live = json!({
        "how": "campaign checkouts at 3/s for 30 s (open loop, a fresh buyer each; the emulator sustains ~4/s), three runs on fresh stacks: HOLDFAST_LIVE_FLUSH_MS=2000 (default), =3600000 (create-order never flushes in the window) and plain orders (no campaign: no live counters). usage::snapshot() deltas between a warm-up and 3 s after the load; in this flow every dynamodb:UpdateItem is a live-counter ADD (1 WRU each: the other UpdateItem writers — oversold marks, codes, reconcile marks — do not run). The local stack is one warm instance per function.",
        "runs": {"flush_2000": on, "flush_never": off, "plain_no_campaign": plain},
        "create_order_update_items_per_min": create_order,
        "publish_events_update_items_per_min": publish_events,
        "total_update_items_per_min": total,
        "usd_per_min": {"create_order": create_order * WRU, "publish_events": publish_events * WRU, "total": total * WRU},
        "usd_per_hour_total": total * 60.0 * WRU,
        "extra_write_units_in_checkout": wpc(&on) - wpc(&off),
        "extra_write_units_in_checkout_how": "(write units − live UpdateItems) per checkout, flush 2000 minus flush never: what the checkout's own writes grew by",
        "amortized_live_write_units_per_checkout": {"at_measured_rate": total / (RATE * 60.0), "at_20_per_s": total / 1200.0},
    });
    let stats_read = json!({
        "how": "usage::snapshot() delta around one GET /admin/campaigns/{id}/stats after the flush_2000 run (one item, 1 quota shard)",
        "read": on["stats_read"],
        "usd": on["stats_read"]["read_units"].as_f64().unwrap_or(0.0) * super::prices::RRU,
    });
    let v = json!({
        "switch_time_to_bite": {"how": format!("HOLDFAST_SWITCH_CACHE_MS 1000 (default); a checkout sells (warm), PUT /admin/sales-switch CLOSED, then checkouts back to back (a fresh buyer each): ms from the PUT's answer to the first 503 sales_closed; {REPEATS} times, OPEN between"), "result": switch},
        "pause_time_to_bite": {"how": format!("a campaign (started 5 s ago, ends in an hour, one item, quota 100,000): a checkout sells, POST /admin/campaigns/{{id}}/pause, then checkouts back to back: ms from the pause's answer to the first 409 sale_paused; {REPEATS} times, resume between"), "result": pause},
        "admission": {"how": "SKU with admission_rate 20, 10,000 units, 4 shards; 200 buyers offering 100 checkouts/s for 10 s (each a request every 2 s on a fixed schedule, open loop, a fresh buyer token each); elapsed = first to last request sent (the bucket's window; the admitted ones' answers come later, the emulator serving ~4 checkouts/s); expected = 20 burst + 20/s × elapsed; expected_over_last_429_s the same over the window to the last 429's answer (when the bucket judged its last request, as the CPU-bound local stack reaches the handler late); locked (exact) from GET /admin/skus/{sku} after every answer", "result": adm},
        "live_stats_cost": live,
        "stats_read_cost": stats_read,
    });
    Ok(v)
}

/// The readable summary.
pub(crate) fn summary(v: &Value) -> String {
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let list = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let a = "/admission/result";
    let l = "/live_stats_cost";
    format!(
        "Sale room bench\n\
         switch CLOSED → first 503: [{}] ms, max {:.0} ms\n\
         campaign pause → first 409: [{}] ms, max {:.0} ms\n\
         admission 20/s: offered {:.1}/s, admitted {:.2}/s (expected {:.2}/s incl. burst), error {:+.1}% (the last 429 answered at {:.1} s: 20 + 20/s × that = {:.0}); 201 {} / 429 {} / other {}; locked {} (equals 201s: {})\n\
         live stats: create-order {:.1} UpdateItem/min, publish-events {:.1}/min, total {:.1}/min = ${:.8}/min (${:.6}/h); extra WRU in the checkout's own writes {:+.3}, flushes amortized {:.3} WRU per checkout at 3/s, {:.4} at 20/s\n\
         stats read: {} RRU per GET /admin/campaigns/{{id}}/stats",
        list("/switch_time_to_bite/result/ms"),
        f("/switch_time_to_bite/result/max_ms"),
        list("/pause_time_to_bite/result/ms"),
        f("/pause_time_to_bite/result/max_ms"),
        f(&format!("{a}/offered_per_s")),
        f(&format!("{a}/admitted_per_s")),
        f(&format!("{a}/expected_per_s")),
        f(&format!("{a}/error_pct")),
        f(&format!("{a}/last_429_answer_s")),
        f(&format!("{a}/expected_over_last_429_s")),
        v.pointer(&format!("{a}/created_201")).unwrap_or(&Value::Null),
        v.pointer(&format!("{a}/rate_limited_429")).unwrap_or(&Value::Null),
        v.pointer(&format!("{a}/other")).unwrap_or(&Value::Null),
        v.pointer(&format!("{a}/locked")).unwrap_or(&Value::Null),
        v.pointer(&format!("{a}/locked_equals_admitted")).unwrap_or(&Value::Null),
        f(&format!("{l}/create_order_update_items_per_min")),
        f(&format!("{l}/publish_events_update_items_per_min")),
        f(&format!("{l}/total_update_items_per_min")),
        f(&format!("{l}/usd_per_min/total")),
        f(&format!("{l}/usd_per_hour_total")),
        f(&format!("{l}/extra_write_units_in_checkout")),
        f(&format!("{l}/amortized_live_write_units_per_checkout/at_measured_rate")),
        f(&format!("{l}/amortized_live_write_units_per_checkout/at_20_per_s")),
        f("/stats_read_cost/read/read_units"),
    )
}
