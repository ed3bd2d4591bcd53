//! Kinds of stock and the whole life of each (docs/inventory-models.md, "Kinds and their
//! lifecycle").
//!
//! A SKU's [`InventoryModel`] (management, unit, deduction) puts it in one of eight kinds. Which
//! cells a line draws is the model's [`Strategy`](super::model::Strategy); everything else a
//! kind decides — may it be ordered with these other lines, held through `POST /reservations`,
//! sold in a campaign; how a stop-sale reaches it; may its buyer refund it and what that gives
//! back; may a released lock of it be taken again; does it hand out codes or book a supplier —
//! is answered here, from one table ([`Rules`]) and one compatibility matrix
//! ([`may_share_an_order`]). Services, handlers and adapters ask a kind; they never compare
//! models themselves.

use super::model::{Deduct, InventoryModel, Management, Unit};
use super::reservation::ReservedLine;
use super::Sku;

/// The kinds of stock Holdfast sells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Counted units of one SKU, taken when the order is placed.
    Quantity,
    /// Counted units per date (nights, tickets of a day), taken at order.
    Calendar,
    /// Units of other SKUs (the children), taken together at order.
    Bundle,
    /// Counted units (single, per date or bundled) taken only when the order is paid.
    PayTime,
    /// Counted units of one SKU held (frozen) from the order, still held once it is paid, and
    /// taken (sold) when the order ships (docs/inventory-models.md, "Deduction at shipment").
    AtShipment,
    /// No counters: never short.
    Unlimited,
    /// Unique codes, each handed out to one buyer (docs/code-pools.md).
    CodePool,
    /// Counted units per warehouse, taken at order (docs/inventory-models.md, "Warehouses").
    Warehouse,
    /// Counted units of one SKU that may be sold short: a short checkout is accepted and the
    /// shortfall filled by a later restock (docs/inventory-models.md, "Backorders (oversell allowed)").
    Backorder,
    /// An outside supplier holds the stock: quoted, then booked (docs/suppliers.md).
    Supplier,
    /// Booked like `Supplier`; its codes are issued by the supplier when the order is paid and
    /// shown to the paid buyer (docs/suppliers.md, "Codes issued by the supplier").
    SupplierCodes,
}

/// How a stop-sale (`PUT /admin/skus/{sku}/pause`) reaches a kind's checkouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseBy {
    /// Each product shard carries the flag and the freeze's write condition judges it: no
    /// checkout can slip past, whatever any cache says.
    Shards,
    /// The freeze writes no shard of the SKU: its metadata decides, through the warm cache
    /// (at most `HOLDFAST_SKU_CACHE_MS` stale).
    CachedMetadata,
    /// The freeze writes no shard (the units move only at payment): the metadata is read
    /// afresh at order and again at payment, where a paused SKU's paid order is refunded.
    FreshMetadata,
    /// The SKU keeps no stock of its own (a calendar's dates, a bundle's children): pausing
    /// it is refused; pause the cells it draws on (their shards stop it) or its campaign.
    Cells,
}

/// What a buyer may do about a paid order of this kind before it is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuyerRefund {
    /// Refund before shipping, the units go back on sale.
    BeforeShipping,
    /// Refund only while no code was shown: a code once seen cannot be taken back, so its
    /// refund is never automatic (it waits for an admin: docs/payments.md, "Refund review").
    UntilRevealed,
}

