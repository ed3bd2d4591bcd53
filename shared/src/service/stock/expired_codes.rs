//! Expired codes met by a checkout's claim (docs/code-pools.md, "Expiry"): the claim of a code
//! pool line is the stock service's, so retiring the expired codes it claimed is too.

use crate::clock;
use crate::context::App;
use crate::domain::Sku;
use crate::ports::{AdjustRejection, Adjustment};
use crate::telemetry::names;

/// Most expired codes one checkout retires before it answers contention (each round of its claim
/// costs three requests; a larger expired stretch is retired by the checkouts that follow).
pub const MAX_RETIRED_PER_CHECKOUT: u32 = 200;

/// Of the positions `from..from + count` a checkout just claimed on `shard` of a ring holding
/// expiring codes, those still valid now; the expired ones are retired from the pool's counters
/// in one transaction (docs/code-pools.md, "Expiry"). A retirement that cannot be written leaves
/// them claimed and unbound: reconcile's orphan repair puts them back, and the next claim of them
/// retires them.
pub async fn unexpired(app: &App, sku: &Sku, shard: u16, from: u64, count: u32) -> anyhow::Result<Vec<u64>> {
    use crate::domain::codes::{lifecycle::valid_at, CodeRetire};
    let positions: Vec<u64> = (from..from + u64::from(count)).collect();
    let slots: Vec<(u16, u64)> = positions.iter().map(|p| (shard, *p)).collect();
    let now = clock::now_ms();
    let codes = app.code_pools.read_codes(sku, &slots).await?;
    let (kept, expired): (Vec<(u64, _)>, Vec<(u64, _)>) =
        positions.into_iter().zip(codes).partition(|(_, c)| c.as_ref().is_none_or(|c| valid_at(c.expires_at_ms, now)));
    let expired: Vec<u64> = expired.into_iter().map(|(p, _)| p).collect();
    if expired.is_empty() {
        return Ok(kept.into_iter().map(|(p, _)| p).collect());
    }
    let n = expired.len() as i64;
    let adjustment = Adjustment {
        sku: sku.clone(),
        // positions are never reused: the first one names the retirement for good
        adjustment_id: format!("codes-expired:{shard}:{}:{n}", expired[0]),
        delta: -n,
        reason: "codes expired".into(),
        actor: None,
        at_ms: now,
        pieces: vec![(shard, -n)],
    };
    let retire = CodeRetire { adjustment, shard, positions: expired, now_ms: now };
    for attempt in 1..=3 {
        match app.code_pools.retire_codes(&retire).await? {
            Ok(()) | Err(AdjustRejection::Duplicate { .. }) => {
                app.count(names::CODES_EXPIRED, n as u64);
                tracing::info!(sku = %sku, shard, codes = n, "expired codes retired from the pool");
                break;
            }
            Err(e) => {
                tracing::warn!(sku = %sku, shard, ?e, attempt, "expired codes not retired yet");
                super::super::backoff(attempt).await;
            }
        }
    }
    Ok(kept.into_iter().map(|(p, _)| p).collect())
}
