//! Codes issued by the supplier at payment (docs/suppliers.md, "Codes issued by the supplier"):
//! the services over the in-memory store and the in-memory supplier.

use super::*;
use crate::adapters::supplier::MemorySupplier;
use crate::config::Secret;
use crate::domain::codes::Keyring;
use crate::domain::model::{InventoryModel, Management, Unit};
use crate::domain::order::codes::{self as issue, OrderCodes};
use crate::domain::supplier::{BookingStatus, SupplierConfig};
use crate::ports::Message;
use crate::service::codes::supplier::{self as sc, IssueOutcome, ReissueError};
use crate::service::codes::{self as pool, CodeError};
use crate::service::supplier::{self, PollOutcome};
use std::sync::Arc;

async fn app_with(skus: &[(&str, Unit)]) -> (App, MemoryWorld, Arc<MemorySupplier>) {
    let mut c = config();
    c.code_key = Secret::new(Keyring::generate_secret("t1").unwrap());
    c.supplier_quote_cache_ms = 0;
    let (app, w) = memory_app("test", c).unwrap();
    let sup = Arc::new(MemorySupplier::new());
    let app = app.with_supplier(sup.clone());
    for (s, unit) in skus {
        let spec = SkuSpec {
            controls: Default::default(),
            name: "gift card".into(),
            price: 2500,
            currency: eur(),
            shards: 1,
            per_user_limit: None,
            model: InventoryModel { management: Management::Supplier, unit: *unit, ..Default::default() },
            bundle: Vec::new(),
            supplier: Some(SupplierConfig::simulated()),
        };
        admin::put_sku(&app, &sku(s), &spec, None).await.unwrap();
    }
    (app, w, sup)
}

/// An order of `l` by `buyer`, its bookings confirmed (payable), not paid.
async fn payable(app: &App, sup: &MemorySupplier, buyer: &str, l: &[(&str, u32)]) -> Order {
    let (o, _) = checkout(app, buyer, &format!("k-{buyer}"), l).await.unwrap();
    sup.set_all(BookingStatus::Confirmed);
    assert_eq!(supplier::poll(app, &o.id, 1, 0).await.unwrap(), PollOutcome::Confirmed);
    o
}

async fn pay(app: &App, w: &MemoryWorld, o: &Order) -> Order {
    assert_eq!(payments::apply(app, &notice(o, &format!("p-{}", o.id))).await.unwrap(), PaymentResult::Applied);
    // the OrderPaid event's stock move (the event flow runs it on the stack)
    stock::confirm(app, &ReservationId::for_order(&o.id), OnReleased::Retake).await.unwrap();
    order(w, &o.id).await
}

fn issues_sent(w: &MemoryWorld, o: &Order) -> Vec<(u32, u32)> {
    w.messages
        .sent()
        .iter()
        .filter_map(|(m, d)| match m {
            Message::SupplierIssue { order_id, attempt, .. } if *order_id == o.id.to_string() => Some((*attempt, *d)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn codes_are_issued_at_payment_shown_to_the_paid_owner_only_and_never_twice() {
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 2)]).await;
    assert!(o.supplier[0].issues_codes);
    assert!(
        matches!(pool::reveal(&app, &user("alice"), &o.id).await, Err(CodeError::NotPaid(_))),
        "nothing before payment"
    );
    assert_eq!(sup.issues(), (0, 0), "nothing asked of the supplier before payment");
    let paid = pay(&app, &w, &o).await;
    assert_eq!(issue::state(&paid), OrderCodes::Pending, "the issue starts in the write that pays");
    assert_eq!(issues_sent(&w, &o), [(1, 0)]);
    assert!(matches!(pool::reveal(&app, &user("alice"), &o.id).await, Err(CodeError::IssuePending)));
    assert_eq!(sc::issue(&app, &o.id, 1).await.unwrap(), IssueOutcome::Issued);
    // a redelivered message, or the sweep, finds nothing left to ask
    assert_eq!(sc::issue(&app, &o.id, 1).await.unwrap(), IssueOutcome::NotWanted);
    assert_eq!(sup.issues(), (1, 1));
    let stored = order(&w, &o.id).await;
    let sealed = &stored.supplier[0].codes.as_ref().unwrap().codes;
    assert_eq!(sealed.len(), 2);
    assert!(sealed.iter().all(|c| !c.sealed.contains("MEM-")), "stored sealed, never in clear");
    assert!(
        matches!(pool::reveal(&app, &user("bob"), &o.id).await, Err(CodeError::OrderNotFound)),
        "another buyer: not found"
    );
    let shown = pool::reveal(&app, &user("alice"), &o.id).await.unwrap();
    assert_eq!(shown.len(), 2);
    assert!(shown.iter().all(|(s, c)| s == &sku("GIFT") && c.starts_with("MEM-")));
    assert_eq!(pool::reveal(&app, &user("alice"), &o.id).await.unwrap(), shown, "shown again, the same codes");
    assert!(issue::revealed(&order(&w, &o.id).await));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_supplier_failing_twice_is_retried_after_one_then_two_seconds_and_issues_one_set() {
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 1)]).await;
    pay(&app, &w, &o).await;
    sup.fail_issues(2);
    assert_eq!(sc::issue(&app, &o.id, 1).await.unwrap(), IssueOutcome::Retrying { next: 2, delay_s: 1 });
    assert_eq!(sc::issue(&app, &o.id, 2).await.unwrap(), IssueOutcome::Retrying { next: 3, delay_s: 2 });
    assert_eq!(issues_sent(&w, &o), [(1, 0), (2, 1), (3, 2)]);
    assert_eq!(sc::issue(&app, &o.id, 3).await.unwrap(), IssueOutcome::Issued);
    assert_eq!(sup.issues(), (3, 1), "three calls, one set of codes");
    assert_eq!(issue::state(&order(&w, &o.id).await), OrderCodes::Issued);
    assert_invariants(&w);
}

