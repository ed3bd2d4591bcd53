//! Ports: what the services need from the outside world. The DynamoDB, SQS and EventBridge
//! adapters implement them for production and the local stack; `adapters::memory` implements
//! them for fast unit tests and the CPU benchmarks.
//!
//! Convention: the outer `anyhow::Result` is infrastructure failure (retryable, 5xx); an inner
//! `Result` is a domain answer the adapter translated from a condition or cancellation reason.

use crate::domain::campaign::Campaign;
use crate::domain::events::OrderEvent;
use crate::domain::invariants::ShardCounts;
use crate::domain::model::{BundleChild, InventoryModel};
use crate::domain::order::{Order, OrderRecord};
use crate::domain::reservation::{LockStatus, Reservation, ReservationKind};
use crate::domain::{CampaignId, Currency, OrderId, ReservationId, Sku, UserId};
use async_trait::async_trait;
use std::collections::HashMap;

pub use crate::domain::reservation::{FreezeLimits, FreezeRejection};
pub use crate::domain::MAX_DELAY_SECONDS;

mod sweep;
pub use sweep::{bucket_of, LockSums, Page, SweepIndex, WorkItem, INDEX_BUCKETS, LOCK_GROUPS};

mod keys;
pub use keys::CodeKeyService;
mod admin;
pub mod sale;
pub use admin::{AdminStamp, Stamped};
pub use sale::{Counters, SaleStore};

/// SKU metadata (docs/architecture.md, "Data model").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkuMeta {
    pub sku: Sku,
    pub name: String,
    pub price: u64,
    pub currency: Currency,
    /// Shards freezes allocate from (1..=64).
    pub shards: u16,
    /// Shard items that exist (high-water mark of `shards`); the stock view sums all of them,
    /// because locks taken before a shard-count reduction still point at the old shards.
    pub slots: u16,
    pub per_user_limit: Option<u32>,
    /// Net units added through adjustments (invariant 1: total must equal it).
    pub stocked: i64,
    /// Incremented on every metadata write; writes are conditional on it.
    pub version: u64,
    /// Stop-sale: copied onto every shard, where the freeze condition reads it.
    pub paused: bool,
    /// How the stock is kept and taken (docs/inventory-models.md); fixed at creation.
    pub model: InventoryModel,
    /// A BUNDLE's children.
    pub bundle: Vec<BundleChild>,
    /// A SUPPLIER SKU's adapter and settings (docs/suppliers.md).
    pub supplier: Option<crate::domain::supplier::SupplierConfig>,
    /// Sale controls (docs/operations.md): checkouts per second admitted per warm Lambda, and
    /// the available level below which a `LowStock` event is sent.
    pub controls: SkuControls,
    /// Campaigns with a ring-fenced item of this SKU (their cells hold its reserved units).
    pub fences: Vec<CampaignId>,
}

impl SkuMeta {
    /// A stock cell of `parent` (a calendar date's, a ring-fence's): plain stock with the
    /// parent's price and currency, `shards` shards, nothing stocked yet.
    pub fn cell_of(parent: &SkuMeta, sku: Sku, name: String, shards: u16) -> SkuMeta {
        SkuMeta {
            sku,
            name,
            price: parent.price,
            currency: parent.currency.clone(),
            shards,
            slots: shards,
            per_user_limit: None,
            stocked: 0,
            version: 1,
            paused: false,
            model: InventoryModel::default(),
            bundle: Vec::new(),
            supplier: None,
            controls: SkuControls::default(),
            fences: Vec::new(),
        }
    }
}

/// A SKU's sale controls; both optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkuControls {
    pub admission_rate: Option<u32>,
    pub low_stock_threshold: Option<i64>,
}

