//! reservations: the stock service on its own, for other order systems (DESIGN §8).
//! `POST /reservations`, `POST /reservations/{order_id}/confirm|release`. A reservation belongs
//! to the caller (`sub` of its token): others see 404.

use super::common::{freeze_problem, parse_items};
use crate::app::App;
use crate::clock;
use crate::domain::reservation::{LockStatus, Reservation, ReservationKind};
use crate::domain::{OrderId, ReservationId, UserId};
use crate::http::{
    self, finish, json_body, json_response, only_fields, path_param, str_field, subject, Problem, Request, Response,
};
use crate::ports::{Message, MAX_DELAY_SECONDS};
use crate::service::orders::request_hash;
use crate::service::stock::{self, FreezeRequest, Frozen, LockChange, LockError, OnReleased};
use serde_json::{json, Value};

/// Longest hold an external reservation may ask for (7 days).
pub const MAX_TTL_SECONDS: i64 = 7 * 24 * 3600;

/// The routes this function handles (checked against template.yaml).
pub const ROUTES: &[&str] =
    &["POST /reservations", "POST /reservations/{order_id}/confirm", "POST /reservations/{order_id}/release"];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "POST /reservations" => create(app, &req).await,
        "POST /reservations/{order_id}/confirm" => change(app, &req, LockStatus::Sold).await,
        "POST /reservations/{order_id}/release" => change(app, &req, LockStatus::Released).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

fn reservation_json(order_id: &str, r: &Reservation) -> Value {
    json!({
        "order_id": order_id,
        "status": r.status.as_str(),
        "expires_at": clock::rfc3339(r.expires_at * 1000),
        "user_id": r.user.as_ref().map(UserId::as_str),
        "items": r.lines.iter().map(|l| json!({"sku": l.sku.as_str(), "quantity": l.quantity, "unit_price": l.unit_price, "currency": l.currency.as_str()})).collect::<Vec<_>>(),
    })
}

async fn create(app: &App, req: &Request) -> Result<Response, Problem> {
    let caller = subject(req)?;
    let b = json_body(req, app.config.max_body_bytes)?;
    only_fields(&b, &["order_id", "user_id", "ttl_seconds", "items"])?;
    let order_id = OrderId::parse(str_field(&b, "order_id")?)
        .map_err(|e| Problem::validation(e.to_string()).with("field", "order_id"))?;
    let user = match b.get("user_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) => {
            Some(UserId::parse(u).map_err(|e| Problem::validation(e.to_string()).with("field", "user_id"))?)
        }
        Some(_) => return Err(Problem::validation("user_id must be a string").with("field", "user_id")),
    };
    let ttl = match b.get("ttl_seconds") {
        None | Some(Value::Null) => app.config.payment_ttl_s,
        Some(v) => match v.as_i64() {
            Some(t) if (1..=MAX_TTL_SECONDS).contains(&t) => t,
            _ => {
                return Err(Problem::validation(format!("ttl_seconds must be an integer in 1..={MAX_TTL_SECONDS}"))
                    .with("field", "ttl_seconds"))
            }
        },
    };
    let lines = parse_items(&b)?;
    let id = ReservationId::external(&caller, &order_id);
    let mut fingerprint = request_hash(&lines);
    if let Some(u) = &user {
        fingerprint.push_str(u.as_str());
    }
    let skus: Vec<_> = lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await.map_err(freeze_problem)?;
    let freeze = FreezeRequest {
        id: id.clone(),
        kind: ReservationKind::External,
        user,
        lines,
        request_hash: fingerprint,
        expires_at: clock::now_s() + ttl,
    };
    let (status, r) = match stock::freeze(app, &freeze, &metas).await.map_err(freeze_problem)? {
        Frozen::Created(r) => (201, r),
        Frozen::Replayed(r) => (200, r),
    };
    // Sent after the freeze, and again on a replay of a hold still FROZEN: a caller that retries
    // after a crash between the two re-arms its release.
    if r.status == LockStatus::Frozen {
        let msg = Message::ReservationCheck {
            schema: 1,
            reservation_id: id.to_string(),
            kind: ReservationKind::External,
            due_at: r.expires_at,
        };
        let wait = (r.expires_at - clock::now_s()).clamp(0, MAX_DELAY_SECONDS) as u32;
        if let Err(e) = app.messages.send(&msg, wait).await {
            // reconcile releases it once it is stale and past its deadline
            tracing::warn!(reservation = %id, error = format!("{e:#}"), "reservation-check message not sent");
        }
    }
    Ok(json_response(status, &reservation_json(order_id.as_str(), &r)))
}

async fn change(app: &App, req: &Request, to: LockStatus) -> Result<Response, Problem> {
    let caller = subject(req)?;
    let order_id =
        OrderId::parse(path_param(req, "order_id")?).map_err(|_| Problem::not_found("no such reservation"))?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let id = ReservationId::external(&caller, &order_id);
    let r = match to {
        LockStatus::Sold => stock::confirm(app, &id, OnReleased::Refuse).await,
        _ => stock::release(app, &id).await,
    };
    match r {
        Ok(LockChange::Moved(r)) | Ok(LockChange::Unchanged(r)) | Ok(LockChange::Retaken(r)) => {
            Ok(json_response(200, &reservation_json(order_id.as_str(), &r)))
        }
        Ok(LockChange::Oversold(_)) => Err(Problem::new(
            409,
            "oversold",
            "Stock no longer available",
            "the reservation was released and its stock sold; nothing was confirmed",
        )),
        Err(LockError::NotFound) => Err(Problem::not_found("no such reservation")),
        Err(LockError::InvalidTransition(LockStatus::Released)) if to == LockStatus::Sold => Err(Problem::new(
            409,
            "reservation_expired",
            "Reservation released",
            "the reservation was released (by the caller or at its deadline); create a new one",
        )),
        Err(LockError::InvalidTransition(st)) => {
            Err(Problem::invalid_transition(format!("the reservation is {}", st.as_str())))
        }
        Err(LockError::Store(e)) => Err(e.into()),
    }
}
