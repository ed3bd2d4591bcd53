//! Event sources run the way Lambda's event source mappings run them: SQS batches with partial
//! batch failure and redrive, DynamoDB stream batches with retry from the failed record and an
//! on-failure destination, and schedules.

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use holdfast::app::App;
use holdfast::handlers::stream::{StreamEvent, StreamRecord};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub struct SqsSource {
    pub function: String,
    pub app: Arc<App>,
    pub client: aws_sdk_sqs::Client,
    pub queue_url: String,
    pub queue_arn: String,
    pub batch_size: i32,
    pub report_failures: bool,
    /// (DLQ url, maxReceiveCount): enforced here too, whatever the emulator does.
    pub redrive: Option<(String, i64)>,
    /// An EventBridge rule delivers into this queue (each message was one SQS send by the rule).
    pub fed_by_rule: bool,
}

impl SqsSource {
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            if *shutdown.borrow() {
                return;
            }
            let poll = self
                .client
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(self.batch_size.clamp(1, 10))
                .wait_time_seconds(1)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send();
            let out = tokio::select! {
                _ = shutdown.changed() => return,
                r = poll => r,
            };
            let msgs = match out {
                Ok(o) => o.messages.unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(function = self.function, error = %aws_sdk_sqs::error::DisplayErrorContext(&e), "ReceiveMessage failed");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            if msgs.is_empty() {
                continue;
            }
            self.deliver(msgs).await;
        }
    }

    async fn deliver(&self, msgs: Vec<aws_sdk_sqs::types::Message>) {
        let mut records = Vec::new();
        let mut handles: HashMap<String, String> = HashMap::new();
        for m in msgs {
            let id = m.message_id().unwrap_or_default().to_owned();
            let receipt = m.receipt_handle().unwrap_or_default().to_owned();
            let attrs: HashMap<String, String> = m
                .attributes()
                .map(|a| a.iter().map(|(k, v)| (k.as_str().to_owned(), v.clone())).collect())
                .unwrap_or_default();
            let count: i64 = attrs.get("ApproximateReceiveCount").and_then(|c| c.parse().ok()).unwrap_or(1);
            if let Some((dlq, max)) = &self.redrive {
                if count > *max {
                    // Past maxReceiveCount: the message goes to the DLQ, not to the function.
                    if self
                        .client
                        .send_message()
                        .queue_url(dlq)
                        .message_body(m.body().unwrap_or_default())
                        .send()
                        .await
                        .is_ok()
                    {
                        let _ = self
                            .client
                            .delete_message()
                            .queue_url(&self.queue_url)
                            .receipt_handle(&receipt)
                            .send()
                            .await;
                        tracing::warn!(function = self.function, message_id = id, "message moved to the DLQ");
                    }
                    continue;
                }
            }
            handles.insert(id.clone(), receipt.clone());
            records.push(SqsMessage {
                message_id: Some(id),
                receipt_handle: Some(receipt),
                body: m.body().map(str::to_owned),
                md5_of_body: m.md5_of_body().map(str::to_owned),
                attributes: attrs,
                event_source: Some("aws:sqs".into()),
                event_source_arn: Some(self.queue_arn.clone()),
                aws_region: Some("us-east-1".into()),
                ..Default::default()
            });
        }
        if records.is_empty() {
            return;
        }
        // What AWS would bill for this batch: the receive that returned it, one rule delivery per
        // message if a rule feeds the queue, and the invocation.
        use holdfast::adapters::usage;
        drop(usage::call("sqs:ReceiveMessage"));
        if self.fed_by_rule {
            for _ in &records {
                drop(usage::call("sqs:SendMessage(rule target)"));
            }
        }
        let billed = usage::invocation(&self.function);
        let ids: Vec<String> = records.iter().filter_map(|r| r.message_id.clone()).collect();
        let app = self.app.clone();
        let function = self.function.clone();
        let out =
            tokio::spawn(async move { holdfast::handlers::sqs(&function, &app, SqsEvent { records }).await }).await;
        drop(billed);
        let succeeded: Vec<String> = match out {
            Ok(Some(Ok(resp))) if self.report_failures => {
                let failed: Vec<&str> = resp.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
                ids.into_iter().filter(|i| !failed.contains(&i.as_str())).collect()
            }
            Ok(Some(Ok(_))) => ids,
            Ok(Some(Err(e))) => {
                tracing::warn!(
                    function = self.function,
                    error = format!("{e:#}"),
                    "invocation failed; batch will be retried"
                );
                Vec::new()
            }
            _ => {
                tracing::error!(function = self.function, "invocation panicked or has no SQS handler");
                Vec::new()
            }
        };
        let entries: Vec<DeleteMessageBatchRequestEntry> = succeeded
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .receipt_handle(handles.get(id)?)
                    .build()
                    .ok()
            })
            .collect();
        if !entries.is_empty() {
            drop(holdfast::adapters::usage::call("sqs:DeleteMessageBatch"));
            if let Err(e) =
                self.client.delete_message_batch().queue_url(&self.queue_url).set_entries(Some(entries)).send().await
            {
                tracing::warn!(function = self.function, error = %aws_sdk_sqs::error::DisplayErrorContext(&e), "DeleteMessageBatch failed");
            }
        }
    }
}

