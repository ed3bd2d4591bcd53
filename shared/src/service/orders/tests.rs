//! The order service's own tests (the memory store; docs/architecture.md, "Checkout").

use super::*;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::Quantity;
use crate::ports::SkuMeta;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

fn meta(s: &str, price: u64, currency: &str) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku(s),
        name: s.into(),
        price,
        currency: Currency::parse(currency).unwrap(),
        shards: 1,
        slots: 1,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

fn lines(l: &[(&str, u64)]) -> Vec<LineRequest> {
    l.iter().map(|(s, q)| LineRequest::plain(sku(s), Quantity::new(*q).unwrap())).collect()
}

/// A checkout that froze and died before its order put (the crash-recovery case).
async fn freeze_only(app: &App, user: &UserId, key: &IdempotencyKey, l: &[(&str, u64)]) {
    let lines = lines(l);
    let req = FreezeRequest {
        id: ReservationId::for_order(&OrderId::derive(user, key)),
        kind: ReservationKind::Order,
        user: Some(user.clone()),
        request_hash: request_hash(&lines),
        lines,
        expires_at: clock::now_s() + app.config.payment_ttl_s,
        admission: None,
    };
    let skus: Vec<Sku> = req.lines.iter().map(|l| l.sku.clone()).collect();
    let metas = stock::metas(app, &skus).await.unwrap();
    assert!(matches!(stock::freeze(app, &req, &metas).await.unwrap(), Frozen::Created(_)));
}

#[tokio::test]
async fn a_replay_after_a_currency_change_writes_the_order_in_the_currency_it_was_priced_in() {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.sku_cache_ms = 0;
    c.soldout_cache_ms = 0;
    let (app, w) = memory_app("test", c).unwrap();
    w.stock.seed(meta("A", 500, "EUR"), &[5]);
    w.stock.seed(meta("B", 300, "EUR"), &[5]);
    let user = UserId::parse("u").unwrap();
    let (k1, k2) = (IdempotencyKey::parse("k1").unwrap(), IdempotencyKey::parse("k2").unwrap());
    freeze_only(&app, &user, &k1, &[("A", 2)]).await;
    freeze_only(&app, &user, &k2, &[("A", 1), ("B", 1)]).await;
    // the SKUs are repriced in other currencies (A and B no longer share one)
    for m in w.stock.metas() {
        let currency = Currency::parse(if m.sku == sku("A") { "USD" } else { "GBP" }).unwrap();
        let repriced = SkuMeta { price: 900, currency, version: m.version + 1, ..m.clone() };
        assert!(app.catalogue.put_sku(&repriced, Some(m.version)).await.unwrap());
    }
    // the retries write the orders as their freezes priced them
    let (o, replayed) = create(&app, &user, &k1, lines(&[("A", 2)])).await.unwrap();
    assert!(!replayed, "the order is written now, by the retry");
    assert_eq!((o.currency.to_string().as_str(), o.amount, o.lines[0].unit_price), ("EUR", 1_000, 500));
    let (o, _) = create(&app, &user, &k2, lines(&[("A", 1), ("B", 1)])).await.unwrap();
    assert_eq!((o.currency.to_string().as_str(), o.amount), ("EUR", 800));
    // a new checkout over SKUs that no longer share a currency is refused
    let k3 = IdempotencyKey::parse("k3").unwrap();
    assert!(matches!(create(&app, &user, &k3, lines(&[("A", 1), ("B", 1)])).await, Err(CreateError::MixedCurrency)));
    let v = crate::domain::invariants::check_all(&w.snapshot(app.config.reservation_check_delay_s));
    assert!(v.is_empty(), "{v:#?}");
}
