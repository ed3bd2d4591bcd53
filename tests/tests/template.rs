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
    // one scope, or (admin routes, security review L7) the route's own scope, then stock:admin
    let jwt = |s: &str| Auth::Jwt { scopes: s.split(' ').map(str::to_owned).collect() };
    for (route, scope) in [
        ("POST /orders", "orders:write"),
        ("GET /orders", "orders:read"),
        ("GET /orders/{order_id}", "orders:read"),
        ("POST /orders/{order_id}/cancel", "orders:write"),
        ("POST /orders/{order_id}/refund", "orders:write"),
        ("POST /orders/{order_id}/confirm-receipt", "orders:write"),
        ("POST /orders/{order_id}/return", "orders:write"),
        ("GET /admin/orders/{order_id}", "orders:admin stock:admin"),
        ("GET /admin/orders/{order_id}/log", "orders:admin stock:admin"),
        ("POST /admin/orders/{order_id}/ship", "orders:admin stock:admin"),
        ("POST /admin/orders/{order_id}/return-received", "orders:admin stock:admin"),
        ("POST /admin/orders/{order_id}/cancel", "orders:admin stock:admin"),
        ("PUT /admin/skus/{sku}", "stock:catalogue stock:admin"),
        ("POST /admin/skus/{sku}/adjustments", "stock:adjust stock:admin"),
        ("POST /admin/skus/{sku}/pause", "stock:catalogue stock:admin"),
        ("POST /admin/skus/{sku}/resume", "stock:catalogue stock:admin"),
        ("GET /admin/skus/{sku}/journal", "stock:adjust stock:admin"),
        ("POST /admin/skus/{sku}/codes", "stock:codes stock:admin"),
        ("GET /admin/skus/{sku}/codes", "stock:codes stock:admin"),
        ("POST /admin/orders/{order_id}/codes/redeem", "stock:codes stock:admin"),
        ("POST /admin/orders/{order_id}/codes/reissue", "stock:codes stock:admin"),
        ("GET /orders/{order_id}/codes", "orders:read"),
        ("PUT /admin/campaigns/{campaign_id}", "stock:catalogue stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/adjustments", "stock:catalogue stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/pause", "stock:catalogue stock:admin"),
        ("POST /admin/campaigns/{campaign_id}/resume", "stock:catalogue stock:admin"),
        ("GET /skus/{sku}/availability/me", "orders:read"),
        ("POST /skus/{sku}/waitlist", "orders:write"),
        ("DELETE /skus/{sku}/waitlist", "orders:write"),
        ("GET /skus/{sku}/waitlist/me", "orders:read"),
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
            "GET /campaigns/{campaign_id}",
            "GET /console/",
            "GET /shop/"
        ],
        "no other route is public"
    );
    let queues: Vec<_> = t.queues.iter().filter(|q| q.redrive.is_some()).map(|q| q.logical_id.as_str()).collect();
    // … and PushQueue (docs/push.md)
    assert_eq!(queues.len(), 6, "{queues:?}");
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
        "Auth: {Authorizer: JwtAuthorizer, AuthorizationScopes: [\"stock:catalogue\", \"stock:admin\"]}",
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

// ---------- the optional edge (EdgeProtection) ----------

mod cfn;
use cfn::Stack;
use serde_json::Value;

const HTTP_FUNCTIONS: &[&str] = &[
    "CreateOrderFunction",
    "QueueApiFunction",
    "OrdersApiFunction",
    "PaymentCallbackFunction",
    "ReservationsFunction",
    "StockApiFunction",
    "StockReadFunction",
];

fn edge(on: bool, bots: bool) -> Stack {
    let b = |x: bool| if x { "true" } else { "false" };
    Stack::new(&text(), &[("EdgeProtection", b(on)), ("EdgeBotControl", b(bots))])
}

fn rules(s: &Stack) -> Vec<Value> {
    s.properties("EdgeWebAcl").unwrap()["Rules"].as_array().unwrap().clone()
}

