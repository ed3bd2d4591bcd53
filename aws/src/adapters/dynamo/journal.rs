//! The journal table (docs/after-sale.md, "Stock journal"): `pk = J#<sku>`, `sk` = the entry key
//! (`<at_ms>.<stream sequence>`: time-ordered, the same for a redelivered record), and the
//! sparse `by-ref` index (`ref`, `sk`) for reads by cause id. Entries are small (~250 bytes):
//! one write unit each, plus one for the index entry of an entry that has a cause.

use super::item::{get_n, get_s, n, opt_s, s, values, Item};
use super::{charge, item_bytes, rru, wru};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{is_entry_key, Checkpoint, Entry};
use crate::domain::{CampaignId, Sku};
use crate::ports::Journal;
use anyhow::{anyhow, Context};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;

pub const CAUSE_INDEX: &str = "by-ref";

#[derive(Clone)]
pub struct DynamoJournal {
    client: Client,
    table: String,
}

fn journal_pk(sku: &Sku) -> String {
    format!("J#{sku}")
}

/// The reconcile check's checkpoint of a SKU: its own partition (never in an entry page).
fn checkpoint_pk(sku: &Sku) -> String {
    format!("JC#{sku}")
}

const CHECKPOINT_SK: &str = "checkpoint";

pub fn encode(e: &Entry) -> Item {
    let mut it = values([
        ("pk", s(journal_pk(&e.sku))),
        ("sk", s(e.seq.clone())),
        ("sku", s(e.sku.as_str())),
        ("sh", n(e.shard)),
        ("bav", n(e.before.available)),
        ("blk", n(e.before.locked)),
        ("bsd", n(e.before.sold)),
        ("aav", n(e.after.available)),
        ("alk", n(e.after.locked)),
        ("asd", n(e.after.sold)),
        ("q", n(e.quantity)),
        ("actor", s(e.actor.clone())),
        ("why", s(e.why.clone())),
        ("at", n(e.at_ms)),
    ]);
    if !e.cause.is_empty() {
        it.insert("ref".into(), s(e.cause.clone()));
    }
    if let Some(c) = &e.campaign {
        it.insert("cmp".into(), s(c.as_str()));
    }
    if let Some(r) = &e.reason {
        it.insert("rsn".into(), s(r.clone()));
    }
    it
}

pub fn decode(it: &Item) -> anyhow::Result<Entry> {
    let counts = |a: &str, l: &str, d: &str| -> anyhow::Result<ShardCounts> {
        Ok(ShardCounts { available: get_n(it, a)?, locked: get_n(it, l)?, sold: get_n(it, d)? })
    };
    Ok(Entry {
        sku: Sku::from_stored(get_s(it, "sku")?)?,
        shard: get_n(it, "sh")?,
        campaign: opt_s(it, "cmp").map(CampaignId::parse).transpose()?,
        before: counts("bav", "blk", "bsd")?,
        after: counts("aav", "alk", "asd")?,
        quantity: get_n(it, "q")?,
        cause: opt_s(it, "ref").unwrap_or_default().to_owned(),
        actor: get_s(it, "actor")?.to_owned(),
        why: get_s(it, "why")?.to_owned(),
        reason: opt_s(it, "rsn").map(str::to_owned),
        at_ms: get_n(it, "at")?,
        seq: get_s(it, "sk")?.to_owned(),
    })
}

impl DynamoJournal {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}

