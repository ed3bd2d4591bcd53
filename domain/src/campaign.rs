//! Campaigns (docs/campaigns.md): a sale window over some SKUs, each with its
//! own quota, price and per-user limit, drawn from the SKU's product stock.
//!
//! The quota is sharded like SKU stock. Every quota shard carries a copy of the window and the
//! pause flag, so the freeze's own condition on the shards it already writes enforces them: no
//! extra (hot) item in the checkout transaction and no cache that could let a paused sale sell.

use super::allocation::MAX_SHARDS;
use super::quantity::MAX_QUANTITY;
use super::Sku;
use std::collections::HashSet;

pub use super::ids::CampaignId;

mod waves;
pub use waves::{next_roll, rolled, sum_counts, wave_counts, Roll, Unsold, Wave, Waves, MAX_WAVES};

/// Most SKUs in one campaign.
pub const MAX_CAMPAIGN_ITEMS: usize = 20;
/// Most quota shards over all items of one campaign: a pause writes every quota shard and the
/// campaign item in one transaction (at most 100 actions).
pub const MAX_CAMPAIGN_SHARDS: u16 = 96;
/// Largest quota of one campaign item.
pub const MAX_QUOTA: i64 = 1_000_000_000;

/// One SKU of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CampaignItem {
    pub sku: Sku,
    /// Campaign price in minor units; `None` = the SKU's own price.
    pub price: Option<u64>,
    pub per_user_limit: Option<u32>,
    /// Quota shards (1..=64).
    pub shards: u16,
    /// Net quota: the initial quota plus every adjustment. The identity
    /// `quota = available + locked + sold` holds over the item's quota shards.
    pub quota: i64,
    /// Checkouts per second admitted per warm Lambda (docs/operations.md); `None` = no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_rate: Option<u32>,
    /// Ring-fenced: the quota's units are moved out of the SKU's stock into the item's own cell
    /// ([`Sku::reserve_cell`]) when the campaign is created, so ordinary checkouts cannot take
    /// them; what is unsold goes back when the campaign ends (docs/campaigns.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reserve: bool,
    /// Per-slot quotas inside the campaign's window (docs/campaigns.md, "Waves"); `None` = one
    /// implicit wave, the campaign's window and `quota`. With waves `quota` is their sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<Waves>,
}

/// A campaign's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Campaign {
    pub id: CampaignId,
    pub name: String,
    /// Epoch seconds, inclusive.
    pub starts_at: i64,
    /// Epoch seconds, exclusive.
    pub ends_at: i64,
    pub paused: bool,
    pub items: Vec<CampaignItem>,
    /// Incremented on every metadata write; writes are conditional on it.
    pub version: u64,
    /// Unpaid orders of this campaign expire this long after `ends_at` (docs/campaigns.md).
    pub end_grace_s: i64,
    /// The waiting room in front of its items, fixed at creation (docs/waiting-room.md).
    pub queue: Option<super::queue::QueueSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CampaignStatus {
    Scheduled,
    Live,
    Ended,
}

impl CampaignStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignStatus::Scheduled => "SCHEDULED",
            CampaignStatus::Live => "LIVE",
            CampaignStatus::Ended => "ENDED",
        }
    }
}

/// Why a sale gate refuses a freeze, in the order a buyer should hear them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateRefusal {
    NotStarted,
    Ended,
    Paused,
}

impl Campaign {
    pub fn status(&self, now_s: i64) -> CampaignStatus {
        status_at(self.starts_at, self.ends_at, now_s)
    }

    pub fn item(&self, sku: &Sku) -> Option<&CampaignItem> {
        self.items.iter().find(|i| &i.sku == sku)
    }

    /// Whether the window and the switch let a freeze through now (the same test the quota
    /// shards' write condition makes).
    pub fn gate(&self, now_s: i64) -> Result<(), GateRefusal> {
        gate(self.starts_at, self.ends_at, self.paused, now_s)
    }
}