fn rule<'a>(rules: &'a [Value], name: &str) -> Option<&'a Value> {
    rules.iter().find(|r| r["Name"] == name)
}

fn byte_matches(statements: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<(String, String, String)>) {
        if let Some(b) = v.get("ByteMatchStatement") {
            let field = b["FieldToMatch"].as_object().unwrap().keys().next().unwrap().clone();
            out.push((
                field,
                b["PositionalConstraint"].as_str().unwrap().to_owned(),
                b["SearchString"].as_str().unwrap().to_owned(),
            ));
        }
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(statements, &mut out);
    out
}

#[test]
fn with_the_edge_off_nothing_of_it_exists_and_the_api_endpoint_stays_open() {
    let s = edge(false, true);
    for ty in [
        "AWS::WAFv2::WebACL",
        "AWS::CloudFront::Distribution",
        "AWS::ApiGatewayV2::DomainName",
        "AWS::SecretsManager::Secret",
        "AWS::WAFv2::LoggingConfiguration",
    ] {
        assert_eq!(s.of_type(ty), Vec::<String>::new(), "{ty} with the edge off");
    }
    assert_eq!(s.properties("HttpApi").unwrap()["DisableExecuteApiEndpoint"], false);
    assert!(s.output("ApiUrl").unwrap().as_str().unwrap().contains(".execute-api."));
    for f in HTTP_FUNCTIONS {
        let env = &s.properties(f).unwrap()["Environment"]["Variables"];
        assert_eq!(env[holdfast::edge::ORIGIN_VERIFY_VAR], "", "{f}: the origin check is off");
    }
    // and the edge is off by default
    assert_eq!(Stack::new(&text(), &[]).properties("HttpApi").unwrap()["DisableExecuteApiEndpoint"], false);
}

#[test]
fn with_the_edge_on_cloudfront_and_waf_front_the_api_and_its_endpoint_is_closed() {
    let s = edge(true, false);
    assert_eq!(s.properties("HttpApi").unwrap()["DisableExecuteApiEndpoint"], true);
    let acl = s.properties("EdgeWebAcl").unwrap();
    assert_eq!(acl["Scope"], "CLOUDFRONT");
    assert_eq!(acl["DefaultAction"], serde_json::json!({"Allow": {}}));
    // CloudFront uses the ACL, reaches the API through its custom domain, and sends the secret
    let cf = s.properties("EdgeDistribution").unwrap()["DistributionConfig"].clone();
    assert_eq!(cf["WebACLId"], s.resolve(&serde_json::json!({"Fn::GetAtt": "EdgeWebAcl.Arn"})).unwrap());
    assert_eq!(cf["ViewerCertificate"]["MinimumProtocolVersion"], "TLSv1.2_2021");
    let origin = &cf["Origins"][0];
    assert_eq!(origin["CustomOriginConfig"]["OriginProtocolPolicy"], "https-only");
    assert_eq!(origin["DomainName"], s.properties("EdgeOriginDomain").unwrap()["DomainName"]);
    let mapping = s.properties("EdgeOriginMapping").unwrap();
    assert_eq!(mapping["ApiId"], "ref:HttpApi");
    let header = &origin["OriginCustomHeaders"][0];
    assert_eq!(header["HeaderName"].as_str().unwrap().to_lowercase(), holdfast::edge::ORIGIN_VERIFY_HEADER);
    let secret = header["HeaderValue"].as_str().unwrap();
    assert!(secret.starts_with("{{resolve:secretsmanager:ref:EdgeOriginSecret"), "{secret}");
    // … and every HTTP function demands exactly that value
    let http: Vec<String> = Template::parse(&text())
        .unwrap()
        .functions
        .iter()
        .filter(|f| f.events.iter().any(|(_, e)| matches!(e, Event::Http { .. })))
        .map(|f| f.logical_id.clone())
        .collect();
    assert_eq!(http, HTTP_FUNCTIONS, "every HTTP function has the origin check");
    for f in HTTP_FUNCTIONS {
        let env = &s.properties(f).unwrap()["Environment"]["Variables"];
        assert_eq!(env[holdfast::edge::ORIGIN_VERIFY_VAR], secret, "{f}");
    }
    assert_eq!(s.output("ApiUrl").unwrap(), format!("https://{}", cf["Aliases"][0].as_str().unwrap()));
    // WAF logs redact the bearer tokens
    let logging = s.properties("EdgeWafLogging").unwrap();
    assert_eq!(logging["RedactedFields"], serde_json::json!([{"SingleHeader": {"Name": "authorization"}}]));
}

