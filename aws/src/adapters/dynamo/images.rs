//! Change images of the tables' items, as the stream functions read them: which items they are
//! and what they hold, decoded from the attribute layout this adapter writes. The handlers reach
//! these through the composition root ([`crate::app::table_images`]), never the layout itself.

use super::item::{get_n, opt_s, Item};
use super::orders::decode_record;
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{self, Cause, Counted, Image};
use crate::domain::order::{Order, OrderRecord};
use crate::domain::{CampaignId, Sku};
use aws_sdk_dynamodb::types::AttributeValue;

/// The order an order-table image holds (`None`: not an order item, or a VOID tombstone).
pub fn order_image(item: &Item) -> anyhow::Result<Option<Order>> {
    if !matches!(item.get("pk"), Some(AttributeValue::S(pk)) if pk.starts_with("ORD#")) {
        return Ok(None);
    }
    Ok(match decode_record(item)? {
        OrderRecord::Order(o) => Some(*o),
        OrderRecord::Void => None,
    })
}

/// Which counter a stock-table image is (`None`: not a product or quota shard counter).
pub fn counted_item(item: &Item) -> Option<Counted> {
    opt_s(item, "pk").and_then(parse_counted)
}

/// The counter a stock-table key names: `SKU#<sku>#<n>` (a product shard) or
/// `CQ#<campaign>#<sku>#<n>` (a quota shard); `None` for every other item.
fn parse_counted(pk: &str) -> Option<Counted> {
    if let Some(rest) = pk.strip_prefix("CQ#") {
        let (head, shard) = rest.rsplit_once('#')?;
        let (campaign, sku) = head.split_once('#')?;
        return Some(Counted::Quota {
            campaign: CampaignId::parse(campaign).ok()?,
            sku: Sku::parse(sku).ok()?,
            shard: shard.parse().ok()?,
        });
    }
    let rest = pk.strip_prefix("SKU#")?;
    let (sku, shard) = rest.rsplit_once('#')?;
    Some(Counted::Shard { sku: Sku::from_stored(sku).ok()?, shard: shard.parse().ok()? })
}

/// The counters of a stock-table counter image and the cause its last write stamped on it.
pub fn counter_image(it: &Item) -> anyhow::Result<Image> {
    let counts = ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? };
    let cause = match (opt_s(it, "ref"), opt_s(it, "why")) {
        (Some(r), Some(w)) => Some(Cause {
            reference: r.to_owned(),
            actor: opt_s(it, "actor").unwrap_or(journal::SYSTEM).to_owned(),
            why: w.to_owned(),
        }),
        _ => None,
    };
    Ok(Image { counts, cause })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_shards_and_quota_shards_parse_and_others_do_not() {
        assert_eq!(parse_counted("SKU#A-1#3"), Some(Counted::Shard { sku: Sku::parse("A-1").unwrap(), shard: 3 }));
        assert_eq!(
            parse_counted("CQ#c1#A-1#0"),
            Some(Counted::Quota {
                campaign: CampaignId::parse("c1").unwrap(),
                sku: Sku::parse("A-1").unwrap(),
                shard: 0
            })
        );
        assert_eq!(parse_counted("SKU#A-1"), None, "metadata has no counters");
        assert_eq!(parse_counted("RES#o1"), None);
        assert_eq!(parse_counted("ADJ#A-1#x"), None);
    }
}
