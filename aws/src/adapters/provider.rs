//! The generic payment provider over HTTP: payments and refunds (docs/payments.md, "Provider
//! wire format"; refunds also docs/after-sale.md, "Providers"). Locally the simulated provider
//! the stack starts speaks it (infra/src/peers/provider.rs). Every call carries the provider
//! credential ([`HttpProvider::authed`]); JSON both ways; answers are read up to
//! [`super::outbound::MAX_ANSWER_BYTES`] and redirects are not followed.
//!
//! - `POST {base}/payments`, `Idempotency-Key: <attempt_key>`, body [`PaymentBody`]
//!   `{"attempt_key","order_id","amount","currency"}` → 201 (new) or 200 (the same key again: the
//!   same payment, nothing created) [`CreatedAnswer`] `{"payment_id","status","redirect_url"}`.
//! - `GET {base}/payments/{payment_id}` → 200 [`PaymentAnswer`]
//!   `{"payment_id","order_id","amount","currency","status"}`, `status` one of
//!   `OPEN|PROCESSING|SUCCEEDED|FAILED|CANCELLED` ([`WireStatus`]).
//! - `POST {base}/payments/{payment_id}/cancel` (no body) → 200 the payment as it stands after
//!   the call: `CANCELLED`, or `SUCCEEDED` when it was too late (never undone).
//! - `POST {base}/refunds` (`Idempotency-Key: <refund_id>`, [`RefundBody`]) → [`RefundAnswer`]
//!   `{"provider_refund_id","status":"PENDING"|"SUCCEEDED"}`.
//! - `GET {base}/refunds/{provider_refund_id}` → 200 [`RefundStateAnswer`]
//!   `{"provider_refund_id","refund_id","payment_id","amount","currency","status":"PENDING"|"SUCCEEDED"|"FAILED"}`.
//! - `GET {base}/settlement/{YYYY-MM-DD}[?cursor=<next_cursor>]` → 200 [`SettlementPage`]
//!   `{"captures":[payment…],"refunds":[refund…],"next_cursor":string|null}`: the UTC day's
//!   captures (payments that became `SUCCEEDED` that day) and refunds (made that day, failed ones
//!   left out); pages are followed until `next_cursor` is null.
//!
//! Answers: a 404 whose body is `{"code":"not_found",…}` is "the provider does not know it"
//! (`None`); any other 404 (a wrong base URL, a proxy's page) is an error, so a misconfigured
//! provider is never read as "no such payment". On `POST /payments` and `POST /refunds` a 4xx
//! other than 408/429 is the provider refusing (inner `Err`, not retryable); everything else that
//! is not 2xx, an unreadable or oversized answer, a timeout or a network error is the outer error
//! (retry). Unknown statuses are errors, never guessed.

use crate::ports::{
    CreatedPayment, DayListing, PaymentProvider, PaymentRequest, PaymentState, ProviderPayment, ProviderRefund,
    ProviderRefundState, RefundRequest,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub struct HttpProvider {
    client: super::outbound::Client,
    base: String,
    /// Sent as `Authorization: Bearer …` on every call (security review M3): use [`Self::authed`].
    credential: Option<std::sync::Arc<dyn crate::ports::WebhookKeys>>,
}

/// The request body (also what the simulated provider reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundBody {
    pub refund_id: String,
    pub payment_id: String,
    pub order_id: String,
    pub amount: u64,
    pub currency: String,
}

/// The answer to an accepted refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundAnswer {
    pub provider_refund_id: String,
    /// `PENDING` (the webhook confirms later) or `SUCCEEDED`.
    pub status: String,
}

/// `POST {base}/payments` body (also what the simulated provider reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentBody {
    pub attempt_key: String,
    pub order_id: String,
    /// Minor units.
    pub amount: u64,
    /// ISO 4217, upper case.
    pub currency: String,
}

/// A payment's status on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WireStatus {
    Open,
    Processing,
    Succeeded,
    Failed,
    Cancelled,
}

impl From<WireStatus> for PaymentState {
    fn from(s: WireStatus) -> Self {
        match s {
            WireStatus::Open => PaymentState::Open,
            WireStatus::Processing => PaymentState::Processing,
            WireStatus::Succeeded => PaymentState::Succeeded,
            WireStatus::Failed => PaymentState::Failed,
            WireStatus::Cancelled => PaymentState::Cancelled,
        }
    }
}

