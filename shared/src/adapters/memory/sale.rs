//! The sale room's store in memory (unit tests): the same answers as [`crate::adapters::dynamo::sale`].

use crate::domain::sale::SalesSwitch;
use crate::domain::Sku;
use crate::ports::sale::{Counters, SaleStore};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

#[derive(Default)]
pub struct MemorySale {
    switch: super::stock::SwitchCell,
    live: Mutex<HashMap<String, Counters>>,
    low: Mutex<HashSet<Sku>>,
}

impl MemorySale {
    pub fn new() -> Self {
        Self::default()
    }

    /// A sale store whose switch is the stock store's item (`SALE#switch` lives in the stock
    /// table): a freeze's transaction judges the switch this store sets.
    pub fn sharing(switch: super::stock::SwitchCell) -> Self {
        MemorySale { switch, ..Self::default() }
    }
}

fn poisoned<T>(_: T) -> anyhow::Error {
    anyhow::anyhow!("memory sale store poisoned")
}

#[async_trait]
impl SaleStore for MemorySale {
    async fn sales_switch(&self) -> anyhow::Result<Option<SalesSwitch>> {
        Ok(self.switch.lock().map_err(poisoned)?.clone())
    }

    async fn put_sales_switch(&self, s: &SalesSwitch) -> anyhow::Result<()> {
        *self.switch.lock().map_err(poisoned)? = Some(s.clone());
        Ok(())
    }

    async fn add_live(&self, key: &str, deltas: &Counters, _expires_at: Option<i64>) -> anyhow::Result<()> {
        let mut live = self.live.lock().map_err(poisoned)?;
        let item = live.entry(key.to_owned()).or_default();
        for (k, d) in deltas {
            *item.entry(k.clone()).or_insert(0) += d;
        }
        Ok(())
    }

    async fn set_live(&self, key: &str, values: &Counters) -> anyhow::Result<()> {
        let mut live = self.live.lock().map_err(poisoned)?;
        live.entry(key.to_owned()).or_default().extend(values.iter().map(|(k, v)| (k.clone(), *v)));
        Ok(())
    }

    async fn read_live(&self, keys: &[String]) -> anyhow::Result<HashMap<String, Counters>> {
        let live = self.live.lock().map_err(poisoned)?;
        Ok(keys.iter().filter_map(|k| Some((k.clone(), live.get(k)?.clone()))).collect())
    }

    async fn mark_low_stock(&self, sku: &Sku, low: bool) -> anyhow::Result<bool> {
        let mut marks = self.low.lock().map_err(poisoned)?;
        Ok(if low { marks.insert(sku.clone()) } else { marks.remove(sku) })
    }
}
