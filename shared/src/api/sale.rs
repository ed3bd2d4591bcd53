//! The sale room (docs/operations.md): the sales switch, the admin SKU view, campaign statistics
//! and the machinery page's numbers.

use super::fields;
use crate::clock;
use crate::domain::sale::{SalesMode, SalesSwitch};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// `PUT /admin/sales-switch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SalesSwitchRequest {
    #[serde(deserialize_with = "mode")]
    pub mode: SalesMode,
    /// Why, for whoever reads the switch next.
    #[serde(deserialize_with = "fields::reason")]
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub reason: String,
}

/// A mode by its name (a wrong type or an unknown name is a 422, as every other field's).
fn mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SalesMode, D::Error> {
    let s = String::deserialize(d)?;
    SalesMode::parse(&s).ok_or_else(|| serde::de::Error::custom("mode must be OPEN, READ_ONLY or CLOSED"))
}

/// The sales switch: `OPEN` sells; `CLOSED` refuses new checkouts and reservations (503
/// `sales_closed`); `READ_ONLY` also refuses every other write except cancels, payments,
/// refunds, pause/resume and the switch itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SalesSwitchView {
    pub mode: SalesMode,
    pub reason: String,
    /// When it was set (absent: never set).
    #[schema(format = DateTime)]
    pub since: Option<String>,
    /// The admin's token `sub` who set it.
    pub by: Option<String>,
}

impl From<&SalesSwitch> for SalesSwitchView {
    fn from(s: &SalesSwitch) -> Self {
        SalesSwitchView {
            mode: s.mode,
            reason: s.reason.clone(),
            since: (s.since_ms > 0).then(|| clock::rfc3339(s.since_ms)),
            by: s.by.clone(),
        }
    }
}

/// One stock shard's exact counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ShardView {
    pub shard: u16,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
}

/// `GET /admin/skus/{sku}`: the SKU view from strongly consistent reads, with every shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AdminSkuView {
    #[serde(flatten)]
    pub sku: super::stock::SkuView,
    /// Every shard item, including those above `shards` left from a reduction.
    pub shard_counts: Vec<ShardView>,
}

/// One campaign in `GET /admin/campaigns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignSummary {
    pub campaign_id: String,
    pub name: String,
    #[schema(format = DateTime)]
    pub starts_at: String,
    #[schema(format = DateTime)]
    pub ends_at: String,
    pub paused: bool,
    #[schema(schema_with = super::campaigns::campaign_status_schema)]
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignList {
    pub campaigns: Vec<CampaignSummary>,
}

/// One item's quota counters, read consistently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatsItem {
    pub sku: String,
    pub quota: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    /// A waved item's waves with their own counters and which is live (docs/campaigns.md, "Waves").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<Vec<super::campaigns::WaveView>>,
}

/// Checkouts ordered in one second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PerSecond {
    /// Epoch seconds.
    pub at: i64,
    pub n: i64,
}

/// Checkout latency over the last minute: each the upper bound of its histogram bucket (null:
/// no checkout in the last minute).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LatencyView {
    pub p50: Option<u64>,
    pub p99: Option<u64>,
}

/// `GET /admin/campaigns/{campaign_id}/stats`: at most a few seconds stale (each warm Lambda
/// flushes its counters every `HOLDFAST_LIVE_FLUSH_MS`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignStats {
    pub campaign_id: String,
    #[schema(format = DateTime)]
    pub at: String,
    pub items: Vec<StatsItem>,
    /// Refused checkouts by error code, since the campaign began.
    pub refusals: BTreeMap<String, i64>,
    /// The campaign's orders by status now.
    pub orders: BTreeMap<String, i64>,
    /// The last 60 seconds, oldest first.
    pub checkouts_per_second: Vec<PerSecond>,
    pub latency_ms: LatencyView,
}

impl CampaignStats {
    pub fn new(c: &crate::domain::campaign::Campaign, s: &crate::service::sale::Stats) -> Self {
        let now_s = s.at_ms.div_euclid(1000);
        let closed = c.gate(now_s).is_err();
        CampaignStats {
            campaign_id: c.id.as_str().to_owned(),
            at: clock::rfc3339(s.at_ms),
            items: s
                .items
                .iter()
                .zip(&c.items)
                .enumerate()
                .map(|(k, ((sku, quota, available, locked, sold), i))| StatsItem {
                    sku: sku.as_str().to_owned(),
                    quota: *quota,
                    available: *available,
                    locked: *locked,
                    sold: *sold,
                    waves: super::campaigns::WaveView::list(i, s.waves.get(k), closed, now_s),
                })
                .collect(),
            refusals: s.refusals.clone(),
            orders: s.orders.clone(),
            checkouts_per_second: s.per_second.iter().map(|(at, n)| PerSecond { at: *at, n: *n }).collect(),
            latency_ms: LatencyView { p50: s.p50_ms, p99: s.p99_ms },
        }
    }
}

/// One queue's approximate depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueView {
    pub name: String,
    pub visible: u64,
    pub in_flight: u64,
    pub delayed: u64,
    /// A dead-letter or failure queue: anything in it needs a person.
    pub dlq: bool,
}

/// The reconcile sweep's last report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReconcileView {
    /// When the last sweep was seeded (absent: none yet).
    #[schema(format = DateTime)]
    pub last_sweep_at: Option<String>,
    pub sweeps: i64,
    /// Invariant violations found, all sweeps together.
    pub violations: i64,
}

/// `GET /admin/machinery`: queue depths, dead letters and the reconcile sweep. The age of the
/// oldest message is a CloudWatch metric (its alarms are in template.yaml), not an SQS attribute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Machinery {
    pub queues: Vec<QueueView>,
    pub reconcile: ReconcileView,
}
