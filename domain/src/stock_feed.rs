//! The stock change feed (docs/operations.md, "Stock change feed"): what a stream batch of the
//! stock table did to each SKU's available units, as `StockChanged` events for downstream
//! caches (search, storefronts). Pure: built from the batch's journal entries.

use super::journal::Entry;
use super::Sku;
use serde::Serialize;
use std::collections::BTreeMap;

/// One shard's available units before and after the batch's first and last write of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardChange {
    pub shard: u16,
    pub before: i64,
    pub after: i64,
}

/// A `StockChanged` event's detail: one SKU (a product SKU or a date's cell; never a campaign
/// quota) and one cause in one stream batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StockChanged {
    pub sku: String,
    /// The move that changed it: `sell`, `release`, `restock`, `adjustment`, `freeze`, `fence`, …
    /// (the journal's move name).
    pub cause: String,
    /// Net change of the SKU's available units in this batch for this cause.
    pub available_delta: i64,
    /// The shards it touched, with their available units before and after.
    pub shards: Vec<ShardChange>,
    /// The batch's last write of it (epoch ms).
    pub at_ms: i64,
}

/// The events of one batch: entries of product shards whose available units moved, grouped by
/// SKU and cause, in SKU order (a quota shard's moves are the campaign's, not the SKU's stock).
pub fn stock_changes(entries: &[Entry]) -> Vec<StockChanged> {
    let mut by: BTreeMap<(Sku, String), StockChanged> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.campaign.is_none() && e.before.available != e.after.available) {
        let cause = if e.why.starts_with("adjust") { "adjustment".to_owned() } else { e.why.clone() };
        let c = by.entry((e.sku.clone(), cause.clone())).or_insert_with(|| StockChanged {
            sku: e.sku.to_string(),
            cause,
            available_delta: 0,
            shards: Vec::new(),
            at_ms: e.at_ms,
        });
        c.available_delta += e.after.available - e.before.available;
        c.at_ms = c.at_ms.max(e.at_ms);
        match c.shards.iter_mut().find(|s| s.shard == e.shard) {
            Some(s) => s.after = e.after.available,
            None => c.shards.push(ShardChange { shard: e.shard, before: e.before.available, after: e.after.available }),
        }
    }
    by.into_values().collect()
}

/// The plain SKUs (no date cell, no ring-fence cell, no campaign quota) whose available units
/// rose in the batch, net: the ones whose waitlists may be told (docs/waitlist.md).
pub fn risen(entries: &[Entry]) -> Vec<Sku> {
    let mut out: Vec<Sku> = Vec::new();
    for c in stock_changes(entries).into_iter().filter(|c| c.available_delta > 0) {
        if let Ok(s) = Sku::parse(&c.sku) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::ShardCounts;

    fn e(sku: &str, shard: u16, before: i64, after: i64, why: &str, at: i64) -> Entry {
        Entry {
            sku: Sku::parse(sku).unwrap(),
            shard,
            campaign: None,
            before: ShardCounts { available: before, locked: 0, sold: 0 },
            after: ShardCounts { available: after, locked: 0, sold: 0 },
            quantity: (after - before).abs(),
            cause: "o1".into(),
            actor: String::new(),
            why: why.into(),
            reason: None,
            at_ms: at,
            seq: format!("{at}"),
        }
    }

    #[test]
    fn a_batch_becomes_one_event_per_sku_and_cause_with_its_net_change_and_shards() {
        let mut quota = e("A", 0, 5, 4, "freeze", 1);
        quota.campaign = Some(crate::CampaignId::parse("c").unwrap());
        let batch = [
            e("A", 0, 10, 9, "freeze", 1),
            e("A", 0, 9, 8, "freeze", 2),
            e("A", 1, 4, 3, "freeze", 3),
            e("A", 0, 8, 9, "release", 4),
            e("B", 0, 0, 5, "adjust", 5),
            quota,
            // locked → sold moves no available unit: not an event
            Entry { after: ShardCounts { available: 7, locked: 0, sold: 1 }, ..e("C", 0, 7, 7, "sell", 6) },
        ];
        let out = stock_changes(&batch);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!((out[0].sku.as_str(), out[0].cause.as_str(), out[0].available_delta), ("A", "freeze", -3));
        assert_eq!(
            out[0].shards,
            [ShardChange { shard: 0, before: 10, after: 8 }, ShardChange { shard: 1, before: 4, after: 3 }]
        );
        assert_eq!((out[1].cause.as_str(), out[1].available_delta, out[1].at_ms), ("release", 1, 4));
        assert_eq!((out[2].sku.as_str(), out[2].cause.as_str(), out[2].available_delta), ("B", "adjustment", 5));
    }

    #[test]
    fn only_skus_whose_free_units_rose_may_tell_their_waitlists() {
        let mut quota = e("Q", 0, 0, 1, "release", 1);
        quota.campaign = Some(crate::CampaignId::parse("c").unwrap());
        let batch = [e("A", 0, 0, 2, "release", 1), e("B", 0, 3, 2, "freeze", 2), e("A", 1, 0, 1, "restock", 3), quota];
        assert_eq!(risen(&batch), vec![Sku::parse("A").unwrap()]);
    }
}
