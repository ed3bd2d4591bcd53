//! queue-api: a drop's waiting room in its own function, with its own route throttles and
//! reserved concurrency, so a drop's crowd never takes ordinary shoppers' capacity
//! (docs/waiting-room.md): join, where am I, the public queue, the operators' view and lever,
//! and the queued checkout (`POST /campaigns/{campaign_id}/checkout`, the checkout of
//! `POST /orders` with its admission token).

use super::campaigns_api::campaign_param;
use super::create_order;
use super::routes::Route;
use crate::api::queue::{QueuePlace, QueuePublic, QueueStatsView};
use crate::api::{Auth, ADMIN_CATALOGUE, SCOPE_ORDERS_READ, SCOPE_ORDERS_WRITE};
use crate::app::App;
use crate::domain::sale::WriteKind::{Always, Checkout, Other};
use crate::http::{self, json_response, subject, Problem, Request, Response};
use crate::service::queue::{self};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::write("POST /campaigns/{campaign_id}/queue", Auth::Scope(SCOPE_ORDERS_WRITE), Other, |a, r| {
        Box::pin(join(a, r))
    }),
    Route::read("GET /campaigns/{campaign_id}/queue/me", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(me(a, r))),
    Route::read("GET /campaigns/{campaign_id}/queue", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(public(a, r))),
    Route::write(CHECKOUT, Auth::Scope(SCOPE_ORDERS_WRITE), Checkout, |a, r| Box::pin(create_order::queued(a, r))),
    Route::read("GET /admin/campaigns/{campaign_id}/queue", Auth::AnyScope(ADMIN_CATALOGUE), |a, r| {
        Box::pin(admin_stats(a, r))
    }),
    Route::write("POST /admin/campaigns/{campaign_id}/queue/pause", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(pause(a, r, true))
    }),
    Route::write(
        "POST /admin/campaigns/{campaign_id}/queue/resume",
        Auth::AnyScope(ADMIN_CATALOGUE),
        Always,
        |a, r| Box::pin(pause(a, r, false)),
    ),
];

/// The queued checkout: `POST /orders`'s checkout with an admission token (docs/waiting-room.md).
use create_order::QUEUED_CHECKOUT as CHECKOUT;

pub async fn handle(app: &App, req: Request) -> Response {
    if http::route(&req) == CHECKOUT {
        return create_order::correlated(app, &req, ROUTES).await;
    }
    super::routes::serve(ROUTES, app, &req).await
}

async fn join(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let user = subject(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let (p, created) = queue::join(app, &user, &id).await.map_err(Problem::from)?;
    Ok(json_response(if created { 201 } else { 200 }, &QueuePlace::new(id.as_str(), p)))
}

async fn me(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let user = subject(req)?;
    let p = queue::me(app, &user, &id).await.map_err(Problem::from)?;
    let mut r = json_response(200, &QueuePlace::new(id.as_str(), p));
    // the admission token is the buyer's: no shared cache may keep it
    r.headers.insert(::http::header::CACHE_CONTROL, ::http::header::HeaderValue::from_static("private, no-store"));
    Ok(r)
}

async fn public(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let (c, spec, room, s) = queue::stats(app, &id).await.map_err(Problem::from)?;
    let started = crate::clock::now_s() >= c.starts_at;
    let public = QueuePublic {
        rate: spec.rate,
        token_ttl_seconds: spec.token_ttl_s,
        draw: QueueStatsView::new(id.as_str(), &spec, &s).draw,
        seed_sha256: spec.seed_sha256(),
        seed: started.then(|| spec.seed.clone()),
        pre_start: room.pre_start.clone(),
    };
    let mut v = serde_json::to_value(public).map_err(|e| Problem::internal(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("joined".into(), s.joined.into());
        o.insert("admitted_through".into(), s.admitted_through.into());
    }
    Ok(json_response(200, &v))
}

async fn admin_stats(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let (_, spec, _, s) = queue::stats(app, &id).await.map_err(Problem::from)?;
    Ok(json_response(200, &QueueStatsView::new(id.as_str(), &spec, &s)))
}

async fn pause(app: &App, req: &Request, paused: bool) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    queue::set_paused(app, &id, paused).await.map_err(Problem::from)?;
    let (_, spec, _, s) = queue::stats(app, &id).await.map_err(Problem::from)?;
    Ok(json_response(200, &QueueStatsView::new(id.as_str(), &spec, &s)))
}
