//! payment-callback: `POST /payments/callback`, an HMAC-signed webhook (DESIGN §4.5).

use crate::app::App;
use crate::clock;
use crate::domain::signature;
use crate::domain::OrderId;
use crate::http::{self, finish, json_response, only_fields, str_field, Problem, Request, Response};
use crate::service::payments::{self, PaymentError, PaymentNotice};
use serde_json::{json, Value};

/// The routes this function handles (checked against template.yaml).
pub const ROUTES: &[&str] = &["POST /payments/callback"];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "POST /payments/callback" => callback(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

/// Parses a verified body.
pub fn parse_notice(raw: &[u8]) -> Result<PaymentNotice, Problem> {
    let v: Value = serde_json::from_slice(raw).map_err(|e| Problem::malformed(e.to_string()))?;
    let Value::Object(b) = v else { return Err(Problem::validation("body must be a JSON object")) };
    only_fields(&b, &["payment_id", "order_id", "amount", "currency", "status"])?;
    let payment_id = str_field(&b, "payment_id")?;
    if payment_id.is_empty() || payment_id.len() > 128 || !payment_id.bytes().all(|c| (0x21..=0x7e).contains(&c)) {
        return Err(
            Problem::validation("payment_id must be 1-128 printable ASCII characters").with("field", "payment_id")
        );
    }
    let order_id = OrderId::parse(str_field(&b, "order_id")?)
        .map_err(|e| Problem::validation(e.to_string()).with("field", "order_id"))?;
    let amount = b.get("amount").and_then(Value::as_u64).ok_or_else(|| {
        Problem::validation("amount must be a non-negative integer of minor units").with("field", "amount")
    })?;
    let currency = str_field(&b, "currency")?.to_owned();
    let succeeded = match str_field(&b, "status")? {
        "SUCCEEDED" => true,
        "FAILED" => false,
        _ => return Err(Problem::validation("status must be SUCCEEDED or FAILED").with("field", "status")),
    };
    Ok(PaymentNotice { payment_id: payment_id.to_owned(), order_id, amount, currency, succeeded })
}

async fn callback(app: &App, req: &Request) -> Result<Response, Problem> {
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
    let notice = parse_notice(&raw)?;
    match payments::apply(app, &notice).await {
        Ok(r) => Ok(json_response(200, &json!({"result": r.as_str(), "order_id": notice.order_id.as_str()}))),
        Err(PaymentError::UnknownOrder) => Err(Problem::not_found("no such order")),
        Err(PaymentError::AmountMismatch) => {
            Err(Problem::new(409, "amount_mismatch", "Amount mismatch", "amount or currency does not match the order"))
        }
        Err(PaymentError::TooManyPayments) => {
            Err(Problem::new(409, "too_many_payments", "Too many payments", "this order has too many payment records"))
        }
        Err(PaymentError::Store(e)) => Err(e.into()),
    }
}
