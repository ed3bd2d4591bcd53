//! The stock table over DynamoDB (docs/architecture.md, "Data model"). One partition key `pk`; item kinds:
//! `SKU#<sku>` metadata, `SKU#<sku>#<n>` shard counters, `RES#<id>` reservations (the lock
//! record of one order), `LIM#<sku>#<user>` per-user counters, `ADJ#<sku>#<id>` adjustments,
//! `PEND#<user>` pending-checkout counters, and the campaign items of [`super::campaigns`].
//! Sparse KEYS_ONLY indexes: `frozen-by-age` (bucketed; only FROZEN reservations) and `skus`
//! (SKUs under `skl = SKU`, campaigns under `skl = CMP`).

use super::item::{get_n, get_s, key, n, opt_n, opt_s, s, values, Item};
use super::retry::{Retries, RetryPolicy};
use super::{bucket_of, charge, item_bytes, rru, wru};
use crate::domain::codes::{CodeAppend, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{move_cause, Cause};
use crate::domain::kind::Stocking;
use crate::domain::plan::{self, Action, CounterMove, Op, RingStep, Target};
use crate::domain::reservation::{CodeFate, CodeRange, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{CampaignId, Currency, ReservationId, Sku, UserId};
use crate::ports::AdminStamp;
use crate::ports::{AdjustRejection, Adjustment, Counter, MoveRejection, SkuMeta};
use anyhow::{anyhow, Context};
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

mod campaigns;
mod catalogue;
mod codes;
mod locks;
mod queues;
mod shards;
mod waitlists;

use codec::*;
use keys::*;
use tx::*;

// the pieces the campaign adapter shares
pub(super) use keys::{quota_pk, shard_pk};
pub(super) use tx::{cancellation_codes, classify, put, update, update_stamped, versioned_put, Cancel, Role};

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
