//! The backorder SKU and the supplier's gift cards (docs/simulator.md, "Backorders and supplier
//! codes"): their checkouts, alone and beside other kinds; restocks that fill the backlog; the
//! supplier failing its code issues (retried, given up) and an operator's reissue; buyers reading
//! their codes before payment, while pending, once issued, and another buyer's.

use super::{Action, Checkout, Done, Queued, Sim};
use crate::shop;
use holdfast::adapters::memory::MemoryStock;
use holdfast::adapters::supplier::MemorySupplier;
use holdfast::app::App;
use holdfast::domain::order::codes::{state, OrderCodes};
use holdfast::domain::order::{Order, OrderRecord, OrderStatus};
use holdfast::domain::quantity::Quantity;
use holdfast::domain::supplier::codes::IssueStatus;
use holdfast::domain::{IdempotencyKey, OrderId, Sku, UserId};
use holdfast::service::codes::supplier::{reissue, ReissueError};
use holdfast::service::codes::{self, CodeError};
use holdfast::service::stock::LineRequest;

/// Whether an order has a line of the supplier's gift cards.
pub(super) fn has_supplier_codes(o: &Order) -> bool {
    o.supplier.iter().any(|b| b.issues_codes)
}

impl Sim {
    /// One of the new kinds' actors.
    pub(super) fn draw_kinds(&mut self) -> Option<Action> {
        let back = Sku::parse(shop::BACKORDER_SKU).ok()?;
        let scodes = Sku::parse(shop::SUPPLIER_CODES_SKU).ok()?;
        Some(match self.rng.u8(..25) {
            // the backorder SKU: up to 3 units of its 2, alone or beside any other kind (the
            // matrix refuses a pay-time, at-shipment, code-pool or supplier line beside it)
            0..=3 => {
                let mut lines = vec![LineRequest::plain(back, Quantity::new(self.rng.u64(1..=3)).ok()?)];
                if self.rng.bool() {
                    lines.push(self.other_line(shop::BACKORDER_SKU));
                }
                self.kinds_checkout(lines)?
            }
            // a delivery of the backorder SKU fills its waiting orders, oldest first
            4..=5 => {
                self.adjustments += 1;
                Action::Adjust(back, format!("adj{}", self.adjustments), [1, 1, 2, 3][self.rng.usize(..4)], Vec::new())
            }
            // the gift cards: alone, beside the other supplier SKU, or beside a kind it may not share with
            6..=9 => {
                let mut lines = vec![LineRequest::plain(scodes, Quantity::new(self.rng.u64(1..=2)).ok()?)];
                match self.rng.u8(..4) {
                    0 => lines.push(LineRequest::plain(Sku::parse("supp").ok()?, Quantity::new(1).ok()?)),
                    1 => lines.push(self.other_line(shop::SUPPLIER_CODES_SKU)),
                    _ => {}
                }
                self.kinds_checkout(lines)?
            }
            // the supplier fails its next code issues (any order's): retried after 1, 2 and 4 s, given up after four
            10 => Action::FailIssues([1, 4, 4, 8, 8, 12][self.rng.usize(..6)]),
            // an operator reissues a paid order's codes: given up ones mostly, else any
            11..=12 => {
                let gave_up = |o: &Order| state(o) == OrderCodes::GaveUp;
                let paid = |o: &Order| has_supplier_codes(o) && o.status.is_paid_or_later();
                let o = match self.rng.u8(..4) {
                    0 => self.pick_order(has_supplier_codes)?,
                    1 => self.pick_order(paid)?,
                    _ => self.pick_order(gave_up).or_else(|| self.pick_order(paid))?,
                };
                Action::Reissue(o.id)
            }
            // a buyer reads an order's codes: any gift-card order's, a paid one's, or (mostly) one
            // whose codes are issued; its owner three times in four, else a random buyer
            13..=15 => {
                let paid = |o: &Order| has_supplier_codes(o) && o.status.is_paid_or_later();
                let issued = |o: &Order| paid(o) && state(o) == OrderCodes::Issued;
                let o = match self.rng.u8(..3) {
                    0 => self.pick_order(has_supplier_codes)?,
                    1 => self.pick_order(paid)?,
                    _ => self.pick_order(issued).or_else(|| self.pick_order(paid))?,
                };
                let user = if self.rng.u8(..4) == 0 { self.user() } else { o.user };
                Action::Reveal(user, o.id)
            }
            // a gift-card order confirmed by its supplier is paid (its webhook: a new payment)
            16..=18 => {
                let o = self.pick_order(|o| has_supplier_codes(o) && o.status == OrderStatus::PendingPayment)?;
                Action::Pay(self.new_notice(o, 6))
            }
            // a buyer asks for the money back on an order whose codes they were shown (a pool's or
            // a supplier's): it must wait for an admin, never be refunded at once
            19..=20 => {
                let shown: Vec<OrderId> = self.shown.values().cloned().collect();
                let id = shown.get(self.rng.usize(..shown.len().max(1)))?.clone();
                let o = self.orders().into_iter().find(|o| o.id == id)?;
                Action::Buyer(o.user, id, holdfast::service::after_sale::Change::Refund { reason: "seen it".into() })
            }
            // the store stops answering for a checkout's SKUs: the backorder SKU alone is
            // recorded (202) and written once the store answers; beside another kind, 503
            23..=24 => {
                let back = Sku::parse(shop::BACKORDER_SKU).ok()?;
                let mut lines = vec![LineRequest::plain(back, Quantity::new(self.rng.u64(1..=3)).ok()?)];
                if self.rng.u8(..3) == 0 {
                    lines.push(self.other_line(shop::BACKORDER_SKU));
                }
                match self.kinds_checkout(lines)? {
                    Action::Checkout(c) => Action::Outage(c),
                    other => other,
                }
            }
            // the supplier confirms (or refuses) what it was asked to book
            _ => Action::Supplier(if self.rng.u8(..6) == 0 {
                holdfast::domain::supplier::BookingStatus::Failed
            } else {
                holdfast::domain::supplier::BookingStatus::Confirmed
            }),
        })
    }

