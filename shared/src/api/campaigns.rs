//! Campaigns and sale controls: `PUT /admin/campaigns/{campaign_id}`,
//! `POST /admin/campaigns/{campaign_id}/adjustments|pause|resume`, `GET /campaigns/{campaign_id}`,
//! `POST /admin/skus/{sku}/pause|resume`, `GET /skus/{sku}/availability[/me]`.

use super::body::Object;
use super::fields;
use crate::clock;
use crate::domain::campaign::{CampaignItem, CampaignSpec, CampaignStatus, Unsold, Wave, Waves, MAX_QUOTA};
use crate::domain::Sku;
use crate::service::campaigns::CampaignView;
use serde::de::Error;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// An RFC 3339 date-time, as epoch seconds.
fn time<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let s = String::deserialize(d)?;
    clock::parse_rfc3339(&s)
        .map(|ms| ms.div_euclid(1000))
        .ok_or_else(|| D::Error::custom("must be an RFC 3339 date-time"))
}

fn opt_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(p) if p <= crate::domain::money::MAX_PRICE => Ok(Some(p)),
        Some(_) => Err(D::Error::custom(crate::domain::money::MoneyError::BadPrice)),
    }
}

fn quota<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    match i64::deserialize(d)? {
        q if (0..=MAX_QUOTA).contains(&q) => Ok(q),
        _ => Err(D::Error::custom(format!("quota must be within 0..={MAX_QUOTA}"))),
    }
}

fn opt_quota<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    quota(d).map(Some)
}

fn items<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<CampaignItem>, D::Error> {
    Vec::<Object<CampaignItemRequest>>::deserialize(d)?
        .into_iter()
        .map(|Object(i)| CampaignItem::try_from(i).map_err(D::Error::custom))
        .collect()
}

/// One wave of a campaign item (docs/campaigns.md, "Waves"): its own window inside the
/// campaign's and its own quota.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WaveRequest {
    #[serde(deserialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub starts_at: i64,
    #[serde(deserialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub ends_at: i64,
    #[serde(deserialize_with = "quota")]
    #[schema(minimum = 1, maximum = 1_000_000_000_i64)]
    pub quota: i64,
}

/// One SKU of a campaign as an admin declares it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignItemRequest {
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub sku: Sku,
    /// Units the campaign may sell, drawn from the SKU's stock; fixed at creation, changed by
    /// adjustments. Required without `waves`; with them it may be left out (it is their sum).
    #[serde(default, deserialize_with = "opt_quota")]
    #[schema(minimum = 0, maximum = 1_000_000_000_i64)]
    pub quota: Option<i64>,
    /// Campaign price in minor units; absent: the SKU's own price.
    #[serde(default, deserialize_with = "opt_price")]
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub price: Option<u64>,
    #[serde(default, deserialize_with = "fields::per_user_limit")]
    #[schema(minimum = 1, maximum = 10000)]
    pub per_user_limit: Option<u32>,
    /// Quota shards; default 1.
    #[serde(default = "one", deserialize_with = "fields::shards")]
    #[schema(value_type = Option<u16>, minimum = 1, maximum = 64)]
    pub shards: u16,
    /// Checkouts per second admitted for this item per warm Lambda; more answer 429
    /// `rate_limited` before any stock is touched (docs/operations.md).
    #[serde(default, deserialize_with = "fields::admission_rate")]
    #[schema(minimum = 1, maximum = 100000)]
    pub admission_rate: Option<u32>,
    /// Ring-fence the quota: its units leave the SKU's stock when the campaign is created, so
    /// ordinary checkouts cannot take them; unsold ones return when the campaign ends. Only for
    /// plain SKUs (QUANTITY, taken at order); fixed at creation.
    #[serde(default)]
    pub reserve: bool,
    /// Per-slot quotas (docs/campaigns.md, "Waves"): 1..=24 ordered, non-overlapping windows
    /// inside the campaign's, each with its own quota; only the wave whose window holds now
    /// sells. `shards` is per wave; shards x waves over all items count against the campaign's
    /// 96 quota shards. Fixed at creation.
    #[serde(default)]
    #[schema(max_items = 24)]
    pub waves: Option<Vec<WaveRequest>>,
    /// With `waves`: `roll` moves an ended wave's unsold units into the next wave; `return`
    /// (default) leaves them unsold in the campaign (they stay in, or go back to, the SKU).
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(roll|return)$")]
    pub unsold: Option<Unsold>,
}

