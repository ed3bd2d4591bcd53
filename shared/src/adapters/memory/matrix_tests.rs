//! The compatibility matrix walked through the real services (docs/inventory-models.md,
//! "Kinds and their lifecycle"): for every pair of kinds, two SKUs are made through the admin
//! service and then ordered together, held through `/reservations`, paused and ordered again,
//! paid (confirmed) and refunded (restocked) — each step answered as the kinds' rules say, and
//! the invariants clean after every pair. Campaign admission is walked by
//! `domain::kind::tests`; the pay-time shortfall, reveal and supplier flows have their own tests.

use super::*;
use crate::app::memory_app;
use crate::app::App;
use crate::config::Config;
use crate::config::Secret;
use crate::domain::codes::Keyring;
use crate::domain::invariants::check_all;
use crate::domain::kind::{Kind, PauseBy};
use crate::domain::model::{BundleChild, Day, Deduct, InventoryModel, Management, Unit};
use crate::domain::reservation::{LockStatus, ReservationKind};
use crate::domain::supplier::SupplierConfig;
use crate::domain::{Currency, OrderId, Quantity, ReservationId, Sku, UserId};
use crate::ports::{CodePools, Counter, Locks};
use crate::service::admin::{self, SkuSpec};
use crate::service::orders;
use crate::service::stock::{self, FreezeError, FreezeRequest, Frozen, LineRequest, OnReleased};

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn model_of(kind: Kind) -> InventoryModel {
    let m = |management, unit, deduct| InventoryModel { management, unit, deduct, ..Default::default() };
    match kind {
        Kind::Quantity => InventoryModel::default(),
        Kind::Calendar => m(Management::Quantity, Unit::Calendar, Deduct::AtOrder),
        Kind::Bundle => m(Management::Quantity, Unit::Bundle, Deduct::AtOrder),
        Kind::PayTime => m(Management::Quantity, Unit::Single, Deduct::AtPayment),
        Kind::AtShipment => m(Management::Quantity, Unit::Single, Deduct::AtShipment),
        Kind::Unlimited => m(Management::Unlimited, Unit::Single, Deduct::AtOrder),
        Kind::CodePool => m(Management::CodePool, Unit::Single, Deduct::AtOrder),
        Kind::Supplier => m(Management::Supplier, Unit::Single, Deduct::AtOrder),
        Kind::SupplierCodes => m(Management::Supplier, Unit::Code, Deduct::AtOrder),
        Kind::Warehouse => m(Management::Quantity, Unit::Warehouse, Deduct::AtOrder),
        Kind::Backorder => InventoryModel { oversell: crate::domain::model::Oversell::Backorder, ..Default::default() },
    }
}

fn tomorrow() -> Day {
    Day::of_epoch_s(crate::clock::now_s() + 86_400)
}

/// A SKU of `kind` named `name`, with 10 units (codes, dates, children) and a per-user limit
/// of 5, made through the admin service as an operator would.
async fn make(app: &App, name: &str, kind: Kind) {
    let s = sku(name);
    let mut bundle = Vec::new();
    if kind == Kind::Bundle {
        let child = format!("{name}-CHILD");
        make_plain(app, &child).await;
        bundle.push(BundleChild { sku: sku(&child), quantity: 1 });
    }
    let spec = SkuSpec {
        controls: Default::default(),
        name: name.into(),
        price: 100,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        per_user_limit: Some(5),
        model: model_of(kind),
        bundle,
        supplier: kind.rules().books_supplier.then(SupplierConfig::simulated),
    };
    // a warehoused SKU: two warehouses of 5, split (docs/inventory-models.md, "Warehouses")
    let stores = (kind == Kind::Warehouse).then(|| crate::domain::warehouse::Warehouses {
        list: ["SH", "BJ"].map(|w| crate::domain::warehouse::Warehouse::parse(w).unwrap()).to_vec(),
        allocation: crate::domain::warehouse::Allocation::Split,
    });
    admin::put_sku_with(app, &s, &spec, stores.as_ref(), Some("ops")).await.unwrap();
    match kind {
        Kind::Warehouse => {
            for w in stores.iter().flat_map(|x| x.list.iter()) {
                admin::adjust_warehouse(app, &s, w, "init", 5, "stock", Some("ops")).await.unwrap();
            }
        }
        Kind::Quantity | Kind::PayTime | Kind::AtShipment => {
            admin::adjust(app, &s, "init", 10, "stock", Some("ops"), &[]).await.unwrap();
        }
        Kind::Calendar => {
            admin::adjust(app, &s, "init", 10, "stock", Some("ops"), &[tomorrow()]).await.unwrap();
        }
        Kind::CodePool => {
            let codes: Vec<String> = (0..10).map(|i| format!("{name}-CODE-{i:04}")).collect();
            crate::service::codes::upload(app, &s, "b1", &codes, Some("ops")).await.unwrap();
        }
        // a BACKORDER SKU starts with nothing: every order of it is short, backordered
        Kind::Bundle | Kind::Unlimited | Kind::Supplier | Kind::SupplierCodes | Kind::Backorder => {}
    }
}