#[async_trait]
impl Journal for DynamoJournal {
    async fn put(&self, entries: &[Entry]) -> anyhow::Result<()> {
        for chunk in entries.chunks(25) {
            let mut reqs: Vec<WriteRequest> = Vec::new();
            let mut units = 0.0;
            for e in chunk {
                let it = encode(e);
                units += wru(item_bytes(&it)) + if e.cause.is_empty() { 0.0 } else { 1.0 };
                reqs.push(
                    WriteRequest::builder().put_request(PutRequest::builder().set_item(Some(it)).build()?).build(),
                );
            }
            charge(0.0, units);
            for e in chunk {
                let it = if e.cause.is_empty() {
                    "BatchWriteItem J (journal entry)"
                } else {
                    "BatchWriteItem J (journal entry + by-ref index)"
                };
                super::super::usage::write_detail(
                    it,
                    wru(item_bytes(&encode(e))) + if e.cause.is_empty() { 0.0 } else { 1.0 },
                );
            }
            let mut tries = 0u64;
            while !reqs.is_empty() {
                let r = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, reqs)
                    .send()
                    .await
                    .map_err(|e| super::sdk_error(e, "BatchWriteItem on the journal table".into()))?;
                reqs = r.unprocessed_items().and_then(|m| m.get(&self.table)).cloned().unwrap_or_default();
                tries += 1;
                if !reqs.is_empty() {
                    if tries > 8 {
                        return Err(anyhow!("BatchWriteItem kept returning unprocessed items"));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20 * tries)).await;
                }
            }
        }
        Ok(())
    }

    async fn for_sku(
        &self,
        sku: &Sku,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        let pk = journal_pk(sku);
        let start = match cursor {
            Some(c) if is_entry_key(c) => Some(values([("pk", s(pk.clone())), ("sk", s(c))])),
            Some(c) => return Err(anyhow!("not an entry key: {c}")),
            None => None,
        };
        let r = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .scan_index_forward(false)
            .limit(limit as i32)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| super::sdk_error(e, "Query on the journal table".into()))?;
        super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
        let entries = r.items().iter().map(decode).collect::<anyhow::Result<Vec<_>>>()?;
        let next = r
            .last_evaluated_key()
            .and_then(|k| k.get("sk"))
            .and_then(|v| v.as_s().ok())
            .cloned()
            .filter(|_| entries.len() == limit);
        Ok((entries, next))
    }

    async fn since(&self, sku: &Sku, after: Option<&str>, limit: usize) -> anyhow::Result<(Vec<Entry>, bool)> {
        let mut q = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_values(":pk", s(journal_pk(sku)))
            .scan_index_forward(true)
            .limit(limit.clamp(1, 1000) as i32);
        q = match after {
            Some(a) => {
                q.key_condition_expression("pk = :pk AND sk > :after").expression_attribute_values(":after", s(a))
            }
            None => q.key_condition_expression("pk = :pk"),
        };
        let r = q.send().await.map_err(|e| super::sdk_error(e, "Query on the journal table".into()))?;
        super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
        let entries = r.items().iter().map(decode).collect::<anyhow::Result<Vec<_>>>()?;
        let more = r.last_evaluated_key().is_some_and(|k| !k.is_empty());
        Ok((entries, more))
    }

    async fn checkpoint(&self, sku: &Sku) -> anyhow::Result<Option<Checkpoint>> {
        let r = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(values([("pk", s(checkpoint_pk(sku))), ("sk", s(CHECKPOINT_SK))])))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| super::sdk_error(e, "GetItem on the journal table".into()))?;
        let Some(it) = r.item() else {
            super::super::usage::capacity(1.0, 0.0);
            return Ok(None);
        };
        super::super::usage::capacity(rru(item_bytes(it), true), 0.0);
        let cp: Checkpoint = serde_json::from_str(get_s(it, "cp")?).context("journal checkpoint")?;
        Ok(Some(Checkpoint { version: get_n(it, "v")?, ..cp }))
    }

    async fn put_checkpoint(&self, sku: &Sku, cp: &Checkpoint, expected: Option<u64>) -> anyhow::Result<bool> {
        let it = values([
            ("pk", s(checkpoint_pk(sku))),
            ("sk", s(CHECKPOINT_SK)),
            ("v", n(cp.version)),
            ("cp", s(serde_json::to_string(cp)?)),
        ]);
        charge(0.0, wru(item_bytes(&it)));
        super::super::usage::write_detail("PutItem JC (journal checkpoint)", wru(item_bytes(&it)));
        let mut put = self.client.put_item().table_name(&self.table).set_item(Some(it));
        put = match expected {
            Some(v) => put.condition_expression("v = :v").expression_attribute_values(":v", n(v)),
            None => put.condition_expression("attribute_not_exists(pk)"),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(super::sdk_error(e, "PutItem on the journal table".into())),
        }
    }

    async fn for_cause(&self, reference: &str) -> anyhow::Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(CAUSE_INDEX)
            .key_condition_expression("#r = :r")
            .expression_attribute_names("#r", "ref")
            .expression_attribute_values(":r", AttributeValue::S(reference.to_owned()))
            .into_paginator()
            .send();
        // one metered request per page (the span is taken before the page's await)
        while let Some(page) = { pages.next().await } {
            let r = page.with_context(|| format!("Query {CAUSE_INDEX}"))?;
            super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
            for it in r.items() {
                out.push(decode(it)?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::journal::entry_key;

    #[test]
    fn an_entry_round_trips_and_is_one_write_unit_even_with_the_longest_ids() {
        let e = Entry {
            sku: Sku::parse(&"S".repeat(64)).unwrap(),
            shard: 63,
            campaign: Some(CampaignId::parse(&"c".repeat(64)).unwrap()),
            before: ShardCounts { available: 1_000_000, locked: 10, sold: 5 },
            after: ShardCounts { available: 999_990, locked: 20, sold: 5 },
            quantity: 10,
            cause: "o".repeat(64),
            actor: "u".repeat(128),
            why: "freeze".into(),
            reason: None,
            at_ms: 1_700_000_000_000,
            seq: entry_key(1_700_000_000_000, &"9".repeat(40)),
        };
        let it = encode(&e);
        assert_eq!(decode(&it).unwrap(), e);
        let bytes = item_bytes(&it);
        assert!(wru(bytes) == 1.0 && bytes < 700, "{bytes} bytes");
    }
}
