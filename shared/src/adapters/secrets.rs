//! The payment webhook's HMAC keys (security review V5): read from Secrets Manager at run time
//! — the current version and, during a rotation, the previous one — and cached for a few
//! minutes per warm Lambda, so a rotation needs no deploy and no window of 401s.

use crate::config::Secret;
use async_trait::async_trait;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use crate::ports::WebhookKeys;

/// Keys from configuration (the local stack, tests).
pub struct StaticKeys(pub Vec<Secret>);

#[async_trait]
impl WebhookKeys for StaticKeys {
    async fn keys(&self) -> anyhow::Result<Vec<Secret>> {
        Ok(self.0.iter().filter(|k| !k.is_empty()).cloned().collect())
    }
}

/// How long fetched keys are used before asking again: a rotation is seen within this time,
/// and the previous key keeps verifying meanwhile.
pub const KEY_CACHE: Duration = Duration::from_secs(300);

pub struct SecretsManagerKeys {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
    cache: Mutex<Option<(Instant, Vec<Secret>)>>,
}

impl SecretsManagerKeys {
    pub fn new(client: aws_sdk_secretsmanager::Client, arn: impl Into<String>) -> Self {
        Self { client, arn: arn.into(), cache: Mutex::new(None) }
    }

    async fn fetch(&self, stage: &str) -> anyhow::Result<Option<Secret>> {
        let _span = super::usage::call("secretsmanager:GetSecretValue");
        match self.client.get_secret_value().secret_id(&self.arn).version_stage(stage).send().await {
            Ok(out) => Ok(out.secret_string().map(Secret::new)),
            // no AWSPREVIOUS before the first rotation
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(format!("GetSecretValue {stage}"))),
        }
    }
}

#[async_trait]
impl WebhookKeys for SecretsManagerKeys {
    async fn keys(&self) -> anyhow::Result<Vec<Secret>> {
        if let Some((at, keys)) = self.cache.lock().ok().and_then(|c| c.clone()) {
            if at.elapsed() < KEY_CACHE {
                return Ok(keys);
            }
        }
        let current = self.fetch("AWSCURRENT").await?;
        // The previous key is a convenience during rotation: failing to read it is not fatal.
        let previous = self.fetch("AWSPREVIOUS").await.unwrap_or_else(|e| {
            tracing::warn!(error = format!("{e:#}"), "previous webhook key unreadable");
            None
        });
        let keys: Vec<Secret> = current.into_iter().chain(previous).filter(|k| !k.is_empty()).collect();
        if let Ok(mut c) = self.cache.lock() {
            *c = Some((Instant::now(), keys.clone()));
        }
        Ok(keys)
    }
}
