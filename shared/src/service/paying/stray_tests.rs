use super::*;
use crate::app::memory_app;
use crate::config::Config;

/// A failed payment retried at the provider (its webhook lost) before the order's deadline:
/// the deadline asks about it before expiring the order (found by the simulator).
#[tokio::test]
async fn a_failed_attempt_is_asked_about_at_the_deadline_and_then_the_order_expires() {
    let (app, w) = memory_app("test", Config::from_lookup(&|_| None).unwrap()).unwrap();
    for (id, retried) in [("o1", false), ("o2", true)] {
        let o = super::tests::order(id, clock::now_s() + 600);
        assert!(app.orders.put_new(&o).await.unwrap());
        let (a, _) = start(&app, &o.user, &o.id, None).await.unwrap();
        let pid = a.attempts[0].payment_id.clone();
        w.provider.settle(&pid, PaymentState::Failed);
        let fail = PaymentNotice {
            payment_id: pid.clone(),
            provider: Provider::Generic,
            order_id: o.id.clone(),
            amount: 500,
            currency: "EUR".into(),
            succeeded: false,
        };
        payments::apply(&app, &fail).await.unwrap();
        if retried {
            w.provider.settle(&pid, PaymentState::Succeeded);
        }
        // its deadline passes
        let now = reread(&app, &o.id).await.unwrap().unwrap();
        let mut past = now.clone();
        past.pay_expire_at = clock::now_s() - 1;
        past.version += 1;
        assert!(app.orders.replace(&now, &past).await.unwrap());
        let out = super::super::timeouts::payment_timeout(&app, &o.id, 0).await.unwrap();
        let end = reread(&app, &o.id).await.unwrap().unwrap();
        assert_eq!(end.status, OrderStatus::Expired, "{id} {out:?}");
        let want = if retried { AttemptState::Succeeded } else { AttemptState::Cancelled };
        assert_eq!(end.attempts[0].state, want, "{id}");
        assert_eq!(end.refunds.len(), usize::from(retried), "{id}: money taken late goes back");
    }
}
