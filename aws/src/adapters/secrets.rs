//! Keys read from Secrets Manager at run time (security review V5) — the current version and,
//! during a rotation, the previous one — and cached for a few minutes per warm Lambda, so a
//! rotation needs no deploy and no window of 401s.
//!
//! For a webhook key the previous version is only a rotation aid: with
//! [`SecretsManagerKeys::with_previous_window`] it is accepted only until that long after the
//! current version was created (its `CreatedDate`), so a leaked key that was rotated away stops
//! verifying on its own (security review M1; docs/runbook.md, "Rotating and revoking keys"). The
//! code pool keyring keeps no window: codes sealed under the previous key must still open.
//!
//! A failed read is remembered for [`FAILURE_CACHE`]: while Secrets Manager errors, a flood of
//! unsigned requests costs one `GetSecretValue` per few seconds, not one each (review L4).

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
/// and the previous key keeps verifying meanwhile (within its window).
pub const KEY_CACHE: Duration = Duration::from_secs(300);

/// How long a failed read is answered from memory before Secrets Manager is asked again.
pub const FAILURE_CACHE: Duration = Duration::from_secs(5);

/// How long the previous webhook key verifies after the current one was created, unless
/// configured (`HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS`): a day covers every sender's own key
/// cache and a slow roll-out at the provider.
pub const DEFAULT_PREVIOUS_KEY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// Whether the previous key is still accepted at `now_s`, the current version having been
/// created at `current_created_s` (epoch seconds). `window: None` = no limit. A current version
/// without a creation date (never so in AWS) leaves the previous key refused when a window is
/// set: fail closed. Pure.
pub fn previous_accepted(current_created_s: Option<i64>, now_s: i64, window: Option<Duration>) -> bool {
    match window {
        None => true,
        Some(w) => {
            let w = i64::try_from(w.as_secs()).unwrap_or(i64::MAX);
            current_created_s.is_some_and(|c| now_s < c.saturating_add(w))
        }
    }
}

#[derive(Clone)]
struct Fetched {
    current: Option<Secret>,
    /// Epoch seconds of the current version's `CreatedDate`.
    current_created_s: Option<i64>,
    previous: Option<Secret>,
}

enum Cached {
    Keys(Instant, Fetched),
    Failed(Instant, String),
}

pub struct SecretsManagerKeys {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
    previous_window: Option<Duration>,
    cache: Mutex<Option<Cached>>,
}

impl SecretsManagerKeys {
    /// The current and previous versions, the previous one with no time limit (the code
    /// keyring).
    pub fn new(client: aws_sdk_secretsmanager::Client, arn: impl Into<String>) -> Self {
        Self { client, arn: arn.into(), previous_window: None, cache: Mutex::new(None) }
    }

    /// The same, the previous version accepted only for `window` after the current one's
    /// `CreatedDate` (webhook keys; zero = never).
    pub fn with_previous_window(self, window: Duration) -> Self {
        Self { previous_window: Some(window), ..self }
    }

    /// (value, CreatedDate in epoch seconds) of one stage.
    async fn fetch(&self, stage: &str) -> anyhow::Result<Option<(Secret, Option<i64>)>> {
        match self.client.get_secret_value().secret_id(&self.arn).version_stage(stage).send().await {
            Ok(out) => Ok(out.secret_string().map(|s| (Secret::new(s), out.created_date().map(|d| d.secs())))),
            // no AWSPREVIOUS before the first rotation
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(format!("GetSecretValue {stage}"))),
        }
    }

    async fn fetch_all(&self) -> anyhow::Result<Fetched> {
        let current = self.fetch("AWSCURRENT").await?;
        // The previous key is a convenience during rotation: failing to read it is not fatal.
        // A window of zero never uses it: not even asked for.
        let previous = if self.previous_window == Some(Duration::ZERO) {
            None
        } else {
            self.fetch("AWSPREVIOUS").await.unwrap_or_else(|e| {
                tracing::warn!(error = format!("{e:#}"), "previous key unreadable");
                None
            })
        };
        let (current, current_created_s) = match current {
            Some((k, at)) => (Some(k), at),
            None => (None, None),
        };
        Ok(Fetched { current, current_created_s, previous: previous.map(|(k, _)| k) })
    }

    /// The keys to accept now out of what was fetched.
    fn usable(&self, f: &Fetched) -> Vec<Secret> {
        let previous = f
            .previous
            .clone()
            .filter(|_| previous_accepted(f.current_created_s, crate::clock::now_s(), self.previous_window));
        f.current.clone().into_iter().chain(previous).filter(|k| !k.is_empty()).collect()
    }
}

