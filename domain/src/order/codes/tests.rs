use super::*;
use crate::order::{By, OrderAction, OrderLine, Provider};
use crate::supplier::{BookingStatus, SupplierConfig};
use crate::{Currency, OrderId, Sku, UserId};

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

pub(crate) fn booking(s: &str, issues_codes: bool) -> SupplierBooking {
    SupplierBooking {
        sku: sku(s),
        quantity: 2,
        booking_id: Some(format!("b-{s}")),
        status: BookingStatus::Confirmed,
        config: SupplierConfig::simulated(),
        cancel_started_ms: None,
        issues_codes,
        codes: None,
    }
}

pub(crate) fn order(bookings: Vec<SupplierBooking>) -> Order {
    let lines = bookings
        .iter()
        .map(|b| OrderLine {
            sku: b.sku.clone(),
            quantity: b.quantity,
            unit_price: 100,
            dates: Vec::new(),
            campaign: None,
        })
        .collect();
    Order {
        id: OrderId::parse("o1").unwrap(),
        user: UserId::parse("u1").unwrap(),
        status: OrderStatus::PendingPayment,
        lines,
        amount: 200,
        currency: Currency::parse("EUR").unwrap(),
        pay_expire_at: 1_000,
        created_at_ms: 1,
        updated_at_ms: 1,
        version: 1,
        payment_id: None,
        payments: vec![],
        request_hash: "h".into(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: bookings,
        attempts: Vec::new(),
        review: None,
        correlation: None,
        settled_at_ms: None,
        details: Default::default(),
        log: Default::default(),
    }
}

pub(crate) fn paid(mut o: Order, now_s: i64) -> Order {
    o = o.apply(OrderAction::Pay, &By::provider(Provider::Generic, "payment_succeeded"), now_s * 1000).unwrap();
    start(&mut o, now_s);
    o
}

pub(crate) fn sealed(n: usize) -> Vec<SealedCode> {
    (0..n).map(|i| SealedCode { fingerprint: format!("f{i}"), kid: "k".into(), sealed: "x".into() }).collect()
}

#[test]
fn nothing_is_asked_before_payment_and_payment_starts_every_code_booking() {
    let o = order(vec![booking("GC", true), booking("TOUR", false)]);
    assert_eq!(state(&o), OrderCodes::Unpaid);
    assert!(!wanted(&o, true) && sweep_due(&o).is_none());
    let p = paid(o, 100);
    assert_eq!(state(&p), OrderCodes::Pending);
    assert!(p.supplier[1].codes.is_none(), "a booking without codes is never asked");
    assert!(wanted(&p, false));
    assert_eq!(sweep_due(&p), Some(100 + SWEEP_AFTER_S));
    let mut again = p.clone();
    assert!(!start(&mut again, 200), "started once");
    assert_eq!(again, p);
    assert_eq!(state(&order(vec![booking("TOUR", false)])), OrderCodes::None);
}

#[test]
fn issued_once_given_up_waits_for_a_manual_reissue() {
    let mut p = paid(order(vec![booking("GC", true)]), 100);
    let before = p.clone();
    assert!(give_up(&mut p));
    assert_eq!(state(&p), OrderCodes::GaveUp);
    assert!(!wanted(&p, false) && wanted(&p, true));
    assert_eq!(sweep_due(&p), None, "given up: out of the sweep's index");
    assert!(record_issued(&mut p, &sku("GC"), sealed(2), 9, Some("admin")));
    assert_eq!(state(&p), OrderCodes::Issued);
    assert!(!record_issued(&mut p, &sku("GC"), sealed(2), 10, None), "never issued twice");
    assert_eq!(p.supplier[0].codes.as_ref().unwrap().issued_at_ms, Some(9));
    assert!(!wanted(&p, true));
    let mut q = before;
    assert!(record_issued(&mut q, &sku("GC"), sealed(2), 9, None));
    assert!(!give_up(&mut q), "nothing pending to give up");
}

#[test]
fn a_refunded_order_is_never_asked_and_the_first_reveal_is_recorded_once() {
    let mut p = paid(order(vec![booking("GC", true)]), 100);
    record_issued(&mut p, &sku("GC"), sealed(2), 9, None);
    assert!(!revealed(&p));
    assert!(mark_revealed(&mut p, 11) && revealed(&p));
    assert!(!mark_revealed(&mut p, 12));
    let mut r = paid(order(vec![booking("GC", true)]), 100);
    r.status = OrderStatus::Refunding;
    assert!(!wanted(&r, true) && sweep_due(&r).is_none());
}
