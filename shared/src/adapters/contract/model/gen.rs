//! Random operation sequences (proptest strategies), their translation into concrete port calls
//! by the model, and the driver that runs many cases and shrinks a failing one.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// One line of a freeze: a SKU (0 = A, 1 = B), shard pieces (shard drawn by
/// [`Model::shard_of`], units), limited (A only), and a campaign quota piece (A only: quota shard,
/// limited).
#[derive(Debug, Clone)]
pub struct LineSpec {
    pub sku: u8,
    pub pieces: Vec<(u8, u8)>,
    pub limited: bool,
    pub campaign: Option<(u8, bool)>,
}

#[derive(Debug, Clone)]
pub struct FreezeSpec {
    pub user: Option<u8>,
    pub pending: bool,
    pub admission: Option<u64>,
    /// Reuse the id of an earlier reservation (a replay) instead of a fresh one.
    pub reuse: Option<u8>,
    pub lines: Vec<LineSpec>,
}

/// One operation; locks are named by an index into the reservations tried so far.
#[derive(Debug, Clone)]
pub enum Op {
    Freeze(FreezeSpec),
    Confirm(u8),
    Release(u8),
    Retake(u8),
    Restock(u8),
    MarkOversold(u8),
    /// Pieces (shard, delta) on SKU `sku`; `replay` reuses an earlier adjustment's id.
    Adjust {
        sku: u8,
        pieces: Vec<(u8, i8)>,
        replay: Option<u8>,
    },
    /// A ring-fence: units off A's shards (`out`) onto one of B's, together.
    Fence {
        out: Vec<(u8, u8)>,
        into: u8,
        replay: Option<u8>,
    },
    Pause {
        sku: u8,
        on: bool,
    },
    CampaignPause(bool),
    CampaignAdjust {
        pieces: Vec<(u8, i8)>,
        replay: Option<u8>,
    },
    /// Spread A's or B's available units over one more shard (`grow`) or the same; `stale`
    /// passes a wrong old count of shard 0.
    Rebalance {
        sku: u8,
        grow: bool,
        stale: bool,
    },
}

/// A case: the initial stock and quota, then the operations.
#[derive(Debug, Clone)]
pub struct Case {
    pub a_stock: Vec<i64>,
    pub b_stock: Vec<i64>,
    pub quota: i64,
    pub quota_shards: u16,
    pub ops: Vec<Op>,
}

fn pieces<T: Copy + std::fmt::Debug + 'static>(
    amount: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Vec<(u8, T)>> {
    // mostly shards that exist; now and then the one no SKU has
    let shard = prop_oneof![9 => 0u8..READ_SLOTS as u8 - 1, 1 => Just(READ_SLOTS as u8 - 1)];
    prop::collection::btree_map(shard, amount, 1..3).prop_map(|m| m.into_iter().collect())
}

fn line_spec(sku: u8) -> impl Strategy<Value = LineSpec> {
    let a = sku == 0;
    let pieces = prop::collection::vec((any::<u8>(), 1u8..4), 1..3);
    (pieces, any::<bool>(), prop::option::weighted(0.4, (0u8..3, any::<bool>()))).prop_map(
        move |(pieces, limited, campaign)| LineSpec {
            sku,
            pieces,
            limited: limited && a,
            campaign: campaign.filter(|_| a),
        },
    )
}

fn freeze() -> impl Strategy<Value = Op> {
    let lines = prop_oneof![
        line_spec(0).prop_map(|l| vec![l]),
        line_spec(1).prop_map(|l| vec![l]),
        (line_spec(0), line_spec(1)).prop_map(|(a, b)| vec![a, b]),
    ];
    (
        prop::option::weighted(0.9, 0..USERS),
        prop::bool::weighted(0.7),
        prop::option::weighted(0.3, 0..TICKETS),
        prop::option::weighted(0.1, any::<u8>()),
        lines,
    )
        .prop_map(|(user, pending, admission, reuse, lines)| {
            Op::Freeze(FreezeSpec { user, pending, admission, reuse, lines })
        })
}

