//! Calls to outside HTTP peers (payment providers, suppliers), hardened the same way for all
//! (docs/deploy.md, "Outbound calls"): HTTPS only — plain HTTP is accepted for a loopback peer,
//! which is what the local stack starts — no redirects followed, and answers read up to a cap,
//! so a compromised or broken peer can neither be bounced elsewhere nor exhaust a function's
//! memory.

use std::time::Duration;

/// Most bytes read from one peer answer.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a peer base URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("peer URL {0:?} must be https:// (http:// only to 127.0.0.1, localhost or [::1])")]
pub struct InsecurePeer(pub String);

/// The base URL without a trailing slash, if it may be called ("" = not configured).
pub fn base_url(url: &str) -> Result<String, InsecurePeer> {
    let base = url.trim_end_matches('/');
    // credentials in the URL are never sent (review security-3 I-9): the bearer credential is
    // the only one, and a userinfo part can disguise the host a reader sees
    let authority =
        base.split_once("://").map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or_default());
    if authority.contains('@') {
        return Err(InsecurePeer(url.to_owned()));
    }
    if base.is_empty() || base.starts_with("https://") {
        return Ok(base.to_owned());
    }
    let host = base.strip_prefix("http://").map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
    // the host without its port: `[::1]:9` → `[::1]`, `127.0.0.1:9` → `127.0.0.1`
    let loopback = host.is_some_and(|h| {
        let name = match h.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => h.split(':').next().unwrap_or_default(),
        };
        matches!(name, "127.0.0.1" | "localhost" | "::1")
    });
    if loopback {
        Ok(base.to_owned())
    } else {
        Err(InsecurePeer(url.to_owned()))
    }
}

/// Installs ring as the process's TLS crypto provider, which reqwest requires before it
/// builds a client (it has none of its own here). Idempotent: a provider already installed
/// stays. Every program that builds a `reqwest::Client` calls this first (the local stack and
/// its peers do).
pub fn install_crypto() {
    // Err = a provider is already installed (an earlier call did it): that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for one peer: its timeouts, never following a redirect. TLS runs on ring, the crypto
/// provider the SDK's HTTP client uses too (`sdk_http`; reqwest is built without one of its own,
/// so no second provider is linked: `deny.toml` bans aws-lc).
pub fn client(timeout: Duration, connect: Duration) -> reqwest::Result<reqwest::Client> {
    install_crypto();
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(connect)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("holdfast/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// `rb` with `Authorization: Bearer <credential>` (security review M3): the peer's current
/// credential, from Secrets Manager in AWS. `None` (a unit test's adapter) sends none; a
/// credential source that answers no key is an error — the call is not made unauthenticated.
pub async fn authorize(
    rb: reqwest::RequestBuilder,
    credential: Option<&dyn crate::ports::WebhookKeys>,
    peer: &str,
) -> anyhow::Result<reqwest::RequestBuilder> {
    let Some(source) = credential else { return Ok(rb) };
    let keys = source.keys().await?;
    let Some(current) = keys.first() else {
        anyhow::bail!("no credential configured for the {peer} (its *_CREDENTIAL_SECRET_ARN)")
    };
    let mut value = reqwest::header::HeaderValue::from_bytes(&[b"Bearer ", current.expose()].concat())
        .map_err(|_| anyhow::anyhow!("the {peer} credential is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(rb.header(reqwest::header::AUTHORIZATION, value))
}

/// The body of an answer, at most [`MAX_ANSWER_BYTES`]; a longer one is an error.
pub async fn body(mut resp: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    if resp.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
        anyhow::bail!("peer answer larger than {MAX_ANSWER_BYTES} bytes");
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() + chunk.len() > MAX_ANSWER_BYTES {
            anyhow::bail!("peer answer larger than {MAX_ANSWER_BYTES} bytes");
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The answer as JSON (capped).
pub async fn json<T: serde::de::DeserializeOwned>(resp: reqwest::Response) -> anyhow::Result<T> {
    Ok(serde_json::from_slice(&body(resp).await?)?)
}

/// The answer as text for an error message (capped, lossy, first 300 characters).
pub async fn text(resp: reqwest::Response) -> String {
    body(resp).await.map(|b| String::from_utf8_lossy(&b).chars().take(300).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-shot HTTP peer on loopback answering `answer` (raw HTTP/1.1).
    async fn peer(answer: Vec<u8>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut c, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf).await;
            let _ = c.write_all(&answer).await;
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed_and_an_oversized_answer_is_refused() {
        let c = client(Duration::from_secs(5), Duration::from_secs(2)).unwrap();
        let to = peer(b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n".to_vec())
            .await;
        let r = c.get(format!("{to}/refunds")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 302, "answered as it came, not followed");
        let big = 2 * MAX_ANSWER_BYTES;
        let mut answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {big}\r\n\r\n").into_bytes();
        answer.extend(std::iter::repeat_n(b'x', big));
        let to = peer(answer).await;
        let r = c.get(to).send().await.unwrap();
        assert!(body(r).await.is_err(), "a 128 KiB answer is refused");
        // no length announced: refused while reading
        let mut answer = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
        answer.extend(std::iter::repeat_n(b'x', big));
        let r = c.get(peer(answer).await).send().await.unwrap();
        assert!(body(r).await.is_err());
    }

    #[test]
    fn only_https_or_a_loopback_peer_is_called() {
        assert_eq!(base_url("https://pay.example.com/v1/").unwrap(), "https://pay.example.com/v1");
        assert_eq!(base_url("").unwrap(), "");
        assert_eq!(base_url("http://127.0.0.1:9001").unwrap(), "http://127.0.0.1:9001");
        assert_eq!(base_url("http://localhost:8080/x").unwrap(), "http://localhost:8080/x");
        assert_eq!(base_url("http://[::1]:9").unwrap(), "http://[::1]:9");
        for bad in [
            "http://pay.example.com",
            "http://127.0.0.1.evil.com",
            "ftp://x",
            "http://localhost.evil:1",
            "pay",
            "https://user:pass@pay.example.com",
            "https://pay.example.com@evil.com/v1",
            "http://127.0.0.1@evil.com",
        ] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
    }
}