/// Every `RegexMatchStatement` under `statements`: (field, regex, transformations in order).
fn regex_matches(statements: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<(String, String, Vec<String>)>) {
        if let Some(r) = v.get("RegexMatchStatement") {
            let field = r["FieldToMatch"].as_object().unwrap().keys().next().unwrap().clone();
            let mut t: Vec<(i64, String)> = r["TextTransformations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| (t["Priority"].as_i64().unwrap(), t["Type"].as_str().unwrap().to_owned()))
                .collect();
            t.sort();
            out.push((field, r["RegexString"].as_str().unwrap().to_owned(), t.into_iter().map(|(_, t)| t).collect()));
        }
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(m) => m.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(statements, &mut out);
    out
}

/// The transformations every path match applies before its regex (security review 3 M4): so
/// `//orders`, `/orders/` and `/%6Frders` cannot slip past a rule API Gateway would route them to.
const NORMALISED: [&str; 3] = ["URL_DECODE", "NORMALIZE_PATH", "LOWERCASE"];

fn path_rule(rules: &[Value], name: &str, limit: &str, s: &Stack) -> (Vec<(String, String, String)>, String) {
    let r = rule(rules, name).unwrap_or_else(|| panic!("no rule {name}"));
    let rate = &r["Statement"]["RateBasedStatement"];
    assert_eq!(rate["AggregateKeyType"], "IP", "{name}");
    assert_eq!(rate["EvaluationWindowSec"], 60, "{name}");
    assert_eq!(rate["Limit"], s.resolve(&serde_json::json!({"Ref": limit})).unwrap(), "{name}");
    assert_eq!(r["Action"]["Block"]["CustomResponse"]["ResponseCode"], 429, "{name}");
    let regexes = regex_matches(&rate["ScopeDownStatement"]);
    assert_eq!(regexes.len(), 1, "{name}: {regexes:?}");
    let (field, regex, transforms) = regexes.into_iter().next().unwrap();
    assert_eq!(field, "UriPath", "{name}");
    assert_eq!(transforms, NORMALISED, "{name}");
    (byte_matches(&rate["ScopeDownStatement"]), regex)
}

#[test]
fn the_web_acl_has_the_managed_groups_and_per_ip_rate_rules_on_checkout_payments_webhooks_and_reads() {
    let s = edge(true, false);
    let rules = rules(&s);
    let managed: Vec<&str> =
        rules.iter().filter_map(|r| r["Statement"]["ManagedRuleGroupStatement"]["Name"].as_str()).collect();
    assert_eq!(managed, vec!["AWSManagedRulesCommonRuleSet", "AWSManagedRulesKnownBadInputsRuleSet"]);
    let post = vec![("Method".to_owned(), "EXACTLY".to_owned(), "POST".to_owned())];
    let get = vec![("Method".to_owned(), "EXACTLY".to_owned(), "GET".to_owned())];
    assert_eq!(
        path_rule(&rules, "checkout-per-ip", "EdgeCheckoutRateLimit", &s),
        (post.clone(), "^/+orders/*$".into())
    );
    assert_eq!(
        path_rule(&rules, "payment-start-per-ip", "EdgePaymentStartRateLimit", &s),
        (post, "^/+orders/+[^/]+/+payments/*$".into())
    );
    // every method of the webhook paths
    assert_eq!(path_rule(&rules, "webhooks-per-ip", "EdgeWebhookRateLimit", &s), (vec![], "^/+payments(/|$)".into()));
    assert_eq!(
        path_rule(&rules, "public-reads-per-ip", "EdgePublicReadRateLimit", &s),
        (get, "^/+(skus|campaigns|console|shop)(/|$)".into())
    );
    // every public route is under one of the rules' paths: the reads, or the webhooks
    for (route, _, auth) in Template::parse(&text()).unwrap().routes() {
        if auth == Auth::Public {
            let (method, path) = route.split_once(' ').unwrap();
            let covered = match method {
                "GET" => ["/skus/", "/campaigns/", "/console/", "/shop/"].iter().any(|p| path.starts_with(p)),
                "POST" => path.starts_with("/payments/"),
                _ => false,
            };
            assert!(covered, "{route} escapes the rate rules");
        }
    }
    // rate rules come first: a flood is cut before the (costlier) managed groups look at it
    let prio = |n: &str| rule(&rules, n).unwrap()["Priority"].as_i64().unwrap();
    for r in ["checkout-per-ip", "payment-start-per-ip", "webhooks-per-ip", "public-reads-per-ip"] {
        assert!(prio(r) < prio("aws-common"), "{r}");
    }
    let mut priorities: Vec<i64> = rules.iter().map(|r| r["Priority"].as_i64().unwrap()).collect();
    priorities.sort_unstable();
    priorities.dedup();
    assert_eq!(priorities.len(), rules.len(), "priorities are unique");
    assert!(rule(&rules, "aws-bot-control").is_none(), "bot control is off unless asked for");
}

#[test]
fn bot_control_is_its_own_switch_and_leaves_webhooks_and_order_systems_alone() {
    let s = edge(true, true);
    let rules = rules(&s);
    let bots = rule(&rules, "aws-bot-control").expect("bot control with EdgeBotControl=true");
    let group = &bots["Statement"]["ManagedRuleGroupStatement"];
    assert_eq!(group["Name"], "AWSManagedRulesBotControlRuleSet");
    let excluded: Vec<String> =
        byte_matches(&group["ScopeDownStatement"]["NotStatement"]).into_iter().map(|m| m.2).collect();
    assert_eq!(excluded, vec!["/payments/", "/reservations"]);
    // without the edge, the bot switch alone creates nothing
    assert!(edge(false, true).properties("EdgeWebAcl").is_none());
}

#[test]
fn every_admin_route_takes_its_own_scope_or_the_legacy_superset_and_nothing_else() {
    use holdfast::api::{Auth as A, SCOPE_ADMIN};
    let mut kinds = std::collections::BTreeSet::new();
    for (_, routes) in holdfast::handlers::ROUTES {
        for r in *routes {
            if !r.key.split(' ').nth(1).unwrap().starts_with("/admin/") {
                assert!(!r.auth.scopes().contains(&SCOPE_ADMIN), "{} is not an admin route", r.key);
                continue;
            }
            let A::AnyScope(s) = r.auth else { panic!("{}: {:?}", r.key, r.auth) };
            assert_eq!(s.len(), 2, "{}", r.key);
            assert_eq!(s[1], SCOPE_ADMIN, "{}", r.key);
            kinds.insert(s[0]);
        }
    }
    assert_eq!(kinds, ["orders:admin", "stock:adjust", "stock:catalogue", "stock:codes"].into());
}

#[test]
fn a_document_that_drops_the_legacy_admin_alternative_is_reported() {
    let mut s = spec();
    s["paths"]["/admin/skus/{sku}/codes"]["post"]["security"] = serde_json::json!([{"jwt": ["stock:codes"]}]);
    let p = contract(&s, &text());
    assert!(
        p.iter().any(|p| p
            == "POST /admin/skus/{sku}/codes: the OpenAPI document says JWT with scope stock:codes, the handler says JWT with any scope of stock:codes, stock:admin"),
        "{p:?}"
    );
}

// ---------- the web ACL outside us-east-1 (issue 26) ----------

fn edge_waf_text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/edge-waf.yaml"))
        .expect("infra/edge-waf.yaml")
}

