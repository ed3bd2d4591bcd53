//! Code pools: uploading batches, showing a paid order's codes, the pool summary
//! (docs/code-pools.md). The freeze, release and invariants of code lines live with every other
//! model's (`service::stock`, `domain::plan`); this is what only a code pool has.

use crate::clock;
use crate::context::App;
use crate::domain::codes::lifecycle::{check_expiry, CodeState};
use crate::domain::codes::{
    batch_hash, check_code, key_context, mask, placement, wrapped_key, BatchResult, CodeAppend, DataKey, Keyring,
    StoredCode, MAX_BATCH,
};
use crate::domain::kind::Stocking;
use crate::domain::reservation::{CodeFate, LockStatus};
use crate::domain::{OrderId, ReservationId, Sku, UserId};
use crate::ports::{AdjustRejection, Adjustment, CodeUpload, SkuMeta};
use crate::telemetry::names;
use std::collections::{HashMap, HashSet};

const ATTEMPTS: u32 = 10;

#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error("unknown SKU {0}")]
    UnknownSku(Sku),
    #[error("{0} is not a CODE_POOL SKU")]
    NotACodePool(Sku),
    #[error("batch_id must be 1..=64 characters of A-Z a-z 0-9 . _ : -")]
    BadBatchId,
    #[error("a batch holds 1..={MAX_BATCH} codes")]
    BatchSize,
    #[error("code {index} {reason}")]
    BadCode { index: usize, reason: &'static str },
    #[error("this batch_id was already used with other codes")]
    BatchReused,
    /// The batch's `expire_time` (docs/code-pools.md, "Expiry").
    #[error("expire_time {0}")]
    BadExpiry(&'static str),
    #[error("no such order")]
    OrderNotFound,
    #[error("the order is {0}: its codes are shown once it is paid")]
    NotPaid(&'static str),
    #[error("the order's codes are no longer its own (it was released or refunded)")]
    CodesReturned,
    #[error("the order's codes were withdrawn with its refund; they are never shown")]
    CodesWithdrawn,
    /// An admin approved the buyer's refund of codes already shown (docs/payments.md,
    /// "Refund review"): the codes are void and never shown again.
    #[error("the order's codes were voided by its approved refund; they are never shown again")]
    CodesVoided,
    /// A refund of the order waits for an admin's review, whatever the reason it is held for
    /// (docs/payments.md, "Refund review"): nothing is shown until it is decided, so an approval
    /// never refunds codes the buyer read while it waited.
    #[error("a refund of this order waits for review; its codes are not shown until it is decided")]
    RefundPending,
    /// Paid, but its stock is not confirmed yet (the event flow takes well under a second).
    #[error("the order's payment is being applied; its codes are shown in a moment")]
    NotReady,
    /// Paid, and its supplier has not issued its codes yet (docs/suppliers.md, "Codes issued by
    /// the supplier"): retried automatically, then by an operator.
    #[error("the supplier has not issued this order's codes yet; they are shown once it has")]
    IssuePending,
    #[error("contention; retry")]
    Contention,
    /// A stored code failed its integrity check at reveal (security review L6): it does not
    /// open, its fingerprint is not its own, or it was copied into this slot. Never shown.
    #[error("a stored code of this order failed its integrity check; it is not shown")]
    Tampered,
    /// The keyring is missing or unreadable: nothing is sealed or opened without it.
    #[error("code keys: {0:#}")]
    Keys(anyhow::Error),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// The keyring from the configured secret(s), current first.
pub async fn keyring(app: &App) -> Result<Keyring, CodeError> {
    let secrets = app.code_keys.keys().await.map_err(CodeError::Keys)?;
    let texts: Vec<String> = secrets.iter().map(|s| String::from_utf8_lossy(s.expose()).into_owned()).collect();
    Keyring::parse(&texts.iter().map(String::as_str).collect::<Vec<_>>()).map_err(CodeError::Keys)
}

fn batch_id_ok(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
}

async fn pool_meta(app: &App, sku: &Sku) -> Result<SkuMeta, CodeError> {
    let meta = app
        .catalogue
        .get_skus(std::slice::from_ref(sku))
        .await?
        .remove(sku)
        .ok_or_else(|| CodeError::UnknownSku(sku.clone()))?;
    if !Stocking::of(&meta.model).holds_codes() {
        return Err(CodeError::NotACodePool(sku.clone()));
    }
    Ok(meta)
}

pub mod redeem;
pub mod supplier;

/// Checks a batch before anything is read or written.
pub fn check_batch(batch_id: &str, codes: &[String]) -> Result<(), CodeError> {
    if !batch_id_ok(batch_id) {
        return Err(CodeError::BadBatchId);
    }
    if codes.is_empty() || codes.len() > MAX_BATCH {
        return Err(CodeError::BatchSize);
    }
    for (index, c) in codes.iter().enumerate() {
        check_code(c).map_err(|reason| CodeError::BadCode { index, reason })?;
    }
    Ok(())
}

/// Adds a batch of codes to a pool, once per `batch_id`: `(result, true)` when this call added
/// it, `(result, false)` for a replay of a finished batch. A code the pool (or the batch itself)
/// already holds is refused and counted, never stored twice. A batch interrupted half-way is
/// finished by its replay: the codes it did store carry its batch id and count as its own.
pub async fn upload(
    app: &App,
    sku: &Sku,
    batch_id: &str,
    codes: &[String],
    actor: Option<&str>,
) -> Result<(BatchResult, bool), CodeError> {
    upload_expiring(app, sku, batch_id, codes, None, actor).await
}

/// [`upload`] of a batch whose codes expire at `expires_at_ms` (docs/code-pools.md, "Expiry"):
/// stored with each code, it must lie in the future. The expire time is part of the batch's
/// identity: the same `batch_id` with another expire time is refused as reused.
pub async fn upload_expiring(
    app: &App,
    sku: &Sku,
    batch_id: &str,
    codes: &[String],
    expires_at_ms: Option<i64>,
    actor: Option<&str>,
) -> Result<(BatchResult, bool), CodeError> {
    check_batch(batch_id, codes)?;
    if let Some(at) = expires_at_ms {
        check_expiry(at, clock::now_ms()).map_err(CodeError::BadExpiry)?;
    }
    let meta = pool_meta(app, sku).await?;
    let keys = keyring(app).await?;
    let fps: Vec<String> = codes.iter().map(|c| keys.fingerprint(sku, c)).collect();
    let hash = match expires_at_ms {
        None => batch_hash(&fps),
        Some(at) => batch_hash(&[fps.as_slice(), &[format!("expires:{at}")]].concat()),
    };
    if let Some(prev) = app.code_pools.code_batch(sku, batch_id).await? {
        return if prev.hash == hash { Ok((prev, false)) } else { Err(CodeError::BatchReused) };
    }
    let mut added = 0u32;
    let mut dups: Vec<usize> = Vec::new();
    // first occurrence in the batch wins
    let mut seen = HashSet::new();
    let mut fresh: Vec<usize> = Vec::new();
    for (i, f) in fps.iter().enumerate() {
        if seen.insert(f) {
            fresh.push(i);
        } else {
            dups.push(i);
        }
    }
    let mut todo = sort_known(app, sku, batch_id, &fps, fresh, &mut added, &mut dups).await?;
    // Sealed under a KMS data key made for this SKU (v3; one GenerateDataKey per SKU per warm
    // Lambda and cache period), or under the keyring (v2) where no KMS key is configured.
    let data_key = match (&app.code_key_service, todo.is_empty()) {
        (Some(k), false) => Some(k.generate_data_key(&key_context(sku)).await.map_err(CodeError::Keys)?),
        _ => None,
    };
    let seal = Seal { keys: &keys, data_key: data_key.as_ref(), expires_at_ms };
    let per_tx = usize::from(98u16.saturating_sub(meta.shards)).max(2) / 2;
    while !todo.is_empty() {
        let chunk: Vec<usize> = todo.drain(..todo.len().min(per_tx)).collect();
        let left = add_chunk(app, &meta, &seal, batch_id, codes, &fps, chunk, actor, &mut added, &mut dups).await?;
        todo.splice(0..0, left);
    }
    dups.sort_unstable();
    let result = BatchResult {
        added,
        duplicates: dups.len() as u32,
        hash,
        duplicate_codes: dups.iter().take(100).map(|i| mask(&codes[*i])).collect(),
    };
    app.code_pools.put_code_batch(sku, batch_id, &result).await?;
    app.caches.forget_sku(sku);
    if result.duplicates > 0 {
        app.count(names::CODE_DUPLICATES, u64::from(result.duplicates));
    }
    tracing::info!(sku = %sku, batch_id, added, duplicates = result.duplicates, "codes uploaded");
    Ok((result, true))
}

/// How an upload seals: under a KMS data key (v3) when it has one, else under the keyring (v2).
struct Seal<'a> {
    keys: &'a Keyring,
    data_key: Option<&'a DataKey>,
    /// The batch's expire time, stored with each code.
    expires_at_ms: Option<i64>,
}

impl Seal<'_> {
    fn at(&self, sku: &Sku, shard: u16, pos: u64, code: &str) -> anyhow::Result<StoredCode> {
        let sealed = match self.data_key {
            Some(dk) => self.keys.seal_kms(dk, sku, shard, pos, code),
            None => self.keys.seal_at(sku, shard, pos, code),
        }?;
        Ok(StoredCode { expires_at_ms: self.expires_at_ms, ..sealed })
    }
}

/// Splits `idx` into the codes still to store; those the pool holds already are counted as
/// this batch's (stored by an earlier, interrupted run of it) or as duplicates.
async fn sort_known(
    app: &App,
    sku: &Sku,
    batch_id: &str,
    fps: &[String],
    idx: Vec<usize>,
    added: &mut u32,
    dups: &mut Vec<usize>,
) -> Result<Vec<usize>, CodeError> {
    let asked: Vec<String> = idx.iter().map(|i| fps[*i].clone()).collect();
    let known = app.code_pools.known_codes(sku, &asked).await?;
    let mut todo = Vec::new();
    for i in idx {
        match known.get(&fps[i]) {
            Some(b) if b == batch_id => *added += 1,
            Some(_) => dups.push(i),
            None => todo.push(i),
        }
    }
    Ok(todo)
}

/// Stores one chunk in one transaction, retried on contention; returns the indexes left to
/// store when another batch took some of its codes first (those are counted as duplicates).
#[allow(clippy::too_many_arguments)]
async fn add_chunk(
    app: &App,
    meta: &SkuMeta,
    seal: &Seal<'_>,
    batch_id: &str,
    codes: &[String],
    fps: &[String],
    chunk: Vec<usize>,
    actor: Option<&str>,
    added: &mut u32,
    dups: &mut Vec<usize>,
) -> Result<Vec<usize>, CodeError> {
    let sku = &meta.sku;
    let shards = meta.shards.clamp(1, crate::domain::allocation::MAX_SHARDS);
    let chunk_fps: Vec<String> = chunk.iter().map(|i| fps[*i].clone()).collect();
    // deterministic per chunk content: a replay of an applied chunk is a duplicate adjustment
    let adjustment_id = format!("codes:{batch_id}:{}", &batch_hash(&chunk_fps)[..16]);
    for attempt in 1..=ATTEMPTS {
        let rings = app.code_pools.read_rings(sku, shards).await?;
        let place = placement(chunk.len(), &rings);
        let mut by_shard: HashMap<u16, Vec<usize>> = HashMap::new();
        for (i, shard) in chunk.iter().zip(&place) {
            by_shard.entry(*shard).or_default().push(*i);
        }
        let mut appends = Vec::new();
        let mut pieces = Vec::new();
        let mut shard_ids: Vec<u16> = by_shard.keys().copied().collect();
        shard_ids.sort_unstable();
        for shard in shard_ids {
            let idx = &by_shard[&shard];
            // each code sealed for the slot it is appended to (v2/v3, security review L6)
            let tail = rings[usize::from(shard)].tail;
            let sealed = idx
                .iter()
                .enumerate()
                .map(|(k, i)| seal.at(sku, shard, tail + k as u64, &codes[*i]))
                .collect::<anyhow::Result<Vec<_>>>()?;
            pieces.push((shard, idx.len() as i64));
            appends.push(CodeAppend { cell: sku.clone(), shard, tail, codes: sealed });
        }
        let up = CodeUpload {
            adjustment: Adjustment {
                sku: sku.clone(),
                adjustment_id: adjustment_id.clone(),
                delta: chunk.len() as i64,
                reason: format!("codes batch {batch_id}"),
                actor: actor.map(str::to_owned),
                at_ms: clock::now_ms(),
                pieces,
            },
            batch_id: batch_id.to_owned(),
            appends,
        };
        match app.code_pools.add_codes(&up).await? {
            Ok(()) | Err(AdjustRejection::Duplicate { .. }) => {
                *added += chunk.len() as u32;
                return Ok(Vec::new());
            }
            Err(AdjustRejection::CodeTaken) => {
                // another batch stored some of these meanwhile: set those aside, retry the rest
                return sort_known(app, sku, batch_id, fps, chunk, added, dups).await;
            }
            Err(AdjustRejection::Conflict | AdjustRejection::ShardShort) => super::backoff(attempt).await,
        }
    }
    Err(CodeError::Contention)
}

/// The codes of a paid order, for its owner only (anyone else: not found). Never logged.
pub async fn reveal(app: &App, user: &UserId, id: &OrderId) -> Result<Vec<(Sku, String)>, CodeError> {
    Ok(reveal_codes(app, user, id).await?.into_iter().map(|c| (c.sku, c.code)).collect())
}

/// One code shown to its owner, with what became of it (docs/code-pools.md, "Redemption",
/// "Expiry"). Never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct RevealedCode {
    pub sku: Sku,
    pub code: String,
    pub state: CodeState,
    /// The code's expire time, if it has one (shown whatever its state).
    pub expires_at_ms: Option<i64>,
}

