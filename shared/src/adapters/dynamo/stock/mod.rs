//! The stock table over DynamoDB (docs/architecture.md, "Data model"). One partition key `pk`; item kinds:
//! `SKU#<sku>` metadata, `SKU#<sku>#<n>` shard counters, `RES#<id>` reservations (the lock
//! record of one order), `LIM#<sku>#<user>` per-user counters, `ADJ#<sku>#<id>` adjustments,
//! `PEND#<user>` pending-checkout counters, and the campaign items of [`super::campaigns`].
//! Sparse KEYS_ONLY indexes: `frozen-by-age` (bucketed; only FROZEN reservations) and `skus`
//! (SKUs under `skl = SKU`, campaigns under `skl = CMP`).

use super::item::{get_n, get_s, key, n, opt_n, opt_s, s, values, Item};
use super::retry::{Retries, RetryPolicy};
use super::{bucket_of, charge, item_bytes, rru, wru};
use crate::domain::campaign::Campaign;
use crate::domain::codes::{BatchResult, CodeAppend, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{move_cause, Cause};
use crate::domain::kind::Stocking;
use crate::domain::plan::{self, Action, CounterMove, Op, RingStep, Target};
use crate::domain::reservation::{CodeFate, CodeRange, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{CampaignId, Currency, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, CampaignAdjustment, CodeUpload, Counter, FreezeLimits, FreezeRejection, MoveRejection,
    SkuMeta, StockStore,
};
use crate::ports::{AdminStamp, Stamped};
use anyhow::{anyhow, Context};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

pub const FROZEN_INDEX: &str = "frozen-by-age";
pub const SKU_INDEX: &str = "skus";

#[derive(Clone)]
pub struct DynamoStock {
    pub(super) client: Client,
    pub(super) table: String,
}

pub mod audit;
mod codec;
mod keys;
mod requests;
mod tx;

use codec::*;
use keys::*;
use tx::*;

// the pieces the campaign adapter shares
pub(super) use keys::{counter_pk, quota_pk, shard_pk};
pub(super) use tx::{
    cancellation_codes, cause_values, classify, put, update, update_stamped, versioned_put, Cancel, Role,
};

#[async_trait]
impl StockStore for DynamoStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), true).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.put_sku_stamped(meta, expected_version, None).await
    }

    async fn put_sku_as(&self, meta: &SkuMeta, expected_version: Option<u64>, by: &AdminStamp) -> anyhow::Result<bool> {
        self.put_sku_stamped(meta, expected_version, Some(by)).await
    }

    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..slots).map(|i| shard_pk(sku, i)).collect(), true).await
    }

    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &Cause,
    ) -> anyhow::Result<bool> {
        let t = &self.table;
        // an admin's shard-count change: the metadata records who (security review L7)
        let by = (cause.actor != crate::domain::journal::SYSTEM).then(|| AdminStamp::now(&cause.actor, "put"));
        let mut items = vec![versioned_put(t, stamped(encode_meta(meta)?, by.as_ref()), expected_version)?];
        for (i, &av) in new_available.iter().enumerate() {
            let pk = shard_pk(&meta.sku, i as u16);
            match old.get(i) {
                Some(o) if o.available == av => {}
                Some(o) => items.push(update_stamped(
                    t,
                    pk,
                    "SET av = :new",
                    Some("av = :old"),
                    values([(":new", n(av)), (":old", n(o.available))]),
                    cause,
                )?),
                None => {
                    // a shard added during a stop-sale is stopped too: the freeze condition reads `ps`
                    let mut shard = values([
                        ("pk", s(pk)),
                        ("av", n(av)),
                        ("lk", n(0)),
                        ("sd", n(0)),
                        ("ps", AttributeValue::Bool(meta.paused)),
                    ]);
                    shard.extend(cause_values(cause).map(|(k, v)| (k.to_owned(), v)));
                    items.push(put(t, shard, "attribute_not_exists(pk)")?)
                }
            }
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn adjust(&self, adj: &Adjustment, _meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        let (items, roles) = self.adjust_items(adj)?;
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Conflict | Cancel::Unexplained => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(adj).await.map(Err),
                Cancel::Failed(_) => Ok(Err(AdjustRejection::ShardShort)),
            },
        }
    }

    async fn adjust_pair(&self, out: &Adjustment, into: &Adjustment) -> anyhow::Result<Result<(), AdjustRejection>> {
        let (mut items, mut roles) = self.adjust_items(out)?;
        let (more, more_roles) = self.adjust_items(into)?;
        items.extend(more);
        roles.extend(more_roles);
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Conflict | Cancel::Unexplained => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(out).await.map(Err),
                Cancel::Failed(_) => Ok(Err(AdjustRejection::ShardShort)),
            },
        }
    }

    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        let t = &self.table;
        // The reservation goes first so a replay is the first reason reported.
        let actions = plan::freeze(r, limits);
        let mut items = vec![put(t, encode_reservation(r)?, "attribute_not_exists(pk)")?];
        let mut targets = vec![Target::Reservation];
        for a in &actions {
            items.push(action_item(t, r, a, r.created_at_ms / 1000)?);
            targets.push(a.target.clone());
        }
        // + the frozen-by-age index entry
        match self.transact(items, 1.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(FreezeRejection::Conflict)),
            Err(Some(codes)) if codes.iter().any(|c| c == "TransactionConflict") => Ok(Err(FreezeRejection::Conflict)),
            Err(Some(codes)) => {
                let failed: Vec<Target> = codes
                    .iter()
                    .zip(targets)
                    .filter(|(c, _)| c.as_str() == "ConditionalCheckFailed")
                    .map(|(_, t)| t)
                    .collect();
                Ok(Err(plan::freeze_rejection(&failed)))
            }
        }
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        super::get_consistent(&self.client, &self.table, res_pk(id)).await?.as_ref().map(decode_reservation).transpose()
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        let returns = if to == LockStatus::Released { self.code_returns(r).await? } else { Vec::new() };
        let items = self.lock_move_items(r, LockStatus::Frozen, to, &returns)?;
        // + removing the frozen-by-age index entry
        Ok(self.transact(items, 1.0).await?.map_err(move_rejection))
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        let items = self.lock_move_items(r, LockStatus::Released, LockStatus::Sold, &[])?;
        Ok(self.transact(items, 0.0).await?.map_err(move_rejection))
    }

    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        let items = self.lock_move_items(r, LockStatus::Sold, LockStatus::Restocked, &[])?;
        Ok(self.transact(items, 0.0).await?.map_err(move_rejection))
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(res_pk(&r.id))))
            .update_expression("SET ov = :t")
            .condition_expression("st = :released AND attribute_not_exists(ov)")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":released", s(LockStatus::Released.as_str()))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context("mark oversold")),
        }
    }

    async fn settle_codes(&self, id: &ReservationId, fate: CodeFate) -> anyhow::Result<Option<CodeFate>> {
        let cond = match fate {
            CodeFate::Revealed => "st = :sold AND (attribute_not_exists(cf) OR cf = :f)",
            CodeFate::Withdrawn => "attribute_exists(pk) AND st <> :released AND (attribute_not_exists(cf) OR cf = :f)",
        };
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(res_pk(id))))
            .update_expression("SET cf = :f")
            .condition_expression(cond)
            .set_expression_attribute_values(Some(
                [
                    (":f".to_owned(), s(fate.as_str())),
                    (
                        if fate == CodeFate::Revealed { ":sold" } else { ":released" }.to_owned(),
                        s(if fate == CodeFate::Revealed { LockStatus::Sold } else { LockStatus::Released }.as_str()),
                    ),
                ]
                .into(),
            ))
            .send()
            .await;
        match out {
            Ok(_) => Ok(Some(fate)),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                Ok(self.get_reservation(id).await?.and_then(|r| r.code_fate))
            }
            Err(e) => Err(anyhow::Error::new(e).context("settle codes")),
        }
    }

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        let mut out = Vec::new();
        for b in 0..super::INDEX_BUCKETS {
            let pks = self
                .query_keys(
                    FROZEN_INDEX,
                    "fzb = :b AND fza < :c",
                    values([(":b", s(format!("F#{b}"))), (":c", n(before_ms))]),
                )
                .await?;
            for pk in pks {
                if let Some(id) = pk.strip_prefix("RES#") {
                    out.push(ReservationId::from_stored(id)?);
                }
            }
        }
        Ok(out)
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        let items = self.batch_get(ids.iter().map(res_pk).collect(), true).await?;
        items.iter().map(decode_reservation).collect()
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("SKU"))])).await?;
        pks.iter().map(|pk| Sku::from_stored(pk.trim_start_matches("SKU#")).map_err(anyhow::Error::from)).collect()
    }

    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), false).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..slots).map(|i| shard_pk(sku, i)).collect(), false).await
    }

    async fn read_many_shards_public(&self, cells: &[(Sku, u16)]) -> anyhow::Result<Vec<Vec<ShardCounts>>> {
        // one BatchGetItem per 100 keys for all of them
        let pks: Vec<String> = cells.iter().flat_map(|(sku, n)| (0..*n).map(|i| shard_pk(sku, i))).collect();
        let mut counts = self.read_counts(pks, false).await?.into_iter();
        Ok(cells.iter().map(|(_, n)| counts.by_ref().take(usize::from(*n)).collect()).collect())
    }

    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        self.set_sku_paused_stamped(meta, expected_version, None).await
    }

    async fn set_sku_paused_as(&self, meta: &SkuMeta, expected_version: u64, by: &AdminStamp) -> anyhow::Result<bool> {
        self.set_sku_paused_stamped(meta, expected_version, Some(by)).await
    }

    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        self.campaign(id, consistent).await
    }

    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.put_campaign(c, expected_version, None).await
    }

    async fn write_campaign_as(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: &AdminStamp,
    ) -> anyhow::Result<bool> {
        self.put_campaign(c, expected_version, Some(by)).await
    }

    async fn admin_stamp(&self, of: Stamped<'_>) -> anyhow::Result<Option<AdminStamp>> {
        let pk = match of {
            Stamped::Sku(sku) => meta_pk(sku),
            Stamped::Campaign(id) => format!("CMP#{id}"),
        };
        Ok(self.batch_get(vec![pk], true).await?.first().and_then(read_stamp))
    }

    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..shards).map(|i| quota_pk(id, sku, i)).collect(), consistent).await
    }

    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.campaign_adjustment(adj, next, expected_version).await
    }

    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("CMP"))])).await?;
        pks.iter().map(|pk| CampaignId::parse(pk.trim_start_matches("CMP#")).map_err(anyhow::Error::from)).collect()
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        let items = self.batch_get(counters.iter().map(counter_pk).collect(), false).await?;
        let by_pk: HashMap<&str, i64> =
            items.iter().filter_map(|it| Some((opt_s(it, "pk")?, opt_n(it, "n").unwrap_or(0)))).collect();
        Ok(counters.iter().map(|c| (c.clone(), by_pk.get(counter_pk(c).as_str()).copied().unwrap_or(0))).collect())
    }

    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<Ring>> {
        self.read_rings_of(sku, &(0..slots).collect::<Vec<_>>()).await
    }

    async fn read_codes(&self, sku: &Sku, slots: &[(u16, u64)]) -> anyhow::Result<Vec<Option<StoredCode>>> {
        let pks: Vec<String> = slots.iter().map(|(shard, pos)| code_pk(sku, *shard, *pos)).collect();
        let items = self.batch_get(pks.clone(), true).await?;
        let mut by_pk: HashMap<String, StoredCode> = HashMap::new();
        for it in &items {
            by_pk.insert(get_s(it, "pk")?.to_owned(), decode_code(it)?);
        }
        Ok(pks.iter().map(|pk| by_pk.remove(pk)).collect())
    }

    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        // BatchGetItem, as read_codes: the reveal's role needs no other action for it
        let Some(slot) = self.batch_get(vec![code_pk(sku, shard, pos)], true).await?.pop() else { return Ok(false) };
        if slot.contains_key("ret") {
            return Ok(true);
        }
        let Some(holder) = opt_s(&slot, "o") else { return Ok(false) };
        let id = ReservationId::from_stored(holder).map_err(|e| anyhow!("code slot {shard}#{pos} of {sku}: {e}"))?;
        let lock = self.batch_get(vec![res_pk(&id)], true).await?.pop();
        Ok(match lock {
            Some(it) => decode_reservation(&it)?.status == LockStatus::Released,
            None => false,
        })
    }

    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>> {
        let mut pks: Vec<String> = fingerprints.iter().map(|f| fingerprint_pk(sku, f)).collect();
        pks.sort();
        pks.dedup();
        let items = self.batch_get(pks, true).await?;
        let prefix = fingerprint_pk(sku, "");
        items
            .iter()
            .map(|it| {
                let fp = get_s(it, "pk")?.strip_prefix(&prefix).unwrap_or_default().to_owned();
                Ok((fp, get_s(it, "b")?.to_owned()))
            })
            .collect()
    }

    async fn add_codes(&self, up: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        let t = &self.table;
        let adj = &up.adjustment;
        let (mut items, mut roles) = adjustment_items(t, adj)?;
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for a in &up.appends {
            let k = n(a.codes.len());
            items.push(update_stamped(
                t,
                shard_pk(&adj.sku, a.shard),
                "ADD av :k, ctl :k, cup :k",
                Some("ctl = :t"),
                values([(":k", k), (":t", n(a.tail))]),
                &cause,
            )?);
            roles.push(Role::Shard);
            for (i, c) in a.codes.iter().enumerate() {
                let slot = code_pk(&adj.sku, a.shard, a.tail + i as u64);
                items.push(put(t, encode_code(slot, c), "attribute_not_exists(pk)")?);
                roles.push(Role::Code);
                let fp = values([("pk", s(fingerprint_pk(&adj.sku, &c.fingerprint))), ("b", s(up.batch_id.clone()))]);
                items.push(put(t, fp, "attribute_not_exists(pk)")?);
                roles.push(Role::Code);
            }
        }
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Conflict | Cancel::Unexplained => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(adj).await.map(Err),
                Cancel::Failed(f) if f.iter().any(|r| matches!(r, Role::Code)) => Ok(Err(AdjustRejection::CodeTaken)),
                Cancel::Failed(_) => Ok(Err(AdjustRejection::Conflict)),
            },
        }
    }

    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(shard_pk(sku, shard))))
            .update_expression("SET chd = chd + :q, cht = :now")
            .condition_expression("chd <= :max")
            .expression_attribute_values(":q", n(quantity))
            .expression_attribute_values(":max", n(max_head))
            .expression_attribute_values(":now", n(crate::clock::now_ms()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await;
        match out {
            Ok(o) => {
                let head =
                    o.attributes().and_then(|a| opt_n::<u64>(a, "chd")).ok_or_else(|| anyhow!("no chd returned"))?;
                Ok(Some(head - u64::from(quantity)))
            }
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(None),
            Err(e) => Err(super::sdk_error(e, format!("UpdateItem (claim codes of {sku})"))),
        }
    }

    async fn give_back_codes(&self, sku: &Sku, ranges: &[CodeRange]) -> anyhow::Result<bool> {
        let t = &self.table;
        let appends = self.appends_for(sku, ranges).await?;
        let wanted: usize = ranges.iter().map(|g| g.count as usize).sum();
        if appends.iter().map(|a| a.codes.len()).sum::<usize>() != wanted {
            return Err(anyhow!("give back: a claimed position of {sku} holds no code"));
        }
        let mut items = Vec::new();
        for a in &appends {
            items.push(update(
                t,
                shard_pk(sku, a.shard),
                "ADD ctl :k",
                Some("ctl = :t"),
                values([(":k", n(a.codes.len())), (":t", n(a.tail))]),
            )?);
            for (i, c) in a.codes.iter().enumerate() {
                items.push(put(
                    t,
                    encode_code(code_pk(sku, a.shard, a.tail + i as u64), c),
                    "attribute_not_exists(pk)",
                )?);
            }
        }
        for g in ranges {
            for pos in g.from..g.from + u64::from(g.count) {
                items.push(update(
                    t,
                    code_pk(sku, g.shard, pos),
                    "SET ret = :y",
                    Some("attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret)"),
                    values([(":y", AttributeValue::Bool(true))]),
                )?);
            }
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        let items = self.batch_get((from..to).map(|p| code_pk(sku, shard, p)).collect(), true).await?;
        let prefix = format!("CODE#{sku}#{shard}#");
        let mut out: Vec<u64> = items
            .iter()
            .filter(|it| !it.contains_key("o") && !it.contains_key("ret"))
            .filter_map(|it| opt_s(it, "pk")?.strip_prefix(&prefix)?.parse().ok())
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(shard_pk(sku, shard))))
            .update_expression("SET cck = :to")
            .condition_expression(if from == 0 { "attribute_not_exists(cck) OR cck = :from" } else { "cck = :from" })
            .expression_attribute_values(":to", n(to))
            .expression_attribute_values(":from", n(from))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(super::sdk_error(e, format!("UpdateItem (checked mark of {sku})"))),
        }
    }

    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        let it = super::get_consistent(&self.client, &self.table, batch_pk(sku, batch_id)).await?;
        it.map(|it| serde_json::from_str(get_s(&it, "r")?).context("code batch record")).transpose()
    }

    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        let item = values([("pk", s(batch_pk(sku, batch_id))), ("r", s(serde_json::to_string(result)?))]);
        let _span = charge("dynamodb:PutItem", 0.0, 1.0);
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context("put code batch")),
        }
    }
}

