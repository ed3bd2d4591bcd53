//! orders-api: `GET /orders`, `GET /orders/{order_id}`, `POST /orders/{order_id}/cancel`.

use crate::api::orders::{OrderList, OrderView, DEFAULT_PAGE, MAX_PAGE};
use crate::api::{Auth, Route};
use crate::app::App;
use crate::domain::OrderId;
use crate::http::{self, finish, json_response, path_param, query, subject, Problem, Request, Response};
use crate::ports::OrderCursor;
use crate::service::orders::{self, OrderError};
use base64::Engine;

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::new("GET /orders", Auth::User),
    Route::new("GET /orders/{order_id}", Auth::User),
    Route::new("POST /orders/{order_id}/cancel", Auth::User),
];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "GET /orders" => list(app, &req).await,
        "GET /orders/{order_id}" => get(app, &req).await,
        "POST /orders/{order_id}/cancel" => cancel(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
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
    Ok(json_response(200, &OrderView::from(&o)))
}

async fn cancel(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let o = orders::cancel(app, &user, &order_id(req)?).await.map_err(order_problem)?;
    Ok(json_response(200, &OrderView::from(&o)))
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
            _ => return Err(Problem::validation(format!("limit must be an integer in 1..={MAX_PAGE}")).field("limit")),
        },
    };
    let cursor = match query(req, "cursor") {
        None => None,
        Some(c) => Some(decode_cursor(c).ok_or_else(|| Problem::validation("cursor is not valid").field("cursor"))?),
    };
    let (orders, next) = app.orders.list_for_user(&user, cursor.as_ref(), limit).await?;
    Ok(json_response(
        200,
        &OrderList {
            orders: orders.iter().map(OrderView::from).collect(),
            next_cursor: next.as_ref().map(encode_cursor),
        },
    ))
}
