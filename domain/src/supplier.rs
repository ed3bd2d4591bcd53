//! SUPPLIER inventory (docs/suppliers.md): the stock is held by an outside supplier, asked for a
//! quote at checkout and booked once the order is written. Pure: the SKU's supplier settings,
//! the bookings an order records, the polling schedule and what a poll decides.

use super::model::{Deduct, InventoryModel, Management, ModelError, Unit};
use super::{OrderId, Sku};
use serde::{Deserialize, Serialize};

pub mod codes;

/// Polls every `FAST_POLL_S` for the first `FAST_WINDOW_S` seconds after the order is written…
pub const FAST_POLL_S: i64 = 2;
pub const FAST_WINDOW_S: i64 = 30;
/// … then every `SLOW_POLL_S` until the supplier timeout.
pub const SLOW_POLL_S: i64 = 60;
/// Longest `confirm_after_seconds` a simulated supplier may be told (a day).
pub const MAX_CONFIRM_AFTER_S: u32 = 86_400;
/// Longest simulated latency per call.
pub const MAX_LATENCY_MS: u32 = 5_000;
/// Most failing code-issue calls a simulated supplier may be told.
pub const MAX_ISSUE_FAILURES: u32 = 1_000;

/// Which adapter speaks to the supplier. `simulated` is the HTTP wire format of
/// docs/suppliers.md, spoken by the local stack's simulated supplier (and by any real
/// supplier's gateway that implements it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SupplierAdapter {
    Simulated,
}

/// What the simulated supplier does with a booking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SimOutcome {
    /// CONFIRMED after `confirm_after_seconds`.
    #[default]
    Confirm,
    /// FAILED after `confirm_after_seconds`.
    Fail,
    /// PENDING for ever (the supplier never answers).
    Silent,
}

/// A SUPPLIER SKU's `"supplier"` settings on `PUT /admin/skus/{sku}`: the adapter and its
/// settings, passed to the adapter on every call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SupplierConfig {
    pub adapter: SupplierAdapter,
    /// (simulated) Seconds from booking to the outcome; default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 86400)]
    pub confirm_after_seconds: Option<u32>,
    /// (simulated) `confirm` (default), `fail` or `silent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SimOutcome>,
    /// (simulated) What a quote answers; absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1_000_000_000_u64)]
    pub available: Option<u64>,
    /// (simulated) Extra latency of every call for this SKU, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 5000)]
    pub latency_ms: Option<u32>,
    /// (simulated) The first n code-issue calls of each booking answer 503 (`SUPPLIER` with unit
    /// `CODE` only; docs/suppliers.md, "Codes issued by the supplier"); at most 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 1000)]
    pub issue_failures: Option<u32>,
}

impl SupplierConfig {
    /// The simulated supplier with its defaults (confirm after 2 s, unlimited quotes).
    pub fn simulated() -> Self {
        SupplierConfig {
            adapter: SupplierAdapter::Simulated,
            confirm_after_seconds: None,
            outcome: None,
            available: None,
            latency_ms: None,
            issue_failures: None,
        }
    }
}

/// Checks a SKU's model against its supplier settings.
pub fn validate(model: &InventoryModel, supplier: Option<&SupplierConfig>) -> Result<(), ModelError> {
    match (model.management == Management::Supplier, supplier) {
        (false, None) => Ok(()),
        (false, Some(_)) => Err(ModelError::SupplierWithoutModel),
        (true, None) => Err(ModelError::SupplierSettingsMissing),
        (true, Some(c)) => {
            if !matches!(model.unit, Unit::Single | Unit::Code) {
                return Err(ModelError::SupplierUnit);
            }
            if model.deduct != Deduct::AtOrder {
                return Err(ModelError::SupplierAtPayment);
            }
            if c.confirm_after_seconds.is_some_and(|s| s > MAX_CONFIRM_AFTER_S) {
                return Err(ModelError::SupplierSettings(format!(
                    "confirm_after_seconds must be at most {MAX_CONFIRM_AFTER_S}"
                )));
            }
            if c.latency_ms.is_some_and(|l| l > MAX_LATENCY_MS) {
                return Err(ModelError::SupplierSettings(format!("latency_ms must be at most {MAX_LATENCY_MS}")));
            }
            if c.issue_failures.is_some_and(|n| n > MAX_ISSUE_FAILURES) {
                return Err(ModelError::SupplierSettings(format!(
                    "issue_failures must be at most {MAX_ISSUE_FAILURES}"
                )));
            }
            if c.available.is_some_and(|a| a > 1_000_000_000) {
                return Err(ModelError::SupplierSettings("available must be at most 1000000000".into()));
            }
            Ok(())
        }
    }
}

/// A booking's state at the supplier (and, `Cancelled`, once Holdfast cancelled it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BookingStatus {
    Pending,
    Confirmed,
    Failed,
    Cancelled,
}

impl BookingStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BookingStatus::Pending => "PENDING",
            BookingStatus::Confirmed => "CONFIRMED",
            BookingStatus::Failed => "FAILED",
            BookingStatus::Cancelled => "CANCELLED",
        }
    }
}

