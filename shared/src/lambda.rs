//! The Lambda runtime side of every function binary: build the app once, then serve events.

use crate::app::App;
use crate::handlers::{self, stream::StreamEvent, Trigger};
use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use std::sync::Arc;

/// A failed invocation, as Lambda reports it (`errorType` = this type's name).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(String);

/// Runs the named function on the Lambda Runtime API until the process ends.
pub async fn run(name: &'static str) -> Result<(), Error> {
    // The runtime's own subscriber: level and format from the function's LoggingConfig
    // (AWS_LAMBDA_LOG_LEVEL / AWS_LAMBDA_LOG_FORMAT, set by Lambda from template.yaml).
    lambda_runtime::tracing::init_default_subscriber();
    let trigger = handlers::trigger_of(name).ok_or_else(|| format!("unknown function {name}"))?;
    let app = Arc::new(App::from_env(name).await?);
    match trigger {
        Trigger::Http => {
            // Off unless under `sam local`, which has no JWT authorizer (see sam_local).
            let gate = crate::sam_local::Gate::from_env();
            // Off unless the edge is on: then only requests that came through CloudFront.
            let origin = crate::edge::OriginGate::from_env();
            lambda_runtime::run(service_fn(|e: LambdaEvent<ApiGatewayV2httpRequest>| {
                let app = app.clone();
                let gate = &gate;
                let origin = &origin;
                async move {
                    let req = match origin.check(e.payload) {
                        Ok(req) => req,
                        Err(refused) => return Ok(*refused),
                    };
                    let req = match gate.check(req, crate::clock::now_s()) {
                        Ok(req) => req,
                        Err(refused) => return Ok(*refused),
                    };
                    handlers::http(name, &app, req).await.ok_or_else(|| Error::from("not an HTTP function"))
                }
            }))
            .await
        }
        Trigger::Sqs => {
            lambda_runtime::run(service_fn(|e: LambdaEvent<SqsEvent>| {
                let app = app.clone();
                async move {
                    match handlers::sqs(name, &app, e.payload).await {
                        Some(r) => r.map_err(|e| Error::from(HandlerError(format!("{e:#}")))),
                        None => Err(Error::from("not an SQS function")),
                    }
                }
            }))
            .await
        }
        Trigger::Stream => {
            lambda_runtime::run(service_fn(|e: LambdaEvent<StreamEvent>| {
                let app = app.clone();
                async move {
                    match handlers::stream(name, &app, e.payload).await {
                        Some(r) => r.map_err(|e| Error::from(HandlerError(format!("{e:#}")))),
                        None => Err(Error::from("not a stream function")),
                    }
                }
            }))
            .await
        }
        Trigger::Schedule => {
            lambda_runtime::run(service_fn(|e: LambdaEvent<serde_json::Value>| {
                let app = app.clone();
                async move {
                    match handlers::schedule(name, &app, e.payload).await {
                        Some(r) => r.map_err(|e| Error::from(HandlerError(format!("{e:#}")))),
                        None => Err(Error::from("not a scheduled function")),
                    }
                }
            }))
            .await
        }
    }
}
