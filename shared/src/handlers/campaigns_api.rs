//! The campaign and sale-control routes of stock-api (docs/campaigns.md):
//! admin writes (strongly consistent), public views and the eligibility check (eventually
//! consistent, cached per warm Lambda for `HOLDFAST_PUBLIC_CACHE_MS`, sent with
//! `Cache-Control: max-age`).

use super::stock_api::{admin_problem, sku_param, view_json, MAX_DELTA};
use crate::app::App;
use crate::clock;
use crate::domain::campaign::{status_at, Campaign, CampaignItem, CampaignSpec};
use crate::domain::money::MAX_PRICE;
use crate::domain::{CampaignId, OrderId, Quantity, Sku};
use crate::http::{self, json_body, json_response, path_param, subject, Problem, Request, Response};
use crate::service::admin;
use crate::service::campaigns::{self, CampaignError, CampaignView, EligibilityInput};
use ::http::header::{HeaderValue, CACHE_CONTROL};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignBody {
    name: String,
    starts_at: String,
    ends_at: String,
    items: Vec<CampaignItemBody>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignItemBody {
    sku: Sku,
    quota: i64,
    #[serde(default)]
    price: Option<u64>,
    #[serde(default)]
    per_user_limit: Option<u32>,
    #[serde(default)]
    shards: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CampaignAdjustmentBody {
    adjustment_id: String,
    sku: Sku,
    delta: i64,
    reason: String,
}

/// The body as `T`: malformed JSON is 400, anything that does not fit the type is 422.
fn typed<T: DeserializeOwned>(app: &App, req: &Request) -> Result<T, Problem> {
    let body = json_body(req, app.config.max_body_bytes)?;
    serde_json::from_value(Value::Object(body)).map_err(|e| Problem::validation(e.to_string()))
}

fn campaign_param(req: &Request) -> Result<CampaignId, Problem> {
    CampaignId::parse(path_param(req, "campaign_id")?).map_err(|_| Problem::not_found("no such campaign"))
}

fn time_field(v: &str, field: &'static str) -> Result<i64, Problem> {
    clock::parse_rfc3339(v)
        .map(|ms| ms.div_euclid(1000))
        .ok_or_else(|| Problem::validation(format!("{field} must be an RFC 3339 date-time")).with("field", field))
}

fn text_field(v: &str, field: &'static str, max: usize) -> Result<(), Problem> {
    if v.trim().is_empty() || v.chars().count() > max || v.chars().any(char::is_control) {
        return Err(Problem::validation(format!("{field} must be 1-{max} characters without control characters"))
            .with("field", field));
    }
    Ok(())
}

pub fn campaign_problem(e: CampaignError) -> Problem {
    match e {
        CampaignError::UnknownCampaign(c) => Problem::not_found(format!("no campaign {c}")),
        CampaignError::UnknownSku(s) => {
            Problem::new(422, "unknown_sku", "Unknown SKU", format!("no SKU {s}")).with("sku", s.as_str())
        }
        CampaignError::NotInCampaign(s) => {
            Problem::new(422, "not_in_campaign", "SKU not in campaign", e_detail(&s)).with("sku", s.as_str())
        }
        CampaignError::Invalid(s) => Problem::validation(s.to_string()).with("field", s.field()),
        CampaignError::Update(u) => {
            Problem::new(409, "campaign_locked_field", "Field fixed at creation", u.to_string())
        }
        CampaignError::Insufficient(n) => Problem::new(
            409,
            "insufficient_stock",
            "Insufficient quota",
            format!("cannot remove {} units of quota: not that many available", n.unsigned_abs()),
        ),
        CampaignError::AdjustmentReused => Problem::new(
            422,
            "idempotency_key_reused",
            "Adjustment id reused",
            "this adjustment_id was already applied with a different change",
        ),
        CampaignError::Contention => Problem::internal("contention; retry"),
        CampaignError::Store(e) => Problem::from(e),
    }
}

fn e_detail(s: &Sku) -> String {
    format!("this campaign does not sell {s}")
}

pub fn campaign_json(v: &CampaignView, now_s: i64) -> Value {
    let c = &v.campaign;
    json!({
        "campaign_id": c.id.as_str(),
        "name": c.name,
        "starts_at": clock::rfc3339(c.starts_at.saturating_mul(1000)),
        "ends_at": clock::rfc3339(c.ends_at.saturating_mul(1000)),
        "paused": c.paused,
        "status": c.status(now_s).as_str(),
        "items": c.items.iter().zip(&v.items).map(|(i, (_, n))| json!({
            "sku": i.sku.as_str(),
            "price": i.price,
            "quota": i.quota,
            "available": n.available,
            "locked": n.locked,
            "sold": n.sold,
            "per_user_limit": i.per_user_limit,
            "shards": i.shards,
        })).collect::<Vec<_>>(),
    })
}

fn cacheable(app: &App, mut r: Response) -> Response {
    let secs = (app.config.public_cache_ms / 1000).max(1);
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={secs}")) {
        r.headers.insert(CACHE_CONTROL, v);
    }
    r
}

/// A public view through the warm-Lambda cache.
async fn cached<F, Fut>(app: &App, key: &str, load: F) -> Result<Option<Value>, Problem>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<Value>>>,
{
    let now = clock::now_ms();
    if let Some(v) = app.caches.public(key, now, app.config.public_cache_ms) {
        return Ok(Some(v));
    }
    let v = load().await?;
    if let Some(v) = &v {
        app.caches.put_public(key, v, now);
    }
    Ok(v)
}

pub async fn put_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = CampaignId::parse(path_param(req, "campaign_id")?)
        .map_err(|e| Problem::validation(e.to_string()).with("field", "campaign_id"))?;
    let b: CampaignBody = typed(app, req)?;
    let mut items = Vec::with_capacity(b.items.len());
    for i in b.items {
        if i.price.is_some_and(|p| p > MAX_PRICE) {
            return Err(Problem::validation(format!("price must be at most {MAX_PRICE}")).with("field", "items.price"));
        }
        items.push(CampaignItem {
            sku: i.sku,
            price: i.price,
            per_user_limit: i.per_user_limit,
            shards: i.shards.unwrap_or(1),
            quota: i.quota,
        });
    }
    let spec = CampaignSpec {
        name: b.name,
        starts_at: time_field(&b.starts_at, "starts_at")?,
        ends_at: time_field(&b.ends_at, "ends_at")?,
        items,
    };
    let (c, created) = campaigns::put(app, &id, &spec).await.map_err(campaign_problem)?;
    admin_view(app, &c, if created { 201 } else { 200 }).await
}

