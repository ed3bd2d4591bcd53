//! On-demand list prices and the cost of measured usage.

use super::*;

/// On-demand list prices, us-east-1 (USD). Source: the AWS pricing pages for DynamoDB (on-demand,
/// Standard table class, after the November 2024 price reduction), SQS (standard queue), EventBridge
/// (custom events), Lambda (arm64, first pricing tier), API Gateway (HTTP API, first 300 M requests
/// a month) and CloudWatch (custom metrics, first 10,000 a month; log ingestion, Standard class).
/// Checked against the pages as published in 2024-11; this offline build cannot re-check them, so
/// the date is stated with every figure. Free tiers are left out.
pub(crate) const PRICES_DATE: &str = "2024-11 (us-east-1 list prices)";
pub(crate) const WRU: f64 = 0.625 / 1e6;
pub(crate) const RRU: f64 = 0.125 / 1e6;
pub(crate) const SQS_REQUEST: f64 = 0.40 / 1e6;
pub(crate) const EVENT: f64 = 1.00 / 1e6;
pub(crate) const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
pub(crate) const LAMBDA_GB_S_ARM: f64 = 0.000_013_333_4;
pub(crate) const HTTP_API_REQUEST: f64 = 1.00 / 1e6;
pub(crate) const METRIC_MONTH: f64 = 0.30;
pub(crate) const LOGS_GB: f64 = 0.50;
/// The monthly order volume a metric series' monthly price is shared over (**model**).
pub(crate) const ORDERS_PER_MONTH: f64 = 1_000_000.0;
pub(crate) const TARGET_PER_PAID_ORDER: f64 = 0.000_015;

/// The price table, as the report and README state it.
pub(crate) fn price_table() -> String {
    format!(
        "| item | USD | unit |\n|---|---|---|\n\
         | API Gateway HTTP API request | {HTTP_API_REQUEST:.2e} | per request (first 300 M a month) |\n\
         | Lambda request | {LAMBDA_REQUEST:.2e} | per invocation |\n\
         | Lambda duration, arm64 | {LAMBDA_GB_S_ARM:.10} | per GB-s (billed per 1 ms) |\n\
         | DynamoDB write request unit (on-demand) | {WRU:.3e} | per WRU |\n\
         | DynamoDB read request unit (on-demand) | {RRU:.3e} | per RRU |\n\
         | SQS request (standard) | {SQS_REQUEST:.2e} | per request (64 KB) |\n\
         | EventBridge custom event | {EVENT:.2e} | per entry (64 KB) |\n\
         | CloudWatch custom metric | {METRIC_MONTH:.2} | per metric a month (first 10,000) |\n\
         | CloudWatch Logs ingestion | {LOGS_GB:.2} | per GB (EMF lines are log lines) |\n"
    )
}

/// The functions' memory size in GB, from template.yaml's `MemorySize` (the Globals; no function
/// overrides it).
pub(crate) fn lambda_gb() -> f64 {
    static GB: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *GB.get_or_init(|| {
        let t = std::fs::read_to_string("template.yaml").unwrap_or_default();
        let mb: Vec<f64> = t
            .lines()
            .filter_map(|l| l.trim().strip_prefix("MemorySize:"))
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        match mb.as_slice() {
            [one] => one / 1024.0,
            _ => f64::NAN, // none, or per-function sizes this report does not price
        }
    })
}

