//! JSON logs (tracing) and CloudWatch Embedded Metric Format metrics.
//!
//! Every metric is one EMF line on stdout (CloudWatch turns it into a metric with no API call)
//! and a process-wide counter, which the local runner and the demo read.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

pub const NAMESPACE: &str = "Holdfast";

/// Metric names (one place, so alarms in template.yaml and code agree).
pub mod names {
    pub const FREEZE_OK: &str = "FreezeOk";
    pub const FREEZE_REFUSED: &str = "FreezeRefused";
    pub const PENDING_CAP_REFUSED: &str = "PendingCapRefused";
    pub const CAMPAIGN_QUOTA_EXHAUSTED: &str = "CampaignQuotaExhausted";
    pub const SOLD_OUT_FAST_PATH: &str = "SoldOutFastPath";
    pub const OVERSELL: &str = "Oversell";
    pub const ORPHANS_RELEASED: &str = "OrphansReleased";
    pub const EXTERNAL_EXPIRED: &str = "ExternalReservationsReleased";
    pub const ORDERS_EXPIRED: &str = "OrdersExpired";
    pub const REPAIRS: &str = "Repairs";
    pub const INVARIANT_VIOLATIONS: &str = "InvariantViolations";
    /// A SKU whose complete, caught-up stock journal does not sum to its counters.
    pub const JOURNAL_MISMATCH: &str = "JournalMismatch";
    pub const PAYMENT_AMOUNT_MISMATCH: &str = "PaymentAmountMismatch";
    pub const REFUNDS_REQUESTED: &str = "RefundsRequested";
    /// Stripe events without a usable `metadata.order_id` (answered `ignored`).
    pub const STRIPE_EVENTS_NOT_OURS: &str = "StripeEventsNotOurs";
    pub const REFUNDS_ISSUED: &str = "RefundsIssued";
    pub const REFUNDS_CONFIRMED: &str = "RefundsConfirmed";
    pub const REFUNDS_REFUSED: &str = "RefundsRefusedByProvider";
    pub const REFUNDS_REDRIVEN: &str = "RefundsRedriven";
    /// Refund confirmations refused: for a refund not ISSUED, issued to another provider, or
    /// under another provider refund id (security review L1). Nothing was changed.
    pub const REFUND_CONFIRMATIONS_REFUSED: &str = "RefundConfirmationsRefused";
    /// Stripe events of the other mode than `STRIPE_LIVEMODE` (answered `ignored`).
    pub const STRIPE_EVENTS_WRONG_MODE: &str = "StripeEventsWrongMode";
    pub const RESTOCKS: &str = "Restocks";
    /// A pay-time (`AT_PAYMENT`) line took its stock when the order was paid.
    pub const PAY_TIME_TAKEN: &str = "PayTimeDeductions";
    /// A pay-time line found the stock gone when the order was paid: refunded as an oversell.
    pub const PAY_TIME_SHORT: &str = "PayTimeShortfalls";
    /// A lock held until shipment (`AT_SHIPMENT`) was sold when its order shipped.
    pub const SHIPMENT_TAKES: &str = "ShipmentDeductions";
    /// Checkouts of a BACKORDER SKU accepted short (docs/inventory-models.md, "Backorders").
    pub const BACKORDERS_ACCEPTED: &str = "BackordersAccepted";
    /// Backorder checkouts recorded while the store was out of reach (202 `RECORDED`), written
    /// as orders once it answered, and refused then (docs/inventory-models.md, "Accepted during
    /// a store outage").
    pub const CHECKOUTS_RECORDED: &str = "CheckoutsRecorded";
    pub const RECORDED_CHECKOUTS_WRITTEN: &str = "RecordedCheckoutsWritten";
    pub const RECORDED_CHECKOUTS_REFUSED: &str = "RecordedCheckoutsRefused";
    /// Units filled into waiting backorders by a restock.
    pub const BACKORDER_UNITS_FILLED: &str = "BackorderUnitsFilled";
    /// Units of a BACKORDER SKU waiting for a restock, and the age of its oldest waiting order
    /// (seconds), both gauges emitted by each fill pass.
    pub const BACKLOG_UNITS: &str = "BacklogUnits";
    pub const BACKLOG_OLDEST_AGE: &str = "BacklogOldestAgeSeconds";
    /// A lock held until shipment was released by a refund before shipping.
    pub const SHIPMENT_HOLDS_RELEASED: &str = "ShipmentHoldsReleased";
    /// A warehoused line (docs/inventory-models.md, "Warehouses") frozen over two or more
    /// warehouses (allocation `split`, no one warehouse holding it).
    pub const WAREHOUSE_SPLITS: &str = "WarehouseSplits";
    /// A freeze left a code pool below `HOLDFAST_CODE_POOL_LOW` codes (docs/code-pools.md).
    pub const CODE_POOL_LOW: &str = "CodePoolLow";
    /// A code freeze found a ring head moved by another freeze and planned again.
    pub const CODE_CLAIM_RETRIES: &str = "CodeClaimRetries";
    /// Codes refused at upload because the pool already held them.
    pub const CODE_DUPLICATES: &str = "CodeDuplicatesRefused";
    /// A sold code was redeemed by the merchant (docs/code-pools.md, "Redemption").
    pub const CODES_REDEEMED: &str = "CodesRedeemed";
    /// Claimed codes retired unsold because they expired (docs/code-pools.md, "Expiry").
    pub const CODES_EXPIRED: &str = "CodesExpired";
    /// A failed checkout could not give its claimed codes back (reconcile returns them).
    pub const CODES_NOT_GIVEN_BACK: &str = "CodesNotGivenBack";
    pub const ORDERS_AUTO_COMPLETED: &str = "OrdersAutoCompleted";
    pub const REJECTED_MESSAGES: &str = "RejectedMessages";
    /// A checkout answered 429 `busy` because DynamoDB throttled (hot shard or table limits).
    pub const THROTTLED: &str = "Throttled";
    /// A checkout ran out of its time budget (a hung or slow dependency) and answered 503.
    pub const CHECKOUT_BUDGET_EXCEEDED: &str = "CheckoutBudgetExceeded";
    /// A reconcile work item could not finish inside its time budget (continued later).
    pub const SWEEP_INCOMPLETE: &str = "ReconcileSweepIncomplete";
    /// The schedule found the last sweep's work items still queued and seeded no new sweep.
    pub const SWEEP_SKIPPED: &str = "ReconcileSweepSkipped";
    /// A SUPPLIER order's bookings all confirmed: it became payable (docs/suppliers.md).
    pub const SUPPLIER_CONFIRMED: &str = "SupplierConfirmed";
    /// A SUPPLIER order failed because a booking was refused.
    pub const SUPPLIER_REFUSED: &str = "SupplierRefused";
    /// A SUPPLIER order failed because its supplier did not confirm by the timeout.
    pub const SUPPLIER_TIMEOUTS: &str = "SupplierTimeouts";
    /// A supplier call (quote, book, status, cancel) failed for want of an answer.
    pub const SUPPLIER_ERRORS: &str = "SupplierErrors";
    /// A booking of a closed order was cancelled at its supplier.
    pub const SUPPLIER_CANCELS: &str = "SupplierCancels";
    /// One poll of a SUPPLIER order's bookings.
    pub const SUPPLIER_POLLS: &str = "SupplierPolls";
    /// A SUPPLIER_CODES order's codes issued by its supplier and recorded (docs/suppliers.md,
    /// "Codes issued by the supplier").
    pub const SUPPLIER_CODES_ISSUED: &str = "SupplierCodesIssued";
    /// … of which issued by a retry (the first attempt failed).
    pub const SUPPLIER_CODES_RETRIED: &str = "SupplierCodesRetried";
    /// A paid order whose codes are still pending after every automatic retry: alarmed
    /// (`SupplierCodesPendingAlarm`); an operator reissues them.
    pub const SUPPLIER_CODES_PENDING: &str = "SupplierCodesPending";
    /// An operator's reissue delivered an order's codes.
    pub const SUPPLIER_CODES_REISSUED: &str = "SupplierCodesReissued";
    /// Milliseconds from a SUPPLIER order's booking request (its write) to its supplier's
    /// confirmation, one value per confirmed order: its p99 is alarmed (docs/suppliers.md, "KPIs").
    pub const SUPPLIER_CONFIRM_MS: &str = "SupplierConfirmMs";
    /// A payment started at a provider (`POST /orders/{id}/payments`; docs/payments.md).
    pub const PAYMENTS_STARTED: &str = "PaymentsStarted";
    /// A PAYING order decided at its deadline by asking its provider: paid, expired, or waited for.
    pub const PAYMENTS_QUERIED: &str = "PaymentsQueried";
    /// A PAYING order found paid at the provider with no webhook seen (a dropped webhook healed).
    pub const PAYMENTS_RECOVERED: &str = "PaymentsRecovered";
    /// A buyer's refund put to an admin's review.
    pub const REFUNDS_HELD_FOR_REVIEW: &str = "RefundsHeldForReview";
    /// Settlement mismatches found (any kind; docs/payments.md, "Settlement").
    pub const SETTLEMENT_MISMATCHES: &str = "SettlementMismatches";
    /// Differences the daily ledger report found (docs/operations.md, "Daily ledger report").
    pub const LEDGER_DIFFERENCES: &str = "LedgerDifferences";
    /// `LowStock` events sent (docs/operations.md).
    pub const LOW_STOCK: &str = "LowStockEvents";
    /// A cancel the provider refused because the payment is processing (a bank debit): the
    /// attempt is left open and asked again (docs/payments.md, "Processing payments").
    pub const PAYMENTS_NOT_CANCELLABLE: &str = "PaymentsNotCancellable";
    /// A buyer's refund still waiting for review after `HOLDFAST_REVIEW_ALARM_SECONDS`, counted
    /// once per sweep while it waits (`RefundReviewAgeAlarm`).
    pub const REFUND_REVIEWS_OVERDUE: &str = "RefundReviewsOverdue";
    /// A restock or a booking cancel the event flow lost, finished by the sweep's
    /// stock-to-settle arm (docs/runbook.md, "Reconcile").
    pub const STOCK_SETTLE_REPAIRS: &str = "StockSettleRepairs";
    /// An ISSUED refund whose provider answer the sweep found final and applied.
    pub const REFUNDS_SETTLED_BY_SWEEP: &str = "RefundsSettledBySweep";
    /// `StockChanged` events sent (docs/operations.md, "Stock change feed").
    pub const STOCK_CHANGED: &str = "StockChangedEvents";
    /// `StockChanged` events the bus refused or a failed call lost (not retried).
    pub const STOCK_CHANGED_NOT_SENT: &str = "StockChangedNotSent";
    /// A ticket taken in a campaign's waiting room (docs/waiting-room.md).
    pub const QUEUE_JOINS: &str = "QueueJoins";
    /// Waitlisted buyers told that units came back, and `WaitlistNotified` events not sent
    /// (docs/waitlist.md).
    pub const WAITLIST_NOTIFIED: &str = "WaitlistNotified";
    pub const WAITLIST_NOT_SENT: &str = "WaitlistNotifiedNotSent";
    /// Told waitlist entries whose token ran out unused (their unit goes to the next in line).
    pub const WAITLIST_EXPIRED: &str = "WaitlistExpired";
    /// A capture settlement found unrecorded and applied (paid, or refunded on a closed order).
    pub const CAPTURES_APPLIED_BY_SETTLEMENT: &str = "CapturesAppliedBySettlement";
    /// A freeze cancelled by a transaction conflict, or throttled, re-planned onto other shards
    /// (docs/architecture.md, "DynamoDB as it is under load").
    pub const FREEZE_REPLANS: &str = "FreezeReplans";
    /// Frames posted to a buyer's WebSocket connection (docs/push.md).
    pub const PUSH_FRAMES_SENT: &str = "PushFramesSent";
    /// Frames not posted again: this connection was sent this event before (a redelivery).
    pub const PUSH_DUPLICATES_SKIPPED: &str = "PushDuplicatesSkipped";
    /// Connections found gone when posting (410) and removed.
    pub const PUSH_CONNECTIONS_GONE: &str = "PushConnectionsGone";
    /// Frames over the 32 KB limit: not sent (never cut).
    pub const PUSH_FRAME_TOO_LARGE: &str = "PushFrameTooLarge";