async fn make_plain(app: &App, name: &str) {
    let spec = SkuSpec {
        controls: Default::default(),
        name: name.into(),
        price: 10,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        per_user_limit: None,
        model: InventoryModel::default(),
        bundle: Vec::new(),
        supplier: None,
    };
    admin::put_sku(app, &sku(name), &spec, Some("ops")).await.unwrap();
    admin::adjust(app, &sku(name), "init", 10, "stock", Some("ops"), &[]).await.unwrap();
}

fn line(name: &str, kind: Kind) -> LineRequest {
    let mut l = LineRequest::plain(sku(name), Quantity::new(1).unwrap());
    if kind == Kind::Calendar {
        l.dates = vec![tomorrow()];
    }
    l
}

fn request(id: &str, holder: ReservationKind, buyer: &str, lines: Vec<LineRequest>) -> FreezeRequest {
    let order = OrderId::parse(id).unwrap();
    FreezeRequest {
        id: match holder {
            ReservationKind::Order => ReservationId::for_order(&order),
            ReservationKind::External => ReservationId::external(&UserId::parse("partner").unwrap(), &order),
        },
        kind: holder,
        user: Some(UserId::parse(buyer).unwrap()),
        request_hash: orders::request_hash(&lines),
        lines,
        expires_at: crate::clock::now_s() + 900,
        admission: None,
    }
}

async fn freeze(app: &App, req: &FreezeRequest) -> Result<Frozen, FreezeError> {
    let skus: Vec<Sku> = req.lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await?;
    stock::freeze(app, req, &metas).await
}

fn clean(w: &MemoryWorld, what: &str) {
    let mut v = check_all(&w.snapshot(300));
    v.extend(crate::domain::invariants::check_backlogs(&w.stock.backlogs(), &w.stock.reservations()));
    assert!(v.is_empty(), "{what}: {v:#?}");
}

