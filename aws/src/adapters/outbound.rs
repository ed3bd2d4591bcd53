//! Calls to outside HTTP peers (payment providers, suppliers), hardened the same way for all
//! (docs/deploy.md, "Outbound calls"): HTTPS only — plain HTTP is accepted for a loopback peer,
//! which is what the local stack starts — no redirects followed, and answers read up to a cap,
//! so a compromised or broken peer can neither be bounced elsewhere nor exhaust a function's
//! memory.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client as Pool;
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

/// Installs ring as the process's TLS crypto provider, which reqwest requires before it builds a
/// client (the local stack, its peers and the tests use reqwest; the functions do not).
/// Idempotent: a provider already installed stays.
pub fn install_crypto() {
    // Err = a provider is already installed (an earlier call did it): that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for one peer: `timeout` for a whole call (connect, send, and reading the answer),
/// `connect` for the connection alone; never following a redirect. Its connections are HTTP/1.1
/// made as the SDK's are (`https::connector`: TLS on ring with the system's roots), so
/// a function links one HTTP stack; the pool is kept for the warm Lambda's next call.
pub fn client(timeout: Duration, connect: Duration) -> anyhow::Result<Client> {
    let pool = super::https::pool(super::https::connector(Some(connect), None)?);
    Ok(Client { pool, timeout })
}

/// HTTP calls to one peer (see [`client`]); cloning shares its connections.
#[derive(Clone, Debug)]
pub struct Client {
    pool: Pool<HttpsConnector<TcpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl Client {
    /// A call of `method` to `url`, sent by [`Call::send`].
    pub fn request(&self, method: Method, url: impl AsRef<str>) -> Call {
        let url = url::Url::parse(url.as_ref()).map_err(|e| anyhow::anyhow!("bad peer URL {:?}: {e}", url.as_ref()));
        let mut headers = HeaderMap::new();
        headers.insert(header::USER_AGENT, HeaderValue::from_static(concat!("holdfast/", env!("CARGO_PKG_VERSION"))));
        Call { client: self.clone(), method, url, headers, body: Bytes::new() }
    }

    pub fn get(&self, url: impl AsRef<str>) -> Call {
        self.request(Method::GET, url)
    }

    pub fn post(&self, url: impl AsRef<str>) -> Call {
        self.request(Method::POST, url)
    }
}

/// One call being built; the first thing wrong with it (a bad URL, header or body) is its
/// error when it is sent, and nothing is sent.
pub struct Call {
    client: Client,
    method: Method,
    url: anyhow::Result<url::Url>,
    headers: HeaderMap,
    body: Bytes,
}

impl Call {
    /// With header `name: value` (a value that cannot be a header fails the call).
    pub fn header(mut self, name: &'static str, value: impl AsRef<str>) -> Call {
        match HeaderValue::from_str(value.as_ref()) {
            Ok(v) => {
                self.headers.insert(name, v);
            }
            Err(_) => self.url = Err(anyhow::anyhow!("header {name} cannot hold the value given")),
        }
        self
    }

    /// With `Authorization: Bearer <secret>`, marked sensitive (never logged by hyper).
    pub fn bearer(mut self, secret: &[u8]) -> Call {
        match HeaderValue::from_bytes(&[b"Bearer ", secret].concat()) {
            Ok(mut v) => {
                v.set_sensitive(true);
                self.headers.insert(header::AUTHORIZATION, v);
            }
            Err(_) => self.url = Err(anyhow::anyhow!("the credential is not a valid header value")),
        }
        self
    }

    /// With `pairs` appended to the URL's query, form-encoded.
    pub fn query<K: AsRef<str>, V: AsRef<str>>(mut self, pairs: &[(K, V)]) -> Call {
        if let Ok(url) = &mut self.url {
            url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
        }
        self
    }

    /// With `pairs` as an `application/x-www-form-urlencoded` body.
    pub fn form<K: AsRef<str>, V: AsRef<str>>(mut self, pairs: &[(K, V)]) -> Call {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
            .finish();
        self.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        self.body = Bytes::from(body);
        self
    }

    /// With `value` as an `application/json` body.
    pub fn json<T: serde::Serialize + ?Sized>(mut self, value: &T) -> Call {
        match serde_json::to_vec(value) {
            Ok(body) => {
                self.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                self.body = Bytes::from(body);
            }
            Err(e) => self.url = Err(anyhow::anyhow!("request body: {e}")),
        }
        self
    }

    /// Sends the call and waits for the answer's head, within the client's timeout; the body is
    /// read through [`Answer`], within what is left of it. An error names the method and URL
    /// path, never a header.
    pub async fn send(self) -> anyhow::Result<Answer> {
        let deadline = tokio::time::Instant::now() + self.client.timeout;
        let url = self.url?;
        let shown = format!("{} {}", self.method, url.path());
        let mut request = http::Request::new(Full::new(self.body));
        *request.method_mut() = self.method;
        *request.uri_mut() = url.as_str().parse().map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        *request.headers_mut() = self.headers;
        let head = tokio::time::timeout_at(deadline, self.client.pool.request(request))
            .await
            .map_err(|_| anyhow::anyhow!("{shown}: no answer within {:?}", self.client.timeout))?
            .map_err(|e| anyhow::anyhow!("{shown}: {}", chain(&e)))?;
        Ok(Answer { inner: head, deadline, shown })
    }
}

/// `e` and its sources, joined by ": " (hyper's errors say little at the top).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

/// A peer's answer: its status, and its body read chunk by chunk before the call's deadline.
pub struct Answer {
    inner: http::Response<hyper::body::Incoming>,
    deadline: tokio::time::Instant,
    shown: String,
}

impl Answer {
    pub fn status(&self) -> StatusCode {
        self.inner.status()
    }

    /// The `Content-Length` the peer announced, if any.
    pub fn content_length(&self) -> Option<u64> {
        self.inner.headers().get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
    }

    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> anyhow::Result<Option<Bytes>> {
        use http_body_util::BodyExt;
        loop {
            let frame = tokio::time::timeout_at(self.deadline, self.inner.body_mut().frame())
                .await
                .map_err(|_| anyhow::anyhow!("{}: answer not read in time", self.shown))?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => anyhow::bail!("{}: reading the answer: {}", self.shown, chain(&e)),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }
}

/// `call` with `Authorization: Bearer <credential>` (security review M3): the peer's current
/// credential, from Secrets Manager in AWS. `None` (a unit test's adapter) sends none; a
/// credential source that answers no key is an error — the call is not made unauthenticated.
pub async fn authorize(
    call: Call,
    credential: Option<&dyn crate::ports::WebhookKeys>,
    peer: &str,
) -> anyhow::Result<Call> {
    let Some(source) = credential else { return Ok(call) };
    let keys = source.keys().await?;
    let Some(current) = keys.first() else {
        anyhow::bail!("no credential configured for the {peer} (its *_CREDENTIAL_SECRET_ARN)")
    };
    Ok(call.bearer(current.expose()))
}

/// The body of an answer, at most [`MAX_ANSWER_BYTES`]; a longer one is an error.
pub async fn body(answer: Answer) -> anyhow::Result<Vec<u8>> {
    read_up_to(answer, MAX_ANSWER_BYTES, "peer").await
}

/// The body of an answer, at most `cap` bytes; a longer one is an error naming `peer`.
pub async fn read_up_to(mut answer: Answer, cap: usize, peer: &str) -> anyhow::Result<Vec<u8>> {
    if answer.content_length().is_some_and(|n| n > cap as u64) {
        anyhow::bail!("{peer} answer larger than {cap} bytes");
    }
    let mut out = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if out.len() + chunk.len() > cap {
            anyhow::bail!("{peer} answer larger than {cap} bytes");
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The answer as JSON (capped).
pub async fn json<T: serde::de::DeserializeOwned>(answer: Answer) -> anyhow::Result<T> {
    Ok(serde_json::from_slice(&body(answer).await?)?)
}

/// The answer as text for an error message (capped, lossy, first 300 characters).
pub async fn text(answer: Answer) -> String {
    body(answer).await.map(|b| String::from_utf8_lossy(&b).chars().take(300).collect()).unwrap_or_default()
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

    /// A loopback peer that answers every call `200 {}` and hands over what it was sent.
    async fn recorder() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = l.accept().await {
                let mut buf = vec![0u8; 8192];
                let n = c.read(&mut buf).await.unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}").await;
            }
        });
        (format!("http://{addr}"), rx)
    }

    #[tokio::test]
    async fn a_call_sends_its_query_form_json_and_credential_as_written() {
        let c = client(Duration::from_secs(5), Duration::from_secs(2)).unwrap();
        let (to, mut seen) = recorder().await;
        let url = format!("{to}/v1/charges");
        let r = c.post(&url).bearer(b"sk_test").query(&[("a b", "c&d")]).form(&[("x", "1 2"), ("y", "é")]).send();
        assert_eq!(r.await.unwrap().status(), StatusCode::OK);
        let got = seen.recv().await.unwrap();
        assert!(got.starts_with("POST /v1/charges?a+b=c%26d HTTP/1.1\r\n"), "{got}");
        assert!(got.contains("authorization: Bearer sk_test\r\n"), "{got}");
        assert!(got.contains("content-type: application/x-www-form-urlencoded\r\n"), "{got}");
        assert!(got.contains("user-agent: holdfast/"), "{got}");
        assert!(got.ends_with("\r\n\r\nx=1+2&y=%C3%A9"), "{got}");
        let answer = c.get(&to).header("Idempotency-Key", "k1").json(&serde_json::json!({"n": 1})).send();
        assert_eq!(json::<serde_json::Value>(answer.await.unwrap()).await.unwrap(), serde_json::json!({}));
        let got = seen.recv().await.unwrap();
        assert!(got.contains("idempotency-key: k1\r\n") && got.ends_with(r#"{"n":1}"#), "{got}");
        // a value that cannot be a header: the call fails and nothing is sent
        assert!(c.get(&to).header("Idempotency-Key", "a\nb").send().await.is_err());
        assert!(c.get("not a url").send().await.is_err());
        assert!(seen.try_recv().is_err(), "nothing sent for a bad call");
    }

    #[tokio::test]
    async fn a_peer_that_never_answers_fails_the_call_at_its_timeout() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((c, _)) = l.accept().await {
                open.push(c);
            }
        });
        let c = client(Duration::from_millis(300), Duration::from_millis(200)).unwrap();
        let err = c.get(format!("http://{addr}/slow")).send().await.err().unwrap();
        assert!(err.to_string().contains("GET /slow: no answer within"), "{err}");
        held.abort();
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
