//! template.yaml is the single source of truth: the local stack refuses to run a template whose
//! functions, routes or event sources the code does not handle, and code the template does not
//! route to. These tests need no emulator.

use holdfast_local::stack::coverage_problems;
use holdfast_local::template::{Auth, Event, Template};

fn text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).expect("template.yaml")
}

fn problems(t: &str) -> Vec<String> {
    coverage_problems(&Template::parse(t).expect("template parses"))
}

#[test]
fn every_function_route_and_event_source_in_the_template_has_its_handler_and_vice_versa() {
    assert_eq!(problems(&text()), Vec::<String>::new());
}

#[test]
fn a_route_the_code_does_not_handle_is_reported() {
    let t = text().replace("Path: /orders/{order_id}/cancel", "Path: /orders/{order_id}/teleport");
    let p = problems(&t);
    assert!(p.iter().any(|p| p.contains("POST /orders/{order_id}/teleport")), "{p:?}");
    assert!(p.iter().any(|p| p.contains("handles POST /orders/{order_id}/cancel")), "{p:?}");
}

#[test]
fn a_function_without_a_handler_is_reported() {
    let t = text().replace("Binary: reconcile", "Binary: reconciler");
    let p = problems(&t);
    assert!(p.iter().any(|p| p.contains("reconciler has no handler")), "{p:?}");
    assert!(p.iter().any(|p| p.contains("function reconcile is in the library but not in template.yaml")), "{p:?}");
}

#[test]
fn scoped_public_and_user_routes_are_read_as_declared() {
    let t = Template::parse(&text()).unwrap();
    let routes = t.routes();
    let auth = |k: &str| routes.iter().find(|(r, _, _)| r == k).map(|(_, _, a)| a.clone()).unwrap();
    assert_eq!(auth("GET /skus/{sku}"), Auth::Public);
    assert_eq!(auth("POST /payments/callback"), Auth::Public);
    assert_eq!(auth("POST /payments/stripe"), Auth::Public);
    // Every protected route, with the scope it needs (security review V6, V8).
    let jwt = |s: &str| Auth::Jwt { scopes: vec![s.to_owned()] };
    for (route, scope) in [
        ("POST /orders", "orders:write"),
        ("GET /orders", "orders:read"),
        ("GET /orders/{order_id}", "orders:read"),
        ("POST /orders/{order_id}/cancel", "orders:write"),
        ("POST /orders/{order_id}/refund", "orders:write"),
        ("POST /orders/{order_id}/confirm-receipt", "orders:write"),
        ("POST /orders/{order_id}/return", "orders:write"),
        ("GET /admin/orders/{order_id}", "stock:admin"),
        ("POST /admin/orders/{order_id}/ship", "stock:admin"),
        ("POST /admin/orders/{order_id}/return-received", "stock:admin"),
        ("POST /admin/orders/{order_id}/cancel", "stock:admin"),
        ("PUT /admin/skus/{sku}", "stock:admin"),
        ("POST /admin/skus/{sku}/adjustments", "stock:admin"),
        ("POST /admin/skus/{sku}/pause", "stock:admin"),
        ("POST /admin/skus/{sku}/resume", "stock:admin"),
        ("GET /admin/skus/{sku}/journal", "stock:admin"),
        ("POST /admin/skus/{sku}/codes", "stock:admin"),
        ("GET /admin/skus/{sku}/codes", "stock:admin"),
        ("GET /orders/{order_id}/codes", "orders:read"),
        ("PUT /admin/campaigns/{campaign_id}", "stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/adjustments", "stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/pause", "stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/resume", "stock:admin"),
        ("GET /skus/{sku}/availability/me", "orders:read"),
        ("POST /reservations", "reservations:write"),
        ("POST /reservations/{order_id}/confirm", "reservations:write"),
        ("POST /reservations/{order_id}/release", "reservations:write"),
    ] {
        assert_eq!(auth(route), jwt(scope), "{route}");
    }
    let public: Vec<_> = routes.iter().filter(|(_, _, a)| *a == Auth::Public).map(|(r, _, _)| r.as_str()).collect();
    assert_eq!(
        public,
        vec![
            "POST /payments/callback",
            "POST /payments/refunds",
            "POST /payments/stripe",
            "GET /skus/{sku}",
            "GET /skus/{sku}/availability",
            "GET /skus/{sku}/calendar",
            "GET /campaigns/{campaign_id}"
        ],
        "no other route is public"
    );
    let queues: Vec<_> = t.queues.iter().filter(|q| q.redrive.is_some()).map(|q| q.logical_id.as_str()).collect();
    assert_eq!(queues.len(), 5, "{queues:?}");
    let stream = t.function("publish-events").unwrap().events.iter().find_map(|(_, e)| match e {
        Event::Stream { table, on_failure, .. } => Some((table.clone(), on_failure.clone())),
        _ => None,
    });
    assert_eq!(stream, Some(("OrderTable".into(), Some("PublishEventsFailureQueue".into()))));
}

