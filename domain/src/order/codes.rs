//! A `SUPPLIER_CODES` order's codes (docs/suppliers.md, "Codes issued by the supplier"): what
//! the order says about them (pending, issued, given up) and the steps that record their issue,
//! on the order's supplier bookings. The booking's issue record is the supplier's
//! ([`crate::supplier::codes`]); this module is the order's, so the supplier module never reads
//! an order.

use super::{Order, OrderStatus};
use crate::supplier::codes::{CodeIssue, IssueStatus, SealedCode, SWEEP_AFTER_S};
use crate::supplier::SupplierBooking;

/// The order's code state as one answer (the views, the reveal, the invariants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderCodes {
    /// No booking of it issues codes.
    None,
    /// Not paid yet: nothing asked of the supplier.
    Unpaid,
    /// Some booking's codes are still being asked for.
    Pending,
    /// Every automatic attempt failed for some booking (and none is still pending).
    GaveUp,
    /// Every code booking's codes are issued.
    Issued,
}

impl OrderCodes {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderCodes::None => "NONE",
            OrderCodes::Unpaid => "UNPAID",
            OrderCodes::Pending => "PENDING",
            OrderCodes::GaveUp => "GAVE_UP",
            OrderCodes::Issued => "ISSUED",
        }
    }
}

fn code_bookings(o: &Order) -> impl Iterator<Item = &SupplierBooking> {
    o.supplier.iter().filter(|b| b.issues_codes)
}

/// What the order says about its codes.
pub fn state(o: &Order) -> OrderCodes {
    let mut any = false;
    let (mut pending, mut gave_up, mut unpaid) = (false, false, false);
    for b in code_bookings(o) {
        any = true;
        match b.codes.as_ref().map(|c| c.status) {
            None => unpaid = true,
            Some(IssueStatus::Pending) => pending = true,
            Some(IssueStatus::GaveUp) => gave_up = true,
            Some(IssueStatus::Issued) => {}
        }
    }
    match (any, unpaid, pending, gave_up) {
        (false, ..) => OrderCodes::None,
        (_, true, ..) => OrderCodes::Unpaid,
        (_, _, true, _) => OrderCodes::Pending,
        (_, _, _, true) => OrderCodes::GaveUp,
        _ => OrderCodes::Issued,
    }
}

/// At payment (in the write that makes the order PAID): every code booking's issue starts
/// `Pending`, due for the sweep at `now_s + SWEEP_AFTER_S`. `true` if the supplier must be asked.
pub fn start(o: &mut Order, now_s: i64) -> bool {
    let mut started = false;
    for b in o.supplier.iter_mut().filter(|b| b.issues_codes && b.codes.is_none()) {
        b.codes = Some(CodeIssue {
            status: IssueStatus::Pending,
            due_s: now_s + SWEEP_AFTER_S,
            codes: Vec::new(),
            issued_at_ms: None,
            reissued_by: None,
            revealed_at_ms: None,
        });
        started = true;
    }
    started
}

/// Whether the supplier must still be asked for some booking's codes: a PAID order whose issue
/// is `Pending` (automatic) or, with `manual`, `GaveUp` too.
pub fn wanted(o: &Order, manual: bool) -> bool {
    o.status == OrderStatus::Paid
        && code_bookings(o).any(|b| match b.codes.as_ref().map(|c| c.status) {
            Some(IssueStatus::Pending) => true,
            Some(IssueStatus::GaveUp) => manual,
            _ => false,
        })
}

/// Whether an order in status `s` is its buyer's to keep, codes and all: paid, shipped or
/// completed (not while a refund or a return takes it back). The first reveal is recorded only
/// then.
pub fn buyer_keeps(s: OrderStatus) -> bool {
    matches!(s, OrderStatus::Paid | OrderStatus::Shipped | OrderStatus::Completed)
}

/// The sweep's due time of a paid order whose codes are still pending (the order is in the
/// `pending-by-deadline` index by it): the earliest booking's.
pub fn sweep_due(o: &Order) -> Option<i64> {
    if o.status != OrderStatus::Paid {
        return None;
    }
    code_bookings(o)
        .filter_map(|b| b.codes.as_ref().filter(|c| c.status == IssueStatus::Pending).map(|c| c.due_s))
        .min()
}

/// Records `codes` (sealed, one per unit) as the booking of `sku`'s issue; `false` if that
/// booking has no issue waiting (issued meanwhile, or not a code booking).
pub fn record_issued(o: &mut Order, sku: &crate::Sku, codes: Vec<SealedCode>, now_ms: i64, by: Option<&str>) -> bool {
    let Some(c) = o.supplier.iter_mut().find(|b| &b.sku == sku && b.issues_codes).and_then(|b| b.codes.as_mut()) else {
        return false;
    };
    if c.status == IssueStatus::Issued {
        return false;
    }
    c.status = IssueStatus::Issued;
    c.codes = codes;
    c.issued_at_ms = Some(now_ms);
    c.reissued_by = by.map(str::to_owned);
    true
}

/// Every pending issue of the order given up (the automatic attempts are spent). `false` if none
/// was pending.
pub fn give_up(o: &mut Order) -> bool {
    let mut changed = false;
    for c in o.supplier.iter_mut().filter_map(|b| b.codes.as_mut()).filter(|c| c.status == IssueStatus::Pending) {
        c.status = IssueStatus::GaveUp;
        changed = true;
    }
    changed
}

/// Whether the buyer has been shown the order's issued codes.
pub fn revealed(o: &Order) -> bool {
    code_bookings(o).any(|b| b.codes.as_ref().is_some_and(|c| c.revealed_at_ms.is_some()))
}

/// Records the first reveal; `false` if already recorded.
pub fn mark_revealed(o: &mut Order, now_ms: i64) -> bool {
    let mut changed = false;
    for c in o.supplier.iter_mut().filter(|b| b.issues_codes).filter_map(|b| b.codes.as_mut()) {
        if c.revealed_at_ms.is_none() {
            c.revealed_at_ms = Some(now_ms);
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
pub(crate) mod tests;
