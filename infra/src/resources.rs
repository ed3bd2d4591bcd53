//! Creates in the emulator what the template declares, under a name prefix so several stacks
//! (one per test) share one emulator without seeing each other.

use crate::template::{EnvValue, Template};
use anyhow::{anyhow, Context};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, StreamSpecification, StreamViewType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub prefix: String,
    pub tables: BTreeMap<String, String>,
    /// logical id → (url, arn)
    pub queues: BTreeMap<String, (String, String)>,
    pub buses: BTreeMap<String, String>,
    /// KMS keys: logical id → (key id, key ARN).
    pub kms_keys: BTreeMap<String, (String, String)>,
    pub parameters: BTreeMap<String, Option<String>>,
}

impl Resources {
    pub fn table(&self, logical: &str) -> anyhow::Result<&str> {
        self.tables.get(logical).map(String::as_str).ok_or_else(|| anyhow!("no table {logical}"))
    }
    pub fn queue_url(&self, logical: &str) -> anyhow::Result<&str> {
        self.queues.get(logical).map(|(u, _)| u.as_str()).ok_or_else(|| anyhow!("no queue {logical}"))
    }
    pub fn queue_arn(&self, logical: &str) -> anyhow::Result<&str> {
        self.queues.get(logical).map(|(_, a)| a.as_str()).ok_or_else(|| anyhow!("no queue {logical}"))
    }

    /// What `!Ref` / `!GetAtt` would give in AWS, for the local resources.
    pub fn resolve(&self, v: &EnvValue) -> Option<String> {
        match v {
            EnvValue::Literal(s) => Some(s.clone()),
            EnvValue::Ref(r) => self
                .tables
                .get(r)
                .cloned()
                .or_else(|| self.queues.get(r).map(|(u, _)| u.clone()))
                .or_else(|| self.buses.get(r).cloned())
                .or_else(|| self.kms_keys.get(r).map(|(id, _)| id.clone()))
                .or_else(|| self.parameters.get(r).cloned().flatten()),
            EnvValue::GetAtt(r, a) if a == "Arn" => {
                self.queues.get(r).map(|(_, a)| a.clone()).or_else(|| self.kms_keys.get(r).map(|(_, a)| a.clone()))
            }
            EnvValue::GetAtt(r, a) if a == "QueueUrl" => self.queues.get(r).map(|(u, _)| u.clone()),
            EnvValue::GetAtt(r, a) if a == "QueueName" => self.queues.get(r).map(|_| format!("{}-{r}", self.prefix)),
            _ => None,
        }
    }
}

fn s(v: &Value, k: &str) -> anyhow::Result<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| anyhow!("missing {k}"))
}

fn key_schema(v: &Value) -> anyhow::Result<Vec<KeySchemaElement>> {
    v.as_array()
        .ok_or_else(|| anyhow!("KeySchema"))?
        .iter()
        .map(|k| {
            Ok(KeySchemaElement::builder()
                .attribute_name(s(k, "AttributeName")?)
                .key_type(KeyType::from(s(k, "KeyType")?.as_str()))
                .build()?)
        })
        .collect()
}

