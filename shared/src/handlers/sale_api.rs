//! The sale room's admin routes (docs/operations.md), served by stock-api: the sales switch,
//! the exact SKU view, the campaign list and statistics, the machinery page; and the console's
//! HTML shell and the buyers' storefront, served by stock-read (public: everything they show comes
//! from the admin or the buyer's routes).

use super::campaigns_api::campaign_param;
use super::stock_api::{admin_sku_view, sku_param};
use crate::api::sale::{
    AdminSkuView, CampaignList, CampaignStats, CampaignSummary, Machinery, QueueView, ReconcileView,
    SalesSwitchRequest, SalesSwitchView, ShardView,
};
use crate::app::App;
use crate::clock;
use crate::http::{json_response, respond, subject, typed_body, Problem, Request, Response};
use crate::service::{admin, sale};
use ::http::header::HeaderValue;

/// The console: one self-contained page (docs/operations.md, "Console").
pub const CONSOLE_HTML: &str = include_str!("../../../console/index.html");

pub fn console() -> Result<Response, Problem> {
    Ok(page(
        CONSOLE_HTML,
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    ))
}

/// The storefront: one self-contained page (docs/shop.md).
pub const SHOP_HTML: &str = include_str!("../../../shop/index.html");

/// `GET /shop/`. It may also connect to the push endpoint, which on AWS is a WebSocket API on a
/// host of its own (`ws:`/`wss:`); everything else it reads is this origin's.
pub fn shop() -> Result<Response, Problem> {
    Ok(page(
        SHOP_HTML,
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'",
    ))
}

fn page(html: &'static str, csp: &'static str) -> Response {
    let mut r = respond(200, "text/html; charset=utf-8", html.to_owned());
    r.headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    r.headers.insert("content-security-policy", HeaderValue::from_static(csp));
    r.headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    r
}

pub async fn get_switch(app: &App) -> Result<Response, Problem> {
    let s = app.sale.sales_switch().await?.unwrap_or_default();
    Ok(json_response(200, &SalesSwitchView::from(&s)))
}

pub async fn put_switch(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: SalesSwitchRequest = typed_body(req, app.config.max_body_bytes)?;
    let by = subject(req).ok().map(|u| u.as_str().to_owned());
    let s = sale::set_switch(app, b.mode, b.reason, by).await?;
    Ok(json_response(200, &SalesSwitchView::from(&s)))
}

/// `GET /admin/skus/{sku}`: strongly consistent, with every shard.
pub async fn get_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let v =
        admin::view(app, &sku).await?.ok_or_else(|| Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str()))?;
    let shard_counts = v
        .shards
        .iter()
        .enumerate()
        .map(|(i, c)| ShardView { shard: i as u16, available: c.available, locked: c.locked, sold: c.sold })
        .collect();
    Ok(json_response(200, &AdminSkuView { sku: admin_sku_view(app, &v).await?, shard_counts }))
}

pub async fn list_campaigns(app: &App) -> Result<Response, Problem> {
    let now = clock::now_s();
    let mut campaigns = Vec::new();
    for id in app.stock.list_campaigns().await? {
        if let Some(c) = app.stock.get_campaign(&id, false).await? {
            campaigns.push(CampaignSummary {
                campaign_id: c.id.to_string(),
                name: c.name.clone(),
                starts_at: clock::rfc3339(c.starts_at.saturating_mul(1000)),
                ends_at: clock::rfc3339(c.ends_at.saturating_mul(1000)),
                paused: c.paused,
                status: c.status(now).as_str().to_owned(),
            });
        }
    }
    Ok(json_response(200, &CampaignList { campaigns }))
}

pub async fn campaign_stats(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let c = app
        .stock
        .get_campaign(&id, true)
        .await?
        .ok_or_else(|| Problem::not_found(format!("no campaign {id}")).campaign(id.as_str()))?;
    let s = sale::stats(app, &c).await?;
    Ok(json_response(200, &CampaignStats::new(id.as_str(), &s)))
}

pub async fn machinery(app: &App) -> Result<Response, Problem> {
    let queues = app
        .messages
        .queue_depths()
        .await?
        .into_iter()
        .map(|q| {
            let lower = q.name.to_ascii_lowercase();
            QueueView {
                dlq: lower.contains("dlq") || lower.contains("failure"),
                name: q.name,
                visible: q.visible,
                in_flight: q.in_flight,
                delayed: q.delayed,
            }
        })
        .collect();
    let r =
        app.sale.read_live(&[sale::RECONCILE_KEY.to_owned()]).await?.remove(sale::RECONCILE_KEY).unwrap_or_default();
    let reconcile = ReconcileView {
        last_sweep_at: r.get("last_ms").map(|ms| clock::rfc3339(*ms)),
        sweeps: r.get("sweeps").copied().unwrap_or(0),
        violations: r.get("violations").copied().unwrap_or(0),
    };
    Ok(json_response(200, &Machinery { queues, reconcile }))
}
