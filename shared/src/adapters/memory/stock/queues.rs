//! [`Queues`] in memory, judged as the DynamoDB adapter judges (docs/waiting-room.md).

use super::super::{interleave, lock};
use super::MemoryStock;
use crate::domain::queue::{Room, Ticket};
use crate::domain::{CampaignId, UserId};
use crate::ports::Queues;
use async_trait::async_trait;

#[async_trait]
impl Queues for MemoryStock {
    async fn next_number(&self, c: &CampaignId, k: u16) -> anyhow::Result<u64> {
        interleave().await;
        let mut s = lock(&self.state);
        let n = s.queue_counters.entry((c.clone(), k)).or_default();
        *n += 1;
        Ok(*n)
    }

    async fn put_ticket(&self, c: &CampaignId, user: &UserId, t: &Ticket) -> anyhow::Result<bool> {
        interleave().await;
        let mut s = lock(&self.state);
        let key = (c.clone(), user.clone());
        if s.tickets.contains_key(&key) {
            return Ok(false);
        }
        s.tickets.insert(key, t.clone());
        Ok(true)
    }

    async fn ticket(&self, c: &CampaignId, user: &UserId) -> anyhow::Result<Option<Ticket>> {
        interleave().await;
        Ok(lock(&self.state).tickets.get(&(c.clone(), user.clone())).cloned())
    }

    async fn counters(&self, c: &CampaignId, counters: u16) -> anyhow::Result<Vec<u64>> {
        interleave().await;
        let s = lock(&self.state);
        Ok((0..counters).map(|k| s.queue_counters.get(&(c.clone(), k)).copied().unwrap_or(0)).collect())
    }

    async fn room(&self, c: &CampaignId) -> anyhow::Result<Room> {
        interleave().await;
        Ok(lock(&self.state).rooms.get(c).cloned().unwrap_or_default())
    }

    async fn put_room(&self, c: &CampaignId, next: &Room) -> anyhow::Result<bool> {
        interleave().await;
        let mut s = lock(&self.state);
        let stored = s.rooms.get(c).map_or(0, |r| r.version);
        if stored != next.version.saturating_sub(1) {
            return Ok(false);
        }
        s.rooms.insert(c.clone(), next.clone());
        Ok(true)
    }

    async fn spent(&self, c: &CampaignId, number: u64) -> anyhow::Result<bool> {
        interleave().await;
        Ok(lock(&self.state).admissions.get(&(c.clone(), number)).copied().unwrap_or(0) > 0)
    }
}