pub struct StreamSource {
    pub function: String,
    pub app: Arc<App>,
    pub ddb: aws_sdk_dynamodb::Client,
    pub streams: aws_sdk_dynamodbstreams::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub table: String,
    pub batch_size: usize,
    /// `MaximumRetryAttempts` (-1 = until the record expires).
    pub max_retries: i64,
    /// `MaximumRecordAgeInSeconds` (-1 = no limit).
    pub max_record_age_s: i64,
    /// `BisectBatchOnFunctionError`.
    pub bisect: bool,
    pub on_failure_url: Option<String>,
    pub filters: Vec<serde_json::Value>,
    /// `HOLDFAST_EMULATE=stream-split` (DESIGN §23): batches cut at random points, records of
    /// different items interleaved (each item's order kept), and now and then the last batch
    /// held back to the next poll, as DynamoDB Streams may deliver one transaction's items.
    pub split: bool,
}

/// Records `stream-split` delivered in another order than they were read, and batches it held
/// back to the next poll, in this process (the tests read them to see the switch bite).
pub static SPLIT_REORDERED: AtomicU64 = AtomicU64::new(0);
pub static SPLIT_HELD_BACK: AtomicU64 = AtomicU64::new(0);

/// The item a stream record is of (its keys, in a fixed order).
fn item_key(r: &StreamRecord) -> String {
    let mut k: Vec<String> = r.change.keys.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
    k.sort();
    k.join("|")
}

/// A Streams API record as Lambda delivers it (the same JSON shape: `GetRecords` output is
/// what the runbook's replay feeds to the function).
fn lambda_record(r: &aws_sdk_dynamodbstreams::types::Record, arn: &str) -> Option<(StreamRecord, String)> {
    let c = r.dynamodb()?;
    let item = |m: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>| {
        m.map(|m| serde_dynamo::Item::from(m.clone())).unwrap_or_default()
    };
    let created = c
        .approximate_creation_date_time()
        .and_then(|t| chrono::DateTime::from_timestamp(t.secs(), t.subsec_nanos()))
        .unwrap_or_else(chrono::Utc::now);
    let seq = c.sequence_number().unwrap_or_default().to_owned();
    Some((
        StreamRecord {
            aws_region: "us-east-1".into(),
            change: aws_lambda_events::dynamodb::StreamRecord {
                approximate_creation_date_time: created,
                keys: item(c.keys()),
                new_image: item(c.new_image()),
                old_image: item(c.old_image()),
                sequence_number: Some(seq.clone()),
                size_bytes: c.size_bytes().unwrap_or(0),
                stream_view_type: Some(aws_lambda_events::dynamodb::StreamViewType::NewAndOldImages),
            },
            event_id: r.event_id().unwrap_or_default().to_owned(),
            event_name: r.event_name().map(|n| n.as_str().to_owned()).unwrap_or_default(),
            event_source: Some("aws:dynamodb".into()),
            event_version: Some("1.1".into()),
            event_source_arn: Some(arn.to_owned()),
            user_identity: None,
            record_format: None,
            table_name: None,
        },
        seq,
    ))
}

/// EventBridge-style matching of the subset filter patterns use: nested objects, lists of
/// exact values, and `{"prefix": ...}`.
pub fn pattern_matches(pattern: &serde_json::Value, event: &serde_json::Value) -> bool {
    use serde_json::Value;
    match pattern {
        Value::Object(p) => p.iter().all(|(k, sub)| event.get(k).is_some_and(|e| pattern_matches(sub, e))),
        Value::Array(alts) => alts.iter().any(|a| match a {
            Value::Object(o) if o.contains_key("prefix") => {
                event.as_str().zip(o["prefix"].as_str()).is_some_and(|(e, p)| e.starts_with(p))
            }
            v => v == event,
        }),
        v => v == event,
    }
}