const EXTERNAL_ACL: &str = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/holdfast-edge/0123abcd";

/// Whether the main template's `Rules` entry `name` applies (its `RuleCondition`), and what its
/// assertion compares the region with. The rule conditions used are `Fn::And` of `Fn::Equals`.
fn region_rule(s: &Stack, name: &str) -> (bool, Value) {
    let rule = &s.doc["Rules"][name];
    assert!(!rule.is_null(), "no rule {name}");
    let applies = rule["RuleCondition"]["Fn::And"].as_array().expect("Fn::And").iter().all(|c| {
        let a = c["Fn::Equals"].as_array().expect("Fn::Equals");
        s.resolve(&a[0]) == s.resolve(&a[1])
    });
    let assert = &rule["Assertions"][0]["Assert"]["Fn::Equals"];
    assert_eq!(assert[0], serde_json::json!({"Ref": "AWS::Region"}), "{name} compares the region");
    (applies, assert[1].clone())
}

#[test]
fn a_stack_that_creates_its_web_acl_must_be_in_us_east_1_and_one_elsewhere_uses_the_acl_of_edge_waf_yaml() {
    // edge on, no external ACL: the stack creates it, and the rule demands us-east-1
    let own = edge(true, false);
    assert!(own.exists("EdgeWebAcl") && own.exists("EdgeWafLogging") && own.exists("EdgeWafLogGroup"));
    assert_eq!(region_rule(&own, "EdgeWebAclInUsEast1"), (true, Value::from("us-east-1")));
    // edge on with the external ACL: none created here, CloudFront uses the given one, the
    // region rule does not apply, and everything else of the edge is as before
    let b = |x: bool| if x { "true" } else { "false" };
    let elsewhere = Stack::new(
        &text(),
        &[("EdgeProtection", "true"), ("EdgeBotControl", b(false)), ("EdgeExternalWebAclArn", EXTERNAL_ACL)],
    );
    for id in ["EdgeWebAcl", "EdgeWafLogging", "EdgeWafLogGroup"] {
        assert!(!elsewhere.exists(id), "{id} is created although the ACL is external");
    }
    assert!(!region_rule(&elsewhere, "EdgeWebAclInUsEast1").0);
    let cf = elsewhere.properties("EdgeDistribution").unwrap()["DistributionConfig"].clone();
    assert_eq!(cf["WebACLId"], EXTERNAL_ACL);
    assert_eq!(elsewhere.output("EdgeWebAclArn").unwrap(), EXTERNAL_ACL);
    assert_eq!(elsewhere.properties("HttpApi").unwrap()["DisableExecuteApiEndpoint"], true);
    assert!(elsewhere.exists("EdgeOriginSecret") && elsewhere.exists("EdgeOriginDomain"));
    // the edge off: nothing of it, whatever the external ACL says; the rule does not apply
    let off = Stack::new(&text(), &[("EdgeProtection", "false"), ("EdgeExternalWebAclArn", EXTERNAL_ACL)]);
    assert!(off.of_type("AWS::CloudFront::Distribution").is_empty() && !off.exists("EdgeWebAcl"));
    assert!(!region_rule(&off, "EdgeWebAclInUsEast1").0);
    assert_eq!(off.properties("HttpApi").unwrap()["DisableExecuteApiEndpoint"], false);
    // the parameter takes only a CLOUDFRONT-scope ACL's ARN (us-east-1, global)
    let pattern = own.doc["Parameters"]["EdgeExternalWebAclArn"]["AllowedPattern"].as_str().unwrap().to_owned();
    assert!(pattern.contains("wafv2:us-east-1:") && pattern.contains(":global/webacl/") && pattern.starts_with("^$|"));
}

