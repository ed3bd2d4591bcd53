//! A reference model of the stock operations (DESIGN §23, "the verification ladder"): the
//! stock store's freezes, confirms, releases, retakes, restocks, oversell marks, adjustments,
//! ring-fence pairs, stop-sales, campaign pauses and quota adjustments, rebalances and queue
//! admissions, written from the ports' documentation as plain arithmetic on a few maps — no
//! [`crate::domain::plan`], no store code.
//!
//! [`gen`] draws random operation sequences (proptest, shrinking to the shortest failing one);
//! [`run`] applies each to a real [`StockStore`] and to the model and, after every step,
//! compares the store's answer and everything observable through the port (SKU metadata, shard
//! and quota counters, per-user and pending counters, every lock's status, lines and oversell
//! mark, spent admissions) with the model's. The in-memory store runs it in its unit tests
//! (`adapters::memory::model_tests`), DynamoDB on the emulator in tests/tests/e2e/store_contract.rs.

use super::*;
use crate::domain::allocation::spread;
use crate::domain::invariants::ShardCounts;
use std::collections::{BTreeMap, BTreeSet};

pub mod gen;
pub mod run;
mod state;

pub use gen::{check, Case, FreezeSpec, LineSpec, Op};
pub use run::run_case;

/// The users a case draws from.
pub const USERS: u8 = 3;
/// Per-user limit of SKU A's limited lines.
pub const LIMIT_A: u32 = 4;
/// Campaign per-user limit of SKU A's limited campaign lines.
pub const CAMPAIGN_LIMIT: u32 = 3;
/// Pending checkouts a user may hold.
pub const MAX_PENDING: u32 = 1;
/// Queue tickets a case spends admissions of.
pub const TICKETS: u64 = 2;
/// Shards read back per SKU (more than any SKU has: a missing shard reads as zeros).
pub const READ_SLOTS: u16 = 4;

/// One port call, with every argument concrete: what the model expects and the store is asked.
#[derive(Debug, Clone)]
pub enum Call {
    Freeze(Reservation, FreezeLimits),
    /// FROZEN → SOLD or RELEASED.
    Move(Reservation, LockStatus),
    Retake(Reservation),
    Restock(Reservation),
    MarkOversold(Reservation),
    Adjust(Adjustment),
    AdjustPair(Adjustment, Adjustment),
    /// Stop-sale on or off: the next metadata and the version it expects.
    Pause(SkuMeta, u64),
    WriteCampaign(Campaign, u64),
    AdjustCampaign(crate::ports::CampaignAdjustment, Campaign, u64),
    Rebalance {
        meta: SkuMeta,
        expected: u64,
        old: Vec<ShardCounts>,
        new_available: Vec<i64>,
    },
}

/// A store's answer to a [`Call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Freeze(Result<(), FreezeRejection>),
    Move(Result<(), MoveRejection>),
    Adjust(Result<(), AdjustRejection>),
    Written(bool),
}

/// Everything a case observes through the port after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Per SKU: (slots, stocked, version, paused).
    pub metas: Vec<(u16, i64, u64, bool)>,
    /// Per SKU, shards `0..READ_SLOTS`: (available, locked, sold).
    pub shards: Vec<Vec<(i64, i64, i64)>>,
    /// The campaign: (version, paused, quota) and its quota shards.
    pub campaign: (u64, bool, i64),
    pub quota: Vec<(i64, i64, i64)>,
    /// Every non-zero per-user, campaign per-user and pending counter, by name.
    pub counters: BTreeMap<String, i64>,
    /// Every reservation id a case froze or tried to: its status, oversell mark and lines.
    pub locks: Vec<Option<(LockStatus, bool, Vec<ReservedLine>)>>,
    /// Tickets `0..TICKETS`: whether each admission is spent.
    pub spent: Vec<bool>,
}

/// A product shard as the model keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelShard {
    pub counts: ShardCounts,
    pub paused: bool,
}

/// One SKU of the case (A: limited, with the campaign; B: plain, the ring-fence's other side).
#[derive(Debug, Clone)]
pub struct ModelSku {
    pub meta: SkuMeta,
    pub shards: Vec<ModelShard>,
    /// Adjustments applied, by id: their delta.
    pub adjustments: BTreeMap<String, i64>,
}

/// The campaign on SKU A.
#[derive(Debug, Clone)]
pub struct ModelCampaign {
    pub campaign: Campaign,
    pub quota: Vec<ShardCounts>,
    pub adjustments: BTreeMap<String, i64>,
}

/// The reference model: the state of a case's names in the stock table.
#[derive(Debug, Clone)]
pub struct Model {
    pub prefix: String,
    pub skus: Vec<ModelSku>,
    pub campaign: ModelCampaign,
    /// Every reservation tried, in order: as frozen, and its stored state (`None`: refused).
    pub locks: Vec<(Reservation, Option<(LockStatus, bool)>)>,
    /// (SKU index, user) → units held under the per-user limit.
    pub limits: BTreeMap<(usize, UserId), i64>,
    pub campaign_limits: BTreeMap<UserId, i64>,
    pub pending: BTreeMap<UserId, i64>,
    pub spent: BTreeSet<u64>,
    /// Operations drawn so far (fresh ids are made from it).
    pub step: usize,
}

/// Counter moves of a lock move (what the move does to `available`, `locked`, `sold`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    Sell,
    Release,
    Retake,
    Restock,
}

impl How {
    /// Whether `c` can give `q` for this move.
    fn holds(self, c: &ShardCounts, q: i64) -> bool {
        match self {
            How::Sell | How::Release => c.locked >= q,
            How::Retake => c.available >= q,
            How::Restock => c.sold >= q,
        }
    }