fn one() -> u16 {
    1
}

impl TryFrom<CampaignItemRequest> for CampaignItem {
    type Error = String;

    fn try_from(i: CampaignItemRequest) -> Result<Self, String> {
        let waves = match (i.waves, i.unsold) {
            (None, None) => None,
            (None, Some(_)) => return Err(format!("{}: unsold needs waves", i.sku)),
            (Some(list), unsold) => Some(Waves {
                unsold: unsold.unwrap_or_default(),
                list: list
                    .into_iter()
                    .map(|w| Wave {
                        starts_at: w.starts_at,
                        ends_at: w.ends_at,
                        quota: w.quota,
                        rolled_in: 0,
                        rolled_out: 0,
                    })
                    .collect(),
            }),
        };
        let sum = waves.as_ref().map(|w| w.list.iter().map(|w| w.quota).fold(0i64, i64::saturating_add));
        let quota = i.quota.or(sum).ok_or_else(|| format!("{}: quota is required (or waves)", i.sku))?;
        Ok(CampaignItem {
            sku: i.sku,
            price: i.price,
            per_user_limit: i.per_user_limit,
            shards: i.shards,
            quota,
            admission_rate: i.admission_rate,
            reserve: i.reserve,
            waves,
        })
    }
}

/// `PUT /admin/campaigns/{campaign_id}`: creates a campaign (201) or updates its name, window,
/// prices and limits (200).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignRequest {
    #[serde(deserialize_with = "fields::sku_name")]
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: String,
    #[serde(deserialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub starts_at: i64,
    /// After `starts_at`.
    #[serde(deserialize_with = "time")]
    #[schema(value_type = String, format = DateTime)]
    pub ends_at: i64,
    /// 1..=20 SKUs, each once.
    #[serde(deserialize_with = "items")]
    #[schema(value_type = Vec<CampaignItemRequest>, min_items = 1, max_items = 20)]
    pub items: Vec<CampaignItem>,
    /// Unpaid orders of the campaign expire this many seconds after `ends_at`, giving their
    /// stock and quota back; default 0.
    #[serde(default, deserialize_with = "fields::end_grace_seconds")]
    #[schema(minimum = 0, maximum = 86400)]
    pub end_grace_seconds: i64,
    /// A waiting room in front of the items (docs/waiting-room.md): checkouts of its items need
    /// an admission token from `POST /campaigns/{campaign_id}/queue`. Fixed at creation.
    #[serde(default)]
    pub queue: Option<QueueRequest>,
}

/// The queue of `PUT /admin/campaigns/{campaign_id}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueRequest {
    /// Admissions per second, for every Lambda together (1..=10000).
    #[schema(minimum = 1, maximum = 10000)]
    pub rate: u32,
    /// How long an admission token lives once its position is admitted (10..=3600, default 120).
    #[serde(default = "default_ttl")]
    #[schema(minimum = 10, maximum = 3600)]
    pub token_ttl_seconds: u32,
    /// `fifo` (default) or `random`: tickets taken before `starts_at` in the order of a seeded
    /// draw whose SHA-256 is published now and the seed after the start.
    #[serde(default = "default_draw")]
    #[schema(value_type = Option<String>, pattern = "^(fifo|random)$")]
    pub draw: crate::domain::queue::Draw,
    /// Ticket counters, 1..=16 (default 16): each carries ~1,000 joins/s on AWS; tickets are in
    /// exact join order with 1, and within one round of the counters with more
    /// (docs/waiting-room.md, "Tickets").
    #[serde(default = "default_counters")]
    #[schema(minimum = 1, maximum = 16)]
    pub counters: u16,
}

