//! The push channel's ports (docs/push.md): the connection table, the WebSocket API's
//! management endpoint, and the watch timers' queue.

use crate::domain::push::Watch;
use async_trait::async_trait;
use std::sync::Arc;

/// Which connections are open for which buyer (the connection table; every item expires with
/// the connection's 2-hour life).
#[async_trait]
pub trait Connections: Send + Sync {
    /// Records `connection` as `user`'s, until `expires_at_s` (epoch s).
    async fn open(&self, user: &str, connection: &str, expires_at_s: i64) -> anyhow::Result<()>;
    /// Forgets `connection` (and its sent-marks expire on their own); its user, if it was known.
    async fn close(&self, connection: &str) -> anyhow::Result<Option<String>>;
    /// `user`'s open connections (not yet expired at `now_s`).
    async fn of_user(&self, user: &str, now_s: i64) -> anyhow::Result<Vec<String>>;
    /// The user `connection` was opened by.
    async fn user_of(&self, connection: &str) -> anyhow::Result<Option<String>>;
    /// Claims sending the frame `key` on `connection` (one conditional write): `false` when it
    /// was claimed before, so each event goes at most once to each connection.
    async fn claim(&self, connection: &str, key: &str, expires_at_s: i64) -> anyhow::Result<bool>;
    /// Starts watching `user`'s ticket in `campaign` (one conditional write of the mark
    /// `W#<user>` / `<campaign>`, alive until `expires_at_s`): `false` while another watch
    /// chain's mark is alive (not expired at `now_s`), so one chain of timers per ticket.
    async fn start_watch(&self, user: &str, campaign: &str, expires_at_s: i64, now_s: i64) -> anyhow::Result<bool>;
    /// The chain goes on: its mark now lives until `expires_at_s`.
    async fn keep_watch(&self, user: &str, campaign: &str, expires_at_s: i64) -> anyhow::Result<()>;
    /// The chain ended (a final state pushed, nobody connected, no ticket): its mark removed.
    async fn end_watch(&self, user: &str, campaign: &str) -> anyhow::Result<()>;
}

/// What became of a frame posted to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    Delivered,
    /// The connection is gone (API Gateway's 410 `GoneException`).
    Gone,
}

/// The WebSocket API's management endpoint (`PostToConnection`).
#[async_trait]
pub trait Pusher: Send + Sync {
    async fn post(&self, connection: &str, frame: &str) -> anyhow::Result<Posted>;
}

/// Delayed looks at watched tickets (SQS `DelaySeconds`).
#[async_trait]
pub trait PushTimers: Send + Sync {
    async fn schedule(&self, w: &Watch, delay_s: u32) -> anyhow::Result<()>;
}

/// The push channel's ports together.
#[derive(Clone)]
pub struct PushPorts {
    pub connections: Arc<dyn Connections>,
    pub pusher: Arc<dyn Pusher>,
    pub timers: Arc<dyn PushTimers>,
}