    /// Checkouts of one campaign in a flushed live window ([`super::campaign_metric`]).
    pub const CAMPAIGN_CHECKOUTS: &str = "CampaignCheckouts";
    /// Checkouts of one campaign refused, flushed ([`super::campaign_metric`]).
    pub const CAMPAIGN_REFUSALS: &str = "CampaignRefusals";
    /// One warm Lambda's p99 checkout latency of a campaign's live window, in milliseconds
    /// ([`super::campaign_metric`]; `CheckoutLatencyAlarm` watches its rollup).
    pub const CHECKOUT_LATENCY_P99: &str = "CheckoutLatencyP99";
    /// The metrics [`super::campaign_metric`] emits; every other name is a [`super::count`].
    pub const CAMPAIGN_METRICS: &[&str] = &[CAMPAIGN_CHECKOUTS, CAMPAIGN_REFUSALS, CHECKOUT_LATENCY_P99];
}

/// The dimension sets of every [`count`] metric: per function, and the total the alarms watch.
/// A CloudWatch alarm sees only the series of its exact dimension set, so an alarm without
/// dimensions needs the empty set.
pub const COUNT_DIMENSIONS: &[&[&str]] = &[&["Function"], &[]];
/// The dimension sets of every [`campaign_metric`]: per campaign, and the rollup over all
/// campaigns that `CheckoutLatencyAlarm` watches (security review 3, L1).
pub const CAMPAIGN_DIMENSIONS: &[&[&str]] = &[&["Campaign"], &[]];

