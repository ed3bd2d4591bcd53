//! payment-callback: `POST /payments/callback`, an HMAC-signed webhook (docs/architecture.md,
//! "Payment callback"), and `POST /payments/refunds`, the same provider's refund confirmation
//! (docs/after-sale.md, "Refunds").

use crate::api::after_sale::{RefundWebhook, RefundWebhookAnswer, RefundWebhookStatus};
use crate::api::payments::{CallbackAnswer, PaymentCallback};
use crate::api::{Auth, Route};
use crate::app::App;
use crate::clock;
use crate::domain::signature;
use crate::http::{self, finish, json_response, Code, Problem, Request, Response};
use crate::service::payments::{self, PaymentError, PaymentNotice};
use crate::service::refunds::{self, RefundConfirmation, RefundError};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::new("POST /payments/callback", Auth::Signed),
    Route::new("POST /payments/refunds", Auth::Signed),
    // Stripe's webhook, signed with `Stripe-Signature` (docs/after-sale.md, "Stripe")
    Route::new("POST /payments/stripe", Auth::Signed),
];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "POST /payments/callback" => callback(app, &req).await,
        "POST /payments/refunds" => refund_webhook(app, &req).await,
        "POST /payments/stripe" => super::stripe_webhook::webhook(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

/// Parses a verified body.
pub fn parse_notice(raw: &[u8]) -> Result<PaymentNotice, Problem> {
    crate::api::body::parse::<PaymentCallback>(raw).map(PaymentNotice::from)
}

/// The body, once its `X-Signature` verified under the current or the previous key.
async fn verified_body(app: &App, req: &Request) -> Result<Vec<u8>, Problem> {
    let raw = http::body_bytes(req, app.config.max_body_bytes)?;
    let header = http::header(req, "x-signature").unwrap_or("");
    // Current and previous key during a rotation (security review V5): either verifies.
    let keys = app.webhook_keys.keys().await.map_err(Problem::from)?;
    if keys.is_empty() {
        return Err(Problem::internal("webhook secret not configured"));
    }
    let now = clock::now_s();
    let mut verdict = Err(signature::SignatureError::Mismatch);
    for k in &keys {
        verdict = signature::verify(k.expose(), header, &raw, now);
        if verdict.is_ok() {
            break;
        }
    }
    verdict.map_err(|e| Problem::unauthorized(e.to_string()))?;
    Ok(raw)
}

async fn refund_webhook(app: &App, req: &Request) -> Result<Response, Problem> {
    let raw = verified_body(app, req).await?;
    let b: RefundWebhook = crate::api::body::parse(&raw)?;
    let c = RefundConfirmation {
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
        Err(e) => Err(anyhow::anyhow!(e).into()),
    }
}

async fn callback(app: &App, req: &Request) -> Result<Response, Problem> {
    let raw = verified_body(app, req).await?;
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
