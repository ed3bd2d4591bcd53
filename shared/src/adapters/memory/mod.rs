//! In-memory adapters for fast unit tests and CPU benchmarks. Not used to prove AWS behaviour:
//! that is what the emulator tests are for.
//!
//! Each port keeps its state behind one `std::sync::Mutex`, so a transaction is atomic: its
//! conditions are checked and its writes applied under one lock, all or nothing. Conditions and
//! rejection mapping follow the DynamoDB adapters (see the comments in [`stock`] and
//! [`orders`]); nothing here counts AWS usage.

mod audit;
#[cfg(test)]
mod contract_tests;
mod journal;
#[cfg(test)]
mod matrix_tests;
mod orders;
mod push;
mod sale;
mod stock;
#[cfg(test)]
mod tests;
mod waitlists;

pub use audit::MemoryAudit;
pub use journal::MemoryJournal;
pub use orders::MemoryOrders;
pub use push::MemoryPush;
pub use sale::MemorySale;
pub use stock::MemoryStock;
pub use waitlists::MemoryWaitlists;

use crate::domain::events::OrderEvent;
use crate::domain::invariants::{SkuSnapshot, Snapshot};
use crate::ports::{EventBus, Message, Messages, MAX_DELAY_SECONDS};
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static INTERLEAVE: AtomicBool = AtomicBool::new(false);

/// Turns the simulator's interleaving points on or off (docs/simulator.md, "Interleaving"). Off
/// (the default, and always outside `holdfast-sim`), [`interleave`] is one relaxed load.
pub fn set_interleaving(on: bool) {
    INTERLEAVE.store(on, Ordering::Relaxed);
}

/// Called first by every in-memory port method: when the simulator has turned interleaving on,
/// it yields to the other tasks half of the time (drawn from the seeded `fastrand`), so
/// concurrent service calls interleave between their port calls — between a read and the
/// conditional write that depends on it — as concurrent Lambdas do against DynamoDB.
pub(crate) async fn interleave() {
    if INTERLEAVE.load(Ordering::Relaxed) && fastrand::bool() {
        tokio::task::yield_now().await;
    }
}

/// Locks a port's state. Every write checks its conditions before changing anything, so the
/// state behind a poisoned lock is still consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A payment provider in memory: payments are created `Open` and move when a test (or the
/// simulator) plays the buyer with [`MemoryProvider::settle`]; refunds are accepted once per
/// refund id and stay pending until [`MemoryProvider::finish_refund`].
#[derive(Default)]
pub struct MemoryProvider {
    state: Mutex<ProviderState>,
}

#[derive(Default)]
struct ProviderState {
    /// By payment id, with the attempt key that created it and the UTC day it was captured.
    payments: Vec<(String, crate::ports::ProviderPayment, Option<String>)>,
    refunds: Vec<(crate::ports::RefundRequest, crate::ports::ProviderRefundState, String)>,
}

fn utc_day(ms: i64) -> String {
    crate::domain::model::Day::of_epoch_s(ms.div_euclid(1000)).to_string()
}

impl MemoryProvider {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every distinct refund accepted so far, oldest first.
    pub fn refunds(&self) -> Vec<crate::ports::RefundRequest> {
        lock(&self.state).refunds.iter().map(|(r, _, _)| r.clone()).collect()
    }

    /// Every payment created so far, oldest first.
    pub fn payments(&self) -> Vec<crate::ports::ProviderPayment> {
        lock(&self.state).payments.iter().map(|(_, p, _)| p.clone()).collect()
    }

    /// Plays the buyer (or the provider deciding): the payment moves to `to` unless it is
    /// already final. Returns the payment as it stands.
    pub fn settle(&self, payment_id: &str, to: crate::ports::PaymentState) -> Option<crate::ports::ProviderPayment> {
        use crate::ports::PaymentState::*;
        let mut s = lock(&self.state);
        let (_, p, day) = s.payments.iter_mut().find(|(_, p, _)| p.payment_id == payment_id)?;
        if matches!(p.state, Open | Processing | Failed) && !(p.state == Failed && to == Processing) {
            p.state = to;
            if to == Succeeded {
                *day = Some(utc_day(crate::clock::now_ms()));
            }
        }
        Some(p.clone())
    }

