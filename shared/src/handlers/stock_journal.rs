//! stock-journal: the stock table's stream becomes the stock journal (docs/after-sale.md,
//! "Stock journal"). Each record of a product or quota shard whose counters changed is one
//! entry (before/after, quantity, and the cause the write stamped on the item); other items
//! are skipped. Entries are keyed by the record's time and sequence number, so a redelivered
//! batch writes the same items again. A batch whose write fails is reported from its first
//! record, so the stream source retries it (bounded, bisected, then the on-failure queue).

use super::stream::{self, StreamBatchResponse, StreamEvent, StreamItemFailure, StreamRecord};
use crate::app::table_images::{counted_item, counter_image};
use crate::app::App;
use crate::domain::journal::{self, Entry};

/// The journal entry of one stream record (`None`: not a counter item, or nothing moved).
pub fn record_entry(r: &StreamRecord) -> anyhow::Result<Option<Entry>> {
    let old = stream::image(&r.change.old_image);
    let new = stream::image(&r.change.new_image);
    let Some(item) = new.as_ref().or(old.as_ref()).and_then(counted_item) else { return Ok(None) };
    let old = old.as_ref().map(counter_image).transpose()?;
    let new = new.as_ref().map(counter_image).transpose()?;
    let at_ms = r.change.approximate_creation_date_time.timestamp_millis();
    // sequence numbers grow within a stream shard; padded, they also sort as strings
    let seq: String = stream::sequence_number(r).chars().filter(char::is_ascii_alphanumeric).collect();
    let seq = if seq.bytes().all(|b| b.is_ascii_digit()) { format!("{seq:0>40}") } else { seq };
    Ok(journal::entry(&item, old.as_ref(), new.as_ref(), at_ms, &seq))
}

pub async fn handle(app: &App, ev: StreamEvent) -> anyhow::Result<StreamBatchResponse> {
    let mut entries = Vec::new();
    for r in &ev.records {
        match record_entry(r) {
            Ok(Some(e)) => entries.push(e),
            Ok(None) => {}
            Err(e) => {
                // an undecodable counter item: reported, retried a bounded number of times,
                // then its position goes to the on-failure queue (docs/runbook.md)
                tracing::error!(
                    seq = stream::sequence_number(r),
                    error = format!("{e:#}"),
                    "cannot decode stock record"
                );
                return Ok(fail_from(&ev, r, app, &entries).await);
            }
        }
    }
    if let Err(e) = app.journal.put(&entries).await {
        tracing::warn!(error = format!("{e:#}"), "journal write failed");
        let first = ev.records.first().map(|r| stream::sequence_number(r).to_owned());
        return Ok(StreamBatchResponse { batch_item_failures: vec![StreamItemFailure { item_identifier: first }] });
    }
    app.count("JournalEntries", entries.len() as u64);
    // low-stock crossings: a failure here is logged, not retried; a LowStock not sent leaves
    // its SKU unmarked, so the next change of its stock checks and sends again
    let mut moved: Vec<crate::domain::Sku> = entries
        .iter()
        .filter(|e| e.campaign.is_none() && e.before.available != e.after.available)
        .map(|e| e.sku.clone())
        .collect();
    moved.sort();
    moved.dedup();
    if let Err(e) = crate::service::sale::check_low_stock(app, &moved).await {
        tracing::warn!(error = format!("{e:#}"), "low-stock check failed");
    }
    // the stock change feed for downstream caches (docs/operations.md, "Stock change feed"):
    // best effort, never retried (a cache re-reads the SKU view when it misses one)
    let changes: Vec<serde_json::Value> = crate::domain::stock_feed::stock_changes(&entries)
        .iter()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    if !changes.is_empty() {
        use crate::telemetry::names;
        match app.bus.publish_stock_batch("StockChanged", &changes).await {
            Ok(n) => {
                app.count(names::STOCK_CHANGED, n as u64);
                app.count(names::STOCK_CHANGED_NOT_SENT, (changes.len() - n) as u64);
            }
            Err(e) => {
                app.count(names::STOCK_CHANGED_NOT_SENT, changes.len() as u64);
                tracing::warn!(error = format!("{e:#}"), "StockChanged not sent");
            }
        }
    }
    // notify-me waitlists (docs/waitlist.md): a SKU whose free units rose tells its next
    // waitlisted buyers; best effort (a miss is done again by the next change, a buyer's read or
    // the sweep)
    let risen = crate::domain::stock_feed::risen(&entries);
    if !risen.is_empty() {
        crate::service::waitlist::upkeep_all(app, &risen).await;
    }
    Ok(StreamBatchResponse { batch_item_failures: Vec::new() })
}

/// Writes the entries before the bad record, and reports the bad record as the failed item.
async fn fail_from(ev: &StreamEvent, bad: &StreamRecord, app: &App, before: &[Entry]) -> StreamBatchResponse {
    let from = if app.journal.put(before).await.is_ok() {
        stream::sequence_number(bad).to_owned()
    } else {
        ev.records.first().map(|r| stream::sequence_number(r).to_owned()).unwrap_or_default()
    };
    StreamBatchResponse { batch_item_failures: vec![StreamItemFailure { item_identifier: Some(from) }] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Sku;

    fn record(old: serde_json::Value, new: serde_json::Value) -> StreamRecord {
        let ev: StreamEvent = serde_json::from_value(serde_json::json!({"Records": [{
            "awsRegion": "eu-west-1", "eventID": "1", "eventName": "MODIFY",
            "dynamodb": {
                "Keys": {"pk": {"S": "SKU#A-1#0"}},
                "OldImage": old, "NewImage": new,
                "SequenceNumber": "000123", "SizeBytes": 10, "StreamViewType": "NEW_AND_OLD_IMAGES",
                "ApproximateCreationDateTime": 1_700_000_000.5
            }
        }]}))
        .unwrap();
        ev.records.into_iter().next().unwrap()
    }

    #[test]
    fn a_confirm_record_of_a_shard_becomes_an_entry_and_other_items_do_not() {
        let r = record(
            serde_json::json!({"pk": {"S": "SKU#A-1#0"}, "av": {"N": "5"}, "lk": {"N": "2"}, "sd": {"N": "0"},
                "ref": {"S": "o1"}, "actor": {"S": "u1"}, "why": {"S": "freeze"}}),
            serde_json::json!({"pk": {"S": "SKU#A-1#0"}, "av": {"N": "5"}, "lk": {"N": "0"}, "sd": {"N": "2"},
                "ref": {"S": "o1"}, "actor": {"S": "system"}, "why": {"S": "sell"}}),
        );
        let e = record_entry(&r).unwrap().unwrap();
        assert_eq!((e.sku, e.shard, e.quantity), (Sku::parse("A-1").unwrap(), 0, 2));
        assert_eq!((e.cause.as_str(), e.actor.as_str(), e.why.as_str()), ("o1", "system", "sell"));
        // the event type keeps whole seconds of the creation time
        assert_eq!(e.seq, "1700000000000.0000000000000000000000000000000000000123");
        let meta = record(serde_json::json!({}), serde_json::json!({"pk": {"S": "SKU#A-1"}, "v": {"N": "2"}}));
        assert!(record_entry(&meta).unwrap().is_none());
    }
}