pub(crate) fn delta(before: &Usage, after: &Usage) -> Usage {
    let mut calls = BTreeMap::new();
    for (k, v) in &after.calls {
        let d = v - before.calls.get(k).copied().unwrap_or(0);
        if d > 0 {
            calls.insert(k.clone(), d);
        }
    }
    let lambda = after
        .lambda
        .iter()
        .filter_map(|(k, a)| {
            let b = before.lambda.get(k).copied().unwrap_or_default();
            (a.invocations > b.invocations).then(|| {
                let d = usage::Billed {
                    invocations: a.invocations - b.invocations,
                    ms: a.ms - b.ms,
                    billed_ms: a.billed_ms - b.billed_ms,
                };
                (k.clone(), d)
            })
        })
        .collect();
    Usage {
        lambda,
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

/// Dollar cost of a usage, by service: Lambda at the measured durations (each invocation's
/// handler wall time in the local runner, rounded up to the ms) × the template's memory size.
pub(crate) fn price(u: &Usage, per: f64) -> BTreeMap<&'static str, f64> {
    let sqs: u64 = u.calls.iter().filter(|(k, _)| k.starts_with("sqs:")).map(|(_, v)| v).sum();
    let lambda: u64 = u.calls.iter().filter(|(k, _)| k.starts_with("lambda:")).map(|(_, v)| v).sum();
    let billed_s: f64 = u.lambda.values().map(|b| b.billed_ms / 1000.0).sum();
    let http = u.calls.get("apigateway:HttpRequest").copied().unwrap_or(0);
    let mut m = BTreeMap::new();
    m.insert("api_gateway", http as f64 * HTTP_API_REQUEST / per);
    m.insert("dynamodb_writes", u.write_units * WRU / per);
    m.insert("dynamodb_reads", u.read_units * RRU / per);
    m.insert("sqs", sqs as f64 * SQS_REQUEST / per);
    m.insert("eventbridge", u.events as f64 * EVENT / per);
    m.insert("lambda", (lambda as f64 * LAMBDA_REQUEST + billed_s * lambda_gb() * LAMBDA_GB_S_ARM) / per);
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
    let durations: BTreeMap<&String, Value> = u
        .lambda
        .iter()
        .map(|(k, b)| {
            let n = b.invocations as f64;
            (k, json!({"invocations": n / per, "mean_ms": b.ms / n, "billed_ms": b.billed_ms / per}))
        })
        .collect();
    json!({"per_unit_calls": calls, "per_unit_writes": writes, "lambda_durations": durations, "lambda_memory_mb": lambda_gb() * 1024.0, "write_units": u.write_units / per, "read_units": u.read_units / per, "events": u.events as f64 / per, "cost_usd": cost, "total_usd": cost.values().sum::<f64>()})
}

pub(crate) fn usd(v: f64) -> String {
    format!("${v:.9}")
}

/// EMF lines written between two [`holdfast::telemetry::emitted_lines`] copies: the lines and
/// bytes per unit (**measured**: lines counted, bytes those lines' size), their log ingestion, and
/// the metric series they touch, whose monthly price is shared over [`ORDERS_PER_MONTH`] orders
/// (**model**). A series is a metric name with its function (or campaign), plus the name's
/// dimensionless total.
pub(crate) fn emf_json(
    before: &BTreeMap<(String, String), u64>,
    after: &BTreeMap<(String, String), u64>,
    per: f64,
) -> Value {
    let mut lines = BTreeMap::new();
    let mut bytes = 0.0;
    for (k, n) in after {
        let d = n - before.get(k).copied().unwrap_or(0);
        if d > 0 {
            bytes += d as f64 * holdfast::telemetry::emf_line_bytes(&k.0, &k.1) as f64;
            lines.insert(format!("{} ({})", k.0, k.1), d as f64 / per);
        }
    }
    let names: std::collections::BTreeSet<&str> = lines.keys().filter_map(|k| k.split(" (").next()).collect();
    let series = lines.len() + names.len();
    let logs = bytes / per / 1e9 * LOGS_GB;
    let metrics = series as f64 * METRIC_MONTH / ORDERS_PER_MONTH;
    json!({"lines_per_unit": lines.values().sum::<f64>(), "bytes_per_unit": bytes / per, "lines": lines,
           "series": series, "logs_usd": logs, "metrics_model_usd": metrics, "orders_per_month_model": ORDERS_PER_MONTH})
}

/// The all-in cost of a measured run (`usage` from [`usage_json`], `emf` from [`emf_json`]).
pub(crate) fn all_in(run: &Value) -> f64 {
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    f(&run["usage"]["total_usd"]) + f(&run["emf"]["logs_usd"]) + f(&run["emf"]["metrics_model_usd"])
}