pub async fn create(sdk: &aws_config::SdkConfig, t: &Template, prefix: &str) -> anyhow::Result<Resources> {
    let mut res = Resources { prefix: prefix.to_owned(), parameters: t.parameters.clone(), ..Default::default() };
    let ddb = aws_sdk_dynamodb::Client::new(sdk);
    for table in &t.tables {
        let p = &table.properties;
        let name = format!("{prefix}-{}", table.logical_id);
        let attrs = p
            .get("AttributeDefinitions")
            .and_then(Value::as_array)
            .ok_or_else(|| anyhow!("{}: AttributeDefinitions", table.logical_id))?
            .iter()
            .map(|a| {
                Ok(AttributeDefinition::builder()
                    .attribute_name(s(a, "AttributeName")?)
                    .attribute_type(ScalarAttributeType::from(s(a, "AttributeType")?.as_str()))
                    .build()?)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut req = ddb
            .create_table()
            .table_name(&name)
            .billing_mode(BillingMode::PayPerRequest)
            .set_attribute_definitions(Some(attrs))
            .set_key_schema(Some(key_schema(p.get("KeySchema").unwrap_or(&Value::Null))?));
        for g in p.get("GlobalSecondaryIndexes").and_then(Value::as_array).into_iter().flatten() {
            let proj = g.get("Projection").cloned().unwrap_or_default();
            let mut pb = Projection::builder().projection_type(ProjectionType::from(
                proj.get("ProjectionType").and_then(Value::as_str).unwrap_or("ALL"),
            ));
            for a in proj.get("NonKeyAttributes").and_then(Value::as_array).into_iter().flatten() {
                if let Some(a) = a.as_str() {
                    pb = pb.non_key_attributes(a);
                }
            }
            req = req.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(s(g, "IndexName")?)
                    .set_key_schema(Some(key_schema(g.get("KeySchema").unwrap_or(&Value::Null))?))
                    .projection(pb.build())
                    .build()?,
            );
        }
        if let Some(view) = p.get("StreamSpecification").and_then(|v| v.get("StreamViewType")).and_then(Value::as_str) {
            req = req.stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(view))
                    .build()?,
            );
        }
        req.send().await.with_context(|| format!("CreateTable {name}"))?;
        if let Some(ttl) = p.get("TimeToLiveSpecification") {
            if ttl.get("Enabled").and_then(Value::as_bool) == Some(true) {
                ddb.update_time_to_live()
                    .table_name(&name)
                    .time_to_live_specification(
                        TimeToLiveSpecification::builder()
                            .attribute_name(s(ttl, "AttributeName")?)
                            .enabled(true)
                            .build()?,
                    )
                    .send()
                    .await
                    .with_context(|| format!("UpdateTimeToLive {name}"))?;
            }
        }
        res.tables.insert(table.logical_id.clone(), name);
    }

    let sqs = aws_sdk_sqs::Client::new(sdk);
    // DLQs first: a queue's redrive policy names its DLQ's ARN.
    let mut queues: Vec<_> = t.queues.iter().collect();
    queues.sort_by_key(|q| q.redrive.is_some());
    for q in queues {
        let name = format!("{prefix}-{}", q.logical_id);
        let mut req = sqs.create_queue().queue_name(&name);
        if let Some(v) = q.visibility_timeout {
            req = req.attributes(QueueAttributeName::VisibilityTimeout, v.to_string());
        }
        if let Some(v) = q.delay_seconds {
            req = req.attributes(QueueAttributeName::DelaySeconds, v.to_string());
        }
        if let Some(v) = q.retention {
            req = req.attributes(QueueAttributeName::MessageRetentionPeriod, v.to_string());
        }
        if let Some((dlq, max)) = &q.redrive {
            let arn = res.queue_arn(dlq)?;
            let policy = serde_json::json!({"deadLetterTargetArn": arn, "maxReceiveCount": max}).to_string();
            req = req.attributes(QueueAttributeName::RedrivePolicy, policy);
        }
        let url =
            req.send().await.with_context(|| format!("CreateQueue {name}"))?.queue_url().unwrap_or_default().to_owned();
        let attrs =
            sqs.get_queue_attributes().queue_url(&url).attribute_names(QueueAttributeName::QueueArn).send().await?;
        let arn = attrs
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .ok_or_else(|| anyhow!("no ARN for {name}"))?;
        res.queues.insert(q.logical_id.clone(), (url, arn));
    }

    let events = aws_sdk_eventbridge::Client::new(sdk);
    for b in &t.buses {
        let name = format!("{prefix}-{b}");
        events.create_event_bus().name(&name).send().await.with_context(|| format!("CreateEventBus {name}"))?;
        res.buses.insert(b.clone(), name);
    }
    for r in &t.rules {
        let name = format!("{prefix}-{}", r.logical_id);
        let bus = match &r.bus {
            Some(b) => res.buses.get(b).cloned().ok_or_else(|| anyhow!("{}: unknown bus {b}", r.logical_id))?,
            None => "default".to_owned(),
        };
        events
            .put_rule()
            .name(&name)
            .event_bus_name(&bus)
            .event_pattern(r.pattern.to_string())
            .send()
            .await
            .with_context(|| format!("PutRule {name}"))?;
        for (id, q) in &r.targets {
            let target = aws_sdk_eventbridge::types::Target::builder().id(id).arn(res.queue_arn(q)?).build()?;
            events.put_targets().rule(&name).event_bus_name(&bus).targets(target).send().await?;
        }
    }
    // The emulator's KMS does not evaluate key policies (docs/deploy.md, §7); it does bind the
    // encryption context into every data key it makes and checks it on Decrypt.
    let kms = aws_sdk_kms::Client::new(sdk);
    for k in &t.kms_keys {
        let out = kms
            .create_key()
            .description(format!("{prefix}-{k}"))
            .tags(aws_sdk_kms::types::Tag::builder().tag_key("holdfast:stack").tag_value(prefix).build()?)
            .send()
            .await
            .with_context(|| format!("CreateKey {k}"))?;
        let meta = out.key_metadata().ok_or_else(|| anyhow!("CreateKey {k}: no key metadata"))?;
        res.kms_keys.insert(k.clone(), (meta.key_id().to_owned(), meta.arn().unwrap_or_default().to_owned()));
    }
    Ok(res)
}
