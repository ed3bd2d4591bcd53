//! A sold code's life after the sale (docs/code-pools.md, "Redemption", "Expiry"): the services
//! over the in-memory store.

use super::*;
use crate::config::Secret;
use crate::domain::codes::lifecycle::CodeState;
use crate::domain::codes::Keyring;
use crate::domain::model::{InventoryModel, Management};
use crate::service::after_sale::{apply, decide_refund, Caller, Change};
use crate::service::codes::redeem::{redeem, RedeemError};
use crate::service::codes::{self as pool, CodeError};
use crate::service::orders::{OrderError, StockRefusal};

async fn app_with_pool(shards: u16) -> (App, MemoryWorld) {
    let mut c = config();
    c.code_key = Secret::new(Keyring::generate_secret("t1").unwrap());
    let (app, w) = memory_app("test", c).unwrap();
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
    admin::put_sku(&app, &sku("CARD"), &spec, None).await.unwrap();
    (app, w)
}

/// A paid order of one code for `buyer`, its lock SOLD.
async fn sold(app: &App, buyer: &str) -> Order {
    let (o, _) = checkout(app, buyer, &format!("k-{buyer}"), &[("CARD", 1)]).await.unwrap();
    payments::apply(app, &notice(&o, &format!("p-{buyer}"))).await.unwrap();
    stock::confirm(app, &ReservationId::for_order(&o.id), OnReleased::Retake).await.unwrap();
    o
}

async fn shown(app: &App, buyer: &str, o: &Order) -> (String, CodeState) {
    let mut c = pool::reveal_codes(app, &user(buyer), &o.id).await.unwrap();
    assert_eq!(c.len(), 1);
    let c = c.remove(0);
    (c.code, c.state)
}

fn refused_as_redeemed(r: Result<Order, OrderError>) -> bool {
    matches!(r, Err(OrderError::Refused(StockRefusal::CodesRedeemed)))
}

#[tokio::test]
async fn a_shown_code_is_redeemed_once_and_its_order_is_never_refunded_by_anyone() {
    let (app, w) = app_with_pool(1).await;
    let codes = ["GIFT-AAAA-0001".to_owned(), "GIFT-BBBB-0002".to_owned()];
    pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
    let o = sold(&app, "ann").await;
    let code = codes[0].clone();
    // never shown: it cannot have been used
    assert!(matches!(redeem(&app, &o.id, &code).await, Err(RedeemError::NotRedeemable(_))));
    assert_eq!(shown(&app, "ann", &o).await, (code.clone(), CodeState::Valid { until_ms: None }));
    assert!(matches!(redeem(&app, &o.id, &codes[1]).await, Err(RedeemError::CodeNotFound)), "not this order's");
    assert!(matches!(redeem(&app, &OrderId::parse("nope").unwrap(), &code).await, Err(RedeemError::OrderNotFound)));
    assert!(matches!(redeem(&app, &o.id, " x").await, Err(RedeemError::BadCode(_))));
    let r = redeem(&app, &o.id, &code).await.unwrap();
    assert_eq!((r.sku.as_str(), r.masked.as_str()), ("CARD", "••••0001"));
    // once: a second redemption names the first
    match redeem(&app, &o.id, &code).await {
        Err(RedeemError::AlreadyRedeemed(at)) => assert_eq!(at, r.redeemed_at_ms),
        other => panic!("{other:?}"),
    }
    assert_eq!(shown(&app, "ann", &o).await.1, CodeState::Redeemed { at_ms: r.redeemed_at_ms });
    // never refunded: not by the buyer, not by an operator; nothing changes
    let before = order(&w, &o.id).await;
    assert!(refused_as_redeemed(apply(&app, Caller::Buyer(&user("ann")), &o.id, refund()).await));
    assert!(refused_as_redeemed(apply(&app, Caller::Admin, &o.id, refund()).await));
    let after = order(&w, &o.id).await;
    assert_eq!((after.status, after.version, after.refunds.len()), (before.status, before.version, 0));
    assert_invariants(&w);
}

fn refund() -> Change {
    Change::Refund { reason: "changed my mind".into() }
}

