use super::*;
use crate::adapters::memory::MemoryWorld;
use crate::adapters::supplier::MemorySupplier;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::invariants::check_all;
use crate::domain::model::{Deduct, InventoryModel, Management, Unit};
use crate::domain::reservation::LockStatus;
use crate::domain::supplier::SupplierConfig;
use crate::domain::{Currency, IdempotencyKey, Quantity, ReservationId, UserId};
use crate::ports::{Locks, SkuMeta};
use crate::service::orders::{self, CreateError};
use std::sync::Arc;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn meta(s: &str, supplier: bool) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(s),
        name: s.into(),
        price: 700,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        slots: u16::from(!supplier),
        per_user_limit: Some(3),
        stocked: 0,
        version: 1,
        paused: false,
        model: if supplier {
            InventoryModel {
                management: Management::Supplier,
                unit: Unit::Single,
                deduct: Deduct::AtOrder,
                ..Default::default()
            }
        } else {
            InventoryModel::default()
        },
        bundle: Vec::new(),
        supplier: supplier.then_some(SupplierConfig::simulated()),
    }
}

fn world() -> (App, MemoryWorld, Arc<MemorySupplier>) {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.sku_cache_ms = 0;
    c.supplier_quote_cache_ms = 0;
    let (app, w) = memory_app("test", c).unwrap();
    let sup = Arc::new(MemorySupplier::new());
    let app = app.with_supplier(sup.clone());
    w.stock.seed(meta("TOUR", true), &[]);
    w.stock.seed(meta("MUG", false), &[5]);
    (app, w, sup)
}

fn line(s: &str, q: u64) -> LineRequest {
    LineRequest::plain(sku(s), Quantity::new(q).unwrap())
}

async fn create(app: &App, key: &str, lines: Vec<LineRequest>) -> Result<Order, CreateError> {
    let (o, _) = orders::create(app, &UserId::parse("u").unwrap(), &IdempotencyKey::parse(key).unwrap(), lines).await?;
    Ok(o)
}

async fn stored(app: &App, id: &OrderId) -> Order {
    match app.orders.get(id).await.unwrap() {
        Some(OrderRecord::Order(o)) => *o,
        other => panic!("{other:?}"),
    }
}

fn clean(w: &MemoryWorld) {
    let v = check_all(&w.snapshot(0));
    assert!(v.is_empty(), "{v:#?}");
}

#[tokio::test]
async fn a_supplier_order_waits_is_booked_once_and_becomes_payable_when_confirmed() {
    let (app, w, sup) = world();
    let o = create(&app, "k1", vec![line("TOUR", 2)]).await.unwrap();
    assert_eq!(o.status, OrderStatus::AwaitingSupplier);
    assert!(o.supplier[0].booking_id.is_some());
    let started = o.created_at_ms / 1000;
    assert_eq!(o.pay_expire_at, started + app.config.supplier_timeout_s, "the supplier deadline until confirmed");
    assert!(w.messages.sent().iter().any(|(m, d)| matches!(m, Message::SupplierPoll { attempt: 1, .. }) && *d == 2));
    // a replay books nothing more
    assert_eq!(create(&app, "k1", vec![line("TOUR", 2)]).await.unwrap().id, o.id);
    assert_eq!(poll(&app, &o.id, 1, started).await.unwrap(), PollOutcome::Waiting(2));
    assert_eq!(sup.counts(), (1, 0));
    sup.set_all(BookingStatus::Confirmed);
    assert_eq!(poll(&app, &o.id, 2, started).await.unwrap(), PollOutcome::Confirmed);
    let now = stored(&app, &o.id).await;
    assert_eq!((now.status, now.supplier[0].status), (OrderStatus::PendingPayment, BookingStatus::Confirmed));
    assert!(now.pay_expire_at >= clock::now_s() + app.config.payment_ttl_s - 1, "the deadline starts now");
    assert!(w
        .messages
        .sent()
        .iter()
        .any(|(m, _)| matches!(m, Message::PaymentTimeout { due_at, .. } if *due_at == now.pay_expire_at)));
    // a late duplicate poll changes nothing
    assert_eq!(poll(&app, &o.id, 2, started).await.unwrap(), PollOutcome::Ignored);
    clean(&w);
}

