//! Reservations: the lock record of one order's frozen stock, and its status machine
//! FROZEN → SOLD | RELEASED (docs/architecture.md, "Stock operations").

use super::allocation::Piece;
use super::model::Day;
use super::{CampaignId, Currency, ReservationId, Sku, UserId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Most distinct SKUs in one order or reservation. A freeze is one DynamoDB transaction
/// (at most 100 actions, never two on one item): each line needs its lock share, one action per
/// shard piece and one for a per-user counter; 20 lines leave room for splits.
pub const MAX_LINES: usize = 20;

/// Most actions in one DynamoDB transaction.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LockStatus {
    Frozen,
    Sold,
    Released,
    /// Sold, then put back on sale after a refund before shipping or a return (docs/after-sale.md).
    Restocked,
}

impl LockStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LockStatus::Frozen => "FROZEN",
            LockStatus::Sold => "SOLD",
            LockStatus::Released => "RELEASED",
            LockStatus::Restocked => "RESTOCKED",
        }
    }

    /// The buyer's per-user allowance no longer counts these units.
    pub fn gives_allowance_back(self) -> bool {
        matches!(self, LockStatus::Released | LockStatus::Restocked)
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "FROZEN" => Some(LockStatus::Frozen),
            "SOLD" => Some(LockStatus::Sold),
            "RELEASED" => Some(LockStatus::Released),
            "RESTOCKED" => Some(LockStatus::Restocked),
            _ => None,
        }
    }
}

/// What a requested lock move means from the lock's current status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMove {
    /// FROZEN → target: perform the conditional write.
    Apply,
    /// Already in the target status: a duplicate, nothing to do.
    AlreadyDone,
    /// The lock went the other way. For confirm this is the oversell path (docs/architecture.md, "Stock operations").
    Conflict,
}

/// The lock status machine: FROZEN moves to SOLD (confirm) or RELEASED (release); SOLD moves
/// to RESTOCKED. A confirm of a RESTOCKED lock is done already (it was sold first).
pub fn plan_move(current: LockStatus, target: LockStatus) -> LockMove {
    match (current, target) {
        (LockStatus::Frozen, LockStatus::Sold | LockStatus::Released) => LockMove::Apply,
        (LockStatus::Sold, LockStatus::Restocked) => LockMove::Apply,
        (LockStatus::Restocked, LockStatus::Sold) => LockMove::AlreadyDone,
        (c, t) if c == t => LockMove::AlreadyDone,
        _ => LockMove::Conflict,
    }
}

/// Who made the reservation: Holdfast's create-order, or another order system through
/// `/reservations` (released on its own at `expires_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReservationKind {
    Order,
    External,
}

impl ReservationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationKind::Order => "order",
            ReservationKind::External => "external",
        }
    }
}

/// The backorder part of an order line of a BACKORDER SKU (present on every such line, `short`
/// 0 when the stock covered it): `short` units were missing at order, `filled` of them have
/// since been taken from a restock (the line's `pieces` hold `quantity − short + filled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BackorderLine {
    pub short: u32,
    #[serde(default)]
    pub filled: u32,
}

impl BackorderLine {
    /// Units still waiting for a restock.
    pub fn open(&self) -> u32 {
        self.short.saturating_sub(self.filled)
    }
}

/// One SKU of a reservation, with the shard pieces it was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservedLine {
    pub sku: Sku,
    pub quantity: u32,
    pub unit_price: u64,
    pub currency: Currency,
    /// Whether a per-user counter was charged for this line (and must be given back on release).
    #[serde(default)]
    pub limited: bool,
    pub pieces: Vec<Piece>,
    /// The campaign quota this line also draws on: moved together with the product pieces by
    /// every freeze, confirm and release (one transaction, no saga).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<CampaignLine>,
    /// The dates of a calendar line (each takes `quantity`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<Day>,
    /// What the line takes from cells other than the SKU's own counters (a calendar line's
    /// dates, a bundle's children); `pieces` stays the SKU's own (docs/inventory-models.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draws: Vec<Draw>,
    /// `AT_PAYMENT`: the line's cells move available → sold at confirm, not at freeze.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_payment: bool,
    /// `AT_SHIPMENT`: the line's cells are frozen at order like any line, but the lock stays
    /// FROZEN (held) after payment and is sold when the order ships (`kind::held_until_shipment`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_shipment: bool,
    /// A code pool line: the ring positions its codes were taken from, one range per piece
    /// (docs/code-pools.md); `Some(empty)` until the freeze plans them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codes: Option<Vec<CodeRange>>,
    /// A BACKORDER SKU's line: the units missing at order and those filled since
    /// (docs/inventory-models.md, "Backorders (oversell allowed)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backorder: Option<BackorderLine>,
}

/// The codes of one piece of a code pool line: `count` ring positions of `shard` from `from` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeRange {
    pub shard: u16,
    pub from: u64,
    pub count: u32,
}

