//! The supplier port over HTTP (docs/suppliers.md, "Wire format"), at `HOLDFAST_SUPPLIER_URL`:
//!
//! - `POST {base}/quotes` `{"sku","quantity","dates","settings"}` → 200 `{"available": n | null}`
//! - `POST {base}/bookings` + `Idempotency-Key: <key>` `{"key","sku","quantity","dates","settings"}`
//!   → 201 (new) / 200 (the same key again) `{"booking_id","status"}`
//! - `GET {base}/bookings/{id}` → 200 `{"booking_id","status",…}`; 404 unknown
//! - `POST {base}/bookings/{id}/cancel` → 200 `{"booking_id","status":"CANCELLED"}` (again: the
//!   same answer); 404 unknown
//! - `POST {base}/bookings/{id}/codes` + `Idempotency-Key: <key>` `{"key","sku","quantity","dates","settings"}`
//!   → 201 (issued now) / 200 (the same key again: the same codes) `{"booking_id","codes":[…]}`;
//!   404 unknown; 409 not confirmed
//!
//! Every call carries `Authorization: Bearer <credential>`, the secret at
//! `SUPPLIER_CREDENTIAL_SECRET_ARN` (security review M3); the simulated supplier answers 401
//! without it.
//!
//! `status` is `PENDING`, `CONFIRMED`, `FAILED` or `CANCELLED`. Anything else, a 5xx or no
//! answer is an infrastructure error (the caller retries through its queue). Locally the
//! simulated supplier the stack starts speaks it (infra/src/peers/supplier.rs).