/// Admin writes that record who asked (security review L7): the record's item carries the stamp
/// (`ub` the admin's sub, `ua` what, `ut` when) in the same request that writes it.
impl DynamoStock {
    async fn put_sku_stamped(
        &self,
        meta: &SkuMeta,
        expected_version: Option<u64>,
        by: Option<&AdminStamp>,
    ) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = vec![match expected_version {
            None => put(t, stamped(encode_meta(meta)?, by), "attribute_not_exists(pk)")?,
            Some(v) => versioned_put(t, stamped(encode_meta(meta)?, by), v)?,
        }];
        let existing = if expected_version.is_some() {
            self.batch_get((0..meta.slots).map(|i| shard_pk(&meta.sku, i)).collect(), true).await?.len() as u16
        } else {
            0
        };
        for i in existing..meta.slots {
            // a shard added during a stop-sale is stopped too: the freeze condition reads `ps`
            let mut shard = values([
                ("pk", s(shard_pk(&meta.sku, i))),
                ("av", n(0)),
                ("lk", n(0)),
                ("sd", n(0)),
                ("ps", AttributeValue::Bool(meta.paused)),
            ]);
            if Stocking::of(&meta.model).holds_codes() {
                shard.extend(values([("chd", n(0)), ("ctl", n(0)), ("cup", n(0))]));
            }
            items.push(put(t, shard, "attribute_not_exists(pk)")?);
        }
        Ok(self.transact(items, if expected_version.is_none() { 1.0 } else { 0.0 }).await?.is_ok())
    }

    async fn set_sku_paused_stamped(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        by: Option<&AdminStamp>,
    ) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = vec![versioned_put(t, stamped(encode_meta(meta)?, by), expected_version)?];
        for i in 0..meta.slots {
            items.push(update(
                t,
                shard_pk(&meta.sku, i),
                "SET ps = :p",
                Some("attribute_exists(pk)"),
                values([(":p", AttributeValue::Bool(meta.paused))]),
            )?);
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }
}

