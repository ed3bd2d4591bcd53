//! Campaign items of the stock table: `CMP#<id>` metadata (listed in the `skus` index under
//! `skl = CMP`), `CQ#<id>#<sku>#<n>` quota shards carrying a copy of the window (`sa`, `ea`) and
//! the pause flag (`ps`) for the freeze condition, `CADJ#<id>#<adjustment>` quota adjustments.

use super::item::{get_n, get_s, n, s, values, Item};
use super::stock::{
    classify, put, quota_pk, stamped, update, update_stamped, versioned_put, Cancel, DynamoStock, Role,
};
use crate::domain::campaign::{Campaign, CampaignItem};
use crate::domain::journal::Cause;
use crate::domain::CampaignId;
use crate::ports::{AdjustRejection, AdminStamp, CampaignAdjustment};
use anyhow::Context;
use aws_sdk_dynamodb::types::AttributeValue;

fn campaign_pk(id: &CampaignId) -> String {
    format!("CMP#{id}")
}

fn encode(c: &Campaign) -> anyhow::Result<Item> {
    let mut it = values([
        ("pk", s(campaign_pk(&c.id))),
        ("cid", s(c.id.as_str())),
        // the `skus` index (skl, sku) lists campaigns under CMP
        ("skl", s("CMP")),
        ("sku", s(c.id.as_str())),
        ("name", s(c.name.clone())),
        ("sa", n(c.starts_at)),
        ("ea", n(c.ends_at)),
        ("ps", AttributeValue::Bool(c.paused)),
        ("items", s(serde_json::to_string(&c.items)?)),
        ("v", n(c.version)),
        ("eg", n(c.end_grace_s)),
    ]);
    if let Some(q) = &c.queue {
        it.insert("qs".into(), s(serde_json::to_string(q)?));
    }
    Ok(it)
}

/// Decodes a `CMP#` item (also used by the audit dump).
pub fn decode_item(it: &Item) -> anyhow::Result<Campaign> {
    decode(it)
}

fn decode(it: &Item) -> anyhow::Result<Campaign> {
    Ok(Campaign {
        id: CampaignId::parse(get_s(it, "cid")?)?,
        name: get_s(it, "name")?.to_owned(),
        starts_at: get_n(it, "sa")?,
        ends_at: get_n(it, "ea")?,
        paused: matches!(it.get("ps"), Some(AttributeValue::Bool(true))),
        items: serde_json::from_str::<Vec<CampaignItem>>(get_s(it, "items")?).context("campaign items")?,
        version: get_n(it, "v")?,
        end_grace_s: super::item::opt_n(it, "eg").unwrap_or(0),
        queue: super::item::opt_s(it, "qs").map(serde_json::from_str).transpose().context("campaign queue")?,
    })
}

impl DynamoStock {
    pub(super) async fn campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        let items = self.batch_get(vec![campaign_pk(id)], consistent).await?;
        items.first().map(decode).transpose()
    }

    pub(super) async fn put_campaign(
        &self,
        c: &Campaign,
        expected_version: Option<u64>,
        by: Option<&AdminStamp>,
    ) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = Vec::new();
        match expected_version {
            None => {
                items.push(put(t, stamped(encode(c)?, by), "attribute_not_exists(pk)")?);
                for item in &c.items {
                    // each wave's shards carry the wave's window (docs/campaigns.md, "Waves")
                    for (i, (sa, ea, av)) in item.shard_layout((c.starts_at, c.ends_at)).into_iter().enumerate() {
                        let shard = values([
                            ("pk", s(quota_pk(&c.id, &item.sku, i as u16))),
                            ("av", n(av)),
                            ("lk", n(0)),
                            ("sd", n(0)),
                            ("sa", n(sa)),
                            ("ea", n(ea)),
                            ("ps", AttributeValue::Bool(c.paused)),
                        ]);
                        items.push(put(t, shard, "attribute_not_exists(pk)")?);
                    }
                }
            }
            Some(v) => {
                items.push(versioned_put(t, stamped(encode(c)?, by), v)?);
                for item in &c.items {
                    for (i, (sa, ea, _)) in item.shard_layout((c.starts_at, c.ends_at)).into_iter().enumerate() {
                        items.push(update(
                            t,
                            quota_pk(&c.id, &item.sku, i as u16),
                            "SET sa = :sa, ea = :ea, ps = :ps",
                            Some("attribute_exists(pk)"),
                            values([(":sa", n(sa)), (":ea", n(ea)), (":ps", AttributeValue::Bool(c.paused))]),
                        )?);
                    }
                }
            }
        }
        // + the `skus` index entry of a new campaign
        Ok(self.transact(items, if expected_version.is_none() { 1.0 } else { 0.0 }).await?.is_ok())
    }

    pub(super) async fn campaign_adjustment(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        let t = &self.table;
        let adj_pk = format!("CADJ#{}#{}", adj.campaign_id, adj.adjustment_id);
        let mut rec = values([
            ("pk", s(adj_pk.clone())),
            ("sku", s(adj.sku.as_str())),
            ("delta", n(adj.delta)),
            ("reason", s(adj.reason.clone())),
            ("at", n(adj.at_ms)),
        ]);
        if let Some(a) = &adj.actor {
            rec.insert("by".into(), s(a.clone()));
        }
        // the campaign record keeps who adjusted it last (security review L7)
        let by = adj.actor.as_deref().map(|a| AdminStamp::new(a, "adjust", crate::clock::now_ms()));
        let mut items = vec![
            put(t, rec, "attribute_not_exists(pk)")?,
            versioned_put(t, stamped(encode(next)?, by.as_ref()), expected_version)?,
        ];
        let mut roles = vec![Role::Adjustment, Role::Meta];
        for &(shard, d) in &adj.pieces {
            let mut v = values([(":d", n(d))]);
            let cond = if d < 0 {
                v.insert(":m".into(), n(-d));
                "av >= :m"
            } else {
                "attribute_exists(pk)"
            };
            let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
            items.push(update_stamped(
                t,
                quota_pk(&adj.campaign_id, &adj.sku, shard),
                "ADD av :d",
                Some(cond),
                v,
                &cause,
            )?);
            roles.push(Role::Shard);
        }
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => {
                    let it = self.batch_get(vec![adj_pk], true).await?;
                    let delta = it.first().map(|i| get_n(i, "delta")).transpose()?.unwrap_or(0);
                    Ok(Err(AdjustRejection::Duplicate { delta }))
                }
                Cancel::Failed(f) if f.iter().any(|r| matches!(r, Role::Shard)) => Ok(Err(AdjustRejection::ShardShort)),
                _ => Ok(Err(AdjustRejection::Conflict)),
            },
        }
    }
}