async fn admin_view(app: &App, c: &Campaign, status: u16) -> Result<Response, Problem> {
    let v = campaigns::view(app, &c.id, true).await?.ok_or_else(|| Problem::internal("campaign vanished"))?;
    Ok(json_response(status, &campaign_json(&v, clock::now_s())))
}

pub async fn adjust_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let actor = subject(req).ok();
    let b: CampaignAdjustmentBody = typed(app, req)?;
    OrderId::parse(&b.adjustment_id).map_err(|_| {
        Problem::validation("adjustment_id must be 1-64 characters of [A-Za-z0-9._-]").with("field", "adjustment_id")
    })?;
    if b.delta == 0 || !(-MAX_DELTA..=MAX_DELTA).contains(&b.delta) {
        return Err(
            Problem::validation(format!("delta must be a non-zero integer within ±{MAX_DELTA}")).with("field", "delta")
        );
    }
    text_field(&b.reason, "reason", 500)?;
    let applied = campaigns::adjust(app, &id, &b.sku, &b.adjustment_id, b.delta, &b.reason, actor.as_ref())
        .await
        .map_err(campaign_problem)?;
    let c = app.stock.get_campaign(&id, true).await?.ok_or_else(|| Problem::internal("campaign vanished"))?;
    admin_view(app, &c, if applied { 201 } else { 200 }).await
}

pub async fn pause_campaign(app: &App, req: &Request, paused: bool) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let c = campaigns::set_paused(app, &id, paused).await.map_err(campaign_problem)?;
    admin_view(app, &c, 200).await
}

pub async fn pause_sku(app: &App, req: &Request, paused: bool) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    admin::set_paused(app, &sku, paused).await.map_err(admin_problem)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(200, &view_json(&v)))
}

pub async fn get_campaign(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let key = format!("campaign/{id}");
    let v = cached(app, &key, || async {
        Ok(campaigns::view(app, &id, false).await?.map(|v| campaign_json(&v, clock::now_s())))
    })
    .await?;
    match v {
        Some(mut v) => {
            // the status follows the clock even when the counters come from the cache
            let at = |k: &str| v[k].as_str().and_then(clock::parse_rfc3339).map(|ms| ms / 1000);
            if let (Some(starts_at), Some(ends_at)) = (at("starts_at"), at("ends_at")) {
                v["status"] = json!(status_at(starts_at, ends_at, clock::now_s()).as_str());
            }
            Ok(cacheable(app, json_response(200, &v)))
        }
        None => Err(Problem::not_found(format!("no campaign {id}"))),
    }
}

