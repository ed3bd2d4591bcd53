//! [`Shards`] over DynamoDB: `SKU#<sku>#<n>` shard counters, rebalances and `ADJ#` adjustments.

use super::codec::*;
use super::keys::*;
use super::tx::*;
use super::{stamped, DynamoStock};
use crate::adapters::dynamo::item::{n, s, values};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::Cause;
use crate::domain::Sku;
use crate::ports::AdminStamp;
use crate::ports::{AdjustRejection, Adjustment, Shards, SkuMeta};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

#[async_trait]
impl Shards for DynamoStock {
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
        let by = (cause.actor != crate::domain::journal::SYSTEM)
            .then(|| AdminStamp::new(&cause.actor, "put", crate::clock::now_ms()));
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

    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..slots).map(|i| shard_pk(sku, i)).collect(), false).await
    }

    async fn read_many_shards_public(&self, cells: &[(Sku, u16)]) -> anyhow::Result<Vec<Vec<ShardCounts>>> {
        // one BatchGetItem per 100 keys for all of them
        let pks: Vec<String> = cells.iter().flat_map(|(sku, n)| (0..*n).map(|i| shard_pk(sku, i))).collect();
        let mut counts = self.read_counts(pks, false).await?.into_iter();
        Ok(cells.iter().map(|(_, n)| counts.by_ref().take(usize::from(*n)).collect()).collect())
    }
}
