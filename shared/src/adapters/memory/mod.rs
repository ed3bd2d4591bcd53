//! In-memory adapters for fast unit tests and CPU benchmarks. Not used to prove AWS behaviour:
//! that is what the emulator tests are for.
//!
//! Each port keeps its state behind one `std::sync::Mutex`, so a transaction is atomic: its
//! conditions are checked and its writes applied under one lock, all or nothing. Conditions and
//! rejection mapping follow the DynamoDB adapters (see the comments in [`stock`] and
//! [`orders`]); nothing here counts AWS usage.

#[cfg(test)]
mod contract_tests;
mod journal;
#[cfg(test)]
mod matrix_tests;
mod orders;
mod stock;
#[cfg(test)]
mod tests;

pub use journal::MemoryJournal;
pub use orders::MemoryOrders;
pub use stock::MemoryStock;

use crate::config::Config;
use crate::context::App;
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

/// A payment provider that accepts every refund, once per refund id, and records it.
#[derive(Default)]
pub struct MemoryProvider {
    refunds: Mutex<Vec<crate::ports::RefundRequest>>,
}

impl MemoryProvider {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every distinct refund accepted so far, oldest first.
    pub fn refunds(&self) -> Vec<crate::ports::RefundRequest> {
        lock(&self.refunds).clone()
    }
}

#[async_trait]
impl crate::ports::PaymentProvider for MemoryProvider {
    async fn refund(
        &self,
        r: &crate::ports::RefundRequest,
    ) -> anyhow::Result<Result<crate::ports::ProviderRefund, String>> {
        interleave().await;
        let mut all = lock(&self.refunds);
        if !all.iter().any(|x| x.refund_id == r.refund_id) {
            all.push(r.clone());
        }
        Ok(Ok(crate::ports::ProviderRefund { provider_refund_id: format!("mem_{}", r.refund_id), succeeded: false }))
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
}

/// The concrete ports behind a [`memory_app`], for seeding and inspection.
#[derive(Clone, Default)]
pub struct MemoryWorld {
    pub stock: Arc<MemoryStock>,
    pub orders: Arc<MemoryOrders>,
    pub messages: Arc<MemoryMessages>,
    pub bus: Arc<MemoryBus>,
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
        }
    }
}

/// An App over fresh in-memory ports.
pub fn memory_app(function: &str, config: Config) -> anyhow::Result<(App, MemoryWorld)> {
    let w = MemoryWorld::default();
    let app = App::with_ports(function, config, w.stock.clone(), w.orders.clone(), w.messages.clone(), w.bus.clone())?;
    Ok((app, w))
}