    fn payment_now(&self, payment_id: &str) -> Option<crate::ports::ProviderPayment> {
        lock(&self.state).payments.iter().find(|(_, p, _)| p.payment_id == payment_id).map(|(_, p, _)| p.clone())
    }

    /// The provider finishes a refund (`true`: done).
    pub fn finish_refund(&self, provider_refund_id: &str, succeeded: bool) {
        let mut s = lock(&self.state);
        if let Some((_, st, _)) = s.refunds.iter_mut().find(|(_, st, _)| st.provider_refund_id == provider_refund_id) {
            st.succeeded.get_or_insert(succeeded);
        }
    }
}

#[async_trait]
impl crate::ports::PaymentProvider for MemoryProvider {
    async fn create_payment(
        &self,
        r: &crate::ports::PaymentRequest,
    ) -> anyhow::Result<Result<crate::ports::CreatedPayment, String>> {
        interleave().await;
        let mut s = lock(&self.state);
        let id = match s.payments.iter().find(|(k, _, _)| *k == r.attempt_key) {
            Some((_, p, _)) => p.payment_id.clone(),
            None => {
                let id = format!("mem_pay_{}", s.payments.len() + 1);
                let p = crate::ports::ProviderPayment {
                    payment_id: id.clone(),
                    order_id: Some(r.order_id.to_string()),
                    amount: r.amount,
                    currency: r.currency.clone(),
                    state: crate::ports::PaymentState::Open,
                };
                s.payments.push((r.attempt_key.clone(), p, None));
                id
            }
        };
        Ok(Ok(crate::ports::CreatedPayment {
            redirect_url: Some(format!("memory://pay/{id}")),
            client_secret: None,
            payment_id: id,
        }))
    }

    async fn payment(&self, payment_id: &str) -> anyhow::Result<Option<crate::ports::ProviderPayment>> {
        interleave().await;
        Ok(lock(&self.state).payments.iter().find(|(_, p, _)| p.payment_id == payment_id).map(|(_, p, _)| p.clone()))
    }

    /// A processing payment is not cancellable, as at Stripe: answered as it stands.
    async fn cancel_payment(&self, payment_id: &str) -> anyhow::Result<Option<crate::ports::ProviderPayment>> {
        interleave().await;
        match self.payment_now(payment_id) {
            Some(p) if p.state == crate::ports::PaymentState::Processing => Ok(Some(p)),
            _ => Ok(self.settle(payment_id, crate::ports::PaymentState::Cancelled)),
        }
    }

    async fn refund(
        &self,
        r: &crate::ports::RefundRequest,
    ) -> anyhow::Result<Result<crate::ports::ProviderRefund, String>> {
        interleave().await;
        let mut s = lock(&self.state);
        let provider_refund_id = format!("mem_{}", r.refund_id);
        if !s.refunds.iter().any(|(x, _, _)| x.refund_id == r.refund_id) {
            let st = crate::ports::ProviderRefundState {
                provider_refund_id: provider_refund_id.clone(),
                refund_id: Some(r.refund_id.clone()),
                payment_id: r.payment_id.clone(),
                amount: r.amount,
                currency: r.currency.clone(),
                succeeded: None,
            };
            s.refunds.push((r.clone(), st, utc_day(crate::clock::now_ms())));
        }
        Ok(Ok(crate::ports::ProviderRefund { provider_refund_id, succeeded: false }))
    }

    async fn refund_state(
        &self,
        provider_refund_id: &str,
    ) -> anyhow::Result<Option<crate::ports::ProviderRefundState>> {
        interleave().await;
        let s = lock(&self.state);
        Ok(s.refunds.iter().find(|(_, st, _)| st.provider_refund_id == provider_refund_id).map(|(_, st, _)| st.clone()))
    }

    async fn day_listing(&self, day: &str) -> anyhow::Result<crate::ports::DayListing> {
        interleave().await;
        let s = lock(&self.state);
        Ok(crate::ports::DayListing {
            captures: s
                .payments
                .iter()
                .filter(|(_, p, d)| p.state == crate::ports::PaymentState::Succeeded && d.as_deref() == Some(day))
                .map(|(_, p, _)| p.clone())
                .collect(),
            refunds: s
                .refunds
                .iter()
                .filter(|(_, st, d)| d == day && st.succeeded != Some(false))
                .map(|(_, st, _)| st.clone())
                .collect(),
        })
    }
}

