//! Stripe webhook signatures (docs/after-sale.md, "Stripe"), as Stripe documents them:
//! `Stripe-Signature: t=<unix seconds>,v1=<hex>,v1=<hex>,v0=<hex>`, where each `v1` is
//! `hex(HMAC-SHA256(endpoint secret, "<t>.<raw body>"))`. Any `v1` may match (Stripe sends
//! several while an endpoint secret is rolled); other schemes (`v0` is a test-mode scheme) are
//! ignored; the signed time must be within [`TOLERANCE_SECONDS`] of now, either way.
//!
//! The key is the endpoint secret *string* as Stripe shows it (`whsec_…`, prefix included),
//! not its decoded bytes. Pure: the caller supplies the clock.

use super::webhook_mac;

/// Stripe's libraries' default tolerance, applied both ways (a future time is refused too).
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StripeSignatureError {
    #[error("missing or malformed Stripe-Signature header (no integer t=)")]
    Malformed,
    #[error("Stripe-Signature carries no v1 signature")]
    NoV1,
    #[error("Stripe-Signature timestamp is older than the tolerance")]
    Stale,
    #[error("Stripe-Signature timestamp is in the future beyond the tolerance")]
    Future,
    #[error("no v1 signature matches")]
    Mismatch,
}

/// The `v1` value Stripe would compute for `body` signed at `t`.
pub fn v1(secret: &[u8], t: i64, body: &[u8]) -> String {
    webhook_mac::sign_hex(secret, t, body)
}

/// The header Stripe would send for `body` at `t` with one endpoint secret.
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", v1(secret, t, body))
}

/// The signed time and `v1` signatures of `header`, if well formed and within the tolerance.
fn parse(header: &str, now: i64) -> Result<(i64, Vec<&str>), StripeSignatureError> {
    let mut t: Option<i64> = None;
    let mut sigs: Vec<&str> = Vec::new();
    for part in header.split(',') {
        // Stripe's own libraries skip items that are not `key=value`; so does this.
        let Some((k, v)) = part.trim().split_once('=') else { continue };
        match k {
            "t" => {
                if t.is_some() {
                    return Err(StripeSignatureError::Malformed); // two times: which was signed?
                }
                t = Some(v.parse::<i64>().map_err(|_| StripeSignatureError::Malformed)?);
            }
            "v1" => sigs.push(v),
            _ => {} // v0 and any future scheme
        }
    }
    let t = t.ok_or(StripeSignatureError::Malformed)?;
    if sigs.is_empty() {
        return Err(StripeSignatureError::NoV1);
    }
    // abs_diff-style arithmetic: `now - t` would overflow for a `t` near i64::MIN.
    if t < now && now.abs_diff(t) > TOLERANCE_SECONDS as u64 {
        return Err(StripeSignatureError::Stale);
    }
    if t > now && now.abs_diff(t) > TOLERANCE_SECONDS as u64 {
        return Err(StripeSignatureError::Future);
    }
    Ok((t, sigs))
}

/// Whether `header` is well formed and within the tolerance at `now`, before any endpoint
/// secret is read (security review L4).
pub fn precheck(header: &str, now: i64) -> Result<(), StripeSignatureError> {
    parse(header, now).map(|_| ())
}

