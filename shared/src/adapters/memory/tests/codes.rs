//! Code pools (docs/code-pools.md).

use super::*;
use crate::config::Secret;
use crate::domain::codes::Keyring;
use crate::domain::model::{InventoryModel, Management};
use crate::service::codes as pool;

fn app_with_pool(max_pending: u32) -> (App, MemoryWorld) {
    let mut c = config();
    c.code_key = Secret::new(Keyring::generate_secret("t1").unwrap());
    c.max_pending_per_user = max_pending;
    let (app, w) = memory_app("test", c).unwrap();
    (app, w)
}

async fn put_pool(app: &App, s: &str, shards: u16) {
    let spec = SkuSpec {
        controls: Default::default(),
        name: "card".into(),
        price: 100,
        currency: eur(),
        shards,
        per_user_limit: None,
        model: InventoryModel { management: Management::CodePool, ..Default::default() },
        bundle: Vec::new(),
        supplier: None,
    };
    admin::put_sku(app, &sku(s), &spec, None).await.unwrap();
}

fn held(w: &MemoryWorld) -> Vec<(u16, u64)> {
    w.stock
        .reservations()
        .iter()
        .filter(|r| r.status != LockStatus::Released)
        .flat_map(|r| r.lines.iter().flat_map(|l| l.codes.clone().unwrap_or_default()))
        .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (g.shard, p)))
        .collect()
}

#[tokio::test]
async fn a_pool_hands_each_code_out_once_takes_released_codes_back_and_never_sells_short() {
    let (app, w) = app_with_pool(0);
    put_pool(&app, "CARD", 2).await;
    let codes: Vec<String> = (0..5).map(|i| format!("CODE-{i}-XYZ")).collect();
    let (r, new) = pool::upload(&app, &sku("CARD"), "b1", &codes, Some("ops")).await.unwrap();
    assert!(new && r.added == 5 && r.duplicates == 0);
    let (again, new) = pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
    assert!(!new && again == r, "a replay answers the first result");
    assert!(matches!(
        pool::upload(&app, &sku("CARD"), "b1", &codes[..2], None).await,
        Err(pool::CodeError::BatchReused)
    ));
    let (d, _) = pool::upload(&app, &sku("CARD"), "b2", &[codes[0].clone(), "NEW-1".into(), "NEW-1".into()], None)
        .await
        .unwrap();
    assert_eq!((d.added, d.duplicates), (1, 2));
    // six codes: 2 + 4 freeze, a seventh is refused, nothing claimed by the refusal
    let a = freeze(&app, &freeze_request("o1", "a", &[("CARD", 2)])).await.unwrap();
    assert!(matches!(a, Frozen::Created(_)));
    freeze(&app, &freeze_request("o2", "b", &[("CARD", 4)])).await.unwrap();
    assert!(matches!(
        freeze(&app, &freeze_request("o3", "c", &[("CARD", 1)])).await,
        Err(FreezeError::Insufficient(_))
    ));
    let h = held(&w);
    assert_eq!(h.len(), 6);
    assert_eq!(h.iter().collect::<std::collections::HashSet<_>>().len(), 6, "no position twice");
    assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
    // a release puts o1's codes back at the tails; o3 then gets one of them
    stock::release(&app, &ReservationId::for_order(&OrderId::parse("o1").unwrap())).await.unwrap();
    assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
    freeze(&app, &freeze_request("o3", "c", &[("CARD", 1)])).await.unwrap();
    let s = pool::summary(&app, &sku("CARD")).await.unwrap();
    assert_eq!((s.uploaded, s.available, s.locked, s.sold), (6, 1, 5, 0));
    assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
    // codes cannot be adjusted, and the shard count is fixed
    assert!(matches!(
        admin::adjust(&app, &sku("CARD"), "a1", 5, "more", None, &[]).await,
        Err(AdminError::NotAdjustable(_))
    ));
}

#[tokio::test]
async fn a_refused_freeze_gives_its_claimed_codes_back_and_reconcile_returns_a_dead_checkouts() {
    let (app, w) = app_with_pool(1);
    put_pool(&app, "CARD", 1).await;
    let codes: Vec<String> = (0..4).map(|i| format!("CODE-{i}-ABC")).collect();
    pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
    freeze(&app, &freeze_request("o1", "a", &[("CARD", 1)])).await.unwrap();
    // the buyer's pending cap refuses the second checkout after its codes were claimed
    assert!(matches!(freeze(&app, &freeze_request("o2", "a", &[("CARD", 2)])).await, Err(FreezeError::TooManyPending)));
    assert!(check_all(&w.snapshot(300)).is_empty(), "given back: {:?}", check_all(&w.snapshot(300)));
    assert_eq!(w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].available(), 3);
    // a checkout that died after its claim: reconcile gives the codes back, once
    let head = w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].head;
    assert_eq!(w.stock.claim_codes(&sku("CARD"), 0, 2, head).await.unwrap(), Some(head));
    assert!(!check_all(&w.snapshot(300)).is_empty(), "claimed and unbound codes break the identity");
    let m = app.catalogue.get_skus(&[sku("CARD")]).await.unwrap().remove(&sku("CARD")).unwrap();
    assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 0).await.unwrap(), 2);
    assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 0).await.unwrap(), 0);
    assert!(check_all(&w.snapshot(300)).is_empty(), "{:?}", check_all(&w.snapshot(300)));
    // a young claim is left alone (its checkout may still bind it)
    let head = w.stock.read_rings(&sku("CARD"), 1).await.unwrap()[0].head;
    w.stock.claim_codes(&sku("CARD"), 0, 1, head).await.unwrap();
    assert_eq!(pool::repair_orphans(&app, &m, clock::now_ms(), 60_000).await.unwrap(), 0);
}