/// One admin stock change, idempotent by `adjustment_id` (the audit trail of docs/architecture.md, "Data model").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adjustment {
    pub sku: Sku,
    pub adjustment_id: String,
    pub delta: i64,
    pub reason: String,
    /// The admin's JWT `sub` (stamped on the shards for the journal, kept on the record as `by`).
    pub actor: Option<String>,
    pub at_ms: i64,
    /// Per-shard changes summing to `delta`.
    pub pieces: Vec<(u16, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdjustRejection {
    /// This adjustment id was already applied; here is what it recorded.
    Duplicate { delta: i64 },
    /// A shard no longer had what the plan removes (re-read and retry).
    ShardShort,
    /// DynamoDB reported a transaction conflict (re-read and retry).
    Conflict,
    /// (Code upload) another batch stored one of these codes meanwhile: re-check and retry.
    CodeTaken,
}

/// Codes added to a pool: an adjustment of `+codes` whose shard pieces also append the sealed
/// codes to their rings and register their fingerprints under `batch_id` (docs/code-pools.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeUpload {
    pub adjustment: Adjustment,
    pub batch_id: String,
    /// One per shard piece of the adjustment, codes in ring order.
    pub appends: Vec<crate::domain::codes::CodeAppend>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveRejection {
    /// The lock's status is no longer the one the move started from.
    StatusChanged,
    /// (Retake only) the shards no longer hold the units.
    ShardShort,
    /// DynamoDB reported a transaction conflict: retry.
    Conflict,
}

/// One audited change of a campaign item's quota, idempotent by `adjustment_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignAdjustment {
    pub campaign_id: CampaignId,
    pub sku: Sku,
    pub adjustment_id: String,
    pub delta: i64,
    pub reason: String,
    pub actor: Option<String>,
    pub at_ms: i64,
    /// Per-shard changes summing to `delta`.
    pub pieces: Vec<(u16, i64)>,
}

/// A counter a user's allowance is read from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Units of a SKU the user holds (per-user limit).
    Limit(Sku, UserId),
    /// Units of a campaign item the user holds (campaign per-user limit).
    CampaignLimit(CampaignId, Sku, UserId),
    /// The user's pending checkouts.
    Pending(UserId),
}