use crate::domain::model::Day;
use crate::domain::supplier::{BookingStatus, SupplierConfig};
use crate::ports::{BookingRequest, Quote, SupplierPort, UnknownBooking};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `POST /quotes` and `POST /bookings` bodies (also what the simulated supplier reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupplierBody {
    /// The booking's idempotency key (empty for a quote).
    #[serde(default)]
    pub key: String,
    pub sku: String,
    pub quantity: u32,
    #[serde(default)]
    pub dates: Vec<Day>,
    pub settings: SupplierConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteAnswer {
    pub available: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookingAnswer {
    pub booking_id: String,
    pub status: BookingStatus,
}

/// `POST /bookings/{id}/codes`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodesAnswer {
    pub booking_id: String,
    pub codes: Vec<String>,
}

pub struct HttpSupplier {
    client: super::outbound::Client,
    base: String,
    /// Sent as `Authorization: Bearer …` on every call (security review M3).
    credential: Option<std::sync::Arc<dyn crate::ports::WebhookKeys>>,
}

impl HttpSupplier {
    /// `timeout` bounds one call.
    pub fn new(base: &str, timeout: Duration) -> anyhow::Result<Self> {
        let client = super::outbound::client(timeout, timeout / 2)?;
        Ok(HttpSupplier { client, base: super::outbound::base_url(base)?, credential: None })
    }

    /// The same supplier, called with this credential (the composition root always sets one).
    pub fn with_credential(self, credential: std::sync::Arc<dyn crate::ports::WebhookKeys>) -> Self {
        HttpSupplier { credential: Some(credential), ..self }
    }

    fn url(&self, path: &str) -> anyhow::Result<String> {
        if self.base.is_empty() {
            anyhow::bail!("no supplier configured (HOLDFAST_SUPPLIER_URL)");
        }
        Ok(format!("{}{path}", self.base))
    }

    /// A request to `path` with the supplier credential.
    async fn request(&self, method: http::Method, path: &str) -> anyhow::Result<super::outbound::Call> {
        let rb = self.client.request(method, self.url(path)?);
        super::outbound::authorize(rb, self.credential.as_deref(), "supplier").await
    }

    fn body(req: &BookingRequest<'_>) -> SupplierBody {
        SupplierBody {
            key: req.key.to_owned(),
            sku: req.sku.to_string(),
            quantity: req.quantity,
            dates: req.dates.to_vec(),
            settings: req.config.clone(),
        }
    }

    async fn answer<T: serde::de::DeserializeOwned>(
        resp: super::outbound::Answer,
        what: &str,
        id: &str,
    ) -> anyhow::Result<T> {
        let status = resp.status();
        if status.is_success() {
            return super::outbound::json(resp).await;
        }
        if status.as_u16() == 404 && !id.is_empty() {
            return Err(UnknownBooking(id.to_owned()).into());
        }
        let text = super::outbound::text(resp).await;
        anyhow::bail!("supplier {what} answered {status}: {text}")
    }
}

/// A booking id goes into a URL path: only what the wire format allows.
fn check_id(id: &str) -> anyhow::Result<()> {
    // `.` and `..` would be path segments of their own (security review M3)
    let ok = !id.is_empty()
        && id.len() <= 128
        && id != "."
        && id != ".."
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(UnknownBooking(id.to_owned()).into())
    }
}

#[async_trait]
impl SupplierPort for HttpSupplier {
    async fn quote(&self, req: &BookingRequest<'_>) -> anyhow::Result<Quote> {
        let _span = super::usage::call("supplier:quote");
        let resp = self.request(http::Method::POST, "/quotes").await?.json(&Self::body(req)).send().await?;
        let a: QuoteAnswer = Self::answer(resp, "quote", "").await?;
        Ok(Quote { available: a.available })
    }

    async fn book(&self, req: &BookingRequest<'_>) -> anyhow::Result<String> {
        let _span = super::usage::call("supplier:book");
        let resp = self
            .request(http::Method::POST, "/bookings")
            .await?
            .header("Idempotency-Key", req.key)
            .json(&Self::body(req))
            .send()
            .await?;
        let a: BookingAnswer = Self::answer(resp, "book", "").await?;
        check_id(&a.booking_id)?;
        Ok(a.booking_id)
    }

    async fn status(&self, booking_id: &str) -> anyhow::Result<BookingStatus> {
        check_id(booking_id)?;
        let _span = super::usage::call("supplier:status");
        let resp = self.request(http::Method::GET, &format!("/bookings/{booking_id}")).await?.send().await?;
        let a: BookingAnswer = Self::answer(resp, "status", booking_id).await?;
        Ok(a.status)
    }

    async fn cancel(&self, booking_id: &str) -> anyhow::Result<()> {
        check_id(booking_id)?;
        let _span = super::usage::call("supplier:cancel");
        let resp = self.request(http::Method::POST, &format!("/bookings/{booking_id}/cancel")).await?.send().await?;
        let _: BookingAnswer = Self::answer(resp, "cancel", booking_id).await?;
        Ok(())
    }

    async fn issue_codes(&self, booking_id: &str, req: &BookingRequest<'_>) -> anyhow::Result<Vec<String>> {
        check_id(booking_id)?;
        let _span = super::usage::call("supplier:issue");
        let resp = self
            .request(http::Method::POST, &format!("/bookings/{booking_id}/codes"))
            .await?
            .header("Idempotency-Key", req.key)
            .json(&Self::body(req))
            .send()
            .await?;
        let a: CodesAnswer = Self::answer(resp, "issue", booking_id).await?;
        Ok(a.codes)
    }
}

/// An in-memory supplier for unit tests: books by key, answers each booking with the status it
/// is told (`set`), counts cancels.
#[derive(Default)]
pub struct MemorySupplier {
    state: std::sync::Mutex<MemState>,
}

#[derive(Default)]
struct MemState {
    /// (key, id, status, cancel calls)
    bookings: Vec<(String, String, BookingStatus, u32)>,
    available: Option<u64>,
    quotes: u32,
    /// Issue calls to fail before one succeeds; codes issued per key; issue calls received.
    issue_failures: u32,
    issued: Vec<(String, Vec<String>)>,
    issue_calls: u32,
}

impl MemorySupplier {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What quotes answer from now on (`None`: unlimited).
    pub fn set_available(&self, a: Option<u64>) {
        self.lock().available = a;
    }

    /// Sets every booking's status.
    pub fn set_all(&self, st: BookingStatus) {
        for b in &mut self.lock().bookings {
            b.2 = st;
        }
    }

    /// The next `n` issue calls fail (as a supplier that does not answer).
    pub fn fail_issues(&self, n: u32) {
        self.lock().issue_failures = n;
    }

    /// (issue calls received, code sets issued).
    pub fn issues(&self) -> (u32, usize) {
        let s = self.lock();
        (s.issue_calls, s.issued.len())
    }

    /// Quote calls received.
    pub fn quotes(&self) -> u32 {
        self.lock().quotes
    }

    /// (bookings made, cancel calls in all).
    pub fn counts(&self) -> (usize, u32) {
        let s = self.lock();
        (s.bookings.len(), s.bookings.iter().map(|b| b.3).sum())
    }
}

#[async_trait]
impl SupplierPort for MemorySupplier {
    async fn quote(&self, _: &BookingRequest<'_>) -> anyhow::Result<Quote> {
        let mut s = self.lock();
        s.quotes += 1;
        Ok(Quote { available: s.available })
    }

    async fn book(&self, req: &BookingRequest<'_>) -> anyhow::Result<String> {
        let mut s = self.lock();
        if let Some(b) = s.bookings.iter().find(|b| b.0 == req.key) {
            return Ok(b.1.clone());
        }
        let id = format!("mem-{}", s.bookings.len() + 1);
        s.bookings.push((req.key.to_owned(), id.clone(), BookingStatus::Pending, 0));
        Ok(id)
    }

    async fn status(&self, booking_id: &str) -> anyhow::Result<BookingStatus> {
        let s = self.lock();
        s.bookings
            .iter()
            .find(|b| b.1 == booking_id)
            .map(|b| b.2)
            .ok_or_else(|| UnknownBooking(booking_id.into()).into())
    }

    async fn cancel(&self, booking_id: &str) -> anyhow::Result<()> {
        let mut s = self.lock();
        let b = s.bookings.iter_mut().find(|b| b.1 == booking_id).ok_or_else(|| UnknownBooking(booking_id.into()))?;
        b.2 = BookingStatus::Cancelled;
        b.3 += 1;
        Ok(())
    }

    async fn issue_codes(&self, booking_id: &str, req: &BookingRequest<'_>) -> anyhow::Result<Vec<String>> {
        let mut s = self.lock();
        s.issue_calls += 1;
        if s.issue_failures > 0 {
            s.issue_failures -= 1;
            anyhow::bail!("supplier issue answered 503");
        }
        match s.bookings.iter().find(|b| b.1 == booking_id).map(|b| b.2) {
            None => return Err(UnknownBooking(booking_id.into()).into()),
            Some(BookingStatus::Confirmed) => {}
            Some(st) => anyhow::bail!("supplier issue answered 409: booking {booking_id} is {}", st.as_str()),
        }
        if let Some((_, codes)) = s.issued.iter().find(|(k, _)| k == req.key) {
            return Ok(codes.clone());
        }
        let codes: Vec<String> = (1..=req.quantity).map(|i| format!("MEM-{}-{i}", req.key.replace('.', "-"))).collect();
        s.issued.push((req.key.to_owned(), codes.clone()));
        Ok(codes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::secrets::StaticKeys;
    use crate::config::Secret;
    use std::sync::Arc;

    #[test]
    fn dot_segments_and_other_path_tricks_are_not_booking_ids() {
        for bad in [".", "..", "", "a/b", "a?b", "a b", "%2e%2e", &"x".repeat(129)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        for ok in ["sim-bk-1", "a.b", "...", "A_1-2"] {
            assert!(check_id(ok).is_ok(), "{ok:?}");
        }
    }

    /// A one-shot loopback peer that answers 404 and hands back the request head it read.
    async fn peer() -> (String, tokio::sync::oneshot::Receiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut c, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 8192];
            let n = c.read(&mut buf).await.unwrap_or(0);
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = c.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
        });
        (format!("http://{addr}"), rx)
    }

    #[tokio::test]
    async fn every_call_carries_the_bearer_credential_and_none_is_made_without_one() {
        let (url, head) = peer().await;
        let s = HttpSupplier::new(&url, Duration::from_secs(5))
            .unwrap()
            .with_credential(Arc::new(StaticKeys(vec![Secret::new("sup-token-1")])));
        let e = s.status("bk-1").await.unwrap_err();
        assert!(e.downcast_ref::<UnknownBooking>().is_some(), "{e:#}");
        let head = head.await.unwrap().to_ascii_lowercase();
        assert!(head.contains("authorization: bearer sup-token-1\r\n"), "{head}");
        // a credential source with no key: refused before any call
        let s = HttpSupplier::new("http://127.0.0.1:9", Duration::from_secs(1))
            .unwrap()
            .with_credential(Arc::new(StaticKeys(vec![])));
        let e = s.cancel("bk-1").await.unwrap_err();
        assert!(format!("{e:#}").contains("no credential"), "{e:#}");
    }
}