/// Everything a kind decides about its life, one row per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// May be held by another order system through `POST /reservations` (the hold is
    /// confirmed or released by that system; it cannot wait for a supplier, take stock at a
    /// payment Holdfast never sees, or show codes to anyone).
    pub external: bool,
    /// May be sold at a campaign's price, on its quota.
    pub campaign: bool,
    pub pause: PauseBy,
    pub buyer_refund: BuyerRefund,
    /// A restock (refund before delivery, a return) gives the units back to the buyer's
    /// per-user allowance. Not for codes: the codes stay sold, so the allowance stays used.
    pub allowance_back: bool,
    /// A paid order whose lock was released may take the units again (else: refunded as an
    /// oversell). Not for codes: released codes may be someone else's by then.
    pub retake: bool,
    /// The order's codes are shown to its buyer (`GET /orders/{id}/codes`), from a SOLD lock only.
    pub reveals_codes: bool,
    /// The order waits for a supplier booking before it can be paid.
    pub books_supplier: bool,
    /// When the units are taken.
    pub deduct: Deduct,
    /// A checkout of only this kind whose freeze cannot reach the store is recorded and
    /// answered 202 `RECORDED`, then written as an order once the store answers (it may be
    /// sold short, so nothing needs holding first: docs/inventory-models.md, "Accepted during
    /// a store outage"). Every other kind is 503, as a checkout that holds nothing cannot sell.
    pub recorded_on_outage: bool,
}

impl Rules {
    /// The units are taken when the order is paid, not when it is placed.
    pub fn takes_at_payment(&self) -> bool {
        self.deduct == Deduct::AtPayment
    }

    /// The order's codes come from the SKU's own pool (claimed at order, on its shards).
    pub fn codes_from_pool(&self) -> bool {
        self.reveals_codes && !self.books_supplier
    }

    /// The order's codes are issued by its supplier when the order is paid.
    pub fn codes_from_supplier(&self) -> bool {
        self.reveals_codes && self.books_supplier
    }

    /// The units stay held after payment and are taken when the order ships.
    pub fn takes_at_shipment(&self) -> bool {
        self.deduct == Deduct::AtShipment
    }
}

const fn rules(
    external: bool,
    campaign: bool,
    pause: PauseBy,
    buyer_refund: BuyerRefund,
    allowance_back: bool,
    retake: bool,
    deduct: Deduct,
) -> Rules {
    Rules {
        external,
        campaign,
        pause,
        buyer_refund,
        allowance_back,
        retake,
        reveals_codes: false,
        books_supplier: false,
        deduct,
        recorded_on_outage: false,
    }
}

use BuyerRefund::*;
use Deduct::*;
use PauseBy::*;

const QUANTITY: Rules = rules(true, true, Shards, BeforeShipping, true, true, AtOrder);
// a calendar or bundle SKU has no shards of its own: its dates' or children's shards stop it
const CALENDAR: Rules = rules(true, true, Cells, BeforeShipping, true, true, AtOrder);
const BUNDLE: Rules = CALENDAR;
const PAY_TIME: Rules = rules(false, true, FreshMetadata, BeforeShipping, true, true, AtPayment);
// held on its own shards like QUANTITY; another order system cannot hold it (its confirm would
// sell at once, and no shipment of ours would ever take it); a hold released before shipping was
// given back by its refund, so a late confirm never takes it again
const AT_SHIPMENT: Rules = rules(false, true, Shards, BeforeShipping, true, false, AtShipment);
const UNLIMITED: Rules = rules(true, true, CachedMetadata, BeforeShipping, true, true, AtOrder);
const CODE_POOL: Rules =
    Rules { reveals_codes: true, ..rules(false, true, Shards, UntilRevealed, false, false, AtOrder) };
const SUPPLIER: Rules =
    Rules { books_supplier: true, ..rules(false, false, CachedMetadata, BeforeShipping, true, true, AtOrder) };
