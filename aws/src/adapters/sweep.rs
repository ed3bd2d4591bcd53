//! The reconcile sweep's paged index reads over any [`StockStore`] / [`OrderStore`]: built from
//! their whole-index reads, bucketed the way the DynamoDB indexes are, sorted by key, and paged
//! by the last key seen (stable while items leave the index between pages). Serves the
//! in-memory ports (unit tests, the scale run). A built index is reused for `max_age`: a
//! GSI-like staleness the sweep tolerates because it re-reads every item it acts on.

use crate::domain::{OrderId, ReservationId, Sku};
use crate::ports::{bucket_of, OrderIndex, OrderStore, Page, StockStore, SweepIndex};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Built<T> = Mutex<Option<(Instant, i64, Arc<Vec<(u32, T)>>)>>;

pub struct PortSweep {
    stock: Arc<dyn StockStore>,
    orders: Arc<dyn OrderStore>,
    max_age: Duration,
    frozen: Built<ReservationId>,
    pending: Built<OrderId>,
    skus: Built<Sku>,
}

impl PortSweep {
    /// `max_age` zero: every page reads the ports afresh (exact, for small tests).
    pub fn new(stock: Arc<dyn StockStore>, orders: Arc<dyn OrderStore>, max_age: Duration) -> Self {
        Self { stock, orders, max_age, frozen: Mutex::new(None), pending: Mutex::new(None), skus: Mutex::new(None) }
    }

    fn cached<T>(&self, slot: &Built<T>, key: i64) -> Option<Arc<Vec<(u32, T)>>> {
        let g = slot.lock().ok()?;
        g.as_ref().filter(|(at, k, _)| *k == key && at.elapsed() < self.max_age).map(|(_, _, v)| v.clone())
    }

    fn store<T>(&self, slot: &Built<T>, key: i64, v: Vec<(u32, T)>) -> Arc<Vec<(u32, T)>> {
        let v = Arc::new(v);
        if let Ok(mut g) = slot.lock() {
            *g = Some((Instant::now(), key, v.clone()));
        }
        v
    }
}

/// The index key an entry sorts and resumes by.
trait Key {
    fn key(&self) -> &str;
}

impl Key for ReservationId {
    fn key(&self) -> &str {
        self.as_str()
    }
}

impl Key for OrderId {
    fn key(&self) -> &str {
        self.as_str()
    }
}

impl Key for Sku {
    fn key(&self) -> &str {
        self.as_str()
    }
}

#[cfg(test)]
impl Key for String {
    fn key(&self) -> &str {
        self
    }
}

/// Entries of `bucket` (`None`: all) after `cursor`, at most `limit`. `all` is sorted by
/// (bucket, key), so a page is a binary search and a slice, as a GSI query is.
fn page_of<T: Clone + Key>(all: &[(u32, T)], bucket: Option<u32>, cursor: Option<&str>, limit: usize) -> Page<T> {
    let (lo, hi) = match bucket {
        Some(b) => (all.partition_point(|(x, _)| *x < b), all.partition_point(|(x, _)| *x <= b)),
        None => (0, all.len()),
    };
    let range = &all[lo..hi];
    let start = cursor.map_or(0, |c| range.partition_point(|(_, t)| t.key() <= c));
    let end = (start + limit.max(1)).min(range.len());
    let items: Vec<T> = range[start..end].iter().map(|(_, t)| t.clone()).collect();
    let next = if end < range.len() { items.last().map(|t| t.key().to_owned()) } else { None };
    Page { items, next }
}

fn sorted<T: Key>(mut v: Vec<(u32, T)>) -> Vec<(u32, T)> {
    v.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.key().cmp(b.1.key())));
    v
}

#[async_trait]
impl SweepIndex for PortSweep {
    async fn frozen_page(
        &self,
        bucket: u32,
        before_ms: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<ReservationId>> {
        let all = match self.cached(&self.frozen, before_ms) {
            Some(a) => a,
            None => {
                let ids = self.stock.frozen_before(before_ms).await?;
                let v = sorted(ids.into_iter().map(|id| (bucket_of(id.as_str()), id)).collect());
                self.store(&self.frozen, before_ms, v)
            }
        };
        Ok(page_of(&all, Some(bucket), cursor, limit))
    }

    async fn pending_page(
        &self,
        bucket: u32,
        before_s: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        let all = match self.cached(&self.pending, before_s) {
            Some(a) => a,
            None => {
                let ids = self.orders.pending_due(before_s).await?;
                let v = sorted(ids.into_iter().map(|id| (bucket_of(id.as_str()), id)).collect());
                self.store(&self.pending, before_s, v)
            }
        };
        Ok(page_of(&all, Some(bucket), cursor, limit))
    }

    async fn orders_page(
        &self,
        index: OrderIndex,
        bucket: u32,
        before: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        if index == OrderIndex::Pending {
            return self.pending_page(bucket, before, cursor, limit).await;
        }
        // small in-memory sets (unit tests): read every time, no cache
        let ids = self.orders.due_in(index, before).await?;
        let v = sorted(ids.into_iter().map(|id| (bucket_of(id.as_str()), id)).collect());
        Ok(page_of(&v, Some(bucket), cursor, limit))
    }

    async fn skus_page(&self, cursor: Option<&str>, limit: usize) -> anyhow::Result<Page<Sku>> {
        let all = match self.cached(&self.skus, 0) {
            Some(a) => a,
            None => {
                let skus = self.stock.list_skus().await?;
                self.store(&self.skus, 0, sorted(skus.into_iter().map(|s| (0, s)).collect()))
            }
        };
        Ok(page_of(&all, None, cursor, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_resume_after_the_last_key_even_when_items_left_in_between() {
        let all: Vec<(u32, String)> = ["a", "b", "c", "d", "e"].iter().map(|s| (0, s.to_string())).collect();
        let p1 = page_of(&all, Some(0), None, 2);
        assert_eq!((p1.items.clone(), p1.next.as_deref()), (vec!["a".to_string(), "b".into()], Some("b")));
        let fewer: Vec<(u32, String)> = all.iter().filter(|(_, s)| s != "c").cloned().collect();
        let p2 = page_of(&fewer, Some(0), p1.next.as_deref(), 2);
        assert_eq!((p2.items, p2.next), (vec!["d".to_string(), "e".into()], None));
        assert!(page_of(&all, Some(1), None, 2).items.is_empty());
    }
}