pub async fn get_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    let key = format!("sku/{sku}");
    let v = cached(app, &key, || async { Ok(admin::public_view(app, &sku).await?.map(|v| view_json(&v))) }).await?;
    match v {
        Some(v) => Ok(cacheable(app, json_response(200, &v))),
        None => Err(Problem::not_found(format!("no SKU {sku}")).with("sku", sku.as_str())),
    }
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
    .ok_or_else(|| Problem::validation("quantity must be an integer in 1..=10000").with("field", "quantity"))?;
    let campaign_id = http::query(req, "campaign_id")
        .map(|c| CampaignId::parse(c).map_err(|e| Problem::validation(e.to_string()).with("field", "campaign_id")))
        .transpose()?;
    let sku_view = cached(app, &format!("sku/{sku}"), || async {
        Ok(admin::public_view(app, &sku).await?.map(|v| view_json(&v)))
    })
    .await?
    .ok_or_else(|| Problem::not_found(format!("no SKU {sku}")).with("sku", sku.as_str()))?;
    let campaign_view = match &campaign_id {
        None => None,
        Some(id) => Some(
            cached(app, &format!("campaign/{id}"), || async {
                Ok(campaigns::view(app, id, false).await?.map(|v| campaign_json(&v, clock::now_s())))
            })
            .await?
            .ok_or_else(|| Problem::not_found(format!("no campaign {id}")))?,
        ),
    };
    let item = match (&campaign_view, &campaign_id) {
        (Some(v), Some(id)) => Some(
            v["items"]
                .as_array()
                .and_then(|items| items.iter().find(|i| i["sku"] == sku.as_str()))
                .cloned()
                .ok_or_else(|| {
                    Problem::new(
                        422,
                        "not_in_campaign",
                        "SKU not in campaign",
                        format!("campaign {id} does not sell {sku}"),
                    )
                    .with("sku", sku.as_str())
                })?,
        ),
        _ => None,
    };
    let counters = match &user {
        Some(u) => Some(campaigns::user_counters(app, &sku, campaign_id.as_ref(), u).await?),
        None => None,
    };
    let n = |v: &Value, k: &str| v[k].as_i64().unwrap_or(0);
    let window =
        |k: &str| campaign_view.as_ref().and_then(|v| v[k].as_str()).and_then(clock::parse_rfc3339).map(|ms| ms / 1000);
    let input = EligibilityInput {
        quantity: quantity.get(),
        available: n(&sku_view, "available"),
        sku_paused: sku_view["paused"].as_bool().unwrap_or(false),
        sku_limit: sku_view["per_user_limit"].as_u64().map(|l| l as u32),
        campaign: campaign_view.as_ref().zip(item.as_ref()).map(|(c, i)| {
            (
                window("starts_at").unwrap_or(0),
                window("ends_at").unwrap_or(0),
                c["paused"].as_bool().unwrap_or(false),
                n(i, "available"),
                i["per_user_limit"].as_u64().map(|l| l as u32),
            )
        }),
        user: counters,
        max_pending: app.config.max_pending_per_user,
    };
    let (reason, allowance) = campaigns::eligibility(&input, clock::now_s());
    let mut out = json!({
        "sku": sku.as_str(),
        "quantity": quantity.get(),
        "purchasable": reason.is_none(),
        "available": input.available,
    });
    if let Some(r) = reason {
        out["reason"] = json!(r.code());
    }
    if let (Some(c), Some(i)) = (&campaign_view, &item) {
        out["campaign_id"] = c["campaign_id"].clone();
        out["campaign_available"] = i["available"].clone();
        out["price"] = if i["price"].is_null() { sku_view["price"].clone() } else { i["price"].clone() };
        out["starts_at"] = c["starts_at"].clone();
        out["ends_at"] = c["ends_at"].clone();
    } else {
        out["price"] = sku_view["price"].clone();
    }
    if user.is_some() {
        out["remaining_allowance"] = json!(allowance);
        out["pending_orders"] = json!(counters.map(|c| c.2));
        out["max_pending_orders"] = json!(app.config.max_pending_per_user);
        // personal answers must not be cached by shared caches
        let mut r = json_response(200, &out);
        r.headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
        return Ok(r);
    }
    Ok(cacheable(app, json_response(200, &out)))
}
