//! The template's WebSocket API on the local API port, as API Gateway serves it (docs/push.md):
//! `GET /ws?…` upgrades after the `$connect` route's function answered 200 (any other status
//! is the HTTP answer and no upgrade), each text frame goes to the route its action selects
//! (`$request.body.action`, else `$default`), a closed socket runs `$disconnect`. Its management
//! endpoint is served beside it: `POST /@connections/{id}` sends one text frame to the
//! connection (410 `GoneException` when there is none), `DELETE` closes it — the same calls the
//! functions' `aws-sdk-apigatewaymanagement` client makes to AWS, its endpoint pointed here.

use crate::template::{Template, WebSocketApi};
use aws_lambda_events::apigw::{
    ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest, ApiGatewayWebsocketProxyRequestContext,
};
use futures::{SinkExt, StreamExt};
use holdfast::app::App;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;

/// The path the WebSocket API is served on.
pub const PATH: &str = "/ws";
/// The management endpoint's path prefix (the SDK's `PostToConnection` path).
pub const CONNECTIONS: &str = "/@connections/";
/// API Gateway's largest WebSocket frame.
const MAX_FRAME: usize = 32 * 1024;

enum Outgoing {
    Text(String),
    Close,
}

pub struct WebSocketServer {
    api: WebSocketApi,
    apps: HashMap<String, Arc<App>>,
    connections: Mutex<HashMap<String, mpsc::UnboundedSender<Outgoing>>>,
}

type Answer = hyper::Response<Full<Bytes>>;

fn answer(status: u16, body: &str, error_type: Option<&str>) -> Answer {
    let mut r = hyper::Response::new(Full::new(Bytes::from(body.to_owned())));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    if let Some(t) = error_type.and_then(|t| hyper::header::HeaderValue::from_str(t).ok()) {
        r.headers_mut().insert("x-amzn-errortype", t);
    }
    r
}

/// Problems that make the template's WebSocket routes and the code disagree (empty = agree).
pub fn coverage_problems(t: &Template) -> Vec<String> {
    let mut out = Vec::new();
    for api in &t.websockets {
        for (key, f) in &api.routes {
            if f != "push-api" || !holdfast::handlers::push_api::WS_ROUTES.contains(&key.as_str()) {
                out.push(format!("{}: route {key} goes to {f}, which does not handle it", api.logical_id));
            }
        }
        for key in holdfast::handlers::push_api::WS_ROUTES {
            if !api.routes.iter().any(|(k, _)| k == key) {
                out.push(format!("{}: push-api handles {key}, which the template does not route", api.logical_id));
            }
        }
    }
    out
}

impl WebSocketServer {
    /// The template's first WebSocket API, if it declares one.
    pub fn from_template(t: &Template, apps: &HashMap<String, Arc<App>>) -> Option<Arc<Self>> {
        let api = t.websockets.first()?.clone();
        Some(Arc::new(WebSocketServer { api, apps: apps.clone(), connections: Mutex::new(HashMap::new()) }))
    }

    pub fn serves(path: &str) -> bool {
        path == PATH || path.starts_with(CONNECTIONS)
    }

    /// Open connections (tests).
    pub fn open_connections(&self) -> usize {
        self.connections.lock().map(|c| c.len()).unwrap_or(0)
    }

    pub async fn handle(self: Arc<Self>, req: hyper::Request<Incoming>) -> Answer {
        let path = req.uri().path().to_owned();
        match path.strip_prefix(CONNECTIONS) {
            Some(id) => {
                let id = percent_encoding::percent_decode_str(id).decode_utf8_lossy().into_owned();
                self.manage(req, &id).await
            }
            None => self.upgrade(req).await,
        }
    }

    fn route_of(&self, key: &str) -> Option<&str> {
        self.api.routes.iter().find(|(k, _)| k == key).map(|(_, f)| f.as_str())
    }

