use super::*;
use crate::adapters::memory::MemoryWorld;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::order::{Order, Provider};
use crate::domain::{IdempotencyKey, Quantity, Sku, UserId};
use crate::ports::{Audit, AuditRead, PaymentRequest, PaymentState};
use crate::service::stock::LineRequest;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn app() -> (App, MemoryWorld) {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.soldout_cache_ms = 0;
    c.sku_cache_ms = 0;
    memory_app("test", c).unwrap()
}

async fn sku_with_stock(app: &App, s: &str, units: i64) {
    let req: crate::api::stock::PutSkuRequest =
        serde_json::from_value(serde_json::json!({"name": s, "price": 500, "currency": "EUR", "shards": 2})).unwrap();
    let sku = Sku::parse(s).unwrap();
    crate::service::admin::put_sku(app, &sku, &req.into(), Some("admin")).await.unwrap();
    crate::service::admin::adjust(app, &sku, &format!("stock-{s}"), units, "stock", Some("admin"), &[]).await.unwrap();
}

async fn checkout(app: &App, buyer: &str, s: &str, q: u64) -> Order {
    let lines = vec![LineRequest::plain(Sku::parse(s).unwrap(), Quantity::new(q).unwrap())];
    let key = IdempotencyKey::parse(&format!("{buyer}-{s}-{q}")).unwrap();
    crate::service::orders::create(app, &UserId::parse(buyer).unwrap(), &key, lines).await.unwrap().0
}

/// Pays `o` as its provider's webhook would: captured at the provider, then applied.
async fn pay(app: &App, w: &MemoryWorld, o: &Order) {
    let req = PaymentRequest {
        attempt_key: format!("k-{}", o.id),
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
    };
    let p = app.providers.get(Provider::Generic).create_payment(&req).await.unwrap().unwrap();
    w.provider.settle(&p.payment_id, PaymentState::Succeeded);
    let n = crate::service::payments::PaymentNotice {
        payment_id: p.payment_id,
        provider: Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    crate::service::payments::apply(app, &n).await.unwrap();
    // what stock-events does on OrderPaid
    let rid = crate::domain::ReservationId::for_order(&o.id);
    crate::service::stock::confirm(app, &rid, crate::service::stock::OnReleased::Retake).await.unwrap();
}

fn today() -> Day {
    Day::of_epoch_s(clock::now_s())
}

/// The memory store's read, with the first shard's `locked` counter of `sku` raised by one on
/// the reads numbered in `planted` (0 = the first).
struct Planted {
    inner: Arc<dyn Audit>,
    sku: Sku,
    planted: Vec<usize>,
    reads: AtomicUsize,
    complete: bool,
}

#[async_trait::async_trait]
impl Audit for Planted {
    async fn read_all(&self, max_items: usize) -> anyhow::Result<AuditRead> {
        let mut r = self.inner.read_all(max_items).await?;
        if self.planted.contains(&self.reads.fetch_add(1, Ordering::SeqCst)) {
            if let Some(s) = r.snapshot.skus.iter_mut().find(|s| s.sku == self.sku) {
                s.shards[0].locked += 1;
            }
        }
        r.complete &= self.complete;
        Ok(r)
    }
}

fn planted(app: App, planted: Vec<usize>, complete: bool) -> App {
    let inner = app.audit.clone();
    let sku = Sku::parse("a").unwrap();
    app.with_audit(Arc::new(Planted { inner, sku, planted, reads: AtomicUsize::new(0), complete }))
}

#[tokio::test]
async fn a_day_of_paid_and_open_orders_is_clean_and_its_totals_match() {
    let (app, w) = app();
    sku_with_stock(&app, "a", 10).await;
    let paid = checkout(&app, "u1", "a", 2).await;
    pay(&app, &w, &paid).await;
    checkout(&app, "u2", "a", 1).await;
    let r = run(&app, today()).await.unwrap();
    assert!(r.clean() && r.complete, "{:?}", r.differences);
    let t = &r.totals;
    assert_eq!((t.stock.skus, t.stock.stocked, t.stock.available, t.stock.frozen, t.stock.sold), (1, 10, 7, 1, 2));
    assert_eq!(t.orders.get("PAID"), Some(&1));
    assert_eq!(t.orders.get("PENDING_PAYMENT"), Some(&1));
    assert_eq!(t.locks["SOLD"], ledger::Held { locks: 1, units: 2 });
    assert_eq!(t.locks["FROZEN"], ledger::Held { locks: 1, units: 1 });
    assert_eq!((t.money.paid_orders, t.money.captured.get("EUR")), (1, Some(&1000)));
    // the memory app's two providers are one: it lists the capture for each
    assert!(t.money.payments_matched >= 1, "{:?}", t.money);
    assert_eq!(r.skus.len(), 1);
    assert_eq!(r.skus[0].shards.len(), 2);
    // another day holds none of it, but the counters are as of now
    let r = run(&app, today().next()).await.unwrap();
    assert!(r.clean() && r.totals.orders.is_empty() && r.totals.money.paid_orders == 0, "{r:?}");
    assert_eq!(r.totals.stock.sold, 2);
}

#[tokio::test]
async fn a_planted_counter_is_named_once_per_ledger_it_breaks_and_one_that_explains_itself_is_not() {
    let (app, w) = app();
    sku_with_stock(&app, "a", 10).await;
    let o = checkout(&app, "u1", "a", 1).await;
    pay(&app, &w, &o).await;
    // seen on both reads: named, with its SKU and both values
    let r = run(&planted(app, vec![0, 1], true), today()).await.unwrap();
    let rows: Vec<_> =
        r.differences.iter().map(|d| (d.kind.as_str(), d.subject.as_str(), d.expected, d.found)).collect();
    assert_eq!(rows, vec![("locked_mismatch", "a", Some(0), Some(1)), ("total_mismatch", "a", Some(10), Some(11))]);
    assert_eq!(r.differences_total, 2);
    assert!(!r.clean());
}

#[tokio::test]
async fn a_difference_the_second_read_does_not_see_is_a_write_in_flight() {
    let (app, _w) = app();
    sku_with_stock(&app, "a", 10).await;
    let r = run(&planted(app, vec![0], true), today()).await.unwrap();
    assert!(r.clean(), "{:?}", r.differences);
}

#[tokio::test]
async fn an_incomplete_read_says_so_and_judges_nothing_it_did_not_read_whole() {
    let (app, _w) = app();
    sku_with_stock(&app, "a", 10).await;
    let r = run(&planted(app, vec![0, 1], false), today()).await.unwrap();
    let kinds: Vec<_> = r.differences.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, vec!["read_incomplete"], "the planted counter is not judged on a partial read");
    assert!(!r.complete && !r.clean());
}
