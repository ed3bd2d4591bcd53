//! create-order: `POST /orders` with a required `Idempotency-Key`.

use super::routes::Route;
use crate::api::orders::{CreateOrderRequest, OrderView, RecordedCheckoutView};
use crate::api::{Auth, SCOPE_ORDERS_WRITE};
use crate::app::App;
use crate::domain::sale::WriteKind;
use crate::domain::IdempotencyKey;
use crate::http::{self, finish, json_response, subject, typed_body, Code, Problem, Request, Response};
use crate::service::orders::{self, CreateError};
use crate::telemetry::names;
use ::http::header::HeaderValue;

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[Route::write(CHECKOUT, Auth::Scope(SCOPE_ORDERS_WRITE), WriteKind::Checkout, |a, r| {
    Box::pin(create(a, r, None))
})];

pub async fn handle(app: &App, req: Request) -> Response {
    correlated(app, &req, ROUTES).await
}

/// A checkout route of `routes` served under one correlation id, from the request through
/// stream, bus and queues (docs/operations.md), echoed as `X-Request-Id`: `POST /orders`, and
/// the queued campaign checkout `POST /campaigns/{campaign_id}/checkout` served by queue-api.
pub async fn correlated(app: &App, req: &Request, routes: &'static [Route]) -> Response {
    let id = crate::telemetry::request_correlation(http::header(req, "x-request-id"), http::header(req, "traceparent"));
    let mut r = crate::telemetry::correlated(&app.function, Some(id.clone()), async {
        let r = super::routes::serve(routes, app, req).await;
        tracing::info!(status = r.status_code, "checkout answered");
        r
    })
    .await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        r.headers.insert("x-request-id", v);
    }
    r
}

/// The checkout's route.
const CHECKOUT: &str = "POST /orders";

/// The route of the queued campaign checkout, served by queue-api (docs/waiting-room.md).
pub const QUEUED_CHECKOUT: &str = "POST /campaigns/{campaign_id}/checkout";

/// The queued campaign checkout (docs/waiting-room.md): `POST /orders` whose lines must all be of
/// the path's campaign.
pub async fn queued(app: &App, req: &Request) -> Result<Response, Problem> {
    let c = super::campaigns_api::campaign_param(req)?;
    create(app, req, Some(c)).await
}

/// The answer to a retry of a checkout that already wrote its order (same user, Idempotency-Key
/// and body), for a request a refusal in front of the checkout (the sales switch) would turn
/// away; `None` for anything else, which the refusal then answers.
pub async fn replay(app: &App, req: &Request) -> Option<Response> {
    if !matches!(http::route(req), CHECKOUT | QUEUED_CHECKOUT) {
        return None;
    }
    let user = subject(req).ok()?;
    let key = IdempotencyKey::parse(http::header(req, "idempotency-key")?).ok()?;
    let body: CreateOrderRequest = typed_body(req, app.config.max_body_bytes).ok()?;
    let id = crate::domain::OrderId::derive(&user, &key);
    let hash = orders::checkout_hash(&body.items, &body.details());
    match orders::replay_of(app, &id, &hash).await {
        Ok(Some(o)) => {
            let mut r = finish(Ok(json_response(201, &OrderView::from(&o))));
            r.headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
            Some(r)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "replay lookup failed; the refusal answers");
            None
        }
    }
}

async fn create(app: &App, req: &Request, only: Option<crate::domain::CampaignId>) -> Result<Response, Problem> {
    let user = subject(req)?;
    let key = http::header(req, "idempotency-key")
        .ok_or_else(|| {
            Problem::new(Code::IdempotencyKeyRequired, "send an Idempotency-Key header").field("Idempotency-Key")
        })
        .and_then(|k| {
            IdempotencyKey::parse(k).map_err(|e| Problem::validation(e.to_string()).field("Idempotency-Key"))
        })?;
    let body: CreateOrderRequest = typed_body(req, app.config.max_body_bytes)?;
    if let Some(c) = &only {
        if body.items.iter().any(|l| l.campaign.as_ref() != Some(c)) {
            return Err(Problem::validation(format!("every line of this checkout names campaign {c}")).field("items"));
        }
    }
    let started = std::time::Instant::now();
    let mut campaigns: Vec<_> = body.items.iter().filter_map(|l| l.campaign.clone()).collect();
    campaigns.dedup();
    let r = checkout(app, user, key, body).await;
    // the live numbers of the sale room (docs/operations.md, "Live stats"): in memory, flushed
    // every few seconds, nothing added to this checkout's writes
    let refusal = r.as_ref().err().map(|p| p.code.as_str());
    // only campaigns the checkout resolved become live counters and metrics: an id a buyer made
    // up (refused as unknown, or refused before the campaigns were read) records nothing
    // (review security-3 M2)
    if r.as_ref().err().is_some_and(|p| !campaigns_resolved(p.code)) {
        campaigns.clear();
    }
    crate::service::sale::record_checkout(app, &campaigns, refusal, started.elapsed().as_millis() as u64);
    crate::service::sale::flush(app, false).await;
    r
}

/// Whether a checkout refused with `code` had resolved its lines' campaigns: every refusal
/// decided before the campaigns are read, or because one is not what the line says, did not.
fn campaigns_resolved(code: Code) -> bool {
    !matches!(
        code,
        Code::UnknownCampaign
            | Code::NotInCampaign
            | Code::UnknownSku
            | Code::ValidationFailed
            | Code::MalformedJson
            | Code::PayloadTooLarge
            | Code::IdempotencyKeyRequired
            | Code::IdempotencyKeyReused
            | Code::Unauthorized
    )
}

async fn checkout(
    app: &App,
    user: crate::domain::UserId,
    key: IdempotencyKey,
    body: CreateOrderRequest,
) -> Result<Response, Problem> {
    // The whole checkout has one budget (app.budget.request): a hung dependency gets a quick
    // 503 "retry with the same key" instead of holding the caller until the Lambda timeout.
    // Dropping the use case mid-way is a crash at that point, which the fence and the
    // reservation check already cover.
    let details = body.details();
    let created = match tokio::time::timeout(
        app.budget.request,
        orders::create_with(app, &user, &key, body.items, &details, body.admission_token.as_deref()),
    )
    .await
    {
        Ok(r) => r,
        Err(_) => {
            app.count(names::CHECKOUT_BUDGET_EXCEEDED, 1);
            tracing::error!(budget_ms = app.budget.request.as_millis() as u64, "checkout ran out of its time budget");
            return Err(Problem::internal("a dependency is slow; retry with the same Idempotency-Key").retry_after(1));
        }
    };
    if let Err(CreateError::Recorded(r)) = &created {
        return Ok(json_response(202, &RecordedCheckoutView::from(&**r)));
    }
    let (order, replayed) = created.map_err(Problem::from).inspect_err(|p| {
        if p.code == Code::Busy {
            app.count(names::THROTTLED, 1);
        }
    })?;
    // A replay answers exactly as the first request did.
    let mut r = json_response(201, &OrderView::from(&order));
    if replayed {
        r.headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(r)
}
