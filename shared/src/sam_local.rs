//! The JWT authorizer `sam local start-api` does not have. SAM CLI emulates Lambda authorizers
//! but not HTTP API JWT authorizers: a request reaches the function with its `Authorization`
//! header and no `requestContext.authorizer`, so every user route would answer 401 and every
//! admin route would be open. Under `sam local` only — SAM sets `AWS_SAM_LOCAL=true` in every
//! function container — the Lambda entry point plays API Gateway's part: it verifies the local
//! HS256 token (the rules of the local stack's authorizer, `infra/src/auth.rs`), checks the
//! route's scopes, and puts the claims where the handlers read them (`http::subject`).
//!
//! Anywhere else (AWS, the in-process local stack, the tests) the gate is off and a request is
//! passed on untouched: in AWS, API Gateway has already authorised it, and a token in the header
//! must never be trusted on this code's word.

use crate::api::Auth;
use crate::handlers::Route;
use crate::http::{Request, Response};
use aws_lambda_events::apigw::{ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use std::collections::HashMap;

/// Set to `true` by SAM CLI in the containers of `sam local invoke` / `start-api`.
pub const SAM_LOCAL_VAR: &str = "AWS_SAM_LOCAL";
/// The HS256 key; the local stack and `holdfast-local token` use the same variable and default.
pub const SECRET_VAR: &str = "LOCAL_JWT_SECRET";
pub const DEFAULT_SECRET: &str = "holdfast-local-jwt-secret";
/// The issuer and audience of local tokens: what the local stack and `sam local` give the
/// template's `JwtIssuer` and `JwtAudience` parameters (they have no default in the template:
/// every deployment names its own identity provider). `infra/src/auth.rs` uses the same.
pub const LOCAL_ISSUER: &str = "holdfast-local";
pub const LOCAL_AUDIENCE: &str = "holdfast";

/// What API Gateway demands before a route's function runs, as `template.yaml` declares it
/// (`tests/tests/sam_local_routes.rs` holds this table to the template).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteAuth {
    /// `Auth: {Authorizer: NONE}`.
    Public,
    /// The JWT authorizer, with the route's `AuthorizationScopes` (any one of them suffices).
    Jwt(&'static [&'static str]),
}

/// What API Gateway demands of a route, from its row in `routes` (`handlers::routes`; a function
/// passes only its own, so its binary links no other function's handlers): a signed webhook and
/// a public read need no token. A route no row names needs a token with no particular scope:
/// closed by default.
pub fn route_auth(routes: &'static [Route], route_key: &str) -> RouteAuth {
    match routes.iter().find(|r| r.key == route_key).map(|r| &r.auth) {
        Some(Auth::Public | Auth::Signed(_)) => RouteAuth::Public,
        Some(Auth::Scope(s)) => RouteAuth::Jwt(std::slice::from_ref(s)),
        Some(Auth::AnyScope(s)) => RouteAuth::Jwt(s),
        Some(Auth::User) | None => RouteAuth::Jwt(&[]),
    }
}

/// Every route's authorization as `sam local` plays it (held to `template.yaml` by
/// `tests/tests/sam_local_routes.rs`).
pub fn route_auth_table() -> Vec<(&'static str, RouteAuth)> {
    crate::handlers::ROUTES.iter().flat_map(|(_, rs)| rs.iter().map(|r| (r.key, route_auth(rs, r.key)))).collect()
}

/// The gate, configured once per process.
#[derive(Debug, Clone)]
pub struct Gate {
    enabled: bool,
    secret: String,
}

