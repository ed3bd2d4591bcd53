//! stock-api: the admin side of SKUs (`PUT /admin/skus/{sku}`, `POST /admin/skus/{sku}/adjustments`,
//! pause/resume, journal, code uploads), the signed-in availability and the admin side of campaigns
//! ([`super::campaigns_api`]). The anonymous public reads are [`super::stock_read`]'s (security
//! review L5): this function holds the code keyring and write grants, that one neither.

use super::common::{admin_sku_view, sku_param};
use super::routes::Route;
use super::{campaigns_api, sale_api, waitlist_api};
use crate::api::stock::{
    AdjustmentRequest, CalendarView, CodeBatchRequest, CodeBatchView, CodePoolView, JournalEntryBody, JournalPage,
    PutSkuRequest, SkuView,
};
use crate::api::{Auth, ADMIN_CATALOGUE, ADMIN_CODES, ADMIN_STOCK_ADJUST, SCOPE_ORDERS_READ, SCOPE_ORDERS_WRITE};
use crate::app::App;
use crate::domain::model::Day;
use crate::domain::sale::WriteKind::{Always, Other};
use crate::http::{json_response, query, subject, typed_body, Problem, Request, Response};
use crate::service::admin;

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::write("PUT /admin/skus/{sku}", Auth::AnyScope(ADMIN_CATALOGUE), Other, |a, r| Box::pin(put_sku(a, r))),
    Route::write("POST /admin/skus/{sku}/adjustments", Auth::AnyScope(ADMIN_STOCK_ADJUST), Other, |a, r| {
        Box::pin(adjust(a, r))
    }),
    Route::write("POST /admin/skus/{sku}/pause", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(campaigns_api::pause_sku(a, r, true))
    }),
    Route::write("POST /admin/skus/{sku}/resume", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(campaigns_api::pause_sku(a, r, false))
    }),
    Route::read("GET /admin/skus/{sku}/journal", Auth::AnyScope(ADMIN_STOCK_ADJUST), |a, r| Box::pin(journal(a, r))),
    Route::write("POST /admin/skus/{sku}/codes", Auth::AnyScope(ADMIN_CODES), Other, |a, r| {
        Box::pin(upload_codes(a, r))
    }),
    Route::read("GET /admin/skus/{sku}/codes", Auth::AnyScope(ADMIN_CODES), |a, r| Box::pin(code_pool(a, r))),
    Route::read("GET /skus/{sku}/availability/me", Auth::Scope(SCOPE_ORDERS_READ), |a, r| {
        Box::pin(campaigns_api::availability(a, r, true))
    }),
    // notify-me waitlists (docs/waitlist.md)
    Route::write("POST /skus/{sku}/waitlist", Auth::Scope(SCOPE_ORDERS_WRITE), Other, |a, r| {
        Box::pin(waitlist_api::join(a, r))
    }),
    Route::write("DELETE /skus/{sku}/waitlist", Auth::Scope(SCOPE_ORDERS_WRITE), Other, |a, r| {
        Box::pin(waitlist_api::leave(a, r))
    }),
    Route::read("GET /skus/{sku}/waitlist/me", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(waitlist_api::me(a, r))),
    Route::write("PUT /admin/campaigns/{campaign_id}", Auth::AnyScope(ADMIN_CATALOGUE), Other, |a, r| {
        Box::pin(campaigns_api::put_campaign(a, r))
    }),
    Route::write("POST /admin/campaigns/{campaign_id}/adjustments", Auth::AnyScope(ADMIN_CATALOGUE), Other, |a, r| {
        Box::pin(campaigns_api::adjust_campaign(a, r))
    }),
    Route::write("POST /admin/campaigns/{campaign_id}/pause", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(campaigns_api::pause_campaign(a, r, true))
    }),
    Route::write("POST /admin/campaigns/{campaign_id}/resume", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(campaigns_api::pause_campaign(a, r, false))
    }),
    Route::read("GET /admin/skus/{sku}", Auth::AnyScope(ADMIN_CATALOGUE), |a, r| Box::pin(sale_api::get_sku(a, r))),
    Route::read("GET /admin/sales-switch", Auth::AnyScope(ADMIN_CATALOGUE), |a, _| Box::pin(sale_api::get_switch(a))),
    Route::write("PUT /admin/sales-switch", Auth::AnyScope(ADMIN_CATALOGUE), Always, |a, r| {
        Box::pin(sale_api::put_switch(a, r))
    }),
    Route::read("GET /admin/campaigns", Auth::AnyScope(ADMIN_CATALOGUE), |a, _| Box::pin(sale_api::list_campaigns(a))),
    Route::read("GET /admin/campaigns/{campaign_id}/stats", Auth::AnyScope(ADMIN_CATALOGUE), |a, r| {
        Box::pin(sale_api::campaign_stats(a, r))
    }),
    Route::read("GET /admin/machinery", Auth::AnyScope(ADMIN_CATALOGUE), |a, _| Box::pin(sale_api::machinery(a))),
];