/// The stock table (owned by the stock service).
#[async_trait]
pub trait StockStore: Send + Sync {
    /// Metadata of the given SKUs that exist (one batch read).
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>>;
    /// Writes metadata: create when `expected_version` is `None`, else conditional on it.
    /// Creates shard items `0..meta.slots` that do not exist yet. `false` = lost a race.
    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool>;
    /// Counters of shards `0..slots`, read consistently.
    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>>;
    /// Moves available units between shards: each shard's `available` goes from `old` to
    /// `new_available`, conditional on the old value, together with the metadata write. Each
    /// shard written carries `cause` (the journal's `ref`/`actor`/`why`).
    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &crate::domain::journal::Cause,
    ) -> anyhow::Result<bool>;
    async fn adjust(&self, adj: &Adjustment, meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Two adjustments of two SKUs applied together or not at all: a ring-fence moving units
    /// between a SKU and its campaign cell (docs/campaigns.md, "Ring-fenced quota"). Rejections
    /// as [`StockStore::adjust`]'s, `Duplicate` naming `out`'s.
    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// One transaction: the reservation (if absent), every shard piece (`available >= q`),
    /// and per-user counters for limited lines (`limits[sku]`).
    /// Campaign quota pieces are conditional on the quota and on the window and pause flag
    /// copied onto their shards (judged at `r.created_at_ms`); product pieces on the stock and
    /// the SKU's stop-sale flag; the pending counter on `limits.max_pending`.
    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>>;
    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>>;
    /// FROZEN → `to` with the shard counters, conditional on the lock still being FROZEN.
    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>>;
    /// RELEASED → SOLD, taking the units from `available` again (defence in depth, docs/architecture.md, "Stock operations").
    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>>;
    /// SOLD → RESTOCKED, putting the units back on sale (`sold -= q, available += q`) and
    /// giving the buyer's allowance back, conditional on the lock still being SOLD.
    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>>;
    /// Marks an oversell once, conditional on the lock being RELEASED and not marked yet:
    /// `false` when it was marked already or has moved (a concurrent confirm retook it). A
    /// marked lock is never retaken (`retake` is conditional on no mark).
    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool>;
    /// Records what becomes of a code lock's codes, once (docs/code-pools.md, "Reveal and
    /// refund"): `Revealed` only on a SOLD lock, `Withdrawn` on a lock not yet released; either
    /// only if no other fate is recorded. Returns the fate the lock holds afterwards (`None`:
    /// no such lock, or not in a status that allows `fate`).
    async fn settle_codes(
        &self,
        id: &ReservationId,
        fate: crate::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<crate::domain::reservation::CodeFate>>;
    /// FROZEN reservations created before `before_ms`, from the bucketed sparse index.
    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>>;
    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>>;
    /// Every SKU, from the sparse SKU index.
    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>>;

    /// Metadata for public reads: eventually consistent (half the read cost; may lag a write by
    /// about a second). Admin views and every decision use the consistent reads above.
    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        self.get_skus(skus).await
    }
    /// Shard counters for public reads: eventually consistent.
    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_shards(sku, slots).await
    }
    /// The shard counters of many SKUs (or calendar cells) at once, for public reads: in order,
    /// `slots` each. DynamoDB batches every key of them (100 a request) instead of a read per
    /// SKU: the calendar view's dates.
    async fn read_many_shards_public(&self, cells: &[(Sku, u16)]) -> anyhow::Result<Vec<Vec<ShardCounts>>> {
        let mut out = Vec::with_capacity(cells.len());
        for (sku, slots) in cells {
            out.push(self.read_shards_public(sku, *slots).await?);
        }
        Ok(out)
    }
    /// Stop-sale on or off: the metadata (conditional on `expected_version`) and the flag on
    /// every shard `0..meta.slots`, in one transaction. `false` = lost a race.
    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool>;

    // Admin writes that record who asked (security review L7): the same writes, the record
    // stamped with `by` in the same request (DynamoDB: attributes `ub`, `ua`, `ut` of the item
    // put). A store that keeps no stamps writes them unstamped. A later write that replaces the
    // record without a stamp drops it; every admin path stamps.

    /// [`StockStore::put_sku`], stamped.
    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        let _ = by;
        self.put_sku(meta, expected_version).await
    }
    /// [`StockStore::set_sku_paused`], stamped.
    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        let _ = by;
        self.set_sku_paused(meta, expected_version).await
    }
    /// [`StockStore::write_campaign`], stamped.
    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        let _ = by;
        self.write_campaign(c, expected_version).await
    }
    /// The stamp the record carries (a consistent read), if any.
    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        let _ = of;
        Ok(None)
    }

    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>>;
    /// Creates (`expected_version` = `None`: metadata and every quota shard, the quota spread
    /// over them) or updates (metadata conditional on the version; window and pause flag
    /// copied onto every quota shard) a campaign in one transaction. `false` = lost a race.
    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool>;
    /// Quota shard counters of one campaign item.
    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>>;
    /// Applies a quota adjustment together with the campaign metadata `next` (its item's quota
    /// already changed), conditional on the stored version being `expected_version`.
    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Every campaign, from the sparse index.
    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>>;
    /// Current values of the given counters (absent = 0), eventually consistent.
    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>>;

    // Code pools (docs/code-pools.md).
    /// The rings of shards `0..slots` of a code pool SKU (consistent; a missing shard is empty).
    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<crate::domain::codes::Ring>>;
    /// The codes at these (shard, position) slots, in order (`None`: no code there).
    async fn read_codes(
        &self,
        sku: &Sku,
        slots: &[(u16, u64)],
    ) -> anyhow::Result<Vec<Option<crate::domain::codes::StoredCode>>>;
    /// Whether the code at this slot legitimately left it (security review L6): it was given
    /// back (`ret`), or the lock bound to it (`o`) was RELEASED. `false` for a code still in
    /// the pool, one held by a FROZEN, SOLD or RESTOCKED lock, or an empty slot. A reveal asks
    /// it of a slot-bound code read elsewhere than the slot it was sealed for.
    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        let _ = (sku, shard, pos);
        anyhow::bail!("this store cannot tell whether a code left its slot")
    }
    /// Which of these fingerprints the pool already holds, with the batch that added each.
    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>>;
    /// Adds codes in one transaction (idempotent by the adjustment id).
    async fn add_codes(&self, upload: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>>;
    /// Hands out `quantity` positions of a code pool shard's ring by moving its head, in one
    /// atomic update (no read, no conflict between buyers), if the head is at most `max_head`:
    /// the first position claimed, or `None` when the ring no longer has them.
    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>>;
    /// Puts claimed positions no lock bound back in the pool (appended at their shards' tails,
    /// the old positions marked given back) in one transaction. `false`: a tail moved or a
    /// position was bound or given back meanwhile — re-read and retry.
    async fn give_back_codes(
        &self,
        sku: &Sku,
        ranges: &[crate::domain::reservation::CodeRange],
    ) -> anyhow::Result<bool>;
    /// Positions in `from..to` of a shard whose slot holds a code neither bound nor given back
    /// (reconcile: a checkout died between its claim and its freeze).
    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>>;
    /// Records that every position below `to` was seen bound or given back (if the mark is still `from`).
    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool>;
    /// What an uploaded batch did, once it finished.
    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<crate::domain::codes::BatchResult>>;
    /// Records a finished batch (the first record wins).
    async fn put_code_batch(
        &self,
        sku: &Sku,
        batch_id: &str,
        result: &crate::domain::codes::BatchResult,
    ) -> anyhow::Result<()>;
}

