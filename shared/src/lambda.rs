//! The Lambda runtime side of the function binaries: build the app once, then serve events.
//!
//! Each binary under `functions/<name>` calls the one entry of its trigger with its wiring and
//! its own handler (`lambda::http("create-order", wire, handlers::create_order::handle)`), so it
//! links that handler, the adapters of the ports `wire` names ([`crate::app::wiring`]) and
//! nothing of the other functions (no name-dispatched registry in a Lambda binary; the local
//! runner and the tests dispatch by name through [`crate::handlers`]). A handler error
//! reaches Lambda as a [`Diagnostic`] whose `errorType` says whether a retry can help
//! (docs/architecture.md, "Failure handling").

use crate::app::{App, Wiring};
use crate::faults::InjectedCrash;
use crate::handlers::stream::{StreamBatchResponse, StreamEvent};
use crate::http::{Request, Response};
use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{service_fn, Diagnostic, Error, LambdaEvent};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A failed invocation as Lambda records it. Every batch-level error is infrastructure (a
/// store, queue or provider that did not answer: the port convention in [`crate::ports`]),
/// which the event source's retry fixes; an injected crash is the fault harness, not a failure
/// of the code. A message that can never succeed is not an invocation error: it fails alone
/// in the batch response and goes to its dead-letter queue.
#[derive(Debug)]
pub struct HandlerError {
    kind: ErrorKind,
    message: String,
}

/// How a retry relates to the failure; the `errorType` Lambda logs and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A dependency failed; the same event later can succeed.
    Retryable,
    /// A fault-injection crash point (tests and the soak only).
    InjectedCrash,
}

impl ErrorKind {
    pub fn error_type(self) -> &'static str {
        match self {
            ErrorKind::Retryable => "Holdfast.Retryable",
            ErrorKind::InjectedCrash => "Holdfast.InjectedCrash",
        }
    }
}

impl HandlerError {
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl From<anyhow::Error> for HandlerError {
    fn from(e: anyhow::Error) -> Self {
        let kind =
            if e.downcast_ref::<InjectedCrash>().is_some() { ErrorKind::InjectedCrash } else { ErrorKind::Retryable };
        HandlerError { kind, message: format!("{e:#}") }
    }
}

impl From<HandlerError> for Diagnostic {
    fn from(e: HandlerError) -> Diagnostic {
        Diagnostic { error_type: e.kind.error_type().to_owned(), error_message: e.message }
    }
}

/// Builds the app for `name` with the ports `wire` names, logging as [`init_logging`] says.
async fn app(name: &'static str, wire: impl FnOnce(Wiring) -> Wiring) -> Result<App, Error> {
    init_logging(&|k| std::env::var(k).ok());
    Ok(crate::app::from_env(name, wire).await?)
}

/// The subscriber `lambda_runtime::tracing::init_default_subscriber` installs, with the level
/// as a plain maximum: from the function's LoggingConfig (`AWS_LAMBDA_LOG_LEVEL`, else
/// `RUST_LOG`, else INFO) and JSON when `AWS_LAMBDA_LOG_FORMAT` is `JSON` (template.yaml). The
/// runtime's own builds an `EnvFilter`, whose directive syntax brings a regex engine into every
/// binary; a Lambda's level is one word, so a `RUST_LOG` with per-target directives falls back
/// to INFO here.
fn init_logging(get: &dyn Fn(&str) -> Option<String>) {
    let fmt = tracing_subscriber::fmt().with_target(false).without_time().with_max_level(log_level(get));
    let json = get("AWS_LAMBDA_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json"));
    // a subscriber already set (a second call in one process) stays
    let _ = if json { fmt.json().try_init() } else { fmt.try_init() };
}

fn log_level(get: &dyn Fn(&str) -> Option<String>) -> tracing_subscriber::filter::LevelFilter {
    get("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|| get("RUST_LOG"))
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO)
}

