//! The journal table (docs/after-sale.md, "Stock journal"): `pk = J#<sku>#<partition>` (the
//! entry's shard modulo `JOURNAL_PARTITIONS`, so a hot SKU's entries spread as its shards do),
//! `sk` = the entry key (`<at_ms>.<stream sequence>`: time-ordered, the same for a redelivered
//! record), and the sparse `by-ref` index (`ref`, `sk`) for reads by cause id. Entries are small
//! (~250 bytes): one write unit each, plus one for the index entry of an entry that has a cause.
//!
//! A read of a SKU queries each partition below its spread, and `J#<sku>`, where every entry was
//! written before the spread (so a table written before it reads on), in parallel, and merges
//! them by key.

use super::item::{get_n, get_s, n, opt_s, s, values, Item};
use super::{charge, item_bytes, rru, wru};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{is_entry_key, partition, Checkpoint, Entry, JOURNAL_PARTITIONS};
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

/// The partition an entry lives in.
fn journal_pk(sku: &Sku, shard: u16) -> String {
    format!("J#{sku}#{}", partition(shard))
}

/// The partitions a read of `spread` queries: the spread's, and the one every entry was written
/// to before the journal was spread (its entries of shards above the spread are dropped after).
fn read_pks(sku: &Sku, spread: u16) -> impl Iterator<Item = String> + '_ {
    (0..spread.clamp(1, JOURNAL_PARTITIONS)).map(move |p| format!("J#{sku}#{p}")).chain([format!("J#{sku}")])
}

/// The reconcile check's checkpoint of a SKU: its own partition (never in an entry page).
fn checkpoint_pk(sku: &Sku) -> String {
    format!("JC#{sku}")
}

const CHECKPOINT_SK: &str = "checkpoint";

pub fn encode(e: &Entry) -> Item {
    let mut it = values([
        ("pk", s(journal_pk(&e.sku, e.shard))),
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

/// Which entries of a partition a read wants, in the order it wants them.
#[derive(Clone, Copy)]
enum Range<'a> {
    /// Newest first, with a key before the cursor (`None`: from the newest).
    Before(Option<&'a str>),
    /// Oldest first, with a key after this one (`None`: from the oldest).
    After(Option<&'a str>),
}

/// Partitions queried at once by one read.
const READ_CONCURRENCY: usize = 16;

impl DynamoJournal {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    /// The first `limit` entries of the read over every partition below `spread` (and the
    /// unspread one), and the key to go on from (`None`: no more). Each partition gives its
    /// first `limit`, and the merge keeps only what lies before the **cut**: the key the
    /// partition with more that has read least far reached. A page may be short (entries of
    /// the unspread partition above the spread are dropped after they count against its limit),
    /// so the cut, not a count, says where the next page starts.
    async fn merged(
        &self,
        sku: &Sku,
        spread: u16,
        range: Range<'_>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        use futures::StreamExt;
        let pages: Vec<anyhow::Result<(Vec<Entry>, bool)>> =
            futures::stream::iter(read_pks(sku, spread).map(|pk| self.partition_page(pk, range, limit)))
                .buffer_unordered(READ_CONCURRENCY)
                .collect()
                .await;
        let newest_first = matches!(range, Range::Before(_));
        // `a` comes later in the read than `b`
        let later = |a: &str, b: &str| if newest_first { a < b } else { a > b };
        let (mut entries, mut cut) = (Vec::new(), None::<String>);
        for page in pages {
            let (page, more) = page?;
            if let (true, Some(last)) = (more, page.last()) {
                if cut.as_deref().is_none_or(|c| later(c, &last.seq)) {
                    cut = Some(last.seq.clone());
                }
            }
            entries.extend(page.into_iter().filter(|e| partition(e.shard) < spread.max(1)));
        }
        entries.sort_unstable_by(|a, b| if newest_first { b.seq.cmp(&a.seq) } else { a.seq.cmp(&b.seq) });
        if let Some(c) = &cut {
            entries.retain(|e| !later(&e.seq, c));
        }
        if entries.len() > limit {
            entries.truncate(limit);
            let next = entries.last().map(|e| e.seq.clone());
            return Ok((entries, next));
        }
        Ok((entries, cut))
    }

    /// One partition's first `limit` entries of `range`; `true` when it has more.
    async fn partition_page(&self, pk: String, range: Range<'_>, limit: usize) -> anyhow::Result<(Vec<Entry>, bool)> {
        let mut q = self
            .client
            .query()
            .table_name(&self.table)
            .expression_attribute_values(":pk", s(pk))
            .limit(limit.clamp(1, 1000) as i32);
        q = match range {
            Range::Before(Some(c)) => q
                .scan_index_forward(false)
                .key_condition_expression("pk = :pk AND sk < :c")
                .expression_attribute_values(":c", s(c)),
            Range::Before(None) => q.scan_index_forward(false).key_condition_expression("pk = :pk"),
            Range::After(Some(a)) => q
                .scan_index_forward(true)
                .key_condition_expression("pk = :pk AND sk > :c")
                .expression_attribute_values(":c", s(a)),
            Range::After(None) => q.scan_index_forward(true).key_condition_expression("pk = :pk"),
        };
        let r = q.send().await.map_err(|e| super::sdk_error(e, "Query on the journal table".into()))?;
        super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
        let entries = r.items().iter().map(decode).collect::<anyhow::Result<Vec<_>>>()?;
        Ok((entries, r.last_evaluated_key().is_some_and(|k| !k.is_empty())))
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
        spread: u16,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        if let Some(c) = cursor.filter(|c| !is_entry_key(c)) {
            return Err(anyhow!("not an entry key: {c}"));
        }
        self.merged(sku, spread, Range::Before(cursor), limit.max(1)).await
    }

    async fn since(
        &self,
        sku: &Sku,
        spread: u16,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Entry>, Option<String>)> {
        self.merged(sku, spread, Range::After(after), limit.clamp(1, 1000)).await
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
