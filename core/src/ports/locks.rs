//! The locks port: reservations (the lock record of one order) frozen on the shards, moved
//! through their statuses, swept when stale, and the per-user counters they keep.

use crate::domain::reservation::{FreezeLimits, FreezeRejection};
use crate::domain::reservation::{LockStatus, Reservation};
pub use crate::domain::stock_changes::{Counter, MoveRejection};
use crate::domain::ReservationId;
use async_trait::async_trait;
use std::collections::HashMap;

/// Reservations and the counters they hold in the stock table (owned by the stock service).
#[async_trait]
pub trait Locks: Send + Sync {
    /// One transaction: the reservation (if absent), every shard piece (`available >= q`),
    /// and per-user counters for limited lines (`limits[sku]`).
    /// Campaign quota pieces are conditional on the quota and on the window and pause flag
    /// copied onto their shards (judged at `r.created_at_ms`); product pieces on the stock and
    /// the SKU's stop-sale flag; the pending counter on `limits.max_pending`.
    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>>;
    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>>;
    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>>;
    /// FROZEN → `to` with the shard counters, conditional on the lock still being FROZEN.
    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>>;
    /// RELEASED → SOLD, taking the units from `available` again (defence in depth, docs/architecture.md, "Stock operations").
    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>>;
    /// SOLD → RESTOCKED, putting the units back on sale (`sold -= q, available += q`) and
    /// giving the buyer's allowance back, conditional on the lock still being SOLD.
    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>>;
    /// Marks an oversell once, conditional on the lock being RELEASED and not marked yet:
    /// `false` when it was marked already or has moved (a concurrent confirm retook it). A
    /// marked lock is never retaken (`retake` is conditional on no mark).
    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool>;
    /// FROZEN reservations created before `before_ms`, from the bucketed sparse index.
    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>>;
    /// Current values of the given counters (absent = 0), eventually consistent.
    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>>;
    /// A backorder fill (`domain::plan::backorder_steps::fill`): the lock stored as `after` with `actions`,
    /// conditional on the lock still in `before`'s status and at `before`'s fill version
    /// (`StatusChanged` otherwise; `ShardShort` when a shard no longer has the units).
    async fn fill_backorder(
        &self,
        before: &Reservation,
        after: &Reservation,
        actions: &[crate::domain::plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>>;
    /// A SKU's backlog item, read consistently (all zero and empty when absent).
    async fn read_backlog(&self, sku: &crate::domain::Sku) -> anyhow::Result<crate::domain::backorder::Backlog>;
}
