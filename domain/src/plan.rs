//! The writes of a lock move, planned once for every backend (docs/campaigns.md, "One plan for every backend").
//!
//! A freeze, confirm, release or retake is one transaction. Which items it touches, what each
//! one does and under which condition is decided here, purely, from the reservation: the
//! DynamoDB adapter turns each [`Action`] into a transaction item, the in-memory store evaluates
//! the same actions, and a cancelled transaction is mapped back through each action's
//! [`Target`] (an action carries its own meaning: no list of roles kept in step with a list of
//! items).

pub mod backorder_steps;

use super::codes::{CodeAppend, StoredCode};
use super::kind::Kind;
use super::model::Deduct;
use super::reservation::{FreezeLimits, FreezeRejection};
use super::reservation::{LockStatus, Reservation, ReservedLine};
use super::{CampaignId, Sku, UserId};

/// The item an action writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// The lock record itself (conditional on its status, or on not existing yet).
    Reservation,
    /// A product stock shard of a SKU.
    Shard { sku: Sku, shard: u16 },
    /// A campaign quota shard of one campaign item.
    Quota { campaign: CampaignId, sku: Sku, shard: u16 },
    /// The user's per-SKU purchase counter.
    Limit { sku: Sku, user: UserId },
    /// The user's per-campaign-item purchase counter.
    CampaignLimit { campaign: CampaignId, sku: Sku, user: UserId },
    /// The user's count of pending checkouts.
    Pending { user: UserId },
    /// One position of a code pool shard's ring (docs/code-pools.md).
    CodeSlot { sku: Sku, shard: u16, pos: u64 },
    /// The use of one queue ticket's admission (docs/waiting-room.md): a counter that goes from
    /// 0 to 1 once and never back.
    Admission { campaign: CampaignId, ticket: u64 },
    /// A BACKORDER SKU's backlog item (docs/inventory-models.md, "Backorders (oversell allowed)").
    Backlog { sku: Sku },
    /// The sales switch (docs/operations.md, "Sales switch"): only ever checked, never written.
    SalesSwitch,
}

/// How a stock counter triple (`available`, `locked`, `sold`) moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterMove {
    /// `available >= q`: available → locked. For a quota shard also "inside the window and not
    /// paused"; for a product shard "not stopped".
    Freeze,
    /// `locked >= q`: locked → sold.
    Sell,
    /// `locked >= q`: locked → available.
    Release,
    /// `available >= q`: available → sold (confirm of a released lock; no sale gate, the buyer
    /// has paid).
    Retake,
    /// `sold >= q`: sold → available (a refund before shipping, or a return put back on sale).
    Restock,
}

/// How a code pool shard's ring moves with its counters (docs/code-pools.md). Handing codes
/// out needs no ring step: the positions were claimed beforehand by an atomic head increment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingStep {
    /// Put `quantity` codes back at `tail` on: the tail must still be there.
    Append { tail: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// On a shard or quota target; `ring` on a code pool shard.
    Move { how: CounterMove, quantity: u32, ring: Option<RingStep> },
    /// On a code slot: write this code there (the position must be free).
    PutCode(StoredCode),
    /// On a code slot: bind its code to the reservation (it must hold a code that is neither
    /// bound nor given back).
    TakeCode,
    /// On a counter target: `n += delta`, conditional on `n <= max_before` when set (absent
    /// counts as 0).
    Add { delta: i64, max_before: Option<i64> },
    /// On a backlog target: its counters grown and the reservation listed or unlisted
    /// (unconditional: the lock's own condition decides).
    Backlog(super::backorder::BacklogStep),
    /// On the sales switch: it is absent or OPEN (a condition alone; nothing is written).
    Open,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub target: Target,
    pub op: Op,
}

fn mv(target: Target, how: CounterMove, quantity: u32) -> Action {
    Action { target, op: Op::Move { how, quantity, ring: None } }
}

