//! reservations: the stock service on its own, for other order systems (docs/architecture.md,
//! "HTTP contract").
//! `POST /reservations`, `POST /reservations/{order_id}/confirm|release`. A reservation belongs
//! to the caller (`sub` of its token): others see 404.

use super::routes::Route;
use crate::api::reservations::{ReservationRequest, ReservationView};
use crate::api::{Auth, SCOPE_RESERVATIONS};
use crate::app::App;
use crate::clock;
use crate::domain::reservation::{LockStatus, ReservationKind};
use crate::domain::sale::WriteKind::{Always, Checkout};
use crate::domain::{OrderId, ReservationId};
use crate::http::{self, json_response, path_param, subject, typed_body, Code, Problem, Request, Response};
use crate::ports::{Message, MAX_DELAY_SECONDS};
use crate::service::orders::request_hash;
use crate::service::stock::{self, FreezeRequest, Frozen, LockChange, LockError, OnReleased};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::write("POST /reservations", Auth::Scope(SCOPE_RESERVATIONS), Checkout, |a, r| Box::pin(create(a, r))),
    Route::write("POST /reservations/{order_id}/confirm", Auth::Scope(SCOPE_RESERVATIONS), Always, |a, r| {
        Box::pin(change(a, r, LockStatus::Sold))
    }),
    Route::write("POST /reservations/{order_id}/release", Auth::Scope(SCOPE_RESERVATIONS), Always, |a, r| {
        Box::pin(change(a, r, LockStatus::Released))
    }),
];

pub async fn handle(app: &App, req: Request) -> Response {
    super::routes::serve(ROUTES, app, &req).await
}

async fn create(app: &App, req: &Request) -> Result<Response, Problem> {
    let caller = subject(req)?;
    let ReservationRequest { order_id, user_id: user, ttl_seconds, items: lines } =
        typed_body(req, app.config.max_body_bytes)?;
    let ttl = ttl_seconds.unwrap_or(app.config.payment_ttl_s);
    let id = ReservationId::external(&caller, &order_id);
    let mut fingerprint = request_hash(&lines);
    if let Some(u) = &user {
        fingerprint.push_str(u.as_str());
    }
    let skus: Vec<_> = lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await.map_err(Problem::from)?;
    let freeze = FreezeRequest {
        id: id.clone(),
        kind: ReservationKind::External,
        user,
        lines,
        request_hash: fingerprint,
        expires_at: clock::now_s() + ttl,
        admission: None,
    };
    let (status, r) = match stock::freeze(app, &freeze, &metas).await.map_err(Problem::from)? {
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
    Ok(json_response(status, &ReservationView::new(&order_id, &r)))
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
            Ok(json_response(200, &ReservationView::new(&order_id, &r)))
        }
        Ok(LockChange::Oversold(_)) => {
            Err(Problem::new(Code::Oversold, "the reservation was released and its stock sold; nothing was confirmed"))
        }
        Err(LockError::NotFound) => Err(Problem::not_found("no such reservation")),
        Err(LockError::InvalidTransition(LockStatus::Released)) if to == LockStatus::Sold => Err(Problem::new(
            Code::ReservationExpired,
            "the reservation was released (by the caller or at its deadline); create a new one",
        )),
        Err(LockError::InvalidTransition(st)) => {
            Err(Problem::invalid_transition(format!("the reservation is {}", st.as_str())))
        }
        Err(LockError::Store(e)) => Err(e.into()),
    }
}
