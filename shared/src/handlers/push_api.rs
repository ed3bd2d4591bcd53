//! push-api: the WebSocket API's routes (`$connect` with the buyer's token, `$disconnect`,
//! `ping`, `watch`, `$default`) and the push queue (order events from the bus, watch timers),
//! each frame posted to the buyer's connections through the management endpoint
//! (docs/push.md). One function for both: a WebSocket event or an SQS batch.

use super::sqs::{each, ConsumerFaults, Handled};
use crate::app::{App, TokenCheck, STOCK_SOURCE};
use crate::domain::events::{EventDetail, EventKind, SCHEMA_VERSION, SOURCE};
use crate::domain::push::{ClientMessage, Watch};
use crate::service::push;
use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The WebSocket API's route keys (template.yaml's `AWS::ApiGatewayV2::Route`s; the local
/// stack serves the same).
pub const WS_ROUTES: &[&str] = &["$connect", "$disconnect", "$default", "ping", "watch"];

/// What the push queue carries: a bus event (its EventBridge envelope) or a watch timer.
#[derive(Debug, Clone, PartialEq)]
pub enum PushMessage {
    Event {
        kind: Option<EventKind>,
        detail: EventDetail,
        at: String,
    },
    /// `holdfast.stock`: `CodesReady`, `WaitlistNotified` (domain::push::stock_push).
    Stock {
        detail_type: String,
        detail: serde_json::Value,
        at: String,
    },
    Watch(Watch),
}

#[derive(Deserialize)]
struct Envelope {
    source: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    #[serde(default)]
    time: String,
    detail: serde_json::Value,
}

/// One push queue message, refused (to the DLQ) when it is neither.
pub fn parse(body: &str) -> anyhow::Result<PushMessage> {
    if let Ok(w) = serde_json::from_str::<Watch>(body) {
        anyhow::ensure!(w.schema == 1, "rejected message: unknown schema {}", w.schema);
        return Ok(PushMessage::Watch(w));
    }
    let env: Envelope = serde_json::from_str(body).map_err(|e| anyhow::anyhow!("rejected message: {e}"))?;
    if env.source == STOCK_SOURCE {
        return Ok(PushMessage::Stock { detail_type: env.detail_type, detail: env.detail, at: env.time });
    }
    anyhow::ensure!(env.source == SOURCE, "rejected event: source {}", env.source);
    let detail: EventDetail = serde_json::from_value(env.detail).map_err(|e| anyhow::anyhow!("rejected event: {e}"))?;
    anyhow::ensure!(detail.schema == SCHEMA_VERSION, "rejected event: schema {}", detail.schema);
    Ok(PushMessage::Event { kind: EventKind::parse(&env.detail_type), detail, at: env.time })
}

/// Either trigger: a WebSocket route event, or an SQS batch (`Records`).
pub async fn handle(app: &App, ev: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if ev.get("Records").is_some() {
        let batch: SqsEvent = serde_json::from_value(ev)?;
        return Ok(serde_json::to_value(handle_sqs(app, batch).await?)?);
    }
    let req: ApiGatewayWebsocketProxyRequest = serde_json::from_value(ev)?;
    Ok(serde_json::to_value(handle_ws(app, req).await)?)
}

/// The push queue: each message alone (partial batch failures).
pub async fn handle_sqs(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    each(&app.function, ev, super::sqs::batch_budget(app), ConsumerFaults::default, |m| async move {
        match parse(m.body.as_deref().unwrap_or(""))? {
            PushMessage::Event { kind: Some(kind), detail, at } => {
                push::on_order_event(app, kind, &detail, &at).await?;
            }
            // an event kind this build does not know is no news to push
            PushMessage::Event { kind: None, .. } => {}
            PushMessage::Stock { detail_type, detail, at } => {
                push::on_stock_event(app, &detail_type, &detail, &at).await?;
            }
            PushMessage::Watch(w) => {
                push::on_watch(app, w).await?;
            }
        }
        Ok(Handled::Done)
    })
    .await
}