/// The dimension sets metric `name` is emitted with.
pub fn dimensions_of(name: &str) -> &'static [&'static [&'static str]] {
    if names::CAMPAIGN_METRICS.contains(&name) {
        CAMPAIGN_DIMENSIONS
    } else {
        COUNT_DIMENSIONS
    }
}

fn counters() -> &'static Mutex<BTreeMap<String, u64>> {
    static C: OnceLock<Mutex<BTreeMap<String, u64>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// EMF lines written, by metric name and then by the value of its own dimension (the function,
/// or `campaign:<id>`): what CloudWatch bills (metric series per month, log bytes ingested).
type Emitted = BTreeMap<String, BTreeMap<String, u64>>;

fn emitted() -> &'static Mutex<Emitted> {
    static E: OnceLock<Mutex<Emitted>> = OnceLock::new();
    E.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Tallies one EMF line (no allocation once the metric has been seen).
fn note(name: &str, dimension: &str) {
    let Ok(mut e) = emitted().lock() else { return };
    match e.get_mut(name).map(|by| (by.get_mut(dimension).map(|n| *n += 1).is_some(), by)) {
        Some((true, _)) => {}
        Some((false, by)) => {
            by.insert(dimension.to_owned(), 1);
        }
        None => {
            e.insert(name.to_owned(), BTreeMap::from([(dimension.to_owned(), 1)]));
        }
    }
}

