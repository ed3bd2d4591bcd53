//! The HMAC both webhook schemes sign with: `HMAC-SHA256(secret, "<t>.<raw body>")`, sent as hex.
//! The generic provider's `X-Signature` ([`super::signature`]) and Stripe's `Stripe-Signature`
//! ([`super::stripe`]) differ only in their header's format, tolerance and errors; the MAC and
//! its constant-time comparison are this one.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The MAC of the signed payload `"<t>.<body>"` under `secret`.
fn mac(secret: &[u8], t: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The hex signature of `body` signed at `t`, as a sender puts it in its header.
pub fn sign_hex(secret: &[u8], t: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, t, body).finalize().into_bytes())
}

/// Whether any of the `candidates` (decoded signatures) is the MAC of `body` signed at `t`. Each
/// is compared in constant time (`verify_slice`), and every one is compared whatever the earlier
/// ones gave.
pub fn matches_any<'a>(secret: &[u8], t: i64, body: &[u8], candidates: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let m = mac(secret, t, body);
    candidates.into_iter().fold(false, |ok, c| m.clone().verify_slice(c).is_ok() | ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known answers computed outside this code, with Python's hmac module:
    // python3 -c "import hmac,hashlib;print(hmac.new(b'key',b'1700000000.{\"amount\":1}',hashlib.sha256).hexdigest())"
    const KEY_VECTOR: &str = "adab85138027bbf307e406ff8c8da72ba905441be641e307934e091b108bade6";
    // hmac.new(b'secret', b'1000.{}', hashlib.sha256).hexdigest()
    const SECRET_VECTOR: &str = "026360fb6284f077f1148b1ae7c62679730497810a6a0321574de01e8b009e7a";

    #[test]
    fn the_mac_is_hmac_sha256_of_t_dot_body_as_computed_elsewhere() {
        assert_eq!(sign_hex(b"key", 1_700_000_000, br#"{"amount":1}"#), KEY_VECTOR);
        assert_eq!(sign_hex(b"secret", 1000, b"{}"), SECRET_VECTOR);
    }

    #[test]
    fn a_known_signature_matches_and_anything_else_does_not() {
        let good = hex::decode(KEY_VECTOR).unwrap();
        let body: &[u8] = br#"{"amount":1}"#;
        assert!(matches_any(b"key", 1_700_000_000, body, [good.as_slice()]));
        assert!(matches_any(b"key", 1_700_000_000, body, [&[0u8; 32][..], good.as_slice()]), "any one");
        assert!(matches_any(b"key", 1_700_000_000, body, [good.as_slice(), &[][..]]), "whatever the others");
        assert!(!matches_any(b"key", 1_700_000_000, body, std::iter::empty()));
        assert!(!matches_any(b"key", 1_700_000_001, body, [good.as_slice()]), "another time");
        assert!(!matches_any(b"yek", 1_700_000_000, body, [good.as_slice()]), "another key");
        assert!(!matches_any(b"key", 1_700_000_000, br#"{"amount":2}"#, [good.as_slice()]), "another body");
        assert!(!matches_any(b"key", 1_700_000_000, body, [&good[..31]]), "a prefix");
        let mut longer = good.clone();
        longer.push(0);
        assert!(!matches_any(b"key", 1_700_000_000, body, [longer.as_slice()]), "an extension");
    }
}