#[tokio::test]
async fn spent_retries_leave_the_order_paid_with_codes_pending_until_an_operator_reissues() {
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code), ("TOUR", Unit::Single)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 3)]).await;
    pay(&app, &w, &o).await;
    sup.fail_issues(5);
    for (attempt, delay) in [(1, 1), (2, 2), (3, 4)] {
        let out = sc::issue(&app, &o.id, attempt).await.unwrap();
        assert_eq!(out, IssueOutcome::Retrying { next: attempt + 1, delay_s: delay });
    }
    assert_eq!(sc::issue(&app, &o.id, 4).await.unwrap(), IssueOutcome::GaveUp);
    let pending = order(&w, &o.id).await;
    assert_eq!((pending.status, issue::state(&pending)), (OrderStatus::Paid, OrderCodes::GaveUp));
    assert!(!w.orders.pending_due(i64::MAX).await.unwrap().contains(&o.id), "given up: out of the sweep's index");
    assert_invariants(&w);
    // the supplier still down: the reissue writes nothing
    let before = order(&w, &o.id).await;
    assert!(matches!(sc::reissue(&app, &o.id, "op").await, Err(ReissueError::SupplierFailed(_))));
    assert_eq!(order(&w, &o.id).await, before);
    assert_eq!(sc::reissue(&app, &o.id, "op").await.unwrap(), 3);
    let issued = order(&w, &o.id).await;
    assert_eq!(issued.supplier[0].codes.as_ref().unwrap().reissued_by.as_deref(), Some("op"));
    assert!(matches!(sc::reissue(&app, &o.id, "op").await, Err(ReissueError::AlreadyIssued)));
    assert_eq!(pool::reveal(&app, &user("alice"), &o.id).await.unwrap().len(), 3);
    // wrong orders: unknown, not paid, no codes
    let unknown = OrderId::parse("nope").unwrap();
    assert!(matches!(sc::reissue(&app, &unknown, "op").await, Err(ReissueError::NotFound)));
    let unpaid = payable(&app, &sup, "bob", &[("GIFT", 1)]).await;
    assert!(matches!(sc::reissue(&app, &unpaid.id, "op").await, Err(ReissueError::NotPaid(_))));
    let tour = payable(&app, &sup, "carol", &[("TOUR", 1)]).await;
    let tour = pay(&app, &w, &tour).await;
    assert!(issues_sent(&w, &tour).is_empty(), "a plain supplier order asks for no codes");
    assert!(matches!(sc::reissue(&app, &tour.id, "op").await, Err(ReissueError::NoCodes)));
    assert_invariants(&w);
}

