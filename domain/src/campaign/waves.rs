//! Waves: per-slot quotas inside one campaign item (docs/campaigns.md, "Waves").
//!
//! A waved item's quota is declared per wave (its own window and quota). Each wave is its own
//! set of quota shards: wave `w` of an item with `shards` shards per wave owns shard numbers
//! `w * shards .. (w + 1) * shards`, and every one of them carries the *wave's* window as its
//! copy of the window. The freeze's write condition on the shard therefore sells only inside
//! the wave that owns it, with no new read; a lock records the absolute shard numbers it took, so
//! a release, an expiry or a refund gives the unit back to the same wave. An item without waves
//! is one implicit wave (shards `0..shards`, the campaign's window): exactly the layout before
//! waves.

use super::{CampaignItem, GateRefusal};
use crate::allocation::{split, spread, Piece, Shortfall};
use std::ops::Range;

/// Most waves of one item (the shard budget of a campaign bounds them further).
pub const MAX_WAVES: usize = 24;

/// What happens to a wave's unsold units when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unsold {
    /// They move into the next wave (reconcile's campaign sweep, one conditional transaction).
    Roll,
    /// They are not sold in the campaign: they simply stay in the SKU's stock (a ring-fenced
    /// item's go back to the SKU at the campaign's end, like any unsold fenced unit).
    #[default]
    Return,
}

impl Unsold {
    pub fn as_str(self) -> &'static str {
        match self {
            Unsold::Roll => "roll",
            Unsold::Return => "return",
        }
    }
}

/// One wave of an item.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wave {
    /// Epoch seconds, inclusive.
    pub starts_at: i64,
    /// Epoch seconds, exclusive.
    pub ends_at: i64,
    /// The wave's own quota: as declared plus the adjustments made to it.
    pub quota: i64,
    /// Units rolled in from the previous wave.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rolled_in: i64,
    /// Units rolled out into the next wave.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rolled_out: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Wave {
    /// What the wave's shards must hold in all: `available + locked + sold` over them.
    pub fn net(&self) -> i64 {
        self.quota + self.rolled_in - self.rolled_out
    }
}

/// An item's waves and what their unsold units do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Waves {
    pub unsold: Unsold,
    pub list: Vec<Wave>,
}

/// Why a wave list is refused (the campaign's `SpecError::Waves` carries the text).
pub fn validate(waves: &Waves, window: (i64, i64)) -> Result<(), String> {
    let list = &waves.list;
    if list.is_empty() || list.len() > MAX_WAVES {
        return Err(format!("an item has 1..={MAX_WAVES} waves"));
    }
    let mut total: i64 = 0;
    for (i, w) in list.iter().enumerate() {
        if w.ends_at <= w.starts_at {
            return Err(format!("wave {i}: ends_at must be after starts_at"));
        }
        if w.starts_at < window.0 || w.ends_at > window.1 {
            return Err(format!("wave {i} must lie inside the campaign's window"));
        }
        if w.quota <= 0 {
            return Err(format!("wave {i}: quota must be above 0"));
        }
        if let Some(prev) = i.checked_sub(1).and_then(|p| list.get(p)) {
            if w.starts_at < prev.ends_at {
                return Err(format!("wave {i} must start at or after wave {} ends (ordered, not overlapping)", i - 1));
            }
        }
        total = total.saturating_add(w.quota);
    }
    if total > super::MAX_QUOTA {
        return Err(format!("the waves' quotas add up to more than {}", super::MAX_QUOTA));
    }
    Ok(())
}

impl CampaignItem {
    /// Waves of quota shards: 1 for an item without waves.
    pub fn wave_count(&self) -> u16 {
        self.waves.as_ref().map_or(1, |w| w.list.len().clamp(1, MAX_WAVES) as u16)
    }

    /// Every quota shard of the item, over all its waves.
    pub fn quota_shards(&self) -> u16 {
        self.shards.saturating_mul(self.wave_count())
    }

    /// The shard numbers wave `w` owns.
    pub fn wave_shards(&self, w: usize) -> Range<u16> {
        let first = self.shards.saturating_mul(w as u16);
        first..first.saturating_add(self.shards)
    }

    /// Each quota shard's window copy and initial available units, in shard order: a waved
    /// item's shards carry their wave's window and quota, the others the campaign's.
    pub fn shard_layout(&self, window: (i64, i64)) -> Vec<(i64, i64, i64)> {
        match &self.waves {
            None => spread(self.quota, self.shards).into_iter().map(|q| (window.0, window.1, q)).collect(),
            Some(ws) => ws
                .list
                .iter()
                .flat_map(|w| spread(w.quota, self.shards).into_iter().map(|q| (w.starts_at, w.ends_at, q)))
                .collect(),
        }
    }

    /// The wave that sells at `now_s` (0 for an item without waves, whose gate is the
    /// campaign's): before a wave and between two a checkout is `NotStarted`, after the last
    /// `Ended`.
    pub fn wave_at(&self, now_s: i64) -> Result<usize, GateRefusal> {
        let Some(ws) = &self.waves else { return Ok(0) };
        if let Some(i) = ws.list.iter().position(|w| w.starts_at <= now_s && now_s < w.ends_at) {
            return Ok(i);
        }
        if ws.list.iter().any(|w| w.starts_at > now_s) {
            Err(GateRefusal::NotStarted)
        } else {
            Err(GateRefusal::Ended)
        }
    }

