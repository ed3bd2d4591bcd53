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
    pub backlogs: Vec<(Sku, crate::domain::backorder::Backlog)>,
}

pub async fn dump(client: &Client, table: &str) -> anyhow::Result<StockDump> {
    Ok(dump_capped(client, table, usize::MAX).await?.0)
}

/// [`dump`], stopping after the page that reaches `max_items` items: (dump, items read,
/// whether the table was read to its end). The daily ledger report's read (`adapters::dynamo::audit`).
pub async fn dump_capped(client: &Client, table: &str, max_items: usize) -> anyhow::Result<(StockDump, usize, bool)> {
    let (items, complete) = scan_capped(client, table, max_items).await?;
    let mut sorted = Sorted::default();
    for it in &items {
        sorted.add(it)?;
    }
    Ok((sorted.into_dump(), items.len(), complete))
}

/// Every item of the table, a page at a time, stopping after the page that reaches `max_items`;
/// `true` when the scan reached the table's end.
async fn scan_capped(client: &Client, table: &str, max_items: usize) -> anyhow::Result<(Vec<Item>, bool)> {
    let mut items = Vec::new();
    let mut start = None;
    let complete = loop {
        let r = client.scan().table_name(table).consistent_read(true).set_exclusive_start_key(start).send().await?;
        items.extend(r.items().iter().cloned());
        match r.last_evaluated_key() {
            Some(k) if !k.is_empty() && items.len() < max_items => start = Some(k.clone()),
            Some(k) if !k.is_empty() => break false,
            _ => break true,
        }
    };
    Ok((items, complete))
}

/// The scanned items sorted by what their key says they are.
#[derive(Default)]
struct Sorted {
    metas: Vec<SkuMeta>,
    shards: HashMap<String, ShardCounts>,
    reservations: Vec<Reservation>,
    user_counters: Vec<(Sku, UserId, i64)>,
    campaigns: Vec<crate::domain::campaign::Campaign>,
    campaign_counters: CampaignCounters,
    codes: CodePools,
    rings: HashMap<String, Ring>,
    backlogs: Vec<(Sku, crate::domain::backorder::Backlog)>,
}

impl Sorted {
    /// Files one item by its partition key.
    fn add(&mut self, it: &Item) -> anyhow::Result<()> {
        let pk = get_s(it, "pk")?;
        if let Some(rest) = pk.strip_prefix("CODE#") {
            return self.add_code(it, rest);
        }
        if pk.starts_with("SKU#") && it.contains_key("chd") {
            self.rings.insert(pk.to_owned(), decode_ring(it));
        }
        let counts = |it: &Item| -> anyhow::Result<ShardCounts> {
            Ok(ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? })
        };
        if let Some(sku) = pk.strip_prefix("BLOG#") {
            self.backlogs.push((Sku::from_stored(sku)?, super::locks::decode_backlog(it)?));
        } else if pk.starts_with("CMP#") {
            self.campaigns.push(super::super::campaigns::decode_item(it)?);
        } else if pk.starts_with("CQ#") {
            self.shards.insert(pk.to_owned(), counts(it)?);
        } else if let Some(rest) = pk.strip_prefix("LIMC#") {
            let mut parts = rest.splitn(3, '#');
            if let (Some(c), Some(k), Some(u)) = (parts.next(), parts.next(), parts.next()) {
                let n = opt_n(it, "n").unwrap_or(0);
                let counter = (CampaignId::parse(c)?, Sku::parse(k)?, UserId::parse(u)?, n);
                self.campaign_counters.user_counters.push(counter);
            }
        } else if let Some(u) = pk.strip_prefix("PEND#") {
            self.campaign_counters.pending.push((UserId::parse(u)?, opt_n(it, "n").unwrap_or(0)));
        } else if pk.starts_with("RES#") {
            self.reservations.push(decode_reservation(it)?);
        } else if let Some(rest) = pk.strip_prefix("LIM#") {
            if let Some((sku, user)) = rest.split_once('#') {
                self.user_counters.push((Sku::parse(sku)?, UserId::parse(user)?, opt_n(it, "n").unwrap_or(0)));
            }
        } else if pk.starts_with("SKU#") && it.contains_key("av") {
            self.shards.insert(pk.to_owned(), counts(it)?);
        } else if pk.starts_with("SKU#") {
            self.metas.push(decode_meta(it)?);
        }
        Ok(())
    }

    /// A code slot: `CODE#<sku>#<shard>#<pos>` (a SKU has no '#').
    fn add_code(&mut self, it: &Item, rest: &str) -> anyhow::Result<()> {
        let parts: Vec<&str> = rest.split('#').collect();
        if let [sku, shard, pos] = parts[..] {
            let slot = (Sku::from_stored(sku)?, shard.parse()?, pos.parse()?);
            if it.contains_key("rdm") {
                self.codes.redeemed.insert(slot.clone());
            }
            self.codes.slots.insert(slot, get_s(it, "fp")?.to_owned());
        }
        Ok(())
    }

    /// The snapshot: each SKU with its shards, the code pools with their rings, each campaign
    /// item with its quota shards.
    fn into_dump(self) -> StockDump {
        let Sorted {
            metas,
            shards,
            reservations,
            user_counters,
            campaigns,
            mut campaign_counters,
            mut codes,
            rings,
            backlogs,
        } = self;
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
        StockDump { skus, reservations, user_counters, campaigns: campaign_counters, codes, backlogs }
    }
}