impl Gate {
    pub fn from_env() -> Gate {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    /// On only when `AWS_SAM_LOCAL` is exactly `true`, as SAM CLI sets it.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Gate {
        Gate {
            enabled: get(SAM_LOCAL_VAR).as_deref() == Some("true"),
            secret: get(SECRET_VAR).filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_SECRET.to_owned()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The request to hand to the handler, or the answer API Gateway would give instead
    /// (401 / 403 with its `{"message"}` body).
    pub fn check(&self, mut req: Request, now_s: i64, routes: &'static [Route]) -> Result<Request, Box<Response>> {
        // An event that already carries an authorizer (a `sam local invoke` fixture) is taken as
        // Lambda would take it.
        if !self.enabled || req.request_context.authorizer.is_some() {
            return Ok(req);
        }
        let RouteAuth::Jwt(scopes) = route_auth(routes, crate::http::route(&req)) else {
            return Ok(req);
        };
        let Ok((claims, granted)) = verify(&self.secret, crate::http::header(&req, "authorization"), now_s) else {
            return Err(gateway_error(401, "Unauthorized"));
        };
        if !scopes.is_empty() && !scopes.iter().any(|s| granted.iter().any(|g| g == s)) {
            return Err(gateway_error(403, "Forbidden"));
        }
        req.request_context.authorizer = Some(ApiGatewayRequestAuthorizer {
            jwt: Some(ApiGatewayRequestAuthorizerJwtDescription { claims, scopes: Some(granted) }),
            ..Default::default()
        });
        Ok(req)
    }
}

fn gateway_error(status: u16, message: &str) -> Box<Response> {
    Box::new(crate::http::json_response(status, &serde_json::json!({ "message": message })))
}

/// `Authorization: Bearer <HS256 JWT>` → (claims as strings, as API Gateway passes them; scopes).
/// What API Gateway's JWT authorizer checks, at `now_s`: three parts; the header's `alg` exactly
/// `HS256` (`none` and every other algorithm refused); the signature, compared in constant time;
/// `exp` an integer not past, `nbf` (if any) reached, `iss` the configured issuer (one string),
/// `aud` the configured audience or a list containing it, `sub` a non-empty string. Written here
/// rather than by a JWT crate, which would link every algorithm's verifier into every HTTP
/// function for a check that runs only under `sam local`; the tests hold it to jsonwebtoken's
/// tokens and refusals.
fn verify(
    secret: &str,
    authorization: Option<&str>,
    now_s: i64,
) -> Result<(HashMap<String, String>, Vec<String>), &'static str> {
    use hmac::{KeyInit, Mac};
    let token = authorization
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .ok_or("missing bearer token")?
        .trim();
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed token");
    };
    let alg = json_part(header)?.get("alg").and_then(|a| a.as_str().map(str::to_owned));
    if alg.as_deref() != Some("HS256") {
        return Err("unsupported alg");
    }
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| "malformed token")?;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| "bad key")?;
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    mac.verify_slice(&signature).map_err(|_| "bad signature")?;
    let obj = json_part(payload)?;
    if obj.get("exp").and_then(serde_json::Value::as_i64).is_none_or(|e| e < now_s) {
        return Err("token expired or without exp");
    }
    if obj.get("nbf").is_some_and(|n| n.as_i64().is_none_or(|n| n > now_s)) {
        return Err("token not yet valid");
    }
    if obj.get("iss").and_then(|s| s.as_str()) != Some(LOCAL_ISSUER) {
        return Err("wrong issuer");
    }
    let audience = |a: &serde_json::Value| a.as_str() == Some(LOCAL_AUDIENCE);
    if !obj.get("aud").is_some_and(|a| audience(a) || a.as_array().is_some_and(|l| l.iter().any(audience))) {
        return Err("wrong audience");
    }
    if obj.get("sub").and_then(|s| s.as_str()).is_none_or(str::is_empty) {
        return Err("token has no sub");
    }
    let claims: HashMap<String, String> =
        obj.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect();
    let scopes = claims
        .get("scope")
        .or_else(|| claims.get("scp"))
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    Ok((claims, scopes))
}

