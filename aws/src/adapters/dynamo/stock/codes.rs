//! [`CodePools`] over DynamoDB: the code rings on the pool shards, uploads, claims, returns
//! and code fates (docs/code-pools.md).

use super::codec::*;
use super::keys::*;
use super::tx::*;
use super::DynamoStock;
use crate::adapters::dynamo::charge;
use crate::adapters::dynamo::item::{get_s, key, n, opt_n, opt_s, s, values};
use crate::domain::codes::{BatchResult, CodeRetire, Ring, StoredCode};
use crate::domain::journal::Cause;
use crate::domain::reservation::{CodeFate, CodeRange, LockStatus};
use crate::domain::{ReservationId, Sku};
use crate::ports::Locks;
use crate::ports::{AdjustRejection, CodePools, CodeUpload};
use anyhow::{anyhow, Context};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

#[async_trait]
impl CodePools for DynamoStock {
    async fn settle_codes(&self, id: &ReservationId, fate: CodeFate) -> anyhow::Result<Option<CodeFate>> {
        let (cond, vals) = fate_condition(fate);
        charge(0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(res_pk(id))))
            .update_expression("SET cf = :f")
            .condition_expression(cond)
            .set_expression_attribute_values(Some(vals))
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

    async fn redeem_code(&self, id: &ReservationId, sku: &Sku, slot: (u16, u64), at_ms: i64) -> anyhow::Result<bool> {
        let t = &self.table;
        let (cond, vals) = fate_condition(CodeFate::Redeemed);
        let items = vec![
            update(t, res_pk(id), "SET cf = :f", Some(cond), vals)?,
            update(
                t,
                code_pk(sku, slot.0, slot.1),
                "SET rdm = :at",
                Some("o = :o AND attribute_not_exists(rdm) AND (attribute_not_exists(xat) OR xat > :at)"),
                values([(":o", s(id.as_str())), (":at", n(at_ms))]),
            )?,
        ];
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn retire_codes(&self, up: &CodeRetire) -> anyhow::Result<Result<(), AdjustRejection>> {
        let t = &self.table;
        let adj = &up.adjustment;
        let (mut items, mut roles) = adjustment_items(t, adj)?;
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        let k = up.positions.len();
        items.push(update_stamped(
            t,
            shard_pk(&adj.sku, up.shard),
            "ADD av :d, cxp :k",
            // only claimed positions (before the head) leave this way: the ring no longer has them
            Some("av >= :k AND chd > :last"),
            values([
                (":d", n(-(k as i64))),
                (":k", n(k)),
                (":last", n(up.positions.iter().max().copied().unwrap_or(0))),
            ]),
            &cause,
        )?);
        roles.push(Role::Shard);
        for p in &up.positions {
            items.push(update(
                t,
                code_pk(&adj.sku, up.shard, *p),
                "SET xpd = :now",
                Some(
                    "attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret) \
                     AND attribute_not_exists(xpd) AND xat <= :now",
                ),
                values([(":now", n(up.now_ms))]),
            )?);
            roles.push(Role::Code);
        }
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(adj).await.map(Err),
                // as the memory store: a slot that may not be retired first, then the shard
                Cancel::Failed(f) if f.iter().any(|r| matches!(r, Role::Code)) => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if f.iter().any(|r| matches!(r, Role::Shard)) => Ok(Err(AdjustRejection::ShardShort)),
                _ => Ok(Err(AdjustRejection::Conflict)),
            },
        }
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
            // `cxe` present: this ring holds codes with an expire time (a claim then checks them);
            // an ADD, as the journal stamp brings the update's one SET
            let expiring = a.codes.iter().any(|c| c.expires_at_ms.is_some());
            items.push(update_stamped(
                t,
                shard_pk(&adj.sku, a.shard),
                if expiring { "ADD av :k, ctl :k, cup :k, cxe :k" } else { "ADD av :k, ctl :k, cup :k" },
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
        charge(0.0, 1.0);
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
            Err(e) => Err(super::super::sdk_error(e, format!("UpdateItem (claim codes of {sku})"))),
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
                    Some(
                        "attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret) \
                         AND attribute_not_exists(xpd)",
                    ),
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
            .filter(|it| !it.contains_key("o") && !it.contains_key("ret") && !it.contains_key("xpd"))
            .filter_map(|it| opt_s(it, "pk")?.strip_prefix(&prefix)?.parse().ok())
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        charge(0.0, 1.0);
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
            Err(e) => Err(super::super::sdk_error(e, format!("UpdateItem (checked mark of {sku})"))),
        }
    }

    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        let it = super::super::get_consistent(&self.client, &self.table, batch_pk(sku, batch_id)).await?;
        it.map(|it| serde_json::from_str(get_s(&it, "r")?).context("code batch record")).transpose()
    }

    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        let item = values([("pk", s(batch_pk(sku, batch_id))), ("r", s(serde_json::to_string(result)?))]);
        charge(0.0, 1.0);
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

/// The condition under which a lock's code fate may become `fate`, with its values: DynamoDB's
/// spelling of `domain::codes::lifecycle::fate_may_become` (the memory store calls that).
fn fate_condition(fate: CodeFate) -> (&'static str, HashMap<String, AttributeValue>) {
    let mut vals: HashMap<String, AttributeValue> = [(":f".to_owned(), s(fate.as_str()))].into();
    let sold = || (":sold".to_owned(), s(LockStatus::Sold.as_str()));
    let revealed = || (":revealed".to_owned(), s(CodeFate::Revealed.as_str()));
    let cond = match fate {
        CodeFate::Revealed => {
            vals.extend([sold()]);
            "st = :sold AND (attribute_not_exists(cf) OR cf = :f)"
        }
        CodeFate::Withdrawn => {
            vals.insert(":released".to_owned(), s(LockStatus::Released.as_str()));
            "attribute_exists(pk) AND st <> :released AND (attribute_not_exists(cf) OR cf = :f)"
        }
        CodeFate::Voided => {
            vals.extend([revealed()]);
            "cf IN (:revealed, :f)"
        }
        CodeFate::Redeemed => {
            vals.extend([sold(), revealed()]);
            "st = :sold AND cf IN (:revealed, :f)"
        }
    };
    (cond, vals)
}