/// A copy of the EMF lines written so far: (metric name, its dimension's value) → lines.
pub fn emitted_lines() -> BTreeMap<(String, String), u64> {
    let e = emitted().lock().map(|e| e.clone()).unwrap_or_default();
    e.into_iter().flat_map(|(name, by)| by.into_iter().map(move |(d, n)| ((name.clone(), d), n))).collect()
}

/// The size in bytes of one EMF line of metric `name` with its dimension's value `dimension`
/// (as [`emitted_lines`] names it): what the log ingestion of one line costs.
pub fn emf_line_bytes(name: &str, dimension: &str) -> usize {
    match dimension.strip_prefix("campaign:") {
        Some(c) => campaign_line("create-order", c, name, 1.0, "Count").to_string().len(),
        None => count_line(dimension, name, 1).to_string().len(),
    }
}

/// Emits `n` of metric `name` for `function` as an EMF line and adds it to the process counters.
pub fn count(function: &str, name: &str, n: u64) {
    if n == 0 {
        return;
    }
    if let Ok(mut c) = counters().lock() {
        match c.get_mut(name) {
            Some(v) => *v += n,
            None => {
                c.insert(name.to_owned(), n);
            }
        }
    }
    note(name, function);
    if std::env::var_os("HOLDFAST_QUIET_METRICS").is_none() {
        println!("{}", count_line(function, name, n));
    }
}