// booked as SUPPLIER; its codes, issued at payment, are refunded only until shown, like a pool's
const SUPPLIER_CODES: Rules = Rules { reveals_codes: true, buyer_refund: UntilRevealed, ..SUPPLIER };
// each warehouse a cell with its own shards (paused with the SKU); no campaigns (not proven)
const WAREHOUSE: Rules = rules(true, false, Shards, BeforeShipping, true, true, AtOrder);
// held on its own shards like QUANTITY; another system's hold cannot wait for a restock, and a
// campaign's price and quota are for stock that exists; a released lock is never retaken (its
// backlog was cancelled with it: the late payment is refunded as an oversell); sold short anyway,
// so a checkout the store cannot take during an outage is recorded and written once it can
const BACKORDER: Rules =
    Rules { recorded_on_outage: true, ..rules(false, false, Shards, BeforeShipping, true, false, AtOrder) };

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Quantity,
        Kind::Calendar,
        Kind::Bundle,
        Kind::PayTime,
        Kind::AtShipment,
        Kind::Unlimited,
        Kind::CodePool,
        Kind::Backorder,
        Kind::Supplier,
        Kind::SupplierCodes,
        Kind::Warehouse,
    ];

    /// The kind of a SKU's model. Deduction at payment makes any counted unit a pay-time kind;
    /// deduction at shipment is only valid on a SINGLE unit (`model::validate`).
    pub fn of(model: &InventoryModel) -> Kind {
        match (model.management, model.unit, model.deduct) {
            _ if !model.oversell.is_strict() && super::model::may_backorder(model) => Kind::Backorder,
            (Management::Unlimited, ..) => Kind::Unlimited,
            (Management::CodePool, ..) => Kind::CodePool,
            (Management::Supplier | Management::Quantity, Unit::Code, _) => Kind::SupplierCodes,
            (Management::Supplier, ..) => Kind::Supplier,
            (Management::Quantity, _, Deduct::AtPayment) => Kind::PayTime,
            (Management::Quantity, _, Deduct::AtShipment) => Kind::AtShipment,
            (Management::Quantity, Unit::Single, Deduct::AtOrder) => Kind::Quantity,
            (Management::Quantity, Unit::Calendar, Deduct::AtOrder) => Kind::Calendar,
            (Management::Quantity, Unit::Bundle, Deduct::AtOrder) => Kind::Bundle,
            (Management::Quantity, Unit::Warehouse, Deduct::AtOrder) => Kind::Warehouse,
        }
    }

    /// The kind of a reserved line, as far as its lock's moves care: a code line, a pay-time
    /// line, an at-shipment line, or a line of counted units taken at order (calendar, bundle
    /// and unlimited lines move their cells exactly as a quantity line does).
    pub fn of_line(l: &ReservedLine) -> Kind {
        if l.codes.is_some() {
            Kind::CodePool
        } else if l.at_payment {
            Kind::PayTime
        } else if l.at_shipment {
            Kind::AtShipment
        } else if l.backorder.is_some() {
            Kind::Backorder
        } else {
            Kind::Quantity
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Quantity => "QUANTITY",
            Kind::Calendar => "CALENDAR",
            Kind::Bundle => "BUNDLE",
            Kind::PayTime => "PAY_TIME",
            Kind::AtShipment => "AT_SHIPMENT",
            Kind::Unlimited => "UNLIMITED",
            Kind::CodePool => "CODE_POOL",
            Kind::Supplier => "SUPPLIER",
            Kind::Backorder => "BACKORDER",
            Kind::SupplierCodes => "SUPPLIER_CODES",
            Kind::Warehouse => "WAREHOUSE",
        }
    }

    pub fn rules(self) -> &'static Rules {
        match self {
            Kind::Quantity => &QUANTITY,
            Kind::Calendar => &CALENDAR,
            Kind::Bundle => &BUNDLE,
            Kind::PayTime => &PAY_TIME,
            Kind::AtShipment => &AT_SHIPMENT,
            Kind::Unlimited => &UNLIMITED,
            Kind::CodePool => &CODE_POOL,
            Kind::Supplier => &SUPPLIER,
            Kind::Backorder => &BACKORDER,
            Kind::SupplierCodes => &SUPPLIER_CODES,
            Kind::Warehouse => &WAREHOUSE,
        }
    }
}

