//! The backlog identity of BACKORDER SKUs (docs/inventory-models.md, "Backorders (oversell
//! allowed)"), over every lock of the snapshot.

use super::super::backorder::Backlog;
use super::super::reservation::{LockStatus, Reservation};
use super::super::Sku;
use super::Violation;

/// For each SKU's backlog item: `ordered` = Σ every lock's `short`, `filled` = Σ `filled`,
/// `cancelled` = Σ what a RELEASED or RESTOCKED lock still had open, so `waiting` = Σ what live
/// (FROZEN or SOLD) locks still wait for; the listed orders are exactly the live locks still
/// waiting. And on every backorder line: `filled ≤ short ≤ quantity`, and its pieces hold
/// exactly `quantity − (short − filled)` — a waiting unit is never also held (counted as
/// locked or sold), and nothing is taken beyond what was declared short.
pub fn check_backlogs(backlogs: &[(Sku, Backlog)], locks: &[Reservation]) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in locks {
        for l in &r.lines {
            let Some(b) = l.backorder else { continue };
            let held: u32 = l.pieces.iter().map(|p| p.quantity).sum();
            if b.filled > b.short || b.short > l.quantity || held != l.quantity - b.open() {
                out.push(Violation::Backlog {
                    sku: l.sku.clone(),
                    detail: format!(
                        "lock {}: quantity {}, short {}, filled {}, but its pieces hold {held}",
                        r.id, l.quantity, b.short, b.filled
                    ),
                });
            }
        }
    }
    for (sku, b) in backlogs {
        let lines = || locks.iter().flat_map(|r| r.lines.iter().map(move |l| (r, l))).filter(|(_, l)| &l.sku == sku);
        let sum = |f: &dyn Fn(&Reservation, &super::super::reservation::ReservedLine) -> u32| -> i64 {
            lines().map(|(r, l)| i64::from(f(r, l))).sum()
        };
        let ordered = sum(&|_, l| l.backorder.map_or(0, |b| b.short));
        let filled = sum(&|_, l| l.backorder.map_or(0, |b| b.filled));
        let given_back = |r: &Reservation| matches!(r.status, LockStatus::Released | LockStatus::Restocked);
        let cancelled = sum(&|r, l| if given_back(r) { l.open_units() } else { 0 });
        let waiting = sum(&|r, l| if given_back(r) { 0 } else { l.open_units() });
        let mut listed: Vec<String> =
            lines().filter(|(r, l)| !given_back(r) && l.open_units() > 0).map(|(r, _)| r.id.to_string()).collect();
        listed.sort();
        listed.dedup();
        let open: Vec<String> = b.open.iter().map(|i| i.to_string()).collect();
        if (b.ordered, b.filled, b.cancelled) != (ordered, filled, cancelled)
            || b.waiting() != waiting
            || open != listed
        {
            out.push(Violation::Backlog {
                sku: sku.clone(),
                detail: format!(
                    "backlog ordered/filled/cancelled {}/{}/{} (waiting {}, listed {:?}) but the locks say {ordered}/{filled}/{cancelled} (waiting {waiting}, {listed:?})",
                    b.ordered, b.filled, b.cancelled, b.waiting(), open
                ),
            });
        }
    }
    out
}
