//! On-demand list prices and the cost of measured usage.

use super::*;

/// On-demand list prices, us-east-1 (USD). Source: the AWS pricing pages for DynamoDB (on-demand,
/// Standard table class, after the November 2024 price reduction), SQS (standard queue), EventBridge
/// (custom events) and Lambda (arm64). Checked against the pages as published in 2024-11; this
/// offline build cannot re-check them, so the date is stated with every figure.
pub(crate) const PRICES_DATE: &str = "2024-11 (us-east-1 list prices)";
pub(crate) const WRU: f64 = 0.625 / 1e6;
pub(crate) const RRU: f64 = 0.125 / 1e6;
pub(crate) const SQS_REQUEST: f64 = 0.40 / 1e6;
pub(crate) const EVENT: f64 = 1.00 / 1e6;
pub(crate) const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
pub(crate) const LAMBDA_GB_S_ARM: f64 = 0.000_013_333_4;
/// Model of billed Lambda time per invocation: 256 MB for 10 ms (CPU is ~0.1 ms — see the
/// criterion figures; the rest is waiting on DynamoDB/SQS round trips of a few ms each).
pub(crate) const LAMBDA_GB: f64 = 0.25;
pub(crate) const LAMBDA_BILLED_S: f64 = 0.010;
pub(crate) const TARGET_PER_PAID_ORDER: f64 = 0.000_015;

pub(crate) fn delta(before: &Usage, after: &Usage) -> Usage {
    let mut calls = BTreeMap::new();
    for (k, v) in &after.calls {
        let d = v - before.calls.get(k).copied().unwrap_or(0);
        if d > 0 {
            calls.insert(k.clone(), d);
        }
    }
    Usage {
        calls,
        read_units: after.read_units - before.read_units,
        write_units: after.write_units - before.write_units,
        events: after.events - before.events,
        writes: after
            .writes
            .iter()
            .filter_map(|(k, w)| {
                let b = before.writes.get(k).copied().unwrap_or_default();
                (w.requests > b.requests).then(|| {
                    (
                        k.clone(),
                        usage::Writes { requests: w.requests - b.requests, write_units: w.write_units - b.write_units },
                    )
                })
            })
            .collect(),
    }
}

/// Dollar cost of a usage, by service.
pub(crate) fn price(u: &Usage, per: f64) -> BTreeMap<&'static str, f64> {
    let sqs: u64 = u.calls.iter().filter(|(k, _)| k.starts_with("sqs:")).map(|(_, v)| v).sum();
    let lambda: u64 = u.calls.iter().filter(|(k, _)| k.starts_with("lambda:")).map(|(_, v)| v).sum();
    let mut m = BTreeMap::new();
    m.insert("dynamodb_writes", u.write_units * WRU / per);
    m.insert("dynamodb_reads", u.read_units * RRU / per);
    m.insert("sqs", sqs as f64 * SQS_REQUEST / per);
    m.insert("eventbridge", u.events as f64 * EVENT / per);
    m.insert("lambda", lambda as f64 * (LAMBDA_REQUEST + LAMBDA_GB * LAMBDA_BILLED_S * LAMBDA_GB_S_ARM) / per);
    m
}

pub(crate) fn usage_json(u: &Usage, per: f64) -> Value {
    let calls: BTreeMap<&String, f64> = u.calls.iter().map(|(k, v)| (k, *v as f64 / per)).collect();
    let cost = price(u, per);
    let writes: BTreeMap<&String, Value> = u
        .writes
        .iter()
        .map(|(k, w)| (k, json!({"requests": w.requests as f64 / per, "write_units": w.write_units / per})))
        .collect();
    json!({"per_unit_calls": calls, "per_unit_writes": writes, "write_units": u.write_units / per, "read_units": u.read_units / per, "events": u.events as f64 / per, "cost_usd": cost, "total_usd": cost.values().sum::<f64>()})
}

pub(crate) fn usd(v: f64) -> String {
    format!("${v:.9}")
}
