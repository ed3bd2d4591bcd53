//! Event sources run the way Lambda's event source mappings run them: SQS batches with partial
//! batch failure and redrive, DynamoDB stream batches with retry from the failed record and an
//! on-failure destination, and schedules.

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use holdfast::app::App;
use holdfast::handlers::stream::{StreamChange, StreamEvent, StreamRecord};
use std::collections::HashMap;
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
        usage::invocation(&self.function);
        let ids: Vec<String> = records.iter().filter_map(|r| r.message_id.clone()).collect();
        let app = self.app.clone();
        let function = self.function.clone();
        let out =
            tokio::spawn(async move { holdfast::handlers::sqs(&function, &app, SqsEvent { records }).await }).await;
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
    pub max_retries: i64,
    pub on_failure_url: Option<String>,
    pub filters: Vec<serde_json::Value>,
}

fn stream_av_json(v: &aws_sdk_dynamodbstreams::types::AttributeValue) -> serde_json::Value {
    use aws_sdk_dynamodbstreams::types::AttributeValue as A;
    use serde_json::json;
    let b64 =
        |b: &aws_sdk_dynamodbstreams::primitives::Blob| base64::engine::general_purpose::STANDARD.encode(b.as_ref());
    use base64::Engine;
    match v {
        A::S(s) => json!({"S": s}),
        A::N(n) => json!({"N": n}),
        A::Bool(b) => json!({"BOOL": b}),
        A::Null(_) => json!({"NULL": true}),
        A::B(b) => json!({"B": b64(b)}),
        A::Ss(v) => json!({"SS": v}),
        A::Ns(v) => json!({"NS": v}),
        A::Bs(v) => json!({"BS": v.iter().map(b64).collect::<Vec<_>>()}),
        A::L(v) => json!({"L": v.iter().map(stream_av_json).collect::<Vec<_>>()}),
        A::M(m) => {
            json!({"M": m.iter().map(|(k, v)| (k.clone(), stream_av_json(v))).collect::<serde_json::Map<_, _>>()})
        }
        _ => json!({"NULL": true}),
    }
}

fn image(
    m: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    m.map(|m| m.iter().map(|(k, v)| (k.clone(), stream_av_json(v))).collect())
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
        let mut pending: Vec<StreamRecord> = Vec::new();
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
                            let Some(c) = r.dynamodb() else { continue };
                            *last = c.sequence_number().map(str::to_owned);
                            let rec = StreamRecord {
                                event_id: r.event_id().unwrap_or_default().to_owned(),
                                event_name: r.event_name().map(|n| n.as_str().to_owned()).unwrap_or_default(),
                                event_source: "aws:dynamodb".into(),
                                event_source_arn: arn.clone(),
                                dynamodb: StreamChange {
                                    keys: image(c.keys()).unwrap_or_default(),
                                    new_image: image(c.new_image()),
                                    old_image: image(c.old_image()),
                                    sequence_number: c.sequence_number().unwrap_or_default().to_owned(),
                                    stream_view_type: "NEW_AND_OLD_IMAGES".into(),
                                },
                            };
                            let as_json = serde_json::to_value(&rec).unwrap_or_default();
                            if self.filters.is_empty() || self.filters.iter().any(|f| pattern_matches(f, &as_json)) {
                                pending.push(rec);
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(function = self.function, error = %aws_sdk_dynamodbstreams::error::DisplayErrorContext(&e), "GetRecords failed");
                    }
                }
            }
            while !pending.is_empty() {
                let n = pending.len().min(self.batch_size.max(1));
                let batch: Vec<StreamRecord> = pending.drain(..n).collect();
                self.deliver(batch).await;
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }

    /// Delivers one batch, retrying from the first failed record; a batch that keeps failing
    /// goes to the on-failure destination and the stream moves on.
    async fn deliver(&self, mut batch: Vec<StreamRecord>) {
        let mut attempts: i64 = 0;
        while !batch.is_empty() {
            let app = self.app.clone();
            let function = self.function.clone();
            let ev = StreamEvent { records: batch.clone() };
            holdfast::adapters::usage::invocation(&function);
            let out = tokio::spawn(async move { holdfast::handlers::stream(&function, &app, ev).await }).await;
            let retry_from = match out {
                Ok(Some(Ok(resp))) => match resp.batch_item_failures.first() {
                    None => return,
                    Some(f) => batch.iter().position(|r| r.dynamodb.sequence_number == f.item_identifier).unwrap_or(0),
                },
                _ => 0,
            };
            batch.drain(..retry_from);
            attempts += 1;
            if self.max_retries >= 0 && attempts > self.max_retries {
                tracing::error!(
                    function = self.function,
                    records = batch.len(),
                    "stream batch failed past its retries; sent to the on-failure destination"
                );
                if let Some(url) = &self.on_failure_url {
                    let body = serde_json::json!({"records": batch.iter().map(|r| &r.dynamodb.sequence_number).collect::<Vec<_>>(), "function": self.function}).to_string();
                    let _ = self.sqs.send_message().queue_url(url).message_body(body).send().await;
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis((50 * attempts.min(20)) as u64)).await;
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
        holdfast::adapters::usage::invocation(&f);
        match tokio::spawn(async move { holdfast::handlers::schedule(&f, &a, ev).await }).await {
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