/// Page cursor for listing a user's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderCursor {
    pub created_at_ms: i64,
    pub order_id: OrderId,
}

/// The order table's bucketed sparse indexes the sweep reads (docs/after-sale.md, "Sweeps").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum OrderIndex {
    /// PENDING_PAYMENT orders by payment deadline (epoch seconds).
    Pending,
    /// SHIPPED orders by auto-completion time (epoch seconds).
    Shipped,
    /// Orders with a refund still REQUESTED, by the oldest request (epoch ms).
    RefundsRequested,
    /// Orders whose money was captured, by the first capture (epoch ms): settlement's view of a
    /// day's captures (docs/payments.md, "Settlement").
    Captured,
    /// Orders with a refund issued at a provider, by the latest issue (epoch ms): settlement's
    /// view of a day's refunds.
    Refunded,
}

impl OrderIndex {
    /// (index name, hash attribute, hash prefix, range attribute).
    pub fn keys(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            OrderIndex::Pending => ("pending-by-deadline", "pb", "P#", "pd"),
            OrderIndex::Shipped => ("shipped-by-due", "sb", "S#", "sdue"),
            OrderIndex::RefundsRequested => ("refunds-requested", "rb", "R#", "rdue"),
            OrderIndex::Captured => ("captured-by-time", "qb", "Q#", "qat"),
            OrderIndex::Refunded => ("refunded-by-time", "fb", "F#", "fat"),
        }
    }

    /// The index's range value of `o`, if `o` is in it.
    pub fn value_of(self, o: &Order) -> Option<i64> {
        use crate::domain::order::OrderStatus;
        use crate::domain::refund::RefundStatus;
        match self {
            // an order awaiting its supplier is in it too, by its supplier deadline (kept in
            // `pay_expire_at` until the bookings confirm): the sweep resolves a lost poll
            // and any order with a payment attempt that could still take money: its deadline
            // settles it (service/paying.rs, `settle_stray_attempts`)
            OrderIndex::Pending => {
                (o.status.is_open_unpaid() || o.attempts.iter().any(|a| a.state.unsettled())).then_some(o.pay_expire_at)
            }
            OrderIndex::Shipped => {
                o.shipment.as_ref().filter(|_| o.status == OrderStatus::Shipped).map(|s| s.auto_complete_at)
            }
            OrderIndex::RefundsRequested => {
                o.refunds.iter().filter(|r| r.status == RefundStatus::Requested).map(|r| r.requested_at_ms).min()
            }
            OrderIndex::Captured => o.payments.iter().filter(|p| p.succeeded).map(|p| p.at_ms).min(),
            OrderIndex::Refunded => o.refunds.iter().filter_map(|r| r.issued_at_ms).max(),
        }
    }

    pub const ALL: [OrderIndex; 5] = [
        OrderIndex::Pending,
        OrderIndex::Shipped,
        OrderIndex::RefundsRequested,
        OrderIndex::Captured,
        OrderIndex::Refunded,
    ];
}

