//! The sales switch judged in the freeze's own transaction (docs/operations.md, "Sales
//! switch"): a Lambda that has not seen the switch within `switch_cache_ms` does not read it
//! before the checkout; the freeze checks it, and a closed one refuses with nothing written.

use super::*;
use crate::domain::sale::{SalesMode, SalesSwitch, WriteKind};
use crate::service::sale;

fn switch(mode: SalesMode) -> SalesSwitch {
    SalesSwitch { mode, reason: "test".into(), since_ms: clock::now_ms(), by: None }
}

/// A world whose Lambda keeps what it learns of the switch `cache_ms`.
fn world_caching(cache_ms: i64, skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld) {
    world_with(Config { switch_cache_ms: cache_ms, ..config() }, skus)
}

#[tokio::test]
async fn a_checkout_the_cache_cannot_judge_is_refused_by_its_freeze_when_closed_and_writes_nothing() {
    // nothing is ever cached: every checkout's freeze checks the switch
    let (app, w) = world_caching(0, &[(meta("A", 2, None), &[5, 5])]);
    let (first, _) = checkout(&app, "alice", "k1", &[("A", 1)]).await.unwrap();
    app.sale.put_sales_switch(&switch(SalesMode::Closed)).await.unwrap();
    assert!(sale::guard(&app, WriteKind::Checkout).await.unwrap().is_ok(), "the door leaves it to the freeze");
    let refused = checkout(&app, "bob", "k1", &[("A", 2)]).await;
    match refused {
        Err(CreateError::Freeze(FreezeError::SalesClosed(s))) => assert_eq!(s.mode, SalesMode::Closed),
        other => panic!("{other:?}"),
    }
    assert_eq!(totals(&w, "A"), counts(9, 1, 0), "nothing frozen");
    assert!(w.orders.records().iter().all(|(id, _)| id == &first.id), "no order written");
    // a committed checkout's retry is still answered its order; a new body under its key is not
    let (again, replayed) = checkout(&app, "alice", "k1", &[("A", 1)]).await.unwrap();
    assert!(replayed && again.id == first.id);
    let other_body = checkout(&app, "alice", "k1", &[("A", 3)]).await;
    assert!(matches!(other_body, Err(CreateError::Freeze(FreezeError::SalesClosed(_)))), "{other_body:?}");
    // CLOSED lets other writes through, READ_ONLY refuses checkouts the same way
    app.sale.put_sales_switch(&switch(SalesMode::ReadOnly)).await.unwrap();
    assert!(checkout(&app, "carl", "k1", &[("A", 1)]).await.is_err());
    // open again: sells, with nothing held over from the refusals
    app.sale.put_sales_switch(&switch(SalesMode::Open)).await.unwrap();
    checkout(&app, "bob", "k1", &[("A", 2)]).await.unwrap();
    assert_eq!(totals(&w, "A"), counts(7, 3, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn what_a_lambda_learnt_of_the_switch_within_its_cache_time_spares_the_freeze_its_check() {
    let (app, w) = world_caching(60_000, &[(meta("A", 1, None), &[5])]);
    assert!(!sale::checkout_known(&app), "a fresh Lambda knows nothing");
    checkout(&app, "ann", "k1", &[("A", 1)]).await.unwrap();
    assert!(sale::checkout_known(&app), "its freeze found the switch OPEN");
    // closed elsewhere: within its cache time this Lambda still sells (the switch's documented
    // bound), and its freezes carry no check
    app.sale.put_sales_switch(&switch(SalesMode::Closed)).await.unwrap();
    checkout(&app, "bob", "k1", &[("A", 1)]).await.unwrap();
    assert_eq!(totals(&w, "A"), counts(3, 2, 0));
    // another Lambda (a fresh cache) over the same store finds it closed in its freeze
    let mut other = memory_app("test", Config { switch_cache_ms: 60_000, ..config() }).unwrap().0;
    other.set_stock(w.stock.clone());
    other.orders = app.orders.clone();
    other.sale = app.sale.clone();
    let refused = checkout(&other, "cid", "k1", &[("A", 1)]).await;
    assert!(matches!(refused, Err(CreateError::Freeze(FreezeError::SalesClosed(_)))), "{refused:?}");
    // and the refusal read it: its door now refuses from the cache, before any freeze
    assert!(sale::guard(&other, WriteKind::Checkout).await.unwrap().is_err());
    assert_eq!(totals(&w, "A"), counts(3, 2, 0));
    assert_invariants(&w);
}