/// One supplier line's booking, recorded on the order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupplierBooking {
    pub sku: Sku,
    pub quantity: u32,
    /// The supplier's id, once `book` answered (absent: booking not made yet, or its answer lost;
    /// booking again under the same key answers the same id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub booking_id: Option<String>,
    pub status: BookingStatus,
    /// The settings the booking was made with (a later PUT does not change an open booking).
    pub config: SupplierConfig,
    /// When a cancel at the supplier was started (epoch ms); the status turns `CANCELLED` once the
    /// supplier answered it. Recorded first, so a replay calls cancel again only if the first
    /// call never completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_started_ms: Option<i64>,
    /// A `SUPPLIER_CODES` line: its supplier issues its codes when the order is paid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub issues_codes: bool,
    /// Its codes' issue, from the payment on (docs/suppliers.md, "Codes issued by the supplier").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codes: Option<codes::CodeIssue>,
}

/// The idempotency key of a line's booking: one booking per order and SKU, however often the
/// create or a poll is retried.
pub fn booking_key(order: &OrderId, sku: &Sku) -> String {
    format!("{order}.{sku}")
}

/// The confirm duration of the supplier KPIs (docs/suppliers.md, "KPIs"): milliseconds from
/// the booking request — made right after the order is written, at `requested_ms` — to the
/// confirmation at `now_ms` (never negative: clocks of two Lambdas may disagree a little).
pub fn confirm_wait_ms(requested_ms: i64, now_ms: i64) -> f64 {
    (now_ms - requested_ms).max(0) as f64
}

/// Seconds until the next poll of an order written at `started_at` (epoch s), at `now`: every
/// 2 s for the first 30 s, then every 60 s, never past the deadline (a poll at the deadline
/// decides), at least 1 s.
pub fn next_poll_delay(started_at: i64, now: i64, deadline: i64) -> u32 {
    let elapsed = now - started_at;
    let step = if elapsed < FAST_WINDOW_S { FAST_POLL_S } else { SLOW_POLL_S };
    step.min(deadline - now).clamp(1, super::MAX_DELAY_SECONDS) as u32
}

/// Polls an order sees over its life when its supplier never answers (the schedule's cost).
pub fn polls_until(timeout_s: i64) -> u32 {
    let (mut t, mut n) = (0, 0);
    while t < timeout_s {
        t += i64::from(next_poll_delay(0, t, timeout_s));
        n += 1;
    }
    n
}

/// What one poll decides from the bookings' statuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollDecision {
    /// Every booking confirmed: the order becomes payable.
    Confirm,
    /// A booking failed, or the supplier did not answer by the deadline: the order fails.
    Fail(String),
    /// Ask again later.
    Wait,
}

pub fn decide(bookings: &[SupplierBooking], now: i64, deadline: i64) -> PollDecision {
    if let Some(b) = bookings.iter().find(|b| b.status == BookingStatus::Failed) {
        return PollDecision::Fail(format!("supplier refused the booking of {}", b.sku));
    }
    if bookings.iter().all(|b| b.status == BookingStatus::Confirmed) {
        return PollDecision::Confirm;
    }
    if now >= deadline {
        return PollDecision::Fail("supplier did not confirm in time".into());
    }
    PollDecision::Wait
}

/// A cancel started this recently is taken to be still in flight (another consumer's).
pub const CANCEL_LEASE_MS: i64 = 30_000;

/// What compensating a closed order's bookings needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelPlan {
    /// Nothing held at the supplier any more.
    Done,
    /// Another consumer started these cancels a moment ago: retry later.
    InFlight,
    /// Cancel the bookings at these indexes (record the start first).
    Cancel(Vec<usize>),
}