impl std::fmt::Debug for RevealedCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevealedCode").field("sku", &self.sku).field("code", &mask(&self.code)).finish()
    }
}

/// [`reveal`], with each code's state: valid (until its expire time), redeemed, or expired.
pub async fn reveal_codes(app: &App, user: &UserId, id: &OrderId) -> Result<Vec<RevealedCode>, CodeError> {
    use super::lookup::{get_owned, OrderError};
    let o = match get_owned(app, user, id).await {
        Ok(o) => o,
        Err(OrderError::NotFound) => return Err(CodeError::OrderNotFound),
        Err(OrderError::Store(e)) => return Err(CodeError::Store(e)),
        Err(
            OrderError::Invalid(_) | OrderError::Refused(_) | OrderError::PaymentProcessing | OrderError::StaleDecision,
        ) => return Err(CodeError::OrderNotFound),
    };
    if !o.status.is_paid_or_later() {
        return Err(CodeError::NotPaid(o.status.as_str()));
    }
    if o.review.as_ref().and_then(|r| r.approved) == Some(true) {
        return Err(CodeError::CodesVoided);
    }
    if o.status == crate::domain::order::OrderStatus::RefundRequested {
        return Err(CodeError::RefundPending);
    }
    if let Some(codes) = supplier::reveal(app, &o).await? {
        return Ok(codes);
    }
    let Some(r) = app.locks.get_reservation(&ReservationId::for_order(id)).await? else {
        return Ok(Vec::new());
    };
    let lines: Vec<_> = r.lines.iter().filter(|l| l.holds_codes()).collect();
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    // Codes are shown from a SOLD lock only (docs/code-pools.md, "Reveal and refund"): a paid
    // order's lock is FROZEN until its confirm runs; RELEASED codes went back to the pool,
    // RESTOCKED ones were refunded. The first reveal is recorded on the lock, conditional on
    // SOLD and on no refund having withdrawn them: from then on they never return to the pool
    // (a SOLD lock is only ever restocked, and a restock leaves codes sold) and the buyer's
    // refund is refused.
    let early = crate::mutant!("p2-1-shown-code-resold") && r.status == LockStatus::Frozen;
    match r.status {
        LockStatus::Sold => {}
        LockStatus::Frozen if early => {}
        LockStatus::Frozen => return Err(CodeError::NotReady),
        LockStatus::Released | LockStatus::Restocked => return Err(CodeError::CodesReturned),
    }
    // a fate already recorded is final (review security-3 I-10): a repeat reveal writes nothing
    let known = early || matches!(r.code_fate, Some(CodeFate::Revealed | CodeFate::Redeemed | CodeFate::Voided));
    let fate = match known {
        true => r.code_fate.or(Some(CodeFate::Revealed)),
        false => app.code_pools.settle_codes(&r.id, CodeFate::Revealed).await?,
    };
    // voided: refunded after the reveal by an operator (an approved review answered above);
    // the buyer saw them already, they stay shown but are never redeemed
    match fate {
        Some(CodeFate::Revealed | CodeFate::Redeemed | CodeFate::Voided) => {}
        Some(CodeFate::Withdrawn) => return Err(CodeError::CodesWithdrawn),
        None => return Err(CodeError::CodesReturned),
    }
    let now = clock::now_ms();
    let keys = keyring(app).await?;
    let mut out = Vec::new();
    for l in lines {
        let slots: Vec<(u16, u64)> = l
            .codes
            .iter()
            .flatten()
            .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (g.shard, p)))
            .collect();
        for (at, c) in slots.iter().zip(app.code_pools.read_codes(&l.sku, &slots).await?) {
            let c = c.ok_or_else(|| anyhow::anyhow!("order {id}: a code slot of {} is empty", l.sku))?;
            let code = open_checked(app, &keys, id, &l.sku, *at, &c).await?;
            let state = CodeState::of(c.redeemed_at_ms, c.expires_at_ms, now);
            out.push(RevealedCode { sku: l.sku.clone(), code, state, expires_at_ms: c.expires_at_ms });
        }
    }
    Ok(out)
}

