//! The identity of an order held until shipment (docs/inventory-models.md, "Deduction at
//! shipment"): its lock stays FROZEN while it is paid and not shipped.

use super::super::order::{Order, OrderStatus};
use super::super::reservation::LockStatus;

/// A paid order held until shipment that has not shipped (its refund may wait for a review):
/// its lock is still FROZEN, its units held.
pub(super) fn awaits_shipment(o: &Order) -> bool {
    matches!(o.status, OrderStatus::Paid | OrderStatus::RefundRequested) && o.shipment.is_none()
}

/// The lock of an order held until shipment, beyond the SOLD / RESTOCKED every paid order may
/// have (sold at shipment, or taken again at payment after a release): FROZEN while it is paid
/// and not shipped, RELEASED once it was refunded before shipping (its held units went back).
pub(super) fn shipment_hold_fits(o: &Order, lock: Option<LockStatus>) -> bool {
    match lock {
        Some(LockStatus::Frozen) => awaits_shipment(o),
        Some(LockStatus::Released) => o.restocks() && o.shipment.is_none(),
        _ => false,
    }
}
