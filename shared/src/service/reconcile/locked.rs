//! `locked = Σ FROZEN` per SKU at any scale: one chain of items carrying the sums of groups.

use super::*;
use crate::domain::CampaignId;

/// The group of the `locked = Σ FROZEN` sums a SKU (or calendar cell) falls in (FNV-1a).
pub fn lock_group(sku: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sku.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % LOCK_GROUPS as u64) as usize
}

/// `locked = Σ FROZEN` per SKU at any scale, as one chain of items carrying [`LockSums`]
/// (bounded: a few sums per group). A run pages through every FROZEN lock (`frozen-by-age`,
/// every bucket), adding each line's units to its SKU's group; then
/// through every SKU, adding the `locked` of each SKU not written since a minute before the
/// run started (its journal's newest entry; no entry: never written since the journal
/// exists) to its group. Such a SKU's locks were all made before the run and none moved while
/// it read them, so its sums are exact; a group holding a SKU written meanwhile is not judged.
/// A group whose sums disagree is looked at again in a focused run that sums its SKUs one by
/// one: a SKU still quiet whose `locked` differs is a violation (`LockedMismatch`).
///
/// Campaign items ride on the same pages: each FROZEN lock's campaign pieces are added to
/// their item's group (`<campaign>/<sku>`), and a third phase pages the campaigns, adding the
/// quota shards' `locked` of each item whose SKU is quiet (quota writes are journalled on the
/// SKU's journal too). A disagreeing group is summed per item in the focused run; a quiet item
/// that differs is a `CampaignQuota` violation.
pub(super) async fn locked_totals(
    app: &App,
    mut s: LockSums,
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<LockSums>> {
    if s.phase == 0 {
        s = first_phase(s);
    }
    // a first run sums every group; a focused one only the groups of `focus` / `q_focus`
    let full = s.focus.is_empty() && s.q_focus.is_empty();
    let mut pages = 0;
    loop {
        // one page at least: each invocation moves on
        if pages > 0 && started.elapsed() > budget {
            return Ok(Some(s));
        }
        pages += 1;
        match s.phase {
            1 => frozen_locks_page(app, &mut s, full, rep).await?,
            3 => {
                if campaign_items(app, &mut s, full, rep).await? {
                    return finish(s, full, rep);
                }
            }
            // a focused run for campaign items only
            _ if !full && s.focus.is_empty() => (s.phase, s.cursor) = (3, None),
            _ => skus_page(app, &mut s, full, rep).await?,
        }
    }
}

/// A new run's sums, all zero, keeping the groups it is to focus on.
fn first_phase(s: LockSums) -> LockSums {
    LockSums {
        phase: 1,
        started_ms: clock::now_ms(),
        frozen: vec![0; LOCK_GROUPS],
        locked: vec![0; LOCK_GROUPS],
        quiet: vec![0; LOCK_GROUPS],
        q_frozen: vec![0; LOCK_GROUPS],
        q_locked: vec![0; LOCK_GROUPS],
        q_quiet: vec![0; LOCK_GROUPS],
        focus: s.focus,
        q_focus: s.q_focus,
        ..Default::default()
    }
}

/// Whether group `g` is one of `focus`.
fn in_focus(focus: &[u32], g: usize) -> bool {
    focus.contains(&(g as u32))
}

/// Phase 1, one page: every FROZEN lock, whatever its age (a SKU never written since the
/// journal began is judged too, and its locks may be new), added to the sums; past the last
/// bucket, on to phase 2.
async fn frozen_locks_page(app: &App, s: &mut LockSums, full: bool, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    use futures::StreamExt;
    if s.bucket >= INDEX_BUCKETS {
        (s.phase, s.cursor) = (2, None);
        return Ok(());
    }
    let page = app.sweep.frozen_page(s.bucket, i64::MAX, s.cursor.as_deref(), LOCKED_LOCK_PAGE).await?;
    let chunks: Vec<Vec<ReservationId>> = page.items.chunks(100).map(<[_]>::to_vec).collect();
    let mut reads =
        futures::stream::iter(chunks.into_iter().map(|c| async move { app.locks.get_reservations(&c).await }))
            .buffer_unordered(PAGE_CONCURRENCY);
    while let Some(locks) = reads.next().await {
        let locks = locks?;
        rep.locked_locks_read += locks.len();
        for r in locks.iter().filter(|r| r.status == LockStatus::Frozen) {
            add_frozen_lock(s, r, full);
        }
    }
    drop(reads);
    match page.next {
        None => (s.bucket, s.cursor) = (s.bucket + 1, None),
        c => s.cursor = c,
    }
    Ok(())
}

/// Adds what one FROZEN lock holds to its SKUs' groups and its campaign items' groups (a
/// focused run: to the SKUs and items of the groups in focus).
fn add_frozen_lock(s: &mut LockSums, r: &crate::domain::reservation::Reservation, full: bool) {
    // as `check_stock` counts them: pay-time lines hold nothing while FROZEN; calendar cells
    // are not SKUs of the index (not summed there either)
    for l in r.lines.iter().filter(|l| !l.at_payment) {
        for c in l.cells().into_iter().filter(|c| c.cell.calendar_parent().is_none()) {
            let g = lock_group(c.cell.as_str());
            if full {
                s.frozen[g] += i64::from(c.quantity);
            } else if in_focus(&s.focus, g) {
                *s.by_sku.entry(c.cell.to_string()).or_default() += i64::from(c.quantity);
            }
        }
    }
    // a campaign line holds its quota pieces while FROZEN, pay-time or not
    for l in &r.lines {
        let Some(cl) = &l.campaign else { continue };
        let key = item_key(&cl.campaign_id, &l.sku);
        let g = lock_group(&key);
        let q: i64 = cl.pieces.iter().map(|p| i64::from(p.quantity)).sum();
        if full {
            s.q_frozen[g] += q;
        } else if in_focus(&s.q_focus, g) {
            *s.q_by_item.entry(key).or_default() += q;
        }
    }
}

/// Phase 2, one page of SKUs: each quiet SKU's `locked` added to its group (a focused run:
/// compared with its FROZEN sum); past the last page, on to the campaign items (phase 3).
async fn skus_page(app: &App, s: &mut LockSums, full: bool, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    use futures::StreamExt;
    let page = app.sweep.skus_page(s.cursor.as_deref(), SKU_PAGE).await?;
    let skus: Vec<Sku> =
        page.items.into_iter().filter(|k| full || in_focus(&s.focus, lock_group(k.as_str()))).collect();
    let metas: Vec<crate::ports::SkuMeta> = app.catalogue.get_skus(&skus).await?.into_values().collect();
    let reads = futures::stream::iter(metas.into_iter().map(|m| async move {
        let shards = app.shards.read_shards(&m.sku, m.slots).await?;
        let spread = crate::domain::journal::spread(m.shard_slots());
        let (newest, _) = app.journal.for_sku(&m.sku, spread, None, 1).await?;
        let locked: i64 = shards.iter().map(|c| c.locked).sum();
        anyhow::Ok((m.sku.clone(), locked, newest.first().map(|e| e.at_ms)))
    }))
    .buffer_unordered(PAGE_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let mut violations = Vec::new();
    for read in reads {
        let (sku, locked, last_write) = read?;
        violations.extend(add_sku_locked(s, sku, locked, last_write, full, rep));
    }
    report_violations(app, &violations, rep);
    match page.next {
        Some(next) => s.cursor = Some(next),
        // the SKUs are done: the campaign items next
        None => (s.phase, s.cursor) = (3, None),
    }
    Ok(())
}

/// Adds a quiet SKU's `locked` to its group, or (a focused run) judges it against its FROZEN
/// sum; a SKU written since a minute before the run marks its group moved (not judged).
fn add_sku_locked(
    s: &mut LockSums,
    sku: Sku,
    locked: i64,
    last_write: Option<i64>,
    full: bool,
    rep: &mut ReconcileReport,
) -> Option<Violation> {
    let g = lock_group(sku.as_str());
    if last_write.is_some_and(|t| t >= s.started_ms - LOCKED_QUIET_MS) {
        rep.locked_skus_moved += 1;
        if !s.moved.contains(&(g as u32)) {
            s.moved.push(g as u32);
        }
        return None;
    }
    if full {
        s.locked[g] += locked;
        s.quiet[g] += 1;
        return None;
    }
    rep.locked_skus_judged += 1;
    let frozen = s.by_sku.get(sku.as_str()).copied().unwrap_or(0);
    (frozen != locked).then_some(Violation::LockedMismatch { sku, locked, frozen })
}

/// The key of a campaign item in the sums.
fn item_key(campaign: &CampaignId, sku: &Sku) -> String {
    format!("{campaign}/{sku}")
}

/// The end of a run: a first run's disagreeing groups (SKUs and campaign items) make a focused
/// run; a focused run ends the chain.
fn finish(s: LockSums, full: bool, rep: &mut ReconcileReport) -> anyhow::Result<Option<LockSums>> {
    rep.locked_runs += 1;
    if !full {
        return Ok(None);
    }
    let clean = |g: usize| !s.moved.contains(&(g as u32));
    rep.locked_skus_judged += (0..LOCK_GROUPS).filter(|&g| clean(g)).map(|g| s.quiet[g] as usize).sum::<usize>();
    let suspects: Vec<u32> =
        (0..LOCK_GROUPS).filter(|&g| clean(g) && s.frozen[g] != s.locked[g]).map(|g| g as u32).collect();
    let q_clean = |g: usize| !s.q_moved.contains(&(g as u32));
    rep.locked_items_judged += (0..LOCK_GROUPS)
        .filter(|&g| q_clean(g))
        .map(|g| s.q_quiet.get(g).copied().unwrap_or(0) as usize)
        .sum::<usize>();
    let at = |v: &Vec<i64>, g: usize| v.get(g).copied().unwrap_or(0);
    let q_suspects: Vec<u32> = (0..LOCK_GROUPS)
        .filter(|&g| q_clean(g) && at(&s.q_frozen, g) != at(&s.q_locked, g))
        .map(|g| g as u32)
        .collect();
    if suspects.is_empty() && q_suspects.is_empty() {
        return Ok(None);
    }
    rep.locked_groups_suspect += suspects.len() + q_suspects.len();
    tracing::warn!(
        groups = suspects.len(),
        item_groups = q_suspects.len(),
        "locked = Σ FROZEN: sums disagree; looking again per SKU / campaign item"
    );
    Ok(Some(LockSums {
        focus: suspects.into_iter().take(LOCKED_FOCUS_MAX).collect(),
        q_focus: q_suspects.into_iter().take(LOCKED_FOCUS_MAX).collect(),
        ..Default::default()
    }))
}

/// One page of phase 3: campaigns `cursor..cursor + SKU_PAGE`, each item's quota shards
/// (consistent) added to its group (a first run) or compared with its FROZEN pieces (a focused
/// run). `true` when the campaigns are done.
async fn campaign_items(app: &App, s: &mut LockSums, full: bool, rep: &mut ReconcileReport) -> anyhow::Result<bool> {
    use futures::StreamExt;
    let done: usize = s.cursor.as_deref().and_then(|c| c.parse().ok()).unwrap_or(0);
    let ids = app.campaigns.list_campaigns().await?;
    let page: Vec<CampaignId> = ids.iter().skip(done).take(SKU_PAGE).cloned().collect();
    let mut items = Vec::new();
    for id in &page {
        let Some(c) = app.campaigns.get_campaign(id, true).await? else { continue };
        for i in c.items {
            let key = item_key(&c.id, &i.sku);
            let g = lock_group(&key);
            if full || s.q_focus.contains(&(g as u32)) {
                items.push((c.id.clone(), i.sku.clone(), i.quota_shards(), key, g));
            }
        }
    }
    let reads = futures::stream::iter(items.into_iter().map(|(cid, sku, shards, key, g)| async move {
        let counts = app.campaigns.read_quota_shards(&cid, &sku, shards, true).await?;
        let (newest, _) = app.journal.for_sku(&sku, crate::domain::journal::spread(shards), None, 1).await?;
        anyhow::Ok((cid, sku, key, g, counts.iter().map(|c| c.locked).sum::<i64>(), newest.first().map(|e| e.at_ms)))
    }))
    .buffer_unordered(PAGE_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let mut violations = Vec::new();
    for read in reads {
        let (campaign, sku, key, g, locked, last_write) = read?;
        if last_write.is_some_and(|t| t >= s.started_ms - LOCKED_QUIET_MS) {
            rep.locked_items_moved += 1;
            if !s.q_moved.contains(&(g as u32)) {
                s.q_moved.push(g as u32);
            }
            continue;
        }
        if full {
            s.q_locked[g] += locked;
            s.q_quiet[g] += 1;
        } else {
            rep.locked_items_judged += 1;
            let frozen = s.q_by_item.get(&key).copied().unwrap_or(0);
            if frozen != locked {
                violations.push(Violation::CampaignQuota {
                    campaign,
                    sku,
                    detail: format!("locked = {locked} but FROZEN campaign pieces hold {frozen}"),
                });
            }
        }
    }
    report_violations(app, &violations, rep);
    let next = done + page.len();
    s.cursor = Some(next.to_string());
    Ok(next >= ids.len())
}