fn spec() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
        .expect("docs/openapi.json");
    serde_json::from_str(&text).expect("docs/openapi.json is JSON")
}

fn contract(spec: &serde_json::Value, template: &str) -> Vec<String> {
    holdfast_local::contract::problems(spec, &Template::parse(template).expect("template parses"))
}

#[test]
fn the_openapi_document_the_route_tables_and_the_template_list_the_same_routes_with_the_same_auth() {
    let s = spec();
    let handled: usize = holdfast::handlers::ROUTES.iter().map(|(_, rs)| rs.len()).sum();
    assert_eq!(holdfast_local::contract::spec_routes(&s).unwrap().len(), handled, "every route is read");
    assert_eq!(contract(&s, &text()), Vec::<String>::new());
}

#[test]
fn a_route_whose_auth_differs_in_the_document_is_reported() {
    let mut s = spec();
    s["paths"]["/skus/{sku}"]["get"]["security"] = serde_json::json!([{"jwt": []}]);
    s["paths"]["/orders"]["post"]["security"] = serde_json::json!([{"jwt": ["stock:admin"]}]);
    let p = contract(&s, &text());
    assert!(p.iter().any(|p| p.starts_with("GET /skus/{sku}: the OpenAPI document says any JWT")), "{p:?}");
    assert!(p.iter().any(|p| p.starts_with("POST /orders: the OpenAPI document says JWT with scope")), "{p:?}");
}

#[test]
fn a_route_missing_from_or_extra_in_the_document_is_reported() {
    let mut s = spec();
    let paths = s["paths"].as_object_mut().unwrap();
    let cancel = paths.remove("/orders/{order_id}/cancel").unwrap();
    paths.insert("/orders/{order_id}/teleport".into(), cancel);
    let p = contract(&s, &text());
    assert!(
        p.iter().any(|p| p == "POST /orders/{order_id}/cancel is handled but not in the OpenAPI document"),
        "{p:?}"
    );
    assert!(
        p.iter().any(|p| p.starts_with("POST /orders/{order_id}/teleport is in the OpenAPI document but")),
        "{p:?}"
    );
}

#[test]
fn a_template_route_whose_auth_differs_from_the_handler_is_reported() {
    let t = text().replace(
        "Auth: {Authorizer: JwtAuthorizer, AuthorizationScopes: [\"stock:admin\"]}",
        "Auth: {Authorizer: JwtAuthorizer}",
    );
    assert_ne!(t, text(), "the mutation applies");
    let p = contract(&spec(), &t);
    assert!(p.iter().any(|p| p.starts_with("PUT /admin/skus/{sku}: template.yaml authorises")), "{p:?}");
    let t = text()
        .replace("Auth: {Authorizer: NONE} # authenticated by the HMAC signature", "Auth: {Authorizer: JwtAuthorizer}");
    let p = contract(&spec(), &t);
    assert!(p.iter().any(|p| p.starts_with("POST /payments/callback: template.yaml authorises")), "{p:?}");
}

#[test]
fn functions_log_json_at_the_level_the_log_level_parameter_sets() {
    // lambda_runtime's subscriber (shared/src/lambda.rs) reads AWS_LAMBDA_LOG_LEVEL/FORMAT,
    // which Lambda sets from LoggingConfig; the parameter's values must be levels it parses.
    let t = holdfast_local::template::to_json(&holdfast_local::template::yaml(&text()).unwrap());
    let logging = &t["Globals"]["Function"]["LoggingConfig"];
    assert_eq!(logging["LogFormat"], "JSON");
    assert_eq!(logging["ApplicationLogLevel"], serde_json::json!({"Ref": "LogLevel"}));
    let allowed = t["Parameters"]["LogLevel"]["AllowedValues"].as_array().unwrap();
    for level in allowed {
        let level = level.as_str().unwrap();
        let parsed = level.parse::<lambda_runtime::tracing::level_filters::LevelFilter>();
        assert!(parsed.is_ok(), "{level} is not a level lambda_runtime's subscriber parses");
    }
}
