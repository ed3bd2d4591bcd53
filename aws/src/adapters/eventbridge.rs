//! Domain events onto the EventBridge bus, in batches of at most 10 entries (the PutEvents limit).

use crate::domain::events::{OrderEvent, SOURCE};
use crate::ports::EventBus;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_eventbridge::Client;

#[derive(Clone)]
pub struct EventBridgeBus {
    client: Client,
    bus: String,
}

impl EventBridgeBus {
    pub fn new(client: Client, bus: String) -> Self {
        Self { client, bus }
    }
}

#[async_trait]
impl EventBus for EventBridgeBus {
    async fn publish(&self, events: &[OrderEvent]) -> anyhow::Result<Vec<bool>> {
        let mut accepted = Vec::with_capacity(events.len());
        for chunk in events.chunks(10) {
            let entries = chunk
                .iter()
                .map(|e| {
                    Ok(PutEventsRequestEntry::builder()
                        .event_bus_name(&self.bus)
                        .source(SOURCE)
                        .detail_type(e.kind.as_str())
                        .detail(serde_json::to_string(&e.detail)?)
                        .build())
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let out = self.client.put_events().set_entries(Some(entries)).send().await.context("PutEvents")?;
            let results = out.entries();
            for i in 0..chunk.len() {
                let ok = results.get(i).is_some_and(|r| r.error_code().is_none() && r.event_id().is_some());
                accepted.push(ok);
            }
            super::usage::events(chunk.len() as u64);
        }
        Ok(accepted)
    }

    async fn publish_stock_batch(&self, detail_type: &str, details: &[serde_json::Value]) -> anyhow::Result<usize> {
        let mut accepted = 0;
        for chunk in details.chunks(10) {
            let mut entries = Vec::with_capacity(chunk.len());
            for d in chunk {
                entries.push(
                    PutEventsRequestEntry::builder()
                        .event_bus_name(&self.bus)
                        .source(STOCK_SOURCE)
                        .detail_type(detail_type)
                        .detail(serde_json::to_string(d)?)
                        .build(),
                );
            }
            let out = self.client.put_events().set_entries(Some(entries)).send().await.context("PutEvents")?;
            super::usage::events(chunk.len() as u64);
            accepted += out.entries().iter().filter(|r| r.error_code().is_none() && r.event_id().is_some()).count();
        }
        Ok(accepted)
    }

    async fn publish_stock(&self, detail_type: &str, detail: &serde_json::Value) -> anyhow::Result<bool> {
        let entry = PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(STOCK_SOURCE)
            .detail_type(detail_type)
            .detail(serde_json::to_string(detail)?)
            .build();
        let out = self.client.put_events().entries(entry).send().await.context("PutEvents")?;
        super::usage::events(1);
        Ok(out.entries().first().is_some_and(|r| r.error_code().is_none() && r.event_id().is_some()))
    }
}

/// The source of stock events (`LowStock`; docs/operations.md).
pub const STOCK_SOURCE: &str = "holdfast.stock";
