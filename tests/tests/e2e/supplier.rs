//! SUPPLIER inventory end to end (docs/suppliers.md): the stock is held by an outside supplier —
//! here the local stack's simulated supplier, a real HTTP peer — quoted at checkout, booked
//! once the order is written, polled until it confirms (the order becomes payable), fails or
//! times out (the order FAILS, nothing held), and cancelled exactly once when the order closes
//! or is refunded.
//! Invariants clean at the end of every scenario.

use crate::common::{eventually, spawn, spawn_opts, spawn_with, Stack};
use holdfast::adapters::supplier::HttpSupplier;
use holdfast::domain::supplier::{BookingStatus, SupplierConfig};
use holdfast::ports::{BookingRequest, SupplierPort, UnknownBooking};
use holdfast_local::peers::supplier::{SimBooking, SimSupplier};
use serde_json::{json, Value};
use std::time::Duration;

/// Creates a SUPPLIER SKU with these simulated-supplier settings.
async fn supplier_sku(s: &Stack, sku: &str, price: u64, settings: Value, per_user_limit: Option<u32>) {
    let mut supplier = json!({"adapter": "simulated"});
    for (k, v) in settings.as_object().expect("settings object") {
        supplier[k] = v.clone();
    }
    let mut spec = json!({
        "name": format!("{sku} (from the supplier)"),
        "price": price,
        "currency": "EUR",
        "model": {"management": "SUPPLIER"},
        "supplier": supplier,
    });
    if let Some(l) = per_user_limit {
        spec["per_user_limit"] = json!(l);
    }
    let a = s.put_sku(sku, spec).await;
    assert_eq!(a.status, 201, "create {sku}: {}", a.body);
    assert_eq!(a.body["model"]["management"], "SUPPLIER", "{}", a.body);
    assert_eq!(a.body["available"], Value::Null, "the supplier holds the stock: {}", a.body);
}

/// Waits until the order's status is `want`; returns the order.
async fn order_in(s: &Stack, user: &str, id: &str, want: &str) -> Value {
    eventually(&format!("order {id} {want}"), Duration::from_secs(60), || async {
        let a = s.get_order(user, id).await;
        assert_eq!(a.status, 200, "{}", a.body);
        (a.body["status"] == want).then_some(a.body)
    })
    .await
}

/// The peer's own record of a booking, over HTTP (`GET /bookings/{id}` on the simulator).
async fn peer_booking(s: &Stack, booking_id: &str) -> SimBooking {
    // the wire format's route: with the credential the functions send (security review M3)
    let r = reqwest::Client::new()
        .get(format!("{}/bookings/{booking_id}", s.local.supplier_url))
        .header("authorization", s.local.supplier.authorization())
        .send()
        .await
        .expect("peer answers");
    assert_eq!(r.status(), 200);
    r.json().await.expect("a booking")
}

fn booking(order: &Value) -> (String, String) {
    let b = &order["supplier"][0];
    (b["booking_id"].as_str().unwrap_or_default().to_owned(), b["status"].as_str().unwrap_or_default().to_owned())
}

/// Milliseconds between two RFC 3339 instants of an order view.
fn ms_between(from: &Value, to: &Value) -> i64 {
    let t = |v: &Value| holdfast::clock::parse_rfc3339(v.as_str().expect("a date")).expect("rfc3339");
    t(to) - t(from)
}