impl From<PaymentState> for WireStatus {
    fn from(s: PaymentState) -> Self {
        match s {
            PaymentState::Open => WireStatus::Open,
            PaymentState::Processing => WireStatus::Processing,
            PaymentState::Succeeded => WireStatus::Succeeded,
            PaymentState::Failed => WireStatus::Failed,
            PaymentState::Cancelled => WireStatus::Cancelled,
        }
    }
}

/// The answer to `POST {base}/payments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedAnswer {
    pub payment_id: String,
    pub status: WireStatus,
    /// The page where the buyer pays.
    #[serde(default)]
    pub redirect_url: Option<String>,
}

/// A payment as the provider reports it (`GET /payments/{id}`, cancel, settlement captures).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentAnswer {
    pub payment_id: String,
    /// Absent for a payment made outside Holdfast.
    #[serde(default)]
    pub order_id: Option<String>,
    pub amount: u64,
    pub currency: String,
    pub status: WireStatus,
}

impl From<PaymentAnswer> for ProviderPayment {
    fn from(a: PaymentAnswer) -> Self {
        ProviderPayment {
            payment_id: a.payment_id,
            order_id: a.order_id,
            amount: a.amount,
            currency: a.currency.to_ascii_uppercase(),
            state: a.status.into(),
        }
    }
}

/// A refund's status on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    Pending,
    Succeeded,
    Failed,
}

/// A refund as the provider reports it (`GET /refunds/{id}`, settlement refunds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundStateAnswer {
    pub provider_refund_id: String,
    /// Holdfast's refund id (the `Idempotency-Key` it was made with).
    #[serde(default)]
    pub refund_id: Option<String>,
    pub payment_id: String,
    pub amount: u64,
    pub currency: String,
    pub status: RefundStatus,
}

impl From<RefundStateAnswer> for ProviderRefundState {
    fn from(a: RefundStateAnswer) -> Self {
        ProviderRefundState {
            provider_refund_id: a.provider_refund_id,
            refund_id: a.refund_id,
            payment_id: a.payment_id,
            amount: a.amount,
            currency: a.currency.to_ascii_uppercase(),
            succeeded: match a.status {
                RefundStatus::Pending => None,
                RefundStatus::Succeeded => Some(true),
                RefundStatus::Failed => Some(false),
            },
        }
    }
}

/// One page of `GET {base}/settlement/{day}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettlementPage {
    #[serde(default)]
    pub captures: Vec<PaymentAnswer>,
    #[serde(default)]
    pub refunds: Vec<RefundStateAnswer>,
    /// Where the next page starts; `null` on the last page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// The body of a 404 meaning "not known here" (any other 404 is an error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotFound {
    pub code: String,
    #[serde(default)]
    pub error: Option<String>,
}

/// The `code` of a [`NotFound`].
pub const NOT_FOUND: &str = "not_found";

/// Most settlement pages followed for one day (a peer that never ends its listing is an error).
pub const MAX_SETTLEMENT_PAGES: usize = 10_000;

impl HttpProvider {
    /// `timeout` bounds one call (the refunds function retries through its queue).
    pub fn new(base: &str, timeout: Duration) -> anyhow::Result<Self> {
        let client = super::outbound::client(timeout, timeout / 2)?;
        Ok(HttpProvider { client, base: super::outbound::base_url(base)?, credential: None })
    }

    /// The same provider, called with this credential (the composition root always sets one).
    pub fn with_credential(self, credential: std::sync::Arc<dyn crate::ports::WebhookKeys>) -> Self {
        HttpProvider { credential: Some(credential), ..self }
    }

    /// `rb` with the provider credential: every request to the provider goes through this.
    async fn authed(&self, rb: super::outbound::Call) -> anyhow::Result<super::outbound::Call> {
        super::outbound::authorize(rb, self.credential.as_deref(), "payment provider").await
    }
}

#[async_trait]
impl PaymentProvider for HttpProvider {
    async fn create_payment(&self, r: &PaymentRequest) -> anyhow::Result<Result<CreatedPayment, String>> {
        let body = PaymentBody {
            attempt_key: r.attempt_key.clone(),
            order_id: r.order_id.to_string(),
            amount: r.amount,
            currency: r.currency.clone(),
        };
        let rb = self.client.post(self.url(&["payments"])?).header("Idempotency-Key", &r.attempt_key).json(&body);
        let resp = self.send(rb).await?;
        let status = resp.status();
        if status.is_success() {
            let a: CreatedAnswer = super::outbound::json(resp).await?;
            return Ok(Ok(CreatedPayment {
                payment_id: a.payment_id,
                redirect_url: a.redirect_url,
                client_secret: None,
            }));
        }
        let text = super::outbound::text(resp).await;
        if refused(status) {
            return Ok(Err(format!("{status}: {text}")));
        }
        anyhow::bail!("provider answered {status} to a payment: {text}")
    }