#[tokio::test]
async fn every_pair_of_kinds_is_ordered_reserved_paused_paid_and_refunded_as_the_matrix_says() {
    let c = config();
    for (i, a) in Kind::ALL.into_iter().enumerate() {
        for b in Kind::ALL.into_iter().skip(i) {
            let (app, w) = memory_app("test", c.clone()).unwrap();
            let pair = format!("{a} × {b}");
            make(&app, "A", a).await;
            make(&app, "B", b).await;
            let both = || vec![line("A", a), line("B", b)];
            let together = crate::domain::kind::may_share_an_order(a, b);

            // /reservations: both kinds must be holdable by another system, and together
            let ext = freeze(&app, &request("x1", ReservationKind::External, "u0", both())).await;
            let ext_ok = together && a.rules().external && b.rules().external;
            assert_eq!(ext.is_ok(), ext_ok, "{pair}: reservation {ext:?}");
            if !ext_ok {
                assert!(matches!(ext, Err(FreezeError::Admission(_))), "{pair}: {ext:?}");
            }

            // an order of both
            let before = w.stock.reservations().len();
            let o = freeze(&app, &request("o1", ReservationKind::Order, "u1", both())).await;
            assert_eq!(o.is_ok(), together, "{pair}: order {o:?}");
            if !together {
                assert!(matches!(o, Err(FreezeError::Admission(_))), "{pair}: {o:?}");
                assert_eq!(w.stock.reservations().len(), before, "{pair}: a refused mix wrote a lock");
                clean(&w, &pair);
                continue;
            }

            // a stop-sale of A stops the pair (where A may be paused at all)
            let paused = admin::set_paused(&app, &sku("A"), true).await;
            assert_eq!(paused.is_ok(), a.rules().pause != PauseBy::Cells, "{pair}: pause {paused:?}");
            if paused.is_ok() {
                let p = freeze(&app, &request("o2", ReservationKind::Order, "u2", both())).await;
                assert!(matches!(p, Err(FreezeError::SalePaused(ref s)) if s == &sku("A")), "{pair}: paused {p:?}");
                admin::set_paused(&app, &sku("A"), false).await.unwrap();
            }

            // paid: the confirm sells both lines — or, where one is taken at shipment, holds
            // both until the shipment takes them
            let rid = ReservationId::for_order(&OrderId::parse("o1").unwrap());
            stock::confirm(&app, &rid, OnReleased::Retake).await.unwrap();
            let held = a.rules().takes_at_shipment() || b.rules().takes_at_shipment();
            let status = || async { w.stock.get_reservation(&rid).await.unwrap().unwrap().status };
            assert_eq!(status().await, if held { LockStatus::Frozen } else { LockStatus::Sold }, "{pair} paid");
            if held {
                clean(&w, &format!("{pair} paid, held"));
                stock::take_at_shipment(&app, &rid).await.unwrap();
                assert_eq!(status().await, LockStatus::Sold, "{pair} shipped");
            }
            clean(&w, &format!("{pair} sold"));

            // refunded before delivery: the units go back, the allowance only where the kind says
            stock::restock(&app, &rid).await.unwrap();
            let u1 = UserId::parse("u1").unwrap();
            let held =
                w.stock.read_counters(&[Counter::Limit(sku("A"), u1.clone()), Counter::Limit(sku("B"), u1)]).await;
            let held = held.unwrap();
            for (name, kind) in [("A", a), ("B", b)] {
                let n = held.iter().find(|(k, _)| matches!(k, Counter::Limit(s, _) if s.as_str() == name));
                let n = n.map_or(0, |(_, n)| *n);
                let want = if kind.rules().allowance_back { 0 } else { 1 };
                assert_eq!(n, want, "{pair}: allowance of {name} ({kind}) after a refund");
            }
            clean(&w, &format!("{pair} refunded"));
        }
    }
}

// ---------- single findings of the second reviews, on the memory ports ----------

fn config() -> Config {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.soldout_cache_ms = 0;
    c.sku_cache_ms = 0;
    c.code_key = Secret::new(Keyring::generate_secret("t1").unwrap());
    c
}

fn rid(order: &str) -> ReservationId {
    ReservationId::for_order(&OrderId::parse(order).unwrap())
}

