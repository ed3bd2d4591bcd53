//! The allocation identity of a warehoused line (docs/inventory-models.md, "Warehouses"): the
//! units a lock records per warehouse are the line's units, on its own SKU's warehouses only, so
//! a release or restock gives each warehouse back exactly what it gave. The per-cell counters
//! (stocked = available + locked + sold, locked = Σ FROZEN draws, sold = Σ SOLD draws) are the
//! stock invariants' own, each warehouse being a cell.

use super::super::reservation::Reservation;
use super::Violation;

/// Every line that draws on a warehouse cell draws only on its own SKU's warehouses, holds no
/// pieces of the SKU itself, and its warehouse draws add up to its quantity.
pub(super) fn check_allocations(locks: &[Reservation]) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in locks {
        for l in &r.lines {
            let on_warehouses: Vec<_> = l.draws.iter().filter(|d| d.warehouse.is_some()).collect();
            if on_warehouses.is_empty() {
                continue;
            }
            let bad = |detail: String| Violation::WarehouseAllocation {
                reservation: r.id.to_string(),
                sku: l.sku.clone(),
                detail,
            };
            if let Some(d) = on_warehouses.iter().find(|d| d.sku != l.sku || d.date.is_some() || d.fence.is_some()) {
                out.push(bad(format!("draws on {}, not a warehouse of its own SKU", d.cell())));
            }
            let drawn: u64 = on_warehouses.iter().map(|d| u64::from(d.quantity)).sum();
            let pieces: u64 = on_warehouses.iter().flat_map(|d| d.pieces.iter()).map(|p| u64::from(p.quantity)).sum();
            if drawn != u64::from(l.quantity) || pieces != drawn {
                out.push(bad(format!("{drawn} units drawn ({pieces} on shards) for a line of {}", l.quantity)));
            }
            if !l.pieces.is_empty() || on_warehouses.len() != l.draws.len() {
                out.push(bad("holds units beside its warehouses".into()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reservation::ReservedLine;
    use serde_json::json;

    /// A FROZEN lock of one line of `sku` drawing `(sku, warehouse, units)` (through serde, as a
    /// stored lock reads back).
    fn lock(sku: &str, quantity: u32, draws: &[(&str, &str, u32)]) -> Reservation {
        let draws: Vec<_> = draws
            .iter()
            .map(|(s, w, q)| json!({"sku": s, "warehouse": w, "quantity": q, "pieces": [{"shard": 0, "quantity": q}]}))
            .collect();
        let line = json!({"sku": sku, "quantity": quantity, "unit_price": 1, "currency": "EUR", "limited": false,
                          "pieces": [], "draws": draws});
        let line: ReservedLine = serde_json::from_value(line).unwrap();
        let mut r = lock_of(line);
        r.lines[0].pieces.clear();
        r
    }

    fn lock_of(line: ReservedLine) -> Reservation {
        Reservation {
            id: crate::ReservationId::from_stored("o1").unwrap(),
            kind: crate::reservation::ReservationKind::Order,
            status: crate::reservation::LockStatus::Frozen,
            user: None,
            request_hash: String::new(),
            created_at_ms: 0,
            expires_at: 0,
            lines: vec![line],
            oversold: false,
            pending: false,
            code_fate: None,
        }
    }

    #[test]
    fn a_warehoused_line_draws_its_quantity_from_its_own_warehouses_only() {
        assert!(check_allocations(&[lock("K", 5, &[("K", "BJ", 4), ("K", "SH", 1)])]).is_empty());
        assert_eq!(check_allocations(&[lock("K", 5, &[("K", "BJ", 4)])]).len(), 1, "a unit missing");
        assert_eq!(check_allocations(&[lock("K", 2, &[("K", "BJ", 1), ("X", "SH", 1)])]).len(), 1, "another SKU's");
        let mut beside = lock("K", 1, &[("K", "BJ", 1)]);
        beside.lines[0].pieces = vec![crate::allocation::Piece { shard: 0, quantity: 1 }];
        assert_eq!(check_allocations(&[beside]).len(), 1, "units of the SKU itself");
    }
}
