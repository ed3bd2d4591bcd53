//! Who opens a push connection (docs/push.md, "Who may connect"): the buyer's JWT from the
//! `token` query parameter, checked by the `$connect` route as the HTTP API's JWT authorizer
//! checks it — signature against the issuer's published keys (OpenID discovery:
//! `{issuer}/.well-known/openid-configuration` → `jwks_uri`, fetched once per warm Lambda and
//! again for an unknown `kid`), `iss` = `JwtIssuer`, `aud` ∋ `JwtAudience`, `exp`, `nbf`, a
//! `sub`. The local stack (and only it: the template never sets `LOCAL_JWT_SECRET`) signs its
//! tokens HS256 with its own key (its issuer and audience are the configured ones there).

use jsonwebtoken::{jwk::JwkSet, Algorithm, DecodingKey, Validation};
use std::sync::Mutex;
use std::time::Duration;

/// The claims a connection is opened with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Claims {
    pub sub: String,
}

pub struct TokenCheck {
    issuer: String,
    audience: String,
    local_secret: Option<String>,
    keys: Mutex<Option<JwkSet>>,
}

fn validation(alg: Algorithm, issuer: &str, audience: &str) -> Validation {
    let mut v = Validation::new(alg);
    v.leeway = 0;
    v.set_issuer(&[issuer]);
    v.set_audience(&[audience]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    v
}

impl TokenCheck {
    /// `local_secret` non-empty: the local stack's HS256 tokens; else the issuer's keys.
    pub fn new(issuer: &str, audience: &str, local_secret: &str) -> Self {
        TokenCheck {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            local_secret: (!local_secret.is_empty()).then(|| local_secret.to_owned()),
            keys: Mutex::new(None),
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
        let kid = header.kid.unwrap_or_default();
        let mut jwk = self.cached(&kid);
        if jwk.is_none() {
            let set = self.fetch().await?;
            jwk = set.find(&kid).cloned();
            *self.keys.lock().unwrap_or_else(|e| e.into_inner()) = Some(set);
        }
        let Some(jwk) = jwk else { return Ok(Err(format!("unknown key id {kid:?}"))) };
        let key = match DecodingKey::from_jwk(&jwk) {
            Ok(k) => k,
            Err(e) => return Ok(Err(format!("unusable key {kid:?}: {e}"))),
        };
        Ok(self.decode(token, &key, header.alg))
    }

    fn decode(&self, token: &str, key: &DecodingKey, alg: Algorithm) -> Result<Claims, String> {
        let v = validation(alg, &self.issuer, &self.audience);
        let data = jsonwebtoken::decode::<Claims>(token, key, &v).map_err(|e| format!("refused: {e}"))?;
        if data.claims.sub.is_empty() {
            return Err("token has no sub".into());
        }
        Ok(data.claims)
    }

    fn cached(&self, kid: &str) -> Option<jsonwebtoken::jwk::Jwk> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|s| s.find(kid).cloned())
    }

    /// The issuer's key set, by OpenID discovery.
    async fn fetch(&self) -> anyhow::Result<JwkSet> {
        #[derive(serde::Deserialize)]
        struct Discovery {
            jwks_uri: String,
        }
        let client = super::outbound::client(Duration::from_secs(3), Duration::from_secs(2))?;
        let base = self.issuer.trim_end_matches('/');
        let d: Discovery = client
            .get(format!("{base}/.well-known/openid-configuration"))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(client.get(&d.jwks_uri).send().await?.error_for_status()?.json().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mint(secret: &str, claims: serde_json::Value) -> String {
        let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()).unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::new(Algorithm::HS256), &claims, &key).unwrap()
    }

    #[tokio::test]
    async fn the_local_check_takes_the_stacks_own_tokens_only() {
        let check = TokenCheck::new("holdfast-local", "holdfast", "k");
        let exp = crate::clock::now_s() + 60;
        let good = mint("k", serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast","exp":exp}));
        assert_eq!(check.check(&good).await.unwrap(), Ok(Claims { sub: "alice".into() }));
        let forged =
            mint("other", serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast","exp":exp}));
        assert!(check.check(&forged).await.unwrap().is_err());
        let expired = mint("k", serde_json::json!({"sub":"alice","iss":"holdfast-local","aud":"holdfast","exp":1}));
        assert!(check.check(&expired).await.unwrap().is_err());
        let other_issuer = mint("k", serde_json::json!({"sub":"ann","iss":"elsewhere","aud":"holdfast","exp":exp}));
        assert!(check.check(&other_issuer).await.unwrap().is_err());
        let no_sub = mint("k", serde_json::json!({"sub":"","iss":"holdfast-local","aud":"holdfast","exp":exp}));
        assert!(check.check(&no_sub).await.unwrap().is_err());
        assert!(check.check("not.a.jwt").await.unwrap().is_err());
    }

    #[tokio::test]
    async fn the_issuers_check_refuses_a_symmetric_token_before_fetching_anything() {
        let check = TokenCheck::new("https://idp.invalid", "holdfast", "");
        let t = mint("k", serde_json::json!({"sub":"alice","iss":"https://idp.invalid","aud":"holdfast","exp":4e9}));
        assert!(check.check(&t).await.unwrap().unwrap_err().contains("not accepted"));
    }
}
