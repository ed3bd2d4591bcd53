//! The push channel over AWS (docs/push.md): frames posted through the WebSocket API's
//! management endpoint (`PostToConnection`, a 410 `GoneException` is a gone connection), and
//! watch timers as delayed SQS messages on the push queue.

use crate::domain::push::{Watch, MAX_TIMER_DELAY_S};
use crate::ports::push::{Posted, PushTimers, Pusher};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_apigatewaymanagement::primitives::Blob;

/// `PostToConnection` on `https://{api}.execute-api.{region}.amazonaws.com/{stage}` (AWS) or the
/// local stack's stand-in (`http://127.0.0.1:<port>`): the same client, its endpoint overridden.
#[derive(Clone)]
pub struct ManagementApi {
    client: aws_sdk_apigatewaymanagement::Client,
}

impl ManagementApi {
    /// `endpoint` empty: a client nothing is posted through (a function that never pushes).
    pub fn new(sdk: &aws_config::SdkConfig, endpoint: &str) -> Self {
        let mut config = aws_sdk_apigatewaymanagement::config::Builder::from(sdk).interceptor(super::usage::Metering);
        if !endpoint.is_empty() {
            config = config.endpoint_url(endpoint);
        }
        ManagementApi { client: aws_sdk_apigatewaymanagement::Client::from_conf(config.build()) }
    }
}

#[async_trait]
impl Pusher for ManagementApi {
    async fn post(&self, connection: &str, frame: &str) -> anyhow::Result<Posted> {
        let out = self
            .client
            .post_to_connection()
            .connection_id(connection)
            .data(Blob::new(frame.as_bytes().to_vec()))
            .send()
            .await;
        match out {
            Ok(_) => Ok(Posted::Delivered),
            Err(e) if e.as_service_error().is_some_and(|x| x.is_gone_exception()) => Ok(Posted::Gone),
            Err(e) => Err(anyhow::Error::new(e).context(format!("PostToConnection {connection}"))),
        }
    }
}

/// Watch timers on the push queue.
#[derive(Clone)]
pub struct SqsPushTimers {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsPushTimers {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: String) -> Self {
        SqsPushTimers { client, queue_url }
    }
}

#[async_trait]
impl PushTimers for SqsPushTimers {
    async fn schedule(&self, w: &Watch, delay_s: u32) -> anyhow::Result<()> {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(serde_json::to_string(w)?)
            .delay_seconds(delay_s.min(MAX_TIMER_DELAY_S) as i32)
            .send()
            .await
            .with_context(|| format!("SendMessage to {}", self.queue_url))?;
        Ok(())
    }
}