fn answer(status: i64, body: &str) -> ApiGatewayProxyResponse {
    ApiGatewayProxyResponse {
        status_code: status,
        body: (!body.is_empty()).then(|| Body::Text(body.to_owned())),
        ..Default::default()
    }
}

/// One warm Lambda's token check (the issuer's keys cached), per configuration.
fn token_check(app: &App) -> Arc<TokenCheck> {
    static CHECKS: OnceLock<Mutex<HashMap<String, Arc<TokenCheck>>>> = OnceLock::new();
    let c = &app.config;
    let secret = String::from_utf8_lossy(c.local_jwt_secret.expose()).into_owned();
    let key = format!("{}\n{}\n{}", c.push_jwt_issuer, c.push_jwt_audience, secret);
    let mut all = CHECKS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    all.entry(key)
        .or_insert_with(|| Arc::new(TokenCheck::new(&c.push_jwt_issuer, &c.push_jwt_audience, &secret)))
        .clone()
}

/// A WebSocket route: 200 lets `$connect` through (anything else refuses the upgrade) and
/// acknowledges a message; answers to messages go back through the management endpoint.
pub async fn handle_ws(app: &App, req: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let ctx = &req.request_context;
    let connection = ctx.connection_id.clone().unwrap_or_default();
    let route = ctx.route_key.clone().unwrap_or_default();
    let out = match route.as_str() {
        "$connect" => return connect(app, &connection, &req).await,
        "$disconnect" => push::disconnect(app, &connection).await,
        _ => match serde_json::from_str::<ClientMessage>(req.body.as_deref().unwrap_or("")) {
            Ok(ClientMessage::Ping) => push::ping(app, &connection).await,
            Ok(ClientMessage::Watch { campaign_id }) => push::watch(app, &connection, &campaign_id).await,
            Err(_) => return answer(400, r#"{"message":"unknown action"}"#),
        },
    };
    match out {
        Ok(()) => answer(200, ""),
        Err(e) => {
            tracing::error!(route, connection, error = format!("{e:#}"), "push route failed");
            answer(500, "")
        }
    }
}

async fn connect(app: &App, connection: &str, req: &ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let query = &req.query_string_parameters;
    let Some(token) = query.first("token").filter(|t| !t.is_empty()) else { return answer(401, "") };
    let claims = match token_check(app).check(token).await {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => {
            tracing::info!(why, "push connection refused");
            return answer(401, "");
        }
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "the issuer's keys could not be read");
            return answer(500, "");
        }
    };
    match push::connect(app, connection, &claims.sub, query.first("campaign")).await {
        Ok(()) => answer(200, ""),
        Err(e) => {
            tracing::error!(connection, error = format!("{e:#}"), "push connection not recorded");
            answer(500, "")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_push_queue_takes_bus_events_and_watch_timers_and_nothing_else() {
        let ev = r#"{"version":"0","id":"1","detail-type":"OrderPaid","source":"holdfast.orders","account":"1","time":"2026-12-06T16:00:00Z","region":"r","resources":[],
            "detail":{"schema":1,"order_id":"o1","user_id":"alice","status":"PAID","version":2,"amount":1,"currency":"EUR","lines":[]}}"#;
        match parse(ev).unwrap() {
            PushMessage::Event { kind, detail, at } => {
                assert_eq!(
                    (kind, detail.user_id.as_str(), at.as_str()),
                    (Some(EventKind::OrderPaid), "alice", "2026-12-06T16:00:00Z")
                );
            }
            other => panic!("{other:?}"),
        }
        let w = r#"{"schema":1,"user":"alice","campaign_id":"drop","due_ms":5}"#;
        assert!(matches!(parse(w).unwrap(), PushMessage::Watch(_)));
        assert!(parse(&ev.replace("holdfast.orders", "someone.else")).is_err());
        let codes = r#"{"detail-type":"CodesReady","source":"holdfast.stock","time":"t","detail":{"order_id":"o1","user_id":"ann"}}"#;
        assert!(matches!(parse(codes).unwrap(), PushMessage::Stock { .. }));
        assert!(parse(r#"{"schema":2,"user":"a","campaign_id":"d","due_ms":5}"#).is_err());
        assert!(parse("{}").is_err());
    }
}
