//! The stock journal in memory: entries by SKU, keyed by their entry key (so a rewrite of the
//! same record is the same entry, as in DynamoDB). A read returns only the entries of the
//! partitions below its spread, as the DynamoDB adapter, which queries only those, does.

use super::lock;
use crate::domain::journal::{partition, Checkpoint, Entry};
use crate::domain::Sku;
use crate::ports::Journal;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

#[derive(Default)]
pub struct MemoryJournal {
    entries: Mutex<BTreeMap<(Sku, String), Entry>>,
    checkpoints: Mutex<HashMap<Sku, Checkpoint>>,
}

impl MemoryJournal {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Journal for MemoryJournal {
    async fn put(&self, entries: &[Entry]) -> anyhow::Result<()> {
        crate::adapters::memory::interleave().await;
        let mut m = lock(&self.entries);
        for e in entries {
            m.insert((e.sku.clone(), e.seq.clone()), e.clone());
        }
        Ok(())
    }

    async fn for_sku(
        &self,
        sku: &Sku,
        spread: u16,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        crate::adapters::memory::interleave().await;
        use std::ops::Bound;
        let m = lock(&self.entries);
        let to = match cursor {
            Some(c) => Bound::Excluded((sku.clone(), c.to_owned())),
            // entry keys are digits and a dot: "~" sorts after every one of them
            None => Bound::Excluded((sku.clone(), "~".to_owned())),
        };
        let mut page: Vec<Entry> = m
            .range((Bound::Included((sku.clone(), String::new())), to))
            .rev()
            .take_while(|((s, _), _)| s == sku)
            .filter(|(_, e)| partition(e.shard) < spread)
            .map(|(_, e)| e.clone())
            .take(limit + 1)
            .collect();
        let next = if page.len() > limit {
            page.truncate(limit);
            page.last().map(|e| e.seq.clone())
        } else {
            None
        };
        Ok((page, next))
    }

    async fn since(
        &self,
        sku: &Sku,
        spread: u16,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        crate::adapters::memory::interleave().await;
        use std::ops::Bound;
        let m = lock(&self.entries);
        let from = match after {
            Some(a) => Bound::Excluded((sku.clone(), a.to_owned())),
            None => Bound::Included((sku.clone(), String::new())),
        };
        let mut page: Vec<Entry> = m
            .range((from, Bound::Unbounded))
            .take_while(|((s, _), _)| s == sku)
            .filter(|(_, e)| partition(e.shard) < spread)
            .map(|(_, e)| e.clone())
            .take(limit.max(1) + 1)
            .collect();
        let more = page.len() > limit.max(1);
        page.truncate(limit.max(1));
        let next = page.last().map(|e| e.seq.clone()).filter(|_| more);
        Ok((page, next))
    }

    async fn checkpoint(&self, sku: &Sku) -> anyhow::Result<Option<Checkpoint>> {
        crate::adapters::memory::interleave().await;
        Ok(lock(&self.checkpoints).get(sku).cloned())
    }

    async fn put_checkpoint(&self, sku: &Sku, cp: &Checkpoint, expected: Option<u64>) -> anyhow::Result<bool> {
        crate::adapters::memory::interleave().await;
        let mut m = lock(&self.checkpoints);
        if m.get(sku).map(|c| c.version) != expected {
            return Ok(false);
        }
        m.insert(sku.clone(), cp.clone());
        Ok(true)
    }

    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<Entry>> {
        crate::adapters::memory::interleave().await;
        let mut v: Vec<Entry> = lock(&self.entries).values().filter(|e| e.cause == reference).cloned().collect();
        v.sort_by(|a, b| a.seq.cmp(&b.seq));
        Ok(v)
    }
}
