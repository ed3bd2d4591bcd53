//! Fault injection (docs/architecture.md, "Local stack"). Compiled in only with the `faults` feature, which the local
//! runner and the tests enable and the Lambda binaries do not: without it, [`fault!`] expands
//! to `false` and the point names never reach the binary.
//!
//! `HOLDFAST_FAULTS` = comma-separated `<point>` or `<point>@<probability>`.

/// Crash: freeze done, order not written.
pub const AFTER_FREEZE: &str = "create-order.after-freeze";
/// Crash: codes claimed, freeze not written (docs/code-pools.md, "Crashes").
pub const AFTER_CODE_CLAIM: &str = "create-order.after-code-claim";
/// Crash: order written, payment-timeout message not sent.
pub const AFTER_ORDER_PUT: &str = "create-order.after-order-put";
pub const PAYMENT_TIMEOUT_DROP: &str = "payment-timeout.drop";
pub const STOCK_EVENTS_DROP: &str = "stock-events.drop";
pub const STOCK_EVENTS_CRASH: &str = "stock-events.crash";
/// Every message of the batch reported failed, unprocessed (it ends in the DLQ).
pub const STOCK_EVENTS_FAIL: &str = "stock-events.fail";
pub const RESERVATION_CHECK_DROP: &str = "reservation-check.drop";
pub const RESERVATION_CHECK_CRASH: &str = "reservation-check.crash";
pub const PUBLISH_EVENTS_DROP: &str = "publish-events.drop";
pub const PUBLISH_EVENTS_CRASH: &str = "publish-events.crash";
pub const PAYMENT_TIMEOUT_CRASH: &str = "payment-timeout.crash";
pub const RECONCILE_CRASH: &str = "reconcile.crash";
/// A reconcile worker dies half-way through a page of stale locks (the item is redelivered).
pub const RECONCILE_WORKER_CRASH: &str = "reconcile-worker.crash-mid-page";

/// Every known point; parsing refuses others so a typo in a test cannot silently do nothing.
pub const ALL: &[&str] = &[
    AFTER_FREEZE,
    AFTER_CODE_CLAIM,
    AFTER_ORDER_PUT,
    PAYMENT_TIMEOUT_DROP,
    PAYMENT_TIMEOUT_CRASH,
    STOCK_EVENTS_DROP,
    STOCK_EVENTS_CRASH,
    STOCK_EVENTS_FAIL,
    RESERVATION_CHECK_DROP,
    RESERVATION_CHECK_CRASH,
    PUBLISH_EVENTS_DROP,
    PUBLISH_EVENTS_CRASH,
    RECONCILE_CRASH,
    RECONCILE_WORKER_CRASH,
];

#[derive(Debug, Default)]
pub struct Faults {
    /// Settable while running, so a test can crash one step and then let the retry through.
    #[cfg(feature = "faults")]
    points: std::sync::RwLock<Vec<(String, f64)>>,
}

#[derive(Debug, thiserror::Error)]
#[error("HOLDFAST_FAULTS: {0}")]
pub struct FaultsError(String);

impl Faults {
    #[cfg(feature = "faults")]
    pub fn parse(spec: &str) -> Result<Self, FaultsError> {
        let mut points = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, p) = match part.split_once('@') {
                Some((n, p)) => (n, p.parse::<f64>().map_err(|_| FaultsError(format!("bad probability in {part}")))?),
                None => (part, 1.0),
            };
            if !ALL.contains(&name) {
                return Err(FaultsError(format!("unknown point {name}")));
            }
            if !(0.0..=1.0).contains(&p) {
                return Err(FaultsError(format!("probability out of 0..1 in {part}")));
            }
            points.push((name.to_owned(), p));
        }
        Ok(Self { points: std::sync::RwLock::new(points) })
    }

    /// Replaces the active points.
    #[cfg(feature = "faults")]
    pub fn set(&self, spec: &str) -> Result<(), FaultsError> {
        let parsed = Self::parse(spec)?;
        let new = parsed.points.into_inner().unwrap_or_default();
        if let Ok(mut p) = self.points.write() {
            *p = new;
        }
        Ok(())
    }

    #[cfg(not(feature = "faults"))]
    pub fn parse(spec: &str) -> Result<Self, FaultsError> {
        if spec.trim().is_empty() {
            Ok(Self {})
        } else {
            Err(FaultsError("this build has no fault injection".into()))
        }
    }

    /// Whether the named point fires now (drawn per call).
    #[cfg(feature = "faults")]
    pub fn hit(&self, point: &str) -> bool {
        self.points
            .read()
            .map(|pts| pts.iter().any(|(n, p)| n == point && (*p >= 1.0 || fastrand::f64() < *p)))
            .unwrap_or(false)
    }
}

/// `fault!(faults, "point")`: true when the point fires; always false without the feature.
#[macro_export]
macro_rules! fault {
    ($faults:expr, $point:expr) => {{
        #[cfg(feature = "faults")]
        {
            $faults.hit($point)
        }
        #[cfg(not(feature = "faults"))]
        {
            let _ = &$faults;
            false
        }
    }};
}

/// The error a crash point raises: the invocation fails the way a dead Lambda does.
#[derive(Debug, thiserror::Error)]
#[error("injected crash at {0}")]
pub struct InjectedCrash(pub &'static str);

#[cfg(all(test, feature = "faults"))]
mod tests {
    use super::*;

    #[test]
    fn points_parse_with_probabilities_and_typos_are_refused() {
        let f = Faults::parse("create-order.after-freeze, stock-events.drop@0").unwrap();
        assert!(f.hit(AFTER_FREEZE));
        assert!(!f.hit(STOCK_EVENTS_DROP));
        assert!(!f.hit(AFTER_ORDER_PUT));
        assert!(Faults::parse("create-order.after-freze").is_err());
        assert!(Faults::parse("stock-events.drop@2").is_err());
    }
}