#[tokio::test]
async fn a_refused_or_timed_out_booking_fails_the_order_and_closing_cancels_once() {
    let (app, w, sup) = world();
    let refused = create(&app, "k1", vec![line("TOUR", 1)]).await.unwrap();
    sup.set_all(BookingStatus::Failed);
    assert!(matches!(poll(&app, &refused.id, 1, 0).await.unwrap(), PollOutcome::Failed(_)));
    assert_eq!(stored(&app, &refused.id).await.status, OrderStatus::Failed);
    // a refused booking holds nothing: nothing to cancel
    assert_eq!(compensate(&app, &refused.id).await.unwrap(), 0);
    crate::service::stock::release(&app, &ReservationId::for_order(&refused.id)).await.unwrap();

    // silent past the deadline: FAILED, its pending booking cancelled once
    let silent = create(&app, "k2", vec![line("TOUR", 1)]).await.unwrap();
    let o = stored(&app, &silent.id).await;
    let overdue = o.next(clock::now_ms(), |n| n.pay_expire_at = clock::now_s() - 1);
    assert!(app.orders.replace(&o, &overdue).await.unwrap());
    assert!(matches!(poll(&app, &silent.id, 5, 0).await.unwrap(), PollOutcome::Failed(r) if r.contains("in time")));
    assert_eq!(compensate(&app, &silent.id).await.unwrap(), 1);
    assert_eq!(compensate(&app, &silent.id).await.unwrap(), 0, "a replay calls nothing");
    assert_eq!(stored(&app, &silent.id).await.supplier[0].status, BookingStatus::Cancelled);
    crate::service::stock::release(&app, &ReservationId::for_order(&silent.id)).await.unwrap();
    assert_eq!(sup.counts(), (2, 1));
    assert_eq!(
        w.stock.get_reservation(&ReservationId::for_order(&silent.id)).await.unwrap().unwrap().status,
        LockStatus::Released
    );
    clean(&w);
}

/// A SUPPLIER order confirmed by its supplier and paid; its lock SOLD.
async fn paid(app: &App, sup: &MemorySupplier, key: &str) -> Order {
    let o = paid_unconfirmed(app, sup, key).await;
    let rid = ReservationId::for_order(&o.id);
    crate::service::stock::confirm(app, &rid, crate::service::stock::OnReleased::Retake).await.unwrap();
    o
}

/// A SUPPLIER order confirmed by its supplier and paid; its lock still FROZEN (the
/// payment's stock move not run).
async fn paid_unconfirmed(app: &App, sup: &MemorySupplier, key: &str) -> Order {
    let o = create(app, key, vec![line("TOUR", 1)]).await.unwrap();
    sup.set_all(BookingStatus::Confirmed);
    assert_eq!(poll(app, &o.id, 1, 0).await.unwrap(), PollOutcome::Confirmed);
    let notice = crate::service::payments::PaymentNotice {
        payment_id: format!("pay-{key}"),
        provider: Default::default(),
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    crate::service::payments::apply(app, &notice).await.unwrap();
    let now = stored(app, &o.id).await;
    assert_eq!((now.status, now.supplier[0].status), (OrderStatus::Paid, BookingStatus::Confirmed));
    now
}

#[tokio::test]
async fn refunding_a_paid_supplier_order_cancels_its_booking_once() {
    use crate::service::after_sale::{self, Caller, Change};
    let (app, w, sup) = world();
    let o = paid(&app, &sup, "k1").await;
    // a paid order's confirmed booking is what it bought: nothing to cancel
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 0);
    let refund = Change::Refund { reason: "changed my mind".into() };
    // a confirmed booking may cost money at the supplier: the buyer's refund waits for review
    let held = after_sale::apply(&app, Caller::Buyer(&o.user), &o.id, refund).await.unwrap();
    assert_eq!(held.status, OrderStatus::RefundRequested);
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 0, "nothing cancelled while it waits");
    let refunding = after_sale::decide_refund(&app, &o.id, true, "ok", "admin", None).await.unwrap();
    assert_eq!(refunding.status, OrderStatus::Refunding);
    crate::service::stock::restock(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    // refunded before service with its booking still held: an invariant violation
    let v = check_all(&w.snapshot(0));
    assert!(
        matches!(&v[..], [crate::domain::invariants::Violation::RefundedSupplierBookingHeld { order_status, status, .. }]
            if order_status == "REFUNDING" && status == "CONFIRMED"),
        "{v:#?}"
    );
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 1);
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 0, "a redelivered event calls nothing");
    assert_eq!(stored(&app, &o.id).await.supplier[0].status, BookingStatus::Cancelled);
    assert_eq!(sup.counts(), (1, 1));
    clean(&w);
}