/// One draw of a line on another SKU's cell: `quantity` units of `sku` (on `date`, for a
/// calendar SKU), taken from the shard pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draw {
    pub sku: Sku,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<Day>,
    pub quantity: u32,
    pub pieces: Vec<Piece>,
    /// A ring-fenced campaign item's draw: on the campaign's cell of `sku`
    /// ([`Sku::reserve_cell`]; docs/campaigns.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<super::CampaignId>,
    /// A warehoused line's draw: on the cell of `sku` in this warehouse ([`Sku::warehouse_cell`];
    /// docs/inventory-models.md, "Warehouses").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouse: Option<super::warehouse::Warehouse>,
}

impl Draw {
    /// The SKU whose counters this draw moves.
    pub fn cell(&self) -> Sku {
        if let Some(w) = &self.warehouse {
            return self.sku.warehouse_cell(w);
        }
        match (&self.fence, self.date) {
            (Some(c), _) => self.sku.reserve_cell(c),
            (None, Some(d)) => self.sku.cell(d),
            (None, None) => self.sku.clone(),
        }
    }
}

/// One cell a line holds: its SKU (a calendar cell for a dated draw), units and shard pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellPieces<'a> {
    pub cell: Sku,
    pub quantity: u32,
    pub pieces: &'a [Piece],
}

impl ReservedLine {
    /// Whether the line's units are taken at payment (its kind's deduction; docs/inventory-models.md).
    pub fn takes_at_payment(&self) -> bool {
        self.at_payment
    }

    /// Units of the line still waiting for a restock (a backorder's open units; 0 on any other line).
    pub fn open_units(&self) -> u32 {
        self.backorder.map_or(0, |b| b.open())
    }

    /// Units the line holds on its own cell: its quantity less what still waits for a restock
    /// (a backorder; docs/inventory-models.md, "Backorders (oversell allowed)").
    pub fn held(&self) -> u32 {
        self.quantity - self.open_units()
    }

    /// Whether the line hands out codes (a code pool line; docs/code-pools.md).
    pub fn holds_codes(&self) -> bool {
        self.codes.is_some()
    }

    /// Units the buyer pays for: a calendar line pays `quantity` for each of its dates.
    pub fn units_charged(&self) -> u32 {
        self.quantity.saturating_mul(u32::try_from(self.dates.len().max(1)).unwrap_or(u32::MAX))
    }

    /// Every cell this line holds: the SKU's own counters (when it has pieces on them), then
    /// its draws. An UNLIMITED line holds none.
    pub fn cells(&self) -> Vec<CellPieces<'_>> {
        let own = (!self.pieces.is_empty()).then(|| CellPieces {
            cell: self.sku.clone(),
            quantity: self.held(),
            pieces: &self.pieces,
        });
        own.into_iter()
            .chain(self.draws.iter().map(|d| CellPieces { cell: d.cell(), quantity: d.quantity, pieces: &d.pieces }))
            .collect()
    }

    /// The pieces this line holds on `cell`, to re-plan them (with the units they must sum to).
    pub fn pieces_on_mut(&mut self, cell: &Sku) -> Vec<(u32, &mut Vec<Piece>)> {
        let mut out = Vec::new();
        if &self.sku == cell && !self.pieces.is_empty() {
            out.push((self.held(), &mut self.pieces));
        }
        for d in &mut self.draws {
            if &d.cell() == cell {
                out.push((d.quantity, &mut d.pieces));
            }
        }
        out
    }
}

/// The campaign part of a reserved line: the quota shard pieces it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignLine {
    pub campaign_id: CampaignId,
    pub pieces: Vec<Piece>,
    /// Whether the campaign's per-user counter was charged (and must be given back on release).
    #[serde(default)]
    pub limited: bool,
}

/// The lock record of one order (or external reservation): all its lines move together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub id: ReservationId,
    pub kind: ReservationKind,
    pub status: LockStatus,
    pub user: Option<UserId>,
    /// Hash of the canonical request, so a replay with another body is told apart.
    pub request_hash: String,
    pub created_at_ms: i64,
    /// Epoch seconds: the payment deadline (orders) or the TTL deadline (external).
    pub expires_at: i64,
    pub lines: Vec<ReservedLine>,
    /// Set once when a confirm found the lock released and could not take the stock again.
    pub oversold: bool,
    /// Whether the user's pending-checkout counter was charged by the freeze (given back by
    /// confirm or release).
    pub pending: bool,
    /// What became of a code order's codes, decided once (docs/code-pools.md, "Reveal and
    /// refund"): shown to the buyer, or withdrawn with a refund before anyone saw them.
    pub code_fate: Option<CodeFate>,
}

