//! The model's transitions: what each port call answers and does, from the ports' documentation.

use super::*;

impl Model {
    /// Applies `call` to the model; the answer the store must give.
    pub fn apply(&mut self, call: &Call) -> Answer {
        match call {
            Call::Freeze(r, limits) => Answer::Freeze(self.freeze(r, limits)),
            Call::Move(r, to) => Answer::Move(self.move_lock(r, LockStatus::Frozen, *to)),
            Call::Retake(r) => Answer::Move(self.move_lock(r, LockStatus::Released, LockStatus::Sold)),
            Call::Restock(r) => Answer::Move(self.move_lock(r, LockStatus::Sold, LockStatus::Restocked)),
            Call::MarkOversold(r) => Answer::Written(self.mark(r)),
            Call::Adjust(adj) => Answer::Adjust(self.adjust(&[adj])),
            Call::AdjustPair(out, into) => Answer::Adjust(self.adjust(&[out, into])),
            Call::Pause(next, expected) => Answer::Written(self.pause(next, *expected)),
            Call::WriteCampaign(c, expected) => Answer::Written(self.write_campaign(c, *expected)),
            Call::AdjustCampaign(adj, next, expected) => Answer::Adjust(self.adjust_campaign(adj, next, *expected)),
            Call::Rebalance { meta, expected, old, new_available } => {
                Answer::Written(self.rebalance(meta, *expected, old, new_available))
            }
        }
    }

    fn sku_index(&self, sku: &Sku) -> Option<usize> {
        self.skus.iter().position(|k| &k.meta.sku == sku)
    }

    fn stored(&self, id: &ReservationId) -> Option<usize> {
        self.locks.iter().position(|(r, st)| &r.id == id && st.is_some())
    }

    /// The first allowance a line would pass, in line order (per-user limit, then campaign).
    fn over_limit(&self, r: &Reservation, limits: &FreezeLimits) -> Option<FreezeRejection> {
        let u = r.user.as_ref()?;
        for l in &r.lines {
            let q = i64::from(l.quantity);
            if let (true, Some(limit), Some(k)) = (l.limited, limits.per_sku.get(&l.sku), self.sku_index(&l.sku)) {
                if self.limits.get(&(k, u.clone())).copied().unwrap_or(0) + q > i64::from(*limit) {
                    return Some(FreezeRejection::LimitExceeded(l.sku.clone()));
                }
            }
            let campaign_limited = l.campaign.as_ref().is_some_and(|c| c.limited);
            if let (true, Some(limit)) = (campaign_limited, limits.per_campaign_item.get(&l.sku)) {
                if self.campaign_limits.get(u).copied().unwrap_or(0) + q > i64::from(*limit) {
                    return Some(FreezeRejection::CampaignLimitExceeded(l.sku.clone()));
                }
            }
        }
        None
    }

