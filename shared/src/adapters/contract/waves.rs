//! Waves (docs/campaigns.md, "Waves"): each wave's quota shards carry the wave's own window, so
//! a freeze in an ended wave is refused by its write condition, an update of the campaign keeps
//! each wave's window on its shards, and a roll (a quota adjustment of pieces over two waves)
//! moves exactly the remainder or nothing.

use super::*;
use crate::domain::campaign::{Unsold, Wave, Waves};
use crate::ports::CampaignAdjustment;

pub async fn waves(store: &dyn StockStore, prefix: &str) {
    let k = sku(prefix, "W");
    stocked(store, &k, &[20]).await;
    let a = campaign_id(prefix, "waves");
    let now = crate::clock::now_s();
    let list = vec![
        Wave { starts_at: now - 7200, ends_at: now - 3600, quota: 3, rolled_in: 0, rolled_out: 0 },
        Wave { starts_at: now - 3600, ends_at: now + 3600, quota: 2, rolled_in: 0, rolled_out: 0 },
    ];
    let mut c = campaign(&a, &k, 5, None, (now - 7200, now + 3600));
    c.items[0].waves = Some(Waves { unsold: Unsold::Roll, list });
    assert!(write_campaign(store, &c, None).await, "create");
    assert_eq!(quota(store, &a, &k, 2).await, vec![(3, 0, 0), (2, 0, 0)], "one shard per wave, each its own quota");
    let sale = |name: &str, shard: u16| {
        reservation(rid(prefix, name), None, vec![on_campaign(line(&k, &[(0, 1)]), &a, &[(shard, 1)], false)])
    };
    let none = FreezeLimits::default();
    let refused = || Err(FreezeRejection::QuotaShort(vec![k.clone()]));
    assert_eq!(freeze(store, &sale("w1", 0), &none).await, refused(), "the ended wave's shard refuses");
    assert_eq!(freeze(store, &sale("w2", 1), &none).await, Ok(()), "the live wave's shard sells");
    // an update of the campaign (its name, its window) leaves each wave's window on its shards
    c = Campaign { name: "renamed".into(), version: 2, ..c };
    assert!(write_campaign(store, &c, Some(1)).await, "update");
    assert_eq!(freeze(store, &sale("w3", 0), &none).await, refused(), "still ended after an update");
    assert_eq!(quota(store, &a, &k, 2).await, vec![(3, 0, 0), (1, 1, 0)]);

    // the roll: minus the remainder on wave 0, plus on wave 1, with the record at its version
    let roll = |id: &str, pieces: Vec<(u16, i64)>| CampaignAdjustment {
        campaign_id: a.clone(),
        sku: k.clone(),
        adjustment_id: id.into(),
        delta: 0,
        reason: "roll".into(),
        actor: None,
        at_ms: now * 1000,
        pieces,
    };
    let next = Campaign { version: 3, ..c.clone() };
    let stale = store.adjust_campaign(&roll("roll:x:v1", vec![(0, -3), (1, 3)]), &next, 1).await.unwrap();
    assert_eq!(stale, Err(AdjustRejection::Conflict), "a stale version rolls nothing");
    let more = store.adjust_campaign(&roll("roll:x:v2a", vec![(0, -4), (1, 4)]), &next, 2).await.unwrap();
    assert_eq!(more, Err(AdjustRejection::ShardShort), "more than the remainder rolls nothing");
    assert_eq!(quota(store, &a, &k, 2).await, vec![(3, 0, 0), (1, 1, 0)], "nothing moved");
    let done = store.adjust_campaign(&roll("roll:x:v2", vec![(0, -3), (1, 3)]), &next, 2).await.unwrap();
    assert_eq!(done, Ok(()), "the remainder rolls");
    assert_eq!(quota(store, &a, &k, 2).await, vec![(0, 0, 0), (4, 1, 0)], "exactly the remainder moved");
    let again = store.adjust_campaign(&roll("roll:x:v2", vec![(0, -3), (1, 3)]), &next, 2).await.unwrap();
    assert_eq!(again, Err(AdjustRejection::Duplicate { delta: 0 }), "a replay of the roll moves nothing");
    assert_eq!(quota(store, &a, &k, 2).await, vec![(0, 0, 0), (4, 1, 0)]);
}
