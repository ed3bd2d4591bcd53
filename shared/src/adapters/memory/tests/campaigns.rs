//! Campaigns (flash sales): quota, window, pause and the pending cap.

use super::*;
use crate::domain::campaign::{CampaignItem, CampaignSpec, Unsold, Wave, Waves};
use crate::domain::CampaignId;
use crate::service::campaigns as camp;

fn cid() -> CampaignId {
    CampaignId::parse("flash").unwrap()
}

async fn sale(app: &App, starts_in: i64, quota: i64, per_user_limit: Option<u32>) {
    let now = clock::now_s();
    let spec = CampaignSpec {
        end_grace_s: 0,
        queue: None,
        name: "Flash".into(),
        starts_at: now + starts_in,
        ends_at: now + starts_in + 3600,
        items: vec![CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku: sku("A"),
            price: Some(300),
            per_user_limit,
            shards: 2,
            quota,
        }],
    };
    camp::put(app, &cid(), &spec).await.unwrap();
}

fn campaign_request(order: &str, buyer: &str, q: u32) -> FreezeRequest {
    let mut r = freeze_request(order, buyer, &[("A", q)]);
    r.lines[0].campaign = Some(cid());
    r.request_hash = orders::request_hash(&r.lines);
    r
}

fn quota(w: &MemoryWorld) -> ShardCounts {
    let items = w.stock.campaign_counters().items;
    items[0]
        .shards
        .iter()
        .fold(counts(0, 0, 0), |a, c| counts(a.available + c.available, a.locked + c.locked, a.sold + c.sold))
}

#[tokio::test]
async fn a_campaign_freeze_takes_quota_and_stock_at_the_campaign_price_and_confirm_sells_both() {
    let (app, w) = world(&[(meta("A", 2, None), &[5, 5])]);
    sale(&app, -5, 4, None).await;
    let Ok(Frozen::Created(r)) = freeze(&app, &campaign_request("o1", "alice", 3)).await else { panic!() };
    assert_eq!(r.lines[0].unit_price, 300);
    assert_eq!((totals(&w, "A"), quota(&w)), (counts(7, 3, 0), counts(1, 3, 0)));
    stock::confirm(&app, &r.id, OnReleased::Retake).await.unwrap();
    assert_eq!((totals(&w, "A"), quota(&w)), (counts(7, 0, 3), counts(1, 0, 3)));
    let short = freeze(&app, &campaign_request("o2", "bob", 2)).await;
    assert!(matches!(short, Err(FreezeError::QuotaExhausted(_))), "{short:?}");
    assert_eq!(totals(&w, "A"), counts(7, 0, 3), "a refused freeze takes no stock");
    assert_invariants(&w);
}

