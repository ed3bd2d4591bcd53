//! [`CodePools`] in memory: the code rings, uploads, claims, returns and code fates.

use super::{shard_key, validate_items, MemoryStock};
use crate::adapters::memory::lock;
use crate::domain::codes::{lifecycle, BatchResult, CodeRetire, Ring, StoredCode};
use crate::domain::journal::Cause;
use crate::domain::reservation::{CodeFate, LockStatus, Reservation};
use crate::domain::{ReservationId, Sku};
use crate::ports::{AdjustRejection, CodePools, CodeUpload};
use anyhow::anyhow;
use async_trait::async_trait;
use std::collections::HashMap;

#[async_trait]
impl CodePools for MemoryStock {
    async fn settle_codes(
        &self,
        id: &ReservationId,
        fate: crate::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<crate::domain::reservation::CodeFate>> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let Some(stored) = s.reservations.get_mut(id) else { return Ok(None) };
        if lifecycle::fate_may_become(stored.code_fate, stored.status, fate) {
            stored.code_fate = Some(fate);
        }
        Ok(stored.code_fate)
    }

    async fn redeem_code(&self, id: &ReservationId, sku: &Sku, slot: (u16, u64), at_ms: i64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let k = (sku.clone(), slot.0, slot.1);
        let Some(r) = s.reservations.get(id) else { return Ok(false) };
        // as DynamoDB: the lock's status and fate, and `o = :id` on the slot (the slot is bound,
        // and this lock holds it), not redeemed, valid at `at_ms`
        let lock_ok = lifecycle::fate_may_become(r.code_fate, r.status, CodeFate::Redeemed);
        let bound = s.taken.contains(&k) && holds_slot(r, sku, slot);
        let code_ok = s
            .code_slots
            .get(&k)
            .is_some_and(|c| c.redeemed_at_ms.is_none() && lifecycle::valid_at(c.expires_at_ms, at_ms));
        if !(lock_ok && bound && code_ok) {
            return Ok(false);
        }
        if let Some(r) = s.reservations.get_mut(id) {
            r.code_fate = Some(CodeFate::Redeemed);
        }
        if let Some(c) = s.code_slots.get_mut(&k) {
            c.redeemed_at_ms = Some(at_ms);
        }
        Ok(true)
    }