/// Emits one value of metric `name` (a duration, a size) for `function` as an EMF line, with the
/// dimension sets of [`count`]: alarms read its percentiles (`ExtendedStatistic`).
pub fn measure(function: &str, name: &str, value: f64, unit: &str) {
    note(name, function);
    if std::env::var_os("HOLDFAST_QUIET_METRICS").is_none() {
        println!("{}", measure_line(function, name, value, unit));
    }
}

/// The EMF line of [`measure`].
fn measure_line(function: &str, name: &str, value: f64, unit: &str) -> serde_json::Value {
    serde_json::json!({
        "_aws": {
            "Timestamp": crate::clock::now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": COUNT_DIMENSIONS,
                "Metrics": [{"Name": name, "Unit": unit}],
            }],
        },
        "Function": function,
        name: value,
    })
}

/// The EMF line of [`count`].
fn count_line(function: &str, name: &str, n: u64) -> serde_json::Value {
    serde_json::json!({
        "_aws": {
            "Timestamp": crate::clock::now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                // per function, and the total the alarms watch (whoever emits it)
                "Dimensions": COUNT_DIMENSIONS,
                "Metrics": [{"Name": name, "Unit": "Count"}],
            }],
        },
        "Function": function,
        name: n,
    })
}

/// One value of metric `name` for one campaign (dimension `Campaign`; bounded: campaigns are
/// few and admin-made) and for the rollup over all campaigns, as an EMF line
/// (docs/operations.md, "Live signals").
pub fn campaign_metric(function: &str, campaign: &str, name: &str, value: f64, unit: &str) {
    note(name, &format!("campaign:{campaign}"));
    if std::env::var_os("HOLDFAST_QUIET_METRICS").is_some() {
        return;
    }
    println!("{}", campaign_line(function, campaign, name, value, unit));
}

/// The EMF line of [`campaign_metric`].
fn campaign_line(function: &str, campaign: &str, name: &str, value: f64, unit: &str) -> serde_json::Value {
    serde_json::json!({
        "_aws": {
            "Timestamp": crate::clock::now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                // per campaign, and the rollup an alarm without dimensions sees
                "Dimensions": CAMPAIGN_DIMENSIONS,
                "Metrics": [{"Name": name, "Unit": unit}],
            }],
        },
        "Function": function,
        "Campaign": campaign,
        name: value,
    })
}

tokio::task_local! {
    static CORRELATION: String;
}

/// The correlation id of the request or record being handled (docs/operations.md).
pub fn correlation() -> Option<String> {
    CORRELATION.try_with(Clone::clone).ok()
}

/// Runs `fut` with `id` as its correlation id, inside a span carrying `function` and
/// `correlation_id`, so every log line it writes names both.
pub async fn correlated<F: std::future::Future>(function: &str, id: Option<String>, fut: F) -> F::Output {
    use tracing::Instrument;
    match id {
        Some(id) => {
            let span = tracing::info_span!("correlated", function, correlation_id = %id);
            CORRELATION.scope(id, fut.instrument(span)).await
        }
        None => fut.await,
    }
}