    /// Runs route `key` for `connection` (an integration's answer, or `None` without a route).
    async fn invoke(
        &self,
        key: &str,
        connection: &str,
        query: &str,
        body: Option<String>,
    ) -> Option<ApiGatewayProxyResponse> {
        let function = self.route_of(key)?;
        let app = self.apps.get(function)?.clone();
        let now_ms = holdfast::clock::now_ms();
        let event_type = match key {
            "$connect" => "CONNECT",
            "$disconnect" => "DISCONNECT",
            _ => "MESSAGE",
        };
        let req = ApiGatewayWebsocketProxyRequest {
            query_string_parameters: crate::server::parse_query(query).into(),
            body,
            request_context: ApiGatewayWebsocketProxyRequestContext {
                route_key: Some(key.to_owned()),
                connection_id: Some(connection.to_owned()),
                event_type: Some(event_type.to_owned()),
                stage: self.api.stage.clone(),
                request_time_epoch: now_ms,
                connected_at: now_ms,
                request_id: Some(format!("local-{now_ms}-{}", fastrand::u32(..))),
                ..Default::default()
            },
            ..Default::default()
        };
        let billed = holdfast::adapters::usage::invocation(function);
        let function = function.to_owned();
        let run = async move { holdfast::handlers::websocket(&function, &app, req).await };
        let out = tokio::spawn(run).await;
        drop(billed);
        match out {
            Ok(Some(r)) => Some(r),
            _ => Some(ApiGatewayProxyResponse { status_code: 500, ..Default::default() }),
        }
    }

    /// The route a client's message selects (`$request.body.action`, else `$default`).
    fn select(&self, text: &str) -> String {
        let action = (self.api.route_selection == "$request.body.action")
            .then(|| serde_json::from_str::<serde_json::Value>(text).ok())
            .flatten()
            .and_then(|v| v.get("action").and_then(|a| a.as_str()).map(str::to_owned));
        match action {
            Some(a) if !a.starts_with('$') && self.route_of(&a).is_some() => a,
            _ => "$default".to_owned(),
        }
    }