/// The code slots a code line binds at freeze: every position of its claimed ranges.
fn taken_slots(l: &ReservedLine) -> impl Iterator<Item = Action> + '_ {
    l.codes.iter().flatten().flat_map(move |g| {
        (g.from..g.from + u64::from(g.count)).map(move |pos| Action {
            target: Target::CodeSlot { sku: l.sku.clone(), shard: g.shard, pos },
            op: Op::TakeCode,
        })
    })
}

fn add(target: Target, delta: i64, max_before: Option<i64>) -> Action {
    Action { target, op: Op::Add { delta, max_before } }
}

/// The counter writes of a freeze (the reservation put comes first and is the adapter's).
pub fn freeze(r: &Reservation, limits: &FreezeLimits) -> Vec<Action> {
    let mut out = Vec::new();
    for l in &r.lines {
        let q = i64::from(l.quantity);
        // a pay-time line takes its cells at confirm (docs/inventory-models.md, "Pay-time deduction")
        for c in l.cells().iter().filter(|_| !l.at_payment) {
            for p in c.pieces {
                out.push(mv(Target::Shard { sku: c.cell.clone(), shard: p.shard }, CounterMove::Freeze, p.quantity));
            }
        }
        out.extend(taken_slots(l));
        if let Some(c) = &l.campaign {
            for p in &c.pieces {
                let t = Target::Quota { campaign: c.campaign_id.clone(), sku: l.sku.clone(), shard: p.shard };
                out.push(mv(t, CounterMove::Freeze, p.quantity));
            }
        }
        if let Some(u) = &r.user {
            if let (true, Some(limit)) = (l.limited, limits.per_sku.get(&l.sku)) {
                out.push(add(Target::Limit { sku: l.sku.clone(), user: u.clone() }, q, Some(i64::from(*limit) - q)));
            }
            if let Some(c) = l.campaign.as_ref().filter(|c| c.limited) {
                if let Some(limit) = limits.per_campaign_item.get(&l.sku) {
                    let t =
                        Target::CampaignLimit { campaign: c.campaign_id.clone(), sku: l.sku.clone(), user: u.clone() };
                    out.push(add(t, q, Some(i64::from(*limit) - q)));
                }
            }
        }
    }
    if let (true, Some(u), Some(max)) = (r.pending, &r.user, limits.max_pending) {
        out.push(add(Target::Pending { user: u.clone() }, 1, Some(i64::from(max) - 1)));
    }
    if let Some((campaign, ticket)) = &limits.admission {
        out.push(add(Target::Admission { campaign: campaign.clone(), ticket: *ticket }, 1, Some(0)));
    }
    out.extend(backorder_steps::freeze_steps(r));
    if limits.sales_open {
        out.push(Action { target: Target::SalesSwitch, op: Op::Open });
    }
    merged(out)
}

/// One action per item: two lines drawing on one shard (a bundle's child also ordered on its
/// own) become one move of their sum — a transaction may not touch an item twice.
fn merged(actions: Vec<Action>) -> Vec<Action> {
    let mut out: Vec<Action> = Vec::with_capacity(actions.len());
    for a in actions {
        let same = out.iter_mut().find(|b| {
            b.target == a.target
                && matches!((&b.op, &a.op), (Op::Move { how: x, .. }, Op::Move { how: y, .. }) if x == y)
        });
        match (same, &a.op) {
            (
                Some(Action { op: Op::Move { quantity, ring: None, .. }, .. }),
                Op::Move { quantity: q, ring: None, .. },
            ) => *quantity += q,
            _ => out.push(a),
        }
    }
    out
}

/// Whether a planned transaction moves one item twice (in different ways): it cannot be one
/// DynamoDB transaction, so the freeze refuses the order before writing.
pub fn touches_an_item_twice(actions: &[Action]) -> bool {
    let mut seen = std::collections::HashSet::new();
    !actions.iter().all(|a| seen.insert(&a.target))
}

