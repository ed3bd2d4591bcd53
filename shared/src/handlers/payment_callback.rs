//! payment-callback: `POST /payments/callback`, an HMAC-signed webhook (docs/architecture.md,
//! "Payment callback"), and `POST /payments/refunds`, the same provider's refund confirmation
//! (docs/after-sale.md, "Refunds"), signed the same way but with its own key, so a payment
//! callback's signature can never confirm a refund (security review M1, L1).

use super::routes::Route;
use crate::api::after_sale::{RefundWebhook, RefundWebhookAnswer, RefundWebhookStatus};
use crate::api::payments::{CallbackAnswer, PaymentCallback};
use crate::api::spec::{SIGNATURE, STRIPE_SIGNATURE};
use crate::api::Auth;
use crate::app::App;
use crate::clock;
use crate::domain::order::Provider;
use crate::domain::sale::WriteKind::Always;
use crate::domain::signature;
use crate::http::{self, json_response, Code, Problem, Request, Response};
use crate::ports::WebhookKeys;
use crate::service::payments::{self, PaymentError, PaymentNotice};
use crate::service::refunds::{self, RefundConfirmation, RefundError};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::write("POST /payments/callback", Auth::Signed(SIGNATURE), Always, |a, r| Box::pin(callback(a, r))),
    Route::write("POST /payments/refunds", Auth::Signed(SIGNATURE), Always, |a, r| Box::pin(refund_webhook(a, r))),
    // Stripe's webhook, signed with `Stripe-Signature` (docs/after-sale.md, "Stripe")
    Route::write("POST /payments/stripe", Auth::Signed(STRIPE_SIGNATURE), Always, |a, r| {
        Box::pin(super::stripe_webhook::webhook(a, r))
    }),
];

pub async fn handle(app: &App, req: Request) -> Response {
    super::routes::serve(ROUTES, app, &req).await
}

/// Parses a verified body.
pub fn parse_notice(raw: &[u8]) -> Result<PaymentNotice, Problem> {
    crate::api::body::parse::<PaymentCallback>(raw).map(PaymentNotice::from)
}

/// The body, once its `X-Signature` verified under one of `keys`: the current key, and the
/// previous one during its window after a rotation (security review V5, M1).
async fn verified_body(app: &App, req: &Request, keys: &dyn WebhookKeys) -> Result<Vec<u8>, Problem> {
    let raw = http::body_bytes(req, app.config.max_body_bytes)?;
    let header = http::header(req, "x-signature").unwrap_or("");
    let now = clock::now_s();
    // A missing, malformed or stale header is refused before any key is fetched (review L4).
    signature::precheck(header, now).map_err(|e| Problem::unauthorized(e.to_string()))?;
    super::common::verify_with_any_key(keys, "webhook secret not configured", |k| {
        signature::verify(k, header, &raw, now)
    })
    .await?;
    Ok(raw)
}

async fn refund_webhook(app: &App, req: &Request) -> Result<Response, Problem> {
    let raw = verified_body(app, req, app.refund_webhook_keys.as_ref()).await?;
    let b: RefundWebhook = crate::api::body::parse(&raw)?;
    let c = RefundConfirmation {
        provider: Provider::Generic,
        order_id: b.order_id.clone(),
        refund_id: Some(b.refund_id),
        provider_refund_id: b.provider_refund_id,
        amount: b.amount,
        succeeded: b.status == RefundWebhookStatus::Succeeded,
    };
    match refunds::confirm(app, &c).await {
        Ok(r) => Ok(json_response(200, &RefundWebhookAnswer { result: r.as_str(), order_id: b.order_id.to_string() })),
        Err(RefundError::UnknownOrder | RefundError::UnknownRefund) => Err(Problem::not_found("no such refund")),
        Err(RefundError::AmountMismatch) => Err(Problem::new(Code::AmountMismatch, "amount does not match the refund")),
        // not ISSUED, another provider's, another provider refund id: 409, nothing changed
        Err(e @ RefundError::ConfirmationRefused(_)) => Err(Problem::new(Code::InvalidTransition, e.to_string())),
        Err(e) => Err(anyhow::anyhow!(e).into()),
    }
}