fn default_counters() -> u16 {
    crate::domain::queue::COUNTERS
}

fn default_ttl() -> u32 {
    crate::domain::queue::DEFAULT_TOKEN_TTL_S
}

fn default_draw() -> crate::domain::queue::Draw {
    crate::domain::queue::Draw::Fifo
}

impl From<CampaignRequest> for CampaignSpec {
    fn from(b: CampaignRequest) -> Self {
        CampaignSpec {
            name: b.name,
            starts_at: b.starts_at,
            ends_at: b.ends_at,
            items: b.items,
            end_grace_s: b.end_grace_seconds,
            queue: b.queue.map(|q| crate::domain::campaign::QueueSettings {
                rate: q.rate,
                token_ttl_s: q.token_ttl_seconds,
                draw: q.draw,
                counters: q.counters,
            }),
        }
    }
}

/// `POST /admin/campaigns/{campaign_id}/adjustments`: grows or shrinks one item's quota, once
/// per `adjustment_id`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignAdjustmentRequest {
    #[serde(deserialize_with = "fields::adjustment_id")]
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub adjustment_id: String,
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub sku: Sku,
    #[serde(deserialize_with = "fields::delta")]
    #[schema(minimum = -1_000_000_000_i64, maximum = 1_000_000_000_i64)]
    pub delta: i64,
    #[serde(deserialize_with = "fields::reason")]
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub reason: String,
}

pub(crate) fn campaign_status_schema() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new().schema_type(SchemaType::Type(Type::String)).enum_values(Some(
        [CampaignStatus::Scheduled, CampaignStatus::Live, CampaignStatus::Ended].map(CampaignStatus::as_str),
    ))
}

/// One campaign item and its quota counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignItemView {
    pub sku: String,
    pub price: Option<u64>,
    pub quota: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    pub per_user_limit: Option<u32>,
    pub shards: u16,
    /// Checkouts per second admitted per warm Lambda (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_rate: Option<u32>,
    /// The quota is ring-fenced out of the SKU's stock.
    #[serde(default)]
    pub reserve: bool,
    /// A waved item's waves, each with its own counters (docs/campaigns.md, "Waves").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<Vec<WaveView>>,
    /// With `waves`: `roll` or `return`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsold: Option<String>,
}

/// One wave of an item: its window, quota (with what rolled in and out) and counters; `live`
/// when it is the wave selling now. `quota + rolled_in - rolled_out = available + locked + sold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WaveView {
    pub wave: u16,
    #[schema(format = DateTime)]
    pub starts_at: String,
    #[schema(format = DateTime)]
    pub ends_at: String,
    pub quota: i64,
    pub rolled_in: i64,
    pub rolled_out: i64,
    pub available: i64,
    pub locked: i64,
    pub sold: i64,
    #[schema(schema_with = campaign_status_schema)]
    pub status: String,
    pub live: bool,
}

impl WaveView {
    /// The waves of `i` (`None` without waves) from each wave's counters; none is live while
    /// the campaign is `closed` (paused or outside its window).
    pub(crate) fn list(
        i: &CampaignItem,
        counts: Option<&Vec<crate::domain::invariants::ShardCounts>>,
        closed: bool,
        now_s: i64,
    ) -> Option<Vec<WaveView>> {
        let ws = i.waves.as_ref()?;
        let live = i.wave_at(now_s).ok().filter(|_| !closed);
        Some(
            ws.list
                .iter()
                .enumerate()
                .map(|(n, w)| {
                    let c = counts.and_then(|c| c.get(n)).copied().unwrap_or_default();
                    WaveView {
                        wave: n as u16,
                        starts_at: clock::rfc3339(w.starts_at.saturating_mul(1000)),
                        ends_at: clock::rfc3339(w.ends_at.saturating_mul(1000)),
                        quota: w.quota,
                        rolled_in: w.rolled_in,
                        rolled_out: w.rolled_out,
                        available: c.available,
                        locked: c.locked,
                        sold: c.sold,
                        status: crate::domain::campaign::status_at(w.starts_at, w.ends_at, now_s).as_str().to_owned(),
                        live: live == Some(n),
                    }
                })
                .collect(),
        )
    }
}