    fn apply(self, c: &mut ShardCounts, q: i64) {
        match self {
            How::Sell => (c.locked, c.sold) = (c.locked - q, c.sold + q),
            How::Release => (c.locked, c.available) = (c.locked - q, c.available + q),
            How::Retake => (c.available, c.sold) = (c.available - q, c.sold + q),
            How::Restock => (c.sold, c.available) = (c.sold - q, c.available + q),
        }
    }

    /// The change of the buyer's allowance counters per unit.
    fn allowance(self) -> i64 {
        match self {
            How::Sell => 0,
            How::Release | How::Restock => -1,
            How::Retake => 1,
        }
    }
}

impl Model {
    /// The names and limits of a case, before its setup ran.
    pub fn new(prefix: &str, case: &Case) -> Model {
        let name = |n: &str| sku(prefix, n);
        let a = SkuMeta { per_user_limit: Some(LIMIT_A), ..new_meta(&name("A"), case.a_stock.len() as u16) };
        let b = new_meta(&name("B"), case.b_stock.len() as u16);
        let mut c = campaign(&campaign_id(prefix, "C"), &a.sku, case.quota, Some(CAMPAIGN_LIMIT), live());
        c.items[0].shards = case.quota_shards;
        let quota = spread(case.quota, case.quota_shards)
            .into_iter()
            .map(|available| ShardCounts { available, locked: 0, sold: 0 })
            .collect();
        let skus = [(a, &case.a_stock), (b, &case.b_stock)]
            .into_iter()
            .map(|(meta, stock)| ModelSku {
                shards: stock
                    .iter()
                    .map(|&available| ModelShard {
                        counts: ShardCounts { available, locked: 0, sold: 0 },
                        paused: false,
                    })
                    .collect(),
                // the seed adjustment (only when it moves a unit) bumps the version once
                meta: SkuMeta {
                    stocked: stock.iter().sum(),
                    version: meta.version + u64::from(stock.iter().any(|&u| u != 0)),
                    ..meta
                },
                adjustments: BTreeMap::new(),
            })
            .collect();
        Model {
            prefix: prefix.to_owned(),
            skus,
            campaign: ModelCampaign { campaign: c, quota, adjustments: BTreeMap::new() },
            locks: Vec::new(),
            limits: BTreeMap::new(),
            campaign_limits: BTreeMap::new(),
            pending: BTreeMap::new(),
            spent: BTreeSet::new(),
            step: 0,
        }
    }

    /// The limits every freeze of a case passes (a limited line is only drawn for a SKU that
    /// has a limit, as the stock service does).
    pub fn limits(&self, admission: Option<u64>) -> FreezeLimits {
        FreezeLimits {
            per_sku: [(self.skus[0].meta.sku.clone(), LIMIT_A)].into(),
            per_campaign_item: [(self.skus[0].meta.sku.clone(), CAMPAIGN_LIMIT)].into(),
            max_pending: Some(MAX_PENDING),
            admission: admission.map(|t| (self.campaign.campaign.id.clone(), t)),
            // the switch's check is judged by the sale tests of both stores (memory unit tests,
            // e2e `sale`), not by the model, which has no switch
            sales_open: false,
        }
    }

    pub fn user(&self, n: u8) -> UserId {
        user(&self.prefix, &format!("u{}", n % USERS))
    }

    /// The reservation a lock operation names: mostly (`n` < 200) one the store holds, else any
    /// tried before (a refused one too), or one never frozen when none was.
    pub fn lock_of(&self, n: u8) -> Reservation {
        let n = usize::from(n);
        let held: Vec<&Reservation> = self.locks.iter().filter(|(_, st)| st.is_some()).map(|(r, _)| r).collect();
        match self.locks.len() {
            _ if n < 200 && !held.is_empty() => held[n % held.len()].clone(),
            0 => reservation(rid(&self.prefix, "never"), None, vec![line(&self.skus[0].meta.sku, &[(0, 1)])]),
            len => self.locks[n % len].0.clone(),
        }
    }

    /// A drawn shard of a SKU with `slots` shards: mostly (`s` < 230) one that exists.
    pub fn shard_of(s: u8, slots: usize) -> u16 {
        if s < 230 && slots > 0 {
            (usize::from(s) % slots) as u16
        } else {
            READ_SLOTS - 1
        }
    }

    /// What the model shows through the port.
    pub fn seen(&self) -> Seen {
        let counts = |c: &ShardCounts| (c.available, c.locked, c.sold);
        let mut counters = BTreeMap::new();
        for ((k, u), n) in &self.limits {
            counters.insert(format!("limit {} {u}", self.skus[*k].meta.sku), *n);
        }
        for (u, n) in &self.campaign_limits {
            counters.insert(format!("campaign {u}"), *n);
        }
        for (u, n) in &self.pending {
            counters.insert(format!("pending {u}"), *n);
        }
        counters.retain(|_, n| *n != 0);
        let c = &self.campaign.campaign;
        Seen {
            metas: self.skus.iter().map(|k| (k.meta.slots, k.meta.stocked, k.meta.version, k.meta.paused)).collect(),
            shards: self
                .skus
                .iter()
                .map(|k| {
                    (0..usize::from(READ_SLOTS))
                        .map(|i| k.shards.get(i).map_or((0, 0, 0), |s| counts(&s.counts)))
                        .collect()
                })
                .collect(),
            campaign: (c.version, c.paused, c.items[0].quota),
            quota: self.campaign.quota.iter().map(counts).collect(),
            counters,
            locks: self
                .locks
                .iter()
                .map(|(r, st)| st.map(|(status, oversold)| (status, oversold, r.lines.clone())))
                .collect(),
            spent: (0..TICKETS).map(|t| self.spent.contains(&t)).collect(),
        }
    }
}

#[cfg(test)]
mod memory_tests;
