use super::*;
use crate::invariants::{check_all, CampaignCounters, CodePools, ShardCounts, SkuSnapshot};
use crate::journal::Entry;
use crate::ledger_journal::{anchored, check_journal, Cell, JournalRead};
use crate::reservation::Reservation;
use crate::Sku;

const DAY: i64 = 20_000 * 86_400_000;

fn sku() -> Sku {
    Sku::parse("s").unwrap()
}

fn counts(available: i64, locked: i64, sold: i64) -> ShardCounts {
    ShardCounts { available, locked, sold }
}

/// A lock of `q` units of `s` on shard 0, created at `at_ms` (its line built from its stored
/// form, so fields added later with defaults need no change here).
fn lock(id: &str, status: &str, q: u32, at_ms: i64) -> Reservation {
    let status = match status {
        "FROZEN" => LockStatus::Frozen,
        "SOLD" => LockStatus::Sold,
        "RELEASED" => LockStatus::Released,
        _ => LockStatus::Restocked,
    };
    Reservation {
        id: crate::ReservationId::from_stored(id).unwrap(),
        kind: crate::reservation::ReservationKind::Order,
        status,
        user: Some(crate::UserId::parse("u").unwrap()),
        request_hash: String::new(),
        created_at_ms: at_ms,
        expires_at: 0,
        lines: vec![serde_json::from_value(serde_json::json!({
            "sku": "s", "quantity": q, "unit_price": 1, "currency": "EUR",
            "pieces": [{"shard": 0, "quantity": q}]}))
        .unwrap()],
        oversold: false,
        pending: false,
        code_fate: None,
    }
}

fn snapshot(shard: ShardCounts, stocked: i64, locks: Vec<Reservation>) -> Snapshot {
    Snapshot {
        skus: vec![SkuSnapshot { sku: sku(), stocked, shards: vec![shard], per_user_limit: None }],
        reservations: locks,
        orders: vec![],
        user_counters: vec![],
        now_s: DAY / 1000 + 3_600,
        check_delay_s: 300,
        campaigns: CampaignCounters::default(),
        codes: CodePools::default(),
        backlogs: Vec::new(),
    }
}

fn entry(seq: u32, at_ms: i64, before: ShardCounts, after: ShardCounts) -> Entry {
    Entry {
        sku: sku(),
        shard: 0,
        campaign: None,
        before,
        after,
        quantity: 1,
        cause: "o".into(),
        actor: "system".into(),
        why: "freeze".into(),
        reason: None,
        at_ms,
        seq: format!("{at_ms:013}.{seq:04}"),
    }
}

fn window() -> Window {
    Window { from_ms: DAY, to_ms: DAY + 86_400_000 }
}

fn read(mut oldest_first: Vec<Entry>) -> JournalRead {
    oldest_first.reverse();
    JournalRead { sku: sku(), newest_first: oldest_first, capped: false }
}

#[test]
fn a_day_is_its_utc_midnights() {
    let w = Window::of(Day::parse("1970-01-02").unwrap());
    assert_eq!((w.from_ms, w.to_ms), (86_400_000, 2 * 86_400_000));
    assert!(w.holds(86_400_000) && !w.holds(2 * 86_400_000) && !w.holds(86_399_999));
}

#[test]
fn consistent_ledgers_have_no_differences_and_the_days_locks_are_totalled() {
    let s = snapshot(
        counts(6, 1, 3),
        10,
        vec![
            lock("a", "FROZEN", 1, DAY + 5),
            lock("b", "SOLD", 2, DAY + 6),
            lock("c", "SOLD", 1, DAY - 5),
            lock("d", "RELEASED", 4, DAY + 7),
        ],
    );
    // a FROZEN lock with no order is stranded unless young: this one is an hour old
    let v: Vec<_> = check_all(&s).into_iter().filter(|v| !matches!(v, Violation::StrandedLock { .. })).collect();
    assert!(v.is_empty(), "{v:?}");
    let l = lock_totals(&s, window());
    assert_eq!(l["FROZEN"], Held { locks: 1, units: 1 });
    assert_eq!(l["SOLD"], Held { locks: 1, units: 2 }, "the lock of the day before is not the day's");
    assert_eq!(l["RELEASED"], Held { locks: 1, units: 4 });
    assert_eq!(l["RESTOCKED"], Held::default());
    let t = stock_totals(&s);
    assert_eq!(t, StockTotals { skus: 1, stocked: 10, available: 6, frozen: 1, sold: 3 });
}