/// The one-way fate of a SOLD code lock's codes: the first of a reveal and a buyer's refund
/// wins, and the other is refused from then on; a revealed lock is then either voided (refunded)
/// or redeemed, never both. Which move is allowed is `domain::codes::lifecycle::fate_may_become`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CodeFate {
    /// The codes were shown to the buyer: they are theirs, never pooled again, never refunded
    /// automatically.
    Revealed,
    /// The buyer refunded before seeing them: they are never shown.
    Withdrawn,
    /// Shown, then refunded by an operator or an approved refund review: never shown again
    /// (docs/payments.md, "Refund review").
    Voided,
    /// Shown, and at least one of them redeemed by the merchant (docs/code-pools.md,
    /// "Redemption"): the order is never refunded.
    Redeemed,
}

impl CodeFate {
    pub fn as_str(self) -> &'static str {
        match self {
            CodeFate::Revealed => "REVEALED",
            CodeFate::Withdrawn => "WITHDRAWN",
            CodeFate::Voided => "VOIDED",
            CodeFate::Redeemed => "REDEEMED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "REVEALED" => Some(CodeFate::Revealed),
            "WITHDRAWN" => Some(CodeFate::Withdrawn),
            "VOIDED" => Some(CodeFate::Voided),
            "REDEEMED" => Some(CodeFate::Redeemed),
            _ => None,
        }
    }
}

impl Reservation {
    pub fn quantity_of(&self, sku: &Sku) -> u32 {
        self.lines.iter().filter(|l| &l.sku == sku).map(|l| l.quantity).sum()
    }

    /// Number of transaction actions a freeze of these lines needs (a confirm or release needs
    /// the same or fewer).
    pub fn freeze_actions(&self) -> usize {
        // a code line binds each code slot at freeze, and a release writes each back to its
        // ring: one item per code in either transaction
        let line = |l: &ReservedLine| {
            l.cells().iter().map(|c| c.pieces.len()).sum::<usize>()
                + l.codes.as_ref().map_or(0, |_| l.quantity as usize)
                + usize::from(l.limited)
                + l.campaign.as_ref().map_or(0, |c| c.pieces.len() + usize::from(c.limited))
        };
        1 + usize::from(self.pending) + self.lines.iter().map(line).sum::<usize>()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FreezeRejection {
    /// A reservation with this id exists (a replay).
    AlreadyExists,
    /// These SKUs' chosen shards lacked the quantity or are paused: re-read and split.
    ShardShort(Vec<Sku>),
    /// These lines' campaign quota shards lacked the quantity, or the sale is outside its
    /// window or paused: re-read and decide.
    QuotaShort(Vec<Sku>),
    /// The per-user counter of this SKU would pass its limit.
    LimitExceeded(Sku),
    /// The campaign per-user counter of this line would pass its limit.
    CampaignLimitExceeded(Sku),
    /// The user already has the most pending checkouts allowed.
    TooManyPending,
    /// DynamoDB reported a transaction conflict: retry with jitter.
    Conflict,
    /// The checkout's admission token was already spent by a committed checkout
    /// (docs/waiting-room.md).
    AdmissionUsed,
    /// The sales switch, checked in the freeze's own transaction, is not OPEN
    /// (docs/operations.md, "Sales switch").
    SalesClosed,
}

/// The limits a freeze charges, by line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FreezeLimits {
    /// Per-user limit of each limited SKU line.
    pub per_sku: HashMap<Sku, u32>,
    /// Per-user campaign limit of each limited campaign line.
    pub per_campaign_item: HashMap<Sku, u32>,
    /// Cap on the user's pending checkouts, when the reservation charges it.
    pub max_pending: Option<u32>,
    /// The admission this checkout spends (a queued campaign's ticket): spent once, in the
    /// freeze's own transaction (docs/waiting-room.md).
    pub admission: Option<(super::CampaignId, u64)>,
    /// The sales switch must be OPEN, checked in the freeze's own transaction: set when this
    /// Lambda has not seen it within `HOLDFAST_SWITCH_CACHE_MS`, so a warm checkout never
    /// spends a round trip reading it first (docs/operations.md, "Sales switch").
    pub sales_open: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockStatus::*;

    #[test]
    fn only_frozen_locks_move() {
        assert_eq!(plan_move(Frozen, Sold), LockMove::Apply);
        assert_eq!(plan_move(Frozen, Released), LockMove::Apply);
        assert_eq!(plan_move(Sold, Sold), LockMove::AlreadyDone);
        assert_eq!(plan_move(Released, Released), LockMove::AlreadyDone);
        assert_eq!(plan_move(Sold, Released), LockMove::Conflict);
        assert_eq!(plan_move(Released, Sold), LockMove::Conflict);
    }

    #[test]
    fn statuses_round_trip_through_their_names() {
        for s in [Frozen, Sold, Released] {
            assert_eq!(LockStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(LockStatus::parse("frozen"), None);
    }
}