    /// The wave an admin's quota adjustment changes: the one selling now or the next one (the
    /// last once all have ended).
    pub fn adjusted_wave(&self, now_s: i64) -> usize {
        match &self.waves {
            None => 0,
            Some(ws) => ws.list.iter().position(|w| w.ends_at > now_s).unwrap_or(ws.list.len().saturating_sub(1)),
        }
    }

    /// Splits `quantity` over wave `w`'s shards from `available` (every shard of the item, as
    /// read), starting at `start` within the wave; the pieces carry absolute shard numbers.
    pub fn split_in_wave(
        &self,
        w: usize,
        available: &[i64],
        start: u16,
        quantity: u32,
    ) -> Result<Vec<Piece>, Shortfall> {
        let r = self.wave_shards(w);
        let slice = available.get(usize::from(r.start)..usize::from(r.end).min(available.len())).unwrap_or(&[]);
        let pieces = split(slice, start, quantity)?;
        Ok(pieces.into_iter().map(|p| Piece { shard: p.shard + r.start, quantity: p.quantity }).collect())
    }
}

/// A roll of one ended wave's unsold units into the next, as one conditional transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roll {
    pub from: usize,
    pub units: i64,
    /// (absolute shard, delta): minus on the ended wave's shards (each conditional on its
    /// available), plus on the next wave's.
    pub pieces: Vec<(u16, i64)>,
}

/// Most shards of the next wave a roll spreads onto: with the ended wave's ≤ 64 shards, the
/// campaign record and the audit record the transaction stays within 100 items.
const ROLL_SPREAD: u16 = 32;

/// The next roll due at `now_s` from the item's shard counters (`available` over every shard),
/// if any: the first ended wave, not the last, whose shards still hold available units. A
/// wave's units released after its roll (an expired checkout) are rolled by the next call.
pub fn next_roll(item: &CampaignItem, available: &[i64], now_s: i64) -> Option<Roll> {
    let ws = item.waves.as_ref().filter(|w| w.unsold == Unsold::Roll)?;
    let last = ws.list.len().checked_sub(1)?;
    for (from, w) in ws.list.iter().enumerate().take(last) {
        if w.ends_at > now_s {
            return None;
        }
        let r = item.wave_shards(from);
        let out: Vec<(u16, i64)> = r
            .filter_map(|s| available.get(usize::from(s)).map(|&a| (s, a)))
            .filter(|&(_, a)| a > 0)
            .map(|(s, a)| (s, -a))
            .collect();
        let units: i64 = out.iter().map(|(_, d)| -d).sum();
        if units == 0 {
            continue;
        }
        let next = item.wave_shards(from + 1);
        let into = spread(units, item.shards.min(ROLL_SPREAD))
            .into_iter()
            .enumerate()
            .filter(|&(_, d)| d > 0)
            .map(|(i, d)| (next.start + i as u16, d));
        let pieces = out.into_iter().chain(into).collect();
        return Some(Roll { from, units, pieces });
    }
    None
}

/// The item after `roll`: the units leave wave `from` and enter the next; the item's quota (the
/// sum over every shard) does not change.
pub fn rolled(item: &CampaignItem, roll: &Roll) -> CampaignItem {
    let mut next = item.clone();
    if let Some(ws) = next.waves.as_mut() {
        if let Some(w) = ws.list.get_mut(roll.from) {
            w.rolled_out += roll.units;
        }
        if let Some(w) = ws.list.get_mut(roll.from + 1) {
            w.rolled_in += roll.units;
        }
    }
    next
}

/// The counters of `counts` added up (an item's shards, or one wave's).
pub fn sum_counts(counts: &[crate::invariants::ShardCounts]) -> crate::invariants::ShardCounts {
    counts.iter().fold(crate::invariants::ShardCounts::default(), |a, c| crate::invariants::ShardCounts {
        available: a.available + c.available,
        locked: a.locked + c.locked,
        sold: a.sold + c.sold,
    })
}

/// The counters of each wave of `item`, from all its shards as read.
pub fn wave_counts(
    item: &CampaignItem,
    shards: &[crate::invariants::ShardCounts],
) -> Vec<crate::invariants::ShardCounts> {
    (0..usize::from(item.wave_count()))
        .map(|w| {
            let r = item.wave_shards(w);
            sum_counts(shards.get(usize::from(r.start)..usize::from(r.end).min(shards.len())).unwrap_or(&[]))
        })
        .collect()
}

impl crate::invariants::CampaignItemSnapshot {
    /// The snapshot of `item` from its shards as read (`shard(n)` for n over every wave).
    pub fn of(
        campaign: &super::CampaignId,
        item: &CampaignItem,
        shard: impl FnMut(u16) -> crate::invariants::ShardCounts,
    ) -> Self {
        crate::invariants::CampaignItemSnapshot {
            campaign: campaign.clone(),
            sku: item.sku.clone(),
            quota: item.quota,
            per_user_limit: item.per_user_limit,
            shards: (0..item.quota_shards()).map(shard).collect(),
            waves: item.waves.as_ref().map(|w| w.list.iter().map(Wave::net).collect()).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests;