#[test]
fn the_web_acl_of_edge_waf_yaml_is_the_one_the_main_template_creates() {
    let t = edge_waf_text();
    let waf = holdfast_local::template::yaml(&t).expect("edge-waf.yaml parses");
    assert!(holdfast_local::template::get(&waf, "Rules").is_some(), "edge-waf.yaml has a region rule");
    let doc = cfn::json_of(&t);
    let assert = &doc["Rules"]["WebAclInUsEast1"]["Assertions"][0]["Assert"]["Fn::Equals"];
    assert_eq!(assert, &serde_json::json!([{"Ref": "AWS::Region"}, "us-east-1"]));
    assert_eq!(doc["Outputs"]["WebAclArn"]["Value"], serde_json::json!({"Fn::GetAtt": "EdgeWebAcl.Arn"}));
    for bots in [false, true] {
        let b = if bots { "true" } else { "false" };
        let main = edge(true, bots);
        for limits in [("60", "600"), ("25", "300")] {
            let main = Stack::new(
                &text(),
                &[
                    ("EdgeProtection", "true"),
                    ("EdgeBotControl", b),
                    ("EdgeCheckoutRateLimit", limits.0),
                    ("EdgePublicReadRateLimit", limits.1),
                ],
            );
            let alone = Stack::new(
                &t,
                &[("EdgeBotControl", b), ("EdgeCheckoutRateLimit", limits.0), ("EdgePublicReadRateLimit", limits.1)],
            );
            for id in ["EdgeWebAcl", "EdgeWafLogGroup", "EdgeWafLogging"] {
                assert_eq!(
                    alone.properties(id),
                    main.properties(id),
                    "{id} differs (bot control {b}, limits {limits:?})"
                );
            }
            assert_eq!(alone.of_type("AWS::WAFv2::WebACL"), vec!["EdgeWebAcl".to_owned()]);
        }
        assert_eq!(rules(&main).len(), if bots { 7 } else { 6 });
    }
}

