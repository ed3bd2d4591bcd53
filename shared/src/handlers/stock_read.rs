//! stock-read: the anonymous public reads — `GET /skus/{sku}`, `GET /skus/{sku}/availability`,
//! `GET /skus/{sku}/calendar`, `GET /campaigns/{campaign_id}` — in a function of their own
//! (security review L5). Its role may only `BatchGetItem` SKU, shard and campaign items of the
//! stock table: no write, no keyring, no code items (`permissions::USES`, tests/tests/policy.rs).
//! The views themselves are shared with stock-api's admin side ([`super::campaigns_api`]).

use super::campaigns_api;
use super::routes::Route;
use crate::api::Auth;
use crate::app::App;
use crate::http::{Request, Response};

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::read("GET /skus/{sku}", Auth::Public, |a, r| Box::pin(campaigns_api::get_sku(a, r))),
    Route::read("GET /skus/{sku}/availability", Auth::Public, |a, r| {
        Box::pin(campaigns_api::availability(a, r, false))
    }),
    Route::read("GET /skus/{sku}/calendar", Auth::Public, |a, r| Box::pin(super::stock_api::calendar(a, r))),
    Route::read("GET /campaigns/{campaign_id}", Auth::Public, |a, r| Box::pin(campaigns_api::get_campaign(a, r))),
    Route::read("GET /console/", Auth::Public, |_, _| Box::pin(async { super::sale_api::console() })),
    Route::read("GET /shop/", Auth::Public, |a, _| Box::pin(async move { super::sale_api::shop(&a.config.push_url) })),
];

pub async fn handle(app: &App, req: Request) -> Response {
    super::routes::serve(ROUTES, app, &req).await
}
