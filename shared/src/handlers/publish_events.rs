//! publish-events: the order table's stream is the outbox (DESIGN §5). Status changes become
//! domain events on the bus; a record whose events were not all accepted is reported as the
//! batch item failure, so the stream source retries from it (later records come again too,
//! which is harmless: consumers are idempotent).

use super::stream::{StreamBatchResponse, StreamEvent, StreamItemFailure, StreamRecord};
use crate::adapters::dynamo::{json::item_from_json, orders::decode_record};
use crate::app::App;
use crate::domain::events::{events_for_change, OrderEvent};
use crate::domain::order::{Order, OrderRecord};
use crate::faults::{self, InjectedCrash};
use serde_json::{Map, Value};

const PUBLISH_ATTEMPTS: u32 = 3;

fn image(m: &Option<Map<String, Value>>) -> anyhow::Result<Option<Order>> {
    let Some(m) = m else { return Ok(None) };
    if !m.get("pk").and_then(|p| p.get("S")).and_then(Value::as_str).is_some_and(|p| p.starts_with("ORD#")) {
        return Ok(None);
    }
    let item = item_from_json(m).ok_or_else(|| anyhow::anyhow!("stream image is not DynamoDB JSON"))?;
    Ok(match decode_record(&item)? {
        OrderRecord::Order(o) => Some(*o),
        OrderRecord::Void => None,
    })
}

/// The events one stream record announces.
pub fn record_events(r: &StreamRecord) -> anyhow::Result<Vec<OrderEvent>> {
    let old = image(&r.dynamodb.old_image)?;
    let new = image(&r.dynamodb.new_image)?;
    Ok(events_for_change(old.as_ref(), new.as_ref()))
}

pub async fn handle(app: &App, ev: StreamEvent) -> anyhow::Result<StreamBatchResponse> {
    for (i, r) in ev.records.iter().enumerate() {
        if crate::fault!(app.faults, faults::PUBLISH_EVENTS_DROP) {
            tracing::warn!(seq = r.dynamodb.sequence_number, "fault injection: stream record dropped");
            continue;
        }
        let fail = || StreamBatchResponse {
            batch_item_failures: vec![StreamItemFailure { item_identifier: r.dynamodb.sequence_number.clone() }],
        };
        let events = match record_events(r) {
            Ok(e) => e.into_iter().filter(|e| app.config.publish_events.contains(&e.kind)).collect::<Vec<_>>(),
            Err(e) => {
                // An undecodable order image is a bug, not a transient: report it so it is retried
                // and lands in the on-failure destination instead of vanishing.
                tracing::error!(
                    seq = r.dynamodb.sequence_number,
                    error = format!("{e:#}"),
                    "cannot decode stream record"
                );
                return Ok(fail());
            }
        };
        if events.is_empty() {
            continue;
        }
        let mut pending = events.clone();
        for attempt in 1..=PUBLISH_ATTEMPTS {
            let accepted = match app.bus.publish(&pending).await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(attempt, error = format!("{e:#}"), "PutEvents failed");
                    vec![false; pending.len()]
                }
            };
            pending = pending.into_iter().zip(accepted).filter(|(_, ok)| !ok).map(|(e, _)| e).collect();
            if pending.is_empty() {
                break;
            }
            crate::service::backoff(attempt).await;
        }
        if !pending.is_empty() {
            return Ok(fail());
        }
        for e in &events {
            tracing::info!(
                order_id = e.detail.order_id,
                event = e.kind.as_str(),
                version = e.detail.version,
                "event published"
            );
        }
        if i == 0 && crate::fault!(app.faults, faults::PUBLISH_EVENTS_CRASH) {
            return Err(InjectedCrash(faults::PUBLISH_EVENTS_CRASH).into());
        }
    }
    Ok(StreamBatchResponse::default())
}