// ---------- alarms on Holdfast's own metrics (security review 3 L1) ----------

/// The metric names of `holdfast::telemetry::names` (its `pub const X: &str = "…"` lines).
fn emitted_metric_names() -> Vec<String> {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../core/src/telemetry.rs"))
        .expect("core/src/telemetry.rs");
    let start = src.find("pub mod names {").expect("telemetry has a names module");
    let end = start + src[start..].find("\n}\n").expect("the names module ends");
    src[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const ")?.split_once(": &str = \"")?.1.strip_suffix("\";"))
        .map(str::to_owned)
        .collect()
}

/// Every alarm on the `Holdfast` namespace whose metric the code never emits, or whose
/// dimension set is not one the metric is emitted with (an alarm sees only the series of its
/// exact dimension set, so such an alarm can never fire).
fn alarm_problems(template: &str) -> Vec<String> {
    let s = Stack::new(template, &[]);
    let names = emitted_metric_names();
    let mut out = Vec::new();
    for id in s.of_type("AWS::CloudWatch::Alarm") {
        let p = s.properties(&id).unwrap();
        // a metric math alarm watches each of its metrics (`Metrics[].MetricStat.Metric`)
        let watched: Vec<&Value> = match p.get("Metrics").and_then(Value::as_array) {
            Some(m) => m.iter().filter_map(|q| q.get("MetricStat").map(|st| &st["Metric"])).collect(),
            None => vec![&p],
        };
        for w in watched.into_iter().filter(|w| w["Namespace"] == "Holdfast") {
            out.extend(metric_problem(&id, w, &names));
        }
    }
    out
}

