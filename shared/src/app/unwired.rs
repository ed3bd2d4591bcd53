//! The adapter of a port a function does not wire ([`super::wiring`]): every call fails with
//! an error naming the port and the function, so a handler path that reaches a port its
//! `main` left out (and its IAM role does not grant) is an error in the log, never a silent
//! success. One type stands in for every port; the Lambda binaries link it instead of the
//! AWS adapters they do not use.

use super::port::Port;
use crate::domain::campaign::Campaign;
use crate::domain::codes::{DataKey, KeyContext};
use crate::domain::events::OrderEvent;
use crate::domain::invariants::ShardCounts;
use crate::domain::order::{Order, OrderRecord};
use crate::domain::push::Watch;
use crate::domain::queue::{Room, Ticket};
use crate::domain::reservation::{FreezeLimits, FreezeRejection, LockStatus, Reservation};
use crate::domain::sale::SalesSwitch;
use crate::domain::waitlist::{Entry, Head, UserWaits};
use crate::domain::{CampaignId, OrderId, ReservationId, Sku, UserId};
use crate::ports::push::{Connections, Posted, PushTimers, Pusher};
use crate::ports::*;
use async_trait::async_trait;
use std::collections::HashMap;

/// The stand-in for `port` in `function`.
#[derive(Debug, Clone)]
pub struct Unwired {
    pub port: Port,
    pub function: String,
}

impl Unwired {
    pub fn new(port: Port, function: &str) -> Unwired {
        Unwired { port, function: function.to_owned() }
    }

    /// The error every call returns.
    pub fn refusal(&self) -> anyhow::Error {
        anyhow::anyhow!(
            "port {} is not wired in {} (functions/{}/src/main.rs wires what its IAM grants allow)",
            self.port.name(),
            self.function,
            self.function
        )
    }
}

