//! One row per HTTP route: its key, who may call it, how the sales switch judges it, and the
//! function that serves it. Every other fact about a route is derived from these rows:
//!
//! - dispatch ([`serve`]: a function's `handle` finds the row by API Gateway's route key);
//! - the sales switch's judgement ([`Route::write`], read by [`super::guarded`]);
//! - the OpenAPI document's `security` ([`openapi_json`]);
//! - the authorizer `sam local` plays ([`crate::sam_local::route_auth`]).
//!
//! Tests check the rows against `template.yaml` (route, function and scopes) and the OpenAPI
//! document (every route documented, no other). docs/architecture.md, "A route's facts".

use crate::api::Auth;
use crate::app::App;
use crate::domain::sale::WriteKind;
use crate::http::{self, finish, Problem, Request, Response};
use std::future::Future;
use std::pin::Pin;

/// What a route's function answers: a response, or a problem [`finish`] turns into one.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<Response, Problem>> + Send + 'a>>;

/// A route's function. Rows write it as `|a, r| Box::pin(f(a, r))`.
pub type Serve = for<'a> fn(&'a App, &'a Request) -> Answer<'a>;

/// One HTTP route (see the module).
#[derive(Clone, Copy)]
pub struct Route {
    /// API Gateway's route key, `METHOD /path/{param}`.
    pub key: &'static str,
    pub auth: Auth,
    /// How the sales switch judges it; `None` for a read, which it never judges.
    pub write: Option<WriteKind>,
    pub serve: Serve,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route").field("key", &self.key).field("auth", &self.auth).field("write", &self.write).finish()
    }
}

impl Route {
    /// A `GET`: never judged by the sales switch.
    pub const fn read(key: &'static str, auth: Auth, serve: Serve) -> Self {
        Route { key, auth, write: None, serve }
    }

    /// A write, judged by the sales switch as `kind` (docs/operations.md, "Sales switch").
    pub const fn write(key: &'static str, auth: Auth, kind: WriteKind, serve: Serve) -> Self {
        Route { key, auth, write: Some(kind), serve }
    }
}

/// Serves `req` by its row in `routes`; a route key no row names is 404.
pub async fn serve(routes: &'static [Route], app: &App, req: &Request) -> Response {
    let key = http::route(req);
    match routes.iter().find(|r| r.key == key) {
        Some(r) => finish((r.serve)(app, req).await),
        None => finish(Err(Problem::not_found(format!("no route {key}")))),
    }
}

/// Every HTTP route of every function.
pub fn all() -> impl Iterator<Item = &'static Route> {
    super::ROUTES.iter().flat_map(|(_, rs)| rs.iter())
}

/// The row of a route key, in any function.
pub fn find(key: &str) -> Option<&'static Route> {
    all().find(|r| r.key == key)
}

/// The OpenAPI document (`docs/openapi.json`): [`crate::api::spec`]'s operations, each given the
/// security its row says.
pub fn openapi_json() -> String {
    crate::api::spec::document(all().map(|r| (r.key, r.auth)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::sale::{SalesMode, SalesSwitch};

    fn kind(key: &str) -> Option<WriteKind> {
        find(key).unwrap_or_else(|| panic!("no row {key}")).write
    }

    #[test]
    fn a_read_is_never_judged_and_every_write_is() {
        for r in all() {
            assert_eq!(r.key.starts_with("GET "), r.write.is_none(), "{}", r.key);
        }
    }

    #[test]
    fn the_switch_refuses_what_its_mode_says_and_never_money_or_levers() {
        let s = |mode| SalesSwitch { mode, ..SalesSwitch::default() };
        for key in ["POST /orders", "POST /reservations", "POST /campaigns/{campaign_id}/checkout"] {
            assert_eq!(kind(key), Some(WriteKind::Checkout), "{key}");
        }
        for key in [
            "POST /payments/callback",
            "POST /payments/refunds",
            "POST /payments/stripe",
            "POST /orders/{order_id}/payments",
            "POST /orders/{order_id}/cancel",
            "POST /reservations/{order_id}/confirm",
            "POST /reservations/{order_id}/release",
            "POST /orders/{order_id}/refund",
            "POST /admin/orders/{order_id}/cancel",
            "POST /admin/orders/{order_id}/refund-decision",
            "POST /admin/campaigns/{campaign_id}/pause",
            "POST /admin/campaigns/{campaign_id}/resume",
            "POST /admin/campaigns/{campaign_id}/queue/pause",
            "POST /admin/campaigns/{campaign_id}/queue/resume",
            "POST /admin/skus/{sku}/pause",
            "POST /admin/skus/{sku}/resume",
            "PUT /admin/sales-switch",
        ] {
            assert_eq!(kind(key), Some(WriteKind::Always), "{key}");
        }
        for key in ["PUT /admin/skus/{sku}", "POST /admin/skus/{sku}/adjustments", "POST /orders/{order_id}/return"] {
            assert_eq!(kind(key), Some(WriteKind::Other), "{key}");
        }
        for m in [SalesMode::Open, SalesMode::ReadOnly, SalesMode::Closed] {
            assert!(s(m).admits(WriteKind::Always));
        }
        assert!(s(SalesMode::Open).admits(WriteKind::Checkout));
        assert!(!s(SalesMode::Closed).admits(WriteKind::Checkout));
        assert!(!s(SalesMode::ReadOnly).admits(WriteKind::Checkout));
        assert!(s(SalesMode::Closed).admits(WriteKind::Other));
        assert!(!s(SalesMode::ReadOnly).admits(WriteKind::Other));
    }

    #[test]
    fn route_keys_are_unique_across_functions() {
        let mut keys: Vec<_> = all().map(|r| r.key).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }

    #[test]
    fn the_committed_document_is_the_generated_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(committed == openapi_json(), "docs/openapi.json is stale: run `make openapi` and commit it");
    }
}
