//! A client of the local API as a caller sees it (tests, the demo, the benchmark): HTTP with a
//! bearer token, and payment callbacks signed like a payment provider signs them.

use holdfast::domain::signature;
use serde_json::{json, Value};

#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
}

impl ApiClient {
    pub fn new(base: &str) -> Self {
        holdfast::adapters::outbound::install_crypto();
        let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap_or_default();
        ApiClient { http, base: base.to_owned() }
    }

    /// One request; a transport failure is answered as status 599.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Answer {
        let mut rb = self.http.request(method.parse().unwrap_or(reqwest::Method::GET), format!("{}{path}", self.base));
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.header("content-type", "application/json").body(b);
        }
        match rb.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let headers = r.headers().clone();
                let text = r.text().await.unwrap_or_default();
                let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
                Answer { status, body, headers }
            }
            Err(e) => Answer { status: 599, body: Value::String(e.to_string()), headers: Default::default() },
        }
    }

    /// A payment callback for `order_id`, signed now with the local webhook secret.
    pub async fn pay(&self, order_id: &str, payment_id: &str, amount: u64, status: &str) -> Answer {
        let body = json!({"payment_id": payment_id, "order_id": order_id, "amount": amount, "currency": "EUR", "status": status})
            .to_string();
        let secret = crate::stack::DEFAULT_WEBHOOK_SECRET.as_bytes();
        let sig = signature::sign(secret, holdfast::clock::now_s(), body.as_bytes());
        self.call("POST", "/payments/callback", None, &[("x-signature", &sig)], Some(body)).await
    }

    /// A Stripe event (`peers::stripe::event`) delivered to `POST /payments/stripe` with the
    /// given `Stripe-Signature` header (`None`: no header at all).
    pub async fn stripe_raw(&self, body: &str, signature: Option<&str>) -> Answer {
        let headers: Vec<(&str, &str)> = signature.iter().map(|s| ("stripe-signature", *s)).collect();
        self.call("POST", "/payments/stripe", None, &headers, Some(body.to_owned())).await
    }

    /// A Stripe event signed now with the local endpoint secret, as Stripe would send it.
    pub async fn stripe(&self, event: &Value) -> Answer {
        let body = event.to_string();
        let sig = crate::peers::stripe::signature(
            &[crate::stack::DEFAULT_STRIPE_WEBHOOK_SECRET],
            holdfast::clock::now_s(),
            &body,
        );
        self.stripe_raw(&body, Some(&sig)).await
    }
}