/// `it` with the admin stamp's attributes, if any.
pub(in crate::adapters::dynamo) fn stamped(mut it: Item, by: Option<&AdminStamp>) -> Item {
    if let Some(b) = by {
        it.insert("ub".into(), s(b.by.clone()));
        it.insert("ua".into(), s(b.action.clone()));
        it.insert("ut".into(), n(b.at_ms));
    }
    it
}

fn read_stamp(it: &Item) -> Option<AdminStamp> {
    Some(AdminStamp {
        by: opt_s(it, "ub")?.to_owned(),
        action: opt_s(it, "ua").unwrap_or_default().to_owned(),
        at_ms: opt_n(it, "ut").unwrap_or_default(),
    })
}

impl DynamoStock {
    /// One adjustment's transaction items: its record, the SKU's metadata and its shards.
    fn adjust_items(&self, adj: &Adjustment) -> anyhow::Result<(Vec<TransactWriteItem>, Vec<Role>)> {
        let t = &self.table;
        let (mut items, mut roles) = adjustment_items(t, adj)?;
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for &(shard, d) in &adj.pieces {
            let cond = (d < 0).then_some("av >= :m");
            let mut v = values([(":d", n(d))]);
            if d < 0 {
                v.insert(":m".into(), n(-d));
            }
            let cond = cond.or(Some("attribute_exists(pk)"));
            items.push(update_stamped(t, shard_pk(&adj.sku, shard), "ADD av :d", cond, v, &cause)?);
            roles.push(Role::Shard);
        }
        Ok((items, roles))
    }
}
