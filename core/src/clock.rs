//! Wall-clock time in the units storage uses.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Whether a virtual time is set (the simulator's clock, `sim/`); production never sets it, and
/// the check costs one relaxed load.
static VIRTUAL_SET: AtomicBool = AtomicBool::new(false);
static VIRTUAL_MS: AtomicI64 = AtomicI64::new(0);

/// Sets (`Some`) or clears (`None`) a process-wide virtual time that [`now_ms`] answers instead
/// of the wall clock. For the deterministic simulator only.
pub fn set_virtual_ms(ms: Option<i64>) {
    match ms {
        Some(v) => {
            VIRTUAL_MS.store(v, Ordering::Relaxed);
            VIRTUAL_SET.store(true, Ordering::Release);
        }
        None => VIRTUAL_SET.store(false, Ordering::Release),
    }
}

pub fn now_ms() -> i64 {
    if VIRTUAL_SET.load(Ordering::Acquire) {
        return VIRTUAL_MS.load(Ordering::Relaxed);
    }
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    wall + test_offset_ms()
}

/// How far the test clock runs ahead of the wall clock (see [`advance_test_clock_ms`]); always 0
/// in a build without the `faults` feature.
#[cfg(feature = "faults")]
fn test_offset_ms() -> i64 {
    TEST_OFFSET_MS.load(Ordering::Relaxed)
}

#[cfg(not(feature = "faults"))]
#[inline(always)]
fn test_offset_ms() -> i64 {
    0
}

/// The offset [`now_ms`] adds to the wall clock in a test process (`faults` builds only).
#[cfg(feature = "faults")]
static TEST_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// Moves this process's wall clock forward by `ms` (the end-to-end tests: a deadline, a stale-lock
/// age or an auto-completion delay passes at once instead of being slept out). Every reader of
/// [`now_ms`] in the process sees it — the in-process local stack and the test alike — while the
/// emulator's own clock (SQS delays, DynamoDB TTL) keeps real time. Forward only; a virtual time
/// set by [`set_virtual_ms`] still wins over it.
///
/// Only in builds with the `faults` feature (the local stack, the tests, the simulator), like the
/// fault-injection points: the Lambda binaries are built without it (`make package` checks), so
/// production has neither this function nor an offset, and nothing — no variable, no route — sets
/// it from outside the process.
#[cfg(feature = "faults")]
pub fn advance_test_clock_ms(ms: i64) {
    assert!(ms >= 0, "the test clock only moves forward");
    TEST_OFFSET_MS.fetch_add(ms, Ordering::Relaxed);
}

/// The total offset set by [`advance_test_clock_ms`] so far (0 until then).
#[cfg(feature = "faults")]
pub fn test_clock_offset_ms() -> i64 {
    test_offset_ms()
}

pub fn now_s() -> i64 {
    now_ms() / 1000
}

/// RFC 3339 UTC for epoch milliseconds (API times), millisecond precision. Beyond chrono's
/// range (±262,000 years; no API input gets there) the nearest representable instant.
pub fn rfc3339(ms: i64) -> String {
    let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or(if ms < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    });
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Epoch milliseconds of an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`),
/// years 1970–9999; `None` for anything else. chrono parses; the API is stricter than RFC 3339
/// in two ways: the separator is `T` (not a space) and there are no leap seconds.
pub fn parse_rfc3339(t: &str) -> Option<i64> {
    if !matches!(t.as_bytes().get(10), Some(b'T' | b't')) || t.get(17..19) == Some("60") {
        return None;
    }
    let parsed = DateTime::parse_from_rfc3339(t).ok()?;
    (1970..=9999).contains(&parsed.year()).then_some(())?;
    let ms = parsed.timestamp_millis();
    (ms >= 0).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_formats_and_offsets() {
        for ms in [0, 1_796_083_200_123, 951_782_400_000, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339("2026-12-01T01:00:00+01:00"), Some(1_796_083_200_000));
        assert_eq!(parse_rfc3339("2026-12-01T00:00:00Z"), Some(1_796_083_200_000));
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01 00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00",
            "2026-12-01T00:00:00.Z",
            "1969-12-31T23:59:59Z",
            "2026-12-01T00:00:00+1:00",
            "２026-12-01T00:00:00Z",
            "2026-12-01T00:00:00+é:00",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_083_200_123), "2026-12-01T00:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
