//! stock-api: `PUT /admin/skus/{sku}`, `POST /admin/skus/{sku}/adjustments`, `GET /skus/{sku}`.

use super::campaigns_api;
use crate::app::App;
use crate::domain::allocation::MAX_SHARDS;
use crate::domain::money::Money;
use crate::domain::{Currency, Sku};
use crate::http::{
    self, finish, json_body, json_response, only_fields, path_param, str_field, Problem, Request, Response,
};
use crate::service::admin::{self, AdminError, SkuSpec, StockView};
use serde_json::{json, Map, Value};

/// Largest absolute stock change in one adjustment.
pub const MAX_DELTA: i64 = 1_000_000_000;

/// The routes this function handles (checked against template.yaml).
pub const ROUTES: &[&str] = &[
    "PUT /admin/skus/{sku}",
    "POST /admin/skus/{sku}/adjustments",
    "POST /admin/skus/{sku}/pause",
    "POST /admin/skus/{sku}/resume",
    "GET /skus/{sku}",
    "GET /skus/{sku}/availability",
    "GET /skus/{sku}/availability/me",
    "PUT /admin/campaigns/{campaign_id}",
    "POST /admin/campaigns/{campaign_id}/adjustments",
    "POST /admin/campaigns/{campaign_id}/pause",
    "POST /admin/campaigns/{campaign_id}/resume",
    "GET /campaigns/{campaign_id}",
];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "PUT /admin/skus/{sku}" => put_sku(app, &req).await,
        "POST /admin/skus/{sku}/adjustments" => adjust(app, &req).await,
        "POST /admin/skus/{sku}/pause" => campaigns_api::pause_sku(app, &req, true).await,
        "POST /admin/skus/{sku}/resume" => campaigns_api::pause_sku(app, &req, false).await,
        "GET /skus/{sku}" => campaigns_api::get_sku(app, &req).await,
        "GET /skus/{sku}/availability" => campaigns_api::availability(app, &req, false).await,
        "GET /skus/{sku}/availability/me" => campaigns_api::availability(app, &req, true).await,
        "PUT /admin/campaigns/{campaign_id}" => campaigns_api::put_campaign(app, &req).await,
        "POST /admin/campaigns/{campaign_id}/adjustments" => campaigns_api::adjust_campaign(app, &req).await,
        "POST /admin/campaigns/{campaign_id}/pause" => campaigns_api::pause_campaign(app, &req, true).await,
        "POST /admin/campaigns/{campaign_id}/resume" => campaigns_api::pause_campaign(app, &req, false).await,
        "GET /campaigns/{campaign_id}" => campaigns_api::get_campaign(app, &req).await,
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}

pub fn sku_param(req: &Request) -> Result<Sku, Problem> {
    Sku::parse(path_param(req, "sku")?).map_err(|e| Problem::validation(e.to_string()).with("field", "sku"))
}

pub fn admin_problem(e: AdminError) -> Problem {
    match e {
        AdminError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).with("sku", s.as_str()),
        AdminError::Insufficient(n) => Problem::new(
            409,
            "insufficient_stock",
            "Insufficient stock",
            format!("cannot remove {n} units: not that many available"),
        ),
        AdminError::AdjustmentReused => Problem::new(
            422,
            "idempotency_key_reused",
            "Adjustment id reused",
            "this adjustment_id was already applied with a different delta",
        ),
        AdminError::Contention => Problem::internal("contention; retry"),
        AdminError::Store(e) => Problem::from(e),
    }
}

pub fn view_json(v: &StockView) -> Value {
    json!({
        "sku": v.meta.sku.as_str(),
        "name": v.meta.name,
        "price": v.meta.price,
        "currency": v.meta.currency.as_str(),
        "total": v.totals.available + v.totals.locked + v.totals.sold,
        "available": v.totals.available,
        "locked": v.totals.locked,
        "sold": v.totals.sold,
        "per_user_limit": v.meta.per_user_limit,
        "shards": v.meta.shards,
        "paused": v.meta.paused,
    })
}

fn parse_spec(b: &Map<String, Value>) -> Result<SkuSpec, Problem> {
    only_fields(b, &["name", "price", "currency", "shards", "per_user_limit"])?;
    let name = str_field(b, "name")?;
    if name.trim().is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(
            Problem::validation("name must be 1-200 characters without control characters").with("field", "name")
        );
    }
    let price = Money::price_from_json(b.get("price").unwrap_or(&Value::Null))
        .map_err(|e| Problem::validation(e.to_string()).with("field", "price"))?;
    let currency = Currency::parse(str_field(b, "currency")?)
        .map_err(|e| Problem::validation(e.to_string()).with("field", "currency"))?;
    let shards = match b.get("shards") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(MAX_SHARDS)).contains(&n) => n as u16,
            _ => {
                return Err(Problem::validation(format!("shards must be an integer in 1..={MAX_SHARDS}"))
                    .with("field", "shards"))
            }
        },
    };
    let per_user_limit = match b.get("per_user_limit") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(crate::domain::quantity::MAX_QUANTITY)).contains(&n) => Some(n as u32),
            _ => {
                return Err(
                    Problem::validation("per_user_limit must be a positive integer").with("field", "per_user_limit")
                )
            }
        },
    };
    Ok(SkuSpec { name: name.to_owned(), price, currency, shards, per_user_limit })
}

async fn put_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let spec = parse_spec(&json_body(req, app.config.max_body_bytes)?)?;
    let (_, created) = admin::put_sku(app, &sku, &spec).await.map_err(admin_problem)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if created { 201 } else { 200 }, &view_json(&v)))
}

async fn adjust(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let b = json_body(req, app.config.max_body_bytes)?;
    only_fields(&b, &["adjustment_id", "delta", "reason"])?;
    let id = str_field(&b, "adjustment_id")?;
    crate::domain::OrderId::parse(id).map_err(|_| {
        Problem::validation("adjustment_id must be 1-64 characters of [A-Za-z0-9._-]").with("field", "adjustment_id")
    })?;
    let delta = match b.get("delta").and_then(Value::as_i64) {
        Some(d) if d != 0 && (-MAX_DELTA..=MAX_DELTA).contains(&d) => d,
        _ => {
            return Err(Problem::validation(format!("delta must be a non-zero integer within ±{MAX_DELTA}"))
                .with("field", "delta"))
        }
    };
    let reason = str_field(&b, "reason")?;
    if reason.trim().is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(
            Problem::validation("reason must be 1-500 characters without control characters").with("field", "reason")
        );
    }
    let applied = admin::adjust(app, &sku, id, delta, reason).await.map_err(admin_problem)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if applied { 201 } else { 200 }, &view_json(&v)))
}