#[tokio::test]
async fn the_sweep_cancels_the_bookings_of_refunded_or_closed_orders_whose_cancel_was_lost() {
    use crate::service::after_sale::{self, Caller, Change};
    let (app, w, sup) = world();
    // every lock is stale at once, and a refund left REQUESTED is due at once
    let config = Config { stale_lock_s: 0, refund_redrive_after_s: 0, ..app.config.clone() };
    let app = App { config, ..app };
    let refund = || Change::Refund { reason: "changed my mind".into() };
    // refunded before its confirm ran: its lock FROZEN, its restock and its cancel lost
    let early = paid_unconfirmed(&app, &sup, "k1").await;
    after_sale::apply(&app, Caller::Admin, &early.id, refund()).await.unwrap();
    // refunded and restocked as it should be, its cancel lost (found through its refund,
    // still REQUESTED)
    let late = paid(&app, &sup, "k2").await;
    after_sale::apply(&app, Caller::Admin, &late.id, refund()).await.unwrap();
    crate::service::stock::restock(&app, &ReservationId::for_order(&late.id)).await.unwrap();
    // cancelled once confirmed, its release and its cancel lost
    let closed = create(&app, "k3", vec![line("TOUR", 1)]).await.unwrap();
    sup.set_all(BookingStatus::Confirmed);
    assert_eq!(poll(&app, &closed.id, 1, 0).await.unwrap(), PollOutcome::Confirmed);
    orders::cancel(&app, &closed.user, &closed.id).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(sup.counts(), (3, 0));

    let rep = crate::service::reconcile::run(&app).await.unwrap();
    assert_eq!((rep.locks_restocked, rep.locks_released), (1, 1), "{rep:?}");
    assert_eq!((rep.supplier_bookings_held, rep.supplier_cancels, rep.errors), (3, 3, 0), "{rep:?}");
    for id in [&early.id, &late.id, &closed.id] {
        assert_eq!(stored(&app, id).await.supplier[0].status, BookingStatus::Cancelled);
    }
    assert_eq!(sup.counts(), (3, 3), "each booking cancelled once");
    let rep = crate::service::reconcile::run(&app).await.unwrap();
    assert_eq!((rep.supplier_bookings_held, rep.supplier_cancels, rep.locks_restocked), (0, 0, 0), "{rep:?}");
    assert_eq!(sup.counts(), (3, 3), "a second sweep cancels nothing");
    clean(&w);
}

/// A supplier whose cancel lands while someone else writes the order (a refund confirmed,
/// a late payment recorded): the compensation's own record then loses its compare-and-set.
struct Interfering {
    inner: Arc<MemorySupplier>,
    orders: Arc<dyn crate::ports::OrderStore>,
    order: OrderId,
}