    async fn payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        let resp = self.send(self.client.get(self.url(&["payments", payment_id])?)).await?;
        Ok(known::<PaymentAnswer>(resp).await?.map(Into::into))
    }

    async fn cancel_payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        let resp = self.send(self.client.post(self.url(&["payments", payment_id, "cancel"])?)).await?;
        Ok(known::<PaymentAnswer>(resp).await?.map(Into::into))
    }

    async fn refund_state(&self, provider_refund_id: &str) -> anyhow::Result<Option<ProviderRefundState>> {
        let resp = self.send(self.client.get(self.url(&["refunds", provider_refund_id])?)).await?;
        Ok(known::<RefundStateAnswer>(resp).await?.map(Into::into))
    }

    async fn day_listing(&self, day: &str) -> anyhow::Result<DayListing> {
        crate::domain::model::Day::parse(day).map_err(|e| anyhow::anyhow!("settlement day: {e}"))?;
        let mut out = DayListing::default();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_SETTLEMENT_PAGES {
            let mut rb = self.client.get(self.url(&["settlement", day])?);
            if let Some(c) = &cursor {
                rb = rb.query(&[("cursor", c)]);
            }
            let resp = self.send(rb).await?;
            let status = resp.status();
            if !status.is_success() {
                let text = super::outbound::text(resp).await;
                anyhow::bail!("provider answered {status} to the settlement listing of {day}: {text}");
            }
            let page: SettlementPage = super::outbound::json(resp).await?;
            out.captures.extend(page.captures.into_iter().map(ProviderPayment::from));
            out.refunds.extend(page.refunds.into_iter().map(ProviderRefundState::from));
            match page.next_cursor {
                None => return Ok(out),
                Some(next) if cursor.as_deref() == Some(next.as_str()) => {
                    anyhow::bail!("provider's settlement listing of {day} repeats cursor {next:?}")
                }
                next => cursor = next,
            }
        }
        anyhow::bail!("provider's settlement listing of {day} runs past {MAX_SETTLEMENT_PAGES} pages")
    }

    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        if self.base.is_empty() {
            anyhow::bail!("no generic payment provider configured (HOLDFAST_PROVIDER_URL)");
        }
        let body = RefundBody {
            refund_id: r.refund_id.clone(),
            payment_id: r.payment_id.clone(),
            order_id: r.order_id.to_string(),
            amount: r.amount,
            currency: r.currency.clone(),
        };
        let resp = self
            .authed(self.client.post(format!("{}/refunds", self.base)))
            .await?
            .header("Idempotency-Key", &r.refund_id)
            .json(&body)
            .send()
            .await?;
        let status = resp.status();
        if status.is_success() {
            let a: RefundAnswer = super::outbound::json(resp).await?;
            return Ok(Ok(ProviderRefund {
                succeeded: a.status == "SUCCEEDED",
                provider_refund_id: a.provider_refund_id,
            }));
        }
        let text = super::outbound::text(resp).await;
        if status.is_client_error() && status.as_u16() != 429 && status.as_u16() != 408 {
            return Ok(Err(format!("{status}: {text}")));
        }
        anyhow::bail!("provider answered {status}")
    }
}