/// Where `now_s` falls in a window (the pause flag does not change the status).
pub fn status_at(starts_at: i64, ends_at: i64, now_s: i64) -> CampaignStatus {
    if now_s < starts_at {
        CampaignStatus::Scheduled
    } else if now_s < ends_at {
        CampaignStatus::Live
    } else {
        CampaignStatus::Ended
    }
}

/// The sale gate of a window and a pause flag.
pub fn gate(starts_at: i64, ends_at: i64, paused: bool, now_s: i64) -> Result<(), GateRefusal> {
    if now_s < starts_at {
        Err(GateRefusal::NotStarted)
    } else if now_s >= ends_at {
        Err(GateRefusal::Ended)
    } else if paused {
        Err(GateRefusal::Paused)
    } else {
        Ok(())
    }
}

/// What an admin asks for in `PUT /admin/campaigns/{id}`, already parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignSpec {
    pub name: String,
    pub starts_at: i64,
    pub ends_at: i64,
    pub items: Vec<CampaignItem>,
    pub end_grace_s: i64,
    /// A waiting room (docs/waiting-room.md); its seed is drawn when the campaign is created.
    pub queue: Option<QueueSettings>,
}

/// A queue's settings as an admin gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    pub rate: u32,
    pub token_ttl_s: u32,
    pub draw: super::queue::Draw,
    /// Ticket counters (1..=16): one keeps the order exact up to ~1,000 joins/s; more carry
    /// more joins with the order exact within a round of the counters.
    pub counters: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("ends_at must be after starts_at")]
    EmptyWindow,
    #[error("a campaign has 1..={MAX_CAMPAIGN_ITEMS} items")]
    ItemCount,
    #[error("SKU {0} appears twice")]
    DuplicateSku(Sku),
    #[error("quota of {0} must be within 0..={MAX_QUOTA}")]
    Quota(Sku),
    #[error("shards of {0} must be within 1..={MAX_SHARDS}")]
    Shards(Sku),
    #[error("per_user_limit of {0} must be within 1..={MAX_QUANTITY}")]
    Limit(Sku),
    #[error("a campaign has at most {MAX_CAMPAIGN_SHARDS} quota shards over all items (shards x waves)")]
    TooManyShards,
    #[error("name must be 1-200 characters without control characters")]
    Name,
    #[error("{0}")]
    Queue(String),
    /// A queued campaign's rate is its queue's: no item has its own admission rate.
    #[error("{0} has an admission_rate, but the campaign's queue sets the rate")]
    QueuedRate(Sku),
    /// A waved item's waves are out of the window, overlapping, unordered or empty.
    #[error("waves of {0}: {1}")]
    Waves(Sku, String),
}

impl SpecError {
    /// The request field the error points at.
    pub fn field(&self) -> &'static str {
        match self {
            SpecError::EmptyWindow => "ends_at",
            SpecError::Name => "name",
            SpecError::ItemCount | SpecError::DuplicateSku(_) | SpecError::TooManyShards => "items",
            SpecError::Quota(_) => "items.quota",
            SpecError::Shards(_) => "items.shards",
            SpecError::Limit(_) => "items.per_user_limit",
            SpecError::Queue(_) => "queue",
            SpecError::QueuedRate(_) => "items.admission_rate",
            SpecError::Waves(..) => "items.waves",
        }
    }
}

