use super::*;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}
fn day(s: &str) -> Day {
    Day::parse(s).unwrap()
}
fn model(m: Management, u: Unit, d: Deduct) -> InventoryModel {
    InventoryModel { management: m, unit: u, deduct: d, ..Default::default() }
}

#[test]
fn models_that_make_no_sense_are_refused_by_name() {
    use Deduct::*;
    use Management::*;
    use Unit::*;
    let s = sku("S");
    let kids = vec![BundleChild { sku: sku("A"), quantity: 2 }];
    assert_eq!(validate(&s, &model(Unlimited, Calendar, AtOrder), &[]), Err(ModelError::UnlimitedUnit));
    assert_eq!(validate(&s, &model(Unlimited, Single, AtPayment), &[]), Err(ModelError::UnlimitedAtPayment));
    assert_eq!(validate(&s, &model(Quantity, Bundle, AtOrder), &[]), Err(ModelError::EmptyBundle));
    assert_eq!(validate(&s, &model(Quantity, Single, AtOrder), &kids), Err(ModelError::ChildrenWithoutBundle));
    let selfish = vec![BundleChild { sku: s.clone(), quantity: 1 }];
    assert_eq!(validate(&s, &model(Quantity, Bundle, AtOrder), &selfish), Err(ModelError::Cycle(s.clone())));
    let twice = vec![kids[0].clone(), kids[0].clone()];
    assert_eq!(validate(&s, &model(Quantity, Bundle, AtOrder), &twice), Err(ModelError::DuplicateChild(sku("A"))));
    assert!(validate(&s, &model(Quantity, Bundle, AtPayment), &kids).is_ok());
    assert!(validate(&s, &model(Quantity, Calendar, AtPayment), &[]).is_ok());
    assert!(validate(&s, &model(Quantity, Single, AtShipment), &[]).is_ok());
    for (m, u) in
        [(Quantity, Calendar), (Quantity, Bundle), (Unlimited, Single), (CodePool, Single), (Supplier, Single)]
    {
        let kids = if u == Bundle { kids.clone() } else { Vec::new() };
        assert_eq!(validate(&s, &model(m, u, AtShipment), &kids), Err(ModelError::AtShipmentShape), "{m:?} {u:?}");
    }
    assert!(!model(Quantity, Single, AtShipment).can_be_child(), "a bundle takes its children at order");
    assert!(validate(&s, &InventoryModel::default(), &[]).is_ok());
    let nested = model(Quantity, Bundle, AtOrder);
    assert_eq!(check_children(&kids, |_| Some(nested)), Err(ModelError::ChildModel(sku("A"))));
    assert_eq!(check_children(&kids, |_| None), Err(ModelError::UnknownChild(sku("A"))));
    // an UNLIMITED child has no shard to draw on: refused, not sold out for ever
    assert_eq!(
        check_children(&kids, |_| Some(model(Unlimited, Single, AtOrder))),
        Err(ModelError::ChildModel(sku("A")))
    );
    assert_eq!(validate(&s, &model(CodePool, Calendar, AtOrder), &[]), Err(ModelError::CodePoolShape));
    assert_eq!(validate(&s, &model(CodePool, Single, AtPayment), &[]), Err(ModelError::CodePoolShape));
    assert!(validate(&s, &model(CodePool, Single, AtOrder), &[]).is_ok());
    assert_eq!(
        check_children(&kids, |_| Some(model(CodePool, Single, AtOrder))),
        Err(ModelError::ChildModel(sku("A")))
    );
    assert_eq!(validate(&s, &model(Supplier, Calendar, AtOrder), &[]), Err(ModelError::SupplierUnit));
    assert_eq!(validate(&s, &model(Supplier, Bundle, AtOrder), &kids), Err(ModelError::SupplierUnit));
    assert_eq!(validate(&s, &model(Supplier, Single, AtPayment), &[]), Err(ModelError::SupplierAtPayment));
    assert!(validate(&s, &model(Supplier, Single, AtOrder), &[]).is_ok());
    let supplier = model(Supplier, Single, AtOrder);
    assert!(!supplier.has_own_stock() && supplier.is_supplier());
    assert_eq!(check_children(&kids, |_| Some(supplier)), Err(ModelError::ChildModel(sku("A"))));
    assert!(strategy(&supplier)
        .draws(&LineSpec { sku: &s, quantity: 3, dates: &[], bundle: &[], today: Day::of_epoch_s(0), stock: None })
        .unwrap()
        .is_empty());
}