/// The delay queues: records what was sent, with the delay clamped to what SQS allows.
#[derive(Default)]
pub struct MemoryMessages {
    sent: Mutex<Vec<(Message, u32)>>,
    backlog: Mutex<u64>,
}

impl MemoryMessages {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every message sent so far, oldest first, with its delay in seconds.
    pub fn sent(&self) -> Vec<(Message, u32)> {
        lock(&self.sent).clone()
    }

    /// What [`Messages::reconcile_backlog`] answers from now on (nothing is consumed here).
    pub fn set_reconcile_backlog(&self, n: u64) {
        *lock(&self.backlog) = n;
    }
}

#[async_trait]
impl Messages for MemoryMessages {
    async fn send(&self, msg: &Message, delay_s: u32) -> anyhow::Result<()> {
        interleave().await;
        lock(&self.sent).push((msg.clone(), delay_s.min(MAX_DELAY_SECONDS as u32)));
        Ok(())
    }

    async fn reconcile_backlog(&self) -> anyhow::Result<u64> {
        interleave().await;
        Ok(*lock(&self.backlog))
    }
}

#[derive(Default)]
struct BusState {
    published: Vec<OrderEvent>,
    stock: Vec<(String, serde_json::Value)>,
    reject: usize,
}

/// The event bus: records accepted events; [`MemoryBus::fail_next`] makes it reject some.
#[derive(Default)]
pub struct MemoryBus {
    state: Mutex<BusState>,
}

impl MemoryBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every accepted event, in publishing order.
    pub fn published(&self) -> Vec<OrderEvent> {
        lock(&self.state).published.clone()
    }

    /// Every accepted stock event (detail type, detail), in publishing order.
    pub fn stock_events(&self) -> Vec<(String, serde_json::Value)> {
        lock(&self.state).stock.clone()
    }

    /// The next `n` events published are rejected (answered `false`, not recorded), as
    /// EventBridge does with failed entries of a `PutEvents` batch.
    pub fn fail_next(&self, n: usize) {
        lock(&self.state).reject = n;
    }
}

#[async_trait]
impl EventBus for MemoryBus {
    async fn publish(&self, events: &[OrderEvent]) -> anyhow::Result<Vec<bool>> {
        interleave().await;
        let mut s = lock(&self.state);
        Ok(events
            .iter()
            .map(|e| {
                if s.reject > 0 {
                    s.reject -= 1;
                    false
                } else {
                    s.published.push(e.clone());
                    true
                }
            })
            .collect())
    }

    async fn publish_stock(&self, detail_type: &str, detail: &serde_json::Value) -> anyhow::Result<bool> {
        let mut s = lock(&self.state);
        if s.reject > 0 {
            s.reject -= 1;
            return Ok(false);
        }
        s.stock.push((detail_type.to_owned(), detail.clone()));
        Ok(true)
    }
}

/// The concrete ports behind a [`memory_app`], for seeding and inspection.
#[derive(Clone, Default)]
pub struct MemoryWorld {
    pub stock: Arc<MemoryStock>,
    pub orders: Arc<MemoryOrders>,
    pub messages: Arc<MemoryMessages>,
    pub bus: Arc<MemoryBus>,
    /// Both providers of the app (generic and Stripe) are this one.
    pub provider: Arc<MemoryProvider>,
}

impl MemoryWorld {
    /// Everything [`crate::domain::invariants::check_all`] needs, read now.
    pub fn snapshot(&self, check_delay_s: i64) -> Snapshot {
        let skus = self
            .stock
            .metas()
            .into_iter()
            .map(|m| SkuSnapshot {
                shards: self.stock.shards(&m.sku),
                sku: m.sku,
                stocked: m.stocked,
                per_user_limit: m.per_user_limit,
            })
            .collect();
        Snapshot {
            skus,
            reservations: self.stock.reservations(),
            orders: self.orders.records(),
            user_counters: self.stock.user_counters(),
            now_s: crate::clock::now_s(),
            check_delay_s,
            campaigns: self.stock.campaign_counters(),
            codes: self.stock.code_pools(),
            backlogs: self.stock.backlogs(),
        }
    }
}