#[test]
fn a_planted_frozen_counter_is_named_with_its_sku_and_both_values() {
    // 2 frozen on the counter, 1 in FROZEN locks; the total still matches what was stocked
    let s = snapshot(counts(5, 2, 3), 10, vec![lock("a", "FROZEN", 1, DAY + 5), lock("b", "SOLD", 3, DAY)]);
    let rows: Vec<_> = from_violations(&check_all(&s)).into_iter().filter(|d| d.kind != "stranded_lock").collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].kind.as_str(), rows[0].subject.as_str()), ("locked_mismatch", "s"));
    assert_eq!((rows[0].expected, rows[0].found), (Some(1), Some(2)));
    // and a sold counter off by one is another row of its own
    let s = snapshot(counts(5, 1, 4), 10, vec![lock("a", "FROZEN", 1, DAY + 5), lock("b", "SOLD", 3, DAY)]);
    let kinds: Vec<_> = sorted(from_violations(&check_all(&s))).into_iter().map(|d| d.kind).collect();
    assert!(kinds.contains(&"sold_mismatch".to_owned()) && !kinds.contains(&"total_mismatch".to_owned()), "{kinds:?}");
}

#[test]
fn a_journal_that_chains_to_the_counters_holds_and_sums_the_days_movement() {
    let z = counts(0, 0, 0);
    let es = vec![
        entry(1, DAY - 100, z, counts(10, 0, 0)),
        entry(2, DAY + 10, counts(10, 0, 0), counts(9, 1, 0)),
        entry(3, DAY + 20, counts(9, 1, 0), counts(9, 0, 1)),
    ];
    let cells: Vec<Cell> = vec![(None, 0, counts(9, 0, 1))];
    assert!(anchored(&cells, &read(es.clone()).newest_first, window()));
    let mut t = JournalTotals::default();
    let d = check_journal(&read(es), &cells, window(), DAY + 30, &mut t);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!((t.skus_checked, t.entries, t.available, t.frozen, t.sold), (1, 2, -1, 0, 1));
}

#[test]
fn a_missing_entry_is_a_gap_and_a_counter_written_behind_the_journal_is_a_mismatch() {
    let z = counts(0, 0, 0);
    let es = vec![
        entry(1, DAY - 100, z, counts(10, 0, 0)),
        // the freeze 10 → 9/1 was never journaled
        entry(3, DAY + 20, counts(9, 1, 0), counts(9, 0, 1)),
    ];
    let mut t = JournalTotals::default();
    let d = check_journal(&read(es.clone()), &[(None, 0, counts(9, 0, 1))], window(), DAY + 30, &mut t);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0].kind.as_str(), d[0].subject.as_str(), d[0].expected, d[0].found),
        ("journal_gap", "s", Some(10), Some(9))
    );
    // the counter says 8 available where the journal's last write left 9
    let es = vec![entry(1, DAY - 100, z, counts(10, 0, 0)), entry(2, DAY + 10, counts(10, 0, 0), counts(9, 1, 0))];
    let d = check_journal(&read(es), &[(None, 0, counts(8, 1, 0))], window(), DAY + 30, &mut t);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].kind.as_str(), d[0].expected, d[0].found), ("journal_counter_mismatch", Some(9), Some(8)));
    assert!(d[0].detail.contains("shard 0"), "{}", d[0].detail);
}

#[test]
fn a_counter_moved_after_it_was_read_is_not_a_difference_and_a_capped_read_is_not_checked() {
    let z = counts(0, 0, 0);
    let es = vec![
        entry(1, DAY - 100, z, counts(10, 0, 0)),
        entry(2, DAY + 10_000, counts(10, 0, 0), counts(9, 1, 0)),
        // written after the counters were read (at DAY + 15 s): they still show the entry before
        entry(3, DAY + 20_000, counts(9, 1, 0), counts(8, 2, 0)),
    ];
    let mut t = JournalTotals::default();
    let now = [(None, 0, counts(9, 1, 0))];
    assert!(check_journal(&read(es.clone()), &now, window(), DAY + 15_000, &mut t).is_empty());
    // read after that write: the counters must be where the journal ends
    assert_eq!(check_journal(&read(es.clone()), &now, window(), DAY + 30_000, &mut t).len(), 1);
    let capped = JournalRead { capped: true, ..read(es) };
    let mut t = JournalTotals::default();
    assert!(check_journal(&capped, &[(None, 0, counts(0, 0, 0))], window(), DAY, &mut t).is_empty());
    assert_eq!((t.skus_checked, t.skus_unchecked), (0, 1));
}

#[test]
fn a_variant_name_reads_as_a_kind() {
    assert_eq!(snake_case("LockedMismatch"), "locked_mismatch");
    assert_eq!(snake_case("X"), "x");
}
