//! The push channel in memory (unit tests): connections and sent-marks in maps, posted frames
//! recorded per connection, gone connections answered `Gone`, timers and watch marks recorded.

use super::lock;
use crate::domain::push::Watch;
use crate::ports::push::{Connections, Posted, PushPorts, PushTimers, Pusher};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct MemoryPush {
    /// connection → (user, expires at)
    connections: Mutex<BTreeMap<String, (String, i64)>>,
    claims: Mutex<BTreeSet<(String, String)>>,
    /// Watch chains' marks: (user, campaign) → expires at.
    pub watches: Mutex<BTreeMap<(String, String), i64>>,
    /// Frames posted, per connection, in order.
    pub posted: Mutex<Vec<(String, String)>>,
    /// Connections the "API" says are gone (their client went away without a `$disconnect`).
    pub gone: Mutex<BTreeSet<String>>,
    /// Timers scheduled: (watch, delay).
    pub timers: Mutex<Vec<(Watch, u32)>>,
}

impl MemoryPush {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The push ports over this one store.
    pub fn ports(self: &Arc<Self>) -> PushPorts {
        PushPorts { connections: self.clone(), pusher: self.clone(), timers: self.clone() }
    }

    pub fn frames_to(&self, connection: &str) -> Vec<String> {
        lock(&self.posted).iter().filter(|(c, _)| c == connection).map(|(_, f)| f.clone()).collect()
    }

    pub fn is_open(&self, connection: &str) -> bool {
        lock(&self.connections).contains_key(connection)
    }
}

#[async_trait]
impl Connections for MemoryPush {
    async fn open(&self, user: &str, connection: &str, expires_at_s: i64) -> anyhow::Result<()> {
        lock(&self.connections).insert(connection.to_owned(), (user.to_owned(), expires_at_s));
        Ok(())
    }

    async fn close(&self, connection: &str) -> anyhow::Result<Option<String>> {
        Ok(lock(&self.connections).remove(connection).map(|(u, _)| u))
    }

    async fn of_user(&self, user: &str, now_s: i64) -> anyhow::Result<Vec<String>> {
        Ok(lock(&self.connections)
            .iter()
            .filter(|(_, (u, exp))| u == user && *exp > now_s)
            .map(|(c, _)| c.clone())
            .collect())
    }

    async fn user_of(&self, connection: &str) -> anyhow::Result<Option<String>> {
        Ok(lock(&self.connections).get(connection).map(|(u, _)| u.clone()))
    }

    async fn claim(&self, connection: &str, key: &str, _expires_at_s: i64) -> anyhow::Result<bool> {
        Ok(lock(&self.claims).insert((connection.to_owned(), key.to_owned())))
    }

    async fn start_watch(&self, user: &str, campaign: &str, expires_at_s: i64, now_s: i64) -> anyhow::Result<bool> {
        let mut w = lock(&self.watches);
        let key = (user.to_owned(), campaign.to_owned());
        if w.get(&key).is_some_and(|exp| *exp > now_s) {
            return Ok(false);
        }
        w.insert(key, expires_at_s);
        Ok(true)
    }

    async fn keep_watch(&self, user: &str, campaign: &str, expires_at_s: i64) -> anyhow::Result<()> {
        lock(&self.watches).insert((user.to_owned(), campaign.to_owned()), expires_at_s);
        Ok(())
    }

    async fn end_watch(&self, user: &str, campaign: &str) -> anyhow::Result<()> {
        lock(&self.watches).remove(&(user.to_owned(), campaign.to_owned()));
        Ok(())
    }
}

#[async_trait]
impl Pusher for MemoryPush {
    async fn post(&self, connection: &str, frame: &str) -> anyhow::Result<Posted> {
        if lock(&self.gone).contains(connection) {
            return Ok(Posted::Gone);
        }
        lock(&self.posted).push((connection.to_owned(), frame.to_owned()));
        Ok(Posted::Delivered)
    }
}

#[async_trait]
impl PushTimers for MemoryPush {
    async fn schedule(&self, w: &Watch, delay_s: u32) -> anyhow::Result<()> {
        lock(&self.timers).push((w.clone(), delay_s));
        Ok(())
    }
}