#[async_trait]
impl WebhookKeys for SecretsManagerKeys {
    async fn keys(&self) -> anyhow::Result<Vec<Secret>> {
        let cached = self.cache.lock().ok().and_then(|c| match c.as_ref() {
            Some(Cached::Keys(at, f)) if at.elapsed() < KEY_CACHE => Some(Ok(f.clone())),
            Some(Cached::Failed(at, e)) if at.elapsed() < FAILURE_CACHE => Some(Err(e.clone())),
            _ => None,
        });
        let fetched = match cached {
            Some(Ok(f)) => f,
            Some(Err(e)) => anyhow::bail!("{e} (cached for {} s)", FAILURE_CACHE.as_secs()),
            None => match self.fetch_all().await {
                Ok(f) => {
                    if let Ok(mut c) = self.cache.lock() {
                        *c = Some(Cached::Keys(Instant::now(), f.clone()));
                    }
                    f
                }
                Err(e) => {
                    let msg = format!("{e:#}");
                    if let Ok(mut c) = self.cache.lock() {
                        *c = Some(Cached::Failed(Instant::now(), msg));
                    }
                    return Err(e);
                }
            },
        };
        Ok(self.usable(&fetched))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_previous_key_is_accepted_only_inside_its_window_after_the_current_one_was_created() {
        let day = Some(DEFAULT_PREVIOUS_KEY_WINDOW);
        let rotated = 1_700_000_000;
        assert!(previous_accepted(Some(rotated), rotated, day));
        assert!(previous_accepted(Some(rotated), rotated + 86_399, day));
        assert!(!previous_accepted(Some(rotated), rotated + 86_400, day), "24 h after the rotation: refused");
        assert!(!previous_accepted(Some(rotated), rotated + 10 * 86_400, day));
        assert!(!previous_accepted(Some(rotated), rotated, Some(Duration::ZERO)), "a zero window: never");
        assert!(!previous_accepted(None, rotated, day), "no creation date: fail closed");
        assert!(previous_accepted(None, rotated, None), "no window (the code keyring): always");
        assert!(previous_accepted(Some(i64::MAX), 0, Some(Duration::from_secs(u64::MAX))), "no overflow");
    }

    /// Security review L4: while Secrets Manager fails, a flood of requests costs one read per
    /// [`FAILURE_CACHE`], not one each.
    #[tokio::test]
    async fn a_failed_read_is_remembered_briefly_instead_of_asked_again() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        // a "Secrets Manager" that accepts connections and hangs up at once, counting them
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        tokio::spawn(async move {
            while let Ok((c, _)) = l.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(c);
            }
        });
        let conf = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(aws_sdk_secretsmanager::config::BehaviorVersion::latest())
            .endpoint_url(format!("http://{addr}"))
            .http_client(crate::adapters::sdk_http::client(None))
            .region(aws_sdk_secretsmanager::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_secretsmanager::config::Credentials::new("k", "s", None, None, "test"))
            .retry_config(aws_sdk_secretsmanager::config::retry::RetryConfig::disabled())
            .build();
        let keys = SecretsManagerKeys::new(aws_sdk_secretsmanager::Client::from_conf(conf), "arn:test")
            .with_previous_window(DEFAULT_PREVIOUS_KEY_WINDOW);
        assert!(keys.keys().await.is_err());
        let after_first = calls.load(Ordering::SeqCst);
        assert!(after_first >= 1, "the first read reached the endpoint");
        for _ in 0..20 {
            let e = keys.keys().await.unwrap_err();
            assert!(format!("{e:#}").contains("cached"), "{e:#}");
        }
        assert_eq!(calls.load(Ordering::SeqCst), after_first, "no further read within the failure cache");
    }
}
