//! The order table in memory, with the conditions of [`crate::adapters::dynamo::orders`]:
//! puts only if absent, compare-and-set on `version`, the by-user and pending-by-deadline
//! index reads. VOID tombstones are kept forever (DynamoDB expires them after a week).

use super::lock;
use crate::domain::order::{Order, OrderRecord};
use crate::domain::{OrderId, UserId};
use crate::ports::{OrderCursor, OrderIndex, OrderStore};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The order table.
#[derive(Default)]
pub struct MemoryOrders {
    records: Mutex<BTreeMap<OrderId, OrderRecord>>,
}

impl MemoryOrders {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record (orders and VOID tombstones), by id.
    pub fn records(&self) -> Vec<(OrderId, OrderRecord)> {
        lock(&self.records).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn put_if_absent(&self, id: &OrderId, rec: OrderRecord) -> bool {
        let mut m = lock(&self.records);
        if m.contains_key(id) {
            return false;
        }
        m.insert(id.clone(), rec);
        true
    }
}

#[async_trait]
impl OrderStore for MemoryOrders {
    async fn get(&self, id: &OrderId) -> anyhow::Result<Option<OrderRecord>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.records).get(id).cloned())
    }

    async fn put_new(&self, o: &Order) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        if crate::mutant!("order-put-over-void") {
            lock(&self.records).insert(o.id.clone(), OrderRecord::Order(Box::new(o.clone())));
            return Ok(true);
        }
        Ok(self.put_if_absent(&o.id, OrderRecord::Order(Box::new(o.clone()))))
    }

    async fn put_void(&self, id: &OrderId) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        Ok(self.put_if_absent(id, OrderRecord::Void))
    }

    /// Like the DynamoDB put under `v = :v`: the item written is `next`'s, the condition is
    /// on what is stored under `next.id` (a VOID or a missing item has no version and fails).
    async fn replace(&self, prev: &Order, next: &Order) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        // as the DynamoDB store: a status change carries its log entries (docs/order-record.md)
        if !crate::domain::order::history::appended_exactly(prev, next) {
            anyhow::bail!("order {}: a status change must carry its log entry (and only then)", next.id);
        }
        let mut m = lock(&self.records);
        match m.get(&next.id) {
            Some(OrderRecord::Order(o)) if o.version == prev.version => {
                m.insert(next.id.clone(), OrderRecord::Order(Box::new(next.clone())));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Newest first by `created_at_ms`, ties by id (descending). As a DynamoDB query with
    /// `Limit`, a full page always carries a cursor, even when nothing follows it.
    async fn list_for_user(
        &self,
        user: &UserId,
        after: Option<&OrderCursor>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Order>, Option<OrderCursor>)> {
        crate::adapters::memory::interleave().await;
        if limit == 0 {
            anyhow::bail!("Query: Limit must be at least 1");
        }
        let m = lock(&self.records);
        let mut mine: Vec<&Order> = m
            .values()
            .filter_map(|r| match r {
                OrderRecord::Order(o) if &o.user == user => Some(&**o),
                _ => None,
            })
            .filter(|o| after.is_none_or(|c| (o.created_at_ms, &o.id) < (c.created_at_ms, &c.order_id)))
            .collect();
        mine.sort_by(|a, b| (b.created_at_ms, &b.id).cmp(&(a.created_at_ms, &a.id)));
        mine.truncate(limit);
        let next = (mine.len() == limit)
            .then(|| mine.last().map(|o| OrderCursor { created_at_ms: o.created_at_ms, order_id: o.id.clone() }))
            .flatten();
        Ok((mine.into_iter().cloned().collect(), next))
    }

    async fn due_in(&self, index: OrderIndex, before: i64) -> anyhow::Result<Vec<OrderId>> {
        crate::adapters::memory::interleave().await;
        let m = lock(&self.records);
        let mut due: Vec<(i64, OrderId)> = m
            .values()
            .filter_map(|r| match r {
                OrderRecord::Order(o) => index.value_of(o).filter(|v| *v < before).map(|v| (v, o.id.clone())),
                _ => None,
            })
            .collect();
        due.sort();
        Ok(due.into_iter().map(|(_, id)| id).collect())
    }

    async fn between(&self, index: OrderIndex, from: i64, to: i64) -> anyhow::Result<Vec<OrderId>> {
        crate::adapters::memory::interleave().await;
        let m = lock(&self.records);
        let mut found: Vec<(i64, OrderId)> = m
            .values()
            .filter_map(|r| match r {
                OrderRecord::Order(o) => {
                    index.value_of(o).filter(|v| (from..to).contains(v)).map(|v| (v, o.id.clone()))
                }
                _ => None,
            })
            .collect();
        found.sort();
        Ok(found.into_iter().map(|(_, id)| id).collect())
    }
}
