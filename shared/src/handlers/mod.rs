//! Entry points: one module per Lambda function, each a thin layer from the event to a use case
//! and back. [`FUNCTIONS`] is the registry the Lambda binaries and the local runner share; a
//! test checks it against `template.yaml` in both directions.

pub mod campaigns_api;
pub mod common;
pub mod create_order;
#[cfg(test)]
mod fuzz;
pub mod orders_api;
pub mod payment_callback;
pub mod payment_timeout;
pub mod problems;
pub mod publish_events;
pub mod push_api;
pub mod queue_api;
pub mod reconcile;
pub mod reconcile_worker;
pub mod refunds;
pub mod reservation_check;
pub mod reservations;
pub mod routes;
pub mod sale_api;
pub mod sqs;
pub mod stock_api;
pub mod stock_events;
pub mod stock_journal;
pub mod stock_read;
pub mod stream;
pub mod stripe_webhook;
pub mod waitlist_api;

use crate::app::App;
use crate::http::{Request, Response};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use stream::{StreamBatchResponse, StreamEvent};

pub use crate::registry::{trigger_of, Trigger, FUNCTIONS};
pub use routes::Route;

/// HTTP routes per function, from each handler module.
pub const ROUTES: &[(&str, &[Route])] = &[
    ("create-order", create_order::ROUTES),
    ("orders-api", orders_api::ROUTES),
    ("payment-callback", payment_callback::ROUTES),
    ("queue-api", queue_api::ROUTES),
    ("reservations", reservations::ROUTES),
    ("stock-api", stock_api::ROUTES),
    ("stock-read", stock_read::ROUTES),
];

/// Invokes an HTTP function by name; `None` if it is not an HTTP function. Every write passes
/// the sales switch first (docs/operations.md, "Sales switch").
pub async fn http(name: &str, app: &App, req: Request) -> Option<Response> {
    if !matches!(trigger_of(name), Some(Trigger::Http)) {
        return None;
    }
    Some(match name {
        "create-order" => guarded(app, req, create_order::ROUTES, &create_order::handle).await,
        "orders-api" => guarded(app, req, orders_api::ROUTES, &orders_api::handle).await,
        "payment-callback" => guarded(app, req, payment_callback::ROUTES, &payment_callback::handle).await,
        "queue-api" => guarded(app, req, queue_api::ROUTES, &queue_api::handle).await,
        "reservations" => guarded(app, req, reservations::ROUTES, &reservations::handle).await,
        "stock-api" => guarded(app, req, stock_api::ROUTES, &stock_api::handle).await,
        "stock-read" => guarded(app, req, stock_read::ROUTES, &stock_read::handle).await,
        _ => return None,
    })
}

/// One HTTP function's handler behind the sales switch: what both the Lambda binary
/// ([`crate::lambda::http`]) and the name dispatch above run.
pub async fn guarded(
    app: &App,
    req: Request,
    routes: &'static [Route],
    handle: &impl AsyncFn(&App, Request) -> Response,
) -> Response {
    match switch_refusal(app, &req, routes).await {
        // a retry of a committed checkout gets its order, whatever the switch says (review
        // protocol-3 N13)
        Some(refused) => match create_order::replay(app, &req).await {
            Some(replayed) => replayed,
            None => refused,
        },
        None => handle(app, req).await,
    }
}

/// The answer of a write the sales switch refuses; `None` = go on. A route's row in its function's
/// `routes` says how the switch judges it (a read: never). A switch that cannot be read lets the write through (the
/// switch is a lever, not a safety condition: every stock write stays conditional).
async fn switch_refusal(app: &App, req: &Request, routes: &'static [Route]) -> Option<Response> {
    let key = crate::http::route(req);
    let kind = routes.iter().find(|r| r.key == key)?.write?;
    match crate::service::sale::guard(app, kind).await {
        Ok(Ok(())) => None,
        Ok(Err(s)) => Some(crate::http::finish(Err(common::sales_closed(&s)))),
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "sales switch not read; the write goes on");
            None
        }
    }
}

pub async fn sqs(name: &str, app: &App, ev: SqsEvent) -> Option<anyhow::Result<SqsBatchResponse>> {
    Some(match name {
        "stock-events" => stock_events::handle(app, ev).await,
        "payment-timeout" => payment_timeout::handle(app, ev).await,
        "reservation-check" => reservation_check::handle(app, ev).await,
        "reconcile-worker" => reconcile_worker::handle(app, ev).await,
        "refunds" => refunds::handle(app, ev).await,
        "push-api" => push_api::handle_sqs(app, ev).await,
        _ => return None,
    })
}

/// Invokes a WebSocket API route's function by name (docs/push.md); `None` if it serves none.
pub async fn websocket(
    name: &str,
    app: &App,
    req: aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest,
) -> Option<aws_lambda_events::apigw::ApiGatewayProxyResponse> {
    match name {
        "push-api" => Some(push_api::handle_ws(app, req).await),
        _ => None,
    }
}

pub async fn stream(name: &str, app: &App, ev: StreamEvent) -> Option<anyhow::Result<StreamBatchResponse>> {
    Some(match name {
        "publish-events" => publish_events::handle(app, ev).await,
        "stock-journal" => stock_journal::handle(app, ev).await,
        _ => return None,
    })
}

pub async fn schedule(name: &str, app: &App, ev: serde_json::Value) -> Option<anyhow::Result<serde_json::Value>> {
    Some(match name {
        "reconcile" => reconcile::handle(app, ev).await,
        _ => return None,
    })
}