/// Whether a lock is held until its order ships: one of its lines is taken at shipment. A lock
/// moves as one record, so its other lines are held and taken with it (docs/inventory-models.md,
/// "Deduction at shipment"): the payment's confirm leaves it FROZEN, the shipment sells it, a
/// refund before shipping releases it.
pub fn held_until_shipment(r: &super::reservation::Reservation) -> bool {
    r.lines.iter().any(|l| Kind::of_line(l).rules().takes_at_shipment())
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a SKU keeps the counters an operator stocks, pauses and views — the seam's answer
/// for the admin side (adjustments, stop-sale, shard counts, the view's `available`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stocking {
    /// Counted units on the SKU's own shards (adjusted, paused, re-sharded there).
    OwnShards,
    /// Codes on the SKU's own shards: stocked by uploading codes; the shard count is fixed at
    /// creation (the codes live on the shards).
    Codes,
    /// Counted units per date, each date its own cell (adjusted with `dates`).
    PerDate,
    /// The children's units: nothing of its own to adjust or pause.
    Children,
    /// No counters at all (`UNLIMITED`): always available.
    NoCounters,
    /// The supplier's: nothing here to adjust.
    AtSupplier,
    /// Counted units per warehouse, each warehouse its own cell (adjusted with `warehouse`;
    /// paused on every warehouse cell).
    PerWarehouse,
}

impl Stocking {
    pub fn of(model: &InventoryModel) -> Stocking {
        match (model.management, model.unit) {
            (Management::Unlimited, _) => Stocking::NoCounters,
            (Management::Supplier, _) | (_, Unit::Code) => Stocking::AtSupplier,
            (Management::CodePool, _) => Stocking::Codes,
            (Management::Quantity, Unit::Single) => Stocking::OwnShards,
            (Management::Quantity, Unit::Calendar) => Stocking::PerDate,
            (Management::Quantity, Unit::Bundle) => Stocking::Children,
            (Management::Quantity, Unit::Warehouse) => Stocking::PerWarehouse,
        }
    }

    /// The SKU has shard items of its own.
    pub fn has_shards(self) -> bool {
        matches!(self, Stocking::OwnShards | Stocking::Codes)
    }

    /// The SKU's stock is codes, kept in rings on its shards (docs/code-pools.md).
    pub fn holds_codes(self) -> bool {
        self == Stocking::Codes
    }

    /// Its shard count may change after creation (a rebalance moves units between shards).
    pub fn reshardable(self) -> bool {
        self != Stocking::Codes
    }

    /// A stop-sale may be set on the SKU itself (else: on its dates' or children's cells).
    pub fn pausable(self) -> bool {
        !matches!(self, Stocking::PerDate | Stocking::Children)
    }
}

/// The compatibility matrix: whether lines of kinds `a` and `b` may share one order or
/// reservation. Symmetric. The reasons:
/// - a SUPPLIER order waits for its bookings before it can be paid, and is failed when one is
///   refused: it carries only SUPPLIER lines (docs/suppliers.md), with or without codes;
/// - a CODE_POOL line and a PAY_TIME line: the pay-time line may come up short at payment and
///   the whole order is then refunded — after its codes may have been seen (review finding
///   "a revealed code sold twice"), so the two never share an order;
/// - an AT_SHIPMENT line holds its order's whole lock FROZEN until the order ships (one lock,
///   one move): a PAY_TIME line could not be taken at payment in it, and a CODE_POOL line's
///   codes (shown only from a SOLD lock) would wait for a shipment codes never have;
/// - a BACKORDER line may wait for a restock after its order is paid, its fill moving the whole
///   lock's pieces by the lock's status: a PAY_TIME line (taken at payment, its order refunded
///   whole when short), an AT_SHIPMENT line (its lock FROZEN after payment: "ships when filled"
///   and "taken at shipment" would race) and a CODE_POOL line (a refund of a waiting order after
///   its codes were shown) never share its order.
///
/// Two lines of any other kinds may; the plan still refuses one stock item moved both at order
/// and at payment (a bundle taken at order whose child is also ordered at payment).
pub fn may_share_an_order(a: Kind, b: Kind) -> bool {
    use Kind::*;
    match (a, b) {
        (Supplier | SupplierCodes, Supplier | SupplierCodes) => true,
        (Supplier | SupplierCodes, _) | (_, Supplier | SupplierCodes) => false,
        (CodePool, PayTime) | (PayTime, CodePool) => crate::mutant!("p2-1-shown-code-resold"),
        (AtShipment, PayTime | CodePool) | (PayTime | CodePool, AtShipment) => false,
        (Backorder, PayTime | AtShipment | CodePool) | (PayTime | AtShipment | CodePool, Backorder) => false,
        _ => true,
    }
}