/// Serves an HTTP API function: the CloudFront origin gate and the `sam local` gate (both off
/// unless configured), the sales switch, then the handler.
pub async fn http(
    name: &'static str,
    wire: impl FnOnce(Wiring) -> Wiring,
    routes: &'static [crate::handlers::Route],
    handle: impl AsyncFn(&App, Request) -> Response,
) -> Result<(), Error> {
    let app = app(name, wire).await?;
    // Off unless under `sam local`, which has no JWT authorizer (see sam_local).
    let gate = crate::sam_local::Gate::from_env();
    // Off unless the edge is on: then only requests that came through CloudFront.
    let origin = crate::edge::OriginGate::from_env();
    let (app, gate, origin, handle) = (&app, &gate, &origin, &handle);
    lambda_runtime::run(service_fn(|e: LambdaEvent<ApiGatewayV2httpRequest>| async move {
        let req = match origin.check(e.payload) {
            Ok(req) => req,
            Err(refused) => return Ok::<_, HandlerError>(*refused),
        };
        let req = match gate.check(req, crate::clock::now_s(), routes) {
            Ok(req) => req,
            Err(refused) => return Ok(*refused),
        };
        Ok(crate::handlers::guarded(app, req, routes, handle).await)
    }))
    .await
}

/// Serves an event-source function (SQS, DynamoDB stream or schedule) whose handler answers
/// with a (partial batch) response or a batch-level error.
pub async fn batch<E, R>(
    name: &'static str,
    wire: impl FnOnce(Wiring) -> Wiring,
    handle: impl AsyncFn(&App, E) -> anyhow::Result<R>,
) -> Result<(), Error>
where
    E: DeserializeOwned,
    R: Serialize,
{
    let app = app(name, wire).await?;
    let (app, handle) = (&app, &handle);
    lambda_runtime::run(service_fn(|e: LambdaEvent<E>| async move {
        handle(app, e.payload).await.map_err(HandlerError::from)
    }))
    .await
}

/// An SQS function (partial batch failures).
pub async fn sqs(
    name: &'static str,
    wire: impl FnOnce(Wiring) -> Wiring,
    handle: impl AsyncFn(&App, SqsEvent) -> anyhow::Result<SqsBatchResponse>,
) -> Result<(), Error> {
    batch(name, wire, handle).await
}

/// A DynamoDB stream function (partial batch failures).
pub async fn stream(
    name: &'static str,
    wire: impl FnOnce(Wiring) -> Wiring,
    handle: impl AsyncFn(&App, StreamEvent) -> anyhow::Result<StreamBatchResponse>,
) -> Result<(), Error> {
    batch(name, wire, handle).await
}

/// A scheduled function.
pub async fn schedule(
    name: &'static str,
    wire: impl FnOnce(Wiring) -> Wiring,
    handle: impl AsyncFn(&App, serde_json::Value) -> anyhow::Result<serde_json::Value>,
) -> Result<(), Error> {
    batch(name, wire, handle).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_level_comes_from_lambda_then_rust_log_then_info() {
        use tracing_subscriber::filter::LevelFilter;
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(log_level(&env(&[("AWS_LAMBDA_LOG_LEVEL", "DEBUG"), ("RUST_LOG", "warn")])), LevelFilter::DEBUG);
        assert_eq!(log_level(&env(&[("RUST_LOG", "warn")])), LevelFilter::WARN);
        assert_eq!(log_level(&env(&[("AWS_LAMBDA_LOG_LEVEL", "TRACE")])), LevelFilter::TRACE);
        assert_eq!(log_level(&env(&[("RUST_LOG", "holdfast=debug")])), LevelFilter::INFO);
        assert_eq!(log_level(&env(&[])), LevelFilter::INFO);
    }

    #[test]
    fn an_infrastructure_error_is_retryable_and_an_injected_crash_is_named() {
        let e = HandlerError::from(anyhow::anyhow!("DynamoDB did not answer").context("freeze"));
        assert_eq!(e.kind(), ErrorKind::Retryable);
        let d = Diagnostic::from(e);
        assert_eq!(d.error_type, "Holdfast.Retryable");
        assert_eq!(d.error_message, "freeze: DynamoDB did not answer");

        let crash = HandlerError::from(anyhow::Error::from(InjectedCrash("create-order.after-freeze")));
        assert_eq!(crash.kind(), ErrorKind::InjectedCrash);
        assert_eq!(Diagnostic::from(crash).error_type, "Holdfast.InjectedCrash");
    }
}