/// A campaign: its window, pause switch, status now, and each item's quota counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CampaignViewBody {
    pub campaign_id: String,
    pub name: String,
    #[schema(format = DateTime)]
    pub starts_at: String,
    #[schema(format = DateTime)]
    pub ends_at: String,
    pub paused: bool,
    #[schema(schema_with = campaign_status_schema)]
    pub status: String,
    pub items: Vec<CampaignItemView>,
    /// Unpaid orders expire this long after `ends_at`.
    #[serde(default)]
    pub end_grace_seconds: i64,
    /// The admin write that last replaced this record (in admin answers only; security review L7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<super::stock::UpdatedBy>,
    /// The campaign's waiting room (docs/waiting-room.md): its rate and the draw's commitment
    /// (the seed after the start; `GET /campaigns/{campaign_id}/queue` adds the live counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<super::queue::QueuePublic>,
}

impl CampaignViewBody {
    pub fn new(v: &CampaignView, now_s: i64) -> Self {
        let c = &v.campaign;
        CampaignViewBody {
            campaign_id: c.id.as_str().to_owned(),
            name: c.name.clone(),
            starts_at: clock::rfc3339(c.starts_at.saturating_mul(1000)),
            ends_at: clock::rfc3339(c.ends_at.saturating_mul(1000)),
            paused: c.paused,
            status: c.status(now_s).as_str().to_owned(),
            items: c
                .items
                .iter()
                .zip(&v.items)
                .enumerate()
                .map(|(k, (i, (_, n)))| CampaignItemView {
                    sku: i.sku.as_str().to_owned(),
                    price: i.price,
                    quota: i.quota,
                    available: n.available,
                    locked: n.locked,
                    sold: n.sold,
                    per_user_limit: i.per_user_limit,
                    shards: i.shards,
                    admission_rate: i.admission_rate,
                    reserve: i.reserve,
                    waves: WaveView::list(i, v.waves.get(k), c.paused || c.gate(now_s).is_err(), now_s),
                    unsold: i.waves.as_ref().map(|w| w.unsold.as_str().to_owned()),
                })
                .collect(),
            end_grace_seconds: c.end_grace_s,
            updated_by: None,
            queue: c.queue.as_ref().map(|q| super::queue::QueuePublic {
                rate: q.rate,
                token_ttl_seconds: q.token_ttl_s,
                draw: match q.draw {
                    crate::domain::queue::Draw::Fifo => "fifo".into(),
                    crate::domain::queue::Draw::Random => "random".into(),
                },
                seed_sha256: q.seed_sha256(),
                seed: (now_s >= c.starts_at).then(|| q.seed.clone()),
                pre_start: None,
            }),
        }
    }
}

/// Whether a buyer could check out `quantity` units now, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Availability {
    pub sku: String,
    pub quantity: u32,
    pub purchasable: bool,
    /// `null` for an UNLIMITED SKU and for one sold by date (ask `GET /skus/{sku}/calendar`).
    pub available: Option<i64>,
    /// The first reason a checkout would be refused: the error code it would get.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Code>)]
    pub reason: Option<&'static str>,
    /// The price a checkout would pay (the campaign's when one is named).
    pub price: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_available: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub starts_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub ends_at: Option<String>,
    /// `/me` only: units the caller may still buy (null: no limit applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining_allowance: Option<Option<i64>>,
    /// `/me` only: the caller's unpaid checkouts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_orders: Option<i64>,
    /// `/me` only: the most unpaid checkouts one buyer may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pending_orders: Option<u32>,
}

use crate::http::Code;
