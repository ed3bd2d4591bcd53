//! The waiting rooms' port (docs/waiting-room.md): per campaign, the ticket counters, one ticket
//! per buyer, the room's clock, and whether a ticket's admission was spent (the spend itself is
//! written by the freeze: `FreezeLimits::admission`).

use crate::domain::queue::{Room, Ticket};
use crate::domain::{CampaignId, UserId};
use async_trait::async_trait;

#[async_trait]
pub trait Queues: Send + Sync {
    /// Counter `k` of campaign `c` incremented (one atomic write): its new value, 1 first.
    async fn next_number(&self, c: &CampaignId, k: u16) -> anyhow::Result<u64>;
    /// Puts `user`'s ticket unless they have one: `false` when one exists (theirs stays).
    async fn put_ticket(&self, c: &CampaignId, user: &UserId, t: &Ticket) -> anyhow::Result<bool>;
    /// `user`'s ticket (consistent read).
    async fn ticket(&self, c: &CampaignId, user: &UserId) -> anyhow::Result<Option<Ticket>>;
    /// The values of counters `0..counters` (0 for one never taken).
    async fn counters(&self, c: &CampaignId, counters: u16) -> anyhow::Result<Vec<u64>>;
    /// The room's clock (the default before it was first written).
    async fn room(&self, c: &CampaignId) -> anyhow::Result<Room>;
    /// Writes `next` if the stored room is still at `next.version - 1` (absent counts as 0):
    /// `false` = another reader moved it first.
    async fn put_room(&self, c: &CampaignId, next: &Room) -> anyhow::Result<bool>;
    /// Whether ticket `number`'s admission was spent by a committed checkout.
    async fn spent(&self, c: &CampaignId, number: u64) -> anyhow::Result<bool>;
}
