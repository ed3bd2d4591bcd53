//! Campaign administration, stop-sale, public views and the eligibility check
//! (docs/campaigns.md).

use crate::clock;
use crate::context::App;
use crate::domain::allocation::adjustment_pieces;
use crate::domain::campaign::{
    check_update, gate, sum_counts, wave_counts, Campaign, CampaignSpec, GateRefusal, SpecError, UpdateRefusal,
};
use crate::domain::invariants::ShardCounts;
use crate::domain::kind::Kind;
use crate::domain::{CampaignId, Sku, UserId};
use crate::ports::{AdjustRejection, AdminStamp, CampaignAdjustment, Counter};

const ATTEMPTS: u32 = 10;

pub mod fence;
mod waves;
pub use waves::roll_waves;

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("no campaign {0}")]
    UnknownCampaign(CampaignId),
    #[error("no SKU {0}")]
    UnknownSku(Sku),
    #[error("{0} is not part of this campaign")]
    NotInCampaign(Sku),
    #[error(transparent)]
    Invalid(#[from] SpecError),
    #[error(transparent)]
    Update(#[from] UpdateRefusal),
    #[error("removing {0} units needs more quota than is available")]
    Insufficient(i64),
    #[error("adjustment id already used with another change")]
    AdjustmentReused,
    #[error("contention; retry")]
    Contention,
    /// A ring-fenced item on a SKU whose stock is not plain (docs/campaigns.md).
    #[error("{0} ({1}) is not sold in campaigns")]
    NoCampaign(Sku, Kind),
    #[error("{0} cannot be ring-fenced: only plain stock taken at order can")]
    NotFenceable(Sku),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// Creates a campaign (201) or updates its name, window, prices and limits (200).
pub async fn put(app: &App, id: &CampaignId, spec: &CampaignSpec) -> Result<(Campaign, bool), CampaignError> {
    put_by(app, id, spec, None).await
}

/// Who last replaced the campaign's record through an admin write (security review L7).
pub async fn updated_by(app: &App, id: &CampaignId) -> anyhow::Result<Option<AdminStamp>> {
    app.catalogue.admin_stamp(crate::ports::Stamped::Campaign(id)).await
}

/// The campaign record, written, stamped with the admin who asked (security review L7).
async fn write(app: &App, c: &Campaign, expected: Option<u64>, by: Option<AdminStamp>) -> anyhow::Result<bool> {
    match by {
        Some(b) => app.campaigns.write_campaign_as(c, expected, &b).await,
        None => app.campaigns.write_campaign(c, expected).await,
    }
}

/// [`put`] by an admin: the campaign record keeps the caller's `sub`.
pub async fn put_by(
    app: &App,
    id: &CampaignId,
    spec: &CampaignSpec,
    actor: Option<&str>,
) -> Result<(Campaign, bool), CampaignError> {
    spec.validate()?;
    let skus: Vec<Sku> = spec.items.iter().map(|i| i.sku.clone()).collect();
    let metas = app.catalogue.get_skus(&skus).await?;
    if let Some(missing) = skus.iter().find(|s| !metas.contains_key(*s)) {
        return Err(CampaignError::UnknownSku(missing.clone()));
    }
    // a kind not sold in campaigns (its rules row) is refused here, before anything is written,
    // not only at checkout
    if let Some(m) = skus.iter().filter_map(|s| metas.get(s)).find(|m| !Kind::of(&m.model).rules().campaign) {
        return Err(CampaignError::NoCampaign(m.sku.clone(), Kind::of(&m.model)));
    }
    for attempt in 1..=ATTEMPTS {
        let existing = app.campaigns.get_campaign(id, true).await?;
        if existing.is_none() {
            // ring-fenced items take their units out of the SKUs first: a campaign is never
            // written that promises units it could not fence (a retry fences nothing twice)
            for i in spec.items.iter().filter(|i| i.reserve) {
                if metas.get(&i.sku).is_some_and(|m| !fence::fenceable(m)) {
                    return Err(CampaignError::NotFenceable(i.sku.clone()));
                }
            }
            for i in spec.items.iter().filter(|i| i.reserve) {
                fence::fence(app, id, i, i.quota, &fence::fence_id(id, None), actor).await?;
            }
        }
        let (next, expected) = next_version(id, spec, existing.as_ref())?;
        if write(app, &next, expected, actor.map(|a| AdminStamp::new(a, "put", crate::clock::now_ms()))).await? {
            app.caches.forget_campaign(id);
            tracing::info!(campaign = %id, version = next.version, "campaign written");
            return Ok((next, expected.is_none()));
        }
        super::backoff(attempt).await;
    }
    Err(CampaignError::Contention)
}

/// The campaign `spec` writes: a new one at version 1, or `old` with what an update may change
/// (`check_update`), one version on; with the version the write expects to replace.
fn next_version(
    id: &CampaignId,
    spec: &CampaignSpec,
    existing: Option<&Campaign>,
) -> Result<(Campaign, Option<u64>), CampaignError> {
    Ok(match existing {
        None => (
            Campaign {
                id: id.clone(),
                name: spec.name.clone(),
                starts_at: spec.starts_at,
                ends_at: spec.ends_at,
                paused: false,
                items: spec.items.clone(),
                version: 1,
                end_grace_s: spec.end_grace_s,
                queue: spec.queue.map(super::queue::new_queue).transpose()?,
            },
            None,
        ),
        Some(old) => {
            check_update(old, spec)?;
            let items = old
                .items
                .iter()
                .map(|cur| {
                    let new = spec.items.iter().find(|n| n.sku == cur.sku).unwrap_or(cur);
                    crate::domain::campaign::CampaignItem {
                        price: new.price,
                        per_user_limit: new.per_user_limit,
                        admission_rate: new.admission_rate,
                        ..cur.clone()
                    }
                })
                .collect();
            let next = Campaign {
                name: spec.name.clone(),
                starts_at: spec.starts_at,
                ends_at: spec.ends_at,
                items,
                version: old.version + 1,
                end_grace_s: spec.end_grace_s,
                ..old.clone()
            };
            (next, Some(old.version))
        }
    })
}

/// Pauses or resumes a campaign: one transaction over its metadata and every quota shard, so
/// the next freeze sees it (no cache stands between the flag and the write condition).
pub async fn set_paused(app: &App, id: &CampaignId, paused: bool) -> Result<Campaign, CampaignError> {
    set_paused_by(app, id, paused, None).await
}

/// [`set_paused`] by an admin: the campaign record keeps the caller's `sub`.
pub async fn set_paused_by(
    app: &App,
    id: &CampaignId,
    paused: bool,
    actor: Option<&str>,
) -> Result<Campaign, CampaignError> {
    for attempt in 1..=ATTEMPTS {
        let old =
            app.campaigns.get_campaign(id, true).await?.ok_or_else(|| CampaignError::UnknownCampaign(id.clone()))?;
        if old.paused == paused {
            return Ok(old);
        }
        let next = Campaign { paused, version: old.version + 1, ..old.clone() };
        let by = actor.map(|a| AdminStamp::new(a, if paused { "pause" } else { "resume" }, crate::clock::now_ms()));
        if write(app, &next, Some(old.version), by).await? {
            app.caches.forget_campaign(id);
            tracing::info!(campaign = %id, paused, "campaign switch");
            return Ok(next);
        }
        super::backoff(attempt).await;
    }
    Err(CampaignError::Contention)
}

/// Applies a quota adjustment once per `adjustment_id`; `false` = a replay of the same one.
pub async fn adjust(
    app: &App,
    id: &CampaignId,
    sku: &Sku,
    adjustment_id: &str,
    delta: i64,
    reason: &str,
    actor: Option<&UserId>,
) -> Result<bool, CampaignError> {
    for attempt in 1..=ATTEMPTS {
        let old =
            app.campaigns.get_campaign(id, true).await?.ok_or_else(|| CampaignError::UnknownCampaign(id.clone()))?;
        let item = old.item(sku).ok_or_else(|| CampaignError::NotInCampaign(sku.clone()))?.clone();
        // a waved item's adjustment changes the wave selling now or the next one
        let wave = item.adjusted_wave(clock::now_s());
        let own = item.wave_shards(wave);
        let available: Vec<i64> = if delta < 0 {
            let all = app.campaigns.read_quota_shards(id, sku, item.quota_shards(), true).await?;
            all.iter().skip(usize::from(own.start)).take(usize::from(item.shards)).map(|c| c.available).collect()
        } else {
            Vec::new()
        };
        let (pieces, short) = adjustment_pieces(delta, item.shards, &available);
        let pieces = pieces.into_iter().map(|(s, d)| (s + own.start, d)).collect();
        let quota = item.quota.checked_add(delta).ok_or(CampaignError::Insufficient(delta))?;
        let fence_id = fence::fence_id(id, Some(adjustment_id));
        if item.reserve && delta > 0 {
            // the units first: a quota never promises what is not fenced
            fence::fence(app, id, &item, delta, &fence_id, actor.map(|a| a.as_str())).await?;
        }
        let mut next = Campaign { version: old.version + 1, ..old.clone() };
        if let Some(i) = next.items.iter_mut().find(|i| &i.sku == sku) {
            i.quota = quota;
            if let Some(w) = i.waves.as_mut().and_then(|ws| ws.list.get_mut(wave)) {
                w.quota += delta;
            }
        }
        let adj = CampaignAdjustment {
            campaign_id: id.clone(),
            sku: sku.clone(),
            adjustment_id: adjustment_id.to_owned(),
            delta,
            reason: reason.to_owned(),
            actor: actor.map(|a| a.to_string()),
            at_ms: clock::now_ms(),
            pieces,
        };
        match app.campaigns.adjust_campaign(&adj, &next, old.version).await? {
            Ok(()) => {
                app.caches.forget_campaign(id);
                if item.reserve && delta < 0 {
                    // the quota is down: its units go back to the SKU (any left behind by a
                    // crash here return when the campaign ends)
                    fence::unfence(app, id, sku, -delta, &fence_id, actor.map(|a| a.as_str())).await?;
                }
                tracing::info!(campaign = %id, sku = %sku, delta, adjustment_id, reason, "campaign quota adjusted");
                return Ok(true);
            }
            Err(AdjustRejection::Duplicate { delta: d }) if d == delta => return Ok(false),
            Err(AdjustRejection::Duplicate { .. }) => return Err(CampaignError::AdjustmentReused),
            Err(AdjustRejection::ShardShort) if short => return Err(CampaignError::Insufficient(delta)),
            Err(AdjustRejection::ShardShort | AdjustRejection::Conflict | AdjustRejection::CodeTaken) => {
                super::backoff(attempt).await
            }
        }
    }
    Err(CampaignError::Contention)
}

/// A campaign with the counters of every item.
#[derive(Debug, Clone)]
pub struct CampaignView {
    pub campaign: Campaign,
    pub items: Vec<(Sku, ShardCounts)>,
    /// Per item, the counters of each wave (one entry for an item without waves).
    pub waves: Vec<Vec<ShardCounts>>,
}

/// `consistent` for admin answers; public reads are eventually consistent.
pub async fn view(app: &App, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<CampaignView>> {
    let Some(c) = app.campaigns.get_campaign(id, consistent).await? else { return Ok(None) };
    let reads = c.items.iter().map(|i| app.campaigns.read_quota_shards(&c.id, &i.sku, i.quota_shards(), consistent));
    let counts = futures::future::try_join_all(reads).await?;
    let items = c.items.iter().zip(&counts).map(|(i, cs)| (i.sku.clone(), sum_counts(cs))).collect();
    let waves = c.items.iter().zip(&counts).map(|(i, cs)| wave_counts(i, cs)).collect();
    Ok(Some(CampaignView { campaign: c, items, waves }))
}

/// Reconcile's campaign check: the quota identity of every item of every campaign (consistent
/// reads; a counter move between two shard reads cannot break it, as each write keeps its own
/// shard's sum).
pub async fn check_quotas(app: &App) -> anyhow::Result<Vec<crate::domain::invariants::Violation>> {
    let mut items = Vec::new();
    let mut campaigns = Vec::new();
    for id in app.campaigns.list_campaigns().await? {
        let Some(c) = app.campaigns.get_campaign(&id, true).await? else { continue };
        campaigns.push(c);
    }
    for c in campaigns {
        for i in &c.items {
            let shards = app.campaigns.read_quota_shards(&c.id, &i.sku, i.quota_shards(), true).await?;
            let snapshot = crate::domain::invariants::CampaignItemSnapshot::of(&c.id, i, |n| {
                shards.get(usize::from(n)).copied().unwrap_or_default()
            });
            items.push(snapshot);
        }
    }
    Ok(crate::domain::invariants::check_quota_identity(&items))
}

/// Why a purchase would be refused now, in the order the freeze would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ineligible {
    SaleNotStarted,
    SaleEnded,
    SalePaused,
    PurchaseLimitExceeded,
    CampaignQuotaExhausted,
    InsufficientStock,
    TooManyPendingOrders,
}

impl Ineligible {
    pub fn code(self) -> &'static str {
        match self {
            Ineligible::SaleNotStarted => "sale_not_started",
            Ineligible::SaleEnded => "sale_ended",
            Ineligible::SalePaused => "sale_paused",
            Ineligible::PurchaseLimitExceeded => "purchase_limit_exceeded",
            Ineligible::CampaignQuotaExhausted => "campaign_quota_exhausted",
            Ineligible::InsufficientStock => "insufficient_stock",
            Ineligible::TooManyPendingOrders => "too_many_pending_orders",
        }
    }
}

/// Everything the eligibility check answers from (already read).
#[derive(Debug, Clone, Default)]
pub struct EligibilityInput {
    pub quantity: u32,
    pub available: i64,
    pub sku_paused: bool,
    pub sku_limit: Option<u32>,
    /// (window start, end, paused, quota available, campaign per-user limit)
    pub campaign: Option<(i64, i64, bool, i64, Option<u32>)>,
    /// (units of the SKU held, units of the campaign item held, pending checkouts) when signed in.
    pub user: Option<(i64, i64, i64)>,
    pub max_pending: u32,
}

/// The eligibility decision (pure): the first reason a freeze would refuse, and the signed-in
/// buyer's remaining allowance.
pub fn eligibility(i: &EligibilityInput, now_s: i64) -> (Option<Ineligible>, Option<i64>) {
    let q = i64::from(i.quantity);
    let held = |n: Option<(i64, i64, i64)>, pick: fn((i64, i64, i64)) -> i64| n.map(pick).unwrap_or(0);
    let mut allowance: Option<i64> = None;
    let mut tighten = |limit: i64| allowance = Some(allowance.map_or(limit, |a: i64| a.min(limit)));
    if let Some(l) = i.sku_limit {
        tighten(i64::from(l) - held(i.user, |u| u.0));
    }
    if let Some((_, _, _, _, Some(l))) = i.campaign {
        tighten(i64::from(l) - held(i.user, |u| u.1));
    }
    let allowance = allowance.map(|a| a.max(0));
    let reason = (|| {
        if let Some((starts, ends, paused, _, _)) = i.campaign {
            match gate(starts, ends, paused, now_s) {
                Err(GateRefusal::NotStarted) => return Some(Ineligible::SaleNotStarted),
                Err(GateRefusal::Ended) => return Some(Ineligible::SaleEnded),
                Err(GateRefusal::Paused) => return Some(Ineligible::SalePaused),
                Ok(()) => {}
            }
        }
        if i.sku_paused {
            return Some(Ineligible::SalePaused);
        }
        // Without a token only the per-order part of a limit can be judged.
        let limit_now = if i.user.is_some() { allowance } else { i.sku_limit.map(i64::from) };
        let campaign_limit = i.campaign.and_then(|c| c.4).map(i64::from);
        if limit_now.is_some_and(|a| a < q) || campaign_limit.is_some_and(|l| l < q) {
            return Some(Ineligible::PurchaseLimitExceeded);
        }
        if i.campaign.is_some_and(|c| c.3 < q) {
            return Some(Ineligible::CampaignQuotaExhausted);
        }
        if i.available < q {
            return Some(Ineligible::InsufficientStock);
        }
        if i.max_pending > 0 && i.user.is_some_and(|u| u.2 >= i64::from(i.max_pending)) {
            return Some(Ineligible::TooManyPendingOrders);
        }
        None
    })();
    (reason, allowance)
}

/// Reads the counters of a signed-in buyer's allowance (eventually consistent: advisory; the
/// freeze's conditions decide).
pub async fn user_counters(
    app: &App,
    sku: &Sku,
    campaign: Option<&CampaignId>,
    user: &UserId,
) -> anyhow::Result<(i64, i64, i64)> {
    let mut wanted = vec![Counter::Limit(sku.clone(), user.clone()), Counter::Pending(user.clone())];
    if let Some(c) = campaign {
        wanted.push(Counter::CampaignLimit(c.clone(), sku.clone(), user.clone()));
    }
    let got = app.locks.read_counters(&wanted).await?;
    let get = |c: &Counter| got.get(c).copied().unwrap_or(0);
    Ok((get(&wanted[0]), wanted.get(2).map(get).unwrap_or(0), get(&wanted[1])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> EligibilityInput {
        EligibilityInput { quantity: 2, available: 10, max_pending: 3, ..Default::default() }
    }

    #[test]
    fn an_open_sale_with_stock_is_purchasable() {
        assert_eq!(eligibility(&base(), 0), (None, None));
        let c = EligibilityInput { campaign: Some((0, 100, false, 5, Some(3))), user: Some((0, 1, 0)), ..base() };
        assert_eq!(eligibility(&c, 50), (None, Some(2)));
    }

    #[test]
    fn the_window_and_the_switches_speak_before_the_counters() {
        let c = |paused| EligibilityInput { campaign: Some((10, 20, paused, 0, None)), available: 0, ..base() };
        assert_eq!(eligibility(&c(false), 5).0, Some(Ineligible::SaleNotStarted));
        assert_eq!(eligibility(&c(false), 20).0, Some(Ineligible::SaleEnded));
        assert_eq!(eligibility(&c(true), 15).0, Some(Ineligible::SalePaused));
        assert_eq!(eligibility(&c(false), 15).0, Some(Ineligible::CampaignQuotaExhausted));
        let stopped = EligibilityInput { sku_paused: true, ..base() };
        assert_eq!(eligibility(&stopped, 0).0, Some(Ineligible::SalePaused));
    }

    #[test]
    fn limits_quota_stock_and_pending_slots_are_named_in_that_order() {
        let over = EligibilityInput { sku_limit: Some(3), user: Some((2, 0, 0)), ..base() };
        assert_eq!(eligibility(&over, 0), (Some(Ineligible::PurchaseLimitExceeded), Some(1)));
        let short = EligibilityInput { available: 1, ..base() };
        assert_eq!(eligibility(&short, 0).0, Some(Ineligible::InsufficientStock));
        let busy = EligibilityInput { user: Some((0, 0, 3)), ..base() };
        assert_eq!(eligibility(&busy, 0).0, Some(Ineligible::TooManyPendingOrders));
        let anonymous = EligibilityInput { sku_limit: Some(1), ..base() };
        assert_eq!(eligibility(&anonymous, 0).0, Some(Ineligible::PurchaseLimitExceeded));
    }
}
