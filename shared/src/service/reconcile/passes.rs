//! The paged passes of a worker's items: each reads its index page after page, acts on every
//! entry, and stops when the index is done (`None`) or the invocation's budget is spent (the
//! cursor to go on from, which becomes the item's continuation).

use super::*;

/// One invocation's budget: when it started and how long it may run.
pub(super) type Budget = (Instant, Duration);

/// Where a pass goes after a page whose next cursor is `next`: `Err` stops it (done, or out of
/// budget with the cursor to go on from), `Ok` reads the next page.
fn after_page(next: Option<String>, (started, budget): Budget) -> Result<Option<String>, Option<String>> {
    match next {
        None => Err(None),
        Some(c) if started.elapsed() > budget => Err(Some(c)),
        Some(c) => Ok(Some(c)),
    }
}

/// Stale FROZEN locks of one `frozen-by-age` bucket: each resolved by its order.
pub(super) async fn stale_lock_pages(
    app: &App,
    (bucket, before_ms, mut cursor): (u32, i64, Option<String>),
    within: Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app.sweep.frozen_page(bucket, before_ms, cursor.as_deref(), LOCK_PAGE).await?;
        stale_locks(app, &page.items, rep).await?;
        match after_page(page.next, within) {
            Ok(c) => cursor = c,
            Err(stop) => return Ok(stop),
        }
    }
}

/// Pending orders of one `pending-by-deadline` bucket due before `before_s`: each decided at
/// its deadline.
pub(super) async fn overdue_order_pages(
    app: &App,
    (bucket, before_s, mut cursor): (u32, i64, Option<String>),
    within: Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app.sweep.pending_page(bucket, before_s, cursor.as_deref(), ORDER_PAGE).await?;
        overdue_orders(app, &page.items, rep).await;
        match after_page(page.next, within) {
            Ok(c) => cursor = c,
            Err(stop) => return Ok(stop),
        }
    }
}

/// Shipped orders whose auto-completion is due: each completed.
pub(super) async fn shipped_due_pages(
    app: &App,
    (bucket, before_s, mut cursor): (u32, i64, Option<String>),
    within: Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app.sweep.orders_page(OrderIndex::Shipped, bucket, before_s, cursor.as_deref(), ORDER_PAGE).await?;
        for id in &page.items {
            auto_complete(app, id, rep).await;
        }
        match after_page(page.next, within) {
            Ok(c) => cursor = c,
            Err(stop) => return Ok(stop),
        }
    }
}

/// Completes a shipped order the buyer never confirmed.
async fn auto_complete(app: &App, id: &OrderId, rep: &mut ReconcileReport) {
    match after_sale::apply(app, Caller::Admin, id, Change::AutoComplete).await {
        Ok(_) => rep.orders_completed += 1,
        // confirmed by the buyer, returned, or not due after all: nothing to do
        Err(
            OrderError::Invalid(_)
            | OrderError::NotFound
            | OrderError::Refused(_)
            | OrderError::PaymentProcessing
            | OrderError::StaleDecision,
        ) => {}
        Err(OrderError::Store(e)) => {
            rep.errors += 1;
            tracing::warn!(order_id = %id, error = format!("{e:#}"), "auto-complete failed");
        }
    }
}

/// Orders with refunds requested before `before_ms` and never issued: each re-driven (and a
/// refunded SUPPLIER order's bookings looked at, as it is read anyway).
pub(super) async fn unissued_refund_pages(
    app: &App,
    (bucket, before_ms, mut cursor): (u32, i64, Option<String>),
    within: Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app
            .sweep
            .orders_page(OrderIndex::RefundsRequested, bucket, before_ms, cursor.as_deref(), ORDER_PAGE)
            .await?;
        for id in &page.items {
            let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else { continue };
            match refunds::redrive(app, &o, before_ms).await {
                Ok(n) => rep.refunds_redriven += n,
                Err(e) => {
                    rep.errors += 1;
                    tracing::warn!(order_id = %id, error = format!("{e:#}"), "refund re-drive failed");
                }
            }
            held_bookings(app, &o, rep).await;
        }
        match after_page(page.next, within) {
            Ok(c) => cursor = c,
            Err(stop) => return Ok(stop),
        }
    }
}

/// Invariant 1 of every SKU after `cursor`, a page at a time.
pub(super) async fn sku_invariant_pages(
    app: &App,
    mut cursor: Option<String>,
    within: Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app.sweep.skus_page(cursor.as_deref(), SKU_PAGE).await?;
        let v = sku_invariants(app, &page.items, rep).await?;
        report_violations(app, &v, rep);
        match after_page(page.next, within) {
            Ok(c) => cursor = c,
            Err(stop) => return Ok(stop),
        }
    }
}

/// Each SKU's journal against its counters: the SKUs the last invocation left part-read
/// (`pending`) first, then the pages after `cursor`. Answers the continuation, if any.
pub(super) async fn sku_journal_pages(
    app: &App,
    (mut cursor, pending, last_page): (Option<String>, &[String], bool),
    (started, budget): Budget,
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<WorkItem>> {
    let mut skus: Vec<Sku> = pending.iter().map(|s| Sku::from_stored(s)).collect::<Result<_, _>>()?;
    let mut last = last_page;
    let mut fetch = skus.is_empty();
    loop {
        if fetch {
            let page = app.sweep.skus_page(cursor.as_deref(), JOURNAL_SKU_PAGE).await?;
            skus = page.items;
            last = page.next.is_none();
            cursor = page.next;
        }
        fetch = true;
        let stopped = sku_journals(app, &skus, started, budget, rep).await?;
        if !stopped.is_empty() {
            let pending = stopped.iter().map(|s| s.to_string()).collect();
            return Ok(Some(WorkItem::SkuJournals { cursor, pending, last_page: last }));
        }
        if last {
            return Ok(None);
        }
        if started.elapsed() > budget {
            return Ok(Some(WorkItem::SkuJournals { cursor, pending: Vec::new(), last_page: false }));
        }
    }
}