/// What is wrong with one watched metric (`MetricName`, `Dimensions`) of alarm `id`, if anything.
fn metric_problem(id: &str, p: &Value, names: &[String]) -> Option<String> {
    {
        let metric = p["MetricName"].as_str().unwrap_or("");
        if !names.iter().any(|n| n == metric) {
            return Some(format!("{id} watches {metric}, which the code does not emit"));
        }
        let mut dims: Vec<&str> =
            p["Dimensions"].as_array().into_iter().flatten().filter_map(|d| d["Name"].as_str()).collect();
        dims.sort_unstable();
        let emitted = holdfast::telemetry::dimensions_of(metric);
        if !emitted.iter().any(|set| {
            let mut set = set.to_vec();
            set.sort_unstable();
            set == dims
        }) {
            return Some(format!("{id} watches {metric} with dimensions {dims:?}; it is emitted with {emitted:?}"));
        }
    }
    None
}

#[test]
fn every_alarm_on_a_holdfast_metric_watches_a_name_and_dimension_set_the_code_emits() {
    let t = text();
    assert_eq!(alarm_problems(&t), Vec::<String>::new());
    let names = emitted_metric_names();
    assert!(names.len() > 40 && names.iter().any(|n| n == "CheckoutLatencyP99"), "{names:?}");
    // the checker sees the latency alarm, and a dimension set nobody emits turns it red
    let dims = "      MetricName: CheckoutLatencyP99\n      Dimensions: [{Name: Sku, Value: any}]\n";
    let m = t.replacen("      MetricName: CheckoutLatencyP99\n", dims, 1);
    assert_ne!(m, t);
    assert_eq!(
        alarm_problems(&m),
        vec![
            "CheckoutLatencyAlarm watches CheckoutLatencyP99 with dimensions [\"Sku\"]; it is emitted with [[\"Campaign\"], []]"
                .to_owned()
        ]
    );
    let m = t.replacen("      MetricName: Oversell\n", "      MetricName: Oversells\n", 1);
    assert_eq!(alarm_problems(&m), vec!["OversellAlarm watches Oversells, which the code does not emit".to_owned()]);
    // the metric math alarms' metrics are checked one by one
    let m = t.replacen("MetricName: SupplierCancels}", "MetricName: SupplierCancelled}", 1);
    assert_ne!(m, t);
    assert_eq!(
        alarm_problems(&m),
        vec!["SupplierCancelRateAlarm watches SupplierCancelled, which the code does not emit".to_owned()]
    );
}

// ---------- the anonymous calendar view's own throttle (security review 3 M3) ----------

#[test]
fn the_calendar_route_has_its_own_throttle_below_the_other_public_reads() {
    let s = Stack::new(&text(), &[]);
    let routes = s.properties("HttpApi").unwrap()["RouteSettings"].clone();
    let limits = |route: &str| -> (f64, f64) {
        let r = &routes[route];
        let num = |v: &Value| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_f64()).unwrap();
        (num(&r["ThrottlingRateLimit"]), num(&r["ThrottlingBurstLimit"]))
    };
    let calendar = limits("GET /skus/{sku}/calendar");
    assert_eq!(calendar, (50.0, 100.0));
    for other in ["GET /skus/{sku}", "GET /skus/{sku}/availability", "GET /campaigns/{campaign_id}"] {
        let (rate, burst) = limits(other);
        assert!(calendar.0 < rate && calendar.1 < burst, "{other}: {rate}/{burst} vs the calendar's {calendar:?}");
    }
    // the parameters set it, so a deployment can lower it further
    let t = holdfast_local::template::to_json(&holdfast_local::template::yaml(&text()).unwrap());
    let raw = &t["Resources"]["HttpApi"]["Properties"]["RouteSettings"]["GET /skus/{sku}/calendar"];
    assert_eq!(raw["ThrottlingRateLimit"], serde_json::json!({"Ref": "CalendarReadRateLimit"}));
    assert_eq!(raw["ThrottlingBurstLimit"], serde_json::json!({"Ref": "CalendarReadBurstLimit"}));
}

