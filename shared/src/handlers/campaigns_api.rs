//! The campaign and sale-control routes of stock-api (docs/campaigns.md):
//! admin writes (strongly consistent), public views and the eligibility check (eventually
//! consistent, cached per warm Lambda for `HOLDFAST_PUBLIC_CACHE_MS`, sent with
//! `Cache-Control: max-age`).

use super::common::{sku_param, view_json};
use crate::api::campaigns::{
    Availability, CampaignAdjustmentRequest, CampaignItemView, CampaignRequest, CampaignViewBody,
};
use crate::api::stock::SkuView;
use crate::app::App;
use crate::clock;
use crate::domain::campaign::{status_at, Campaign};
use crate::domain::{CampaignId, Quantity};
use crate::http::{self, json_response, path_param, subject, typed_body, Code, Problem, Request, Response};
use crate::service::admin;
use crate::service::campaigns::{self, EligibilityInput};
use ::http::header::{HeaderValue, CACHE_CONTROL};
use serde::de::DeserializeOwned;

pub(crate) fn campaign_param(req: &Request) -> Result<CampaignId, Problem> {
    CampaignId::parse(path_param(req, "campaign_id")?).map_err(|_| Problem::not_found("no such campaign"))
}

fn campaign_json(v: &campaigns::CampaignView, now_s: i64) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::to_value(CampaignViewBody::new(v, now_s))?)
}

pub(crate) fn cacheable(app: &App, mut r: Response) -> Response {
    let secs = (app.config.public_cache_ms / 1000).max(1);
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={secs}")) {
        r.headers.insert(CACHE_CONTROL, v);
    }
    r
}

/// A public view through the warm-Lambda cache, which keeps the JSON form of `T`.
async fn cached<T, F, Fut>(app: &App, key: &str, load: F) -> Result<Option<T>, Problem>
where
    T: DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<serde_json::Value>>>,
{
    let ttl = app.config.public_cache_ms;
    let v = match app.caches.public(key, clock::now_ms(), ttl) {
        Some(v) => Some(v),
        None => {
            // One refresh at a time: concurrent misses (a runtime serving requests concurrently,
            // like the local stack) wait for the first load instead of each reading DynamoDB.
            let _refresh = app.caches.public_refresh.lock().await;
            match app.caches.public(key, clock::now_ms(), ttl) {
                Some(v) => Some(v),
                None => {
                    let v = load().await?;
                    if let Some(v) = &v {
                        app.caches.put_public(key, v, clock::now_ms());
                    }
                    v
                }
            }
        }
    };
    v.map(|v| serde_json::from_value(v).map_err(|e| Problem::internal(format!("cached view unreadable: {e}"))))
        .transpose()
}

async fn campaign_view(app: &App, id: &CampaignId) -> Result<Option<CampaignViewBody>, Problem> {
    cached(app, &format!("campaign/{id}"), || async {
        campaigns::view(app, id, false).await?.map(|v| campaign_json(&v, clock::now_s())).transpose()
    })
    .await
}

async fn sku_view(app: &App, sku: &crate::domain::Sku) -> Result<Option<SkuView>, Problem> {
    cached(app, &format!("sku/{sku}"), || async {
        admin::public_view(app, sku).await?.map(|v| view_json(&v)).transpose()
    })
    .await
}

/// The `sub` of an admin request's token (API Gateway's authorizer put it there).
fn admin_actor(req: &Request) -> String {
    subject(req).map(|u| u.to_string()).unwrap_or_else(|_| "admin".into())
}

pub async fn put_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = CampaignId::parse(path_param(req, "campaign_id")?)
        .map_err(|e| Problem::validation(e.to_string()).field("campaign_id"))?;
    let spec = typed_body::<CampaignRequest>(req, app.config.max_body_bytes)?.into();
    let actor = subject(req).ok();
    let (c, created) =
        campaigns::put_by(app, &id, &spec, actor.as_ref().map(|a| a.as_str())).await.map_err(Problem::from)?;
    // the admin write's actor (security review L7): the caller's sub
    tracing::info!(campaign_id = %id, actor = admin_actor(req), created, "admin campaign put");
    admin_view(app, &c, if created { 201 } else { 200 }).await
}

async fn admin_view(app: &App, c: &Campaign, status: u16) -> Result<Response, Problem> {
    let v = campaigns::view(app, &c.id, true).await?.ok_or_else(|| Problem::internal("campaign vanished"))?;
    // who last replaced the record (security review L7): admin answers only
    let updated_by = campaigns::updated_by(app, &c.id).await?.as_ref().map(crate::api::stock::UpdatedBy::from);
    Ok(json_response(status, &CampaignViewBody { updated_by, ..CampaignViewBody::new(&v, clock::now_s()) }))
}

pub async fn adjust_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let actor = subject(req).ok();
    let b: CampaignAdjustmentRequest = typed_body(req, app.config.max_body_bytes)?;
    let applied = campaigns::adjust(app, &id, &b.sku, &b.adjustment_id, b.delta, &b.reason, actor.as_ref())
        .await
        .map_err(Problem::from)?;
    let c = app.campaigns.get_campaign(&id, true).await?.ok_or_else(|| Problem::internal("campaign vanished"))?;
    admin_view(app, &c, if applied { 201 } else { 200 }).await
}

pub async fn pause_campaign(app: &App, req: &Request, paused: bool) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let actor = subject(req).ok();
    let c =
        campaigns::set_paused_by(app, &id, paused, actor.as_ref().map(|a| a.as_str())).await.map_err(Problem::from)?;
    tracing::info!(campaign_id = %id, actor = admin_actor(req), paused, "admin campaign pause");
    admin_view(app, &c, 200).await
}

