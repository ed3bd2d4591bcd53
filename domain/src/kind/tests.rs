use super::*;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

#[test]
fn every_model_has_one_kind_and_deduction_at_payment_wins_for_counted_units() {
    let m = |management, unit, deduct| InventoryModel { management, unit, deduct, ..Default::default() };
    assert_eq!(Kind::of(&InventoryModel::default()), Kind::Quantity);
    assert_eq!(Kind::of(&m(Management::Quantity, Unit::Calendar, Deduct::AtPayment)), Kind::PayTime);
    assert_eq!(Kind::of(&m(Management::Quantity, Unit::Bundle, Deduct::AtOrder)), Kind::Bundle);
    assert_eq!(Kind::of(&m(Management::CodePool, Unit::Single, Deduct::AtOrder)), Kind::CodePool);
    assert_eq!(Kind::of(&m(Management::Quantity, Unit::Single, Deduct::AtShipment)), Kind::AtShipment);
    for k in Kind::ALL {
        assert_eq!(k.rules().deduct == Deduct::AtPayment, k == Kind::PayTime, "{k}");
        assert_eq!(k.rules().takes_at_shipment(), k == Kind::AtShipment, "{k}");
    }
}

#[test]
fn the_matrix_is_symmetric_and_refuses_exactly_the_named_pairs() {
    let mut refused = Vec::new();
    for a in Kind::ALL {
        for b in Kind::ALL {
            assert_eq!(may_share_an_order(a, b), may_share_an_order(b, a), "{a} × {b}");
            if !may_share_an_order(a, b) && a <= b {
                refused.push((a, b));
            }
        }
        assert!(may_share_an_order(a, a), "{a} with itself");
    }
    let booked = |k: &Kind| k.rules().books_supplier;
    let pair = |a: Kind, b: Kind| (a.min(b), a.max(b));
    let mut want: Vec<(Kind, Kind)> = Kind::ALL
        .iter()
        .filter(|k| !booked(k))
        .flat_map(|k| [pair(*k, Kind::Supplier), pair(*k, Kind::SupplierCodes)])
        .collect();
    want.push((Kind::PayTime, Kind::CodePool));
    want.push((Kind::PayTime, Kind::AtShipment));
    want.push((Kind::AtShipment, Kind::CodePool));
    want.extend([
        (Kind::PayTime, Kind::Backorder),
        (Kind::AtShipment, Kind::Backorder),
        (Kind::CodePool, Kind::Backorder),
    ]);
    want.sort();
    refused.sort();
    assert_eq!(refused, want);
}

#[test]
fn admission_walks_every_pair_of_kinds_for_orders_reservations_and_campaigns() {
    let (a, b) = (sku("A"), sku("B"));
    for ka in Kind::ALL {
        for kb in Kind::ALL {
            for campaign in [false, true] {
                let lines =
                    [Candidate { sku: &a, kind: ka, campaign }, Candidate { sku: &b, kind: kb, campaign: false }];
                let order = admit(Holder::Order, &lines);
                let together = may_share_an_order(ka, kb);
                let camp_ok = !campaign || ka.rules().campaign;
                assert_eq!(order.is_ok(), together && camp_ok, "order {ka} × {kb} campaign={campaign}: {order:?}");
                let ext = admit(Holder::External, &lines);
                let ext_ok = together && camp_ok && ka.rules().external && kb.rules().external;
                assert_eq!(ext.is_ok(), ext_ok, "reservation {ka} × {kb}: {ext:?}");
            }
        }
    }
}

#[test]
fn codes_are_never_retaken_never_give_the_allowance_back_and_refund_only_until_shown() {
    let r = Kind::CodePool.rules();
    assert!(r.reveals_codes && !r.retake && !r.allowance_back && !r.external);
    assert_eq!(r.buyer_refund, BuyerRefund::UntilRevealed);
    assert_eq!(Kind::PayTime.rules().pause, PauseBy::FreshMetadata);
    assert!(!Kind::Supplier.rules().external && !Kind::Supplier.rules().campaign);
    assert!(Kind::ALL.iter().filter(|k| k.rules().reveals_codes).eq([Kind::CodePool, Kind::SupplierCodes].iter()));
    let sc = Kind::SupplierCodes.rules();
    assert!(sc.codes_from_supplier() && !sc.codes_from_pool() && !sc.external && !sc.campaign);
    assert!(r.codes_from_pool() && !r.codes_from_supplier() && sc.buyer_refund == BuyerRefund::UntilRevealed);
    let m = InventoryModel { management: Management::Supplier, unit: Unit::Code, ..InventoryModel::default() };
    assert_eq!((Kind::of(&m), Stocking::of(&m)), (Kind::SupplierCodes, Stocking::AtSupplier));
}

