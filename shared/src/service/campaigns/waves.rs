//! Rolling waves (docs/campaigns.md, "Waves"): an ended wave's unsold units move into the next
//! wave of an item declared `unsold: "roll"`, run by reconcile's campaign sweep.

use super::ATTEMPTS;
use crate::clock;
use crate::context::App;
use crate::domain::campaign::{next_roll, rolled, Campaign, CampaignItem, Roll, MAX_CAMPAIGN_SHARDS};
use crate::domain::CampaignId;
use crate::ports::{AdjustRejection, CampaignAdjustment};

/// Rolls every due wave of the campaign; returns the units moved.
///
/// Each roll is one conditional transaction — the campaign record at the version it was read
/// (its waves' `rolled_out`/`rolled_in` move by the units), minus on each of the ended wave's
/// shards conditional on their `available`, plus on the next wave's — written through the quota
/// adjustment port under an id no admin can use (`roll:<sku>:w<n>:v<version>`, `:` is outside
/// the client alphabet), so the audit trail names it. A crash before the commit leaves nothing;
/// after it, the version has moved, so nothing is rolled twice; units released into an ended
/// wave after its roll (an expired checkout) are rolled by the next sweep.
pub async fn roll_waves(app: &App, id: &CampaignId) -> anyhow::Result<i64> {
    let mut moved = 0;
    let mut refused = 0;
    // every success is one wave emptied (at most one per quota shard of the campaign)
    for _ in 0..(u32::from(MAX_CAMPAIGN_SHARDS) + ATTEMPTS) {
        let Some(c) = app.campaigns.get_campaign(id, true).await? else { return Ok(moved) };
        let Some((item, roll)) = due(app, &c).await? else { return Ok(moved) };
        let adj = CampaignAdjustment {
            campaign_id: c.id.clone(),
            sku: item.sku.clone(),
            adjustment_id: format!("roll:{}:w{}:v{}", item.sku, roll.from, c.version),
            delta: 0,
            reason: format!("wave {} ended: {} unsold units rolled into wave {}", roll.from, roll.units, roll.from + 1),
            actor: None,
            at_ms: clock::now_ms(),
            pieces: roll.pieces.clone(),
        };
        let mut next = Campaign { version: c.version + 1, ..c.clone() };
        if let Some(i) = next.items.iter_mut().find(|i| i.sku == item.sku) {
            *i = rolled(&item, &roll);
        }
        match app.campaigns.adjust_campaign(&adj, &next, c.version).await? {
            Ok(()) => {
                app.caches.forget_campaign(&c.id);
                tracing::info!(campaign = %c.id, sku = %item.sku, wave = roll.from, units = roll.units, "wave rolled");
                moved += roll.units;
            }
            Err(AdjustRejection::Duplicate { .. })
            | Err(AdjustRejection::Conflict)
            | Err(AdjustRejection::ShardShort)
            | Err(AdjustRejection::CodeTaken) => {
                refused += 1;
                if refused >= ATTEMPTS {
                    anyhow::bail!("rolling the waves of {id}: contention");
                }
                crate::service::backoff(refused).await;
            }
        }
    }
    Ok(moved)
}

/// The first roll due in the campaign, read consistently.
async fn due(app: &App, c: &Campaign) -> anyhow::Result<Option<(CampaignItem, Roll)>> {
    let now = clock::now_s();
    for i in c.items.iter().filter(|i| i.waves.is_some()) {
        let counts = app.campaigns.read_quota_shards(&c.id, &i.sku, i.quota_shards(), true).await?;
        let available: Vec<i64> = counts.iter().map(|s| s.available).collect();
        if let Some(r) = next_roll(i, &available, now) {
            return Ok(Some((i.clone(), r)));
        }
    }
    Ok(None)
}