/// A token's header or payload: base64url without padding, holding a JSON object.
fn json_part(part: &str) -> Result<serde_json::Map<String, serde_json::Value>, &'static str> {
    let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| "malformed token")?;
    serde_json::from_slice(&bytes).map_err(|_| "malformed token")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every function's rows: the gate of a function holds only its own.
    fn every() -> &'static [Route] {
        Box::leak(crate::handlers::routes::all().copied().collect::<Vec<_>>().into_boxed_slice())
    }
    use hmac::{Hmac, KeyInit, Mac};
    use http::HeaderValue;
    use sha2::Sha256;

    const NOW: i64 = 1_700_000_000;

    fn token(secret: &str, payload: serde_json::Value) -> String {
        let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let p = URL_SAFE_NO_PAD.encode(payload.to_string());
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{h}.{p}").as_bytes());
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    /// `extra` with a valid `exp`, `iss` and `aud` (unless `extra` sets them).
    fn claims(extra: serde_json::Value) -> serde_json::Value {
        let mut c = serde_json::json!({"exp": NOW + 60, "iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE});
        c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        c.as_object_mut().unwrap().retain(|_, v| !v.is_null());
        c
    }

    fn alice(scope: &str) -> String {
        token(DEFAULT_SECRET, claims(serde_json::json!({"sub": "alice", "scope": scope})))
    }

    fn req(route: &str, bearer: Option<&str>) -> Request {
        let mut r = Request { route_key: Some(route.into()), ..Default::default() };
        if let Some(t) = bearer {
            r.headers.insert("authorization", HeaderValue::from_str(&format!("Bearer {t}")).unwrap());
        }
        r
    }

    fn sam_local() -> Gate {
        Gate::from_lookup(&|k| (k == SAM_LOCAL_VAR).then(|| "true".into()))
    }

    fn status(r: Result<Request, Box<Response>>) -> i64 {
        r.err().map_or(200, |resp| resp.status_code)
    }

    #[test]
    fn the_gate_is_off_unless_aws_sam_local_is_exactly_true() {
        for v in [None, Some(""), Some("false"), Some("1"), Some("TRUE"), Some("yes")] {
            let gate = Gate::from_lookup(&|k| if k == SAM_LOCAL_VAR { v.map(str::to_owned) } else { None });
            assert!(!gate.enabled(), "{v:?}");
            // Off, a valid token is not turned into claims (only API Gateway may do that) ...
            let passed = gate.check(req("POST /orders", Some(&alice("orders:write"))), NOW, every()).unwrap();
            assert!(passed.request_context.authorizer.is_none(), "{v:?}");
            assert!(crate::http::subject(&passed).is_err());
            // ... and a missing token is not refused here: API Gateway has already decided.
            assert!(gate.check(req("PUT /admin/skus/{sku}", None), NOW, every()).is_ok(), "{v:?}");
        }
        assert!(sam_local().enabled());
    }

    #[test]
    fn under_sam_local_a_valid_token_becomes_the_claims_the_handlers_read() {
        let r = sam_local().check(req("GET /orders/{order_id}", Some(&alice("orders:read"))), NOW, every()).unwrap();
        assert_eq!(crate::http::subject(&r).unwrap().as_str(), "alice");
        let admin =
            sam_local().check(req("PUT /admin/skus/{sku}", Some(&alice("x stock:admin"))), NOW, every()).unwrap();
        let jwt = admin.request_context.authorizer.unwrap().jwt.unwrap();
        assert_eq!(jwt.scopes, Some(vec!["x".to_owned(), "stock:admin".to_owned()]));
    }

    #[test]
    fn under_sam_local_bad_tokens_get_401_and_missing_scopes_403_as_from_api_gateway() {
        let gate = sam_local();
        assert_eq!(status(gate.check(req("POST /orders", None), NOW, every())), 401);
        assert_eq!(status(gate.check(req("POST /orders", Some("a.b")), NOW, every())), 401);
        let forged = token("another-key", claims(serde_json::json!({"sub": "alice", "scope": "orders:write"})));
        assert_eq!(status(gate.check(req("POST /orders", Some(&forged)), NOW, every())), 401);
        assert_eq!(
            status(gate.check(req("POST /orders", Some(&alice("orders:write"))), NOW + 120, every())),
            401,
            "expired"
        );
        let none =
            format!("{}.{}.", URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#), alice("").split('.').nth(1).unwrap());
        assert_eq!(status(gate.check(req("POST /orders", Some(&none)), NOW, every())), 401, "alg none");
        let no_sub = token(DEFAULT_SECRET, claims(serde_json::json!({})));
        assert_eq!(status(gate.check(req("POST /orders", Some(&no_sub)), NOW, every())), 401);
        let with = |extra: serde_json::Value| {
            let mut c = serde_json::json!({"sub": "alice", "scope": "orders:write"});
            c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let t = token(DEFAULT_SECRET, claims(c));
            status(gate.check(req("POST /orders", Some(&t)), NOW, every()))
        };
        assert_eq!(with(serde_json::json!({})), 200);
        assert_eq!(with(serde_json::json!({"exp": null})), 401, "no exp");
        assert_eq!(with(serde_json::json!({"iss": "someone-else"})), 401, "wrong iss");
        assert_eq!(with(serde_json::json!({"iss": null})), 401, "no iss");
        assert_eq!(with(serde_json::json!({"aud": "another-api"})), 401, "wrong aud");
        assert_eq!(with(serde_json::json!({"aud": ["another-api", LOCAL_AUDIENCE]})), 200, "aud list");
        assert_eq!(with(serde_json::json!({"nbf": NOW + 30})), 401, "not yet valid");
        assert_eq!(
            status(gate.check(req("PUT /admin/skus/{sku}", Some(&alice("reservations:write"))), NOW, every())),
            403
        );
        assert_eq!(status(gate.check(req("POST /orders", Some(&alice("orders:read"))), NOW, every())), 403);
        assert_eq!(
            status(gate.check(req("POST /no/such/route", Some(&alice(""))), NOW, every())),
            200,
            "closed, not open"
        );
        assert_eq!(status(gate.check(req("POST /no/such/route", None), NOW, every())), 401);
    }

    /// The refusals one by one, with the answer for each; tokens signed by hand (`token`) and by
    /// jsonwebtoken (other algorithms), so neither side checks itself.
    #[test]
    fn verify_accepts_only_a_good_hs256_token_for_this_audience_and_issuer() {
        let bearer = |t: &str| format!("Bearer {t}");
        let good = alice("orders:read");
        let (got, scopes) = verify(DEFAULT_SECRET, Some(&bearer(&good)), NOW).unwrap();
        assert_eq!(got["sub"], "alice");
        assert_eq!(got["exp"], (NOW + 60).to_string());
        assert_eq!(scopes, vec!["orders:read".to_owned()]);
        assert_eq!(verify(DEFAULT_SECRET, Some(&bearer(&good)), NOW + 60).map(|_| ()), Ok(()), "exp is inclusive");
        assert_eq!(verify(DEFAULT_SECRET, Some(&bearer(&good)), NOW + 61).err(), Some("token expired or without exp"));
        assert_eq!(verify("another-key", Some(&bearer(&good)), NOW).err(), Some("bad signature"));
        let payload = good.split('.').nth(1).unwrap();
        for header in [r#"{"alg":"none"}"#, r#"{"alg":"none","typ":"JWT"}"#, r#"{"alg":"HS256"}"#] {
            let unsigned = format!("{}.{payload}.", URL_SAFE_NO_PAD.encode(header));
            assert!(verify(DEFAULT_SECRET, Some(&bearer(&unsigned)), NOW).is_err(), "{header}");
        }
        let key = jsonwebtoken::EncodingKey::from_secret(DEFAULT_SECRET.as_bytes()).unwrap();
        let body = claims_of(&good);
        for alg in [jsonwebtoken::Algorithm::HS384, jsonwebtoken::Algorithm::HS512] {
            let t = jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), &body, &key).unwrap();
            assert_eq!(verify(DEFAULT_SECRET, Some(&bearer(&t)), NOW).err(), Some("unsupported alg"), "{alg:?}");
        }
        let hs256 = jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256), &body, &key);
        assert!(verify(DEFAULT_SECRET, Some(&bearer(&hs256.unwrap())), NOW).is_ok(), "jsonwebtoken's own HS256");
        let with = |extra: serde_json::Value| {
            let mut c = serde_json::json!({"sub": "alice"});
            c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            verify(DEFAULT_SECRET, Some(&bearer(&token(DEFAULT_SECRET, claims(c)))), NOW).err()
        };
        assert_eq!(with(serde_json::json!({"aud": "another-api"})), Some("wrong audience"));
        assert_eq!(with(serde_json::json!({"aud": null})), Some("wrong audience"));
        assert_eq!(with(serde_json::json!({"aud": []})), Some("wrong audience"));
        assert_eq!(with(serde_json::json!({"iss": "someone-else"})), Some("wrong issuer"));
        assert_eq!(with(serde_json::json!({"iss": [LOCAL_ISSUER]})), Some("wrong issuer"), "iss is one string");
        assert_eq!(with(serde_json::json!({"exp": null})), Some("token expired or without exp"));
        assert_eq!(with(serde_json::json!({"exp": "soon"})), Some("token expired or without exp"));
        assert_eq!(with(serde_json::json!({"nbf": NOW + 1})), Some("token not yet valid"));
        assert_eq!(with(serde_json::json!({"nbf": NOW})), None);
        assert_eq!(with(serde_json::json!({"sub": ""})), Some("token has no sub"));
        assert_eq!(with(serde_json::json!({"sub": null})), Some("token has no sub"));
        assert_eq!(verify(DEFAULT_SECRET, Some(&good), NOW).err(), Some("missing bearer token"));
        assert!(verify(DEFAULT_SECRET, Some(&bearer(&format!("{good}.x"))), NOW).is_err(), "four parts");
    }

    fn claims_of(token: &str) -> serde_json::Value {
        let p = token.split('.').nth(1).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn under_sam_local_public_routes_and_events_with_an_authorizer_pass_as_they_are() {
        let gate = sam_local();
        let r = gate.check(req("GET /skus/{sku}", None), NOW, every()).unwrap();
        assert!(r.request_context.authorizer.is_none());
        assert!(gate.check(req("POST /payments/callback", None), NOW, every()).is_ok());
        let mut fixture = req("POST /orders", None);
        fixture.request_context.authorizer = Some(ApiGatewayRequestAuthorizer::default());
        assert!(gate.check(fixture, NOW, every()).is_ok());
    }
}
