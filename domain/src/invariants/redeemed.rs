//! The redemption invariant of code pools (docs/code-pools.md, "Redemption").

use super::{CodePools, Violation};
use crate::reservation::{CodeFate, LockStatus, Reservation};
use crate::Sku;

/// Redemption (docs/code-pools.md, "Redemption"): every redeemed code of pool `p` is held by a
/// SOLD lock whose fate is REDEEMED — so redeemed ≤ sold, a redeemed code was shown, and its
/// order was never refunded (a refund restocks the lock) nor its codes voided.
pub(super) fn check_redeemed(p: &Sku, c: &CodePools, locks: &[Reservation]) -> Vec<Violation> {
    let mut out = Vec::new();
    for (sku, shard, pos) in c.redeemed.iter().filter(|(s, ..)| s == p) {
        let holder = locks.iter().find(|r| {
            r.lines.iter().any(|l| {
                &l.sku == sku
                    && l.codes
                        .iter()
                        .flatten()
                        .any(|g| g.shard == *shard && (g.from..g.from + u64::from(g.count)).contains(pos))
            }) && r.status != LockStatus::Released
        });
        match holder {
            Some(r) if r.status == LockStatus::Sold && r.code_fate == Some(CodeFate::Redeemed) => {}
            Some(r) => out.push(Violation::CodePool {
                sku: p.clone(),
                detail: format!(
                    "code at shard {shard} position {pos} is redeemed but its lock {} is {} with fate {:?}",
                    r.id,
                    r.status.as_str(),
                    r.code_fate
                ),
            }),
            None => out.push(Violation::CodePool {
                sku: p.clone(),
                detail: format!("code at shard {shard} position {pos} is redeemed but no lock holds it"),
            }),
        }
    }
    out
}