fn op() -> impl Strategy<Value = Op> {
    let replay = || prop::option::weighted(0.3, any::<u8>());
    prop_oneof![
        8 => freeze(),
        3 => any::<u8>().prop_map(Op::Confirm),
        3 => any::<u8>().prop_map(Op::Release),
        2 => any::<u8>().prop_map(Op::Retake),
        2 => any::<u8>().prop_map(Op::Restock),
        2 => any::<u8>().prop_map(Op::MarkOversold),
        2 => (0u8..2, pieces(-3i8..6), replay()).prop_map(|(sku, pieces, replay)| Op::Adjust { sku, pieces, replay }),
        1 => (pieces(1u8..3), 0u8..3, replay()).prop_map(|(out, into, replay)| Op::Fence { out, into, replay }),
        1 => (0u8..2, prop::bool::weighted(0.3)).prop_map(|(sku, on)| Op::Pause { sku, on }),
        1 => prop::bool::weighted(0.3).prop_map(Op::CampaignPause),
        1 => (pieces(-2i8..4), replay()).prop_map(|(pieces, replay)| Op::CampaignAdjust { pieces, replay }),
        1 => (0u8..2, any::<bool>(), prop::bool::weighted(0.3))
            .prop_map(|(sku, grow, stale)| Op::Rebalance { sku, grow, stale }),
    ]
}

/// Cases of at most `max_steps` operations.
pub fn cases(max_steps: usize) -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(0i64..10, 1..=3),
        prop::collection::vec(0i64..8, 1..=2),
        0i64..10,
        1u16..=2,
        prop::collection::vec(op(), 1..=max_steps.max(1)),
    )
        .prop_map(|(a_stock, b_stock, quota, quota_shards, ops)| Case {
            a_stock,
            b_stock,
            quota,
            quota_shards,
            ops,
        })
}

/// Runs `cases` random cases drawn from `seed` through `run` (each returns what differed, if
/// anything); on a failure, shrinks it (at most `shrink_iters` tries) and returns the smallest
/// failing case with its message. The same seed draws the same cases.
pub fn check(
    seed: u64,
    cases_n: u32,
    max_steps: usize,
    shrink_iters: u32,
    run: impl Fn(&Case) -> Result<(), String>,
) -> Result<(), String> {
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let config =
        Config { cases: cases_n, failure_persistence: None, max_shrink_iters: shrink_iters, ..Config::default() };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&cases(max_steps), |c| run(&c).map_err(TestCaseError::fail))
        .map_err(|e| format!("seed {seed} (HOLDFAST_MODEL_SEED): {e}"))
}

