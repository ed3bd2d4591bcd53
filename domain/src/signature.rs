//! Payment webhook signatures (docs/architecture.md, "Payment callback"):
//! `X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.

use super::webhook_mac;

/// How far the signed time may be from now, either way.
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing or malformed X-Signature header")]
    Malformed,
    #[error("signature timestamp outside the tolerance")]
    Stale,
    #[error("signature does not match")]
    Mismatch,
}

/// The header value a payment provider would send.
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", webhook_mac::sign_hex(secret, t, body))
}

/// The signed time and signatures of `header`, if it is well formed and fresh at `now`.
fn parse(header: &str, now: i64) -> Result<(i64, Vec<Vec<u8>>), SignatureError> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => sigs.push(hex::decode(v).map_err(|_| SignatureError::Malformed)?),
            _ => return Err(SignatureError::Malformed),
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if sigs.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // abs_diff: `now - t` overflows for a `t` near i64::MIN (and wrapped past the check in release).
    if now.abs_diff(t) > TOLERANCE_SECONDS as u64 {
        return Err(SignatureError::Stale);
    }
    Ok((t, sigs))
}

/// Whether `header` is well formed and fresh at `now`, before any key is read: a request
/// that cannot verify under any key costs no key fetch (security review L4).
pub fn precheck(header: &str, now: i64) -> Result<(), SignatureError> {
    parse(header, now).map(|_| ())
}

/// Checks `header` against `body` at time `now` (epoch seconds), in constant time.
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: i64) -> Result<(), SignatureError> {
    let (t, sigs) = parse(header, now)?;
    if webhook_mac::matches_any(secret, t, body, sigs.iter().map(Vec::as_slice)) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: &[u8] = b"secret";

    #[test]
    fn a_fresh_signature_over_the_exact_body_verifies() {
        let h = sign(K, 1000, b"{}");
        assert_eq!(verify(K, &h, b"{}", 1000), Ok(()));
        assert_eq!(verify(K, &h, b"{}", 1300), Ok(()));
        assert_eq!(verify(K, &h, b"{}", 700), Ok(()));
    }

    #[test]
    fn tampered_body_wrong_secret_or_stale_time_are_refused() {
        let h = sign(K, 1000, b"{\"amount\":1}");
        assert_eq!(verify(K, &h, b"{\"amount\":2}", 1000), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"other", &h, b"{\"amount\":1}", 1000), Err(SignatureError::Mismatch));
        assert_eq!(verify(K, &h, b"{\"amount\":1}", 1301), Err(SignatureError::Stale));
        assert_eq!(verify(K, &h, b"{\"amount\":1}", 699), Err(SignatureError::Stale));
    }

    #[test]
    fn malformed_headers_are_refused() {
        for h in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz", "t=1;v1=00", "garbage"] {
            assert_eq!(verify(K, h, b"", 1), Err(SignatureError::Malformed), "{h}");
        }
    }

    #[test]
    fn the_precheck_refuses_what_verify_would_refuse_before_any_key() {
        assert_eq!(precheck(&sign(K, 1000, b"{}"), 1000), Ok(()));
        assert_eq!(precheck("t=1000,v1=00", 1000), Ok(()), "a well-formed header: the keys decide");
        assert_eq!(precheck("", 1000), Err(SignatureError::Malformed));
        assert_eq!(precheck("t=1,v1=zz", 1), Err(SignatureError::Malformed));
        assert_eq!(precheck("t=1000,v1=00", 1301), Err(SignatureError::Stale));
    }

    #[test]
    fn a_known_answer_computed_elsewhere_verifies() {
        // python3 -c "import hmac,hashlib;print(hmac.new(b'secret',b'1000.{}',hashlib.sha256).hexdigest())"
        let h = "t=1000,v1=026360fb6284f077f1148b1ae7c62679730497810a6a0321574de01e8b009e7a";
        assert_eq!(sign(K, 1000, b"{}"), h);
        assert_eq!(verify(K, h, b"{}", 1000), Ok(()));
        assert_eq!(verify(K, &format!("{h},v1=00"), b"{}", 1000), Ok(()), "any one v1");
    }

    #[test]
    fn a_timestamp_that_was_not_signed_does_not_verify() {
        let h = sign(K, 1000, b"{}").replace("t=1000", "t=1001");
        assert_eq!(verify(K, &h, b"{}", 1000), Err(SignatureError::Mismatch));
    }

    #[test]
    fn extreme_timestamps_are_stale_not_a_panic_or_a_pass() {
        for t in [i64::MIN, i64::MIN + 1, i64::MAX, 1000 + i64::MIN] {
            let h = format!("t={t},v1=00");
            assert_eq!(verify(K, &h, b"{}", 1000), Err(SignatureError::Stale), "{t}");
        }
    }
}
