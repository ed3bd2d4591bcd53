//! Each switch fires, and each is off by default.

use super::*;
use crate::adapters::memory::MemoryStock;
use crate::domain::allocation::Piece;
use crate::domain::reservation::{ReservationKind, ReservedLine};
use crate::domain::{Currency, UserId};
use std::time::Duration;

fn sku() -> Sku {
    Sku::parse("HOT").unwrap()
}

fn meta(shards: u16) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(),
        name: "hot".into(),
        price: 500,
        currency: Currency::parse("EUR").unwrap(),
        shards,
        slots: shards,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

fn store(switches: &str, shards: &[i64]) -> Emulated<MemoryStock> {
    let m = MemoryStock::new();
    m.seed(meta(shards.len() as u16), shards);
    Emulated::new(Arc::new(m), Switches::parse(switches).unwrap())
}

fn reservation(id: &str, shard: u16) -> Reservation {
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: Some(UserId::parse(&format!("u-{id}")).unwrap()),
        request_hash: "h".into(),
        created_at_ms: 1,
        expires_at: 10,
        lines: vec![ReservedLine {
            sku: sku(),
            quantity: 1,
            unit_price: 5,
            currency: Currency::parse("EUR").unwrap(),
            limited: false,
            pieces: vec![Piece { shard, quantity: 1 }],
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

async fn freeze(s: &Emulated<MemoryStock>, id: &str, shard: u16) -> anyhow::Result<Result<(), FreezeRejection>> {
    s.put_frozen(&reservation(id, shard), &FreezeLimits::default()).await
}

#[test]
fn the_switches_parse_with_their_defaults_and_refuse_unknown_names() {
    assert_eq!(Switches::parse("").unwrap(), Switches::default());
    let s = Switches::parse("conflicts, throttle,index-lag").unwrap();
    assert_eq!(s.conflict_window_ms, Some(DEFAULT_CONFLICT_WINDOW_MS));
    assert_eq!(s.throttle_wcu_per_s, Some(PARTITION_WCU_PER_S));
    assert_eq!(s.index_lag_ms, Some(DEFAULT_INDEX_LAG_MS));
    let s = Switches::parse("conflicts=12,throttle=200,index-lag=50,rtt=3").unwrap();
    assert_eq!(
        (s.conflict_window_ms, s.throttle_wcu_per_s, s.index_lag_ms, s.rtt_ms),
        (Some(12), Some(200), Some(50), 3)
    );
    assert!(Switches::parse("conflict").is_err());
    assert!(Switches::parse("conflicts=soon").is_err());
    let s = Switches::parse("stream-split,conflicts").unwrap();
    assert!(s.stream_split && s.conflict_window_ms.is_some());
    assert!(!Switches::parse("conflicts").unwrap().stream_split);
}

#[tokio::test(start_paused = true)]
async fn off_by_default_nothing_conflicts_throttles_or_lags() {
    let s = store("", &[1000]);
    for i in 0..200 {
        assert_eq!(freeze(&s, &format!("o{i}"), 0).await.unwrap(), Ok(()));
    }
    assert_eq!(s.frozen_before(i64::MAX).await.unwrap().len(), 200);
    assert_eq!((s.stats.conflicts(), s.stats.throttles()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_transaction_on_an_item_committed_inside_the_window_is_cancelled_for_a_conflict() {
    let s = store("conflicts=10", &[10, 10]);
    assert_eq!(freeze(&s, "o1", 0).await.unwrap(), Ok(()));
    assert_eq!(freeze(&s, "o2", 0).await.unwrap(), Err(FreezeRejection::Conflict), "same shard, 0 ms later");
    assert_eq!(freeze(&s, "o3", 1).await.unwrap(), Ok(()), "another shard is another item");
    tokio::time::advance(Duration::from_millis(9)).await;
    assert_eq!(freeze(&s, "o2", 0).await.unwrap(), Err(FreezeRejection::Conflict), "9 ms: still inside");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(freeze(&s, "o2", 0).await.unwrap(), Ok(()), "10 ms: the window has passed");
    // a cancelled transaction writes nothing
    let shards = s.inner.shards(&sku());
    assert_eq!((shards[0].locked, shards[1].locked), (2, 1));
    assert_eq!(s.stats.conflicts(), 2);
    // a lock move conflicts the same way
    let r = reservation("o2", 0);
    assert_eq!(s.move_lock(&r, LockStatus::Sold).await.unwrap(), Err(MoveRejection::Conflict));
    tokio::time::advance(Duration::from_millis(10)).await;
    assert_eq!(s.move_lock(&r, LockStatus::Sold).await.unwrap(), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn an_item_past_its_partition_rate_is_throttled_until_its_bucket_refills() {
    let s = store("throttle", &[1000, 1000]);
    // 1,000 WCU/s with 100 ms of burst: 100 units, 2 a transactional write -> 50 at once
    for i in 0..50 {
        assert_eq!(freeze(&s, &format!("o{i}"), 0).await.unwrap(), Ok(()), "freeze {i}");
    }
    let e = freeze(&s, "o50", 0).await.unwrap_err();
    assert!(crate::ports::is_throttled(&e), "{e:#}");
    assert_eq!(freeze(&s, "p0", 1).await.unwrap(), Ok(()), "the other shard has its own partition");
    tokio::time::advance(Duration::from_millis(2)).await;
    assert_eq!(freeze(&s, "o50", 0).await.unwrap(), Ok(()), "2 ms refill 2 units: one more write");
    assert!(crate::ports::is_throttled(&freeze(&s, "o51", 0).await.unwrap_err()));
    assert_eq!(s.inner.shards(&sku())[0].locked, 51, "a throttled transaction wrote nothing");
    assert_eq!(s.stats.throttles(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_frozen_index_sees_a_freeze_and_a_lock_leaving_frozen_only_after_the_lag() {
    let s = store("index-lag=1000", &[10]);
    let id = ReservationId::from_stored("o1").unwrap();
    assert_eq!(freeze(&s, "o1", 0).await.unwrap(), Ok(()));
    assert!(s.frozen_before(i64::MAX).await.unwrap().is_empty(), "not in the index yet");
    tokio::time::advance(Duration::from_millis(1000)).await;
    assert_eq!(s.frozen_before(i64::MAX).await.unwrap(), vec![id.clone()]);
    assert!(s.frozen_before(1).await.unwrap().is_empty(), "the range key still bounds it");
    assert_eq!(s.move_lock(&reservation("o1", 0), LockStatus::Released).await.unwrap(), Ok(()));
    assert_eq!(s.frozen_before(i64::MAX).await.unwrap(), vec![id], "left FROZEN, still indexed");
    tokio::time::advance(Duration::from_millis(1000)).await;
    assert!(s.frozen_before(i64::MAX).await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn each_lock_transaction_takes_the_round_trip_in_model_time() {
    let s = store("rtt=7", &[10]);
    let t0 = tokio::time::Instant::now();
    assert_eq!(freeze(&s, "o1", 0).await.unwrap(), Ok(()));
    assert_eq!(t0.elapsed(), Duration::from_millis(7));
}