/// Checks `header` against the raw `body` at `now` (epoch seconds). Every `v1` is compared, in
/// constant time, whatever the earlier ones gave.
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: i64) -> Result<(), StripeSignatureError> {
    let (t, sigs) = parse(header, now)?;
    // A v1 that is not hex cannot match; it is not a reason to refuse the others.
    let candidates: Vec<Vec<u8>> = sigs.iter().filter_map(|s| hex::decode(s).ok()).collect();
    if webhook_mac::matches_any(secret, t, body, candidates.iter().map(Vec::as_slice)) {
        Ok(())
    } else {
        Err(StripeSignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &[u8] = b"whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;

    #[test]
    fn stripes_documented_example_shape_verifies() {
        let h = sign(K, 1_700_000_000, BODY);
        assert!(h.starts_with("t=1700000000,v1="));
        assert_eq!(h.len(), "t=1700000000,v1=".len() + 64);
        assert_eq!(verify(K, &h, BODY, 1_700_000_000), Ok(()));
    }

    #[test]
    fn the_signed_payload_is_t_dot_raw_body_keyed_with_the_secret_string() {
        // Computed independently, outside this code:
        // python3 -c "import hmac,hashlib;print(hmac.new(b'whsec_test_secret',b'1700000000.{}',hashlib.sha256).hexdigest())"
        let want = "ceb8863f7208fa249a6cd8f951e993c7563412aca65866f6272283debe143ab3";
        assert_eq!(v1(K, 1_700_000_000, b"{}"), want);
        assert_eq!(verify(K, &format!("t=1700000000,v1={want}"), b"{}", 1_700_000_000), Ok(()));
    }

    #[test]
    fn any_one_of_several_v1_signatures_is_enough() {
        let good = v1(K, 1000, BODY);
        let bad = v1(b"whsec_old", 1000, BODY);
        for h in [
            format!("t=1000,v1={bad},v1={good}"),
            format!("t=1000,v1={good},v1={bad}"),
            format!("v1={bad},t=1000,v0={bad},v1={good}"),
            format!("t=1000, v1=nothex, v1={good}"),
        ] {
            assert_eq!(verify(K, &h, BODY, 1000), Ok(()), "{h}");
        }
        assert_eq!(verify(K, &format!("t=1000,v1={bad},v1={bad}"), BODY, 1000), Err(StripeSignatureError::Mismatch));
    }

    #[test]
    fn only_v0_or_other_schemes_is_refused() {
        let good = v1(K, 1000, BODY);
        assert_eq!(verify(K, &format!("t=1000,v0={good}"), BODY, 1000), Err(StripeSignatureError::NoV1));
        assert_eq!(verify(K, &format!("t=1000,v2={good}"), BODY, 1000), Err(StripeSignatureError::NoV1));
        assert_eq!(verify(K, "t=1000", BODY, 1000), Err(StripeSignatureError::NoV1));
    }

    #[test]
    fn stale_and_future_timestamps_are_refused_at_the_tolerance() {
        let h = sign(K, 1000, BODY);
        assert_eq!(verify(K, &h, BODY, 1300), Ok(()));
        assert_eq!(verify(K, &h, BODY, 700), Ok(()));
        assert_eq!(verify(K, &h, BODY, 1301), Err(StripeSignatureError::Stale));
        assert_eq!(verify(K, &h, BODY, 699), Err(StripeSignatureError::Future));
        for t in [i64::MIN, i64::MIN + 1] {
            assert_eq!(verify(K, &format!("t={t},v1=00"), BODY, 1000), Err(StripeSignatureError::Stale));
        }
        assert_eq!(verify(K, &format!("t={},v1=00", i64::MAX), BODY, 1000), Err(StripeSignatureError::Future));
    }

    #[test]
    fn malformed_headers_are_refused() {
        for h in ["", "garbage", "v1=00", "t=,v1=00", "t=x,v1=00", "t=1.5,v1=00", "t=1,t=1,v1=00", "t:1,v1:00"] {
            assert_eq!(verify(K, h, BODY, 1), Err(StripeSignatureError::Malformed), "{h:?}");
        }
    }

    #[test]
    fn tampering_with_the_body_time_or_secret_fails() {
        let h = sign(K, 1000, BODY);
        assert_eq!(verify(K, &h, b"{}", 1000), Err(StripeSignatureError::Mismatch));
        assert_eq!(verify(b"whsec_other", &h, BODY, 1000), Err(StripeSignatureError::Mismatch));
        let moved = h.replace("t=1000", "t=1001");
        assert_eq!(verify(K, &moved, BODY, 1000), Err(StripeSignatureError::Mismatch));
        // the secret is the string, not its base64 decoding or anything else
        assert_eq!(verify(b"test_secret", &h, BODY, 1000), Err(StripeSignatureError::Mismatch));
        // upper-case hex is not what Stripe sends, but it is the same bytes
        assert_eq!(verify(K, &h.to_uppercase().replace("T=", "t=").replace("V1=", "v1="), BODY, 1000), Ok(()));
    }
}
