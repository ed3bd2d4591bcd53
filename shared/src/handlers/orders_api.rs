//! orders-api: `GET /orders`, `GET /orders/{order_id}`, `POST /orders/{order_id}/cancel`.

use crate::app::App;
use crate::clock;
use crate::domain::order::Order;
use crate::domain::OrderId;
use crate::http::{self, finish, json_response, path_param, query, subject, Problem, Request, Response};
use crate::ports::OrderCursor;
use crate::service::orders::{self, OrderError};
use base64::Engine;
use serde_json::{json, Value};

pub const DEFAULT_PAGE: usize = 20;
pub const MAX_PAGE: usize = 100;

/// The routes this function handles (checked against template.yaml).
pub const ROUTES: &[&str] = &["GET /orders", "GET /orders/{order_id}", "POST /orders/{order_id}/cancel"];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "GET /orders" => list(app, &req).await,
        "GET /orders/{order_id}" => get(app, &req).await,
        "POST /orders/{order_id}/cancel" => cancel(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

pub fn order_json(o: &Order) -> Value {
    json!({
        "order_id": o.id.as_str(),
        "user_id": o.user.as_str(),
        "status": o.status.as_str(),
        "items": o.lines.iter().map(|l| json!({"sku": l.sku.as_str(), "quantity": l.quantity, "unit_price": l.unit_price})).collect::<Vec<_>>(),
        "amount": o.amount,
        "currency": o.currency.as_str(),
        "pay_expire_at": clock::rfc3339(o.pay_expire_at * 1000),
        "created_at": clock::rfc3339(o.created_at_ms),
        "version": o.version,
        "payment_id": o.payment_id,
        "refunds_requested": o.refund_requests(),
    })
}

fn order_problem(e: OrderError) -> Problem {
    match e {
        OrderError::NotFound => Problem::not_found("no such order"),
        OrderError::Invalid(t) => Problem::invalid_transition(format!("the order is {}", t.from.as_str())),
        OrderError::Store(e) => e.into(),
    }
}

fn order_id(req: &Request) -> Result<OrderId, Problem> {
    OrderId::parse(path_param(req, "order_id")?).map_err(|_| Problem::not_found("no such order"))
}

async fn get(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let o = orders::get_owned(app, &user, &order_id(req)?).await.map_err(order_problem)?;
    Ok(json_response(200, &order_json(&o)))
}

async fn cancel(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let o = orders::cancel(app, &user, &order_id(req)?).await.map_err(order_problem)?;
    Ok(json_response(200, &order_json(&o)))
}

fn encode_cursor(c: &OrderCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{}", c.created_at_ms, c.order_id))
}

fn decode_cursor(s: &str) -> Option<OrderCursor> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (ca, id) = text.split_once(':')?;
    Some(OrderCursor { created_at_ms: ca.parse().ok()?, order_id: OrderId::parse(id).ok()? })
}

async fn list(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let limit = match query(req, "limit") {
        None => DEFAULT_PAGE,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => {
                return Err(
                    Problem::validation(format!("limit must be an integer in 1..={MAX_PAGE}")).with("field", "limit")
                )
            }
        },
    };
    let cursor = match query(req, "cursor") {
        None => None,
        Some(c) => {
            Some(decode_cursor(c).ok_or_else(|| Problem::validation("cursor is not valid").with("field", "cursor"))?)
        }
    };
    let (orders, next) = app.orders.list_for_user(&user, cursor.as_ref(), limit).await?;
    Ok(json_response(
        200,
        &json!({
            "orders": orders.iter().map(order_json).collect::<Vec<_>>(),
            "next_cursor": next.as_ref().map(encode_cursor),
        }),
    ))
}
