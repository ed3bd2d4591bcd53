//! The stock journal in memory: entries by SKU, keyed by their entry key (so a rewrite of the
//! same record is the same entry, as in DynamoDB).

use super::lock;
use crate::domain::journal::Entry;
use crate::domain::Sku;
use crate::ports::Journal;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct MemoryJournal {
    entries: Mutex<BTreeMap<(Sku, String), Entry>>,
}

impl MemoryJournal {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Journal for MemoryJournal {
    async fn put(&self, entries: &[Entry]) -> anyhow::Result<()> {
        let mut m = lock(&self.entries);
        for e in entries {
            m.insert((e.sku.clone(), e.seq.clone()), e.clone());
        }
        Ok(())
    }

    async fn for_sku(
        &self,
        sku: &Sku,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        let m = lock(&self.entries);
        let mut page: Vec<Entry> = m
            .iter()
            .rev()
            .filter(|((s, k), _)| s == sku && cursor.is_none_or(|c| k.as_str() < c))
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

    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<Entry>> {
        let mut v: Vec<Entry> = lock(&self.entries).values().filter(|e| e.cause == reference).cloned().collect();
        v.sort_by(|a, b| a.seq.cmp(&b.seq));
        Ok(v)
    }
}
