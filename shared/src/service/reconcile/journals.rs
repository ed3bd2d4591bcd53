//! The stock journal of each SKU checked against its counters, from its checkpoint.

use super::*;

/// SKUs whose journal is checked per page.
pub const JOURNAL_SKU_PAGE: usize = 20;
/// Journal entries read per Query (~250 bytes each: a page is at most ~250 KB).
pub const JOURNAL_ENTRY_PAGE: usize = 1000;

/// The stock journal of each SKU against its counters, from the SKU's checkpoint
/// ([`journal::Checkpoint`]: only entries written since the last check are read), the SKUs of
/// a page [`PAGE_CONCURRENCY`] at a time. A journal that has not caught up with the last write
/// (stream lag) is looked at again a moment later; a broken one is an invariant violation and
/// a `JournalMismatch` metric. The budget is honoured inside a SKU: the SKUs it stopped in
/// are returned (their progress saved in their checkpoints).
pub(super) async fn sku_journals(
    app: &App,
    skus: &[Sku],
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Vec<Sku>> {
    use futures::StreamExt;
    let metas = app.catalogue.get_skus(skus).await?;
    // owned, so the futures hold no borrow of a local (the worker's future stays `Send`)
    let checks: Vec<(usize, crate::ports::SkuMeta)> =
        skus.iter().enumerate().filter_map(|(i, sku)| metas.get(sku).map(|m| (i, m.clone()))).collect();
    let mut results = futures::stream::iter(checks.into_iter().map(|(i, meta)| async move {
        let mut own = ReconcileReport::default();
        let verdict = sku_journal(app, &meta, started, budget, &mut own).await;
        (i, verdict, own)
    }))
    .buffer_unordered(PAGE_CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    results.sort_by_key(|(i, _, _)| *i);
    let mut stopped = Vec::new();
    for (i, verdict, own) in results {
        rep.journal_entries_read += own.journal_entries_read;
        let Some(verdict) = verdict? else {
            stopped.push(skus[i].clone());
            continue;
        };
        let sku = &skus[i];
        match verdict {
            journal::Verdict::Holds => rep.journals_held += 1,
            journal::Verdict::Incomplete => rep.journals_incomplete += 1,
            journal::Verdict::Behind => rep.journals_behind += 1,
            journal::Verdict::Broken { journal, counters } => {
                app.count(names::JOURNAL_MISMATCH, 1);
                tracing::error!(sku = %sku, ?journal, ?counters, "stock journal does not sum to the counters");
                rep.violations
                    .push(format!("JournalMismatch {{ sku: {sku}, journal: {journal:?}, counters: {counters:?} }}"));
            }
        }
    }
    Ok(stopped)
}

/// One SKU's journal from its checkpoint; `None` when the budget ran out first (what was read
/// is saved in the checkpoint, and the next invocation goes on from there).
pub(super) async fn sku_journal(
    app: &App,
    meta: &crate::ports::SkuMeta,
    started: Instant,
    budget: Duration,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<journal::Verdict>> {
    let sku = &meta.sku;
    // the partitions of the product shards' entries, which are what the check sums
    let spread = journal::spread(meta.shard_slots());
    let stored = app.journal.checkpoint(sku).await?;
    let expected = stored.as_ref().map(|c| c.version);
    let mut cp = stored.unwrap_or_default();
    let original = cp.clone();
    let mut verdict = None;
    let mut read_any = false;
    'looks: for look in 0..3 {
        if look > 0 {
            if started.elapsed() + Duration::from_secs(1) > budget {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // the counters first: the checkpoint may then settle up to this moment (`settle`)
        let read_ms = clock::now_ms();
        let shards = app.shards.read_shards(sku, meta.slots).await?;
        let mut after = cp.read_from().map(str::to_owned);
        loop {
            let (page, next) = app.journal.since(sku, spread, after.as_deref(), JOURNAL_ENTRY_PAGE).await?;
            rep.journal_entries_read += page.len();
            read_any |= !page.is_empty();
            cp.apply(&page, shards.len(), clock::now_ms());
            match next {
                Some(n) => after = Some(n),
                None => break,
            }
            if started.elapsed() > budget {
                verdict = None;
                break 'looks;
            }
        }
        cp.settle(&shards, read_ms);
        let v = cp.verdict(&shards);
        let behind = v == journal::Verdict::Behind;
        verdict = Some(v);
        if !behind {
            break;
        }
    }
    if read_any && cp != original {
        cp.version = expected.unwrap_or(0) + 1;
        // lost to a concurrent check of the same SKU: its checkpoint is as good as this one
        app.journal.put_checkpoint(sku, &cp, expected).await?;
    }
    Ok(verdict)
}
