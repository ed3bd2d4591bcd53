use super::*;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::order::OrderLine;
use crate::domain::{Currency, Sku};

pub(super) fn order(id: &str, expire_at: i64) -> Order {
    Order {
        id: OrderId::parse(id).unwrap(),
        user: UserId::parse("u").unwrap(),
        status: OrderStatus::PendingPayment,
        lines: vec![OrderLine {
            campaign: None,
            sku: Sku::parse("s").unwrap(),
            quantity: 1,
            unit_price: 500,
            dates: Vec::new(),
        }],
        amount: 500,
        currency: Currency::parse("EUR").unwrap(),
        pay_expire_at: expire_at,
        created_at_ms: 0,
        updated_at_ms: 0,
        version: 1,
        payment_id: None,
        payments: vec![],
        request_hash: String::new(),
        cancel_reason: None,
        refunds: vec![],
        shipment: None,
        return_info: None,
        supplier: Vec::new(),
        attempts: Vec::new(),
        review: None,
        correlation: None,
        settled_at_ms: None,
        details: Default::default(),
        log: Default::default(),
    }
}

async fn app_with(o: &Order) -> (App, crate::adapters::memory::MemoryWorld) {
    let (app, w) = memory_app("test", Config::from_lookup(&|_| None).unwrap()).unwrap();
    assert!(app.orders.put_new(o).await.unwrap());
    (app, w)
}

async fn status(app: &App, id: &OrderId) -> Order {
    reread(app, id).await.unwrap().unwrap()
}

#[tokio::test]
async fn a_start_creates_one_payment_and_a_repeat_answers_the_same() {
    let o = order("o1", clock::now_s() + 600);
    let (app, w) = app_with(&o).await;
    let user = o.user.clone();
    let (a, created) = start(&app, &user, &o.id, None).await.unwrap();
    assert!(created);
    assert_eq!(a.status, OrderStatus::Paying);
    let (b, created) = start(&app, &user, &o.id, None).await.unwrap();
    assert!(!created);
    assert_eq!(a.attempts, b.attempts);
    assert_eq!(w.provider.payments().len(), 1);
    // someone else's order is not found; a closed order cannot start a payment
    let other = UserId::parse("v").unwrap();
    assert!(matches!(start(&app, &other, &o.id, None).await, Err(StartError::Order(OrderError::NotFound))));
}

#[tokio::test]
async fn another_provider_cancels_the_open_attempt_first() {
    let o = order("o2", clock::now_s() + 600);
    let (app, w) = app_with(&o).await;
    start(&app, &o.user, &o.id, Some(Provider::Generic)).await.unwrap();
    // both providers are the same memory provider here: the first payment is cancelled
    let (b, created) = start(&app, &o.user, &o.id, Some(Provider::Stripe)).await.unwrap();
    assert!(created);
    assert_eq!(b.attempts.iter().map(|a| a.state).collect::<Vec<_>>(), [AttemptState::Cancelled, AttemptState::Open]);
    assert_eq!(w.provider.payments()[0].state, PaymentState::Cancelled);
}

#[tokio::test]
async fn a_failed_payment_makes_the_order_payable_again_and_a_second_attempt_pays() {
    let o = order("o3", clock::now_s() + 600);
    let (app, w) = app_with(&o).await;
    let (a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
    let pid = a.attempts[0].payment_id.clone();
    w.provider.settle(&pid, PaymentState::Failed);
    let fail = PaymentNotice {
        payment_id: pid,
        provider: Provider::Generic,
        order_id: o.id.clone(),
        amount: 500,
        currency: "EUR".into(),
        succeeded: false,
    };
    payments::apply(&app, &fail).await.unwrap();
    assert_eq!(status(&app, &o.id).await.status, OrderStatus::PendingPayment);
    let (b, created) = start(&app, &o.user, &o.id, None).await.unwrap();
    assert!(created && b.attempts.len() == 2);
    let pid2 = b.attempts[1].payment_id.clone();
    w.provider.settle(&pid2, PaymentState::Succeeded);
    let ok = PaymentNotice { payment_id: pid2, succeeded: true, ..fail };
    assert_eq!(payments::apply(&app, &ok).await.unwrap(), PaymentResult::Applied);
    let paid = status(&app, &o.id).await;
    assert_eq!(paid.status, OrderStatus::Paid);
    assert_eq!(paid.attempts[1].state, AttemptState::Succeeded);
}

#[tokio::test]
async fn at_the_deadline_the_provider_decides_paid_waiting_or_expired() {
    // paid at the provider, webhook lost → PAID
    let o = order("o4", clock::now_s() + 600);
    let (app, w) = app_with(&o).await;
    let (a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
    w.provider.settle(&a.attempts[0].payment_id, PaymentState::Succeeded);
    assert_eq!(at_deadline(&app, &a).await.unwrap(), DeadlineOutcome::Paid);
    assert_eq!(status(&app, &o.id).await.status, OrderStatus::Paid);

    // processing → waits (a timeout message is sent), within the grace
    let o = order("o5", clock::now_s() + 600);
    assert!(app.orders.put_new(&o).await.unwrap());
    let (a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
    w.provider.settle(&a.attempts[0].payment_id, PaymentState::Processing);
    assert!(matches!(at_deadline(&app, &a).await.unwrap(), DeadlineOutcome::Waiting(_)));
    assert_eq!(status(&app, &o.id).await.status, OrderStatus::Paying);

    // never paid → cancelled at the provider, then EXPIRED
    let o = order("o6", clock::now_s() + 600);
    assert!(app.orders.put_new(&o).await.unwrap());
    let (a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
    assert_eq!(at_deadline(&app, &a).await.unwrap(), DeadlineOutcome::Expired);
    let expired = status(&app, &o.id).await;
    assert_eq!((expired.status, expired.attempts[0].state), (OrderStatus::Expired, AttemptState::Cancelled));
    let at_provider = w.provider.payments().into_iter().find(|p| p.payment_id == a.attempts[0].payment_id).unwrap();
    assert_eq!(at_provider.state, PaymentState::Cancelled, "cancelled before the order expired");
}

#[tokio::test]
async fn processing_past_the_grace_is_cancelled_and_the_order_expires() {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.payment_grace_s = 1;
    let (app, w) = memory_app("test", c).unwrap();
    let o = order("o7", clock::now_s() + 600);
    assert!(app.orders.put_new(&o).await.unwrap());
    let (mut a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
    w.provider.settle(&a.attempts[0].payment_id, PaymentState::Processing);
    // the order as if its deadline and grace had passed
    let mut past = a.clone();
    past.pay_expire_at = clock::now_s() - 5;
    past.version += 1;
    assert!(app.orders.replace(&a, &past).await.unwrap());
    a = past;
    assert_eq!(at_deadline(&app, &a).await.unwrap(), DeadlineOutcome::Expired);
}
