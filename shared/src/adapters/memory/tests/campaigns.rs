//! Campaigns (flash sales): quota, window, pause and the pending cap.

use super::*;
use crate::domain::campaign::{CampaignItem, CampaignSpec};
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