#[test]
fn the_default_model_reads_from_an_empty_object_and_a_missing_one() {
    let m: InventoryModel = serde_json::from_str("{}").unwrap();
    assert!(m.is_default() && m.has_own_stock());
    let m: InventoryModel = serde_json::from_str(r#"{"unit":"CALENDAR"}"#).unwrap();
    assert_eq!((m.management, m.unit, m.deduct), (Management::Quantity, Unit::Calendar, Deduct::AtOrder));
    assert!(serde_json::from_str::<InventoryModel>(r#"{"unit":"calendar"}"#).is_err());
}

#[test]
fn dates_are_strict_and_count_their_span() {
    assert!(Day::parse("2026-02-29").is_err());
    assert!(Day::parse("2026-2-28").is_err());
    assert!(Day::parse("2026-02-28T00").is_err());
    assert_eq!(day("2026-12-31").next(), day("2027-01-01"));
    assert_eq!(day("2026-12-30").span(day("2027-01-01")), 3);
    assert_eq!(day("2026-12-30").span(day("2026-12-29")), 0);
    assert_eq!(Day::of_epoch_s(0), day("1970-01-01"));
    assert_eq!(Day::of_epoch_s(1_767_571_200 + 86_399), day("2026-01-05"));
    assert_eq!(Day::of_epoch_s(-1), day("1969-12-31"));
}

#[test]
fn an_epoch_second_beyond_the_calendar_is_its_nearest_end_not_1970() {
    for s in [i64::MAX, i64::MAX / 2, 9_000_000_000_000] {
        assert_eq!(Day::of_epoch_s(s), Day(chrono::NaiveDate::MAX), "{s}");
        assert!(Day::of_epoch_s(s) > day("9999-12-31"));
    }
    for s in [i64::MIN, i64::MIN / 2, -9_000_000_000_000] {
        assert_eq!(Day::of_epoch_s(s), Day(chrono::NaiveDate::MIN), "{s}");
        assert!(Day::of_epoch_s(s) < day("0001-01-01"));
    }
    assert_eq!(serde_json::to_string(&day("2026-01-05")).unwrap(), "\"2026-01-05\"");
}

#[test]
fn each_strategy_names_its_cells() {
    let s = sku("H");
    let today = day("2026-12-01");
    let dates = [day("2026-12-03"), day("2026-12-02")];
    let line = |dates: &'static [Day], bundle: &'static [BundleChild]| LineSpec {
        sku: Box::leak(Box::new(s.clone())),
        quantity: 2,
        dates,
        bundle,
        today,
        stock: None,
    };
    let dates: &'static [Day] = Box::leak(Box::new(dates));
    let cal = strategy(&model(Management::Quantity, Unit::Calendar, Deduct::AtOrder));
    let d = cal.draws(&line(dates, &[])).unwrap();
    assert_eq!(d.iter().map(|c| c.cell().to_string()).collect::<Vec<_>>(), vec!["H@2026-12-02", "H@2026-12-03"]);
    assert_eq!(cal.draws(&line(&[], &[])), Err(LineRefusal::DatesMissing(s.clone())));
    let past: &'static [Day] = Box::leak(Box::new([day("2026-11-30")]));
    assert_eq!(cal.draws(&line(past, &[])), Err(LineRefusal::PastDate(s.clone(), day("2026-11-30"))));
    let kids: &'static [BundleChild] =
        Box::leak(Box::new([BundleChild { sku: sku("A"), quantity: 2 }, BundleChild { sku: sku("B"), quantity: 1 }]));
    let b = strategy(&model(Management::Quantity, Unit::Bundle, Deduct::AtOrder));
    let d = b.draws(&line(&[], kids)).unwrap();
    assert_eq!(d.iter().map(|c| c.quantity).collect::<Vec<_>>(), vec![4, 2]);
    assert_eq!(b.draws(&line(dates, kids)), Err(LineRefusal::DatesNotAllowed(s.clone())));
    let one = |q| CellDraw { fence: None, sku: sku("A"), date: None, quantity: q };
    assert_eq!(b.availability(&[(one(2), 5), (one(1), 9)]), Availability::Units(2));
    assert_eq!(b.availability(&[(one(2), -1)]), Availability::Units(0));
    let u = strategy(&model(Management::Unlimited, Unit::Single, Deduct::AtOrder));
    assert!(u.draws(&line(&[], &[])).unwrap().is_empty());
    assert_eq!(u.availability(&[]), Availability::Unlimited);
    let single = strategy(&InventoryModel::default());
    assert_eq!(
        single.draws(&line(&[], &[])).unwrap(),
        vec![CellDraw { fence: None, sku: s.clone(), date: None, quantity: 2 }]
    );
}

fn wh(list: &[&str], allocation: crate::warehouse::Allocation) -> crate::warehouse::Warehouses {
    use crate::warehouse::{Warehouse, Warehouses};
    Warehouses { list: list.iter().map(|s| Warehouse::parse(s).unwrap()).collect(), allocation }
}

#[test]
fn a_warehouse_model_needs_its_list_and_nothing_else_carries_one() {
    use crate::warehouse::Allocation;
    let m = InventoryModel { unit: Unit::Warehouse, ..InventoryModel::default() };
    let two = wh(&["SH", "BJ"], Allocation::Split);
    assert!(validate_warehouses(&m, Some(&two), None).is_ok());
    assert_eq!(validate_warehouses(&m, None, None), Err(ModelError::WarehousesMissing));
    assert_eq!(validate_warehouses(&m, Some(&wh(&[], Allocation::Single)), None), Err(ModelError::WarehousesMissing));
    let dup = wh(&["SH", "SH"], Allocation::Single);
    assert_eq!(validate_warehouses(&m, Some(&dup), None), Err(ModelError::DuplicateWarehouse("SH".into())));
    let nine: Vec<String> = (0..9).map(|i| format!("W{i}")).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    assert_eq!(validate_warehouses(&m, Some(&wh(&nine, Allocation::Single)), None), Err(ModelError::TooManyWarehouses));
    assert_eq!(
        validate_warehouses(&InventoryModel::default(), Some(&two), None),
        Err(ModelError::WarehousesWithoutModel)
    );
    assert!(validate_warehouses(&InventoryModel::default(), None, None).is_ok());
    for (mg, d) in [
        (Management::Quantity, Deduct::AtPayment),
        (Management::Quantity, Deduct::AtShipment),
        (Management::Unlimited, Deduct::AtOrder),
        (Management::CodePool, Deduct::AtOrder),
        (Management::Supplier, Deduct::AtOrder),
    ] {
        let m: InventoryModel =
            serde_json::from_value(serde_json::json!({"management": mg, "unit": "WAREHOUSE", "deduct": d})).unwrap();
        assert_eq!(validate_warehouses(&m, Some(&two), None), Err(ModelError::WarehouseShape), "{mg:?} {d:?}");
    }
    // a warehouse may be added, never dropped
    let three = wh(&["SH", "BJ", "GZ"], Allocation::Single);
    assert!(validate_warehouses(&m, Some(&three), Some(&two)).is_ok());
    assert_eq!(
        validate_warehouses(&m, Some(&wh(&["BJ"], Allocation::Split)), Some(&two)),
        Err(ModelError::WarehouseDropped("SH".into()))
    );
}
