//! [`Locks`] over DynamoDB: `RES#<id>` reservations, their moves, the `frozen-by-age` index
//! and the `LIM#`/`PEND#` counters.

use super::codec::*;
use super::keys::*;
use super::tx::*;
use super::{DynamoStock, FROZEN_INDEX};
use crate::adapters::dynamo::charge;
use crate::adapters::dynamo::item::{key, n, opt_n, opt_s, s, values};
use crate::domain::plan::{self, Target};
use crate::domain::reservation::{LockStatus, Reservation};
use crate::domain::ReservationId;
use crate::ports::{Counter, FreezeLimits, FreezeRejection, Locks, MoveRejection};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

#[async_trait]
impl Locks for DynamoStock {
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
        super::super::get_consistent(&self.client, &self.table, res_pk(id))
            .await?
            .as_ref()
            .map(decode_reservation)
            .transpose()
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
        charge(0.0, 1.0);
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

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        let mut out = Vec::new();
        for b in 0..super::super::INDEX_BUCKETS {
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

    async fn fill_backorder(
        &self,
        before: &Reservation,
        after: &Reservation,
        actions: &[plan::Action],
    ) -> anyhow::Result<Result<(), MoveRejection>> {
        let t = &self.table;
        let (fill, mut vals) = super::requests::fill_condition(before);
        vals.extend(values([
            (":st", s(before.status.as_str())),
            (":ln", s(serde_json::to_string(&after.lines)?)),
            (":nv", n(crate::domain::backorder::fill_version(after))),
        ]));
        let mut items = vec![update(
            t,
            res_pk(&before.id),
            "SET ln = :ln, bfv = :nv",
            Some(&format!("st = :st AND {fill}")),
            vals,
        )?];
        for a in actions {
            items.push(action_item(t, before, a, crate::clock::now_s())?);
        }
        Ok(self.transact(items, 0.0).await?.map_err(move_rejection))
    }

    async fn read_backlog(&self, sku: &crate::domain::Sku) -> anyhow::Result<crate::domain::backorder::Backlog> {
        let it = super::super::get_consistent(&self.client, &self.table, backlog_pk(sku)).await?;
        it.as_ref().map_or_else(|| Ok(Default::default()), decode_backlog)
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        let items = self.batch_get(counters.iter().map(counter_pk).collect(), false).await?;
        let by_pk: HashMap<&str, i64> =
            items.iter().filter_map(|it| Some((opt_s(it, "pk")?, opt_n(it, "n").unwrap_or(0)))).collect();
        Ok(counters.iter().map(|c| (c.clone(), by_pk.get(counter_pk(c).as_str()).copied().unwrap_or(0))).collect())
    }
}

/// A `BLOG#<sku>` item: its counters and the ids of the orders still waiting, sorted.
pub(in crate::adapters::dynamo) fn decode_backlog(
    it: &HashMap<String, AttributeValue>,
) -> anyhow::Result<crate::domain::backorder::Backlog> {
    let mut open: Vec<ReservationId> = match it.get("q") {
        Some(AttributeValue::Ss(ids)) => ids.iter().map(|i| ReservationId::from_stored(i)).collect::<Result<_, _>>()?,
        _ => Vec::new(),
    };
    open.sort();
    Ok(crate::domain::backorder::Backlog {
        ordered: opt_n(it, "bo").unwrap_or(0),
        filled: opt_n(it, "bf").unwrap_or(0),
        cancelled: opt_n(it, "bc").unwrap_or(0),
        open,
    })
}
