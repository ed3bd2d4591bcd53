//! Ports: what the services need from the outside world. The DynamoDB, SQS and EventBridge
//! adapters implement them for production and the local stack; `adapters::memory` implements
//! them for fast unit tests and the CPU benchmarks.
//!
//! Convention: the outer `anyhow::Result` is infrastructure failure (retryable, 5xx); an inner
//! `Result` is a domain answer the adapter translated from a condition or cancellation reason.

use crate::domain::events::OrderEvent;
use crate::domain::order::{Order, OrderRecord};
use crate::domain::reservation::ReservationKind;
use crate::domain::{OrderId, ReservationId, Sku, UserId};
use async_trait::async_trait;

pub use crate::domain::reservation::{FreezeLimits, FreezeRejection};
pub use crate::domain::MAX_DELAY_SECONDS;

mod audit;
pub use audit::{Audit, AuditRead, NoAudit};
mod sweep;
pub use sweep::{bucket_of, LockSums, Page, SweepIndex, WorkItem, INDEX_BUCKETS, LOCK_GROUPS};

mod keys;
pub use keys::CodeKeyService;
pub mod sale;
// who made an admin write (security review L7), kept on the record it replaced
pub use crate::domain::catalogue::{AdminStamp, Stamped};
pub use sale::{Counters, SaleStore};

mod campaigns;
mod catalogue;
mod code_pools;
mod locks;
mod queues;
mod shards;
pub use campaigns::{CampaignAdjustment, Campaigns};
pub use catalogue::{Catalogue, SkuControls, SkuMeta};
pub use code_pools::{CodePools, CodeUpload};
pub use locks::{Counter, Locks, MoveRejection};
pub use queues::Queues;
mod waitlists;
pub use waitlists::{Pointer, WaitCommit, Waitlists};
/// The push channel (docs/push.md).
pub mod push;
pub use shards::{AdjustRejection, Adjustment, Shards};

/// The stock table (owned by the stock service): every port over it, what one adapter implements.
/// The app holds each port in a field of its own (`App::catalogue`, `shards`, `locks`,
/// `campaigns`, `code_pools`, `queues`; `App::set_stock` fills them from one store), so a use
/// case names the port it calls; the whole store is for the store contract and the wiring.
pub trait StockStore: Catalogue + Shards + Locks + Campaigns + CodePools + Queues {}

impl<T: Catalogue + Shards + Locks + Campaigns + CodePools + Queues + ?Sized> StockStore for T {}

/// Page cursor for listing a user's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderCursor {
    pub created_at_ms: i64,
    pub order_id: OrderId,
}

