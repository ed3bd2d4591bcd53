//! [`Waitlists`] in memory, judged as the DynamoDB adapter judges (docs/waitlist.md): a commit
//! checks every version and the pointer it names under one lock and writes nothing unless all
//! hold.

use super::{interleave, lock};
use crate::domain::waitlist::{Entry, Head, UserWaits};
use crate::domain::{Sku, UserId};
use crate::ports::{WaitCommit, Waitlists};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
struct State {
    heads: HashMap<Sku, Head>,
    entries: HashMap<(Sku, u64), Entry>,
    pointers: HashMap<(Sku, UserId), u64>,
    users: HashMap<UserId, UserWaits>,
}

/// The waitlists of one in-memory store.
#[derive(Default)]
pub struct MemoryWaitlists {
    state: Mutex<State>,
}

impl MemoryWaitlists {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Waitlists for MemoryWaitlists {
    async fn waitlist(&self, sku: &Sku) -> anyhow::Result<Head> {
        // no interleaving point on the head read: the sweep and the stock journal read the head
        // of every SKU whose units are free, and a draw here would shift every simulator seed
        // whether or not a waitlist exists; the commit that decides is an interleaving point
        Ok(lock(&self.state).heads.get(sku).cloned().unwrap_or_default())
    }

    async fn wait_entries(&self, sku: &Sku, numbers: &[u64]) -> anyhow::Result<Vec<Entry>> {
        interleave().await;
        let s = lock(&self.state);
        let mut out: Vec<Entry> = numbers.iter().filter_map(|n| s.entries.get(&(sku.clone(), *n)).cloned()).collect();
        out.sort_by_key(|e| e.number);
        out.dedup_by_key(|e| e.number);
        Ok(out)
    }

    async fn wait_entry_of(&self, sku: &Sku, user: &UserId) -> anyhow::Result<Option<Entry>> {
        interleave().await;
        let s = lock(&self.state);
        Ok(s.pointers.get(&(sku.clone(), user.clone())).and_then(|n| s.entries.get(&(sku.clone(), *n)).cloned()))
    }

    async fn user_waits(&self, user: &UserId) -> anyhow::Result<UserWaits> {
        interleave().await;
        Ok(lock(&self.state).users.get(user).cloned().unwrap_or_default())
    }

    async fn commit_waitlist(&self, c: &WaitCommit) -> anyhow::Result<bool> {
        interleave().await;
        let mut s = lock(&self.state);
        let stored = s.heads.get(&c.sku).map_or(0, |h| h.version);
        if stored != c.head.version.saturating_sub(1) {
            return Ok(false);
        }
        // DynamoDB refuses a transaction naming one item twice (a ValidationException: an
        // error, not a cancellation)
        let mut users: Vec<&UserId> = c.users.iter().map(|(u, _)| u).collect();
        let mut numbers: Vec<u64> = c.entries.iter().map(|e| e.number).collect();
        users.sort();
        users.dedup();
        numbers.sort_unstable();
        numbers.dedup();
        if users.len() != c.users.len() || numbers.len() != c.entries.len() {
            anyhow::bail!("a waitlist commit names one item twice");
        }
        for (u, w) in &c.users {
            if s.users.get(u).map_or(0, |x| x.version) != w.version.saturating_sub(1) {
                return Ok(false);
            }
        }
        if let Some(p) = &c.pointer {
            // absent when the join read none, else exactly the number it read
            if s.pointers.get(&(c.sku.clone(), p.user.clone())).copied() != p.over {
                return Ok(false);
            }
            s.pointers.insert((c.sku.clone(), p.user.clone()), p.number);
        }
        s.heads.insert(c.sku.clone(), c.head.clone());
        for e in &c.entries {
            s.entries.insert((c.sku.clone(), e.number), e.clone());
        }
        for (u, w) in &c.users {
            s.users.insert(u.clone(), w.clone());
        }
        Ok(true)
    }
}
