use super::*;
use crate::model::{may_backorder, Deduct, InventoryModel, Management, Oversell, Unit};
use crate::plan::backorder_steps::fill;
use crate::plan::{Action, CounterMove, Op, Target};
use crate::reservation::BackorderLine;
use crate::reservation::ReservationKind;
use crate::Currency;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn lock(id: &str, at: i64, status: LockStatus, q: u32, short: u32, filled: u32) -> Reservation {
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status,
        user: None,
        request_hash: String::new(),
        created_at_ms: at,
        expires_at: 0,
        lines: vec![ReservedLine {
            sku: sku("B"),
            quantity: q,
            unit_price: 1,
            currency: Currency::parse("EUR").unwrap(),
            limited: false,
            pieces: (q - short + filled > 0)
                .then(|| Piece { shard: 0, quantity: q - short + filled })
                .into_iter()
                .collect(),
            campaign: None,
            dates: Vec::new(),
            draws: Vec::new(),
            at_payment: false,
            at_shipment: false,
            codes: None,
            backorder: Some(BackorderLine { short, filled }),
        }],
        oversold: false,
        pending: false,
        code_fate: None,
    }
}

#[test]
fn only_a_counted_single_sku_taken_at_order_may_backorder() {
    let m = |management, unit, deduct| InventoryModel { management, unit, deduct, oversell: Oversell::Backorder };
    assert!(may_backorder(&m(Management::Quantity, Unit::Single, Deduct::AtOrder)));
    for bad in [
        m(Management::Quantity, Unit::Calendar, Deduct::AtOrder),
        m(Management::Quantity, Unit::Bundle, Deduct::AtOrder),
        m(Management::Quantity, Unit::Single, Deduct::AtPayment),
        m(Management::Quantity, Unit::Single, Deduct::AtShipment),
        m(Management::Unlimited, Unit::Single, Deduct::AtOrder),
        m(Management::CodePool, Unit::Single, Deduct::AtOrder),
        m(Management::Supplier, Unit::Single, Deduct::AtOrder),
    ] {
        assert!(!may_backorder(&bad), "{bad:?}");
        assert_eq!(
            crate::model::validate(&sku("S"), &bad, &[]),
            Err(crate::model::ModelError::BackorderShape),
            "{bad:?}"
        );
    }
    let good = m(Management::Quantity, Unit::Single, Deduct::AtOrder);
    assert_eq!(crate::kind::Kind::of(&good), crate::kind::Kind::Backorder);
    assert!(Oversell::default().is_strict());
    let json = serde_json::to_string(&InventoryModel::default()).unwrap();
    assert!(!json.contains("oversell"), "a strict model is stored as before: {json}");
}

#[test]
fn the_freeze_lists_the_shortfall_and_a_release_cancels_what_is_still_open() {
    let r = lock("o1", 1, LockStatus::Frozen, 5, 3, 0);
    let plan = crate::plan::freeze(&r, &Default::default());
    let steps: Vec<_> = plan.iter().filter_map(|a| if let Op::Backlog(s) = a.op { Some(s) } else { None }).collect();
    assert_eq!(steps, vec![BacklogStep { ordered: 3, list: Some(true), ..BacklogStep::default() }]);
    let mut part = lock("o1", 1, LockStatus::Frozen, 5, 3, 1);
    part.lines[0].pieces = vec![Piece { shard: 0, quantity: 3 }];
    let released = crate::plan::lock_move(&part, LockStatus::Frozen, LockStatus::Released, &[]).unwrap();
    assert!(released.contains(&Action {
        target: Target::Backlog { sku: sku("B") },
        op: Op::Backlog(BacklogStep { cancelled: 2, list: Some(false), ..BacklogStep::default() })
    }));
    assert!(released.contains(&Action {
        target: Target::Shard { sku: sku("B"), shard: 0 },
        op: Op::Move { how: CounterMove::Release, quantity: 3, ring: None }
    }));
    let sold = crate::plan::lock_move(&part, LockStatus::Frozen, LockStatus::Sold, &[]).unwrap();
    assert!(sold.iter().all(|a| !matches!(a.target, Target::Backlog { .. })), "a paid order still waits");
    let covered = lock("o2", 1, LockStatus::Frozen, 2, 0, 0);
    assert!(crate::plan::freeze(&covered, &Default::default())
        .iter()
        .all(|a| !matches!(a.target, Target::Backlog { .. })));
}

