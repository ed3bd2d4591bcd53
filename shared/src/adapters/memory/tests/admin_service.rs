//! Admin: adjustments and re-sharding.

use super::*;

#[tokio::test]
async fn an_adjustment_applies_once_per_id_and_a_shard_count_change_keeps_every_unit() {
    let (app, w) = world(&[]);
    let spec = SkuSpec {
        controls: Default::default(),
        name: "Hat".into(),
        price: 900,
        currency: eur(),
        shards: 4,
        per_user_limit: None,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    };
    let (_, created) = admin::put_sku(&app, &sku("H"), &spec, None).await.unwrap();
    assert!(created);
    assert!(admin::adjust(&app, &sku("H"), "a1", 10, "delivery", Some("admin-1"), &[]).await.unwrap());
    assert_eq!(w.stock.shards(&sku("H")).iter().map(|c| c.available).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
    assert!(!admin::adjust(&app, &sku("H"), "a1", 10, "delivery", Some("admin-1"), &[]).await.unwrap(), "a replay");
    assert!(matches!(
        admin::adjust(&app, &sku("H"), "a1", 5, "other", Some("admin-1"), &[]).await,
        Err(AdminError::AdjustmentReused)
    ));
    assert!(admin::adjust(&app, &sku("H"), "a2", -4, "damaged", Some("admin-1"), &[]).await.unwrap());
    assert!(matches!(
        admin::adjust(&app, &sku("H"), "a3", -7, "too many", Some("admin-1"), &[]).await,
        Err(AdminError::Insufficient(7))
    ));

    // the journal's cause rides on the shards the adjustment wrote, with the admin's sub
    assert_eq!(
        w.stock.cause_of("SKU#H#0"),
        Some(crate::domain::journal::Cause::adjustment("a2", Some("admin-1"), "damaged"))
    );

    let (m, created) = admin::put_sku(&app, &sku("H"), &SkuSpec { shards: 2, ..spec }, Some("admin-2")).await.unwrap();
    assert!(!created);
    let c = w.stock.cause_of("SKU#H#2").unwrap();
    assert_eq!((c.reference.as_str(), c.actor.as_str(), c.why.as_str()), ("rebalance-v4", "admin-2", "rebalance"));
    assert_eq!((m.shards, m.slots, m.stocked), (2, 4, 6));
    assert_eq!(w.stock.shards(&sku("H")).iter().map(|c| c.available).collect::<Vec<_>>(), vec![3, 3, 0, 0]);
    let v = admin::view(&app, &sku("H")).await.unwrap().unwrap();
    assert_eq!(v.totals, counts(6, 0, 0));
    assert_invariants(&w);
}