/// A drop's waiting room has its own door (docs/waiting-room.md, "Isolation"): its routes are
/// served by queue-api, not create-order or orders-api, each with its own route throttle from
/// its own parameters, and queue-api's concurrency can be reserved apart from create-order's.
#[test]
fn a_drops_waiting_room_has_its_own_function_throttles_and_reserved_concurrency() {
    let t = holdfast_local::template::to_json(&holdfast_local::template::yaml(&text()).unwrap());
    let routes = &t["Resources"]["HttpApi"]["Properties"]["RouteSettings"];
    for (route, rate, burst) in [
        ("POST /campaigns/{campaign_id}/queue", "QueueJoinRateLimit", "QueueJoinBurstLimit"),
        ("GET /campaigns/{campaign_id}/queue/me", "QueueJoinRateLimit", "QueueJoinBurstLimit"),
        ("POST /campaigns/{campaign_id}/checkout", "QueueCheckoutRateLimit", "QueueCheckoutBurstLimit"),
    ] {
        assert_eq!(routes[route]["ThrottlingRateLimit"], serde_json::json!({"Ref": rate}), "{route}");
        assert_eq!(routes[route]["ThrottlingBurstLimit"], serde_json::json!({"Ref": burst}), "{route}");
    }
    assert_eq!(routes["POST /orders"]["ThrottlingRateLimit"], serde_json::json!({"Ref": "CheckoutRateLimit"}));
    let f = &t["Resources"]["QueueApiFunction"]["Properties"];
    assert_eq!(
        f["ReservedConcurrentExecutions"],
        serde_json::json!({"Fn::If": ["ReserveQueueApi", {"Ref": "QueueApiReservedConcurrency"}, {"Ref": "AWS::NoValue"}]})
    );
    let served: Vec<&str> = holdfast::handlers::ROUTES
        .iter()
        .filter(|(_, routes)| routes.iter().any(|r| r.key.contains("/queue") || r.key.ends_with("/checkout")))
        .map(|(f, _)| *f)
        .collect();
    assert_eq!(served, ["queue-api"], "only queue-api serves the room");
}

// ---------- the supplier KPIs (docs/suppliers.md, "KPIs") ----------

#[test]
fn the_supplier_kpis_are_alarmed_as_rates_with_a_volume_guard_and_the_confirm_p99() {
    let s = Stack::new(&text(), &[]);
    for (id, op, threshold) in [
        ("SupplierBookingSuccessAlarm", "LessThanThreshold", 95),
        ("SupplierTimeoutRateAlarm", "GreaterThanThreshold", 1),
        ("SupplierCancelRateAlarm", "GreaterThanThreshold", 5),
    ] {
        let p = s.properties(id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!((p["ComparisonOperator"].as_str(), p["Threshold"].as_i64()), (Some(op), Some(threshold)), "{id}");
        let metrics = p["Metrics"].as_array().unwrap_or_else(|| panic!("{id}: metric math"));
        let shown: Vec<&Value> = metrics.iter().filter(|m| m["ReturnData"] == true).collect();
        assert_eq!(shown.len(), 1, "{id}: one expression is the alarm's");
        let expr = shown[0]["Expression"].as_str().unwrap_or("");
        assert!(expr.starts_with("IF(") && expr.contains(">= 20"), "{id}: judged from 20 orders on: {expr}");
        assert!(
            metrics
                .iter()
                .all(|m| m["ReturnData"] == true || m["MetricStat"]["Period"] == 900 || m.get("Expression").is_some()),
            "{id}: 15-minute sums"
        );
        assert_eq!(p["AlarmActions"].as_array().map(Vec::len), Some(1), "{id} notifies");
    }
    let p = s.properties("SupplierConfirmLatencyAlarm").unwrap();
    assert_eq!((p["MetricName"].as_str(), p["ExtendedStatistic"].as_str()), (Some("SupplierConfirmMs"), Some("p99")));
    assert_eq!((p["Threshold"].as_i64(), p["Period"].as_i64()), (Some(30_000), Some(900)));
    let l = s.properties("LedgerDifferencesAlarm").unwrap();
    assert_eq!((l["MetricName"].as_str(), l["Threshold"].as_i64()), (Some("LedgerDifferences"), Some(0)));
}