#[tokio::test]
async fn supplier_confirming_after_3s_makes_the_order_payable_and_it_is_paid() {
    let s = spawn().await;
    supplier_sku(&s, "TOUR", 4_500, json!({"confirm_after_seconds": 3}), None).await;
    let a = s.order("ann", "k1", json!([{"sku": "TOUR", "quantity": 2}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.body["status"], "AWAITING_SUPPLIER", "{}", a.body);
    assert_eq!(a.body["amount"], 9_000);
    let id = a.body["order_id"].as_str().expect("order_id").to_owned();
    let (bid, st) = booking(&a.body);
    assert!(!bid.is_empty(), "the booking id is recorded on the order: {}", a.body);
    assert_eq!(st, "PENDING");
    let o = order_in(&s, "ann", &id, "PENDING_PAYMENT").await;
    assert_eq!(booking(&o), (bid.clone(), "CONFIRMED".to_owned()));
    // The payment deadline starts at confirmation (≥ 3 s after the booking), not at creation.
    // `created_at` keeps milliseconds while a deadline is whole seconds (the confirmation instant
    // rounded down), so the deadline is more than ttl + 2 s after creation; one counted from
    // creation would be at most ttl.
    let ttl = s.local.app("create-order").expect("app").config.payment_ttl_s;
    assert!(ms_between(&o["created_at"], &o["pay_expire_at"]) > (ttl + 2) * 1000, "{o}");
    // a replay of the checkout answers the same order, and books nothing more
    let again = s.order("ann", "k1", json!([{"sku": "TOUR", "quantity": 2}])).await;
    assert_eq!((again.status, again.body["order_id"].as_str()), (201, Some(id.as_str())), "{}", again.body);
    let pay = s.pay(&id, "pay-tour-1", 9_000, "SUCCEEDED").await;
    assert_eq!(pay.status, 200, "{}", pay.body);
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    order_in(&s, "ann", &id, "PAID").await;
    let peer = peer_booking(&s, &bid).await;
    assert_eq!((peer.book_calls, peer.cancel_calls, peer.status), (1, 0, BookingStatus::Confirmed), "{peer:?}");
    assert_eq!(s.local.supplier.bookings().len(), 1, "one booking per order line");
    eventually("the paid order's lock sold", Duration::from_secs(60), || async {
        (s.lock_status(&id).await.as_deref() == Some("SOLD")).then_some(())
    })
    .await;
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn supplier_refusing_fails_the_order_and_nothing_is_held() {
    let s = spawn().await;
    supplier_sku(&s, "FERRY", 2_000, json!({"confirm_after_seconds": 1, "outcome": "fail"}), Some(2)).await;
    let id = s.order_id("bo", "k1", json!([{"sku": "FERRY", "quantity": 2}])).await;
    let o = order_in(&s, "bo", &id, "FAILED").await;
    assert_eq!(booking(&o).1, "FAILED", "{o}");
    // the OrderFailed event went through the outbox and released the lock
    eventually("the failed order's lock released", Duration::from_secs(60), || async {
        (s.lock_status(&id).await.as_deref() == Some("RELEASED")).then_some(())
    })
    .await;
    // nothing held: the per-user allowance came back, so another 2 can be ordered
    let a = s.order("bo", "k2", json!([{"sku": "FERRY", "quantity": 2}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // a refused booking holds nothing at the supplier: nothing to cancel
    let peer = peer_booking(&s, &booking(&o).0).await;
    assert_eq!(peer.cancel_calls, 0, "{peer:?}");
    // a failed order cannot be paid or cancelled
    let c = s.cancel("bo", &id).await;
    assert_eq!((c.status, c.body["code"].as_str()), (409, Some("invalid_transition")), "{}", c.body);
    order_in(&s, "bo", a.body["order_id"].as_str().expect("id"), "FAILED").await;
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn a_silent_supplier_times_out_and_an_unpaid_confirmed_booking_is_cancelled_once() {
    let s = spawn_with(&[("HOLDFAST_SUPPLIER_TIMEOUT_SECONDS", "8"), ("HOLDFAST_PAYMENT_TTL_SECONDS", "4")]).await;
    supplier_sku(&s, "SILENT", 1_000, json!({"outcome": "silent"}), None).await;
    supplier_sku(&s, "QUICK", 1_000, json!({"confirm_after_seconds": 0}), None).await;
    let silent = s.order_id("cy", "k1", json!([{"sku": "SILENT", "quantity": 1}])).await;
    let quick = s.order_id("cy", "k2", json!([{"sku": "QUICK", "quantity": 1}])).await;
    // the silent supplier never answers: FAILED at the timeout, its pending booking cancelled
    let o = order_in(&s, "cy", &silent, "FAILED").await;
    let bid = booking(&o).0;
    eventually("the timed-out booking cancelled", Duration::from_secs(60), || async {
        let o = s.get_order("cy", &silent).await.body;
        (booking(&o).1 == "CANCELLED").then_some(())
    })
    .await;
    assert_eq!(peer_booking(&s, &bid).await.cancel_calls, 1);
    // the quick one confirmed (only a PENDING_PAYMENT order expires), was never paid, expired:
    // its confirmed booking is cancelled once
    let o = order_in(&s, "cy", &quick, "EXPIRED").await;
    let qid = booking(&o).0;
    eventually("the expired order's booking cancelled", Duration::from_secs(60), || async {
        let o = s.get_order("cy", &quick).await.body;
        (booking(&o).1 == "CANCELLED").then_some(())
    })
    .await;
    assert_eq!(peer_booking(&s, &qid).await.cancel_calls, 1);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_confirmed_supplier_order_cancels_its_booking_exactly_once() {
    let s = spawn().await;
    supplier_sku(&s, "CABIN", 30_000, json!({"confirm_after_seconds": 1}), None).await;
    let id = s.order_id("di", "k1", json!([{"sku": "CABIN", "quantity": 1}])).await;
    let o = order_in(&s, "di", &id, "PENDING_PAYMENT").await;
    let (bid, st) = booking(&o);
    assert_eq!(st, "CONFIRMED");
    let c = s.cancel("di", &id).await;
    assert_eq!((c.status, c.body["status"].as_str()), (200, Some("CANCELLED")), "{}", c.body);
    eventually("the booking cancelled at the supplier", Duration::from_secs(60), || async {
        let o = s.get_order("di", &id).await.body;
        (booking(&o).1 == "CANCELLED").then_some(())
    })
    .await;
    assert_eq!(peer_booking(&s, &bid).await.cancel_calls, 1);
    // a redelivered SupplierCancelRequested (the compensation run again) calls nothing
    let app = s.local.app("refunds").expect("refunds");
    let order_id = holdfast::domain::OrderId::parse(&id).expect("id");
    assert_eq!(holdfast::service::supplier::compensate(app, &order_id).await.expect("compensate"), 0);
    let peer = peer_booking(&s, &bid).await;
    assert_eq!((peer.cancel_calls, peer.status), (1, BookingStatus::Cancelled), "{peer:?}");
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn refunding_a_paid_supplier_order_cancels_its_booking_exactly_once() {
    let s = spawn().await;
    supplier_sku(&s, "KAYAK", 6_000, json!({"confirm_after_seconds": 1}), None).await;
    let id = s.order_id("eve", "k1", json!([{"sku": "KAYAK", "quantity": 1}])).await;
    let o = order_in(&s, "eve", &id, "PENDING_PAYMENT").await;
    let (bid, st) = booking(&o);
    assert_eq!(st, "CONFIRMED");
    let pay = s.pay(&id, "pay-kayak-1", 6_000, "SUCCEEDED").await;
    assert_eq!(pay.body["result"], "applied", "{}", pay.body);
    eventually("the paid order's lock sold", Duration::from_secs(60), || async {
        (s.lock_status(&id).await.as_deref() == Some("SOLD")).then_some(())
    })
    .await;
    // refunded before the trip: a confirmed booking may cost money at the supplier, so the
    // buyer's refund waits for an admin (docs/payments.md, "Refund review"); approved, the
    // money goes back and so does the booking
    let r = s.post(&format!("/orders/{id}/refund"), &s.user("eve"), json!({"reason": "plans changed"})).await;
    assert_eq!((r.status, r.body["status"].as_str()), (202, Some("REFUND_REQUESTED")), "{}", r.body);
    assert_eq!(r.body["refund_review"]["because"], "supplier_confirmed");
    let r = s
        .post(&format!("/admin/orders/{id}/refund-decision"), &s.admin, json!({"approve": true, "reason": "ok"}))
        .await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("REFUNDING")), "{}", r.body);
    eventually("the refunded order's booking cancelled", Duration::from_secs(60), || async {
        let o = s.get_order("eve", &id).await.body;
        (booking(&o).1 == "CANCELLED").then_some(())
    })
    .await;
    // the refund confirmed by the provider (a write racing the compensation's own), the lock
    // restocked
    order_in(&s, "eve", &id, "REFUNDED").await;
    eventually("the refunded order's lock restocked", Duration::from_secs(60), || async {
        (s.lock_status(&id).await.as_deref() == Some("RESTOCKED")).then_some(())
    })
    .await;
    let peer = peer_booking(&s, &bid).await;
    assert_eq!((peer.cancel_calls, peer.status), (1, BookingStatus::Cancelled), "{peer:?}");
    // a redelivered SupplierCancelRequested calls nothing
    let app = s.local.app("refunds").expect("refunds");
    let order_id = holdfast::domain::OrderId::parse(&id).expect("id");
    assert_eq!(holdfast::service::supplier::compensate(app, &order_id).await.expect("compensate"), 0);
    assert_eq!(booking(&s.get_order("eve", &id).await.body).1, "CANCELLED");
    assert_eq!(peer_booking(&s, &bid).await.cancel_calls, 1);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn a_supplier_order_whose_poll_was_lost_is_failed_by_the_sweep() {
    // the poll consumer is not running: every poll message is lost to the order
    let s = spawn_opts(&[("HOLDFAST_SUPPLIER_TIMEOUT_SECONDS", "3"), ("HOLDFAST_STALE_LOCK_SECONDS", "1")], |o| {
        o.paused.push("payment-timeout".into())
    })
    .await;
    supplier_sku(&s, "LOST", 1_000, json!({"outcome": "silent"}), None).await;
    let id = s.order_id("ed", "k1", json!([{"sku": "LOST", "quantity": 1}])).await;
    let swept = eventually("the sweep to fail the stuck order", Duration::from_secs(60), || async {
        s.reconcile().await;
        let o = s.get_order("ed", &id).await.body;
        (o["status"] == "FAILED").then_some(o)
    })
    .await;
    assert_eq!(swept["supplier"][0]["status"].as_str().map(|st| st == "PENDING" || st == "CANCELLED"), Some(true));
    eventually("the stuck order's booking cancelled", Duration::from_secs(60), || async {
        let o = s.get_order("ed", &id).await.body;
        (booking(&o).1 == "CANCELLED").then_some(())
    })
    .await;
    assert_eq!(peer_booking(&s, &booking(&swept).0).await.cancel_calls, 1);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

#[tokio::test]
async fn supplier_bad_input_is_refused_and_writes_nothing() {
    let s = spawn().await;
    supplier_sku(&s, "SEAT", 5_000, json!({"available": 3}), None).await;
    s.sku("MUG", 900, 10, 1, None).await;
    // above the supplier's quote: 409 naming the SKU, nothing written, nothing booked
    let a = s.order("fay", "k1", json!([{"sku": "SEAT", "quantity": 4}])).await;
    assert_eq!((a.status, a.body["code"].as_str()), (409, Some("insufficient_stock")), "{}", a.body);
    let ct = a.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(ct.starts_with("application/problem+json"), "{ct}");
    assert!(a.body["detail"].as_str().unwrap_or_default().contains("SEAT"), "{}", a.body);
    let list = s.get("/orders", Some(&s.user("fay"))).await;
    assert_eq!(list.body["orders"], json!([]), "{}", list.body);
    assert!(s.local.supplier.bookings().is_empty());
    assert!(s.local.snapshot().await.expect("snapshot").reservations.is_empty(), "no lock was taken");
    // the quote is met: booked
    let a = s.order("fay", "k2", json!([{"sku": "SEAT", "quantity": 3}])).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // the supplier down at checkout: 503 with Retry-After, nothing written
    supplier_sku(&s, "DOWN", 5_000, json!({}), None).await;
    s.local
        .supplier
        .control(&holdfast_local::peers::supplier::SupplierControl { fail_rate: Some(1.0), ..Default::default() });
    let a = s.order("gus", "k1", json!([{"sku": "DOWN", "quantity": 1}])).await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(a.headers.get("retry-after").is_some(), "{:?}", a.headers);
    s.local
        .supplier
        .control(&holdfast_local::peers::supplier::SupplierControl { fail_rate: Some(0.0), ..Default::default() });
    let list = s.get("/orders", Some(&s.user("gus"))).await;
    assert_eq!(list.body["orders"], json!([]), "{}", list.body);
    // a SUPPLIER line with a stocked line: 422
    let a = s.order("fay", "k3", json!([{"sku": "SEAT", "quantity": 1}, {"sku": "MUG", "quantity": 1}])).await;
    assert_eq!((a.status, a.body["code"].as_str()), (422, Some("validation_failed")), "{}", a.body);
    // bad `supplier` settings on PUT: 422 each, nothing created
    let base = |extra: Value| {
        let mut spec = json!({"name": "x", "price": 1, "currency": "EUR", "model": {"management": "SUPPLIER"}});
        for (k, v) in extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        spec
    };
    for (sku, spec) in [
        ("BAD-1", base(json!({}))),
        ("BAD-2", base(json!({"supplier": {"adapter": "acme"}}))),
        ("BAD-3", base(json!({"supplier": {"adapter": "simulated", "outcome": "maybe"}}))),
        ("BAD-4", base(json!({"supplier": {"adapter": "simulated", "confirm_after_seconds": 100000}}))),
        ("BAD-5", base(json!({"supplier": {"adapter": "simulated", "colour": "red"}}))),
        (
            "BAD-6",
            base(
                json!({"model": {"management": "SUPPLIER", "unit": "CALENDAR"}, "supplier": {"adapter": "simulated"}}),
            ),
        ),
        (
            "BAD-7",
            base(
                json!({"model": {"management": "SUPPLIER", "deduct": "AT_PAYMENT"}, "supplier": {"adapter": "simulated"}}),
            ),
        ),
        ("BAD-8", json!({"name": "x", "price": 1, "currency": "EUR", "supplier": {"adapter": "simulated"}})),
    ] {
        let a = s.put_sku(sku, spec.clone()).await;
        assert_eq!(a.status, 422, "{sku} {spec}: {}", a.body);
        assert_eq!(s.get(&format!("/skus/{sku}"), None).await.status, 404, "{sku} was not created");
    }
    // not adjustable, and not a bundle's child
    let a = s
        .post("/admin/skus/SEAT/adjustments", &s.admin, json!({"adjustment_id": "a1", "delta": 5, "reason": "more"}))
        .await;
    assert_eq!(a.status, 422, "{}", a.body);
    let kit = json!({"name": "Kit", "price": 1, "currency": "EUR", "model": {"unit": "BUNDLE"},
                     "bundle": [{"sku": "SEAT", "quantity": 1}, {"sku": "MUG", "quantity": 1}]});
    assert_eq!(s.put_sku("KIT", kit).await.status, 422);
    s.assert_invariants().await;
    s.local.shutdown().await;
}

/// The contract every supplier adapter must pass (docs/suppliers.md, "Adding a supplier"):
/// quote; book is idempotent by key; status moves PENDING → CONFIRMED (or FAILED); cancel is
/// idempotent; an unknown booking is an error. `settings(outcome, confirm_after_s)` gives the
/// SKU settings under which the supplier behaves so (a real supplier's sandbox).
pub async fn supplier_contract(port: &dyn SupplierPort, settings: impl Fn(&str, u32) -> SupplierConfig) {
    let sku = holdfast::domain::Sku::parse("CONTRACT-SKU").expect("sku");
    let confirm = settings("confirm", 1);
    let req = |key: &'static str, config: &'static SupplierConfig| BookingRequest {
        key,
        sku: Box::leak(Box::new(sku.clone())),
        config,
        quantity: 2,
        dates: &[],
    };
    let confirm: &'static SupplierConfig = Box::leak(Box::new(confirm));
    let limited: &'static SupplierConfig =
        Box::leak(Box::new(SupplierConfig { available: Some(5), ..settings("confirm", 1) }));
    // quote
    assert_eq!(port.quote(&req("", limited)).await.expect("quote").available, Some(5));
    // book: idempotent by key
    let id = port.book(&req("contract-1", confirm)).await.expect("book");
    assert_eq!(port.book(&req("contract-1", confirm)).await.expect("book again"), id, "same key, same booking");
    let other = port.book(&req("contract-2", confirm)).await.expect("book another");
    assert_ne!(other, id, "another key, another booking");
    // PENDING → CONFIRMED
    let first = port.status(&id).await.expect("status");
    assert!(matches!(first, BookingStatus::Pending | BookingStatus::Confirmed), "{first:?}");
    eventually("the booking confirmed", Duration::from_secs(30), || async {
        (port.status(&id).await.expect("status") == BookingStatus::Confirmed).then_some(())
    })
    .await;
    // PENDING → FAILED
    let fail: &'static SupplierConfig = Box::leak(Box::new(settings("fail", 1)));
    let failing = port.book(&req("contract-3", fail)).await.expect("book a failing one");
    eventually("the booking failed", Duration::from_secs(30), || async {
        (port.status(&failing).await.expect("status") == BookingStatus::Failed).then_some(())
    })
    .await;
    // cancel, idempotent
    port.cancel(&id).await.expect("cancel");
    port.cancel(&id).await.expect("cancel again is harmless");
    assert_eq!(port.status(&id).await.expect("status"), BookingStatus::Cancelled);
    // unknown bookings are errors, typed
    for e in [port.status("no-such-booking").await.unwrap_err(), port.cancel("no-such-booking").await.unwrap_err()] {
        assert!(e.downcast_ref::<UnknownBooking>().is_some(), "{e:#}");
    }
}

#[tokio::test]
async fn the_simulated_supplier_passes_the_supplier_contract() {
    let (_peer, url) = SimSupplier::start(Default::default()).await.expect("simulator starts");
    // with the credential the simulator demands (security review M3)
    let credential = holdfast::config::Secret::new(holdfast_local::stack::DEFAULT_SUPPLIER_CREDENTIAL);
    let port = HttpSupplier::new(&url, Duration::from_secs(5))
        .expect("adapter")
        .with_credential(std::sync::Arc::new(holdfast::adapters::secrets::StaticKeys(vec![credential])));
    supplier_contract(&port, |outcome, after| {
        serde_json::from_value(json!({"adapter": "simulated", "outcome": outcome, "confirm_after_seconds": after}))
            .expect("settings")
    })
    .await;
    // and against a supplier that is down: every call is an error, never an answer
    let down = HttpSupplier::new("http://127.0.0.1:9", Duration::from_secs(2)).expect("adapter");
    assert!(down.status("x").await.is_err());
}
