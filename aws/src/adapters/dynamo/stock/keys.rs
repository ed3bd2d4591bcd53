//! The stock table's keys: one partition key `pk` per item kind (see the module docs).

use super::*;

pub(super) fn meta_pk(sku: &Sku) -> String {
    format!("SKU#{sku}")
}
pub(in crate::adapters::dynamo) fn shard_pk(sku: &Sku, shard: u16) -> String {
    format!("SKU#{sku}#{shard}")
}
pub(super) fn res_pk(id: &ReservationId) -> String {
    format!("RES#{id}")
}
pub(super) fn limit_pk(sku: &Sku, user: &UserId) -> String {
    format!("LIM#{sku}#{user}")
}
pub(in crate::adapters::dynamo) fn quota_pk(id: &CampaignId, sku: &Sku, shard: u16) -> String {
    format!("CQ#{id}#{sku}#{shard}")
}
pub(super) fn campaign_limit_pk(id: &CampaignId, sku: &Sku, user: &UserId) -> String {
    format!("LIMC#{id}#{sku}#{user}")
}
pub(super) fn pending_pk(user: &UserId) -> String {
    format!("PEND#{user}")
}
/// One position of a code pool shard's ring (docs/code-pools.md): `fp`, `kid`, `sc` (sealed).
pub(super) fn code_pk(sku: &Sku, shard: u16, pos: u64) -> String {
    format!("CODE#{sku}#{shard}#{pos}")
}
/// A fingerprint the pool holds, with the batch that added it (`b`).
pub(super) fn fingerprint_pk(sku: &Sku, fp: &str) -> String {
    format!("CFP#{sku}#{fp}")
}
/// A finished batch upload (`r`: its result as JSON).
pub(super) fn batch_pk(sku: &Sku, batch_id: &str) -> String {
    format!("CBATCH#{sku}#{batch_id}")
}

/// The key of the item an action writes.
pub(super) fn target_pk(r: &Reservation, t: &Target) -> String {
    match t {
        Target::Reservation => res_pk(&r.id),
        Target::Shard { sku, shard } => shard_pk(sku, *shard),
        Target::Quota { campaign, sku, shard } => quota_pk(campaign, sku, *shard),
        Target::Limit { sku, user } => limit_pk(sku, user),
        Target::CampaignLimit { campaign, sku, user } => campaign_limit_pk(campaign, sku, user),
        Target::Pending { user } => pending_pk(user),
        Target::CodeSlot { sku, shard, pos } => code_pk(sku, *shard, *pos),
        Target::Admission { campaign, ticket } => admission_pk(campaign, *ticket),
        Target::Backlog { sku } => backlog_pk(sku),
        Target::SalesSwitch => crate::adapters::dynamo::sale::SWITCH_PK.to_owned(),
    }
}

/// A BACKORDER SKU's backlog: `bo`/`bf`/`bc` (units ordered short, filled, cancelled) and `q`
/// (the string set of orders still waiting; docs/inventory-models.md, "Backorders (oversell allowed)").
pub(in crate::adapters::dynamo) fn backlog_pk(sku: &Sku) -> String {
    format!("BLOG#{sku}")
}

/// A queue ticket's spent admission (docs/waiting-room.md).
pub(in crate::adapters::dynamo) fn admission_pk(c: &crate::domain::CampaignId, ticket: u64) -> String {
    format!("QU#{c}#{ticket}")
}

pub(in crate::adapters::dynamo) fn counter_pk(c: &Counter) -> String {
    match c {
        Counter::Limit(sku, user) => limit_pk(sku, user),
        Counter::CampaignLimit(id, sku, user) => campaign_limit_pk(id, sku, user),
        Counter::Pending(user) => pending_pk(user),
    }
}

pub(super) fn adjustment_pk(adj: &Adjustment) -> String {
    format!("ADJ#{}#{}", adj.sku, adj.adjustment_id)
}
