//! The backstops' arms (review protocol-3 N3, N8, N9): the moves an order still owes after its
//! status moved on — a restock or a booking cancel the event flow lost, an ISSUED refund whose
//! confirmation never came — and the age of held refunds. Each reads its own sparse index, so it
//! reaches exactly the orders that owe something, however the event was lost (a DLQ, a failed
//! stream batch, a supplier down for longer than the queue's receives).

use super::*;
use crate::service::stock;

/// A held refund waiting longer than this is counted at every sweep (`RefundReviewsOverdue`,
/// alarmed): a person owes a decision (docs/payments.md, "Refund review").
pub const REVIEW_ALARM_AFTER_S: i64 = 24 * 3600;

/// One order of the `stock-to-settle` index, read again (the index may lag the table): its held
/// bookings are compensated again, and a restocking order's lock is restocked if it is still
/// SOLD. Once the lock is found RESTOCKED (or RELEASED: an oversold lock's units were never
/// sold), the order is marked settled and leaves the index.
pub(super) async fn settle_stock(app: &App, id: &OrderId, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else { return Ok(()) };
    let quiet_since = clock::now_ms().saturating_sub(app.config.stale_lock_s.saturating_mul(1000));
    // an order still moving is the event flow's; a lagging index's stale entry is nobody's
    if !o.stock_to_settle() || o.updated_at_ms > quiet_since {
        return Ok(());
    }
    held_bookings(app, &o, rep).await;
    if !o.restocks() || o.settled_at_ms.is_some() {
        return Ok(());
    }
    let rid = ReservationId::for_order(&o.id);
    match app.locks.get_reservation(&rid).await?.map(|r| r.status) {
        // confirmed first by the stale-lock arm, which then restocks
        Some(LockStatus::Frozen) => return Ok(()),
        Some(LockStatus::Sold) => {
            stock::restock(app, &rid).await.map_err(|e| anyhow::anyhow!("restock of {rid}: {e}"))?;
            rep.stock_settled += 1;
            app.count(names::STOCK_SETTLE_REPAIRS, 1);
            app.count(names::REPAIRS, 1);
            tracing::warn!(order_id = %o.id, "reconcile: a restock the event flow lost, done");
        }
        Some(LockStatus::Restocked | LockStatus::Released) | None => {}
    }
    mark_settled(app, &o).await
}

/// Records that `o`'s stock is where its status says (compare-and-set; a lost race leaves it
/// for the next sweep, which finds the lock settled and marks it then).
async fn mark_settled(app: &App, o: &Order) -> anyhow::Result<()> {
    let now = clock::now_ms();
    let next = o.next(now, |n| n.settled_at_ms = Some(now));
    app.orders.replace(o, &next).await?;
    Ok(())
}

/// One order of the `refunds-issued` index: its ISSUED refunds asked of their providers, every
/// final answer applied (a refund still pending there is asked again at the next sweep).
pub(super) async fn settle_refunds(app: &App, id: &OrderId, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else { return Ok(()) };
    let n = refunds::ask_provider(app, &o).await?;
    if n > 0 {
        rep.refunds_settled += n;
        app.count(names::REFUNDS_SETTLED_BY_SWEEP, n as u64);
        app.count(names::REPAIRS, n as u64);
        tracing::warn!(order_id = %o.id, refunds = n, "reconcile: refund answers the webhooks missed, applied");
    }
    Ok(())
}

/// Held refunds older than [`REVIEW_ALARM_AFTER_S`], counted (`RefundReviewsOverdue`).
pub(super) async fn overdue_reviews(app: &App, rep: &mut ReconcileReport) -> anyhow::Result<()> {
    let before = clock::now_ms() - REVIEW_ALARM_AFTER_S * 1000;
    let n = app.orders.due_in(OrderIndex::ReviewsPending, before).await?.len();
    rep.reviews_overdue += n;
    if n > 0 {
        app.count(names::REFUND_REVIEWS_OVERDUE, n as u64);
        tracing::warn!(held = n, "refunds held for review longer than a day");
    }
    Ok(())
}

/// Ended campaigns after `cursor` give back what their ring-fenced cells still hold, inside the
/// budget; `Some(cursor)` when the budget ran out first.
pub(super) async fn fence_returns(
    app: &App,
    cursor: Option<&str>,
    (started, budget): (Instant, Duration),
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    let mut ids = app.campaigns.list_campaigns().await?;
    ids.sort();
    for id in ids.iter().filter(|id| cursor.is_none_or(|c| id.as_str() > c)) {
        if started.elapsed() > budget {
            return Ok(Some(previous(&ids, id)));
        }
        // ended waves roll first (docs/campaigns.md, "Waves"), then ended campaigns' cells return
        rep.wave_units_rolled += crate::service::campaigns::roll_waves(app, id).await?;
        let Some(c) = app.campaigns.get_campaign(id, true).await? else { continue };
        rep.fenced_units_returned +=
            crate::service::campaigns::fence::return_ended(app, std::slice::from_ref(&c)).await?;
    }
    Ok(None)
}

/// The id before `id` in `ids` (the cursor that resumes at `id`), or the empty string.
fn previous(ids: &[crate::domain::CampaignId], id: &crate::domain::CampaignId) -> String {
    ids.iter().take_while(|i| *i != id).last().map(|i| i.as_str().to_owned()).unwrap_or_default()
}

/// Which owed move an order of an index is settled by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owed {
    /// `stock-to-settle`: [`settle_stock`].
    Stock,
    /// `refunds-issued`: [`settle_refunds`].
    Refunds,
}

impl Owed {
    fn index(self) -> OrderIndex {
        match self {
            Owed::Stock => OrderIndex::StockToSettle,
            Owed::Refunds => OrderIndex::RefundsIssued,
        }
    }
}

/// Pages one bucket of `owed`'s index below `before` from `cursor`, settling every order, until
/// the index ends (`None`) or `budget` is spent (`Some(cursor)` to go on from). One order
/// failing is counted and the page goes on.
pub(super) async fn page_owed(
    app: &App,
    owed: Owed,
    (bucket, before, mut cursor): (u32, i64, Option<String>),
    (started, budget): (Instant, Duration),
    rep: &mut ReconcileReport,
) -> anyhow::Result<Option<String>> {
    loop {
        let page = app.sweep.orders_page(owed.index(), bucket, before, cursor.as_deref(), ORDER_PAGE).await?;
        for id in &page.items {
            let r = match owed {
                Owed::Stock => settle_stock(app, id, rep).await,
                Owed::Refunds => settle_refunds(app, id, rep).await,
            };
            if let Err(e) = r {
                rep.errors += 1;
                tracing::warn!(order_id = %id, ?owed, error = format!("{e:#}"), "reconcile: owed move not settled");
            }
        }
        match page.next {
            None => return Ok(None),
            Some(c) if started.elapsed() > budget => return Ok(Some(c)),
            Some(c) => cursor = Some(c),
        }
    }
}
