//! Refunds at Stripe (docs/after-sale.md, "Stripe"): [`PaymentProvider`] over
//! `POST /v1/refunds`, form-encoded as Stripe's API takes it, idempotent by our refund id
//! through Stripe's `Idempotency-Key` (Stripe keeps keys 24 hours: the same key and parameters
//! answer the first refund object and move no more money).
//!
//! Answers are translated here and nowhere else:
//! - 2xx: the refund object (`id`, `status`); `failed`/`canceled` is Stripe refusing → inner `Err`.
//! - 429, 409 (Stripe's "another request with this key is in flight"), 5xx, timeouts and network
//!   errors → outer error: retry later with the same key.
//! - other 4xx (`{"error":{"type","code","message"}}`: no such payment, already refunded, bad
//!   key…) → inner `Err(message)`: retrying will not help.

use crate::ports::{PaymentProvider, ProviderRefund, RefundRequest, WebhookKeys};
use async_trait::async_trait;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Connecting to Stripe; and one whole refund request (Stripe answers refunds in well under a
/// second; the refunds consumer's own timeout is above this, and a timeout is retried).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub struct StripeRefunds {
    http: reqwest::Client,
    base: String,
    /// The secret API key: from configuration or Secrets Manager (first key returned).
    key: Arc<dyn WebhookKeys>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    r#type: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RefundObject {
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    failure_reason: Option<String>,
}

/// The form Stripe's `POST /v1/refunds` takes for `r`.
pub fn form(r: &RefundRequest) -> Vec<(&'static str, String)> {
    vec![
        ("payment_intent", r.payment_id.clone()),
        ("amount", r.amount.to_string()),
        ("metadata[refund_id]", r.refund_id.clone()),
        ("metadata[order_id]", r.order_id.as_str().to_owned()),
    ]
}

/// What an HTTP answer of Stripe means (pure; see the module documentation).
pub fn interpret(status: u16, body: &str) -> anyhow::Result<Result<ProviderRefund, String>> {
    if (200..300).contains(&status) {
        let o: RefundObject = serde_json::from_str(body)
            .map_err(|e| anyhow::anyhow!("Stripe answered {status} with an unreadable refund object: {e}"))?;
        return Ok(match o.status.as_deref() {
            Some("failed") | Some("canceled") => Err(format!(
                "Stripe refund {} {}: {}",
                o.id,
                o.status.as_deref().unwrap_or(""),
                o.failure_reason.as_deref().unwrap_or("no reason given")
            )),
            s => Ok(ProviderRefund { provider_refund_id: o.id, succeeded: s == Some("succeeded") }),
        });
    }
    let detail = serde_json::from_str::<ErrorBody>(body).ok().map(|b| b.error);
    let message = match &detail {
        Some(d) => format!(
            "Stripe {status} {}{}: {}",
            d.r#type.as_deref().unwrap_or("error"),
            d.code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
            d.message.as_deref().unwrap_or("no message")
        ),
        None => format!("Stripe {status}: {}", body.chars().take(200).collect::<String>()),
    };
    if status == 429 || status == 409 || status >= 500 {
        return Err(anyhow::anyhow!("{message} (retryable)"));
    }
    Ok(Err(message))
}

impl StripeRefunds {
    pub fn new(base: impl Into<String>, key: Arc<dyn WebhookKeys>) -> anyhow::Result<Self> {
        let http = super::outbound::client(REQUEST_TIMEOUT, CONNECT_TIMEOUT)?;
        Ok(StripeRefunds { http, base: super::outbound::base_url(&base.into())?, key })
    }
}

#[async_trait]
impl PaymentProvider for StripeRefunds {
    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        let key = self.key.keys().await?.into_iter().next().ok_or_else(|| anyhow::anyhow!("no Stripe API key"))?;
        let key = std::str::from_utf8(key.expose()).map_err(|_| anyhow::anyhow!("the Stripe API key is not UTF-8"))?;
        let url = format!("{}/v1/refunds", self.base);
        let answer = self
            .http
            .post(&url)
            .bearer_auth(key)
            .header("Idempotency-Key", &r.refund_id)
            .form(&form(r))
            .send()
            .await
            // reqwest's error names the URL, never the headers: the key is not in it.
            .map_err(|e| anyhow::anyhow!("POST {url}: {e}"))?;
        let status = answer.status().as_u16();
        let body =
            super::outbound::body(answer).await.map_err(|e| anyhow::anyhow!("reading Stripe's answer: {e:#}"))?;
        let body = String::from_utf8_lossy(&body).into_owned();
        let out = interpret(status, &body);
        match &out {
            Ok(Ok(p)) => {
                tracing::info!(refund_id = r.refund_id, stripe_refund = p.provider_refund_id, "Stripe refund accepted")
            }
            Ok(Err(m)) => tracing::warn!(refund_id = r.refund_id, reason = m, "Stripe refused the refund"),
            Err(e) => tracing::warn!(refund_id = r.refund_id, error = %e, "Stripe refund failed; will be retried"),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::OrderId;

    #[test]
    fn the_form_is_what_stripe_takes() {
        let r = RefundRequest {
            refund_id: "rf-1".into(),
            payment_id: "pi_1".into(),
            order_id: OrderId::parse("o1").unwrap(),
            amount: 500,
            currency: "EUR".into(),
        };
        let f = form(&r);
        assert_eq!(
            f,
            vec![
                ("payment_intent", "pi_1".to_owned()),
                ("amount", "500".to_owned()),
                ("metadata[refund_id]", "rf-1".to_owned()),
                ("metadata[order_id]", "o1".to_owned()),
            ]
        );
    }

    #[test]
    fn answers_are_translated() {
        let ok = interpret(200, r#"{"id":"re_1","object":"refund","status":"succeeded","amount":5}"#).unwrap();
        assert_eq!(ok, Ok(ProviderRefund { provider_refund_id: "re_1".into(), succeeded: true }));
        let pending = interpret(200, r#"{"id":"re_2","status":"pending"}"#).unwrap().unwrap();
        assert!(!pending.succeeded);
        assert!(interpret(200, r#"{"id":"re_3","status":"failed","failure_reason":"expired_or_canceled_card"}"#)
            .unwrap()
            .unwrap_err()
            .contains("expired_or_canceled_card"));
        let refused = interpret(
            400,
            r#"{"error":{"type":"invalid_request_error","code":"charge_already_refunded","message":"already refunded"}}"#,
        )
        .unwrap()
        .unwrap_err();
        assert!(refused.contains("charge_already_refunded") && refused.contains("already refunded"), "{refused}");
        assert!(interpret(401, "not json").unwrap().is_err());
        for s in [409, 429, 500, 502, 503] {
            assert!(interpret(s, r#"{"error":{"message":"later"}}"#).is_err(), "{s} is retryable");
        }
        assert!(interpret(200, "<html>").is_err(), "an unreadable 200 is retried, not taken as a refund");
    }
}