/// Opens the code stored at slot `at` for a reveal (security review L6). The seal binds the
/// SKU, the fingerprint and (v2) the slot the code was uploaded to; a v2 code read at another
/// slot is accepted only if it legitimately left that slot — given back, or its lock released
/// (a release re-appends the same sealed code at the tail, and the functions that release hold
/// no key to re-seal it). A code that does not open, whose fingerprint is not its own, or that
/// sits in a slot it was copied to is refused with an error log; it is never shown.
async fn open_checked(
    app: &App,
    keys: &Keyring,
    order: &OrderId,
    sku: &Sku,
    at: (u16, u64),
    c: &StoredCode,
) -> Result<String, CodeError> {
    let refuse = |why: String| {
        tracing::error!(order_id = %order, sku = %sku, shard = at.0, pos = at.1, why = why.as_str(),
            "a stored code was refused at reveal (tampered or misplaced); nothing shown");
        CodeError::Tampered
    };
    // a v3 code's data key, from the key service under this SKU's encryption context: one made
    // for another SKU (or under another key) is refused by the key service itself
    let data_key = match wrapped_key(c).map_err(|e| refuse(e.to_string()))? {
        None => None,
        Some(wrapped) => {
            let service = app.code_key_service.as_ref().ok_or_else(|| {
                CodeError::Keys(anyhow::anyhow!("a code sealed under KMS, and no KMS key is configured"))
            })?;
            match service.decrypt_data_key(&wrapped, &key_context(sku)).await.map_err(CodeError::Keys)? {
                Some(k) => Some(k),
                None => return Err(refuse("the key service refused its data key for this SKU".into())),
            }
        }
    };
    let opened = keys.open_at_with(sku, at, c, data_key.as_ref()).map_err(|e| refuse(e.to_string()))?;
    if let Some((shard, pos)) = opened.relocated {
        if !app.code_pools.code_left_slot(sku, shard, pos).await? {
            return Err(refuse(format!(
                "sealed for slot {shard}#{pos}, which still holds it (no release or give-back moved it)"
            )));
        }
    }
    Ok(opened.code)
}