/// The counter writes of a lock move `from` → `to` (the reservation's status change comes
/// first and is the adapter's). `None` for a move that does not exist. A release of code lines
/// puts their codes back at the ring tails `returns` names (read by the adapter); a code line is
/// never retaken (its codes may be someone else's by then) and a restock leaves its codes sold
/// (its buyer may have seen them) — docs/code-pools.md.
pub fn lock_move(r: &Reservation, from: LockStatus, to: LockStatus, returns: &[CodeAppend]) -> Option<Vec<Action>> {
    let how = match (from, to) {
        (LockStatus::Frozen, LockStatus::Sold) => CounterMove::Sell,
        (LockStatus::Frozen, LockStatus::Released) => CounterMove::Release,
        (LockStatus::Released, LockStatus::Sold) => CounterMove::Retake,
        (LockStatus::Sold, LockStatus::Restocked) => CounterMove::Restock,
        _ => return None,
    };
    // Released or restocked units go back to their buyer's allowance; a retake charges it again.
    let limit_delta = |q: i64| match how {
        CounterMove::Release if crate::mutant!("release-keeps-allowance") => 0,
        CounterMove::Release | CounterMove::Restock => -q,
        CounterMove::Retake => q,
        _ => 0,
    };
    let mut out = Vec::new();
    for l in &r.lines {
        let q = i64::from(l.quantity);
        let rules = Kind::of_line(l).rules();
        // A pay-time line holds nothing while FROZEN: paying takes its cells (available →
        // sold), releasing it has nothing to give back.
        let cell_how = match (rules.deduct, how) {
            (Deduct::AtPayment, CounterMove::Sell) if crate::mutant!("paytime-sells-locked") => Some(CounterMove::Sell),
            (Deduct::AtPayment, CounterMove::Sell) => Some(CounterMove::Retake),
            (Deduct::AtPayment, CounterMove::Release) => None,
            _ if !rules.retake && how == CounterMove::Retake => return None,
            // restocked codes stay sold: their buyer may have seen them (docs/code-pools.md)
            _ if rules.reveals_codes && how == CounterMove::Restock => None,
            _ => Some(how),
        };
        // … and so does the buyer's allowance for them
        let limit_delta =
            |q: i64| if how == CounterMove::Restock && !rules.allowance_back { 0 } else { limit_delta(q) };
        if let Some(h) = cell_how {
            out.extend(cell_moves(l, h, returns)?);
        }
        if let Some(c) = &l.campaign {
            for p in &c.pieces {
                out.push(mv(
                    Target::Quota { campaign: c.campaign_id.clone(), sku: l.sku.clone(), shard: p.shard },
                    how,
                    p.quantity,
                ));
            }
        }
        if let (Some(u), d) = (&r.user, limit_delta(q)) {
            if d != 0 && l.limited {
                out.push(add(Target::Limit { sku: l.sku.clone(), user: u.clone() }, d, None));
            }
            if let Some(c) = l.campaign.as_ref().filter(|c| c.limited && d != 0) {
                let t = Target::CampaignLimit { campaign: c.campaign_id.clone(), sku: l.sku.clone(), user: u.clone() };
                out.push(add(t, d, None));
            }
        }
    }
    // A checkout stops being pending when it is paid or released, once: only a move out of
    // FROZEN gives the slot back.
    if let (true, Some(u), LockStatus::Frozen) = (r.pending, &r.user, from) {
        out.push(add(Target::Pending { user: u.clone() }, -1, None));
    }
    // a lock given back no longer waits: its open backorder units are cancelled
    if matches!(how, CounterMove::Release | CounterMove::Restock) {
        out.extend(backorder_steps::cancel_steps(r));
    }
    Some(merged(out))
}

/// The moves of one line's cells, shard by shard; a code line's release appends the codes that
/// go back (`returns`) to each shard's ring. `None` if a shard's returned codes are missing or
/// do not match its quantity.
fn cell_moves(l: &ReservedLine, h: CounterMove, returns: &[CodeAppend]) -> Option<Vec<Action>> {
    let mut out = Vec::new();
    for c in l.cells() {
        for p in c.pieces {
            let target = Target::Shard { sku: c.cell.clone(), shard: p.shard };
            if l.codes.is_none() || h != CounterMove::Release {
                out.push(mv(target, h, p.quantity));
                continue;
            }
            let back = returns.iter().find(|b| b.cell == c.cell && b.shard == p.shard)?;
            if back.codes.len() != p.quantity as usize {
                return None;
            }
            let ring = Some(RingStep::Append { tail: back.tail });
            out.push(Action { target, op: Op::Move { how: h, quantity: p.quantity, ring } });
            for (i, code) in back.codes.iter().enumerate() {
                let slot = Target::CodeSlot { sku: c.cell.clone(), shard: p.shard, pos: back.tail + i as u64 };
                out.push(Action { target: slot, op: Op::PutCode(code.clone()) });
            }
        }
    }
    Some(out)
}