#[test]
fn fifo_fills_the_oldest_live_orders_first_and_never_a_cancelled_one() {
    let locks = vec![
        lock("late", 30, LockStatus::Sold, 2, 2, 0),
        lock("gone", 5, LockStatus::Released, 4, 4, 0),
        lock("early", 10, LockStatus::Frozen, 3, 2, 0),
        lock("mid", 20, LockStatus::Sold, 3, 3, 1),
    ];
    let b = sku("B");
    let ids = |v: Vec<(ReservationId, u32)>| v.into_iter().map(|(i, n)| (i.as_str().to_owned(), n)).collect::<Vec<_>>();
    assert_eq!(ids(fifo(&b, &locks, 3)), vec![("early".into(), 2), ("mid".into(), 1)]);
    assert_eq!(ids(fifo(&b, &locks, 100)), vec![("early".into(), 2), ("mid".into(), 2), ("late".into(), 2)]);
    assert!(fifo(&b, &locks, 0).is_empty());
}

#[test]
fn a_fill_grows_the_pieces_counts_filled_and_unlists_once_nothing_waits() {
    let b = sku("B");
    let r = lock("o", 1, LockStatus::Sold, 5, 3, 0);
    let pieces = pieces_from(&[1, 4], 3).unwrap();
    assert_eq!(pieces, vec![Piece { shard: 1, quantity: 3 }]);
    let (after, actions) = fill(&r, &b, &pieces, 3).unwrap();
    assert_eq!(after.lines[0].backorder, Some(BackorderLine { short: 3, filled: 3 }));
    assert_eq!(after.lines[0].pieces.iter().map(|p| p.quantity).sum::<u32>(), 5);
    assert_eq!((fill_version(&r), fill_version(&after)), (0, 3));
    assert!(!waits(&after));
    assert!(actions.contains(&Action {
        target: Target::Shard { sku: b.clone(), shard: 1 },
        op: Op::Move { how: CounterMove::Retake, quantity: 3, ring: None }
    }));
    assert_eq!(
        actions.last().unwrap().op,
        Op::Backlog(BacklogStep { filled: 3, list: Some(false), ..BacklogStep::default() })
    );
    // a FROZEN lock's fill is frozen; a partial one stays listed
    let f = lock("f", 1, LockStatus::Frozen, 5, 3, 0);
    let (after, actions) = fill(&f, &b, &[Piece { shard: 0, quantity: 1 }], 1).unwrap();
    assert!(waits(&after));
    assert!(matches!(actions[0].op, Op::Move { how: CounterMove::Freeze, quantity: 1, .. }));
    assert_eq!(actions[1].op, Op::Backlog(BacklogStep { filled: 1, ..BacklogStep::default() }));
    // never more than waits, never a given-back lock, pieces must add up
    assert!(fill(&f, &b, &[Piece { shard: 0, quantity: 4 }], 4).is_none());
    assert!(fill(&lock("x", 1, LockStatus::Released, 5, 3, 0), &b, &[Piece { shard: 0, quantity: 1 }], 1).is_none());
    assert!(fill(&f, &b, &[Piece { shard: 0, quantity: 1 }], 2).is_none());
    assert!(pieces_from(&[1, 1], 3).is_none());
}

#[test]
fn the_backlog_identity_is_ordered_less_filled_less_cancelled() {
    let b = Backlog { ordered: 9, filled: 4, cancelled: 2, open: Vec::new() };
    assert_eq!(b.waiting(), 3);
}