#[async_trait]
impl Catalogue for Unwired {
    async fn admin_stamp(&self, _: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        Err(self.refusal())
    }
    async fn get_skus(&self, _: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        Err(self.refusal())
    }
    async fn put_sku(&self, _: &SkuMeta, _: Option<u64>) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn set_sku_paused(&self, _: &SkuMeta, _: u64) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Shards for Unwired {
    async fn read_shards(&self, _: &Sku, _: u16) -> anyhow::Result<Vec<ShardCounts>> {
        Err(self.refusal())
    }
    async fn rebalance(
        &self,
        _: &SkuMeta,
        _: u64,
        _: &[ShardCounts],
        _: &[i64],
        _: &crate::domain::journal::Cause,
    ) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn adjust(&self, _: &Adjustment, _: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        Err(self.refusal())
    }
    async fn adjust_pair(&self, _: &Adjustment, _: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Locks for Unwired {
    async fn put_frozen(&self, _: &Reservation, _: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        Err(self.refusal())
    }
    async fn get_reservation(&self, _: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        Err(self.refusal())
    }
    async fn get_reservations(&self, _: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        Err(self.refusal())
    }
    async fn move_lock(&self, _: &Reservation, _: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        Err(self.refusal())
    }
    async fn retake(&self, _: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        Err(self.refusal())
    }
    async fn restock(&self, _: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        Err(self.refusal())
    }
    async fn mark_oversold(&self, _: &Reservation) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn frozen_before(&self, _: i64) -> anyhow::Result<Vec<ReservationId>> {
        Err(self.refusal())
    }
    async fn read_counters(&self, _: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        Err(self.refusal())
    }
    async fn fill_backorder(
        &self,
        _: &Reservation,
        _: &Reservation,
        _: &[crate::domain::plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>> {
        Err(self.refusal())
    }
    async fn read_backlog(&self, _: &Sku) -> anyhow::Result<crate::domain::backorder::Backlog> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Campaigns for Unwired {
    async fn get_campaign(&self, _: &CampaignId, _: bool) -> anyhow::Result<Option<Campaign>> {
        Err(self.refusal())
    }
    async fn write_campaign(&self, _: &Campaign, _: Option<u64>) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn read_quota_shards(&self, _: &CampaignId, _: &Sku, _: u16, _: bool) -> anyhow::Result<Vec<ShardCounts>> {
        Err(self.refusal())
    }
    async fn adjust_campaign(
        &self,
        _: &CampaignAdjustment,
        _: &Campaign,
        _: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        Err(self.refusal())
    }
    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl CodePools for Unwired {
    async fn read_rings(&self, _: &Sku, _: u16) -> anyhow::Result<Vec<crate::domain::codes::Ring>> {
        Err(self.refusal())
    }
    async fn read_codes(
        &self,
        _: &Sku,
        _: &[(u16, u64)],
    ) -> anyhow::Result<Vec<Option<crate::domain::codes::StoredCode>>> {
        Err(self.refusal())
    }
    async fn known_codes(&self, _: &Sku, _: &[String]) -> anyhow::Result<HashMap<String, String>> {
        Err(self.refusal())
    }
    async fn add_codes(&self, _: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        Err(self.refusal())
    }
    async fn claim_codes(&self, _: &Sku, _: u16, _: u32, _: u64) -> anyhow::Result<Option<u64>> {
        Err(self.refusal())
    }
    async fn give_back_codes(&self, _: &Sku, _: &[crate::domain::reservation::CodeRange]) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn unbound_codes(&self, _: &Sku, _: u16, _: u64, _: u64) -> anyhow::Result<Vec<u64>> {
        Err(self.refusal())
    }
    async fn mark_checked(&self, _: &Sku, _: u16, _: u64, _: u64) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn code_batch(&self, _: &Sku, _: &str) -> anyhow::Result<Option<crate::domain::codes::BatchResult>> {
        Err(self.refusal())
    }
    async fn put_code_batch(&self, _: &Sku, _: &str, _: &crate::domain::codes::BatchResult) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn settle_codes(
        &self,
        _: &ReservationId,
        _: crate::domain::reservation::CodeFate,
    ) -> anyhow::Result<Option<crate::domain::reservation::CodeFate>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Queues for Unwired {
    async fn next_number(&self, _: &CampaignId, _: u16) -> anyhow::Result<u64> {
        Err(self.refusal())
    }
    async fn put_ticket(&self, _: &CampaignId, _: &UserId, _: &Ticket) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn ticket(&self, _: &CampaignId, _: &UserId) -> anyhow::Result<Option<Ticket>> {
        Err(self.refusal())
    }
    async fn counters(&self, _: &CampaignId, _: u16) -> anyhow::Result<Vec<u64>> {
        Err(self.refusal())
    }
    async fn room(&self, _: &CampaignId) -> anyhow::Result<Room> {
        Err(self.refusal())
    }
    async fn put_room(&self, _: &CampaignId, _: &Room) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn spent(&self, _: &CampaignId, _: u64) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Waitlists for Unwired {
    async fn waitlist(&self, _: &Sku) -> anyhow::Result<Head> {
        Err(self.refusal())
    }
    async fn wait_entries(&self, _: &Sku, _: &[u64]) -> anyhow::Result<Vec<Entry>> {
        Err(self.refusal())
    }
    async fn wait_entry_of(&self, _: &Sku, _: &UserId) -> anyhow::Result<Option<Entry>> {
        Err(self.refusal())
    }
    async fn user_waits(&self, _: &UserId) -> anyhow::Result<UserWaits> {
        Err(self.refusal())
    }
    async fn commit_waitlist(&self, _: &WaitCommit) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
}

#[async_trait]
impl SaleStore for Unwired {
    async fn sales_switch(&self) -> anyhow::Result<Option<SalesSwitch>> {
        Err(self.refusal())
    }
    async fn put_sales_switch(&self, _: &SalesSwitch) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn add_live(&self, _: &str, _: &Counters, _: Option<i64>) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn set_live(&self, _: &str, _: &Counters) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn read_live(&self, _: &[String]) -> anyhow::Result<HashMap<String, Counters>> {
        Err(self.refusal())
    }
    async fn mark_low_stock(&self, _: &Sku, _: bool) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
}

#[async_trait]
impl SweepIndex for Unwired {
    async fn frozen_page(&self, _: u32, _: i64, _: Option<&str>, _: usize) -> anyhow::Result<Page<ReservationId>> {
        Err(self.refusal())
    }
    async fn pending_page(&self, _: u32, _: i64, _: Option<&str>, _: usize) -> anyhow::Result<Page<OrderId>> {
        Err(self.refusal())
    }
    async fn orders_page(
        &self,
        _: OrderIndex,
        _: u32,
        _: i64,
        _: Option<&str>,
        _: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        Err(self.refusal())
    }
    async fn skus_page(&self, _: Option<&str>, _: usize) -> anyhow::Result<Page<Sku>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Audit for Unwired {
    async fn read_all(&self, _: usize) -> anyhow::Result<AuditRead> {
        Err(self.refusal())
    }
}

#[async_trait]
impl CodeKeyService for Unwired {
    async fn generate_data_key(&self, _: &KeyContext) -> anyhow::Result<DataKey> {
        Err(self.refusal())
    }
    async fn decrypt_data_key(&self, _: &[u8], _: &KeyContext) -> anyhow::Result<Option<[u8; 32]>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Connections for Unwired {
    async fn open(&self, _: &str, _: &str, _: i64) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn close(&self, _: &str) -> anyhow::Result<Option<String>> {
        Err(self.refusal())
    }
    async fn of_user(&self, _: &str, _: i64) -> anyhow::Result<Vec<String>> {
        Err(self.refusal())
    }
    async fn user_of(&self, _: &str) -> anyhow::Result<Option<String>> {
        Err(self.refusal())
    }
    async fn claim(&self, _: &str, _: &str, _: i64) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn start_watch(&self, _: &str, _: &str, _: i64, _: i64) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn keep_watch(&self, _: &str, _: &str, _: i64) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn end_watch(&self, _: &str, _: &str) -> anyhow::Result<()> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Pusher for Unwired {
    async fn post(&self, _: &str, _: &str) -> anyhow::Result<Posted> {
        Err(self.refusal())
    }
}

#[async_trait]
impl PushTimers for Unwired {
    async fn schedule(&self, _: &Watch, _: u32) -> anyhow::Result<()> {
        Err(self.refusal())
    }
}

#[async_trait]
impl OrderStore for Unwired {
    async fn get(&self, _: &OrderId) -> anyhow::Result<Option<OrderRecord>> {
        Err(self.refusal())
    }
    async fn put_new(&self, _: &Order) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn put_void(&self, _: &OrderId) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn replace(&self, _: &Order, _: &Order) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
    async fn list_for_user(
        &self,
        _: &UserId,
        _: Option<&OrderCursor>,
        _: usize,
    ) -> anyhow::Result<(Vec<Order>, Option<OrderCursor>)> {
        Err(self.refusal())
    }
    async fn due_in(&self, _: OrderIndex, _: i64) -> anyhow::Result<Vec<OrderId>> {
        Err(self.refusal())
    }
    async fn between(&self, _: OrderIndex, _: i64, _: i64) -> anyhow::Result<Vec<OrderId>> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Messages for Unwired {
    async fn queue_depths(&self) -> anyhow::Result<Vec<QueueDepth>> {
        Err(self.refusal())
    }
    async fn send(&self, _: &Message, _: u32) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn reconcile_backlog(&self) -> anyhow::Result<u64> {
        Err(self.refusal())
    }
}

#[async_trait]
impl EventBus for Unwired {
    async fn publish(&self, _: &[OrderEvent]) -> anyhow::Result<Vec<bool>> {
        Err(self.refusal())
    }
    async fn publish_stock(&self, _: &str, _: &serde_json::Value) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
}

#[async_trait]
impl PaymentProvider for Unwired {
    async fn create_payment(&self, _: &PaymentRequest) -> anyhow::Result<Result<CreatedPayment, String>> {
        Err(self.refusal())
    }
    async fn payment(&self, _: &str) -> anyhow::Result<Option<ProviderPayment>> {
        Err(self.refusal())
    }
    async fn cancel_payment(&self, _: &str) -> anyhow::Result<Option<ProviderPayment>> {
        Err(self.refusal())
    }
    async fn refund(&self, _: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        Err(self.refusal())
    }
    async fn refund_state(&self, _: &str) -> anyhow::Result<Option<ProviderRefundState>> {
        Err(self.refusal())
    }
    async fn day_listing(&self, _: &str) -> anyhow::Result<DayListing> {
        Err(self.refusal())
    }
}

#[async_trait]
impl SupplierPort for Unwired {
    async fn quote(&self, _: &BookingRequest<'_>) -> anyhow::Result<Quote> {
        Err(self.refusal())
    }
    async fn book(&self, _: &BookingRequest<'_>) -> anyhow::Result<String> {
        Err(self.refusal())
    }
    async fn status(&self, _: &str) -> anyhow::Result<crate::domain::supplier::BookingStatus> {
        Err(self.refusal())
    }
    async fn cancel(&self, _: &str) -> anyhow::Result<()> {
        Err(self.refusal())
    }
}

#[async_trait]
impl Journal for Unwired {
    async fn put(&self, _: &[crate::domain::journal::Entry]) -> anyhow::Result<()> {
        Err(self.refusal())
    }
    async fn for_sku(
        &self,
        _: &Sku,
        _: u16,
        _: Option<&str>,
        _: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, Option<String>)> {
        Err(self.refusal())
    }
    async fn for_cause(&self, _: &str) -> anyhow::Result<Vec<crate::domain::journal::Entry>> {
        Err(self.refusal())
    }
    async fn since(
        &self,
        _: &Sku,
        _: u16,
        _: Option<&str>,
        _: usize,
    ) -> anyhow::Result<(Vec<crate::domain::journal::Entry>, Option<String>)> {
        Err(self.refusal())
    }
    async fn checkpoint(&self, _: &Sku) -> anyhow::Result<Option<crate::domain::journal::Checkpoint>> {
        Err(self.refusal())
    }
    async fn put_checkpoint(
        &self,
        _: &Sku,
        _: &crate::domain::journal::Checkpoint,
        _: Option<u64>,
    ) -> anyhow::Result<bool> {
        Err(self.refusal())
    }
}

#[async_trait]
impl WebhookKeys for Unwired {
    async fn keys(&self) -> anyhow::Result<Vec<crate::config::Secret>> {
        Err(self.refusal())
    }
}