/// A case count or size from the environment (`var`), or `default`.
pub fn size(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

impl Model {
    /// The concrete call of `op` in the model's current state.
    pub fn call(&self, op: &Op) -> Call {
        let pick = |n: u8| self.lock_of(n);
        match op {
            Op::Freeze(spec) => self.freeze_call(spec),
            Op::Confirm(n) => Call::Move(pick(*n), LockStatus::Sold),
            Op::Release(n) => Call::Move(pick(*n), LockStatus::Released),
            Op::Retake(n) => Call::Retake(pick(*n)),
            Op::Restock(n) => Call::Restock(pick(*n)),
            Op::MarkOversold(n) => Call::MarkOversold(pick(*n)),
            Op::Adjust { sku, pieces, replay } => {
                let k = &self.skus[usize::from(sku % 2)];
                let id = self.id_or_replay(&k.adjustments, *replay, "adj", |_| true);
                let pieces: Vec<(u16, i64)> = pieces.iter().map(|&(s, d)| (u16::from(s), i64::from(d))).collect();
                Call::Adjust(adjustment(&k.meta.sku, &id, &pieces))
            }
            Op::Fence { out, into, replay } => {
                let (a, b) = (&self.skus[0], &self.skus[1]);
                let id = self.id_or_replay(&a.adjustments, *replay, "fence", |k| k.starts_with("fence"));
                let out: Vec<(u16, i64)> = out.iter().map(|&(s, q)| (u16::from(s), -i64::from(q))).collect();
                let units = -out.iter().map(|(_, d)| d).sum::<i64>();
                let into_id = id.replacen("fence", "fenced", 1);
                Call::AdjustPair(
                    adjustment(&a.meta.sku, &id, &out),
                    adjustment(&b.meta.sku, &into_id, &[(u16::from(*into), units)]),
                )
            }
            Op::Pause { sku, on } => {
                let m = &self.skus[usize::from(sku % 2)].meta;
                Call::Pause(SkuMeta { paused: *on, version: m.version + 1, ..m.clone() }, m.version)
            }
            Op::CampaignPause(on) => {
                let c = &self.campaign.campaign;
                Call::WriteCampaign(Campaign { paused: *on, version: c.version + 1, ..c.clone() }, c.version)
            }
            Op::CampaignAdjust { pieces, replay } => self.campaign_adjust_call(pieces, *replay),
            Op::Rebalance { sku, grow, stale } => self.rebalance_call(usize::from(sku % 2), *grow, *stale),
        }
    }

    /// A fresh id (`<what><step>`), or with `replay` one applied before (among those `which`).
    fn id_or_replay(
        &self,
        applied: &BTreeMap<String, i64>,
        replay: Option<u8>,
        what: &str,
        which: impl Fn(&str) -> bool,
    ) -> String {
        let before: Vec<&String> = applied.keys().filter(|k| which(k) && k.as_str() != "seed").collect();
        match replay {
            Some(n) if !before.is_empty() => before[usize::from(n) % before.len()].clone(),
            _ => format!("{what}{}", self.step),
        }
    }

    fn freeze_call(&self, spec: &FreezeSpec) -> Call {
        let id = match (spec.reuse, self.locks.len()) {
            (Some(n), len) if len > 0 => self.locks[usize::from(n) % len].0.id.clone(),
            _ => rid(&self.prefix, &format!("r{}", self.step)),
        };
        let c = &self.campaign.campaign.id;
        let lines = spec
            .lines
            .iter()
            .map(|l| {
                let k = &self.skus[usize::from(l.sku % 2)];
                let sku = &k.meta.sku;
                // one piece per shard, as the stock service plans (a transaction touches an item once)
                let mut by_shard = BTreeMap::new();
                for &(s, q) in &l.pieces {
                    *by_shard.entry(Model::shard_of(s, k.shards.len())).or_insert(0u32) += u32::from(q);
                }
                let pieces: Vec<(u16, u32)> = by_shard.into_iter().collect();
                let units: u32 = pieces.iter().map(|(_, q)| q).sum();
                let plain = line(sku, &pieces);
                let plain = if l.limited { limited(plain) } else { plain };
                match l.campaign {
                    Some((shard, lim)) => on_campaign(plain, c, &[(u16::from(shard), units)], lim),
                    None => plain,
                }
            })
            .collect();
        let buyer = spec.user.map(|u| self.user(u));
        let r = Reservation { pending: spec.pending, ..reservation(id, buyer.as_ref(), lines) };
        Call::Freeze(r, self.limits(spec.admission))
    }

    fn campaign_adjust_call(&self, pieces: &[(u8, i8)], replay: Option<u8>) -> Call {
        let m = &self.campaign;
        let id = self.id_or_replay(&m.adjustments, replay, "cadj", |_| true);
        let pieces: Vec<(u16, i64)> = pieces.iter().map(|&(s, d)| (u16::from(s), i64::from(d))).collect();
        let delta = pieces.iter().map(|(_, d)| d).sum();
        let mut next = Campaign { version: m.campaign.version + 1, ..m.campaign.clone() };
        next.items[0].quota += delta;
        let adj = crate::ports::CampaignAdjustment {
            campaign_id: m.campaign.id.clone(),
            sku: self.skus[0].meta.sku.clone(),
            adjustment_id: id,
            delta,
            reason: "model".into(),
            actor: Some("model-admin".into()),
            at_ms: crate::clock::now_ms(),
            pieces,
        };
        Call::AdjustCampaign(adj, next, m.campaign.version)
    }

    fn rebalance_call(&self, k: usize, grow: bool, stale: bool) -> Call {
        let sku = &self.skus[k];
        let slots = (sku.shards.len() + usize::from(grow)).min(usize::from(READ_SLOTS) - 1) as u16;
        let mut old: Vec<ShardCounts> = sku.shards.iter().map(|s| s.counts).collect();
        let new_available = spread(old.iter().map(|c| c.available).sum(), slots);
        if stale {
            old[0].available += 1;
        }
        let meta = SkuMeta { shards: slots, slots, version: sku.meta.version + 1, ..sku.meta.clone() };
        Call::Rebalance { meta, expected: sku.meta.version, old, new_available }
    }
}