#[test]
fn at_shipment_is_held_on_its_shards_refunded_before_shipping_and_never_held_for_another_system() {
    use Kind::*;
    let r = AtShipment.rules();
    assert!(!r.external && r.campaign && r.allowance_back && !r.retake && !r.reveals_codes && !r.books_supplier);
    assert_eq!((r.pause, r.buyer_refund, r.deduct), (PauseBy::Shards, BuyerRefund::BeforeShipping, Deduct::AtShipment));
    for k in [Quantity, Calendar, Bundle, Unlimited, AtShipment] {
        assert!(may_share_an_order(AtShipment, k), "{k}");
    }
    for k in [PayTime, CodePool, Supplier] {
        assert!(!may_share_an_order(AtShipment, k), "{k}");
    }
}

#[test]
fn a_lock_is_held_until_shipment_when_any_of_its_lines_is_taken_at_shipment() {
    use crate::reservation::{LockStatus, Reservation, ReservationKind};
    let line = |at_shipment: bool| ReservedLine {
        sku: sku("A"),
        quantity: 1,
        unit_price: 1,
        currency: crate::Currency::parse("EUR").unwrap(),
        limited: false,
        pieces: Vec::new(),
        campaign: None,
        dates: Vec::new(),
        draws: Vec::new(),
        at_payment: false,
        at_shipment,
        codes: None,
        backorder: None,
    };
    let mut r = Reservation {
        id: crate::ReservationId::from_stored("o1").unwrap(),
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: None,
        request_hash: String::new(),
        created_at_ms: 0,
        expires_at: 0,
        lines: vec![line(false)],
        oversold: false,
        pending: false,
        code_fate: None,
    };
    assert!(!held_until_shipment(&r));
    assert_eq!(Kind::of_line(&r.lines[0]), Kind::Quantity);
    r.lines.push(line(true));
    assert!(held_until_shipment(&r), "one at-shipment line holds the whole lock");
    assert_eq!(Kind::of_line(&r.lines[1]), Kind::AtShipment);
}

#[test]
fn a_backorder_is_held_on_its_shards_never_in_a_campaign_nor_for_another_system() {
    use Kind::*;
    let r = Backorder.rules();
    assert!(!r.external && !r.campaign && r.allowance_back && !r.retake && !r.reveals_codes && !r.books_supplier);
    // the one kind a checkout may be recorded for during a store outage: it may be sold short
    for k in Kind::ALL {
        assert_eq!(k.rules().recorded_on_outage, k == Backorder, "{k}");
    }
    assert_eq!((r.pause, r.buyer_refund, r.deduct), (PauseBy::Shards, BuyerRefund::BeforeShipping, Deduct::AtOrder));
    for k in [Quantity, Calendar, Bundle, Unlimited, Warehouse, Backorder] {
        assert!(may_share_an_order(Backorder, k), "{k}");
    }
    for k in [PayTime, AtShipment, CodePool, Supplier, SupplierCodes] {
        assert!(!may_share_an_order(Backorder, k), "{k}");
    }
    let mut line = ReservedLine {
        sku: sku("B"),
        quantity: 3,
        unit_price: 1,
        currency: crate::Currency::parse("EUR").unwrap(),
        limited: false,
        pieces: Vec::new(),
        campaign: None,
        dates: Vec::new(),
        draws: Vec::new(),
        at_payment: false,
        at_shipment: false,
        codes: None,
        backorder: None,
    };
    assert_eq!(Kind::of_line(&line), Quantity);
    line.backorder = Some(Default::default());
    assert_eq!(Kind::of_line(&line), Backorder);
    assert!(Stocking::of(&InventoryModel { oversell: super::super::model::Oversell::Backorder, ..Default::default() })
        .has_shards());
}

#[test]
fn the_docs_carry_the_current_matrix() {
    let doc = include_str!("../../../docs/inventory-models.md");
    for table in [render_matrix(), render_rules()] {
        assert!(
            doc.contains(&table),
            "docs/inventory-models.md is stale: paste this under \"Kinds and their lifecycle\":\n{table}"
        );
    }
}
