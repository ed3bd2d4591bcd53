//! The Lambda runtime side of the function binaries: build the app once, then serve events.
//!
//! Each binary under `functions/<name>` calls the one entry of its trigger with its own handler
//! (`lambda::http("create-order", handlers::create_order::handle)`), so it links that handler
//! and nothing of the other functions (no name-dispatched registry in a Lambda binary; the
//! local runner and the tests dispatch by name through [`crate::handlers`]). A handler error
//! reaches Lambda as a [`Diagnostic`] whose `errorType` says whether a retry can help
//! (docs/architecture.md, "Failure handling").

use crate::app::App;
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

/// Builds the app for `name` with the runtime's own subscriber (level and format from the
/// function's LoggingConfig: AWS_LAMBDA_LOG_LEVEL / AWS_LAMBDA_LOG_FORMAT from template.yaml).
async fn app(name: &'static str) -> Result<App, Error> {
    lambda_runtime::tracing::init_default_subscriber();
    Ok(App::from_env(name).await?)
}

/// Serves an HTTP API function: the CloudFront origin gate and the `sam local` gate (both off
/// unless configured), the sales switch, then the handler.
pub async fn http(name: &'static str, handle: impl AsyncFn(&App, Request) -> Response) -> Result<(), Error> {
    let app = app(name).await?;
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
        let req = match gate.check(req, crate::clock::now_s()) {
            Ok(req) => req,
            Err(refused) => return Ok(*refused),
        };
        Ok(crate::handlers::guarded(app, req, handle).await)
    }))
    .await
}

/// Serves an event-source function (SQS, DynamoDB stream or schedule) whose handler answers
/// with a (partial batch) response or a batch-level error.
pub async fn batch<E, R>(name: &'static str, handle: impl AsyncFn(&App, E) -> anyhow::Result<R>) -> Result<(), Error>
where
    E: DeserializeOwned,
    R: Serialize,
{
    let app = app(name).await?;
    let (app, handle) = (&app, &handle);
    lambda_runtime::run(service_fn(|e: LambdaEvent<E>| async move {
        handle(app, e.payload).await.map_err(HandlerError::from)
    }))
    .await
}

/// An SQS function (partial batch failures).
pub async fn sqs(
    name: &'static str,
    handle: impl AsyncFn(&App, SqsEvent) -> anyhow::Result<SqsBatchResponse>,
) -> Result<(), Error> {
    batch(name, handle).await
}

/// A DynamoDB stream function (partial batch failures).
pub async fn stream(
    name: &'static str,
    handle: impl AsyncFn(&App, StreamEvent) -> anyhow::Result<StreamBatchResponse>,
) -> Result<(), Error> {
    batch(name, handle).await
}

/// A scheduled function.
pub async fn schedule(
    name: &'static str,
    handle: impl AsyncFn(&App, serde_json::Value) -> anyhow::Result<serde_json::Value>,
) -> Result<(), Error> {
    batch(name, handle).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