impl CampaignSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.name.trim().is_empty() || self.name.chars().count() > 200 || self.name.chars().any(char::is_control) {
            return Err(SpecError::Name);
        }
        if self.ends_at <= self.starts_at {
            return Err(SpecError::EmptyWindow);
        }
        if self.items.is_empty() || self.items.len() > MAX_CAMPAIGN_ITEMS {
            return Err(SpecError::ItemCount);
        }
        let mut seen = HashSet::new();
        let mut shards: u16 = 0;
        for i in &self.items {
            if !seen.insert(&i.sku) {
                return Err(SpecError::DuplicateSku(i.sku.clone()));
            }
            if !(0..=MAX_QUOTA).contains(&i.quota) {
                return Err(SpecError::Quota(i.sku.clone()));
            }
            if !(1..=MAX_SHARDS).contains(&i.shards) {
                return Err(SpecError::Shards(i.sku.clone()));
            }
            if i.per_user_limit.is_some_and(|l| l == 0 || l > MAX_QUANTITY) {
                return Err(SpecError::Limit(i.sku.clone()));
            }
            if let Some(w) = &i.waves {
                waves::validate(w, (self.starts_at, self.ends_at)).map_err(|e| SpecError::Waves(i.sku.clone(), e))?;
                if w.list.iter().map(|w| w.quota).sum::<i64>() != i.quota {
                    return Err(SpecError::Waves(i.sku.clone(), "quota must be the sum of the waves' quotas".into()));
                }
            }
            // each wave is its own set of quota shards: a pause writes them all
            shards = shards.saturating_add(i.quota_shards());
        }
        if shards > MAX_CAMPAIGN_SHARDS {
            return Err(SpecError::TooManyShards);
        }
        if let Some(q) = &self.queue {
            super::queue::validate(q.rate, q.token_ttl_s).map_err(SpecError::Queue)?;
            if !(1..=super::queue::COUNTERS).contains(&q.counters) {
                return Err(SpecError::Queue(format!("queue.counters must be 1..={}", super::queue::COUNTERS)));
            }
            if let Some(i) = self.items.iter().find(|i| i.admission_rate.is_some()) {
                return Err(SpecError::QueuedRate(i.sku.clone()));
            }
        }
        Ok(())
    }
}

