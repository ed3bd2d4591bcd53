//! [`Locks`] in memory: freezes, lock moves, the stale-lock index and the per-user counters.

use super::{validate_items, MemoryStock};
use crate::adapters::memory::lock;
use crate::domain::backorder;
use crate::domain::plan::{self, Target};
use crate::domain::reservation::{LockStatus, Reservation};
use crate::domain::ReservationId;
use crate::ports::{Counter, FreezeLimits, FreezeRejection, Locks, MoveRejection};
use anyhow::anyhow;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};

#[async_trait]
impl Locks for MemoryStock {
    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        crate::adapters::memory::interleave().await;
        if self.in_outage(r) {
            return Err(anyhow!("the store did not answer (an outage)"));
        }
        let actions = plan::freeze(r, limits);
        validate_items(actions.iter().map(|a| &a.target), 1)?;
        let mut s = lock(&self.state);
        let absent = !s.reservations.contains_key(&r.id);
        match s.transact(&r.id, absent, &actions, r.created_at_ms / 1000) {
            Ok(()) => {
                s.stamp_moves(r, &actions);
                // The item has no `ov` attribute until `mark_oversold`.
                s.reservations.insert(r.id.clone(), Reservation { oversold: false, code_fate: None, ..r.clone() });
                Ok(Ok(()))
            }
            Err(failed) => Ok(Err(plan::freeze_rejection(&failed))),
        }
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).reservations.get(id).cloned())
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Frozen, to)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Released, LockStatus::Sold)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        Ok(self.move_from(r, LockStatus::Sold, LockStatus::Restocked)?.map_err(|shard| {
            if shard {
                MoveRejection::ShardShort
            } else {
                MoveRejection::StatusChanged
            }
        }))
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        Ok(match lock(&self.state).reservations.get_mut(&r.id) {
            Some(stored)
                if !stored.oversold
                    && (stored.status == LockStatus::Released || crate::mutant!("p2-11-mark-any-lock")) =>
            {
                stored.oversold = true;
                true
            }
            _ => false,
        })
    }

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        let mut found: Vec<&Reservation> =
            s.reservations.values().filter(|r| r.status == LockStatus::Frozen && r.created_at_ms < before_ms).collect();
        found.sort_by_key(|r| (r.created_at_ms, r.id.clone()));
        Ok(found.into_iter().map(|r| r.id.clone()).collect())
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        crate::adapters::memory::interleave().await;
        if ids.iter().collect::<HashSet<_>>().len() != ids.len() {
            return Err(anyhow!("BatchGetItem: duplicate keys"));
        }
        let s = lock(&self.state);
        Ok(ids.iter().filter_map(|id| s.reservations.get(id).cloned()).collect())
    }

    async fn fill_backorder(
        &self,
        before: &Reservation,
        after: &Reservation,
        actions: &[plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>> {
        crate::adapters::memory::interleave().await;
        validate_items(actions.iter().map(|a| &a.target), 1)?;
        let mut s = lock(&self.state);
        // as DynamoDB: `st = :st AND bfv = :v` (an absent `bfv` is version 0)
        let status_ok = s.reservations.get(&before.id).is_some_and(|st| {
            st.status == before.status && backorder::fill_version(st) == backorder::fill_version(before)
        });
        match s.transact(&before.id, status_ok, actions, crate::clock::now_s()) {
            Ok(()) => {
                s.stamp_moves(before, actions);
                if let Some(stored) = s.reservations.get_mut(&before.id) {
                    stored.lines = after.lines.clone();
                }
                Ok(Ok(()))
            }
            Err(failed) if failed.contains(&Target::Reservation) => Ok(Err(MoveRejection::StatusChanged)),
            Err(_) => Ok(Err(MoveRejection::ShardShort)),
        }
    }

    async fn read_backlog(&self, sku: &crate::domain::Sku) -> anyhow::Result<backorder::Backlog> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).backlogs.get(sku).cloned().unwrap_or_default())
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(counters
            .iter()
            .map(|c| {
                let t = match c {
                    Counter::Limit(sku, user) => Target::Limit { sku: sku.clone(), user: user.clone() },
                    Counter::CampaignLimit(id, sku, user) => {
                        Target::CampaignLimit { campaign: id.clone(), sku: sku.clone(), user: user.clone() }
                    }
                    Counter::Pending(user) => Target::Pending { user: user.clone() },
                };
                (c.clone(), s.counter(&t))
            })
            .collect())
    }
}