async fn callback(app: &App, req: &Request) -> Result<Response, Problem> {
    let raw = verified_body(app, req, app.webhook_keys.as_ref()).await?;
    let notice = parse_notice(&raw)?;
    match payments::apply(app, &notice).await {
        Ok(r) => {
            Ok(json_response(200, &CallbackAnswer { result: r.into(), order_id: notice.order_id.as_str().to_owned() }))
        }
        Err(PaymentError::UnknownOrder) => Err(Problem::not_found("no such order")),
        Err(PaymentError::AmountMismatch) => {
            Err(Problem::new(Code::AmountMismatch, "amount or currency does not match the order"))
        }
        Err(PaymentError::TooManyPayments) => {
            Err(Problem::new(Code::TooManyPayments, "this order has too many payment records"))
        }
        Err(PaymentError::Store(e)) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::secrets::StaticKeys;
    use crate::config::{Config, Secret};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Keys that count how often they are read.
    struct Counting(AtomicUsize, Vec<Secret>);

    #[async_trait::async_trait]
    impl WebhookKeys for Counting {
        async fn keys(&self) -> anyhow::Result<Vec<Secret>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(self.1.clone())
        }
    }

    fn request(route: &str, signature: &str, body: &str) -> Request {
        let mut r = Request { route_key: Some(route.to_owned()), body: Some(body.to_owned()), ..Default::default() };
        r.headers.insert("x-signature", signature.parse().unwrap());
        r
    }

    #[tokio::test]
    async fn a_bad_header_reads_no_key_and_a_callback_signature_cannot_confirm_a_refund() {
        let (app, _w) = crate::app::memory_app("payment-callback", Config::from_lookup(&|_| None).unwrap()).unwrap();
        let refund_keys = Arc::new(Counting(AtomicUsize::new(0), vec![Secret::new("refund-key")]));
        let app = App {
            refund_webhook_keys: refund_keys.clone(),
            webhook_keys: Arc::new(StaticKeys(vec![Secret::new("callback-key")])),
            ..app
        };
        let body =
            r#"{"order_id":"o1","refund_id":"rf_p1","provider_refund_id":"pr_1","amount":100,"status":"SUCCEEDED"}"#;
        let now = clock::now_s();
        // missing, malformed or stale: 401 before any key is read (review L4)
        for sig in [String::new(), "garbage".into(), format!("t={},v1=00", now - 301)] {
            let r = handle(&app, request("POST /payments/refunds", &sig, body)).await;
            assert_eq!(r.status_code, 401, "{sig:?}");
        }
        assert_eq!(refund_keys.0.load(Ordering::SeqCst), 0, "no key read for a header that cannot verify");
        // the payment callback's key does not sign refund confirmations (review L1)
        let with_callback_key = signature::sign(b"callback-key", now, body.as_bytes());
        let r = handle(&app, request("POST /payments/refunds", &with_callback_key, body)).await;
        assert_eq!(r.status_code, 401);
        // the refund key verifies (and the order is unknown here)
        let with_refund_key = signature::sign(b"refund-key", now, body.as_bytes());
        let r = handle(&app, request("POST /payments/refunds", &with_refund_key, body)).await;
        assert_eq!(r.status_code, 404);
        // … and does not sign payment callbacks
        let pay = r#"{"payment_id":"p1","order_id":"o1","amount":100,"currency":"EUR","status":"SUCCEEDED"}"#;
        let sig = signature::sign(b"refund-key", now, pay.as_bytes());
        assert_eq!(handle(&app, request("POST /payments/callback", &sig, pay)).await.status_code, 401);
    }
}