/// The order table (owned by the order service).
#[async_trait]
pub trait OrderStore: Send + Sync {
    /// Consistent read.
    async fn get(&self, id: &OrderId) -> anyhow::Result<Option<OrderRecord>>;
    /// Puts a new order if nothing (order or VOID) exists under its id; `false` otherwise.
    async fn put_new(&self, o: &Order) -> anyhow::Result<bool>;
    /// Puts the VOID tombstone if nothing exists under the id; `false` otherwise.
    async fn put_void(&self, id: &OrderId) -> anyhow::Result<bool>;
    /// Compare-and-set: writes `next` if the stored order is still at `prev.version`.
    async fn replace(&self, prev: &Order, next: &Order) -> anyhow::Result<bool>;
    /// A user's orders, newest first.
    async fn list_for_user(
        &self,
        user: &UserId,
        after: Option<&OrderCursor>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Order>, Option<OrderCursor>)>;
    /// PENDING_PAYMENT orders whose deadline is before `before_s`, from the sparse index.
    async fn pending_due(&self, before_s: i64) -> anyhow::Result<Vec<OrderId>> {
        self.due_in(OrderIndex::Pending, before_s).await
    }
    /// Orders in `index` whose range value is before `before`, every bucket.
    async fn due_in(&self, index: OrderIndex, before: i64) -> anyhow::Result<Vec<OrderId>>;

    /// The orders in `index` whose value is in `from..to`, all buckets.
    async fn between(&self, index: OrderIndex, from: i64, to: i64) -> anyhow::Result<Vec<OrderId>>;
}

/// Delayed work (SQS delay queues).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Message {
    /// Expire this order if it is still unpaid at `due_at` (epoch seconds).
    PaymentTimeout { schema: u32, order_id: String, due_at: i64 },
    /// Check this reservation at `due_at`: orphan freeze (no order) or expired external hold.
    ReservationCheck { schema: u32, reservation_id: String, kind: ReservationKind, due_at: i64 },
    /// One unit of a reconcile sweep that started at `sweep_ms` (its own queue).
    ReconcileWork { schema: u32, sweep_ms: i64, item: WorkItem },
    /// Ask the supplier about this order's bookings (poll number `attempt`, the order written
    /// at `started_at`, epoch s); rides the payment-timeout queue (docs/suppliers.md).
    SupplierPoll { schema: u32, order_id: String, attempt: u32, started_at: i64 },
}

#[async_trait]
pub trait Messages: Send + Sync {
    async fn send(&self, msg: &Message, delay_s: u32) -> anyhow::Result<()>;
    /// Reconcile work items still queued, in flight or delayed (approximate, as SQS counts):
    /// a sweep is not seeded while the last one is unfinished (docs/runbook.md, "Reconcile").
    async fn reconcile_backlog(&self) -> anyhow::Result<u64>;
    /// Every queue of this stack with its approximate depth (the console's machinery page).
    async fn queue_depths(&self) -> anyhow::Result<Vec<QueueDepth>> {
        Ok(Vec::new())
    }
}

/// One queue's depth as SQS counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    pub name: String,
    pub visible: u64,
    pub in_flight: u64,
    pub delayed: u64,
}

/// The EventBridge bus.
#[async_trait]
pub trait EventBus: Send + Sync {
    /// Publishes the events; the result says, per event, whether it was accepted.
    async fn publish(&self, events: &[OrderEvent]) -> anyhow::Result<Vec<bool>>;
    /// Publishes one stock event (`source = holdfast.stock`, e.g. `LowStock`); `true` = accepted.
    async fn publish_stock(&self, detail_type: &str, detail: &serde_json::Value) -> anyhow::Result<bool>;
}

/// Marker error: the store refused the request for capacity (DynamoDB throttling: a hot
/// partition, or the table's or account's request limits) after the path's bounded SDK
/// retries. Adapters return it inside the `anyhow::Error`; the HTTP edge downcasts it and
/// answers 429 `busy` with `Retry-After`, because a retry a moment later is the remedy.
#[derive(Debug, thiserror::Error)]
#[error("throttled: {0}")]
pub struct Throttled(pub String);

