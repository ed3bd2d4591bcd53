//! Reads of the whole stock table for invariant checks at quiescence (tests, demo) and for the
//! daily ledger report (capped: docs/operations.md, "Daily ledger report"). A Scan: never on a
//! checkout path.

use super::*;
use crate::domain::invariants::{CampaignCounters, CampaignItemSnapshot, CodePools, SkuSnapshot};

pub struct StockDump {
    pub skus: Vec<SkuSnapshot>,
    pub reservations: Vec<Reservation>,
    pub user_counters: Vec<(Sku, UserId, i64)>,
    pub campaigns: CampaignCounters,
    pub codes: CodePools,
}

pub async fn dump(client: &Client, table: &str) -> anyhow::Result<StockDump> {
    Ok(dump_capped(client, table, usize::MAX).await?.0)
}

/// [`dump`], stopping after the page that reaches `max_items` items: (dump, items read,
/// whether the table was read to its end). The daily ledger report's read (`adapters::dynamo::audit`).
pub async fn dump_capped(client: &Client, table: &str, max_items: usize) -> anyhow::Result<(StockDump, usize, bool)> {
    let mut items = Vec::new();
    let mut start = None;
    let complete = loop {
        let _span = crate::adapters::usage::call("dynamodb:Scan");
        let r = client.scan().table_name(table).consistent_read(true).set_exclusive_start_key(start).send().await?;
        items.extend(r.items().iter().cloned());
        match r.last_evaluated_key() {
            Some(k) if !k.is_empty() && items.len() < max_items => start = Some(k.clone()),
            Some(k) if !k.is_empty() => break false,
            _ => break true,
        }
    };
    let read = items.len();
    let mut metas = Vec::new();
    let mut shards: HashMap<String, ShardCounts> = HashMap::new();
    let mut reservations = Vec::new();
    let mut user_counters = Vec::new();
    let mut campaigns = Vec::new();
    let mut campaign_counters = CampaignCounters::default();
    let mut codes = CodePools::default();
    let mut rings: HashMap<String, Ring> = HashMap::new();
    for it in &items {
        let pk = get_s(it, "pk")?;
        if let Some(rest) = pk.strip_prefix("CODE#") {
            // CODE#<sku>#<shard>#<pos>: a SKU has no '#'
            let parts: Vec<&str> = rest.split('#').collect();
            if let [sku, shard, pos] = parts[..] {
                let slot = (Sku::from_stored(sku)?, shard.parse()?, pos.parse()?);
                if it.contains_key("rdm") {
                    codes.redeemed.insert(slot.clone());
                }
                codes.slots.insert(slot, get_s(it, "fp")?.to_owned());
            }
            continue;
        }
        if pk.starts_with("SKU#") && it.contains_key("chd") {
            rings.insert(pk.to_owned(), decode_ring(it));
        }
        if pk.starts_with("CMP#") {
            campaigns.push(super::super::campaigns::decode_item(it)?);
        } else if pk.starts_with("CQ#") {
            shards.insert(
                pk.to_owned(),
                ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? },
            );
        } else if let Some(rest) = pk.strip_prefix("LIMC#") {
            let mut parts = rest.splitn(3, '#');
            if let (Some(c), Some(k), Some(u)) = (parts.next(), parts.next(), parts.next()) {
                let n = opt_n(it, "n").unwrap_or(0);
                campaign_counters.user_counters.push((CampaignId::parse(c)?, Sku::parse(k)?, UserId::parse(u)?, n));
            }
        } else if let Some(u) = pk.strip_prefix("PEND#") {
            campaign_counters.pending.push((UserId::parse(u)?, opt_n(it, "n").unwrap_or(0)));
        } else if pk.starts_with("RES#") {
            reservations.push(decode_reservation(it)?);
        } else if let Some(rest) = pk.strip_prefix("LIM#") {
            if let Some((sku, user)) = rest.split_once('#') {
                user_counters.push((Sku::parse(sku)?, UserId::parse(user)?, opt_n(it, "n").unwrap_or(0)));
            }
        } else if pk.starts_with("SKU#") && it.contains_key("av") {
            shards.insert(
                pk.to_owned(),
                ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? },
            );
        } else if pk.starts_with("SKU#") {
            metas.push(decode_meta(it)?);
        }
    }
    for m in metas.iter().filter(|m| Stocking::of(&m.model).holds_codes()) {
        codes.pools.push(m.sku.clone());
        for i in 0..m.slots {
            if let Some(g) = rings.get(&shard_pk(&m.sku, i)) {
                codes.rings.insert((m.sku.clone(), i), *g);
            }
        }
    }
    let skus = metas
        .into_iter()
        .map(|m| SkuSnapshot {
            shards: (0..m.slots).map(|i| shards.get(&shard_pk(&m.sku, i)).copied().unwrap_or_default()).collect(),
            sku: m.sku,
            stocked: m.stocked,
            per_user_limit: m.per_user_limit,
        })
        .collect();
    for c in campaigns {
        for i in &c.items {
            campaign_counters.items.push(CampaignItemSnapshot::of(&c.id, i, |n| {
                shards.get(&quota_pk(&c.id, &i.sku, n)).copied().unwrap_or_default()
            }));
        }
    }
    Ok((StockDump { skus, reservations, user_counters, campaigns: campaign_counters, codes }, read, complete))
}
