//! stock-api: `PUT /admin/skus/{sku}`, `POST /admin/skus/{sku}/adjustments`, `GET /skus/{sku}`.

use crate::api::stock::{AdjustmentRequest, PutSkuRequest, SkuView};
use crate::api::{Auth, Route, SCOPE_ADMIN};
use crate::app::App;
use crate::domain::Sku;
use crate::http::{self, finish, json_response, path_param, typed_body, Code, Problem, Request, Response};
use crate::service::admin::{self, AdminError};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::new("PUT /admin/skus/{sku}", Auth::Scope(SCOPE_ADMIN)),
    Route::new("POST /admin/skus/{sku}/adjustments", Auth::Scope(SCOPE_ADMIN)),
    Route::new("GET /skus/{sku}", Auth::Public),
];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "PUT /admin/skus/{sku}" => put_sku(app, &req).await,
        "POST /admin/skus/{sku}/adjustments" => adjust(app, &req).await,
        "GET /skus/{sku}" => get_sku(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

fn sku_param(req: &Request) -> Result<Sku, Problem> {
    Sku::parse(path_param(req, "sku")?).map_err(|e| Problem::validation(e.to_string()).field("sku"))
}

fn admin_problem(e: AdminError) -> Problem {
    match e {
        AdminError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).sku(s.as_str()),
        AdminError::Insufficient(n) => {
            Problem::new(Code::InsufficientStock, format!("cannot remove {n} units: not that many available"))
        }
        AdminError::AdjustmentReused => {
            Problem::new(Code::IdempotencyKeyReused, "this adjustment_id was already applied with a different delta")
        }
        AdminError::Contention => Problem::internal("contention; retry"),
        AdminError::Store(e) => Problem::from(e),
    }
}

async fn put_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let spec = typed_body::<PutSkuRequest>(req, app.config.max_body_bytes)?.into();
    let (_, created) = admin::put_sku(app, &sku, &spec).await.map_err(admin_problem)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if created { 201 } else { 200 }, &SkuView::from(&v)))
}

async fn adjust(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let b: AdjustmentRequest = typed_body(req, app.config.max_body_bytes)?;
    let applied = admin::adjust(app, &sku, &b.adjustment_id, b.delta, &b.reason).await.map_err(admin_problem)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if applied { 201 } else { 200 }, &SkuView::from(&v)))
}

async fn get_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    match admin::view(app, &sku).await? {
        Some(v) => Ok(json_response(200, &SkuView::from(&v))),
        None => Err(Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str())),
    }
}