/// Whether `e` (or anything in its chain) is a [`Throttled`].
pub fn is_throttled(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Throttled>().is_some())
}

/// One refund asked of a payment provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRequest {
    /// Idempotency key at the provider: asking again with the same id returns the first answer
    /// and moves no more money.
    pub refund_id: String,
    pub payment_id: String,
    pub order_id: OrderId,
    /// Minor units.
    pub amount: u64,
    /// ISO 4217, upper case as Holdfast stores it (an adapter converts, e.g. Stripe's lower case).
    pub currency: String,
}

/// What the provider answered to a refund it accepted. The money is only known to be back
/// when its webhook confirms (`service::refunds::confirm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRefund {
    pub provider_refund_id: String,
    /// The provider already reports it done (some answer synchronously).
    pub succeeded: bool,
}

/// One payment asked of a provider for an order (docs/payments.md, "Starting a payment").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentRequest {
    /// Idempotency key at the provider (`pay_<order id>_<attempt>`): asking again with the same
    /// key answers the same payment and creates no second one.
    pub attempt_key: String,
    pub order_id: OrderId,
    /// Minor units.
    pub amount: u64,
    /// ISO 4217, upper case as Holdfast stores it (an adapter converts).
    pub currency: String,
}

/// A payment the provider created: what the buyer's page needs to pay it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedPayment {
    pub payment_id: String,
    /// The page where the buyer pays (the generic provider).
    pub redirect_url: Option<String>,
    /// What the buyer's page hands to Stripe.js (Stripe).
    pub client_secret: Option<String>,
}

/// Where a payment stands at its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaymentState {
    /// Created; the buyer has not paid (Stripe: `requires_payment_method`, `requires_action`,
    /// `requires_confirmation`).
    Open,
    /// The provider is still deciding (Stripe: `processing`).
    Processing,
    /// Captured: the money is taken.
    Succeeded,
    /// The buyer's attempt failed; nothing taken.
    Failed,
    /// Cancelled; nothing taken, and it can no longer succeed.
    Cancelled,
}

/// A payment as its provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPayment {
    pub payment_id: String,
    /// The order it was made for, from the provider's metadata (absent if made outside Holdfast).
    pub order_id: Option<String>,
    pub amount: u64,
    /// Upper case.
    pub currency: String,
    pub state: PaymentState,
}

/// A refund as its provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRefundState {
    pub provider_refund_id: String,
    /// Holdfast's refund id, from the provider's metadata.
    pub refund_id: Option<String>,
    pub payment_id: String,
    pub amount: u64,
    /// Upper case.
    pub currency: String,
    /// `None` while pending; `Some(true)` done, `Some(false)` failed.
    pub succeeded: Option<bool>,
}

/// What a provider lists for one UTC day: captures (payments that succeeded that day) and
/// refunds (made that day), for settlement (docs/payments.md, "Settlement").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayListing {
    pub captures: Vec<ProviderPayment>,
    pub refunds: Vec<ProviderRefundState>,
}

/// A payment provider (docs/payments.md; refunds: docs/after-sale.md, "Providers"). Every call is
/// safe to repeat. The outer error is infrastructure (retry); an inner `Err(reason)` is the
/// provider refusing (retrying will not help, a person must look).
#[async_trait]
pub trait PaymentProvider: Send + Sync {
    /// Creates (or, for the same `attempt_key`, answers again) a payment for an order.
    async fn create_payment(&self, r: &PaymentRequest) -> anyhow::Result<Result<CreatedPayment, String>>;

    /// Where a payment stands; `None` if the provider does not know it.
    async fn payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>>;

    /// Cancels a payment that has not succeeded. Answers the payment as it stands after the
    /// call: `Cancelled` (or `Failed`), or `Succeeded` when it was too late — the money is
    /// taken and the caller must treat the order as paid. `None`: the provider does not know it.
    async fn cancel_payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>>;

