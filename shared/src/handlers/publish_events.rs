//! publish-events: the order table's stream is the outbox (docs/architecture.md, "Events and self-healing"). Status changes become
//! domain events on the bus; a record whose events were not all accepted is reported as the
//! batch item failure, so the stream source retries from it (later records come again too,
//! which is harmless: consumers are idempotent).

use super::stream::{self, StreamBatchResponse, StreamEvent, StreamItemFailure, StreamRecord};
use crate::app::table_images::order_image;
use crate::app::App;
use crate::domain::events::{events_for_change, OrderEvent};
use crate::domain::order::Order;
use crate::faults::{self, InjectedCrash};

const PUBLISH_ATTEMPTS: u32 = 3;

fn image(item: &serde_dynamo::Item) -> anyhow::Result<Option<Order>> {
    stream::image(item).map_or(Ok(None), |item| order_image(&item))
}

/// The events one stream record announces.
pub fn record_events(r: &StreamRecord) -> anyhow::Result<Vec<OrderEvent>> {
    let old = image(&r.change.old_image)?;
    let new = image(&r.change.new_image)?;
    Ok(events_for_change(old.as_ref(), new.as_ref()))
}

/// A campaign order's status change (the live "orders by status" of docs/operations.md).
fn campaign_status_change(r: &StreamRecord) -> Vec<(crate::domain::CampaignId, Option<&'static str>, &'static str)> {
    let (Ok(old), Ok(Some(new))) = (image(&r.change.old_image), image(&r.change.new_image)) else { return Vec::new() };
    let from = old.as_ref().map(|o| o.status);
    if from == Some(new.status) {
        return Vec::new();
    }
    let mut campaigns: Vec<_> = new.lines.iter().filter_map(|l| l.campaign.clone()).collect();
    campaigns.sort();
    campaigns.dedup();
    campaigns.into_iter().map(|c| (c, from.map(|s| s.as_str()), new.status.as_str())).collect()
}

pub async fn handle(app: &App, ev: StreamEvent) -> anyhow::Result<StreamBatchResponse> {
    let r = publish(app, &ev).await;
    crate::service::sale::flush(app, true).await;
    r
}

async fn publish(app: &App, ev: &StreamEvent) -> anyhow::Result<StreamBatchResponse> {
    for (i, r) in ev.records.iter().enumerate() {
        let correlation = image(&r.change.new_image).ok().flatten().and_then(|o| o.correlation);
        match crate::telemetry::correlated(&app.function, correlation, publish_record(app, i, r)).await? {
            Some(failed) => return Ok(failed),
            None => continue,
        }
    }
    Ok(StreamBatchResponse { batch_item_failures: Vec::new() })
}

/// One record: `Some(answer)` ends the batch there (the record failed), `None` goes on.
async fn publish_record(app: &App, i: usize, r: &StreamRecord) -> anyhow::Result<Option<StreamBatchResponse>> {
    {
        if crate::fault!(app.faults, faults::PUBLISH_EVENTS_DROP) {
            tracing::warn!(seq = stream::sequence_number(r), "fault injection: stream record dropped");
            return Ok(None);
        }
        let fail = || StreamBatchResponse {
            batch_item_failures: vec![StreamItemFailure {
                item_identifier: Some(stream::sequence_number(r).to_owned()),
            }],
        };
        let events = match record_events(r) {
            Ok(e) => e.into_iter().filter(|e| app.config.publish_events.contains(&e.kind)).collect::<Vec<_>>(),
            Err(e) => {
                // An undecodable order image (e.g. a status a newer build wrote during a rolling
                // deploy): reported as the failed item. The stream source retries it a bounded
                // number of times (MaximumRetryAttempts, MaximumRecordAgeInSeconds, bisecting
                // the batch so the records after it flow), then sends its position to the
                // on-failure queue, whose alarm leads to the replay in docs/runbook.md.
                tracing::error!(
                    seq = stream::sequence_number(r),
                    error = format!("{e:#}"),
                    "cannot decode stream record"
                );
                return Ok(Some(fail()));
            }
        };
        let changes = campaign_status_change(r);
        if events.is_empty() {
            crate::service::sale::record_orders(app, &changes);
            return Ok(None);
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
            return Ok(Some(fail()));
        }
        crate::service::sale::record_orders(app, &changes);
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
    Ok(None)
}