/// The order table's bucketed sparse indexes the sweep reads (docs/runbook.md, "Reconcile").
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
    /// Orders whose buyer's refund waits for an admin (REFUND_REQUESTED), by the request (epoch
    /// ms): `GET /admin/refund-reviews`, oldest first, and the review-age alarm.
    ReviewsPending,
    /// Orders with a refund ISSUED at a provider and not yet confirmed, by the oldest issue
    /// (epoch ms): the sweep asks the provider until its answer is final (docs/runbook.md).
    RefundsIssued,
    /// Orders whose stock or bookings must still move (a restocking order not yet found
    /// restocked, a closed or restocking SUPPLIER order still holding bookings), by the last
    /// change (epoch ms): the sweep finishes the move the event flow lost (docs/runbook.md).
    StockToSettle,
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
            OrderIndex::ReviewsPending => ("reviews-pending", "vb", "V#", "vat"),
            OrderIndex::RefundsIssued => ("refunds-issued", "ib", "I#", "iat"),
            OrderIndex::StockToSettle => ("stock-to-settle", "tb", "T#", "tat"),
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
            // and a paid order whose supplier codes are still being issued, by the time the sweep
            // runs the issue itself (docs/suppliers.md, "Codes issued by the supplier")
            // An order waiting for its payment (PENDING_PAYMENT or PAYING) is not: its lock is
            // FROZEN until the order moves, and the lock sweep reads the order behind every
            // stale lock and decides an overdue one as this index's pass would (docs/runbook.md,
            // "Reconcile"); an entry written at checkout and removed at payment would cost every
            // paid order 2 write units for the same backstop.
            OrderIndex::Pending => {
                let unpaid = (!o.status.awaits_payment()
                    && (o.status.is_open_unpaid() || o.attempts.iter().any(|a| a.state.unsettled())))
                .then_some(o.pay_expire_at);
                unpaid.into_iter().chain(crate::domain::order::codes::sweep_due(o)).min()
            }
            OrderIndex::Shipped => {
                o.shipment.as_ref().filter(|_| o.status == OrderStatus::Shipped).map(|s| s.auto_complete_at)
            }
            OrderIndex::RefundsRequested => {
                o.refunds.iter().filter(|r| r.status == RefundStatus::Requested).map(|r| r.requested_at_ms).min()
            }
            OrderIndex::Captured => o.payments.iter().filter(|p| p.succeeded).map(|p| p.at_ms).min(),
            OrderIndex::Refunded => o.refunds.iter().filter_map(|r| r.issued_at_ms).max(),
            OrderIndex::ReviewsPending => {
                o.review.as_ref().filter(|_| o.status == OrderStatus::RefundRequested).map(|r| r.requested_at_ms)
            }
            OrderIndex::RefundsIssued => o
                .refunds
                .iter()
                .filter(|r| r.status == RefundStatus::Issued)
                .map(|r| r.issued_at_ms.unwrap_or(r.requested_at_ms))
                .min(),
            OrderIndex::StockToSettle => o.stock_to_settle().then_some(o.updated_at_ms),
        }
    }

    pub const ALL: [OrderIndex; 8] = [
        OrderIndex::Pending,
        OrderIndex::Shipped,
        OrderIndex::RefundsRequested,
        OrderIndex::Captured,
        OrderIndex::Refunded,
        OrderIndex::ReviewsPending,
        OrderIndex::RefundsIssued,
        OrderIndex::StockToSettle,
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
    /// Ask the supplier for a paid order's codes (attempt `attempt`, 1-based: retried after 1,
    /// 2 and 4 s); rides the payment-timeout queue (docs/suppliers.md, "Codes issued by the supplier").
    SupplierIssue { schema: u32, order_id: String, attempt: u32 },
    /// A backorder checkout accepted while the store was out of reach (202 `RECORDED`), to be
    /// written as an order once it answers (attempt `attempt`, 1-based; recorded at
    /// `recorded_at`, epoch s); rides the reservation-check queue (docs/inventory-models.md,
    /// "Accepted during a store outage"). Carries the order record, so it is personal data.
    RecordedCheckout {
        schema: u32,
        user: String,
        key: String,
        lines: Vec<RecordedLine>,
        details: crate::domain::order::OrderDetails,
        recorded_at: i64,
        attempt: u32,
    },
}

/// One line of a [`Message::RecordedCheckout`]: a backorder line has no campaign and no dates.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedLine {
    pub sku: String,
    pub quantity: u32,
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
    /// Publishes stock events of one type (e.g. a stream batch's `StockChanged`); how many were
    /// accepted. An adapter may batch them (EventBridge: ten per `PutEvents`).
    async fn publish_stock_batch(&self, detail_type: &str, details: &[serde_json::Value]) -> anyhow::Result<usize> {
        let mut accepted = 0;
        for d in details {
            accepted += usize::from(self.publish_stock(detail_type, d).await?);
        }
        Ok(accepted)
    }
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
    /// The codes of a CONFIRMED booking of a `SUPPLIER_CODES` SKU, `req.quantity` of them,
    /// idempotent by `req.key` (the booking's key, which names the order): asked again, the same
    /// codes, never a second set (docs/suppliers.md, "Codes issued by the supplier").
    async fn issue_codes(&self, booking_id: &str, req: &BookingRequest<'_>) -> anyhow::Result<Vec<String>> {
        let _ = (booking_id, req);
        anyhow::bail!("this supplier adapter issues no codes")
    }
}

/// The stock journal (docs/after-sale.md, "Stock journal"): one entry per counter write of a
/// product or quota shard, written by the `stock-journal` stream consumer.
#[async_trait]
pub trait Journal: Send + Sync {
    /// Writes entries; writing an entry again (a redelivered stream record) writes the same item.
    async fn put(&self, entries: &[crate::domain::journal::Entry]) -> anyhow::Result<()>;
    /// A SKU's entries, newest first, after `cursor` (an entry key from a previous page); the
    /// second value resumes after this page (`None`: no more). `spread`: the entries of the
    /// journal partitions below it (`domain::journal::partition`), i.e. of every shard below it
    /// (`domain::journal::spread` of a shard count; `JOURNAL_PARTITIONS` reads them all).
    async fn for_sku(
        &self,
        sku: &Sku,
        spread: u16,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, Option<String>)>;
    /// Every entry whose cause id (`ref`) is `reference` (an order id, an adjustment id), oldest
    /// first. From an index: may lag a write by a moment.
    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<crate::domain::journal::Entry>>;
    /// A SKU's entries with a key after `after` (`None`: from the first), oldest first, at most
    /// `limit`; the second value is the `after` of the next page (`None`: no more; a page may be
    /// short, even empty, and still have one). `spread` as for [`Journal::for_sku`].
    async fn since(
        &self,
        sku: &Sku,
        spread: u16,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, Option<String>)>;
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