/// What a cancelled freeze means, from the targets whose conditions failed, in the order that
/// decides the answer: a replay first, then limits, then the campaign quota, then stock.
pub fn freeze_rejection(failed: &[Target]) -> FreezeRejection {
    if failed.iter().any(|t| matches!(t, Target::Reservation)) {
        return FreezeRejection::AlreadyExists;
    }
    // a closed switch answers before anything the checkout itself could change
    if failed.iter().any(|t| matches!(t, Target::SalesSwitch)) {
        return FreezeRejection::SalesClosed;
    }
    // a claimed code slot given back meanwhile (reconcile's orphan repair): retry afresh
    if failed.iter().any(|t| matches!(t, Target::CodeSlot { .. })) {
        return FreezeRejection::Conflict;
    }
    if failed.iter().any(|t| matches!(t, Target::Admission { .. })) {
        return FreezeRejection::AdmissionUsed;
    }
    if failed.iter().any(|t| matches!(t, Target::Pending { .. })) {
        return FreezeRejection::TooManyPending;
    }
    for t in failed {
        match t {
            Target::Limit { sku, .. } => return FreezeRejection::LimitExceeded(sku.clone()),
            Target::CampaignLimit { sku, .. } => return FreezeRejection::CampaignLimitExceeded(sku.clone()),
            _ => {}
        }
    }
    let skus = |quota: bool| {
        let mut v: Vec<Sku> = failed
            .iter()
            .filter_map(|t| match t {
                Target::Quota { sku, .. } if quota => Some(sku.clone()),
                Target::Shard { sku, .. } if !quota => Some(sku.clone()),
                _ => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let quota = skus(true);
    if !quota.is_empty() {
        return FreezeRejection::QuotaShort(quota);
    }
    let shards = skus(false);
    if shards.is_empty() {
        FreezeRejection::Conflict
    } else {
        FreezeRejection::ShardShort(shards)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocation::Piece;
    use crate::reservation::{CampaignLine, ReservationKind, ReservedLine};
    use crate::{Currency, ReservationId};

    fn sku(s: &str) -> Sku {
        Sku::parse(s).unwrap()
    }

    fn reservation(pending: bool, campaign_limited: bool) -> Reservation {
        Reservation {
            id: ReservationId::from_stored("o1").unwrap(),
            kind: ReservationKind::Order,
            status: LockStatus::Frozen,
            user: Some(UserId::parse("u").unwrap()),
            request_hash: "h".into(),
            created_at_ms: 0,
            expires_at: 10,
            lines: vec![ReservedLine {
                sku: sku("A"),
                quantity: 3,
                unit_price: 5,
                currency: Currency::parse("EUR").unwrap(),
                limited: true,
                pieces: vec![Piece { shard: 0, quantity: 2 }, Piece { shard: 1, quantity: 1 }],
                campaign: Some(CampaignLine {
                    campaign_id: CampaignId::parse("c").unwrap(),
                    pieces: vec![Piece { shard: 2, quantity: 3 }],
                    limited: campaign_limited,
                }),
                dates: Vec::new(),
                draws: Vec::new(),
                at_payment: false,
                at_shipment: false,
                codes: None,
                backorder: None,
            }],
            oversold: false,
            code_fate: None,
            pending,
        }
    }

    fn limits() -> FreezeLimits {
        FreezeLimits {
            per_sku: [(sku("A"), 5)].into(),
            per_campaign_item: [(sku("A"), 4)].into(),
            max_pending: Some(3),
            admission: None,
            sales_open: false,
        }
    }

    #[test]
    fn the_switch_is_checked_only_when_asked_and_a_closed_one_answers_before_all_but_a_replay() {
        let r = reservation(true, true);
        let switch = |a: &Action| a.target == Target::SalesSwitch && a.op == Op::Open;
        assert!(!freeze(&r, &limits()).iter().any(switch));
        let checked = freeze(&r, &FreezeLimits { sales_open: true, ..limits() });
        assert_eq!(checked.iter().filter(|a| switch(a)).count(), 1);
        let short = Target::Shard { sku: sku("A"), shard: 0 };
        let pending = Target::Pending { user: r.user.clone().unwrap() };
        assert_eq!(freeze_rejection(&[short.clone(), pending, Target::SalesSwitch]), FreezeRejection::SalesClosed);
        assert_eq!(freeze_rejection(&[Target::SalesSwitch, Target::Reservation]), FreezeRejection::AlreadyExists);
        assert_eq!(freeze_rejection(&[short]), FreezeRejection::ShardShort(vec![sku("A")]));
    }

    #[test]
    fn a_plan_charging_one_counter_twice_touches_an_item_twice_and_one_line_does_not() {
        let one = reservation(true, true);
        assert!(!touches_an_item_twice(&freeze(&one, &limits())));
        // the same limited SKU on two lines: its moves merge, its per-user counter cannot
        let mut two = one.clone();
        two.lines.push(one.lines[0].clone());
        let plan = freeze(&two, &limits());
        assert!(touches_an_item_twice(&plan), "{plan:#?}");
    }

    #[test]
    fn a_campaign_freeze_takes_product_and_quota_shards_and_charges_every_counter() {
        let r = reservation(true, true);
        let plan = freeze(&r, &limits());
        assert_eq!(plan.len(), r.freeze_actions() - 1);
        let targets: Vec<_> = plan.iter().map(|a| &a.target).collect();
        assert!(matches!(targets[0], Target::Shard { shard: 0, .. }));
        assert!(matches!(targets[2], Target::Quota { shard: 2, .. }));
        assert_eq!(plan[3].op, Op::Add { delta: 3, max_before: Some(2) });
        assert_eq!(plan[4].op, Op::Add { delta: 3, max_before: Some(1) });
        assert_eq!(plan[5], add(Target::Pending { user: UserId::parse("u").unwrap() }, 1, Some(2)));
    }

    #[test]
    fn confirm_and_release_move_both_counters_and_free_the_pending_slot() {
        let r = reservation(true, true);
        let sold = lock_move(&r, LockStatus::Frozen, LockStatus::Sold, &[]).unwrap();
        assert!(sold.iter().any(|a| matches!(a.target, Target::Quota { .. })
            && a.op == Op::Move { how: CounterMove::Sell, quantity: 3, ring: None }));
        assert!(sold.iter().all(|a| !matches!(a.target, Target::Limit { .. } | Target::CampaignLimit { .. })));
        assert_eq!(sold.last().unwrap().op, Op::Add { delta: -1, max_before: None });
        let released = lock_move(&r, LockStatus::Frozen, LockStatus::Released, &[]).unwrap();
        let deltas: Vec<_> = released
            .iter()
            .filter_map(|a| match (&a.target, &a.op) {
                (Target::Limit { .. } | Target::CampaignLimit { .. }, Op::Add { delta, .. }) => Some(*delta),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, vec![-3, -3]);
        // a retake charges the limits again but never touches the pending counter
        let retaken = lock_move(&r, LockStatus::Released, LockStatus::Sold, &[]).unwrap();
        assert!(retaken.iter().all(|a| !matches!(a.target, Target::Pending { .. })));
        assert!(lock_move(&r, LockStatus::Sold, LockStatus::Released, &[]).is_none());
        // a restock puts product and quota units back and gives the allowance back, once
        let restocked = lock_move(&r, LockStatus::Sold, LockStatus::Restocked, &[]).unwrap();
        assert!(restocked.iter().any(|a| matches!(a.target, Target::Shard { .. })
            && a.op == Op::Move { how: CounterMove::Restock, quantity: 2, ring: None }));
        assert!(restocked.iter().any(|a| matches!(a.target, Target::Quota { .. })
            && a.op == Op::Move { how: CounterMove::Restock, quantity: 3, ring: None }));
        assert!(restocked.iter().all(|a| !matches!(a.target, Target::Pending { .. })));
        assert!(lock_move(&r, LockStatus::Restocked, LockStatus::Sold, &[]).is_none());
    }

    #[test]
    fn rejections_are_read_replay_first_then_limits_then_quota_then_stock() {
        let shard = Target::Shard { sku: sku("B"), shard: 0 };
        let quota = Target::Quota { campaign: CampaignId::parse("c").unwrap(), sku: sku("A"), shard: 1 };
        let pending = Target::Pending { user: UserId::parse("u").unwrap() };
        assert_eq!(freeze_rejection(&[shard.clone(), Target::Reservation]), FreezeRejection::AlreadyExists);
        assert_eq!(freeze_rejection(&[shard.clone(), pending]), FreezeRejection::TooManyPending);
        assert_eq!(freeze_rejection(&[shard.clone(), quota]), FreezeRejection::QuotaShort(vec![sku("A")]));
        assert_eq!(freeze_rejection(&[shard]), FreezeRejection::ShardShort(vec![sku("B")]));
        assert_eq!(freeze_rejection(&[]), FreezeRejection::Conflict);
    }

    #[test]
    fn a_code_line_binds_its_slots_at_freeze_appends_them_at_release_and_is_never_retaken_or_restocked() {
        use crate::codes::{CodeAppend, StoredCode};
        use crate::reservation::CodeRange;
        let mut r = reservation(false, false);
        let l = &mut r.lines[0];
        l.campaign = None;
        l.limited = false;
        l.codes = Some(vec![CodeRange { shard: 0, from: 7, count: 2 }, CodeRange { shard: 1, from: 3, count: 1 }]);
        let plan = freeze(&r, &FreezeLimits::default());
        let slots: Vec<_> = plan
            .iter()
            .filter_map(|a| match (&a.target, &a.op) {
                (Target::CodeSlot { shard, pos, .. }, Op::TakeCode) => Some((*shard, *pos)),
                _ => None,
            })
            .collect();
        assert_eq!(slots, vec![(0, 7), (0, 8), (1, 3)]);
        let code = |f: &str| StoredCode {
            fingerprint: f.into(),
            kid: "k".into(),
            sealed: "x".into(),
            ..StoredCode::default()
        };
        let back = |shard, tail, n: usize| CodeAppend {
            cell: sku("A"),
            shard,
            tail,
            codes: (0..n).map(|i| code(&format!("f{shard}{i}"))).collect(),
        };
        let released =
            lock_move(&r, LockStatus::Frozen, LockStatus::Released, &[back(0, 40, 2), back(1, 9, 1)]).unwrap();
        assert!(released
            .iter()
            .any(|a| a.op
                == Op::Move { how: CounterMove::Release, quantity: 2, ring: Some(RingStep::Append { tail: 40 }) }));
        let puts: Vec<_> = released
            .iter()
            .filter_map(|a| match (&a.target, &a.op) {
                (Target::CodeSlot { shard, pos, .. }, Op::PutCode(_)) => Some((*shard, *pos)),
                _ => None,
            })
            .collect();
        assert_eq!(puts, vec![(0, 40), (0, 41), (1, 9)]);
        // without the codes it must put back, a release is no plan at all
        assert!(lock_move(&r, LockStatus::Frozen, LockStatus::Released, &[back(0, 40, 2)]).is_none());
        assert!(lock_move(&r, LockStatus::Released, LockStatus::Sold, &[]).is_none(), "never retaken");
        let restocked = lock_move(&r, LockStatus::Sold, LockStatus::Restocked, &[]).unwrap();
        assert!(restocked.iter().all(|a| !matches!(a.target, Target::Shard { .. })), "codes stay sold");
    }
}
