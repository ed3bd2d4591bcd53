//! The changes the stock ports apply and their refusals: audited adjustments of shards and
//! campaign quotas, lock moves, and the counters a user's allowance is read from.
//! Plain data; the ports are `ports::{Shards, Locks, Campaigns, CodePools}`.

use super::{CampaignId, Sku, UserId};

/// One admin stock change, idempotent by `adjustment_id` (the audit trail of docs/architecture.md, "Data model").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adjustment {
    pub sku: Sku,
    pub adjustment_id: String,
    pub delta: i64,
    pub reason: String,
    /// The admin's JWT `sub` (stamped on the shards for the journal, kept on the record as `by`).
    pub actor: Option<String>,
    pub at_ms: i64,
    /// Per-shard changes summing to `delta`.
    pub pieces: Vec<(u16, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdjustRejection {
    /// This adjustment id was already applied; here is what it recorded.
    Duplicate { delta: i64 },
    /// A shard no longer had what the plan removes (re-read and retry).
    ShardShort,
    /// DynamoDB reported a transaction conflict (re-read and retry).
    Conflict,
    /// (Code upload) another batch stored one of these codes meanwhile: re-check and retry.
    CodeTaken,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveRejection {
    /// The lock's status is no longer the one the move started from.
    StatusChanged,
    /// (Retake only) the shards no longer hold the units.
    ShardShort,
    /// DynamoDB reported a transaction conflict: retry.
    Conflict,
}

/// A counter a user's allowance is read from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Units of a SKU the user holds (per-user limit).
    Limit(Sku, UserId),
    /// Units of a campaign item the user holds (campaign per-user limit).
    CampaignLimit(CampaignId, Sku, UserId),
    /// The user's pending checkouts.
    Pending(UserId),
}

/// One audited change of a campaign item's quota, idempotent by `adjustment_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignAdjustment {
    pub campaign_id: CampaignId,
    pub sku: Sku,
    pub adjustment_id: String,
    pub delta: i64,
    pub reason: String,
    pub actor: Option<String>,
    pub at_ms: i64,
    /// Per-shard changes summing to `delta`.
    pub pieces: Vec<(u16, i64)>,
}
