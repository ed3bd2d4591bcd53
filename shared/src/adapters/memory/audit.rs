//! The daily ledger report's whole-store read over the in-memory store: what
//! [`super::MemoryWorld::snapshot`] reads, capped as the DynamoDB adapter caps its Scans (items
//! per table: a SKU's metadata and shards, locks and counters; orders).

use super::{MemoryOrders, MemoryStock, MemoryWorld};
use crate::ports::{Audit, AuditRead};
use async_trait::async_trait;
use std::sync::Arc;

pub struct MemoryAudit {
    world: MemoryWorld,
}

impl MemoryAudit {
    pub fn new(stock: Arc<MemoryStock>, orders: Arc<MemoryOrders>) -> MemoryAudit {
        MemoryAudit { world: MemoryWorld { stock, orders, ..MemoryWorld::default() } }
    }
}

#[async_trait]
impl Audit for MemoryAudit {
    async fn read_all(&self, max_items: usize) -> anyhow::Result<AuditRead> {
        super::interleave().await;
        let snapshot = self.world.snapshot(0);
        let stock_items = snapshot.skus.iter().map(|s| 1 + s.shards.len()).sum::<usize>()
            + snapshot.reservations.len()
            + snapshot.user_counters.len()
            + snapshot.campaigns.pending.len()
            + snapshot.campaigns.user_counters.len();
        let order_items = snapshot.orders.len();
        Ok(AuditRead {
            items: stock_items.min(max_items) + order_items.min(max_items),
            complete: stock_items <= max_items && order_items <= max_items,
            snapshot,
        })
    }
}