/// Who holds the lines being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A Holdfast order (`POST /orders`).
    Order,
    /// Another order system's hold (`POST /reservations`).
    External,
}

/// One line as admission sees it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub sku: &'a Sku,
    pub kind: Kind,
    pub campaign: bool,
}

/// Why lines are refused before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0} ({1}) cannot be held through /reservations; order it through /orders")]
    NotReservable(Sku, Kind),
    #[error("{0} ({1}) is not sold in campaigns")]
    NoCampaign(Sku, Kind),
    #[error("{0} ({1}) and {2} ({3}) cannot share one order; order them separately")]
    NotTogether(Sku, Kind, Sku, Kind),
}

impl Refusal {
    /// The SKU the refusal names first.
    pub fn sku(&self) -> &Sku {
        match self {
            Refusal::NotReservable(s, _) | Refusal::NoCampaign(s, _) | Refusal::NotTogether(s, ..) => s,
        }
    }
}

/// Admission: may these lines be held together by `holder`? Pure; decided before any write.
pub fn admit(holder: Holder, lines: &[Candidate<'_>]) -> Result<(), Refusal> {
    for l in lines {
        let r = l.kind.rules();
        if holder == Holder::External && !r.external {
            return Err(Refusal::NotReservable(l.sku.clone(), l.kind));
        }
        if l.campaign && !r.campaign {
            return Err(Refusal::NoCampaign(l.sku.clone(), l.kind));
        }
    }
    for (i, a) in lines.iter().enumerate() {
        if let Some(b) = lines[i + 1..].iter().find(|b| !may_share_an_order(a.kind, b.kind)) {
            return Err(Refusal::NotTogether(a.sku.clone(), a.kind, b.sku.clone(), b.kind));
        }
    }
    Ok(())
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The compatibility matrix as a Markdown table (docs/inventory-models.md carries it; a test
/// checks the copy is current).
pub fn render_matrix() -> String {
    let mut out = String::from("| kind | ");
    out.push_str(&Kind::ALL.map(|k| format!("`{}`", k.name())).join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(Kind::ALL.len()));
    out.push('\n');
    for a in Kind::ALL {
        out.push_str(&format!("| `{}` | ", a.name()));
        out.push_str(&Kind::ALL.map(|b| yes(may_share_an_order(a, b))).join(" | "));
        out.push_str(" |\n");
    }
    out
}

/// The rules of every kind as a Markdown table (docs/inventory-models.md, checked as above).
pub fn render_rules() -> String {
    let mut out = String::from("| kind | `/reservations` | campaign | stop-sale judged on | buyer refund | allowance back on restock | retaken after release | taken at | recorded in a store outage |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for k in Kind::ALL {
        let r = k.rules();
        let pause = match r.pause {
            PauseBy::Shards => "each shard, in the freeze",
            PauseBy::CachedMetadata => "metadata (cached)",
            PauseBy::FreshMetadata => "metadata, fresh, at order and at payment",
            PauseBy::Cells => "its dates', children's or warehouses' shards",
        };
        let refund = match r.buyer_refund {
            BuyerRefund::BeforeShipping => "before shipping",
            BuyerRefund::UntilRevealed => "until a code is shown",
        };
        let at = match r.deduct {
            Deduct::AtOrder => "order",
            Deduct::AtPayment => "payment",
            Deduct::AtShipment => "shipment (held from order)",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            k.name(),
            yes(r.external),
            yes(r.campaign),
            pause,
            refund,
            yes(r.allowance_back),
            yes(r.retake),
            at,
            yes(r.recorded_on_outage)
        ));
    }
    out
}

#[cfg(test)]
mod tests;