/// What an update of an existing campaign may change: name, window, prices and limits.
/// The SKU set, the shard counts and the quotas are fixed at creation; quotas change only
/// through audited adjustments, so two admins cannot overwrite each other's stock.
pub fn check_update(old: &Campaign, spec: &CampaignSpec) -> Result<(), UpdateRefusal> {
    if old.items.len() != spec.items.len() {
        return Err(UpdateRefusal::ItemsChanged);
    }
    for new in &spec.items {
        let Some(cur) = old.item(&new.sku) else { return Err(UpdateRefusal::ItemsChanged) };
        if cur.shards != new.shards {
            return Err(UpdateRefusal::ShardsChanged(new.sku.clone()));
        }
        if cur.quota != new.quota {
            return Err(UpdateRefusal::QuotaChanged(new.sku.clone()));
        }
        if !same_waves(cur.waves.as_ref(), new.waves.as_ref()) {
            return Err(UpdateRefusal::WavesChanged(new.sku.clone()));
        }
    }
    let settings = old.queue.as_ref().map(|q| QueueSettings {
        rate: q.rate,
        token_ttl_s: q.token_ttl_s,
        draw: q.draw,
        counters: q.counters,
    });
    if settings != spec.queue {
        return Err(UpdateRefusal::QueueChanged);
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateRefusal {
    #[error("the SKUs of a campaign are fixed at creation")]
    ItemsChanged,
    #[error("the shard count of {0} is fixed at creation")]
    ShardsChanged(Sku),
    #[error("the quota of {0} changes only through POST /admin/campaigns/{{id}}/adjustments")]
    QuotaChanged(Sku),
    /// The queue (present or not, rate, token life, draw) is fixed at creation.
    #[error("a campaign's queue is fixed at creation")]
    QueueChanged,
    /// The waves (their windows and `unsold`) are fixed at creation.
    #[error("the waves of {0} are fixed at creation")]
    WavesChanged(Sku),
}

/// The same waves: their number, windows and `unsold`. Their quotas are the stored record's (an
/// update keeps them, like the item's quota: they change only by adjustments and rolls).
fn same_waves(cur: Option<&Waves>, new: Option<&Waves>) -> bool {
    match (cur, new) {
        (None, None) => true,
        (Some(c), Some(n)) => {
            c.unsold == n.unsold
                && c.list.len() == n.list.len()
                && c.list.iter().zip(&n.list).all(|(a, b)| a.starts_at == b.starts_at && a.ends_at == b.ends_at)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(sku: &str, shards: u16, quota: i64) -> CampaignItem {
        CampaignItem {
            reserve: false,
            admission_rate: None,
            sku: Sku::parse(sku).unwrap(),
            price: None,
            per_user_limit: None,
            shards,
            quota,
            waves: None,
        }
    }

    fn spec(items: Vec<CampaignItem>) -> CampaignSpec {
        CampaignSpec { end_grace_s: 0, name: "Flash".into(), starts_at: 100, ends_at: 200, items, queue: None }
    }

    #[test]
    fn the_window_is_inclusive_at_the_start_and_exclusive_at_the_end() {
        assert_eq!(gate(100, 200, false, 99), Err(GateRefusal::NotStarted));
        assert_eq!(gate(100, 200, false, 100), Ok(()));
        assert_eq!(gate(100, 200, false, 199), Ok(()));
        assert_eq!(gate(100, 200, false, 200), Err(GateRefusal::Ended));
    }

    #[test]
    fn a_paused_live_sale_is_refused_as_paused_but_the_window_speaks_first() {
        assert_eq!(gate(100, 200, true, 150), Err(GateRefusal::Paused));
        assert_eq!(gate(100, 200, true, 50), Err(GateRefusal::NotStarted));
        assert_eq!(gate(100, 200, true, 250), Err(GateRefusal::Ended));
    }

    #[test]
    fn status_follows_the_clock() {
        let c = Campaign {
            end_grace_s: 0,
            queue: None,
            id: CampaignId::parse("c").unwrap(),
            name: "c".into(),
            starts_at: 100,
            ends_at: 200,
            paused: true,
            items: vec![],
            version: 1,
        };
        assert_eq!(c.status(10), CampaignStatus::Scheduled);
        assert_eq!(c.status(150), CampaignStatus::Live);
        assert_eq!(c.status(200), CampaignStatus::Ended);
    }

    #[test]
    fn nonsensical_specs_are_refused_naming_the_field() {
        assert!(spec(vec![item("A", 4, 30)]).validate().is_ok());
        let cases = [
            (CampaignSpec { ends_at: 100, ..spec(vec![item("A", 1, 1)]) }, "ends_at"),
            (spec(vec![]), "items"),
            (spec(vec![item("A", 1, 1), item("A", 1, 1)]), "items"),
            (spec(vec![item("A", 1, -1)]), "items.quota"),
            (spec(vec![item("A", 0, 1)]), "items.shards"),
            (spec(vec![item("A", 65, 1)]), "items.shards"),
            (spec((0..2).map(|i| item(&format!("S{i}"), 64, 1)).collect()), "items"),
            (CampaignSpec { name: " ".into(), ..spec(vec![item("A", 1, 1)]) }, "name"),
            (spec(vec![CampaignItem { per_user_limit: Some(0), ..item("A", 1, 1) }]), "items.per_user_limit"),
        ];
        for (s, field) in cases {
            assert_eq!(s.validate().unwrap_err().field(), field, "{s:?}");
        }
    }

    #[test]
    fn an_update_may_not_change_skus_shards_or_quotas() {
        let old = Campaign {
            end_grace_s: 0,
            queue: None,
            id: CampaignId::parse("c").unwrap(),
            name: "c".into(),
            starts_at: 1,
            ends_at: 2,
            paused: false,
            items: vec![item("A", 2, 10)],
            version: 3,
        };
        assert!(check_update(&old, &spec(vec![CampaignItem { price: Some(5), ..item("A", 2, 10) }])).is_ok());
        assert!(matches!(check_update(&old, &spec(vec![item("B", 2, 10)])), Err(UpdateRefusal::ItemsChanged)));
        assert!(matches!(check_update(&old, &spec(vec![item("A", 3, 10)])), Err(UpdateRefusal::ShardsChanged(_))));
        assert!(matches!(check_update(&old, &spec(vec![item("A", 2, 11)])), Err(UpdateRefusal::QuotaChanged(_))));
    }
}
