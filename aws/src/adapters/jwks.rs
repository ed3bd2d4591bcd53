//! Who opens a push connection (docs/push.md, "Who may connect"): the buyer's JWT from the
//! `token` query parameter, checked by the `$connect` route as the HTTP API's JWT authorizer
//! checks it — signature against the issuer's published keys (OpenID discovery:
//! `{issuer}/.well-known/openid-configuration` → `jwks_uri`, fetched once per warm Lambda and
//! again for an unknown `kid`, at most once per [`REFETCH_INTERVAL`]), `iss` = `JwtIssuer`,
//! `aud` ∋ `JwtAudience`, `exp`, `nbf`, a `sub`, and the [`REQUIRED_SCOPE`] the HTTP reads ask
//! for. The local stack (and only it: the template never sets `LOCAL_JWT_SECRET`) signs its
//! tokens HS256 with its own key (its issuer and audience are the configured ones there).

use async_trait::async_trait;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The scope a connection needs, as `GET /orders/{id}` and the queue reads do.
pub const REQUIRED_SCOPE: &str = "orders:read";
/// The issuer's keys are fetched again (for a `kid` not in the cached set) at most this often:
/// a token with a made-up `kid` is refused from the cache in between, so unauthenticated
/// connects cannot make every `$connect` a discovery and a JWKS download.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// The claims a connection is opened with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Claims {
    pub sub: String,
}

/// What a token must carry besides `sub`: its scopes, as `scope` (space-separated, or a list) or
/// `scp` (either form), which API Gateway's JWT authorizer both read.
#[derive(serde::Deserialize)]
struct Granted {
    sub: String,
    #[serde(default)]
    scope: Option<serde_json::Value>,
    #[serde(default)]
    scp: Option<serde_json::Value>,
}

impl Granted {
    fn has_scope(&self, want: &str) -> bool {
        [&self.scope, &self.scp].into_iter().flatten().any(|v| match v {
            serde_json::Value::String(s) => s.split_whitespace().any(|g| g == want),
            serde_json::Value::Array(a) => a.iter().any(|g| g.as_str() == Some(want)),
            _ => false,
        })
    }
}

/// Where the issuer's keys come from (OpenID discovery over HTTPS; a fake in tests).
#[async_trait]
pub trait KeySource: Send + Sync {
    async fn fetch(&self) -> anyhow::Result<JwkSet>;
}

/// The issuer's published keys: `{issuer}/.well-known/openid-configuration` → `jwks_uri`.
pub struct Discovery {
    issuer: String,
}

#[async_trait]
impl KeySource for Discovery {
    async fn fetch(&self) -> anyhow::Result<JwkSet> {
        #[derive(serde::Deserialize)]
        struct Document {
            jwks_uri: String,
        }
        let client = super::outbound::client(Duration::from_secs(3), Duration::from_secs(2))?;
        let base = self.issuer.trim_end_matches('/');
        let d: Document = success(client.get(format!("{base}/.well-known/openid-configuration")).send().await?).await?;
        success(client.get(&d.jwks_uri).send().await?).await
    }
}

/// A 2xx answer read as JSON (up to `outbound::MAX_ANSWER_BYTES`); any other status an error.
async fn success<T: serde::de::DeserializeOwned>(answer: super::outbound::Answer) -> anyhow::Result<T> {
    let status = answer.status();
    if !status.is_success() {
        anyhow::bail!("the issuer answered {status}");
    }
    super::outbound::json(answer).await
}

/// The cached key set and when it was last asked for (successfully or not).
#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    asked_at: Option<Instant>,
}

pub struct TokenCheck {
    issuer: String,
    audience: String,
    local_secret: Option<String>,
    source: Arc<dyn KeySource>,
    refetch_interval: Duration,
    keys: Mutex<Keys>,
}