    async fn upgrade(self: Arc<Self>, req: hyper::Request<Incoming>) -> Answer {
        let header =
            |k: hyper::header::HeaderName| req.headers().get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let wants = header(hyper::header::UPGRADE).is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        let (Some(key), true) = (header(hyper::header::SEC_WEBSOCKET_KEY), wants) else {
            return answer(426, r#"{"message":"Upgrade Required"}"#, None);
        };
        let query = req.uri().query().unwrap_or("").to_owned();
        let connection = connection_id();
        let Some(connect) = self.invoke("$connect", &connection, &query, None).await else {
            return answer(500, r#"{"message":"Internal Server Error"}"#, None);
        };
        if connect.status_code != 200 {
            let status = u16::try_from(connect.status_code).unwrap_or(500);
            let message =
                hyper::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Refused");
            return answer(status, &serde_json::json!({ "message": message }).to_string(), None);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut c) = self.connections.lock() {
            c.insert(connection.clone(), tx);
        }
        let server = self.clone();
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(upgraded) => server.run(upgraded, connection, rx).await,
                Err(e) => {
                    tracing::warn!(error = %e, "websocket upgrade failed");
                    server.gone(&connection).await;
                }
            }
        });
        let mut r = hyper::Response::new(Full::new(Bytes::new()));
        *r.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
        let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
        let h = r.headers_mut();
        h.insert(hyper::header::CONNECTION, hyper::header::HeaderValue::from_static("Upgrade"));
        h.insert(hyper::header::UPGRADE, hyper::header::HeaderValue::from_static("websocket"));
        if let Ok(v) = hyper::header::HeaderValue::from_str(&accept) {
            h.insert(hyper::header::SEC_WEBSOCKET_ACCEPT, v);
        }
        r
    }

    /// One open connection: client frames to their routes, posted frames to the client, until
    /// either side closes; then `$disconnect`.
    async fn run(
        self: Arc<Self>,
        upgraded: hyper::upgrade::Upgraded,
        connection: String,
        mut rx: mpsc::UnboundedReceiver<Outgoing>,
    ) {
        let ws = tokio_tungstenite::WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let (mut sink, mut stream) = ws.split();
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(Outgoing::Text(t)) => {
                        if sink.send(Message::text(t)).await.is_err() { break; }
                    }
                    Some(Outgoing::Close) | None => {
                        let _ = sink.send(Message::Close(None)).await;
                        break;
                    }
                },
                msg = stream.next() => match msg {
                    Some(Ok(Message::Text(t))) => {
                        let text = t.to_string();
                        if text.len() > MAX_FRAME { break; }
                        let route = self.select(&text);
                        let server = self.clone();
                        let conn = connection.clone();
                        // a route runs beside the socket, as API Gateway invokes it
                        tokio::spawn(async move { server.invoke(&route, &conn, "", Some(text)).await });
                    }
                    Some(Ok(Message::Ping(p))) => { let _ = sink.send(Message::Pong(p)).await; }
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        self.gone(&connection).await;
    }

    async fn gone(&self, connection: &str) {
        let known = self.connections.lock().map(|mut c| c.remove(connection).is_some()).unwrap_or(false);
        if known {
            self.invoke("$disconnect", connection, "", None).await;
        }
    }

    /// The management endpoint: `POST` a frame, `DELETE` the connection, `GET` whether it is open.
    async fn manage(&self, req: hyper::Request<Incoming>, id: &str) -> Answer {
        let method = req.method().clone();
        let body = match Limited::new(req.into_body(), MAX_FRAME).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                return answer(413, r#"{"message":"PayloadTooLargeException"}"#, Some("PayloadTooLargeException"))
            }
        };
        let sender = self.connections.lock().ok().and_then(|c| c.get(id).cloned());
        let Some(sender) = sender else {
            return answer(410, r#"{"message":"GoneException"}"#, Some("GoneException"));
        };
        let out = match method {
            hyper::Method::POST => Outgoing::Text(String::from_utf8_lossy(&body).into_owned()),
            hyper::Method::DELETE => Outgoing::Close,
            hyper::Method::GET => return answer(200, &serde_json::json!({ "connectionId": id }).to_string(), None),
            _ => return answer(405, r#"{"message":"Method Not Allowed"}"#, None),
        };
        match sender.send(out) {
            Ok(()) if method == hyper::Method::DELETE => answer(204, "", None),
            Ok(()) => answer(200, "", None),
            Err(_) => answer(410, r#"{"message":"GoneException"}"#, Some("GoneException")),
        }
    }
}

/// A connection id in API Gateway's shape (base64-ish, 16 characters, ends in `=`).
fn connection_id() -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut s: String = (0..15).map(|_| A[fastrand::usize(..A.len())] as char).collect();
    s.push('=');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_declares_the_push_api_with_every_route_the_code_handles() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
        let t = Template::load(std::path::Path::new(path)).unwrap();
        assert_eq!(t.websockets.len(), 1);
        let api = &t.websockets[0];
        assert_eq!(api.route_selection, "$request.body.action");
        assert_eq!(api.stage.as_deref(), Some("live"));
        assert!(coverage_problems(&t).is_empty(), "{:?}", coverage_problems(&t));
        let mut keys: Vec<&str> = api.routes.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["$connect", "$default", "$disconnect", "ping", "watch"]);
    }

    #[test]
    fn a_route_the_code_does_not_handle_is_reported() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
        let text = std::fs::read_to_string(path).unwrap().replace("RouteKey: watch", "RouteKey: shout");
        let t = Template::parse(&text).unwrap();
        let problems = coverage_problems(&t);
        assert!(problems.iter().any(|p| p.contains("shout")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("handles watch")), "{problems:?}");
    }
}
