use super::*;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::model::Unit;

/// An app whose public cache keeps answers `public_cache_ms`, with a calendar SKU `ROOM`
/// stocked 5 a night on 2027-01-01 and 2027-01-02.
async fn hotel(public_cache_ms: i64) -> App {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.public_cache_ms = public_cache_ms;
    let (app, _w) = memory_app("stock-read", c).unwrap();
    let sku = Sku::parse("ROOM").unwrap();
    let spec = SkuSpec {
        name: "Room".into(),
        price: 9000,
        currency: Currency::parse("EUR").unwrap(),
        shards: 2,
        per_user_limit: None,
        model: InventoryModel { unit: Unit::Calendar, ..Default::default() },
        bundle: Vec::new(),
        supplier: None,
        controls: Default::default(),
    };
    put_sku(&app, &sku, &spec, Some("ops")).await.unwrap();
    adjust(&app, &sku, "a1", 5, "season", Some("ops"), &[day("2027-01-01"), day("2027-01-02")]).await.unwrap();
    app
}

fn day(s: &str) -> Day {
    Day::parse(s).unwrap()
}

fn available(c: &CalendarCounts) -> Vec<(String, i64)> {
    c.dates.iter().map(|d| (d.date.to_string(), d.counts.available)).collect()
}

/// Security review 3 M3: each date's counters are kept per `(sku, date)` for
/// `public_cache_ms`, so a repeated or shifted range reads only dates not seen lately.
#[tokio::test]
async fn the_calendar_view_caches_each_date_for_the_public_cache_time() {
    let app = hotel(60_000).await;
    let sku = Sku::parse("ROOM").unwrap();
    let first = calendar(&app, &sku, day("2027-01-01"), day("2027-01-02")).await.unwrap().unwrap();
    assert_eq!(available(&first), [("2027-01-01".into(), 5), ("2027-01-02".into(), 5)]);
    // stock changes behind the cache: the dates already seen answer from it ...
    adjust(&app, &sku, "a2", 2, "more", Some("ops"), &[day("2027-01-02"), day("2027-01-03")]).await.unwrap();
    let shifted = calendar(&app, &sku, day("2027-01-02"), day("2027-01-03")).await.unwrap().unwrap();
    // ... and a date not seen yet is read
    assert_eq!(available(&shifted), [("2027-01-02".into(), 5), ("2027-01-03".into(), 2)]);
    // with the cache off every view reads every date
    let fresh = hotel(0).await;
    adjust(&fresh, &sku, "a2", 2, "more", Some("ops"), &[day("2027-01-02")]).await.unwrap();
    let once = calendar(&fresh, &sku, day("2027-01-02"), day("2027-01-02")).await.unwrap().unwrap();
    adjust(&fresh, &sku, "a3", 1, "more", Some("ops"), &[day("2027-01-02")]).await.unwrap();
    let again = calendar(&fresh, &sku, day("2027-01-02"), day("2027-01-02")).await.unwrap().unwrap();
    assert_eq!((available(&once)[0].1, available(&again)[0].1), (7, 8));
}

#[tokio::test]
async fn the_calendar_view_reads_at_most_its_day_cap_and_knows_skus_not_sold_by_date() {
    let app = hotel(60_000).await;
    let sku = Sku::parse("ROOM").unwrap();
    let year = calendar(&app, &sku, day("2027-01-01"), day("2027-12-31")).await.unwrap().unwrap();
    assert_eq!(year.dates.len(), CALENDAR_VIEW_DAYS);
    assert_eq!(year.dates.last().unwrap().date, day("2027-03-03"));
    assert!(calendar(&app, &Sku::parse("NOPE").unwrap(), day("2027-01-01"), day("2027-01-01"))
        .await
        .unwrap()
        .is_none());
    let plain = Sku::parse("MUG").unwrap();
    let spec = SkuSpec {
        name: "Mug".into(),
        price: 100,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        per_user_limit: None,
        model: InventoryModel::default(),
        bundle: Vec::new(),
        supplier: None,
        controls: Default::default(),
    };
    put_sku(&app, &plain, &spec, Some("ops")).await.unwrap();
    let not = calendar(&app, &plain, day("2027-01-01"), day("2027-01-02")).await.unwrap().unwrap();
    assert_eq!(not, CalendarCounts { by_date: false, dates: Vec::new() });
}