#[tokio::test]
async fn a_sale_not_open_or_paused_is_refused_by_its_write_condition_and_resumes() {
    let (app, w) = world(&[(meta("A", 1, None), &[10])]);
    sale(&app, 3600, 5, None).await;
    let early = freeze(&app, &campaign_request("o1", "alice", 1)).await;
    assert!(matches!(early, Err(FreezeError::SaleNotStarted(_))), "{early:?}");
    let spec = CampaignSpec {
        end_grace_s: 0,
        queue: None,
        name: "Flash".into(),
        starts_at: clock::now_s() - 5,
        ends_at: clock::now_s() + 3600,
        items: vec![CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku: sku("A"),
            price: Some(300),
            per_user_limit: None,
            shards: 2,
            quota: 5,
        }],
    };
    // an update may move the window (quotas and shards stay)
    camp::put(&app, &cid(), &spec).await.unwrap();
    camp::set_paused(&app, &cid(), true).await.unwrap();
    let paused = freeze(&app, &campaign_request("o2", "alice", 1)).await;
    assert!(matches!(paused, Err(FreezeError::SalePaused(_))), "{paused:?}");
    camp::set_paused(&app, &cid(), false).await.unwrap();
    assert!(matches!(freeze(&app, &campaign_request("o3", "alice", 1)).await, Ok(Frozen::Created(_))));
    assert_eq!(quota(&w), counts(4, 1, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn the_pending_cap_refuses_the_next_checkout_until_one_is_released() {
    let mut c = config();
    c.max_pending_per_user = 2;
    let (app, w) = world_with(c, &[(meta("A", 1, None), &[10])]);
    let first = match freeze(&app, &freeze_request("o1", "hoarder", &[("A", 1)])).await {
        Ok(Frozen::Created(r)) => r,
        other => panic!("{other:?}"),
    };
    freeze(&app, &freeze_request("o2", "hoarder", &[("A", 1)])).await.unwrap();
    let third = freeze(&app, &freeze_request("o3", "hoarder", &[("A", 1)])).await;
    assert!(matches!(third, Err(FreezeError::TooManyPending)), "{third:?}");
    assert!(freeze(&app, &freeze_request("o4", "someone-else", &[("A", 1)])).await.is_ok());
    stock::release(&app, &first.id).await.unwrap();
    assert!(freeze(&app, &freeze_request("o5", "hoarder", &[("A", 1)])).await.is_ok());
    assert_invariants(&w);
}

/// A campaign on SKU "A" whose item sells in `waves` ((start, end) relative to now, quota).
async fn waved_sale(app: &App, unsold: Unsold, waves: &[(i64, i64, i64)]) -> Result<(), camp::CampaignError> {
    let now = clock::now_s();
    let list: Vec<Wave> = waves
        .iter()
        .map(|&(s, e, quota)| Wave { starts_at: now + s, ends_at: now + e, quota, rolled_in: 0, rolled_out: 0 })
        .collect();
    let spec = CampaignSpec {
        end_grace_s: 0,
        queue: None,
        name: "Drop".into(),
        starts_at: now - 1000,
        ends_at: now + 7200,
        items: vec![CampaignItem {
            reserve: false,
            admission_rate: None,
            sku: sku("A"),
            price: Some(300),
            per_user_limit: None,
            shards: 2,
            quota: list.iter().map(|w| w.quota).sum(),
            waves: Some(Waves { unsold, list }),
        }],
    };
    camp::put(app, &cid(), &spec).await.map(|_| ())
}

/// Each wave's (available, locked, sold) and its quota net of rolls, from the campaign view.
async fn waves_of(app: &App) -> Vec<((i64, i64, i64), i64)> {
    let v = camp::view(app, &cid(), true).await.unwrap().unwrap();
    let ws = &v.campaign.items[0].waves.as_ref().unwrap().list;
    v.waves[0].iter().zip(ws).map(|(c, w)| ((c.available, c.locked, c.sold), w.net())).collect()
}

#[tokio::test]
async fn a_waves_quota_sells_out_while_the_next_waves_is_untouched() {
    let (app, w) = world(&[(meta("A", 2, None), &[50, 50])]);
    waved_sale(&app, Unsold::Return, &[(-100, 3600, 3), (3600, 7200, 5)]).await.unwrap();
    freeze(&app, &campaign_request("o1", "alice", 2)).await.unwrap();
    freeze(&app, &campaign_request("o2", "bob", 1)).await.unwrap();
    let late = freeze(&app, &campaign_request("o3", "carol", 1)).await;
    assert!(matches!(late, Err(FreezeError::QuotaExhausted(_))), "{late:?}");
    assert_eq!(waves_of(&app).await, vec![((0, 3, 0), 3), ((5, 0, 0), 5)]);
    assert_eq!(totals(&w, "A"), counts(97, 3, 0), "only what wave 1 sold left the SKU");
    assert_invariants(&w);
}

#[tokio::test]
async fn between_waves_a_checkout_is_not_started_and_after_the_last_ended() {
    let (app, w) = world(&[(meta("A", 2, None), &[50, 50])]);
    waved_sale(&app, Unsold::Return, &[(-900, -800, 3), (3600, 7200, 5)]).await.unwrap();
    let gap = freeze(&app, &campaign_request("o1", "alice", 1)).await;
    assert!(matches!(gap, Err(FreezeError::SaleNotStarted(_))), "{gap:?}");
    assert_eq!(waves_of(&app).await, vec![((3, 0, 0), 3), ((5, 0, 0), 5)], "nothing written");
    assert_invariants(&w);
}

#[tokio::test]
async fn an_ended_waves_remainder_rolls_into_the_next_exactly_once() {
    let (app, w) = world(&[(meta("A", 2, None), &[50, 50])]);
    waved_sale(&app, Unsold::Roll, &[(-900, -10, 4), (-10, 3600, 2), (3600, 7200, 1)]).await.unwrap();
    freeze(&app, &campaign_request("o1", "alice", 1)).await.unwrap();
    assert_eq!(camp::roll_waves(&app, &cid()).await.unwrap(), 4);
    assert_eq!(camp::roll_waves(&app, &cid()).await.unwrap(), 0, "idempotent: nothing left to roll");
    assert_eq!(waves_of(&app).await, vec![((0, 0, 0), 0), ((5, 1, 0), 6), ((1, 0, 0), 1)]);
    let v = camp::view(&app, &cid(), true).await.unwrap().unwrap();
    assert_eq!(v.campaign.items[0].quota, 7, "a roll keeps the item's quota");
    // the rolled units sell in wave 2
    freeze(&app, &campaign_request("o2", "bob", 5)).await.unwrap();
    assert!(matches!(freeze(&app, &campaign_request("o3", "carol", 1)).await, Err(FreezeError::QuotaExhausted(_))));
    assert_invariants(&w);
}

#[tokio::test]
async fn return_waves_keep_their_remainder_and_bad_waves_write_nothing() {
    let (app, w) = world(&[(meta("A", 2, None), &[50, 50])]);
    // overlapping waves: refused, and no campaign exists
    let bad = waved_sale(&app, Unsold::Roll, &[(-100, 100, 1), (50, 200, 1)]).await;
    assert!(matches!(bad, Err(camp::CampaignError::Invalid(_))), "{bad:?}");
    assert!(camp::view(&app, &cid(), true).await.unwrap().is_none());
    waved_sale(&app, Unsold::Return, &[(-900, -10, 4), (-10, 3600, 2)]).await.unwrap();
    assert_eq!(camp::roll_waves(&app, &cid()).await.unwrap(), 0);
    assert_eq!(waves_of(&app).await, vec![((4, 0, 0), 4), ((2, 0, 0), 2)]);
    assert_invariants(&w);
}

#[tokio::test]
async fn an_adjustment_of_a_waved_item_changes_the_wave_selling_now() {
    let (app, w) = world(&[(meta("A", 2, None), &[50, 50])]);
    waved_sale(&app, Unsold::Return, &[(-100, 3600, 3), (3600, 7200, 5)]).await.unwrap();
    assert!(camp::adjust(&app, &cid(), &sku("A"), "more", 2, "demand", None).await.unwrap());
    assert_eq!(waves_of(&app).await, vec![((5, 0, 0), 5), ((5, 0, 0), 5)]);
    let short = camp::adjust(&app, &cid(), &sku("A"), "less", -6, "oops", None).await;
    assert!(matches!(short, Err(camp::CampaignError::Insufficient(_))), "wave 2's units are not wave 1's: {short:?}");
    assert!(camp::adjust(&app, &cid(), &sku("A"), "less", -5, "none left", None).await.unwrap());
    assert_eq!(waves_of(&app).await, vec![((0, 0, 0), 0), ((5, 0, 0), 5)]);
    let v = camp::view(&app, &cid(), true).await.unwrap().unwrap();
    assert_eq!(v.campaign.items[0].quota, 5);
    assert_invariants(&w);
}