/// Review protocol-2 #11: the oversell decision is fenced by the lock's state. The mark needs a
/// RELEASED lock, and a marked lock is never retaken — a second confirm racing the first can
/// neither sell the units nor leave a refunded order SOLD.
#[tokio::test]
async fn an_oversell_mark_needs_a_released_lock_and_a_marked_lock_is_never_retaken() {
    let (app, w) = memory_app("test", config()).unwrap();
    make(&app, "A", Kind::Quantity).await;
    let one = |o: &str, u: &str| request(o, ReservationKind::Order, u, vec![line("A", Kind::Quantity)]);
    freeze(&app, &one("o1", "u1")).await.unwrap();
    stock::release(&app, &rid("o1")).await.unwrap();
    let released = w.stock.get_reservation(&rid("o1")).await.unwrap().unwrap();
    assert!(w.stock.mark_oversold(&released).await.unwrap(), "a released lock is marked");
    assert!(!w.stock.mark_oversold(&released).await.unwrap(), "once");
    // the units are there, yet the marked lock is not taken again: the decision stands
    assert!(matches!(w.stock.retake(&released).await.unwrap(), Err(crate::ports::MoveRejection::StatusChanged)));
    assert!(matches!(stock::confirm(&app, &rid("o1"), OnReleased::Retake).await, Ok(stock::LockChange::Oversold(_))));
    // a SOLD lock is never marked
    freeze(&app, &one("o2", "u2")).await.unwrap();
    stock::confirm(&app, &rid("o2"), OnReleased::Retake).await.unwrap();
    let sold = w.stock.get_reservation(&rid("o2")).await.unwrap().unwrap();
    assert!(!w.stock.mark_oversold(&sold).await.unwrap());
}

/// Review security-2 M4: a buyer at the pending cap (or a limit) is refused before a code is
/// claimed, so fresh Idempotency-Keys cannot churn the pool.
#[tokio::test]
async fn a_buyer_at_the_pending_cap_claims_no_code() {
    let mut c = config();
    c.max_pending_per_user = 1;
    let (app, w) = memory_app("test", c).unwrap();
    make(&app, "G", Kind::CodePool).await;
    let one = |o: &str| request(o, ReservationKind::Order, "u1", vec![line("G", Kind::CodePool)]);
    freeze(&app, &one("o1")).await.unwrap();
    let heads = || async { w.stock.read_rings(&sku("G"), 1).await.unwrap().iter().map(|g| g.head).sum::<u64>() };
    let before = heads().await;
    for i in 2..6 {
        let r = freeze(&app, &one(&format!("o{i}"))).await;
        assert!(matches!(r, Err(FreezeError::TooManyPending)), "{r:?}");
    }
    assert_eq!(heads().await, before, "a refused buyer claimed codes");
    clean(&w, "pending cap");
}