    /// The SKUs whose product pieces (`quota = false`) or campaign quota pieces cannot give.
    fn short(&self, r: &Reservation, quota: bool) -> Vec<Sku> {
        let c = &self.campaign.campaign;
        let now_s = r.created_at_ms / 1000;
        let gate_open = !c.paused && c.starts_at <= now_s && now_s < c.ends_at;
        let mut out: Vec<Sku> = r
            .lines
            .iter()
            .filter(|l| {
                if quota {
                    l.campaign.as_ref().is_some_and(|cl| {
                        cl.pieces.iter().any(|p| {
                            let shard = self.campaign.quota.get(usize::from(p.shard));
                            !gate_open || shard.is_none_or(|s| s.available < i64::from(p.quantity))
                        })
                    })
                } else {
                    let shards = self.sku_index(&l.sku).map(|k| &self.skus[k].shards);
                    l.pieces.iter().any(|p| {
                        let shard = shards.and_then(|s| s.get(usize::from(p.shard)));
                        shard.is_none_or(|s| s.paused || s.counts.available < i64::from(p.quantity))
                    })
                }
            })
            .map(|l| l.sku.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn freeze(&mut self, r: &Reservation, limits: &FreezeLimits) -> Result<(), FreezeRejection> {
        // one entry per id: a refused freeze stores nothing, so its id may freeze later
        let entry = match self.locks.iter().position(|(l, _)| l.id == r.id) {
            Some(i) if self.locks[i].1.is_some() => return Err(FreezeRejection::AlreadyExists),
            Some(i) => i,
            None => {
                self.locks.push((r.clone(), None));
                self.locks.len() - 1
            }
        };
        if limits.admission.as_ref().is_some_and(|(_, t)| self.spent.contains(t)) {
            return Err(FreezeRejection::AdmissionUsed);
        }
        let charges_pending = r.pending && r.user.is_some() && limits.max_pending.is_some();
        if let (true, Some(u), Some(max)) = (charges_pending, &r.user, limits.max_pending) {
            if self.pending.get(u).copied().unwrap_or(0) + 1 > i64::from(max) {
                return Err(FreezeRejection::TooManyPending);
            }
        }
        if let Some(e) = self.over_limit(r, limits) {
            return Err(e);
        }
        let quota = self.short(r, true);
        if !quota.is_empty() {
            return Err(FreezeRejection::QuotaShort(quota));
        }
        let shards = self.short(r, false);
        if !shards.is_empty() {
            return Err(FreezeRejection::ShardShort(shards));
        }
        for l in &r.lines {
            let q = i64::from(l.quantity);
            let k = self.sku_index(&l.sku).unwrap();
            for p in &l.pieces {
                let c = &mut self.skus[k].shards[usize::from(p.shard)].counts;
                (c.available, c.locked) = (c.available - i64::from(p.quantity), c.locked + i64::from(p.quantity));
            }
            for p in l.campaign.iter().flat_map(|c| &c.pieces) {
                let c = &mut self.campaign.quota[usize::from(p.shard)];
                (c.available, c.locked) = (c.available - i64::from(p.quantity), c.locked + i64::from(p.quantity));
            }
            if let Some(u) = &r.user {
                if l.limited && limits.per_sku.contains_key(&l.sku) {
                    *self.limits.entry((k, u.clone())).or_default() += q;
                }
                let campaign_limited = l.campaign.as_ref().is_some_and(|c| c.limited);
                if campaign_limited && limits.per_campaign_item.contains_key(&l.sku) {
                    *self.campaign_limits.entry(u.clone()).or_default() += q;
                }
            }
        }
        if let (true, Some(u)) = (charges_pending, &r.user) {
            *self.pending.entry(u.clone()).or_default() += 1;
        }
        if let Some((_, t)) = &limits.admission {
            self.spent.insert(*t);
        }
        self.locks[entry] = (r.clone(), Some((LockStatus::Frozen, false)));
        Ok(())
    }

    /// `from` → `to` with the counters of the reservation passed.
    fn move_lock(&mut self, r: &Reservation, from: LockStatus, to: LockStatus) -> Result<(), MoveRejection> {
        let how = match (from, to) {
            (LockStatus::Frozen, LockStatus::Sold) => How::Sell,
            (LockStatus::Frozen, LockStatus::Released) => How::Release,
            (LockStatus::Released, LockStatus::Sold) => How::Retake,
            _ => How::Restock,
        };
        let Some(i) = self.stored(&r.id) else { return Err(MoveRejection::StatusChanged) };
        let (status, oversold) = self.locks[i].1.unwrap_or((LockStatus::Frozen, false));
        // a lock marked oversold is decided: never retaken
        if status != from || (how == How::Retake && oversold) {
            return Err(MoveRejection::StatusChanged);
        }
        let pieces_hold = r.lines.iter().all(|l| {
            let k = self.sku_index(&l.sku);
            let product = l.pieces.iter().all(|p| {
                let s = k.and_then(|k| self.skus[k].shards.get(usize::from(p.shard)));
                s.is_some_and(|s| how.holds(&s.counts, i64::from(p.quantity)))
            });
            let quota = l.campaign.iter().flat_map(|c| &c.pieces).all(|p| {
                let s = self.campaign.quota.get(usize::from(p.shard));
                s.is_some_and(|s| how.holds(s, i64::from(p.quantity)))
            });
            product && quota
        });
        if !pieces_hold {
            return Err(MoveRejection::ShardShort);
        }
        for l in &r.lines {
            let k = self.sku_index(&l.sku).unwrap();
            for p in &l.pieces {
                how.apply(&mut self.skus[k].shards[usize::from(p.shard)].counts, i64::from(p.quantity));
            }
            for p in l.campaign.iter().flat_map(|c| &c.pieces) {
                how.apply(&mut self.campaign.quota[usize::from(p.shard)], i64::from(p.quantity));
            }
            let (Some(u), d) = (&r.user, how.allowance() * i64::from(l.quantity)) else { continue };
            if l.limited && d != 0 {
                *self.limits.entry((k, u.clone())).or_default() += d;
            }
            if l.campaign.as_ref().is_some_and(|c| c.limited) && d != 0 {
                *self.campaign_limits.entry(u.clone()).or_default() += d;
            }
        }
        // only a move out of FROZEN gives a pending checkout's slot back
        if let (true, Some(u), LockStatus::Frozen) = (r.pending, &r.user, from) {
            *self.pending.entry(u.clone()).or_default() -= 1;
        }
        self.locks[i].1 = Some((to, oversold));
        Ok(())
    }

    fn mark(&mut self, r: &Reservation) -> bool {
        let Some(i) = self.stored(&r.id) else { return false };
        match self.locks[i].1 {
            Some((LockStatus::Released, false)) => {
                self.locks[i].1 = Some((LockStatus::Released, true));
                true
            }
            _ => false,
        }
    }

    /// One adjustment, or a pair applied together: the first's duplicate is named, then any
    /// missing shard or removal past the available units; nothing moves unless all hold.
    fn adjust(&mut self, adjs: &[&Adjustment]) -> Result<(), AdjustRejection> {
        for adj in adjs {
            let k = self.sku_index(&adj.sku).ok_or(AdjustRejection::ShardShort)?;
            if let Some(delta) = self.skus[k].adjustments.get(&adj.adjustment_id) {
                return Err(AdjustRejection::Duplicate { delta: *delta });
            }
            let ok = adj.pieces.iter().all(|&(i, d)| {
                self.skus[k].shards.get(usize::from(i)).is_some_and(|s| d >= 0 || s.counts.available >= -d)
            });
            if !ok {
                return Err(AdjustRejection::ShardShort);
            }
        }
        for adj in adjs {
            let k = self.sku_index(&adj.sku).unwrap();
            let sku = &mut self.skus[k];
            for &(i, d) in &adj.pieces {
                sku.shards[usize::from(i)].counts.available += d;
            }
            sku.meta.stocked += adj.delta;
            sku.meta.version += 1;
            sku.adjustments.insert(adj.adjustment_id.clone(), adj.delta);
        }
        Ok(())
    }

    fn pause(&mut self, next: &SkuMeta, expected: u64) -> bool {
        let Some(k) = self.sku_index(&next.sku) else { return false };
        let sku = &mut self.skus[k];
        if sku.meta.version != expected || usize::from(next.slots) > sku.shards.len() {
            return false;
        }
        for s in sku.shards.iter_mut().take(usize::from(next.slots)) {
            s.paused = next.paused;
        }
        sku.meta = next.clone();
        true
    }

    fn write_campaign(&mut self, c: &Campaign, expected: u64) -> bool {
        if self.campaign.campaign.version != expected {
            return false;
        }
        self.campaign.campaign = c.clone();
        true
    }

    fn adjust_campaign(
        &mut self,
        adj: &crate::ports::CampaignAdjustment,
        next: &Campaign,
        expected: u64,
    ) -> Result<(), AdjustRejection> {
        let m = &mut self.campaign;
        if let Some(delta) = m.adjustments.get(&adj.adjustment_id) {
            return Err(AdjustRejection::Duplicate { delta: *delta });
        }
        if m.campaign.version != expected {
            return Err(AdjustRejection::Conflict);
        }
        let ok =
            adj.pieces.iter().all(|&(i, d)| m.quota.get(usize::from(i)).is_some_and(|q| d >= 0 || q.available >= -d));
        if !ok {
            return Err(AdjustRejection::ShardShort);
        }
        for &(i, d) in &adj.pieces {
            m.quota[usize::from(i)].available += d;
        }
        m.campaign = next.clone();
        m.adjustments.insert(adj.adjustment_id.clone(), adj.delta);
        Ok(())
    }

    /// Each shard whose available units change must still hold `old`'s; a new shard must not
    /// exist yet and takes the stop-sale flag of `meta`.
    fn rebalance(&mut self, meta: &SkuMeta, expected: u64, old: &[ShardCounts], new_available: &[i64]) -> bool {
        let Some(k) = self.sku_index(&meta.sku) else { return false };
        let sku = &mut self.skus[k];
        if sku.meta.version != expected {
            return false;
        }
        let holds = new_available.iter().enumerate().all(|(i, &av)| match (old.get(i), sku.shards.get(i)) {
            (Some(o), _) if o.available == av => true,
            (Some(o), Some(s)) => s.counts.available == o.available,
            (Some(_), None) => false,
            (None, s) => s.is_none(),
        });
        if !holds {
            return false;
        }
        for (i, &av) in new_available.iter().enumerate() {
            if old.get(i).is_none_or(|o| o.available != av) {
                if i >= sku.shards.len() {
                    sku.shards.push(ModelShard { counts: ShardCounts::default(), paused: meta.paused });
                }
                sku.shards[i].counts.available = av;
            }
        }
        sku.meta = meta.clone();
        true
    }
}
