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
    /// A freeze left a code pool below `HOLDFAST_CODE_POOL_LOW` codes (docs/code-pools.md).
    pub const CODE_POOL_LOW: &str = "CodePoolLow";
    /// A code freeze found a ring head moved by another freeze and planned again.
    pub const CODE_CLAIM_RETRIES: &str = "CodeClaimRetries";
    /// Codes refused at upload because the pool already held them.
    pub const CODE_DUPLICATES: &str = "CodeDuplicatesRefused";
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
    /// `LowStock` events sent (docs/operations.md).
    pub const LOW_STOCK: &str = "LowStockEvents";
}

fn counters() -> &'static Mutex<BTreeMap<String, u64>> {
    static C: OnceLock<Mutex<BTreeMap<String, u64>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Emits `n` of metric `name` for `function` as an EMF line and adds it to the process counters.
pub fn count(function: &str, name: &str, n: u64) {
    if n == 0 {
        return;
    }
    if let Ok(mut c) = counters().lock() {
        *c.entry(name.to_owned()).or_default() += n;
    }
    let ts = crate::clock::now_ms();
    let line = serde_json::json!({
        "_aws": {
            "Timestamp": ts,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                // per function, and the total the alarms watch (whoever emits it)
                "Dimensions": [["Function"], []],
                "Metrics": [{"Name": name, "Unit": "Count"}],
            }],
        },
        "Function": function,
        name: n,
    });
    if std::env::var_os("HOLDFAST_QUIET_METRICS").is_none() {
        println!("{line}");
    }
}

/// One value of metric `name` for one campaign (dimension `Campaign`; bounded: campaigns are
/// few and admin-made), as an EMF line (docs/operations.md, "Live signals").
pub fn campaign_metric(function: &str, campaign: &str, name: &str, value: f64, unit: &str) {
    if std::env::var_os("HOLDFAST_QUIET_METRICS").is_some() {
        return;
    }
    let line = serde_json::json!({
        "_aws": {
            "Timestamp": crate::clock::now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["Campaign"]],
                "Metrics": [{"Name": name, "Unit": unit}],
            }],
        },
        "Function": function,
        "Campaign": campaign,
        name: value,
    });
    println!("{line}");
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