pub async fn handle(app: &App, req: Request) -> Response {
    super::routes::serve(ROUTES, app, &req).await
}

async fn put_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let body = typed_body::<PutSkuRequest>(req, app.config.max_body_bytes)?;
    let stores = body.stores();
    let spec = body.into();
    let actor = subject(req).ok();
    let (_, created) = admin::put_sku_with(app, &sku, &spec, stores.as_ref(), actor.as_ref().map(|a| a.as_str()))
        .await
        .map_err(Problem::from)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if created { 201 } else { 200 }, &admin_sku_view(app, &v).await?))
}

async fn adjust(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let b: AdjustmentRequest = typed_body(req, app.config.max_body_bytes)?;
    let actor = subject(req).ok();
    let dates = b.dates.unwrap_or_default();
    let actor = actor.as_ref().map(|a| a.as_str());
    let applied = match &b.warehouse {
        Some(_) if !dates.is_empty() => {
            return Err(Problem::validation("an adjustment names dates or a warehouse, not both").field("warehouse"))
        }
        Some(w) => admin::adjust_warehouse(app, &sku, w, &b.adjustment_id, b.delta, &b.reason, actor).await,
        None => admin::adjust(app, &sku, &b.adjustment_id, b.delta, &b.reason, actor, &dates).await,
    }
    .map_err(Problem::from)?;
    let v = admin::view(app, &sku).await?.ok_or_else(|| Problem::internal("SKU vanished"))?;
    Ok(json_response(if applied { 201 } else { 200 }, &SkuView::from(&v)))
}

/// Largest body of a code batch: 1,000 codes of up to 128 characters (each escaped at most
/// ×6 in JSON would pass it; real codes are far shorter), under API Gateway's 10 MB.
pub const CODE_BATCH_BODY_BYTES: usize = 1024 * 1024;

/// `POST /admin/skus/{sku}/codes`: 201 with what was added, 200 for a replay of the batch.
async fn upload_codes(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let b: CodeBatchRequest = typed_body(req, CODE_BATCH_BODY_BYTES)?;
    let actor = subject(req).ok();
    let expires = match b.expire_time.as_deref() {
        None => None,
        Some(t) => Some(
            crate::clock::parse_rfc3339(t)
                .ok_or_else(|| Problem::validation("expire_time must be an RFC 3339 date-time").field("expire_time"))?,
        ),
    };
    let actor = actor.as_ref().map(|a| a.as_str());
    let (r, created) = crate::service::codes::upload_expiring(app, &sku, &b.batch_id, &b.codes, expires, actor)
        .await
        .map_err(Problem::from)?;
    let view = CodeBatchView {
        sku: sku.to_string(),
        batch_id: b.batch_id,
        added: r.added,
        duplicates: r.duplicates,
        duplicate_codes: r.duplicate_codes,
    };
    Ok(json_response(if created { 201 } else { 200 }, &view))
}

/// `GET /admin/skus/{sku}/codes`: the pool's counts.
async fn code_pool(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let p = crate::service::codes::summary(app, &sku).await.map_err(Problem::from)?;
    Ok(json_response(200, &CodePoolView::from(&p)))
}