    /// Refunds `r.amount` of `r.payment_id`, idempotent by `r.refund_id`.
    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>>;

    /// Where a refund stands, by the provider's id; `None` if the provider does not know it.
    async fn refund_state(&self, provider_refund_id: &str) -> anyhow::Result<Option<ProviderRefundState>>;

    /// Every capture and refund of one UTC day (`YYYY-MM-DD`), all pages.
    async fn day_listing(&self, day: &str) -> anyhow::Result<DayListing>;
}

/// A supplier's answer to a quote: units it can deliver now (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    pub available: Option<u64>,
}

/// One booking (or quote) asked of a supplier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookingRequest<'a> {
    /// Idempotency key ([`crate::domain::supplier::booking_key`]): the same key books once.
    pub key: &'a str,
    pub sku: &'a Sku,
    pub config: &'a crate::domain::supplier::SupplierConfig,
    pub quantity: u32,
    pub dates: &'a [crate::domain::model::Day],
}

/// Marker error: the supplier does not know this booking id.
#[derive(Debug, thiserror::Error)]
#[error("unknown booking {0}")]
pub struct UnknownBooking(pub String);

/// An outside supplier holding a SUPPLIER SKU's stock (docs/suppliers.md). The outer error is
/// infrastructure (retry later); every call is safe to repeat.
#[async_trait]
pub trait SupplierPort: Send + Sync {
    /// Units available for `quantity` of `sku` (`key` is unused for a quote).
    async fn quote(&self, req: &BookingRequest<'_>) -> anyhow::Result<Quote>;
    /// Books, idempotent by `req.key`: the same key answers the same booking id.
    async fn book(&self, req: &BookingRequest<'_>) -> anyhow::Result<String>;
    /// The booking's status (`PENDING`, `CONFIRMED`, `FAILED`, or `CANCELLED` once cancelled);
    /// an unknown id is an [`UnknownBooking`] error.
    async fn status(&self, booking_id: &str) -> anyhow::Result<crate::domain::supplier::BookingStatus>;
    /// Cancels; cancelling a cancelled booking is a no-op. An unknown id is [`UnknownBooking`].
    async fn cancel(&self, booking_id: &str) -> anyhow::Result<()>;
}

/// The stock journal (docs/after-sale.md, "Stock journal"): one entry per counter write of a
/// product or quota shard, written by the `stock-journal` stream consumer.
#[async_trait]
pub trait Journal: Send + Sync {
    /// Writes entries; writing an entry again (a redelivered stream record) writes the same item.
    async fn put(&self, entries: &[crate::domain::journal::Entry]) -> anyhow::Result<()>;
    /// A SKU's entries, newest first, after `cursor` (an entry key from a previous page); the
    /// second value resumes after this page (`None`: no more).
    async fn for_sku(
        &self,
        sku: &Sku,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, Option<String>)>;
    /// Every entry whose cause id (`ref`) is `reference` (an order id, an adjustment id), oldest
    /// first. From an index: may lag a write by a moment.
    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<crate::domain::journal::Entry>>;
    /// A SKU's entries with a key after `after` (`None`: from the first), oldest first, at most
    /// `limit`; `true` when more follow.
    async fn since(
        &self,
        sku: &Sku,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, bool)>;
    /// The reconcile check's place in a SKU's journal (review protocol-2 #7).
    async fn checkpoint(&self, sku: &Sku) -> anyhow::Result<Option<crate::domain::journal::Checkpoint>>;
    /// Writes `cp` (its version one above `expected`) if the stored checkpoint is still at
    /// `expected` (`None`: absent); `false` = another check moved it meanwhile.
    async fn put_checkpoint(
        &self,
        sku: &Sku,
        cp: &crate::domain::journal::Checkpoint,
        expected: Option<u64>,
    ) -> anyhow::Result<bool>;
}

/// Where the webhook (and other secret) keys come from. Every key returned is accepted.
#[async_trait]
pub trait WebhookKeys: Send + Sync {
    async fn keys(&self) -> anyhow::Result<Vec<crate::config::Secret>>;
}