/// Most positions one repair pass looks at per shard.
const REPAIR_PAGE: u64 = 1000;

/// Reconcile's repair of a code pool (docs/code-pools.md, "Crashes"): positions a checkout
/// claimed and then neither bound (its freeze) nor gave back (it died in between) return to
/// the pool. Only shards whose head has not moved for `quiet_ms` are looked at — any claim
/// older than that has long finished, one way or the other — and only positions past the
/// shard's `checked` mark, so a pass reads what was claimed since the last one. The number of
/// codes returned.
pub async fn repair_orphans(app: &App, meta: &SkuMeta, now_ms: i64, quiet_ms: i64) -> anyhow::Result<u64> {
    let slots = meta.shard_slots();
    let rings = app.code_pools.read_rings(&meta.sku, slots).await?;
    let mut returned = 0;
    for (i, g) in rings.iter().enumerate() {
        let shard = i as u16;
        if g.head <= g.checked || now_ms - g.claimed_at_ms < quiet_ms {
            continue;
        }
        let to = g.head.min(g.checked + REPAIR_PAGE);
        let orphans = app.code_pools.unbound_codes(&meta.sku, shard, g.checked, to).await?;
        if !orphans.is_empty() {
            let ranges = crate::domain::codes::ranges_of(shard, &orphans);
            // one transaction per ≤ 20 ranges of ≤ 40 positions in all
            for chunk in orphans_chunks(&ranges) {
                if !app.code_pools.give_back_codes(&meta.sku, &chunk).await? {
                    return Ok(returned);
                }
                returned += chunk.iter().map(|c| u64::from(c.count)).sum::<u64>();
            }
            tracing::warn!(sku = %meta.sku, shard, codes = orphans.len(), "reconcile returned claimed, unbound codes");
        }
        app.code_pools.mark_checked(&meta.sku, shard, g.checked, to).await?;
    }
    if returned > 0 {
        app.count(names::REPAIRS, returned);
    }
    Ok(returned)
}