/// Payments: URL building and sending (every request goes through [`HttpProvider::authed`]).
impl HttpProvider {
    /// `{base}/{segments…}`, each segment percent-encoded as one path segment.
    fn url(&self, segments: &[&str]) -> anyhow::Result<url::Url> {
        if self.base.is_empty() {
            anyhow::bail!("no generic payment provider configured (HOLDFAST_PROVIDER_URL)");
        }
        if let Some(bad) = segments.iter().find(|s| s.is_empty() || **s == "." || **s == ".." || s.len() > 256) {
            anyhow::bail!("{bad:?} cannot be a provider id");
        }
        let mut url = url::Url::parse(&self.base)?;
        url.path_segments_mut()
            .map_err(|_| anyhow::anyhow!("provider URL {:?} cannot take a path", self.base))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// Sends `rb` with the provider credential.
    async fn send(&self, rb: super::outbound::Call) -> anyhow::Result<super::outbound::Answer> {
        self.authed(rb).await?.send().await
    }
}

/// A 4xx the provider means as a refusal (retrying will not help): not 408 or 429.
fn refused(status: http::StatusCode) -> bool {
    status.is_client_error() && status.as_u16() != 429 && status.as_u16() != 408
}

/// A 2xx answer read as `T`; `None` for the provider's own 404 ([`NotFound`]); anything else an
/// error (a 404 without that body is a wrong URL, not an unknown id).
async fn known<T: serde::de::DeserializeOwned>(resp: super::outbound::Answer) -> anyhow::Result<Option<T>> {
    let status = resp.status();
    if status.is_success() {
        return Ok(Some(super::outbound::json(resp).await?));
    }
    let body = super::outbound::body(resp).await.unwrap_or_default();
    if status == http::StatusCode::NOT_FOUND
        && serde_json::from_slice::<NotFound>(&body).is_ok_and(|n| n.code == NOT_FOUND)
    {
        return Ok(None);
    }
    let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
    anyhow::bail!("provider answered {status}: {text}")
}

/// A provider that is not configured: every call fails loudly as an infrastructure error — a
/// refund is retried, then the refunds DLQ and its alarm, so money owed is never silently
/// dropped; a payment is never started, and a payment's state is never guessed.
pub struct Unconfigured(pub &'static str);

#[async_trait]
impl PaymentProvider for Unconfigured {
    async fn create_payment(&self, r: &PaymentRequest) -> anyhow::Result<Result<CreatedPayment, String>> {
        anyhow::bail!("payment {}: the {} provider is not configured", r.attempt_key, self.0)
    }
    async fn payment(&self, id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        anyhow::bail!("payment {id}: the {} provider is not configured", self.0)
    }
    async fn cancel_payment(&self, id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        anyhow::bail!("cancelling payment {id}: the {} provider is not configured", self.0)
    }
    async fn refund_state(&self, id: &str) -> anyhow::Result<Option<ProviderRefundState>> {
        anyhow::bail!("refund {id}: the {} provider is not configured", self.0)
    }
    async fn day_listing(&self, day: &str) -> anyhow::Result<DayListing> {
        anyhow::bail!("settlement {day}: the {} provider is not configured", self.0)
    }
    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        anyhow::bail!("refund {}: the {} provider is not configured", r.refund_id, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_statuses_map_and_unknown_ones_are_refused() {
        for (s, want) in [
            ("OPEN", PaymentState::Open),
            ("PROCESSING", PaymentState::Processing),
            ("SUCCEEDED", PaymentState::Succeeded),
            ("FAILED", PaymentState::Failed),
            ("CANCELLED", PaymentState::Cancelled),
        ] {
            let a: PaymentAnswer = serde_json::from_value(serde_json::json!({
                "payment_id": "p1", "order_id": "o1", "amount": 5, "currency": "eur", "status": s
            }))
            .unwrap();
            let p = ProviderPayment::from(a);
            assert_eq!((p.state, p.currency.as_str()), (want, "EUR"), "{s}");
            assert_eq!(WireStatus::from(want), serde_json::from_value(serde_json::json!(s)).unwrap());
        }
        for bad in ["succeeded", "CANCELED", "PAID"] {
            assert!(serde_json::from_value::<WireStatus>(serde_json::json!(bad)).is_err(), "{bad}");
        }
        let r: RefundStateAnswer = serde_json::from_value(serde_json::json!({
            "provider_refund_id": "r1", "payment_id": "p1", "amount": 5, "currency": "EUR", "status": "FAILED"
        }))
        .unwrap();
        assert_eq!(ProviderRefundState::from(r).succeeded, Some(false));
    }

    #[test]
    fn ids_are_one_path_segment_each() {
        let p = HttpProvider::new("http://127.0.0.1:9/prov/", Duration::from_secs(1)).unwrap();
        assert_eq!(p.url(&["payments", "a/b?c"]).unwrap().as_str(), "http://127.0.0.1:9/prov/payments/a%2Fb%3Fc");
        assert_eq!(
            p.url(&["settlement", "2026-12-03"]).unwrap().as_str(),
            "http://127.0.0.1:9/prov/settlement/2026-12-03"
        );
        for bad in ["", ".", ".."] {
            assert!(p.url(&["payments", bad]).is_err(), "{bad:?}");
        }
        let none = HttpProvider::new("", Duration::from_secs(1)).unwrap();
        assert!(none.url(&["payments"]).is_err(), "not configured: an error, never a relative call");
    }
}