impl StreamSource {
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let arn = loop {
            match self.ddb.describe_table().table_name(&self.table).send().await {
                Ok(d) => match d.table().and_then(|t| t.latest_stream_arn()) {
                    Some(a) => break a.to_owned(),
                    None => return,
                },
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        // Last sequence number seen per shard. A fresh iterator is taken before every read:
        // moto's rollback of a cancelled transaction leaves earlier iterators on a stale copy of
        // the shard (MOTO_NOTES.md d), which AWS would never do.
        let mut last_seq: HashMap<String, Option<String>> = HashMap::new();
        let mut pending: Vec<(String, StreamRecord)> = Vec::new();
        // Idle streams are polled less often (100 ms doubling to 800 ms), as Lambda's poller
        // does: the emulator serialises DynamoDB requests, and two streams per stack polled at
        // 10 Hz by every parallel test queue the tests' own requests behind them.
        let mut idle_ms = 100u64;
        let mut rng = fastrand::Rng::new();
        loop {
            if *shutdown.borrow() {
                return;
            }
            if let Ok(d) = self.streams.describe_stream().stream_arn(&arn).send().await {
                for sh in d.stream_description().map(|s| s.shards()).unwrap_or_default() {
                    last_seq.entry(sh.shard_id().unwrap_or_default().to_owned()).or_insert(None);
                }
            }
            for (shard, last) in last_seq.iter_mut() {
                use aws_sdk_dynamodbstreams::types::ShardIteratorType as T;
                let mut req = self.streams.get_shard_iterator().stream_arn(&arn).shard_id(shard);
                req = match last {
                    Some(seq) => req.shard_iterator_type(T::AfterSequenceNumber).sequence_number(seq.clone()),
                    None => req.shard_iterator_type(T::TrimHorizon),
                };
                let Some(it) = req.send().await.ok().and_then(|o| o.shard_iterator().map(str::to_owned)) else {
                    continue;
                };
                match self.streams.get_records().shard_iterator(&it).limit(1000).send().await {
                    Ok(out) => {
                        for r in out.records() {
                            let Some((rec, seq)) = lambda_record(r, &arn) else { continue };
                            *last = Some(seq);
                            let as_json = serde_json::to_value(&rec).unwrap_or_default();
                            if self.filters.is_empty() || self.filters.iter().any(|f| pattern_matches(f, &as_json)) {
                                pending.push((shard.clone(), rec));
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(function = self.function, error = %aws_sdk_dynamodbstreams::error::DisplayErrorContext(&e), "GetRecords failed");
                    }
                }
            }
            idle_ms = if pending.is_empty() { (idle_ms * 2).min(800) } else { 100 };
            if self.split {
                self.deliver_split(&arn, &mut pending, &mut rng).await;
            }
            while !self.split && !pending.is_empty() {
                let n = pending.len().min(self.batch_size.max(1));
                let batch: Vec<(String, StreamRecord)> = pending.drain(..n).collect();
                self.deliver(&arn, batch).await;
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(Duration::from_millis(idle_ms)) => {}
            }
        }
    }

    /// `stream-split`: delivers what was read as random batches of interleaved items; the last
    /// batch stays in `pending` for the next poll one time in three (newer records of its items
    /// are read after it, so each item's order holds).
    async fn deliver_split(&self, arn: &str, pending: &mut Vec<(String, StreamRecord)>, rng: &mut fastrand::Rng) {
        let read: Vec<Option<String>> = pending.iter().map(|(_, r)| r.change.sequence_number.clone()).collect();
        let records = std::mem::take(pending);
        let mut batches = holdfast::adapters::emulate::stream::split_and_interleave(
            records,
            |(_, r)| item_key(r),
            self.batch_size.max(1),
            rng,
        );
        let moved = batches.iter().flatten().zip(&read).filter(|((_, r), seq)| &r.change.sequence_number != *seq);
        SPLIT_REORDERED.fetch_add(moved.count() as u64, Ordering::Relaxed);
        if batches.len() > 1 && rng.u8(..3) == 0 {
            if let Some(last) = batches.pop() {
                SPLIT_HELD_BACK.fetch_add(1, Ordering::Relaxed);
                *pending = last;
            }
        }
        for batch in batches {
            self.deliver(arn, batch).await;
        }
    }

    /// Delivers one batch the way Lambda's stream event source does: on a failure it retries
    /// from the first failed record (`ReportBatchItemFailures`), splitting the batch in two
    /// first when `BisectBatchOnFunctionError` is set (a split does not use up a retry), so
    /// the records after a poison record still flow. A batch past `MaximumRetryAttempts` or
    /// holding a record older than `MaximumRecordAgeInSeconds` goes to the on-failure
    /// destination as AWS sends it (shard and sequence range, no record data).
    async fn deliver(&self, arn: &str, batch: Vec<(String, StreamRecord)>) {
        // (records, attempts so far), first to deliver last
        let mut work: Vec<(Vec<(String, StreamRecord)>, i64)> = vec![(batch, 0)];
        while let Some((mut batch, attempts)) = work.pop() {
            if batch.is_empty() {
                continue;
            }
            if let Some(condition) = self.expired(&batch, attempts) {
                self.send_to_on_failure(arn, &batch, attempts, condition).await;
                continue;
            }
            let app = self.app.clone();
            let function = self.function.clone();
            let ev = StreamEvent { records: batch.iter().map(|(_, r)| r.clone()).collect() };
            let billed = holdfast::adapters::usage::invocation(&function);
            let out = tokio::spawn(async move { holdfast::handlers::stream(&function, &app, ev).await }).await;
            drop(billed);
            let retry_from = match out {
                Ok(Some(Ok(resp))) => match resp.batch_item_failures.first() {
                    None => continue,
                    Some(f) => {
                        batch.iter().position(|(_, r)| r.change.sequence_number == f.item_identifier).unwrap_or(0)
                    }
                },
                _ => 0,
            };
            batch.drain(..retry_from);
            if self.bisect && batch.len() > 1 {
                let second = batch.split_off(batch.len() / 2);
                work.push((second, 0));
                work.push((batch, attempts));
                continue;
            }
            let attempts = attempts + 1;
            tokio::time::sleep(Duration::from_millis((50 * attempts.min(20)) as u64)).await;
            work.push((batch, attempts));
        }
    }

    /// Why this batch is not delivered again, if it is not.
    fn expired(&self, batch: &[(String, StreamRecord)], attempts: i64) -> Option<&'static str> {
        if self.max_retries >= 0 && attempts > self.max_retries {
            return Some("RetryAttemptsExhausted");
        }
        let oldest = batch.iter().map(|(_, r)| r.change.approximate_creation_date_time).min()?;
        let age = (chrono::Utc::now() - oldest).num_seconds();
        (self.max_record_age_s >= 0 && age > self.max_record_age_s).then_some("RecordAgeExceeded")
    }

    async fn send_to_on_failure(&self, arn: &str, batch: &[(String, StreamRecord)], attempts: i64, condition: &str) {
        let seq = |i: usize| batch.get(i).and_then(|(_, r)| r.change.sequence_number.clone());
        tracing::error!(
            function = self.function,
            records = batch.len(),
            condition,
            "stream batch sent to the on-failure destination"
        );
        let Some(url) = &self.on_failure_url else { return };
        let body = serde_json::json!({
            "requestContext": {"condition": condition, "approximateInvokeCount": attempts + 1, "functionArn": self.function},
            "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": chrono::Utc::now().to_rfc3339(),
            "DDBStreamBatchInfo": {
                "shardId": batch.first().map(|(s, _)| s.clone()),
                "startSequenceNumber": seq(0),
                "endSequenceNumber": seq(batch.len().saturating_sub(1)),
                "approximateArrivalOfFirstRecord": batch.first().map(|(_, r)| r.change.approximate_creation_date_time.to_rfc3339()),
                "approximateArrivalOfLastRecord": batch.last().map(|(_, r)| r.change.approximate_creation_date_time.to_rfc3339()),
                "batchSize": batch.len(),
                "streamArn": arn,
            }
        })
        .to_string();
        if let Err(e) = self.sqs.send_message().queue_url(url).message_body(body).send().await {
            tracing::error!(function = self.function, error = %aws_sdk_sqs::error::DisplayErrorContext(&e), "on-failure send failed");
        }
    }
}

/// Fires a scheduled function every `every`.
pub async fn schedule(function: String, app: Arc<App>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let ev = serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}});
        let f = function.clone();
        let a = app.clone();
        let billed = holdfast::adapters::usage::invocation(&f);
        let out = tokio::spawn(async move { holdfast::handlers::schedule(&f, &a, ev).await }).await;
        drop(billed);
        match out {
            Ok(Some(Ok(report))) => tracing::info!(function, %report, "scheduled run done"),
            Ok(Some(Err(e))) => tracing::warn!(function, error = format!("{e:#}"), "scheduled run failed"),
            _ => tracing::error!(function, "scheduled run panicked"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filter_patterns_match_prefixes_and_values() {
        let p = json!({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "ORD#"}]}}}});
        assert!(pattern_matches(&p, &json!({"dynamodb": {"Keys": {"pk": {"S": "ORD#1"}}}})));
        assert!(!pattern_matches(&p, &json!({"dynamodb": {"Keys": {"pk": {"S": "PAY#1"}}}})));
        assert!(!pattern_matches(&p, &json!({"dynamodb": {}})));
        assert!(pattern_matches(&json!({"a": ["x", "y"]}), &json!({"a": "y"})));
    }
}
