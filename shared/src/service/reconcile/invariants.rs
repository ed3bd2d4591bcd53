//! Invariant 1 (`total = available + locked + sold`) and the code pools' ring identity over
//! settled snapshots: a violation must survive a second look.

use super::*;

/// Settled snapshots of `skus`: metadata and counters read twice, a SKU whose counters or
/// version moved in between skipped as inconclusive (a write in flight), so live traffic does
/// not raise false alarms.
pub(super) async fn settled(app: &App, skus: &[Sku], rep: &mut ReconcileReport) -> anyhow::Result<Vec<SkuSnapshot>> {
    use futures::StreamExt;
    let metas = app.catalogue.get_skus(skus).await?;
    let reads = |slots: Vec<(Sku, u16)>| {
        futures::stream::iter(slots.into_iter().map(|(sku, n)| async move { app.shards.read_shards(&sku, n).await }))
            .buffered(PAGE_CONCURRENCY)
            .collect::<Vec<_>>()
    };
    let metas: Vec<_> = metas.values().collect();
    let before = reads(metas.iter().map(|m| (m.sku.clone(), m.slots)).collect()).await;
    let again = app.catalogue.get_skus(skus).await?;
    let after = reads(metas.iter().map(|m| (m.sku.clone(), m.slots)).collect()).await;
    let mut out = Vec::new();
    for ((m, shards), after) in metas.into_iter().zip(before).zip(after) {
        let (shards, after) = (shards?, after?);
        let version = m.version;
        if after == shards && again.get(&m.sku).is_some_and(|a| a.version == version) {
            out.push(SkuSnapshot { sku: m.sku.clone(), stocked: m.stocked, shards, per_user_limit: m.per_user_limit });
        } else {
            rep.skus_inconclusive += 1;
        }
    }
    Ok(out)
}

/// Invariant 1 over one page of SKUs: a violation must survive a second look a moment later.
pub(super) async fn sku_invariants(
    app: &App,
    skus: &[Sku],
    rep: &mut ReconcileReport,
) -> anyhow::Result<Vec<Violation>> {
    // code pools first: codes a dead checkout claimed go back (docs/code-pools.md, "Crashes")
    let metas = app.catalogue.get_skus(skus).await?;
    // a restock's backorder fill stopped half-way is finished here (docs/inventory-models.md,
    // "Backorders (oversell allowed)")
    for m in metas.values().filter(|m| crate::domain::kind::Kind::of(&m.model) == crate::domain::kind::Kind::Backorder)
    {
        crate::service::stock::backorders::fill(app, &m.sku).await?;
    }
    let code_pools: Vec<Sku> = metas
        .values()
        .filter(|m| crate::domain::kind::Stocking::of(&m.model).holds_codes())
        .map(|m| m.sku.clone())
        .collect();
    for m in metas.values().filter(|m| crate::domain::kind::Stocking::of(&m.model).holds_codes()) {
        let quiet = app.config.code_claim_quiet_ms;
        rep.codes_returned += crate::service::codes::repair_orphans(app, m, clock::now_ms(), quiet).await? as usize;
    }
    let identity = |snaps: &[SkuSnapshot]| -> Vec<Violation> {
        check_stock(snaps, &[]).into_iter().filter(|v| !matches!(v, Violation::LockedMismatch { .. })).collect()
    };
    let snaps = settled(app, skus, rep).await?;
    rep.skus_checked += snaps.len();
    // notify-me waitlists (docs/waitlist.md): told buyers whose tokens ran out unused hand their
    // unit to the next in line — the backstop when nothing else touches the SKU
    let free: Vec<Sku> =
        snaps.iter().filter(|s| s.shards.iter().any(|c| c.available > 0)).map(|s| s.sku.clone()).collect();
    crate::service::waitlist::upkeep_all(app, &free).await;
    let first = identity(&snaps);
    let pools: Vec<SkuSnapshot> = snaps.iter().filter(|s| code_pools.contains(&s.sku)).cloned().collect();
    let first = [first, ring_identity(app, &pools).await?].concat();
    if first.is_empty() {
        return Ok(first);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let suspects: Vec<Sku> = snaps.iter().map(|s| s.sku.clone()).collect();
    let again = settled(app, &suspects, &mut ReconcileReport::default()).await?;
    let pools: Vec<SkuSnapshot> = again.iter().filter(|s| code_pools.contains(&s.sku)).cloned().collect();
    let second = [identity(&again), ring_identity(app, &pools).await?].concat();
    Ok(first.into_iter().filter(|v| second.contains(v)).collect())
}

/// The code pool identity of settled snapshots (their rings read after the counters). A shard
/// is judged only once its head has been still for the orphan quiet period, or the orphan
/// repair has seen every claimed position bound or given back (review protocol-2 #14): a
/// claim in flight, or one a dead checkout (or a retried, non-idempotent claim) left behind,
/// moves the head before the counters, and on a pool with a trickle of sales both looks would
/// see such a difference until the repair returns it.
pub(super) async fn ring_identity(app: &App, pools: &[SkuSnapshot]) -> anyhow::Result<Vec<Violation>> {
    let mut out = Vec::new();
    for s in pools {
        let rings = app.code_pools.read_rings(&s.sku, s.shards.len() as u16).await?;
        let judged = settled_rings(s, &rings, clock::now_ms(), app.config.code_claim_quiet_ms);
        out.extend(crate::domain::invariants::check_ring_identity(&judged, &rings));
    }
    Ok(out)
}

/// `snap` with each shard whose ring is not settled (claims younger than `quiet_ms` not yet
/// seen bound or given back) made to agree with its ring: those shards are not judged.
pub(super) fn settled_rings(
    snap: &SkuSnapshot,
    rings: &[crate::domain::codes::Ring],
    now_ms: i64,
    quiet_ms: i64,
) -> SkuSnapshot {
    let mut judged = snap.clone();
    for (sh, g) in judged.shards.iter_mut().zip(rings) {
        let settled = g.head <= g.checked || now_ms - g.claimed_at_ms >= quiet_ms;
        if !settled {
            sh.available = g.available();
        }
    }
    judged
}
