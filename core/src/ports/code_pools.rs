//! The code pools port (docs/code-pools.md): the sealed codes' rings on a pool's shards, their
//! uploads, claims and returns, and what becomes of a code lock's codes.

use super::AdjustRejection;
pub use crate::domain::codes::CodeUpload;
use crate::domain::{ReservationId, Sku};
use async_trait::async_trait;
use std::collections::HashMap;

/// Code pools in the stock table (owned by the stock service).
#[async_trait]
pub trait CodePools: Send + Sync {
    /// The rings of shards `0..slots` of a code pool SKU (consistent; a missing shard is empty).
    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<crate::domain::codes::Ring>>;
    /// The codes at these (shard, position) slots, in order (`None`: no code there).
    async fn read_codes(
        &self,
        sku: &Sku,
        slots: &[(u16, u64)],
    ) -> anyhow::Result<Vec<Option<crate::domain::codes::StoredCode>>>;
    /// Whether the code at this slot legitimately left it (security review L6): it was given
    /// back (`ret`), or the lock bound to it (`o`) was RELEASED. `false` for a code still in
    /// the pool, one held by a FROZEN, SOLD or RESTOCKED lock, or an empty slot. A reveal asks
    /// it of a slot-bound code read elsewhere than the slot it was sealed for.
    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        let _ = (sku, shard, pos);
        anyhow::bail!("this store cannot tell whether a code left its slot")
    }
    /// Which of these fingerprints the pool already holds, with the batch that added each.
    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>>;
    /// Adds codes in one transaction (idempotent by the adjustment id).
    async fn add_codes(&self, upload: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Hands out `quantity` positions of a code pool shard's ring by moving its head, in one
    /// atomic update (no read, no conflict between buyers), if the head is at most `max_head`:
    /// the first position claimed, or `None` when the ring no longer has them.
    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>>;
    /// Puts claimed positions no lock bound back in the pool (appended at their shards' tails,
    /// the old positions marked given back) in one transaction. `false`: a tail moved or a
    /// position was bound or given back meanwhile — re-read and retry.
    async fn give_back_codes(
        &self,
        sku: &Sku,
        ranges: &[crate::domain::reservation::CodeRange],
    ) -> anyhow::Result<bool>;
    /// Positions in `from..to` of a shard whose slot holds a code neither bound nor given back
    /// (reconcile: a checkout died between its claim and its freeze).
    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>>;
    /// Records that every position below `to` was seen bound or given back (if the mark is still `from`).
    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool>;
    /// What an uploaded batch did, once it finished.
    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<crate::domain::codes::BatchResult>>;
    /// Records a finished batch (the first record wins).
    async fn put_code_batch(
        &self,
        sku: &Sku,
        batch_id: &str,
        result: &crate::domain::codes::BatchResult,
    ) -> anyhow::Result<()>;
    /// Records what becomes of a code lock's codes, once (docs/code-pools.md, "Reveal and
    /// refund"), if `domain::codes::lifecycle::fate_may_become` allows it: `Revealed` only on a
    /// SOLD lock, `Withdrawn` on a lock not yet released, either only first; `Voided` only after
    /// `Revealed`. Returns the fate the lock holds afterwards (`None`: no such lock, or not in a
    /// status that allows `fate`).
    async fn settle_codes(
        &self,
        id: &ReservationId,
        fate: crate::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<crate::domain::reservation::CodeFate>>;
    /// Records that the code at `slot` of `sku`, held by lock `id`, was redeemed at `at_ms`, in one
    /// transaction on the lock and the code (docs/code-pools.md, "Redemption"): the lock must be
    /// SOLD with its codes REVEALED or REDEEMED (it becomes REDEEMED), the slot bound to `id`,
    /// not redeemed yet and valid at `at_ms`. `false`: a condition failed and nothing was written.
    async fn redeem_code(&self, id: &ReservationId, sku: &Sku, slot: (u16, u64), at_ms: i64) -> anyhow::Result<bool> {
        let _ = (id, sku, slot, at_ms);
        anyhow::bail!("this store keeps no redemptions")
    }
    /// Retires claimed codes of one shard past their expire time, in one transaction
    /// (docs/code-pools.md, "Expiry"): each slot is marked expired if it is neither bound, nor
    /// given back, nor retired, and expired at `now_ms`; the shard's `available` and the SKU's
    /// `stocked` drop by their number (an adjustment, idempotent by its id) and the ring counts
    /// them as `expired`.
    async fn retire_codes(
        &self,
        retire: &crate::domain::codes::CodeRetire,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        let _ = retire;
        anyhow::bail!("this store cannot retire expired codes")
    }
}