/// The bookings of a closed order still to cancel at the supplier: every one it may hold
/// (confirmed, or pending: it might still confirm), unless a cancel of it is in flight.
pub fn cancel_plan(bookings: &[SupplierBooking], now_ms: i64) -> CancelPlan {
    let open: Vec<usize> = bookings
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b.status, BookingStatus::Confirmed | BookingStatus::Pending))
        .map(|(i, _)| i)
        .collect();
    if open.is_empty() {
        return CancelPlan::Done;
    }
    let due: Vec<usize> = open
        .iter()
        .copied()
        .filter(|i| bookings[*i].cancel_started_ms.is_none_or(|t| now_ms - t >= CANCEL_LEASE_MS))
        .collect();
    if due.is_empty() {
        CancelPlan::InFlight
    } else {
        CancelPlan::Cancel(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SupplierConfig {
        SupplierConfig::simulated()
    }

    fn booking(status: BookingStatus) -> SupplierBooking {
        SupplierBooking {
            sku: Sku::parse("TOUR").unwrap(),
            quantity: 1,
            booking_id: Some("b1".into()),
            status,
            config: cfg(),
            cancel_started_ms: None,
            issues_codes: false,
            codes: None,
        }
    }

    fn supplier_model(unit: Unit, deduct: Deduct) -> InventoryModel {
        InventoryModel { management: Management::Supplier, unit, deduct, ..Default::default() }
    }

    #[test]
    fn the_confirm_wait_runs_from_the_request_and_is_never_negative() {
        assert_eq!(confirm_wait_ms(1_000, 31_500), 30_500.0);
        assert_eq!(confirm_wait_ms(2_000, 1_990), 0.0);
    }

    #[test]
    fn settings_and_model_must_agree() {
        let m = supplier_model(Unit::Single, Deduct::AtOrder);
        assert!(validate(&m, Some(&cfg())).is_ok());
        assert_eq!(validate(&m, None), Err(ModelError::SupplierSettingsMissing));
        assert_eq!(validate(&InventoryModel::default(), Some(&cfg())), Err(ModelError::SupplierWithoutModel));
        assert!(validate(&InventoryModel::default(), None).is_ok());
        assert_eq!(
            validate(&supplier_model(Unit::Calendar, Deduct::AtOrder), Some(&cfg())),
            Err(ModelError::SupplierUnit)
        );
        assert_eq!(
            validate(&supplier_model(Unit::Bundle, Deduct::AtOrder), Some(&cfg())),
            Err(ModelError::SupplierUnit)
        );
        assert_eq!(
            validate(&supplier_model(Unit::Single, Deduct::AtPayment), Some(&cfg())),
            Err(ModelError::SupplierAtPayment)
        );
        let slow = SupplierConfig { confirm_after_seconds: Some(MAX_CONFIRM_AFTER_S + 1), ..cfg() };
        assert!(matches!(validate(&m, Some(&slow)), Err(ModelError::SupplierSettings(_))));
        let laggy = SupplierConfig { latency_ms: Some(MAX_LATENCY_MS + 1), ..cfg() };
        assert!(matches!(validate(&m, Some(&laggy)), Err(ModelError::SupplierSettings(_))));
    }

    #[test]
    fn settings_read_strictly() {
        let c: SupplierConfig =
            serde_json::from_str(r#"{"adapter":"simulated","confirm_after_seconds":3,"outcome":"silent"}"#).unwrap();
        assert_eq!((c.confirm_after_seconds, c.outcome), (Some(3), Some(SimOutcome::Silent)));
        for bad in [
            r#"{"adapter":"acme"}"#,
            r#"{"adapter":"simulated","outcome":"maybe"}"#,
            r#"{"adapter":"simulated","colour":"red"}"#,
            r#"{"adapter":"simulated","confirm_after_seconds":-1}"#,
            r#"{}"#,
        ] {
            assert!(serde_json::from_str::<SupplierConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn polls_every_two_seconds_for_thirty_then_every_minute_never_past_the_deadline() {
        assert_eq!(next_poll_delay(100, 100, 1900), 2);
        assert_eq!(next_poll_delay(100, 129, 1900), 2);
        assert_eq!(next_poll_delay(100, 130, 1900), 60);
        assert_eq!(next_poll_delay(100, 1880, 1900), 20);
        assert_eq!(next_poll_delay(100, 1900, 1900), 1);
        assert_eq!(next_poll_delay(100, 105, 108), 2);
        assert_eq!(next_poll_delay(100, 107, 108), 1);
        // 15 fast polls, then 29 slow ones and the one at the deadline
        assert_eq!(polls_until(1800), 15 + 29 + 1);
        assert_eq!(polls_until(8), 4);
    }

    #[test]
    fn a_poll_confirms_when_all_confirm_fails_on_any_failure_or_the_deadline() {
        use BookingStatus::*;
        assert_eq!(decide(&[booking(Confirmed), booking(Confirmed)], 0, 10), PollDecision::Confirm);
        assert_eq!(decide(&[booking(Confirmed), booking(Pending)], 0, 10), PollDecision::Wait);
        assert!(matches!(decide(&[booking(Confirmed), booking(Failed)], 0, 10), PollDecision::Fail(_)));
        assert!(matches!(decide(&[booking(Pending)], 10, 10), PollDecision::Fail(_)));
        // a failure wins over the deadline and a confirmation at the deadline still counts
        assert_eq!(decide(&[booking(Confirmed)], 11, 10), PollDecision::Confirm);
        let mut all = vec![booking(Confirmed), booking(Pending), booking(Failed), booking(Cancelled)];
        assert_eq!(cancel_plan(&all, 1_000), CancelPlan::Cancel(vec![0, 1]));
        all[0].cancel_started_ms = Some(1_000);
        all[1].cancel_started_ms = Some(1_000);
        assert_eq!(cancel_plan(&all, 1_000 + CANCEL_LEASE_MS - 1), CancelPlan::InFlight);
        assert_eq!(cancel_plan(&all, 1_000 + CANCEL_LEASE_MS), CancelPlan::Cancel(vec![0, 1]));
        all[0].status = Cancelled;
        all[1].status = Cancelled;
        assert_eq!(cancel_plan(&all, 0), CancelPlan::Done);
        assert_eq!(booking_key(&OrderId::parse("o1").unwrap(), &Sku::parse("TOUR").unwrap()), "o1.TOUR".to_owned());
    }
}