    /// A line of one unit of any item but `not` (outside the campaign).
    fn other_line(&mut self, not: &str) -> LineRequest {
        let others: Vec<usize> = (0..self.items.len()).filter(|&i| self.items[i].sku.as_str() != not).collect();
        let i = others[self.rng.usize(..others.len())];
        let mut l = self.line(i, 1);
        l.campaign = None;
        l
    }

    /// A checkout of `lines` by a random buyer, kept for retries with its key.
    fn kinds_checkout(&mut self, lines: Vec<LineRequest>) -> Option<Action> {
        let user = self.user();
        let key = IdempotencyKey::parse(&format!("k{}", self.checkouts.len())).ok()?;
        let details = shop::order_details((self.checkouts.len() % 6) as u8);
        let c = Checkout { user, key, lines, details };
        self.checkouts.push(c.clone());
        Some(Action::Checkout(c))
    }

    /// An order's supplier codes as the stream saw them change: codes once issued are never
    /// issued again, replaced or taken back into pending.
    pub(super) fn codes_changed(&mut self, before: Option<&Order>, after: Option<&Order>) {
        let (Some(b), Some(a)) = (before, after) else { return };
        for old in b.supplier.iter().filter(|x| x.issues_codes) {
            let Some(was) = old.codes.as_ref().filter(|c| c.status == IssueStatus::Issued) else { continue };
            let now = a.supplier.iter().find(|x| x.sku == old.sku).and_then(|x| x.codes.as_ref());
            let same = now.is_some_and(|c| {
                c.status == IssueStatus::Issued
                    && c.codes == was.codes
                    && c.issued_at_ms == was.issued_at_ms
                    && c.reissued_by == was.reissued_by
            });
            if !same {
                self.extra.push(format!(
                    "SupplierCodesIssuedTwice {{ order: {}, sku: {}, now: {:?} }}",
                    a.id,
                    old.sku,
                    now.map(|c| c.status.as_str())
                ));
            }
        }
    }

    /// At quiescence: every paid order of the gift cards that its buyer keeps has its codes, or
    /// gave up on them and waits for an operator (counted); none is still pending.
    pub(super) fn settled_codes(&mut self) {
        for o in self.orders().into_iter().filter(has_supplier_codes) {
            match state(&o) {
                OrderCodes::GaveUp if o.status == OrderStatus::Paid => {
                    self.stats.sometimes.hit("supplier codes: given up at quiescence, left for an operator")
                }
                // a refund waiting for an admin holds the issue (a refusal returns it to the sweep)
                OrderCodes::Pending if holdfast::domain::order::codes::buyer_keeps(o.status) => {
                    self.extra.push(format!(
                        "SupplierCodesPendingAtQuiescence {{ order: {}, status: {} }}",
                        o.id,
                        o.status.as_str()
                    ));
                }
                _ => {}
            }
        }
    }
}

