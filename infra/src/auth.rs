//! The local JWT authorizer, with jsonwebtoken: HS256 tokens signed with `LOCAL_JWT_SECRET`,
//! `sub` = user, `scope` = space-separated scopes, and `iss`, `aud` and `exp` checked as API
//! Gateway's JWT authorizer checks them (template.yaml `JwtConfiguration`). Anything but HS256
//! (including `alg: none`) is refused, as API Gateway refuses unsigned tokens.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use std::collections::HashMap;

/// The local key and what the local stack gives the template's `JwtIssuer` and `JwtAudience`
/// parameters: one definition, shared with the `sam local` gate.
pub use holdfast::sam_local::{DEFAULT_SECRET, LOCAL_AUDIENCE, LOCAL_ISSUER};

/// The scopes a buyer's access token carries: the user routes require them (template.yaml;
/// docs/deploy.md says how to configure the identity provider).
pub const USER_SCOPES: &[&str] = &["orders:read", "orders:write"];

#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// All claims as strings, as API Gateway passes them to Lambda.
    pub claims: HashMap<String, String>,
    pub scopes: Vec<String>,
}

/// A token for local use (tests, the README's curl examples).
pub fn mint(secret: &str, sub: &str, scopes: &[&str], ttl_s: i64) -> String {
    let claims = serde_json::json!({
        "sub": sub,
        "scope": scopes.join(" "),
        "exp": holdfast::clock::now_s() + ttl_s,
        "iss": LOCAL_ISSUER,
        "aud": LOCAL_AUDIENCE,
    });
    // HS256 over a JSON object with a byte-string key cannot fail.
    EncodingKey::from_secret(secret.as_bytes())
        .and_then(|k| encode(&Header::new(Algorithm::HS256), &claims, &k))
        .unwrap_or_default()
}

/// What API Gateway's JWT authorizer checks: the signature (HS256 here; AWS verifies against
/// the issuer's keys), `iss` equal to the configured issuer, `aud` containing the configured
/// audience, `exp` present and not past, `nbf` when present. No leeway: AWS allows none either.
fn validation() -> Validation {
    let mut v = Validation::new(Algorithm::HS256);
    v.leeway = 0;
    v.validate_nbf = true;
    v.set_issuer(&[LOCAL_ISSUER]);
    v.set_audience(&[LOCAL_AUDIENCE]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    v
}

/// Validates `Authorization: Bearer <jwt>` at `now_s` (the clock is a parameter so tests can
/// move it; jsonwebtoken reads the system clock, so `now_s` only shifts `exp` checks here).
pub fn verify(secret: &str, authorization: Option<&str>, now_s: i64) -> Result<Claims, &'static str> {
    let token = authorization
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .ok_or("missing bearer token")?
        .trim();
    let key = DecodingKey::from_secret(secret.as_bytes()).map_err(|_| "unusable secret")?;
    let data = decode::<serde_json::Map<String, serde_json::Value>>(token, &key, &validation()).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::ExpiredSignature => "token expired",
            ErrorKind::InvalidSignature => "bad signature",
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => "unsupported alg",
            ErrorKind::InvalidIssuer => "wrong issuer",
            ErrorKind::InvalidAudience => "wrong audience",
            ErrorKind::MissingRequiredClaim(_) => "missing claim",
            ErrorKind::ImmatureSignature => "token not yet valid",
            _ => "malformed token",
        }
    })?;
    let obj = data.claims;
    if obj.get("exp").and_then(serde_json::Value::as_i64).is_none_or(|e| e < now_s) {
        return Err("token expired");
    }
    if obj.get("sub").and_then(|s| s.as_str()).is_none_or(str::is_empty) {
        return Err("token has no sub");
    }
    let claims: HashMap<String, String> =
        obj.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))).collect();
    let scopes = claims
        .get("scope")
        .or_else(|| claims.get("scp"))
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    Ok(Claims { claims, scopes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    fn signed(claims: serde_json::Value) -> String {
        let t = encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(b"k").unwrap()).unwrap();
        format!("Bearer {t}")
    }

    #[test]
    fn a_minted_token_verifies_with_its_scopes() {
        let t = mint("k", "alice", &["stock:admin", "x"], 60);
        let c = verify("k", Some(&format!("Bearer {t}")), holdfast::clock::now_s()).unwrap();
        assert_eq!(c.claims["sub"], "alice");
        assert_eq!(c.claims["iss"], LOCAL_ISSUER);
        assert_eq!(c.scopes, vec!["stock:admin", "x"]);
    }

    #[test]
    fn wrong_key_alg_none_expired_and_garbage_are_refused() {
        let now = holdfast::clock::now_s();
        let t = mint("k", "alice", &[], 60);
        assert_eq!(verify("other", Some(&format!("Bearer {t}")), now), Err("bad signature"));
        assert_eq!(verify("k", Some(&format!("Bearer {t}")), now + 120), Err("token expired"));
        let none_header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let payload = t.split('.').nth(1).unwrap();
        assert!(verify("k", Some(&format!("Bearer {none_header}.{payload}.")), now).is_err());
        assert!(verify("k", None, now).is_err());
        assert!(verify("k", Some("Bearer a.b"), now).is_err());
        assert!(verify("k", Some(&t), now).is_err());
    }

    #[test]
    fn issuer_audience_and_expiry_are_checked_as_api_gateway_checks_them() {
        let now = holdfast::clock::now_s();
        let ok = serde_json::json!({"sub": "a", "iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE, "exp": now + 60});
        assert!(verify("k", Some(&signed(ok.clone())), now).is_ok());
        let with = |k: &str, v: serde_json::Value| {
            let mut c = ok.clone();
            c[k] = v;
            verify("k", Some(&signed(c)), now)
        };
        assert_eq!(with("iss", "https://elsewhere".into()), Err("wrong issuer"));
        assert_eq!(with("aud", "another-api".into()), Err("wrong audience"));
        assert!(with("aud", serde_json::json!(["another-api", LOCAL_AUDIENCE])).is_ok(), "aud may be a list");
        assert_eq!(with("exp", (now - 1).into()), Err("token expired"));
        assert_eq!(with("nbf", (now + 600).into()), Err("token not yet valid"));
        let mut no_exp = ok.clone();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(verify("k", Some(&signed(no_exp)), now), Err("missing claim"));
        let mut no_iss = ok;
        no_iss.as_object_mut().unwrap().remove("iss");
        assert_eq!(verify("k", Some(&signed(no_iss)), now), Err("missing claim"));
    }
}
