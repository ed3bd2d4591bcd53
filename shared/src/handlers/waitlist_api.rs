//! The waitlists' routes in stock-api (docs/waitlist.md): `POST /skus/{sku}/waitlist` (join),
//! `DELETE /skus/{sku}/waitlist` (leave), `GET /skus/{sku}/waitlist/me` (where am I, with the
//! admission token once told). Thin: the service decides.

use super::common::sku_param;
use crate::api::waitlist::WaitlistEntryView;
use crate::app::App;
use crate::http::{self, json_response, subject, Problem, Request, Response};
use crate::service::waitlist::{self};

/// The (optional) body of a join: nothing, or an empty JSON object.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinBody {}

fn private(mut r: Response) -> Response {
    // the admission token is the buyer's: no shared cache may keep it
    r.headers.insert(::http::header::CACHE_CONTROL, ::http::header::HeaderValue::from_static("private, no-store"));
    r
}

/// `POST /skus/{sku}/waitlist`: 201 joined now, 200 the buyer's entry again.
pub async fn join(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let sku = sku_param(req)?;
    if !http::body_bytes(req, app.config.max_body_bytes)?.iter().all(u8::is_ascii_whitespace) {
        let _: JoinBody = http::typed_body(req, app.config.max_body_bytes)?;
    }
    let (p, created) = waitlist::join(app, &user, &sku).await.map_err(Problem::from)?;
    Ok(private(json_response(if created { 201 } else { 200 }, &WaitlistEntryView::new(sku.as_str(), p))))
}

/// `DELETE /skus/{sku}/waitlist`: 204.
pub async fn leave(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let sku = sku_param(req)?;
    waitlist::leave(app, &user, &sku).await.map_err(Problem::from)?;
    Ok(Response { status_code: 204, ..Default::default() })
}

/// `GET /skus/{sku}/waitlist/me`.
pub async fn me(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let sku = sku_param(req)?;
    let p = waitlist::me(app, &user, &sku).await.map_err(Problem::from)?;
    Ok(private(json_response(200, &WaitlistEntryView::new(sku.as_str(), p))))
}