/// Review security-2 L2: `OversellDetected` is a claim; only a lock marked oversold makes it a
/// refund.
#[tokio::test]
async fn an_oversell_event_for_a_lock_not_marked_refunds_nothing() {
    let (app, _w) = memory_app("test", config()).unwrap();
    make(&app, "A", Kind::Quantity).await;
    let key = crate::domain::IdempotencyKey::parse("k1").unwrap();
    let (o, _) =
        orders::create(&app, &UserId::parse("u1").unwrap(), &key, vec![line("A", Kind::Quantity)]).await.unwrap();
    let n = crate::service::payments::PaymentNotice {
        payment_id: "p1".into(),
        provider: crate::domain::order::Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    crate::service::payments::apply(&app, &n).await.unwrap();
    assert!(
        !crate::service::refunds::request_for_oversell(&app, &o.id).await.unwrap(),
        "a forged claim refunds nothing"
    );
    let stored = match app.orders.get(&o.id).await.unwrap() {
        Some(crate::domain::order::OrderRecord::Order(o)) => o,
        other => panic!("{other:?}"),
    };
    assert!(stored.refunds.is_empty());
}

/// A code order of buyer `u1`, paid and its lock SOLD.
async fn sold_code_order() -> (App, UserId, crate::domain::order::Order) {
    let (app, _w) = memory_app("test", config()).unwrap();
    make(&app, "C", Kind::CodePool).await;
    let buyer = UserId::parse("u1").unwrap();
    let key = crate::domain::IdempotencyKey::parse("k1").unwrap();
    let (o, _) = orders::create(&app, &buyer, &key, vec![line("C", Kind::CodePool)]).await.unwrap();
    let n = crate::service::payments::PaymentNotice {
        payment_id: "p1".into(),
        provider: crate::domain::order::Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    crate::service::payments::apply(&app, &n).await.unwrap();
    stock::confirm(&app, &ReservationId::for_order(&o.id), OnReleased::Retake).await.unwrap();
    (app, buyer, o)
}

/// Found by the simulator (docs/simulator.md, "Findings", F3): an operator's refund of a code
/// order recorded no fate, so the buyer could still be shown the codes of an order whose money
/// went back. The refund now withdraws them, whoever asks for it.
#[tokio::test]
async fn an_operators_refund_withdraws_the_codes_so_the_buyer_is_never_shown_them() {
    let (app, buyer, o) = sold_code_order().await;
    let refund = crate::service::after_sale::Change::Refund { reason: "ops".into() };
    crate::service::after_sale::apply(&app, crate::service::after_sale::Caller::Admin, &o.id, refund).await.unwrap();
    let shown = crate::service::codes::reveal(&app, &buyer, &o.id).await;
    assert!(matches!(shown, Err(crate::service::codes::CodeError::CodesWithdrawn)), "{shown:?}");
}

/// An operator may still refund codes the buyer has seen (a buyer's refund waits for review).
#[tokio::test]
async fn an_operator_may_refund_codes_already_shown_and_they_stay_shown() {
    let (app, buyer, o) = sold_code_order().await;
    assert_eq!(crate::service::codes::reveal(&app, &buyer, &o.id).await.unwrap().len(), 1);
    use crate::service::after_sale::{apply, Caller, Change};
    let o2 = apply(&app, Caller::Admin, &o.id, Change::Refund { reason: "ops".into() }).await.unwrap();
    assert_eq!(o2.status, crate::domain::order::OrderStatus::Refunding);
    assert_eq!(crate::service::codes::reveal(&app, &buyer, &o.id).await.unwrap().len(), 1);
}

/// A buyer's refund of codes already shown waits for an admin (docs/payments.md, "Refund
/// review"): asking again changes nothing; a rejection puts the order back to PAID with its
/// codes still shown; an approval refunds once and voids the codes (never shown again); the
/// decision is recorded with its actor and repeats answer the same.
#[tokio::test]
async fn a_buyers_refund_of_shown_codes_waits_for_review_and_an_approval_voids_them() {
    use crate::domain::order::OrderStatus::{Paid, RefundRequested, Refunding};
    use crate::service::after_sale::{apply, decide_refund, Caller, Change};
    use crate::service::codes::{reveal, CodeError};
    let (app, buyer, o) = sold_code_order().await;
    assert_eq!(reveal(&app, &buyer, &o.id).await.unwrap().len(), 1);
    let ask = || apply(&app, Caller::Buyer(&buyer), &o.id, Change::Refund { reason: "b".into() });
    let held = ask().await.unwrap();
    assert_eq!(held.status, RefundRequested);
    assert_eq!(held.review.as_ref().map(|r| r.because.as_str()), Some("codes_revealed"));
    assert!(held.refunds.is_empty(), "no money moves before the decision");
    assert_eq!(ask().await.unwrap().version, held.version, "asking again changes nothing");
    let rejected = decide_refund(&app, &o.id, false, "used", "admin-1", None).await.unwrap();
    assert_eq!(rejected.status, Paid);
    assert_eq!(rejected.review.as_ref().and_then(|r| r.decided_by.as_deref()), Some("admin-1"));
    assert_eq!(reveal(&app, &buyer, &o.id).await.unwrap().len(), 1, "still the buyer's");
    assert!(decide_refund(&app, &o.id, true, "late", "admin-1", None).await.is_err(), "nothing waits now");
    assert_eq!(ask().await.unwrap().status, RefundRequested);
    let approved = decide_refund(&app, &o.id, true, "goodwill", "admin-2", None).await.unwrap();
    assert_eq!(approved.status, Refunding);
    assert_eq!(approved.refunds.len(), 1, "refunded once");
    let again = decide_refund(&app, &o.id, true, "goodwill", "admin-2", None).await.unwrap();
    assert_eq!((again.version, again.refunds.len()), (approved.version, 1), "a repeat answers the same");
    assert!(matches!(reveal(&app, &buyer, &o.id).await, Err(CodeError::CodesVoided)));
}
