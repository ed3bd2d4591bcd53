//! The generic payment provider's refund API over HTTP (docs/after-sale.md, "Providers"):
//! `POST {base}/refunds` with a JSON body and `Idempotency-Key: {refund_id}`; the answer is
//! `{"provider_refund_id","status":"PENDING"|"SUCCEEDED"}`. A 4xx is the provider refusing
//! (not retryable), anything else a failure to retry. Locally the simulated provider the stack
//! starts speaks it (infra/src/peers/provider.rs).

use crate::ports::{PaymentProvider, ProviderRefund, RefundRequest};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub struct HttpProvider {
    client: reqwest::Client,
    base: String,
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

impl HttpProvider {
    /// `timeout` bounds one call (the refunds function retries through its queue).
    pub fn new(base: &str, timeout: Duration) -> anyhow::Result<Self> {
        let client = super::outbound::client(timeout, timeout / 2)?;
        Ok(HttpProvider { client, base: super::outbound::base_url(base)? })
    }
}

#[async_trait]
impl PaymentProvider for HttpProvider {
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
            .client
            .post(format!("{}/refunds", self.base))
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

/// A provider that is not configured: every refund fails (retried, then the refunds DLQ and
/// its alarm), so money owed is never silently dropped.
pub struct Unconfigured(pub &'static str);

#[async_trait]
impl PaymentProvider for Unconfigured {
    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        anyhow::bail!("refund {}: the {} provider is not configured", r.refund_id, self.0)
    }
}