#[tokio::test]
async fn a_redemption_while_a_refund_waits_makes_the_approval_refuse_and_a_void_forbids_redemption() {
    let (app, w) = app_with_pool(1).await;
    let codes: Vec<String> = (0..2).map(|i| format!("GIFT-CODE-{i:04}")).collect();
    pool::upload(&app, &sku("CARD"), "b1", &codes, None).await.unwrap();
    // ann: shown, refund held for review, then redeemed: the approval is refused, a rejection works
    let ann = sold(&app, "ann").await;
    let (code, _) = shown(&app, "ann", &ann).await;
    let held = apply(&app, Caller::Buyer(&user("ann")), &ann.id, refund()).await.unwrap();
    assert_eq!(held.status, OrderStatus::RefundRequested);
    redeem(&app, &ann.id, &code).await.unwrap();
    assert!(refused_as_redeemed(decide_refund(&app, &ann.id, true, "ok", "admin-1", None).await));
    assert_eq!(order(&w, &ann.id).await.status, OrderStatus::RefundRequested, "the approval changed nothing");
    assert!(order(&w, &ann.id).await.refunds.is_empty());
    assert_eq!(decide_refund(&app, &ann.id, false, "used", "admin-1", None).await.unwrap().status, OrderStatus::Paid);
    // bob: shown, refund approved (voided): never redeemed afterwards
    let bob = sold(&app, "bob").await;
    let (code, _) = shown(&app, "bob", &bob).await;
    apply(&app, Caller::Buyer(&user("bob")), &bob.id, refund()).await.unwrap();
    assert_eq!(decide_refund(&app, &bob.id, true, "ok", "admin-1", None).await.unwrap().status, OrderStatus::Refunding);
    assert!(matches!(redeem(&app, &bob.id, &code).await, Err(RedeemError::Voided)));
    let lock = w.stock.reservations().into_iter().find(|r| r.id == ReservationId::for_order(&bob.id)).unwrap();
    assert_eq!(lock.code_fate, Some(crate::domain::reservation::CodeFate::Voided));
    // what stock-events does with a refunding order (the memory world runs no event flow)
    stock::restock(&app, &lock.id).await.unwrap();
    assert!(matches!(redeem(&app, &bob.id, &code).await, Err(RedeemError::Voided)), "after the restock too");
    assert_invariants(&w);
}

#[tokio::test]
async fn an_expired_code_is_shown_expired_never_redeemed_and_never_sold_to_the_next_buyer() {
    let (app, w) = app_with_pool(1).await;
    let soon = clock::now_ms() + 1_500;
    let first: Vec<String> = (0..2).map(|i| format!("SOON-CODE-{i:04}")).collect();
    let later: Vec<String> = (0..2).map(|i| format!("LATE-CODE-{i:04}")).collect();
    // an expire time in the past is refused before anything is written
    let past = pool::upload_expiring(&app, &sku("CARD"), "b0", &later, Some(clock::now_ms() - 1), None).await;
    assert!(matches!(past, Err(CodeError::BadExpiry(_))), "{past:?}");
    pool::upload_expiring(&app, &sku("CARD"), "b1", &first, Some(soon), None).await.unwrap();
    // the same batch id with another expire time is another batch
    let other = pool::upload_expiring(&app, &sku("CARD"), "b1", &first, Some(soon + 1), None).await;
    assert!(matches!(other, Err(CodeError::BatchReused)), "{other:?}");
    pool::upload(&app, &sku("CARD"), "b2", &later, None).await.unwrap();
    let ann = sold(&app, "ann").await;
    let (code, state) = shown(&app, "ann", &ann).await;
    assert_eq!((code.as_str(), state), (first[0].as_str(), CodeState::Valid { until_ms: Some(soon) }));
    tokio::time::sleep(std::time::Duration::from_millis(1_600)).await;
    assert_eq!(shown(&app, "ann", &ann).await.1, CodeState::Expired { at_ms: soon });
    assert!(matches!(redeem(&app, &ann.id, &code).await, Err(RedeemError::Expired(at)) if at == soon));
    // bob's checkout reaches the other expired code first: it is retired, and bob gets a valid one
    let bob = sold(&app, "bob").await;
    let (code, state) = shown(&app, "bob", &bob).await;
    assert_eq!((code.as_str(), state), (later[0].as_str(), CodeState::Valid { until_ms: None }));
    let s = pool::summary(&app, &sku("CARD")).await.unwrap();
    assert_eq!((s.uploaded, s.expired, s.available, s.locked, s.sold), (4, 1, 1, 0, 2));
    // an expired code never redeemed follows the shown rule: the buyer's refund waits for review
    let held = apply(&app, Caller::Buyer(&user("ann")), &ann.id, refund()).await.unwrap();
    assert_eq!(held.status, OrderStatus::RefundRequested);
    assert_invariants(&w);
}