/// A buyer reads an order's codes (`GET /orders/{id}/codes`). Only its paid owner is shown any:
/// another buyer's read is refused as unknown, an unpaid order's as not paid, a paid one's whose
/// supplier has not issued them as pending.
pub(super) async fn reveal(app: &App, u: &UserId, id: &OrderId, d: &mut Done) -> String {
    let order = match app.orders.get(id).await {
        Ok(Some(OrderRecord::Order(o))) => Some(o),
        _ => None,
    };
    let r = codes::reveal(app, u, id).await;
    if let Ok(cs) = &r {
        d.revealed = cs.iter().map(|(_, c)| (id.clone(), c.clone())).collect();
    }
    if let Some(o) = order.filter(|o| has_supplier_codes(o)) {
        let other = o.user != *u;
        match &r {
            Ok(cs) if other && !cs.is_empty() => {
                d.violations.push(format!("CodesShownToAnotherBuyer {{ order: {id}, owner: {}, reader: {u} }}", o.user))
            }
            Ok(cs) if !cs.is_empty() => d.hits.push("supplier codes: shown to the paid owner"),
            Err(CodeError::OrderNotFound) if other => d.hits.push("supplier codes: another buyer's read refused"),
            Err(CodeError::NotPaid(_)) => d.hits.push("supplier codes: read before payment (not_paid)"),
            Err(CodeError::IssuePending) => d.hits.push("supplier codes: read while pending (codes_pending)"),
            _ => {}
        }
    }
    format!("reveal {u} {id} -> {}", super::show(r, |cs| format!("{} codes", cs.len())))
}

/// The supplier fails its next `n` code issues (a supplier that does not answer).
pub(super) fn fail_issues(supplier: &MemorySupplier, n: u32) -> String {
    supplier.fail_issues(n);
    format!("supplier fails its next {n} code issues")
}

/// An operator reissues an order's codes (`POST /admin/orders/{id}/codes/reissue`).
pub(super) async fn reissue_codes(app: &App, id: &OrderId, d: &mut Done) -> String {
    let r = reissue(app, id, "ops").await;
    d.hits.push(match &r {
        Ok(_) => "supplier codes: reissued by an operator",
        Err(ReissueError::AlreadyIssued) => "supplier codes: reissue refused, already issued",
        Err(ReissueError::NotPaid(_)) => "supplier codes: reissue refused, not paid",
        Err(ReissueError::SupplierFailed(_)) => "supplier codes: reissue failed at the supplier",
        Err(_) => "supplier codes: reissue refused, other",
    });
    format!("admin reissue codes {id} -> {}", super::show(r, |n| format!("{n} codes")))
}

/// A checkout while the store does not answer for its SKUs (their freezes fail as an unanswered
/// DynamoDB request): recorded when every line may be sold short, else refused as before.
pub(super) async fn in_outage(app: &App, stock: &MemoryStock, c: &Checkout, d: &mut Done) -> String {
    let skus: Vec<Sku> = c.lines.iter().map(|l| l.sku.clone()).collect();
    stock.set_outage(&skus);
    let (out, _) = super::checkout(app, c, None, false, d).await;
    stock.set_outage(&[]);
    if out.contains("checkout was recorded") {
        d.recorded = Some(OrderId::derive(&c.user, &c.key));
        d.hits.push("backorder: checkout recorded in a store outage");
    } else if out.contains("did not answer") {
        d.hits.push("backorder: a checkout beside another kind is refused in an outage");
    }
    format!("outage {out}")
}

/// The reservation-check consumer's work on a recorded checkout (`orders::recorded::complete`):
/// written, refused, or recorded again; `false` = it failed and is redelivered.
pub(super) async fn complete_recorded(
    app: &App,
    (user, key): (&str, &str),
    lines: &[holdfast::ports::RecordedLine],
    details: &holdfast::domain::order::OrderDetails,
    (recorded_at, attempt): (i64, u32),
    d: &mut Done,
) -> (bool, Vec<Queued>) {
    use holdfast::service::orders::recorded::{complete, RecordedOutcome};
    let id = match (UserId::parse(user), IdempotencyKey::parse(key)) {
        (Ok(u), Ok(k)) => OrderId::derive(&u, &k),
        _ => return (false, Vec::new()),
    };
    match complete(app, user, key, lines, details, recorded_at, attempt).await {
        Ok(RecordedOutcome::Written { .. }) => {
            d.hits.push("backorder: recorded checkout written");
            d.recorded_done = Some((id, true));
            (true, Vec::new())
        }
        Ok(RecordedOutcome::Refused(_)) => {
            d.hits.push("backorder: recorded checkout refused once the store answered");
            d.recorded_done = Some((id, false));
            (true, Vec::new())
        }
        Ok(RecordedOutcome::Again(_)) => (true, Vec::new()),
        Err(_) => (false, Vec::new()),
    }
}