/// Ranges split into give-back transactions of at most 40 positions (two items each).
fn orphans_chunks(ranges: &[crate::domain::reservation::CodeRange]) -> Vec<Vec<crate::domain::reservation::CodeRange>> {
    let mut out = Vec::new();
    let mut chunk: Vec<crate::domain::reservation::CodeRange> = Vec::new();
    let mut n = 0;
    for g in ranges {
        let mut g = *g;
        while g.count > 0 {
            let take = g.count.min(40 - n);
            chunk.push(crate::domain::reservation::CodeRange { count: take, ..g });
            g.from += u64::from(take);
            g.count -= take;
            n += take;
            if n == 40 {
                out.push(std::mem::take(&mut chunk));
                n = 0;
            }
        }
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

/// A pool's counts for its admins (codes themselves are never shown here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSummary {
    pub sku: Sku,
    pub uploaded: i64,
    /// Retired unsold because they expired.
    pub expired: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    pub low_water: i64,
}

pub async fn summary(app: &App, sku: &Sku) -> Result<PoolSummary, CodeError> {
    let meta = pool_meta(app, sku).await?;
    let slots = meta.shard_slots();
    let (counts, rings) = tokio::join!(app.shards.read_shards(sku, slots), app.code_pools.read_rings(sku, slots));
    let (counts, rings) = (counts?, rings?);
    Ok(PoolSummary {
        sku: sku.clone(),
        uploaded: rings.iter().map(|g| g.uploaded as i64).sum(),
        expired: rings.iter().map(|g| g.expired as i64).sum(),
        available: counts.iter().map(|c| c.available).sum(),
        locked: counts.iter().map(|c| c.locked).sum(),
        sold: counts.iter().map(|c| c.sold).sum(),
        low_water: app.config.code_pool_low_water,
    })
}

#[cfg(test)]
mod kms_tests;