#[async_trait::async_trait]
impl crate::ports::SupplierPort for Interfering {
    async fn quote(&self, req: &BookingRequest<'_>) -> anyhow::Result<crate::ports::Quote> {
        self.inner.quote(req).await
    }
    async fn book(&self, req: &BookingRequest<'_>) -> anyhow::Result<String> {
        self.inner.book(req).await
    }
    async fn status(&self, id: &str) -> anyhow::Result<BookingStatus> {
        self.inner.status(id).await
    }
    async fn cancel(&self, id: &str) -> anyhow::Result<()> {
        self.inner.cancel(id).await?;
        if let Some(OrderRecord::Order(o)) = self.orders.get(&self.order).await? {
            let other = o.next(clock::now_ms(), |n| n.cancel_reason = Some("written meanwhile".into()));
            assert!(self.orders.replace(&o, &other).await?);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_cancel_whose_record_meets_a_concurrent_write_is_recorded_and_never_made_again() {
    let (app, w, sup) = world();
    let o = create(&app, "k1", vec![line("TOUR", 1)]).await.unwrap();
    sup.set_all(BookingStatus::Confirmed);
    assert_eq!(poll(&app, &o.id, 1, 0).await.unwrap(), PollOutcome::Confirmed);
    orders::cancel(&app, &o.user, &o.id).await.unwrap();
    crate::service::stock::release(&app, &ReservationId::for_order(&o.id)).await.unwrap();
    let orders = app.orders.clone();
    let app = app.with_supplier(Arc::new(Interfering { inner: sup.clone(), orders, order: o.id.clone() }));
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 1);
    let now = stored(&app, &o.id).await;
    assert_eq!(now.supplier[0].status, BookingStatus::Cancelled, "recorded over the other write");
    assert_eq!(now.cancel_reason.as_deref(), Some("written meanwhile"), "the other write is kept");
    // a redelivery, even past the cancel's lease, calls nothing
    let later = now.next(clock::now_ms(), |n| {
        n.supplier[0].cancel_started_ms = Some(clock::now_ms() - supplier::CANCEL_LEASE_MS - 1)
    });
    assert!(app.orders.replace(&now, &later).await.unwrap());
    assert_eq!(compensate(&app, &o.id).await.unwrap(), 0);
    assert_eq!(sup.counts(), (1, 1), "one booking, cancelled once");
    clean(&w);
}

#[tokio::test]
async fn the_sweep_decides_a_supplier_order_whose_polls_were_lost() {
    let (app, _w, sup) = world();
    let o = create(&app, "k1", vec![line("TOUR", 1)]).await.unwrap();
    // no poll ever ran; the deadline is long past (beyond the sweep's grace)
    let stored_o = stored(&app, &o.id).await;
    let overdue = stored_o.next(clock::now_ms(), |n| n.pay_expire_at = clock::now_s() - app.config.stale_lock_s - 5);
    assert!(app.orders.replace(&stored_o, &overdue).await.unwrap());
    crate::service::reconcile::run(&app).await.unwrap();
    assert_eq!(stored(&app, &o.id).await.status, OrderStatus::Failed);
    // a supplier that confirmed meanwhile makes the swept order payable instead
    let late = create(&app, "k2", vec![line("TOUR", 1)]).await.unwrap();
    let s2 = stored(&app, &late.id).await;
    let overdue = s2.next(clock::now_ms(), |n| n.pay_expire_at = clock::now_s() - app.config.stale_lock_s - 5);
    assert!(app.orders.replace(&s2, &overdue).await.unwrap());
    sup.set_all(BookingStatus::Confirmed);
    crate::service::reconcile::run(&app).await.unwrap();
    assert_eq!(stored(&app, &late.id).await.status, OrderStatus::PendingPayment);
}

#[tokio::test]
async fn a_warm_lambda_reuses_a_quote_within_its_cache_lifetime() {
    let (app, _w, sup) = world();
    let app = App { config: Config { supplier_quote_cache_ms: 30_000, ..app.config.clone() }, ..app };
    create(&app, "k1", vec![line("TOUR", 1)]).await.unwrap();
    create(&app, "k2", vec![line("TOUR", 1)]).await.unwrap();
    assert_eq!(sup.quotes(), 1, "the second checkout used the cached quote");
    let (app, _w, sup) = world();
    create(&app, "k1", vec![line("TOUR", 1)]).await.unwrap();
    create(&app, "k2", vec![line("TOUR", 1)]).await.unwrap();
    assert_eq!(sup.quotes(), 2, "no cache: every checkout asks");
}

#[tokio::test]
async fn quotes_short_and_mixed_orders_write_nothing() {
    let (app, w, sup) = world();
    sup.set_available(Some(1));
    assert!(matches!(
        create(&app, "k1", vec![line("TOUR", 2)]).await,
        Err(CreateError::Supplier(QuoteError::Short(s))) if s == sku("TOUR")
    ));
    // refused by the kinds' admission (docs/inventory-models.md), or by `lines_of`
    assert!(matches!(
        create(&app, "k2", vec![line("TOUR", 1), line("MUG", 1)]).await,
        Err(CreateError::Supplier(QuoteError::Mixed(_))
            | CreateError::Freeze(crate::service::stock::FreezeError::Admission(_)))
    ));
    assert!(w.stock.reservations().is_empty());
    assert_eq!(sup.counts(), (0, 0));
    // stop-sale: paused through its metadata (it has no shards), nothing booked
    crate::service::admin::set_paused(&app, &sku("TOUR"), true).await.unwrap();
    assert!(matches!(
        create(&app, "k4", vec![line("TOUR", 1)]).await,
        Err(CreateError::Freeze(crate::service::stock::FreezeError::SalePaused(_)))
    ));
    assert_eq!(sup.counts(), (0, 0));
    crate::service::admin::set_paused(&app, &sku("TOUR"), false).await.unwrap();
    assert!(create(&app, "k3", vec![line("TOUR", 1)]).await.is_ok());
    clean(&w);
}
