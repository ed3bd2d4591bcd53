//! stock-read: the anonymous public reads — `GET /skus/{sku}`, `GET /skus/{sku}/availability`,
//! `GET /skus/{sku}/calendar`, `GET /campaigns/{campaign_id}` — in a function of their own
//! (security review L5). Its role may only `BatchGetItem` SKU, shard and campaign items of the
//! stock table: no write, no keyring, no code items (`permissions::USES`, tests/tests/policy.rs).
//! The views themselves are shared with stock-api's admin side ([`super::campaigns_api`]).

use super::campaigns_api;
use crate::api::{Auth, Route};
use crate::app::App;
use crate::http::{self, finish, Problem, Request, Response};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::new("GET /skus/{sku}", Auth::Public),
    Route::new("GET /skus/{sku}/availability", Auth::Public),
    Route::new("GET /skus/{sku}/calendar", Auth::Public),
    Route::new("GET /campaigns/{campaign_id}", Auth::Public),
    Route::new("GET /console/", Auth::Public),
    Route::new("GET /shop/", Auth::Public),
];

pub async fn handle(app: &App, req: Request) -> Response {
    let r = match http::route(&req) {
        "GET /skus/{sku}" => campaigns_api::get_sku(app, &req).await,
        "GET /skus/{sku}/availability" => campaigns_api::availability(app, &req, false).await,
        "GET /skus/{sku}/calendar" => super::stock_api::calendar(app, &req).await,
        "GET /campaigns/{campaign_id}" => campaigns_api::get_campaign(app, &req).await,
        "GET /console/" => super::sale_api::console(),
        "GET /shop/" => super::sale_api::shop(&app.config.push_url),
        other => Err(Problem::not_found(format!("no route {other}"))),
    };
    finish(r)
}
