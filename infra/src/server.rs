//! Serves the template's `HttpApi` routes with API Gateway HTTP API (payload v2) semantics:
//! route matching with path parameters, the JWT authorizer with route scopes, query strings,
//! headers and body handed to the function's handler in-process. It also serves the API's
//! OpenAPI document and docs page.

use crate::auth;
use crate::template::Auth;
use aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription, ApiGatewayV2httpRequest,
    ApiGatewayV2httpRequestContext, ApiGatewayV2httpRequestContextHttpDescription,
};
use aws_lambda_events::encodings::Body;
use base64::Engine;
use holdfast::app::App;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::net::TcpListener;

/// API Gateway's payload limit.
const MAX_PAYLOAD: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Route {
    pub method: String,
    pub segments: Vec<String>,
    pub route_key: String,
    pub function: String,
    pub auth: Auth,
}

impl Route {
    pub fn new(route_key: &str, function: &str, auth: Auth) -> Self {
        let (method, path) = route_key.split_once(' ').unwrap_or(("GET", route_key));
        Route {
            method: method.to_owned(),
            segments: path.trim_matches('/').split('/').map(str::to_owned).collect(),
            route_key: route_key.to_owned(),
            function: function.to_owned(),
            auth,
        }
    }

    fn matches(&self, method: &str, path: &str) -> Option<HashMap<String, String>> {
        if self.method != method {
            return None;
        }
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut params = HashMap::new();
        for (seg, part) in self.segments.iter().zip(parts) {
            if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                if part.is_empty() {
                    return None;
                }
                params.insert(name.to_owned(), path_param(part));
            } else if seg != part {
                return None;
            }
        }
        Some(params)
    }
}

pub struct Server {
    pub routes: Vec<Route>,
    /// Route throttles and reserved concurrency, as the template sets them (door.rs).
    pub door: crate::door::Door,
    pub apps: HashMap<String, Arc<App>>,
    pub jwt_secret: String,
    /// The template's WebSocket API and its management endpoint (websocket.rs), on this port.
    pub websocket: Option<Arc<crate::websocket::WebSocketServer>>,
}

/// A path segment, percent-decoded as API Gateway does (`+` stays a plus: it means a space only
/// in a query string or form body).
fn path_param(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// `a=1&b=x%20y` (also an `application/x-www-form-urlencoded` body) into its values.
pub fn parse_query(q: &str) -> HashMap<String, Vec<String>> {
    let mut m: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        m.entry(k.into_owned()).or_default().push(v.into_owned());
    }
    m
}

fn gateway_error(status: u16, message: &str) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(serde_json::json!({ "message": message }).to_string())));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// `GET /openapi.json` and `GET /docs`: the API's document and its page. Local only; in AWS the
/// document is docs/openapi.json in the repository.
fn api_pages(method: &str, path: &str) -> Option<hyper::Response<Full<Bytes>>> {
    static SPEC: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    if method != "GET" || !matches!(path, "/openapi.json" | "/docs") {
        return None;
    }
    let (json, html) = SPEC.get_or_init(|| {
        let json = holdfast::handlers::routes::openapi_json();
        let html = crate::docs::page(&serde_json::from_str(&json).unwrap_or_default());
        (json, html)
    });
    let (body, content_type) =
        if path == "/docs" { (html, "text/html; charset=utf-8") } else { (json, "application/json") };
    let mut r = hyper::Response::new(Full::new(Bytes::from(body.clone())));
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    Some(r)
}