/// `GET /skus/{sku}/calendar?from=YYYY-MM-DD&to=YYYY-MM-DD`: per-date stock, at most
/// [`admin::CALENDAR_VIEW_DAYS`] days (the route is anonymous; security review 3, M3), each date
/// cached per warm Lambda ([`admin::calendar`]).
pub(crate) async fn calendar(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req).map_err(|_| Problem::not_found("no such SKU"))?;
    let day = |name: &'static str| -> Result<Day, Problem> {
        let v = query(req, name)
            .ok_or_else(|| Problem::validation(format!("{name} is required (YYYY-MM-DD)")).field(name))?;
        Day::parse(v).map_err(|e| Problem::validation(e).field(name))
    };
    let (from, to) = (day("from")?, day("to")?);
    match from.span(to) {
        0 => return Err(Problem::validation("to must not be before from").field("to")),
        n if n > admin::CALENDAR_VIEW_DAYS => {
            return Err(Problem::validation(format!(
                "from {from} to {to} is {n} days; a calendar view spans at most {} days (ask for the rest in further views)",
                admin::CALENDAR_VIEW_DAYS
            ))
            .field("to"))
        }
        _ => {}
    }
    let Some(view) = admin::calendar(app, &sku, from, to).await? else {
        return Err(Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str()));
    };
    if !view.by_date {
        return Err(Problem::validation(format!("{sku} is not sold by date")).sku(sku.as_str()));
    }
    Ok(campaigns_api::cacheable(app, json_response(200, &CalendarView::new(sku.as_str(), &view.dates))))
}

/// Default and largest page of `GET /admin/skus/{sku}/journal`.
pub const JOURNAL_PAGE: usize = 50;
pub const JOURNAL_MAX_PAGE: usize = 100;

async fn journal(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let limit = match query(req, "limit") {
        None => JOURNAL_PAGE,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=JOURNAL_MAX_PAGE).contains(&n) => n,
            _ => {
                return Err(
                    Problem::validation(format!("limit must be an integer in 1..={JOURNAL_MAX_PAGE}")).field("limit")
                )
            }
        },
    };
    let cursor = match query(req, "cursor") {
        Some(c) if !crate::domain::journal::is_entry_key(c) => {
            return Err(Problem::validation("cursor is not valid").field("cursor"))
        }
        c => c,
    };
    if app.catalogue.get_skus(std::slice::from_ref(&sku)).await?.is_empty() {
        return Err(Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str()));
    }
    // every partition: quota shards' entries live beside the product's (docs/after-sale.md)
    let spread = crate::domain::journal::JOURNAL_PARTITIONS;
    let (entries, next) = app.journal.for_sku(&sku, spread, cursor, limit).await?;
    Ok(json_response(
        200,
        &JournalPage { entries: entries.iter().map(JournalEntryBody::from).collect(), next_cursor: next },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::memory_app;
    use crate::config::Config;
    use std::collections::HashMap;

    fn calendar_request(sku: &str, from: &str, to: &str) -> Request {
        Request {
            route_key: Some("GET /skus/{sku}/calendar".into()),
            path_parameters: HashMap::from([("sku".to_owned(), sku.to_owned())]),
            query_string_parameters: HashMap::from([
                ("from".to_owned(), from.to_owned()),
                ("to".to_owned(), to.to_owned()),
            ])
            .into(),
            ..Default::default()
        }
    }

    /// Security review 3 M3: the anonymous calendar view spans at most 62 days; a longer range
    /// is refused with 422 before anything is read.
    #[tokio::test]
    async fn a_calendar_view_over_62_days_is_refused_with_422_before_any_read() {
        let (app, _w) = memory_app("stock-read", Config::from_lookup(&|_| None).unwrap()).unwrap();
        let p = calendar(&app, &calendar_request("ROOM", "2027-01-01", "2027-03-04")).await.unwrap_err();
        assert_eq!((p.status(), p.field.as_deref()), (422, Some("to")));
        assert!(p.detail.contains("63 days") && p.detail.contains("at most 62 days"), "{}", p.detail);
        // 62 days pass the cap (and find no such SKU: nothing else refused them)
        let p = calendar(&app, &calendar_request("ROOM", "2027-01-01", "2027-03-03")).await.unwrap_err();
        assert_eq!(p.status(), 404);
    }
}