/// A request's correlation id: its `X-Request-Id` when it is a sane token (≤ 128 of
/// `[A-Za-z0-9._:-]`), else the trace id of its W3C `traceparent`, else a fresh one.
pub fn request_correlation(request_id: Option<&str>, traceparent: Option<&str>) -> String {
    let sane = |s: &&str| {
        !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    };
    if let Some(id) = request_id.filter(sane) {
        return id.to_owned();
    }
    let trace = traceparent
        .and_then(|t| t.split('-').nth(1))
        .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()));
    match trace {
        Some(t) => t.to_ascii_lowercase(),
        None => format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)),
    }
}

/// A copy of the process counters.
pub fn snapshot() -> BTreeMap<String, u64> {
    counters().lock().map(|c| c.clone()).unwrap_or_default()
}

/// JSON logs for the local stack and tools, at the level of `RUST_LOG` (default `info`). Lambda
/// binaries use the runtime's subscriber instead (`lambda.rs`).
pub fn init_logs() {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_current_span(true)
        .without_time()
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Security review 3 L1: `CheckoutLatencyAlarm` has no dimensions, so the latency must also
    /// be emitted with the empty dimension set, or the alarm watches a series nobody writes.
    #[test]
    fn checkout_latency_is_emitted_per_campaign_and_as_a_dimensionless_rollup() {
        let line = campaign_line("create-order", "sale-1", names::CHECKOUT_LATENCY_P99, 812.0, "Milliseconds");
        let cw = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], json!("Holdfast"));
        assert_eq!(cw["Dimensions"], json!([["Campaign"], []]));
        assert_eq!(cw["Metrics"], json!([{"Name": "CheckoutLatencyP99", "Unit": "Milliseconds"}]));
        assert_eq!((&line["Campaign"], &line["CheckoutLatencyP99"]), (&json!("sale-1"), &json!(812.0)));
        assert_eq!(dimensions_of(names::CHECKOUT_LATENCY_P99), CAMPAIGN_DIMENSIONS);
    }

    #[test]
    fn every_emf_line_is_tallied_by_metric_and_function_or_campaign() {
        let key = |n: &str, d: &str| (n.to_owned(), d.to_owned());
        let lines = |k: &(String, String)| emitted_lines().get(k).copied().unwrap_or(0);
        let (a, b) = (key("TallyTest", "fn-a"), key("TallyTest", "campaign:c1"));
        let (a0, b0) = (lines(&a), lines(&b));
        count("fn-a", "TallyTest", 5);
        count("fn-a", "TallyTest", 0);
        measure("fn-a", "TallyTest", 1.0, "Count");
        campaign_metric("fn-a", "c1", "TallyTest", 1.0, "Count");
        assert_eq!((lines(&a) - a0, lines(&b) - b0), (2, 1));
        assert_eq!(emf_line_bytes("TallyTest", "fn-a"), count_line("fn-a", "TallyTest", 1).to_string().len());
        assert!(emf_line_bytes("TallyTest", "campaign:c1") > 100);
    }

    #[test]
    fn counters_are_emitted_per_function_and_as_a_dimensionless_total() {
        let line = count_line("stock-journal", names::LOW_STOCK, 2);
        assert_eq!(line["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function"], []]));
        assert_eq!((&line["Function"], &line["LowStockEvents"]), (&json!("stock-journal"), &json!(2)));
        assert_eq!(dimensions_of(names::LOW_STOCK), COUNT_DIMENSIONS);
    }

    /// The supplier confirm p99 alarm reads the dimensionless series of this value.
    #[test]
    fn a_measured_value_is_emitted_with_its_unit_per_function_and_as_a_dimensionless_series() {
        let line = measure_line("payment-timeout", names::SUPPLIER_CONFIRM_MS, 4200.0, "Milliseconds");
        let cw = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Dimensions"], json!([["Function"], []]));
        assert_eq!(cw["Metrics"], json!([{"Name": "SupplierConfirmMs", "Unit": "Milliseconds"}]));
        assert_eq!(line["SupplierConfirmMs"], json!(4200.0));
        assert_eq!(dimensions_of(names::SUPPLIER_CONFIRM_MS), COUNT_DIMENSIONS);
    }
}