impl Server {
    pub async fn handle(self: Arc<Self>, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let method = req.method().as_str().to_owned();
        let path = req.uri().path().to_owned();
        if let Some(r) = api_pages(&method, &path) {
            return r;
        }
        if let Some(ws) = self.websocket.as_ref().filter(|_| crate::websocket::WebSocketServer::serves(&path)) {
            return ws.clone().handle(req).await;
        }
        let raw_query = req.uri().query().unwrap_or("").to_owned();
        let Some((route, params)) = self.routes.iter().find_map(|r| r.matches(&method, &path).map(|p| (r, p))) else {
            return gateway_error(404, "Not Found");
        };
        // what the HTTP API bills: every request to a route, throttled or refused ones included
        drop(holdfast::adapters::usage::call("apigateway:HttpRequest"));
        // held until the response is made: the function's concurrency in use
        let _pass = match self.door.admit(&route.route_key, &route.function) {
            Ok(pass) => pass,
            Err(crate::door::Refused::Throttled) => return gateway_error(429, "Too Many Requests"),
            Err(crate::door::Refused::NoConcurrency) => return gateway_error(500, "Internal Server Error"),
        };
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, MAX_PAYLOAD).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return gateway_error(413, "Request Entity Too Large"),
        };
        let authorizer = match &route.auth {
            Auth::Public => None,
            Auth::Jwt { scopes } => {
                let header = parts.headers.get(hyper::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
                let claims = match auth::verify(&self.jwt_secret, header, holdfast::clock::now_s()) {
                    Ok(c) => c,
                    Err(_) => return gateway_error(401, "Unauthorized"),
                };
                if !scopes.is_empty() && !scopes.iter().any(|s| claims.scopes.contains(s)) {
                    return gateway_error(403, "Forbidden");
                }
                Some(ApiGatewayRequestAuthorizer {
                    jwt: Some(ApiGatewayRequestAuthorizerJwtDescription {
                        claims: claims.claims,
                        scopes: Some(claims.scopes),
                    }),
                    ..Default::default()
                })
            }
        };
        let (body, is_b64) = match std::str::from_utf8(&body) {
            Ok(s) => (s.to_owned(), false),
            Err(_) => (base64::engine::general_purpose::STANDARD.encode(&body), true),
        };
        let mut headers = parts.headers.clone();
        headers.remove(hyper::header::CONTENT_LENGTH);
        let now_ms = holdfast::clock::now_ms();
        let event = ApiGatewayV2httpRequest {
            version: Some("2.0".into()),
            route_key: Some(route.route_key.clone()),
            raw_path: Some(path.clone()),
            raw_query_string: Some(raw_query.clone()),
            headers,
            query_string_parameters: parse_query(&raw_query).into(),
            path_parameters: params,
            request_context: ApiGatewayV2httpRequestContext {
                route_key: Some(route.route_key.clone()),
                stage: Some("$default".into()),
                request_id: Some(format!("local-{now_ms}-{}", fastrand::u32(..))),
                time_epoch: now_ms,
                authorizer,
                http: ApiGatewayV2httpRequestContextHttpDescription {
                    method: parts.method.clone(),
                    path: Some(path),
                    protocol: Some("HTTP/1.1".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
            body: (!body.is_empty()).then_some(body),
            is_base64_encoded: is_b64,
            ..Default::default()
        };
        let Some(app) = self.apps.get(&route.function).cloned() else {
            return gateway_error(500, "Internal Server Error");
        };
        let function = route.function.clone();
        let billed = holdfast::adapters::usage::invocation(&function);
        // Run the handler in its own task: a panic becomes a 500, as a crashed Lambda would.
        let out = tokio::spawn(async move { holdfast::handlers::http(&function, &app, event).await }).await;
        drop(billed);
        let Ok(Some(resp)) = out else {
            return gateway_error(500, "Internal Server Error");
        };
        let bytes = match resp.body {
            Some(Body::Text(t)) => Bytes::from(t),
            Some(Body::Binary(b)) => Bytes::from(b),
            _ => Bytes::new(),
        };
        let bytes = if resp.is_base64_encoded {
            Bytes::from(base64::engine::general_purpose::STANDARD.decode(&bytes).unwrap_or_default())
        } else {
            bytes
        };
        let mut r = hyper::Response::new(Full::new(bytes));
        *r.status_mut() =
            hyper::StatusCode::from_u16(resp.status_code as u16).unwrap_or(hyper::StatusCode::BAD_GATEWAY);
        for (k, v) in resp.headers.iter() {
            r.headers_mut().insert(k.clone(), v.clone());
        }
        r
    }
}

/// Accepts connections until `shutdown` fires.
pub async fn serve(listener: TcpListener, server: Arc<Server>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let server = server.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, std::convert::Infallible>(server.handle(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).with_upgrades().await;
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_with_path_parameters() {
        let r = Route::new("POST /orders/{order_id}/cancel", "orders-api", Auth::Public);
        assert_eq!(r.matches("POST", "/orders/o1/cancel").unwrap()["order_id"], "o1");
        assert!(r.matches("GET", "/orders/o1/cancel").is_none());
        assert!(r.matches("POST", "/orders//cancel").is_none());
        assert!(r.matches("POST", "/orders/o1").is_none());
        assert_eq!(r.matches("POST", "/orders/a%20b/cancel").unwrap()["order_id"], "a b");
    }

    #[test]
    fn query_strings_decode() {
        let q = parse_query("limit=5&cursor=a%3D&x");
        assert_eq!(q["limit"], vec!["5"]);
        assert_eq!(q["cursor"], vec!["a="]);
        assert_eq!(q["x"], vec![""]);
        assert_eq!(parse_query("a=%zz%4+b")["a"], vec!["%zz%4 b"]);
        assert_eq!(path_param("a+b%2Bc%zz"), "a+b+c%zz");
    }
}