fn validation(alg: Algorithm, issuer: &str, audience: &str) -> Validation {
    let mut v = Validation::new(alg);
    v.leeway = 0;
    // off by default in jsonwebtoken; API Gateway's authorizer refuses a token before its nbf
    v.validate_nbf = true;
    v.set_issuer(&[issuer]);
    v.set_audience(&[audience]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    v
}

impl TokenCheck {
    /// `local_secret` non-empty: the local stack's HS256 tokens; else the issuer's keys, by
    /// OpenID discovery.
    pub fn new(issuer: &str, audience: &str, local_secret: &str) -> Self {
        let source = Arc::new(Discovery { issuer: issuer.to_owned() });
        Self::with_source(issuer, audience, local_secret, source, REFETCH_INTERVAL)
    }

    /// As [`TokenCheck::new`], the keys from `source`, fetched again at most every `refetch_interval`.
    pub fn with_source(
        issuer: &str,
        audience: &str,
        local_secret: &str,
        source: Arc<dyn KeySource>,
        refetch_interval: Duration,
    ) -> Self {
        TokenCheck {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            local_secret: (!local_secret.is_empty()).then(|| local_secret.to_owned()),
            source,
            refetch_interval,
            keys: Mutex::new(Keys::default()),
        }
    }

    /// The token's buyer, or why it is refused (`Ok(Err)`); `Err` when the issuer's keys could
    /// not be fetched.
    pub async fn check(&self, token: &str) -> anyhow::Result<Result<Claims, String>> {
        if let Some(secret) = &self.local_secret {
            let key = DecodingKey::from_secret(secret.as_bytes())?;
            return Ok(self.decode(token, &key, Algorithm::HS256));
        }
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return Ok(Err(format!("malformed token: {e}"))),
        };
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Ok(Err(format!("algorithm {:?} not accepted", header.alg)));
        }
        // no key id matches no published key: refused without asking the issuer
        let Some(kid) = header.kid.filter(|k| !k.is_empty()) else { return Ok(Err("token has no key id".into())) };
        let jwk = match self.cached(&kid) {
            Some(j) => Some(j),
            None => self.refetch(&kid).await?,
        };
        let Some(jwk) = jwk else { return Ok(Err(format!("unknown key id {kid:?}"))) };
        let key = match DecodingKey::from_jwk(&jwk) {
            Ok(k) => k,
            Err(e) => return Ok(Err(format!("unusable key {kid:?}: {e}"))),
        };
        Ok(self.decode(token, &key, header.alg))
    }

    fn decode(&self, token: &str, key: &DecodingKey, alg: Algorithm) -> Result<Claims, String> {
        let v = validation(alg, &self.issuer, &self.audience);
        let data = jsonwebtoken::decode::<Granted>(token, key, &v).map_err(|e| format!("refused: {e}"))?;
        if data.claims.sub.is_empty() {
            return Err("token has no sub".into());
        }
        if !data.claims.has_scope(REQUIRED_SCOPE) {
            return Err(format!("token lacks the scope {REQUIRED_SCOPE}"));
        }
        Ok(Claims { sub: data.claims.sub })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cached(&self, kid: &str) -> Option<Jwk> {
        self.lock().set.as_ref().and_then(|s| s.find(kid).cloned())
    }

    /// `kid` from a fresh key set, unless the set was asked for less than `refetch_interval`
    /// ago (`None`: unknown). The time is taken before the fetch, so concurrent checks of one
    /// warm Lambda fetch once; a failed fetch counts too (an issuer that is down is not asked
    /// on every connect), and with no set ever fetched the check fails until the next try.
    async fn refetch(&self, kid: &str) -> anyhow::Result<Option<Jwk>> {
        {
            let mut k = self.lock();
            if k.asked_at.is_some_and(|t| t.elapsed() < self.refetch_interval) {
                anyhow::ensure!(
                    k.set.is_some(),
                    "the issuer's keys are not available (asked again at most every {:?})",
                    self.refetch_interval
                );
                return Ok(None);
            }
            k.asked_at = Some(Instant::now());
        }
        let set = self.source.fetch().await?;
        let jwk = set.find(kid).cloned();
        self.lock().set = Some(set);
        Ok(jwk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const SCOPES: &str = "orders:read orders:write";

    fn mint(secret: &str, claims: serde_json::Value) -> String {
        let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::new(Algorithm::HS256), &claims, &key).unwrap()
    }

    fn local(claims: serde_json::Value) -> String {
        let mut c = serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast","scope":SCOPES,
                                       "exp":crate::clock::now_s() + 60});
        for (k, v) in claims.as_object().unwrap() {
            c[k] = v.clone();
        }
        mint("k", c)
    }

    #[tokio::test]
    async fn the_local_check_takes_the_stacks_own_tokens_only() {
        let check = TokenCheck::new("holdfast-local", "holdfast", "k");
        let exp = crate::clock::now_s() + 60;
        let good = local(serde_json::json!({}));
        assert_eq!(check.check(&good).await.unwrap(), Ok(Claims { sub: "alice".into() }));
        let forged = mint(
            "other",
            serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast","scope":SCOPES,"exp":exp}),
        );
        assert!(check.check(&forged).await.unwrap().is_err());
        assert!(check.check(&local(serde_json::json!({"exp":1}))).await.unwrap().is_err());
        assert!(check.check(&local(serde_json::json!({"iss":"elsewhere"}))).await.unwrap().is_err());
        assert!(check.check(&local(serde_json::json!({"sub":""}))).await.unwrap().is_err());
        assert!(check.check("not.a.jwt").await.unwrap().is_err());
    }

    #[tokio::test]
    async fn a_token_not_valid_yet_is_refused() {
        let check = TokenCheck::new("holdfast-local", "holdfast", "k");
        let now = crate::clock::now_s();
        let later = local(serde_json::json!({"nbf": now + 300}));
        assert!(check.check(&later).await.unwrap().unwrap_err().contains("ImmatureSignature"));
        let reached = local(serde_json::json!({"nbf": now - 1}));
        assert!(check.check(&reached).await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_connection_needs_the_orders_read_scope() {
        let check = TokenCheck::new("holdfast-local", "holdfast", "k");
        for scope in [serde_json::json!("orders:write"), serde_json::json!(""), serde_json::json!("orders:readx")] {
            let t = local(serde_json::json!({ "scope": scope }));
            assert!(check.check(&t).await.unwrap().unwrap_err().contains("orders:read"), "{scope}");
        }
        let mut no_scope = serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast"});
        no_scope["exp"] = (crate::clock::now_s() + 60).into();
        assert!(check.check(&mint("k", no_scope)).await.unwrap().is_err());
        // as API Gateway reads them: `scope` or `scp`, a string or a list
        for claims in [
            serde_json::json!({"scope": "stock:admin orders:read"}),
            serde_json::json!({"scope": ["orders:read"]}),
            serde_json::json!({"scope": null, "scp": "orders:read"}),
        ] {
            assert!(check.check(&local(claims.clone())).await.unwrap().is_ok(), "{claims}");
        }
    }

    #[tokio::test]
    async fn the_issuers_check_refuses_a_symmetric_token_before_fetching_anything() {
        let check = TokenCheck::new("https://idp.invalid", "holdfast", "");
        let t = mint("k", serde_json::json!({"sub":"alice","iss":"https://idp.invalid","aud":"holdfast","exp":4e9}));
        assert!(check.check(&t).await.unwrap().unwrap_err().contains("not accepted"));
    }

    /// The issuer's key set (one P-256 public key, `k1`), counting how often it is asked for.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    #[async_trait]
    impl KeySource for Counting {
        async fn fetch(&self) -> anyhow::Result<JwkSet> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(serde_json::from_value(serde_json::json!({"keys": [{
                "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                "x": "A4m1Xip5AB-VtF3GDtKTyx2BppO3mcqwAFVFJXHHUa8",
                "y": "tyr_JhOoFiYe-KHpRREab9W1dOgVKf92SeuQOv93qJE"}]}))?)
        }
    }

    /// A token whose header names `kid` (ES256); its signature is nobody's.
    fn es256(kid: Option<&str>) -> String {
        let mut h = serde_json::json!({"alg": "ES256", "typ": "JWT"});
        if let Some(k) = kid {
            h["kid"] = k.into();
        }
        use base64::Engine as _;
        let b64 = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let claims = serde_json::json!({"sub":"mallory","iss":"https://idp.invalid","aud":"holdfast","exp":4e9});
        format!("{}.{}.{}", b64(&h), b64(&claims), "c2lnbmF0dXJl")
    }

    #[tokio::test]
    async fn unknown_key_ids_fetch_the_issuers_keys_at_most_once_per_interval() {
        let source = Arc::new(Counting::default());
        let check = TokenCheck::with_source("https://idp.invalid", "holdfast", "", source.clone(), REFETCH_INTERVAL);
        // the first connect fetches the set; a made-up kid is refused
        assert!(check.check(&es256(Some("random-0"))).await.unwrap().unwrap_err().contains("unknown key id"));
        assert_eq!(source.0.load(Ordering::SeqCst), 1);
        // a stream of made-up (or missing) kids within the interval: refused from the cache
        for i in 1..50 {
            assert!(check.check(&es256(Some(&format!("random-{i}")))).await.unwrap().is_err());
            assert!(check.check(&es256(None)).await.unwrap().unwrap_err().contains("no key id"));
        }
        // the known key is used from the cache (this signature is nobody's: refused by it)
        assert!(check.check(&es256(Some("k1"))).await.unwrap().unwrap_err().starts_with("refused"));
        assert_eq!(source.0.load(Ordering::SeqCst), 1);

        // once the interval has passed, an unknown kid asks again (once per unknown kid here)
        let eager = Arc::new(Counting::default());
        let check = TokenCheck::with_source("https://idp.invalid", "holdfast", "", eager.clone(), Duration::ZERO);
        for i in 0..3 {
            assert!(check.check(&es256(Some(&format!("new-{i}")))).await.unwrap().is_err());
        }
        assert!(check.check(&es256(Some("k1"))).await.unwrap().is_err());
        assert_eq!(eager.0.load(Ordering::SeqCst), 3);
    }
}
