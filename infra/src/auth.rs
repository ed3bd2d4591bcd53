//! The local JWT authorizer: HS256 tokens signed with `LOCAL_JWT_SECRET`, `sub` = user,
//! `scope` = space-separated scopes, `exp` honoured when present. Anything but HS256
//! (including `alg: none`) is refused, as API Gateway refuses unsigned tokens.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;

pub const DEFAULT_SECRET: &str = "holdfast-local-jwt-secret";

/// The scopes a buyer's access token carries: the user routes require them (template.yaml;
/// docs/deploy.md says how to configure the identity provider).
pub const USER_SCOPES: &[&str] = &["orders:read", "orders:write"];

#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// All claims as strings, as API Gateway passes them to Lambda.
    pub claims: HashMap<String, String>,
    pub scopes: Vec<String>,
}

fn mac(secret: &str) -> Hmac<Sha256> {
    match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    }
}

/// A token for local use (tests, the README's curl examples).
pub fn mint(secret: &str, sub: &str, scopes: &[&str], ttl_s: i64) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let exp = holdfast::clock::now_s() + ttl_s;
    let payload = serde_json::json!({"sub": sub, "scope": scopes.join(" "), "exp": exp, "iss": "holdfast-local"});
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    let mut m = mac(secret);
    m.update(format!("{header}.{payload}").as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
    format!("{header}.{payload}.{sig}")
}

/// Validates `Authorization: Bearer <jwt>`.
pub fn verify(secret: &str, authorization: Option<&str>, now_s: i64) -> Result<Claims, &'static str> {
    let token = authorization
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .ok_or("missing bearer token")?
        .trim();
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err("malformed token");
    };
    let header: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).map_err(|_| "malformed header")?)
        .map_err(|_| "malformed header")?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err("unsupported alg");
    }
    let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| "malformed signature")?;
    let mut m = mac(secret);
    m.update(format!("{h}.{p}").as_bytes());
    m.verify_slice(&sig).map_err(|_| "bad signature")?;
    let payload: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).map_err(|_| "malformed payload")?)
            .map_err(|_| "malformed payload")?;
    let obj = payload.as_object().ok_or("malformed payload")?;
    if let Some(exp) = obj.get("exp") {
        if exp.as_i64().is_none_or(|e| e < now_s) {
            return Err("token expired");
        }
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

    #[test]
    fn a_minted_token_verifies_with_its_scopes() {
        let t = mint("k", "alice", &["stock:admin", "x"], 60);
        let c = verify("k", Some(&format!("Bearer {t}")), holdfast::clock::now_s()).unwrap();
        assert_eq!(c.claims["sub"], "alice");
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
        assert_eq!(verify("k", Some(&format!("Bearer {none_header}.{payload}.")), now), Err("unsupported alg"));
        assert!(verify("k", None, now).is_err());
        assert!(verify("k", Some("Bearer a.b"), now).is_err());
        assert!(verify("k", Some(&t), now).is_err());
    }
}
