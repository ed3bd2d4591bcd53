//! Wall-clock time in the units storage uses.

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

/// RFC 3339 UTC for epoch milliseconds (API times).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Epoch milliseconds of an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`),
/// years 1970–9999; `None` for anything else.
pub fn parse_rfc3339(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &t[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let ms: String = frac[..digits].chars().chain("000".chars()).take(3).collect();
        millis = ms.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && o.get(3..4) == Some(":") => {
            let oh = num_of(o.get(1..3)?)?;
            let om = num_of(o.get(4..6)?)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let v = oh * 3600 + om * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&mo) || d < 1 || d > month_days[(mo - 1) as usize] {
        return None;
    }
    if h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let secs = days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3600 + mi * 60 + se - offset_s;
    Some(secs * 1000 + millis)
}

fn num_of(s: &str) -> Option<i64> {
    s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
}

// Howard Hinnant's civil-to-days algorithm.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