    async fn retire_codes(&self, up: &CodeRetire) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        let adj = &up.adjustment;
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2 + up.positions.len())?;
        let mut s = lock(&self.state);
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        let n = up.positions.len() as i64;
        // as DynamoDB: every slot holds a code neither bound, given back nor retired, expired at
        // `now_ms`; the shard has the codes in `available`
        let slots_ok = up.positions.iter().all(|p| {
            let k = (adj.sku.clone(), up.shard, *p);
            s.code_slots
                .get(&k)
                .is_some_and(|c| c.expires_at_ms.is_some_and(|e| !lifecycle::valid_at(Some(e), up.now_ms)))
                && !s.taken.contains(&k)
                && !s.given_back.contains(&k)
                && !s.expired.contains(&k)
        });
        if !slots_ok || !s.metas.contains_key(&adj.sku) {
            return Ok(Err(AdjustRejection::Conflict));
        }
        // only claimed positions (before the head) leave this way: the ring no longer has them
        let last = up.positions.iter().max().copied().unwrap_or(0);
        let claimed = s.rings.get(&(adj.sku.clone(), up.shard)).is_some_and(|r| r.head > last);
        if !claimed || s.shard(&adj.sku, up.shard).is_none_or(|c| c.available < n) {
            return Ok(Err(AdjustRejection::ShardShort));
        }
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        s.shard_mut(&adj.sku, up.shard).available -= n;
        s.causes.insert(shard_key(&adj.sku, up.shard), cause);
        s.rings.entry((adj.sku.clone(), up.shard)).or_default().expired += n as u64;
        for p in &up.positions {
            s.expired.insert((adj.sku.clone(), up.shard, *p));
        }
        if let Some(m) = s.metas.get_mut(&adj.sku) {
            m.stocked += adj.delta;
            m.version += 1;
        }
        s.adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<Ring>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((0..slots).map(|i| s.rings.get(&(sku.clone(), i)).copied().unwrap_or_default()).collect())
    }

    async fn read_codes(&self, sku: &Sku, slots: &[(u16, u64)]) -> anyhow::Result<Vec<Option<StoredCode>>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(slots.iter().map(|(shard, pos)| s.code_slots.get(&(sku.clone(), *shard, *pos)).cloned()).collect())
    }

    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        let k = (sku.clone(), shard, pos);
        if s.given_back.contains(&k) {
            return Ok(true);
        }
        if !s.taken.contains(&k) {
            return Ok(false);
        }
        let holds = |r: &&Reservation| holds_slot(r, sku, (shard, pos));
        Ok(s.reservations.values().find(holds).is_some_and(|r| r.status == LockStatus::Released))
    }

    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok(fingerprints
            .iter()
            .filter_map(|f| s.fingerprints.get(&(sku.clone(), f.clone())).map(|b| (f.clone(), b.clone())))
            .collect())
    }

    async fn add_codes(&self, up: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        crate::adapters::memory::interleave().await;
        let adj = &up.adjustment;
        let codes: usize = up.appends.iter().map(|a| a.codes.len()).sum();
        validate_items(adj.pieces.iter().map(|(i, _)| (&adj.sku, *i)), 2 + 2 * codes)?;
        let mut s = lock(&self.state);
        let key = (adj.sku.clone(), adj.adjustment_id.clone());
        if let Some(prev) = s.adjustments.get(&key) {
            return Ok(Err(AdjustRejection::Duplicate { delta: prev.delta }));
        }
        // as DynamoDB, where the fingerprint and the code slot are each put `attribute_not_exists`
        let taken = up.appends.iter().any(|a| {
            a.codes.iter().enumerate().any(|(i, c)| {
                s.fingerprints.contains_key(&(adj.sku.clone(), c.fingerprint.clone()))
                    || s.code_slots.contains_key(&(adj.sku.clone(), a.shard, a.tail + i as u64))
            })
        });
        if taken {
            return Ok(Err(AdjustRejection::CodeTaken));
        }
        // the shard's ring (`ctl`) exists only on a code pool's shards
        let rings_ok = up.appends.iter().all(|a| {
            s.rings.get(&(adj.sku.clone(), a.shard)).is_some_and(|r| r.tail == a.tail)
                && s.shard(&adj.sku, a.shard).is_some()
        });
        if !rings_ok || !s.metas.contains_key(&adj.sku) {
            return Ok(Err(AdjustRejection::Conflict));
        }
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for a in &up.appends {
            let n = a.codes.len() as u64;
            s.shard_mut(&adj.sku, a.shard).available += n as i64;
            s.causes.insert(shard_key(&adj.sku, a.shard), cause.clone());
            let r = s.rings.entry((adj.sku.clone(), a.shard)).or_default();
            r.tail += n;
            r.uploaded += n;
            r.expiring |= a.codes.iter().any(|c| c.expires_at_ms.is_some());
            for (i, c) in a.codes.iter().enumerate() {
                s.code_slots.insert((adj.sku.clone(), a.shard, a.tail + i as u64), c.clone());
                s.fingerprints.insert((adj.sku.clone(), c.fingerprint.clone()), up.batch_id.clone());
            }
        }
        if let Some(m) = s.metas.get_mut(&adj.sku) {
            m.stocked += adj.delta;
            m.version += 1;
        }
        s.adjustments.insert(key, adj.clone());
        Ok(Ok(()))
    }

    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let Some(r) = s.rings.get_mut(&(sku.clone(), shard)) else { return Ok(None) };
        if r.head > max_head {
            return Ok(None);
        }
        let start = r.head;
        r.head += u64::from(quantity);
        r.claimed_at_ms = crate::clock::now_ms();
        Ok(Some(start))
    }

    async fn give_back_codes(
        &self,
        sku: &Sku,
        ranges: &[crate::domain::reservation::CodeRange],
    ) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let keys: Vec<(Sku, u16, u64)> = ranges
            .iter()
            .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (sku.clone(), g.shard, p)))
            .collect();
        // DynamoDB reads the codes before its transaction: a position without one is an error
        if let Some(k) = keys.iter().find(|k| !s.code_slots.contains_key(*k)) {
            return Err(anyhow!("give back: a claimed position of {sku} holds no code ({}, {})", k.1, k.2));
        }
        if keys.iter().any(|k| {
            s.taken.contains(k)
                || s.expired.contains(k)
                || (s.given_back.contains(k) && !crate::mutant!("give-back-twice"))
        }) {
            return Ok(false);
        }
        for k in keys {
            let code = s.code_slots[&k].clone();
            let r = s.rings.entry((k.0.clone(), k.1)).or_default();
            let tail = r.tail;
            r.tail += 1;
            s.code_slots.insert((k.0.clone(), k.1, tail), code);
            s.given_back.insert(k);
        }
        Ok(true)
    }

    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        crate::adapters::memory::interleave().await;
        let s = lock(&self.state);
        Ok((from..to)
            .filter(|p| {
                let k = (sku.clone(), shard, *p);
                s.code_slots.contains_key(&k)
                    && !s.taken.contains(&k)
                    && !s.given_back.contains(&k)
                    && !s.expired.contains(&k)
            })
            .collect())
    }

    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut s = lock(&self.state);
        let r = s.rings.entry((sku.clone(), shard)).or_default();
        if r.checked != from {
            return Ok(false);
        }
        r.checked = to;
        Ok(true)
    }

    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.state).batches.get(&(sku.clone(), batch_id.to_owned())).cloned())
    }

    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        crate::adapters::memory::interleave().await;
        lock(&self.state).batches.entry((sku.clone(), batch_id.to_owned())).or_insert_with(|| result.clone());
        Ok(())
    }
}

/// Whether lock `r` claimed the slot `(shard, pos)` of `sku` (what DynamoDB keeps as `o` on the
/// slot once the freeze bound it).
fn holds_slot(r: &Reservation, sku: &Sku, (shard, pos): (u16, u64)) -> bool {
    r.lines.iter().any(|l| {
        &l.sku == sku
            && l.codes
                .iter()
                .flatten()
                .any(|g| g.shard == shard && (g.from..g.from + u64::from(g.count)).contains(&pos))
    })
}