#[tokio::test]
async fn a_lost_issue_message_is_run_by_the_sweep_and_a_revealed_code_is_not_refunded_automatically() {
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 1)]).await;
    let paid = pay(&app, &w, &o).await;
    let due = issue::sweep_due(&paid).unwrap();
    assert!(w.orders.pending_due(due + 1).await.unwrap().contains(&o.id), "in the sweep's index by its due time");
    assert!(!w.orders.pending_due(due - 1).await.unwrap().contains(&o.id));
    assert_eq!(sc::issue(&app, &o.id, 1).await.unwrap(), IssueOutcome::Issued);
    assert!(!w.orders.pending_due(i64::MAX).await.unwrap().contains(&o.id), "issued: out of the index");
    pool::reveal(&app, &user("alice"), &o.id).await.unwrap();
    use crate::service::after_sale::{apply, Caller, Change};
    let change = Change::Refund { reason: "changed my mind".into() };
    let held = apply(&app, Caller::Buyer(&user("alice")), &o.id, change).await.unwrap();
    assert_eq!(held.status, OrderStatus::RefundRequested, "shown codes: the refund waits for an admin");
    assert_invariants(&w);
}

#[tokio::test]
async fn a_refund_before_the_codes_are_shown_withdraws_them_and_unit_code_needs_a_supplier() {
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 1)]).await;
    pay(&app, &w, &o).await;
    sc::issue(&app, &o.id, 1).await.unwrap();
    use crate::service::after_sale::{apply, Caller, Change};
    let change = Change::Refund { reason: "changed my mind".into() };
    let refunding = apply(&app, Caller::Admin, &o.id, change).await.unwrap();
    assert_eq!(refunding.status, OrderStatus::Refunding);
    assert!(matches!(pool::reveal(&app, &user("alice"), &o.id).await, Err(CodeError::CodesWithdrawn)));
    let bad = SkuSpec {
        controls: Default::default(),
        name: "x".into(),
        price: 1,
        currency: eur(),
        shards: 1,
        per_user_limit: None,
        model: InventoryModel { unit: Unit::Code, ..Default::default() },
        bundle: Vec::new(),
        supplier: None,
    };
    assert!(matches!(admin::put_sku(&app, &sku("BAD"), &bad, None).await, Err(AdminError::Model(_))));
}

/// Found by the simulator (seed 6): an order shipped while its codes were still asked for was no
/// longer PAID, so no retry, sweep or reissue asked for them again; and a shipped order's codes,
/// issued, could not be shown (the first reveal was recorded on a PAID order only).
#[tokio::test]
async fn an_order_is_shipped_only_once_its_codes_are_issued_and_its_buyer_still_sees_them() {
    use crate::service::after_sale::{apply, Caller, Change};
    use crate::service::orders::{OrderError, StockRefusal};
    let (app, w, sup) = app_with(&[("GIFT", Unit::Code)]).await;
    let o = payable(&app, &sup, "alice", &[("GIFT", 2)]).await;
    pay(&app, &w, &o).await;
    let ship = || Change::Ship { carrier: "post".into(), tracking_number: "t1".into() };
    let refused = apply(&app, Caller::Admin, &o.id, ship()).await;
    assert!(matches!(refused, Err(OrderError::Refused(StockRefusal::CodesNotIssued))), "pending: {refused:?}");
    sup.fail_issues(4);
    for attempt in 1..=4 {
        sc::issue(&app, &o.id, attempt).await.unwrap();
    }
    assert_eq!(issue::state(&order(&w, &o.id).await), OrderCodes::GaveUp);
    let refused = apply(&app, Caller::Admin, &o.id, ship()).await;
    assert!(matches!(refused, Err(OrderError::Refused(StockRefusal::CodesNotIssued))), "given up: {refused:?}");
    assert_eq!(order(&w, &o.id).await.status, OrderStatus::Paid);
    assert_eq!(sc::reissue(&app, &o.id, "op").await.unwrap(), 2);
    let shipped = apply(&app, Caller::Admin, &o.id, ship()).await.unwrap();
    assert_eq!(shipped.status, OrderStatus::Shipped);
    assert_eq!(pool::reveal(&app, &user("alice"), &o.id).await.unwrap().len(), 2, "shown once shipped");
    assert!(issue::revealed(&order(&w, &o.id).await));
    assert_invariants(&w);
}