pub async fn pause_sku(app: &App, req: &Request, paused: bool) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let actor = subject(req).ok();
    admin::set_paused_by(app, &sku, paused, actor.as_ref().map(|a| a.as_str())).await.map_err(Problem::from)?;
    tracing::info!(sku = %sku, actor = admin_actor(req), paused, "admin SKU pause");
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(200, &super::common::admin_sku_view(app, &v).await?))
}

pub async fn get_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    match campaign_view(app, &id).await? {
        Some(mut v) => {
            // the status follows the clock even when the counters come from the cache
            let at = |t: &str| clock::parse_rfc3339(t).map(|ms| ms / 1000);
            if let (Some(starts_at), Some(ends_at)) = (at(&v.starts_at), at(&v.ends_at)) {
                v.status = status_at(starts_at, ends_at, clock::now_s()).as_str().to_owned();
            }
            Ok(cacheable(app, json_response(200, &v)))
        }
        None => Err(Problem::not_found(format!("no campaign {id}")).campaign(id.as_str())),
    }
}

pub async fn get_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    match sku_view(app, &sku).await? {
        Some(v) => Ok(cacheable(app, json_response(200, &v))),
        None => Err(Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str())),
    }
}

/// A waved item answers for the wave selling now, or the next one (docs/campaigns.md, "Waves"):
/// its window and its available units stand for the campaign's.
fn current_wave((mut c, mut i): (CampaignViewBody, CampaignItemView)) -> (CampaignViewBody, CampaignItemView) {
    let wave = i.waves.as_ref().and_then(|ws| ws.iter().find(|w| w.status != "ENDED").or(ws.last())).cloned();
    if let Some(w) = wave {
        (c.starts_at, c.ends_at, i.available) = (w.starts_at, w.ends_at, w.available);
    }
    (c, i)
}

/// `GET /skus/{sku}/availability` (anyone) and `GET /skus/{sku}/availability/me` (signed in:
/// adds the buyer's remaining allowance and pending checkouts).
pub async fn availability(app: &App, req: &Request, signed_in: bool) -> Result<Response, Problem> {
    let user = if signed_in { Some(subject(req)?) } else { None };
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    let quantity = match http::query(req, "quantity") {
        None => Quantity::new(1).ok(),
        Some(q) => q.parse::<u64>().ok().and_then(|n| Quantity::new(n).ok()),
    }
    .ok_or_else(|| Problem::validation("quantity must be an integer in 1..=10000").field("quantity"))?;
    let campaign_id = http::query(req, "campaign_id")
        .map(|c| CampaignId::parse(c).map_err(|e| Problem::validation(e.to_string()).field("campaign_id")))
        .transpose()?;
    let sku_view =
        sku_view(app, &sku).await?.ok_or_else(|| Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str()))?;
    let campaign = match &campaign_id {
        None => None,
        Some(id) => {
            let c = campaign_view(app, id)
                .await?
                .ok_or_else(|| Problem::not_found(format!("no campaign {id}")).campaign(id.as_str()))?;
            let item = c.items.iter().find(|i| i.sku == sku.as_str()).cloned().ok_or_else(|| {
                Problem::new(Code::NotInCampaign, format!("campaign {id} does not sell {sku}"))
                    .sku(sku.as_str())
                    .campaign(id.as_str())
            })?;
            Some((c, item))
        }
    };
    let counters = match &user {
        Some(u) => Some(campaigns::user_counters(app, &sku, campaign_id.as_ref(), u).await?),
        None => None,
    };
    let at = |t: &str| clock::parse_rfc3339(t).map(|ms| ms / 1000).unwrap_or(0);
    let campaign = campaign.map(current_wave);
    let input = EligibilityInput {
        quantity: quantity.get(),
        // an unlimited SKU never runs short; a calendar SKU's answer needs dates (not asked here)
        available: sku_view.available.unwrap_or(if sku_view.unlimited { i64::from(u32::MAX) } else { 0 }),
        sku_paused: sku_view.paused,
        sku_limit: sku_view.per_user_limit,
        campaign: campaign
            .as_ref()
            .map(|(c, i)| (at(&c.starts_at), at(&c.ends_at), c.paused, i.available, i.per_user_limit)),
        user: counters,
        max_pending: app.config.max_pending_per_user,
    };
    let (reason, allowance) = campaigns::eligibility(&input, clock::now_s());
    let mut out = Availability {
        sku: sku.as_str().to_owned(),
        quantity: quantity.get(),
        purchasable: reason.is_none(),
        available: sku_view.available,
        reason: reason.map(|r| r.code()),
        price: sku_view.price,
        campaign_id: None,
        campaign_available: None,
        starts_at: None,
        ends_at: None,
        remaining_allowance: None,
        pending_orders: None,
        max_pending_orders: None,
    };
    if let Some((c, i)) = campaign {
        out.campaign_id = Some(c.campaign_id);
        out.campaign_available = Some(i.available);
        out.price = i.price.unwrap_or(sku_view.price);
        out.starts_at = Some(c.starts_at);
        out.ends_at = Some(c.ends_at);
    }
    if let Some(c) = counters {
        out.remaining_allowance = Some(allowance);
        out.pending_orders = Some(c.2);
        out.max_pending_orders = Some(app.config.max_pending_per_user);
        // personal answers must not be cached by shared caches
        let mut r = json_response(200, &out);
        r.headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
        return Ok(r);
    }
    Ok(cacheable(app, json_response(200, &out)))
}
