//! The requests the store is built from: one transaction, batched and paged reads, and the
//! item lists of lock moves and code returns.

use super::*;
use crate::ports::CodePools;

impl DynamoStock {
    /// A replayed adjustment: what the first one moved.
    pub(super) async fn duplicate_adjustment(&self, adj: &Adjustment) -> anyhow::Result<AdjustRejection> {
        let it = self.batch_get(vec![adjustment_pk(adj)], true).await?;
        let delta = it.first().map(|i| get_n(i, "delta")).transpose()?.unwrap_or(0);
        Ok(AdjustRejection::Duplicate { delta })
    }
}

/// `TransactWriteItems` and the kinds of the items it writes, in order (`RES+SKU+PEND`).
fn transaction_label(items: &[TransactWriteItem]) -> String {
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| {
            let pk = i
                .put()
                .and_then(|p| p.item().get("pk"))
                .or_else(|| i.update().and_then(|u| u.key().get("pk")))
                .or_else(|| i.condition_check().and_then(|c| c.key().get("pk")))
                .or_else(|| i.delete().and_then(|d| d.key().get("pk")))
                .and_then(|v| v.as_s().ok());
            pk.map_or("?", |pk| crate::adapters::usage::kind_of(pk))
        })
        .collect();
    format!("TransactWriteItems {}", kinds.join("+"))
}

