//! The waitlists' routes in stock-api (docs/waitlist.md): `POST /skus/{sku}/waitlist` (join),
//! `DELETE /skus/{sku}/waitlist` (leave), `GET /skus/{sku}/waitlist/me` (where am I, with the
//! admission token once told). Thin: the service decides.

use super::stock_api::sku_param;
use crate::api::waitlist::WaitlistEntryView;
use crate::app::App;
use crate::http::{self, json_response, subject, Code, Problem, Request, Response};
use crate::service::waitlist::{self, WaitlistError};

/// The (optional) body of a join: nothing, or an empty JSON object.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinBody {}

fn problem(e: WaitlistError) -> Problem {
    match e {
        WaitlistError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).sku(s.as_str()),
        WaitlistError::NotFound => Problem::not_found(e.to_string()),
        e @ WaitlistError::NotWaitlistable(_) => Problem::new(Code::NotWaitlistable, e.to_string()).field("sku"),
        e @ WaitlistError::NotSoldOut(..) => Problem::new(Code::NotSoldOut, e.to_string()),
        WaitlistError::Refused(r @ crate::domain::waitlist::JoinRefusal::Full(_)) => {
            Problem::new(Code::WaitlistFull, r.to_string())
        }
        WaitlistError::Refused(r) => Problem::new(Code::TooManyWaitlists, r.to_string()),
        // concurrent writers of one SKU's waitlist outlasted the retries: the same request
        // succeeds a moment later
        e @ WaitlistError::Contention => Problem::new(Code::TemporarilyUnavailable, e.to_string()).retry_after(1),
        WaitlistError::Store(e) => Problem::from_store(e),
    }
}

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
    let (p, created) = waitlist::join(app, &user, &sku).await.map_err(problem)?;
    Ok(private(json_response(if created { 201 } else { 200 }, &WaitlistEntryView::new(sku.as_str(), p))))
}

/// `DELETE /skus/{sku}/waitlist`: 204.
pub async fn leave(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let sku = sku_param(req)?;
    waitlist::leave(app, &user, &sku).await.map_err(problem)?;
    Ok(Response { status_code: 204, ..Default::default() })
}

/// `GET /skus/{sku}/waitlist/me`.
pub async fn me(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let sku = sku_param(req)?;
    let p = waitlist::me(app, &user, &sku).await.map_err(problem)?;
    Ok(private(json_response(200, &WaitlistEntryView::new(sku.as_str(), p))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_is_a_503_to_retry_after_a_second_and_a_store_failure_stays_a_503() {
        let r = problem(WaitlistError::Contention).into_response();
        assert_eq!(r.status_code, 503);
        assert_eq!(r.headers.get(::http::header::RETRY_AFTER).and_then(|v| v.to_str().ok()), Some("1"));
        let p = problem(WaitlistError::Contention);
        assert_eq!((p.code.as_str(), p.retry_after), ("temporarily_unavailable", Some(1)));
        let store = problem(WaitlistError::Store(anyhow::anyhow!("down")));
        assert_eq!((store.status(), store.retry_after), (503, None));
    }
}
