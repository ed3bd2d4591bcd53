//! Running a sale (docs/operations.md): the global sales switch, admission rates and the live
//! numbers an operator watches. Pure: the switch is stored by the stock adapters, the buckets and
//! the live counters live in a warm Lambda's memory (`crate::context::Caches`).

use std::collections::BTreeMap;

/// The global sales switch (the stop-loss lever of a sale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SalesMode {
    /// Everything sells.
    #[default]
    Open,
    /// Only cancels, payments, refunds and the switch itself are written.
    ReadOnly,
    /// New checkouts and external reservations are refused; everything else runs.
    Closed,
}

impl SalesMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SalesMode::Open => "OPEN",
            SalesMode::ReadOnly => "READ_ONLY",
            SalesMode::Closed => "CLOSED",
        }
    }

    pub fn parse(s: &str) -> Option<SalesMode> {
        [SalesMode::Open, SalesMode::ReadOnly, SalesMode::Closed].into_iter().find(|m| m.as_str() == s)
    }
}

/// The switch as stored: its mode, why, since when and who set it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SalesSwitch {
    pub mode: SalesMode,
    pub reason: String,
    pub since_ms: i64,
    /// The admin's `sub`; `None` before anyone set it.
    pub by: Option<String>,
}

/// What a write route does, for the switch's judgement; each route's row says which
/// (`handlers::routes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// A new checkout or an external reservation: refused unless OPEN.
    Checkout,
    /// Never refused: cancels, payments, refunds and their webhooks, the levers (pause, resume,
    /// the switch) — an operator must always be able to stop a sale and money must always flow.
    Always,
    /// Any other write: refused only in READ_ONLY.
    Other,
}

impl SalesSwitch {
    /// Whether the switch lets a write of `kind` through.
    pub fn admits(&self, kind: WriteKind) -> bool {
        matches!(
            (self.mode, kind),
            (_, WriteKind::Always) | (SalesMode::Open, _) | (SalesMode::Closed, WriteKind::Other)
        )
    }
}

/// A token bucket: `rate` admissions per second with a burst of one second's worth. One per
/// SKU or campaign item per warm Lambda; approximate by design (docs/operations.md, "Admission
/// rate": N warm instances admit up to N × rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    at_ms: i64,
}

impl Bucket {
    pub fn full(rate: u32, now_ms: i64) -> Bucket {
        Bucket { tokens: f64::from(rate.max(1)), at_ms: now_ms }
    }

    /// Takes `n` tokens, or answers how many milliseconds until they would be there.
    pub fn take(&mut self, rate: u32, n: u32, now_ms: i64) -> Result<(), i64> {
        let rate = f64::from(rate.max(1));
        let elapsed = (now_ms - self.at_ms).max(0) as f64 / 1000.0;
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        self.at_ms = now_ms.max(self.at_ms);
        let want = f64::from(n).min(rate);
        if self.tokens >= want {
            self.tokens -= want;
            Ok(())
        } else {
            Err((((want - self.tokens) / rate) * 1000.0).ceil() as i64)
        }
    }
}

/// Upper bounds (ms) of the latency histogram's buckets; the last one is open.
pub const LATENCY_BOUNDS_MS: [u64; 14] = [2, 5, 10, 20, 35, 50, 75, 100, 150, 250, 500, 1000, 2500, 10_000];

/// The histogram bucket of a latency.
pub fn latency_bucket(ms: u64) -> usize {
    LATENCY_BOUNDS_MS.iter().position(|b| ms <= *b).unwrap_or(LATENCY_BOUNDS_MS.len())
}

/// The `q` quantile (0..1) of a histogram, as its bucket's upper bound (an over-estimate of at
/// most one bucket); `None` when empty.
pub fn quantile(hist: &BTreeMap<usize, i64>, q: f64) -> Option<u64> {
    let total: i64 = hist.values().sum();
    if total <= 0 {
        return None;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as i64;
    let mut seen = 0;
    for (b, n) in hist {
        seen += n;
        if seen >= rank {
            return Some(
                LATENCY_BOUNDS_MS.get(*b).copied().unwrap_or(LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.len() - 1] * 2),
            );
        }
    }
    None
}

/// A low-stock crossing: `Some(true)` when available fell below the threshold, `Some(false)`
/// when it came back to it or above, `None` when nothing crossed.
pub fn low_stock_crossing(threshold: i64, before: i64, after: i64) -> Option<bool> {
    match (before < threshold, after < threshold) {
        (false, true) => Some(true),
        (true, false) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_parses_from_its_wire_name_only() {
        assert_eq!(SalesMode::parse("READ_ONLY"), Some(SalesMode::ReadOnly));
        assert_eq!(SalesMode::parse("open"), None);
    }

    #[test]
    fn a_bucket_admits_its_rate_per_second_and_says_when_to_come_back() {
        let mut b = Bucket::full(20, 0);
        let admitted = (0..100).filter(|_| b.take(20, 1, 0).is_ok()).count();
        assert_eq!(admitted, 20, "a burst of one second's worth");
        assert_eq!(b.take(20, 1, 0), Err(50));
        // ten seconds at 20/s, asked 100 times a second: 200 more
        let mut admitted = 0;
        for ms in (10..=10_000).step_by(10) {
            admitted += usize::from(b.take(20, 1, ms).is_ok());
        }
        assert_eq!(admitted, 200);
        // a clock going backwards takes nothing it has not earned
        assert!(b.take(20, 1, 5_000).is_err());
    }

    #[test]
    fn quantiles_are_the_upper_bound_of_their_bucket() {
        let mut h = BTreeMap::new();
        assert_eq!(quantile(&h, 0.5), None);
        for ms in [1, 3, 4, 8, 30, 30, 30, 30, 30, 900] {
            *h.entry(latency_bucket(ms)).or_insert(0) += 1;
        }
        assert_eq!(quantile(&h, 0.5), Some(35));
        assert_eq!(quantile(&h, 0.99), Some(1000));
        assert_eq!(latency_bucket(50_000), LATENCY_BOUNDS_MS.len());
    }

    #[test]
    fn a_crossing_is_reported_once_each_way() {
        assert_eq!(low_stock_crossing(10, 10, 9), Some(true));
        assert_eq!(low_stock_crossing(10, 9, 8), None);
        assert_eq!(low_stock_crossing(10, 9, 10), Some(false));
        assert_eq!(low_stock_crossing(10, 50, 40), None);
    }
}