impl DynamoStock {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    /// Runs one transaction; `Ok(Err(codes))` when DynamoDB cancelled it. Billed (cancelled or
    /// not) at 2 write units per item-KB, plus `index_writes` GSI entries.
    pub(in crate::adapters::dynamo) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        index_writes: f64,
    ) -> anyhow::Result<Result<(), Option<Vec<String>>>> {
        let units: f64 = items.iter().map(|i| 2.0 * i.put().map(|p| wru(item_bytes(p.item()))).unwrap_or(1.0)).sum();
        charge(0.0, units + index_writes);
        crate::adapters::usage::write_detail(&transaction_label(&items), units + index_writes);
        let r = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        match r {
            Ok(_) => Ok(Ok(())),
            Err(e) => {
                if let Some(codes) = cancellation_codes(&e) {
                    // A cancellation caused only by throttled items (a hot shard past its
                    // partition's limit) is capacity, not a rejection: no condition failed.
                    if codes.iter().any(|c| c == "ThrottlingError")
                        && !codes.iter().any(|c| c == "ConditionalCheckFailed")
                    {
                        return Err(anyhow::Error::new(crate::ports::Throttled(
                            "TransactWriteItems on the stock table (hot shard)".into(),
                        )));
                    }
                    Ok(Err(Some(codes)))
                } else if is_conflict(&e) {
                    Ok(Err(None))
                } else {
                    Err(crate::adapters::dynamo::sdk_error(e, "TransactWriteItems on the stock table".into()))
                }
            }
        }
    }

    /// Counter triples of the given items, in order (a missing item counts as zero).
    pub(super) async fn read_counts(&self, pks: Vec<String>, consistent: bool) -> anyhow::Result<Vec<ShardCounts>> {
        let items = self.batch_get(pks.clone(), consistent).await?;
        let by_pk: HashMap<&str, &Item> = items.iter().filter_map(|it| Some((opt_s(it, "pk")?, it))).collect();
        pks.iter()
            .map(|pk| match by_pk.get(pk.as_str()) {
                Some(it) => {
                    Ok(ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? })
                }
                None => Ok(ShardCounts::default()),
            })
            .collect()
    }

    pub(in crate::adapters::dynamo) async fn batch_get(
        &self,
        pks: Vec<String>,
        consistent: bool,
    ) -> anyhow::Result<Vec<Item>> {
        let mut out = Vec::new();
        for chunk in pks.chunks(100) {
            let mut keys: Vec<Item> = chunk.iter().cloned().map(key).collect();
            let mut retries = Retries::new(RetryPolicy::BATCH_READS);
            while !keys.is_empty() {
                let ka = KeysAndAttributes::builder().set_keys(Some(keys)).consistent_read(consistent).build()?;
                let r = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, ka)
                    .send()
                    .await
                    .context("BatchGetItem on the stock table")?;
                // every requested key is billed, found or not
                let found: Vec<usize> =
                    r.responses().and_then(|m| m.get(&self.table)).into_iter().flatten().map(item_bytes).collect();
                let missing = chunk.len().saturating_sub(found.len());
                let read: f64 =
                    found.iter().map(|b| rru(*b, consistent)).sum::<f64>() + missing as f64 * rru(0, consistent);
                crate::adapters::usage::capacity(read, 0.0);
                if let Some(items) = r.responses().and_then(|m| m.get(&self.table)) {
                    out.extend(items.iter().cloned());
                }
                keys = r
                    .unprocessed_keys()
                    .and_then(|m| m.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
                if !keys.is_empty() {
                    retries.wait("BatchGetItem on the stock table").await?;
                }
            }
        }
        Ok(out)
    }

    pub(super) async fn query_keys(&self, index: &str, cond: &str, vals: Item) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .key_condition_expression(cond)
            .set_expression_attribute_values(Some(vals))
            .into_paginator()
            .send();
        // one metered request per page (the span is taken before the page's await)
        while let Some(page) = { pages.next().await } {
            let r = page.with_context(|| format!("Query {index}"))?;
            crate::adapters::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
            for it in r.items() {
                out.push(get_s(it, "pk")?.to_owned());
            }
        }
        Ok(out)
    }

    /// The reservation's status change `from` → `to`, then the counter writes of the move.
    pub(super) fn lock_move_items(
        &self,
        r: &Reservation,
        from: LockStatus,
        to: LockStatus,
        returns: &[CodeAppend],
    ) -> anyhow::Result<Vec<TransactWriteItem>> {
        let t = &self.table;
        let actions =
            plan::lock_move(r, from, to, returns).ok_or_else(|| anyhow!("no lock move {from:?} -> {to:?}"))?;
        // the lines are written back: a pay-time confirm may have re-planned its pieces
        // a lock marked oversold is decided: never retaken (service/stock.rs, `retake`)
        let status =
            if from == LockStatus::Released { "st = :from AND attribute_not_exists(ov)" } else { "st = :from" };
        // … and a copy read before a backorder fill never writes the old pieces back
        let (fill, mut vals) = fill_condition(r);
        vals.extend(values([
            (":to", s(to.as_str())),
            (":from", s(from.as_str())),
            (":ln", s(serde_json::to_string(&r.lines)?)),
        ]));
        let mut items = vec![update(
            t,
            res_pk(&r.id),
            "SET st = :to, ln = :ln REMOVE fzb, fza",
            Some(&format!("{status} AND {fill}")),
            vals,
        )?];
        for a in &actions {
            items.push(action_item(t, r, a, r.created_at_ms / 1000)?);
        }
        Ok(items)
    }

    /// Where a release puts each code line's codes back: the ring tail now (consistent) and
    /// the codes the line took. A tail that moves before the release commits fails its
    /// condition, and the release is retried from a fresh read.
    pub(super) async fn code_returns(&self, r: &Reservation) -> anyhow::Result<Vec<CodeAppend>> {
        let mut out = Vec::new();
        for l in r.lines.iter().filter(|l| l.holds_codes()) {
            let ranges = l.codes.as_deref().unwrap_or_default();
            out.extend(self.appends_for(&l.sku, ranges).await?);
        }
        Ok(out)
    }

    /// The codes at `ranges`, grouped by shard (in range order), each with its ring's tail now.
    pub(super) async fn appends_for(&self, sku: &Sku, ranges: &[CodeRange]) -> anyhow::Result<Vec<CodeAppend>> {
        let mut shards: Vec<u16> = ranges.iter().map(|g| g.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let rings = self.read_rings_of(sku, &shards).await?;
        let mut out = Vec::new();
        for (shard, ring) in shards.iter().zip(rings) {
            let slots: Vec<(u16, u64)> = ranges
                .iter()
                .filter(|g| g.shard == *shard)
                .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(|p| (g.shard, p)))
                .collect();
            let codes = self.read_codes(sku, &slots).await?.into_iter().flatten().collect();
            out.push(CodeAppend { cell: sku.clone(), shard: *shard, tail: ring.tail, codes });
        }
        Ok(out)
    }

    pub(super) async fn read_rings_of(&self, sku: &Sku, shards: &[u16]) -> anyhow::Result<Vec<Ring>> {
        let pks: Vec<String> = shards.iter().map(|i| shard_pk(sku, *i)).collect();
        let items = self.batch_get(pks.clone(), true).await?;
        let by_pk: HashMap<&str, &Item> = items.iter().filter_map(|it| Some((opt_s(it, "pk")?, it))).collect();
        Ok(pks.iter().map(|pk| by_pk.get(pk.as_str()).map(|it| decode_ring(it)).unwrap_or_default()).collect())
    }
}

/// The condition on a lock's fill version (`bfv`: units filled into it by backorder fills; absent
/// until the first), with its value.
pub(super) fn fill_condition(r: &Reservation) -> (&'static str, Item) {
    match crate::domain::backorder::fill_version(r) {
        0 => ("attribute_not_exists(bfv)", Item::new()),
        v => ("bfv = :bfv", values([(":bfv", n(v))])),
    }
}
