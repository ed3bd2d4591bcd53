use super::*;
use crate::allocation::Piece;
use crate::reservation::{ReservationKind, ReservedLine};
use crate::{Currency, ReservationId};

fn sku() -> Sku {
    Sku::parse("s").unwrap()
}

fn snap(av: i64, lk: i64, sd: i64, stocked: i64) -> SkuSnapshot {
    SkuSnapshot {
        sku: sku(),
        stocked,
        shards: vec![ShardCounts { available: av, locked: lk, sold: sd }],
        per_user_limit: Some(1),
    }
}

fn res(id: &str, status: LockStatus, q: u32) -> Reservation {
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status,
        user: Some(UserId::parse("u").unwrap()),
        request_hash: String::new(),
        created_at_ms: 0,
        expires_at: 0,
        lines: vec![ReservedLine {
            sku: sku(),
            quantity: q,
            unit_price: 1,
            currency: Currency::parse("EUR").unwrap(),
            limited: true,
            pieces: vec![Piece { shard: 0, quantity: q }],
            campaign: None,
            dates: Vec::new(),
            draws: Vec::new(),
            at_payment: false,
            at_shipment: false,
            codes: None,
            backorder: None,
        }],
        oversold: false,
        code_fate: None,
        pending: false,
    }
}

#[test]
fn a_consistent_sku_has_no_violations() {
    assert!(check_stock(&[snap(7, 1, 2, 10)], &[res("o1", LockStatus::Frozen, 1)]).is_empty());
}

#[test]
fn each_broken_identity_is_reported() {
    let v = check_stock(&[snap(-1, 1, 2, 10)], &[res("o1", LockStatus::Frozen, 1)]);
    assert!(v.iter().any(|v| matches!(v, Violation::NegativeCounter { .. })));
    assert!(v.iter().any(|v| matches!(v, Violation::TotalMismatch { total: 2, stocked: 10, .. })));
    let v = check_stock(&[snap(7, 1, 2, 10)], &[]);
    assert_eq!(v, vec![Violation::LockedMismatch { sku: sku(), locked: 1, frozen: 0 }]);
}

#[test]
fn an_old_frozen_lock_without_an_order_is_stranded() {
    let s = Snapshot {
        skus: vec![snap(9, 1, 0, 10)],
        reservations: vec![res("o1", LockStatus::Frozen, 1)],
        orders: vec![],
        user_counters: vec![(sku(), UserId::parse("u").unwrap(), 1)],
        now_s: 1_000,
        check_delay_s: 300,
        campaigns: CampaignCounters::default(),
        codes: CodePools::default(),
        backlogs: Vec::new(),
    };
    assert_eq!(check_all(&s), vec![Violation::StrandedLock { reservation: "o1".into() }]);
}

#[test]
fn a_user_over_the_limit_is_reported() {
    let s = Snapshot {
        skus: vec![snap(8, 0, 2, 10)],
        reservations: vec![res("o1", LockStatus::Sold, 1), res("o2", LockStatus::Sold, 1)],
        orders: vec![],
        user_counters: vec![(sku(), UserId::parse("u").unwrap(), 2)],
        now_s: 0,
        check_delay_s: 300,
        campaigns: CampaignCounters::default(),
        codes: CodePools::default(),
        backlogs: Vec::new(),
    };
    assert!(matches!(check_all(&s)[..], [Violation::UserLimit { holds: 2, limit: 1, .. }]));
}

#[test]
fn a_failed_order_holds_nothing_and_a_closed_orders_confirmed_booking_was_cancelled() {
    use crate::order::{Order, OrderStatus};
    use crate::supplier::{BookingStatus, SupplierBooking, SupplierConfig};
    let booking = |status| SupplierBooking {
        sku: sku(),
        quantity: 1,
        booking_id: Some("b1".into()),
        status,
        config: SupplierConfig::simulated(),
        cancel_started_ms: None,
        issues_codes: false,
        codes: None,
    };
    let order = |status, b: BookingStatus| Order {
        id: OrderId::parse("o1").unwrap(),
        user: UserId::parse("u").unwrap(),
        status,
        lines: vec![],
        amount: 1,
        currency: Currency::parse("EUR").unwrap(),
        pay_expire_at: 0,
        created_at_ms: 0,
        updated_at_ms: 0,
        version: 2,
        payment_id: None,
        payments: vec![],
        request_hash: String::new(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: vec![booking(b)],
        attempts: vec![],
        review: None,
        correlation: None,
        settled_at_ms: None,
        details: Default::default(),
        log: Default::default(),
    };
    let snap = |o: Order, lock: LockStatus| {
        let mut r = res("o1", lock, 1);
        r.lines[0].limited = false;
        r.lines[0].pieces.clear();
        Snapshot {
            skus: vec![],
            reservations: vec![r],
            orders: vec![(o.id.clone(), OrderRecord::Order(Box::new(o)))],
            user_counters: vec![],
            now_s: 1_000,
            check_delay_s: 300,
            campaigns: CampaignCounters::default(),
            codes: CodePools::default(),
            backlogs: Vec::new(),
        }
    };
    // fine: failed with its lock released and its booking refused; cancelled and cancelled
    assert!(check_all(&snap(order(OrderStatus::Failed, BookingStatus::Failed), LockStatus::Released)).is_empty());
    assert!(check_all(&snap(order(OrderStatus::Cancelled, BookingStatus::Cancelled), LockStatus::Released)).is_empty());
    // an order awaiting its supplier keeps its (stockless) lock frozen, and is not stranded
    assert!(
        check_all(&snap(order(OrderStatus::AwaitingSupplier, BookingStatus::Pending), LockStatus::Frozen)).is_empty()
    );
    // a FAILED order still holding its lock
    assert!(matches!(
        check_all(&snap(order(OrderStatus::Failed, BookingStatus::Failed), LockStatus::Frozen))[..],
        [Violation::StrandedLock { .. }, Violation::OrderLockMismatch { .. }]
    ));
    // a cancelled / expired / failed order whose confirmed (or pending) booking was never cancelled
    for (st, b) in [
        (OrderStatus::Cancelled, BookingStatus::Confirmed),
        (OrderStatus::Expired, BookingStatus::Confirmed),
        (OrderStatus::Failed, BookingStatus::Pending),
    ] {
        assert_eq!(
            check_all(&snap(order(st, b), LockStatus::Released)),
            vec![Violation::SupplierBookingHeld { order: "o1".into(), sku: sku(), status: b.as_str().into() }],
            "{st:?} {b:?}"
        );
    }
    // a paid order's confirmed booking is what it bought
    assert!(check_all(&snap(order(OrderStatus::Paid, BookingStatus::Confirmed), LockStatus::Sold)).is_empty());
}
