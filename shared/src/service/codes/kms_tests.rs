//! The codes service under a KMS key service (v3 sealing): what a reveal costs in key service calls.

use super::*;
use crate::adapters::kms::{CachedKeys, MemoryKeyService};
use crate::app::memory_app;
use crate::config::{Config, Secret};
use crate::domain::model::{Deduct, InventoryModel, Management, Unit};
use crate::domain::{Currency, Quantity};
use crate::service::stock::{LineRequest, OnReleased};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An app whose key service is the in-memory one (behind the warm-Lambda cache), with a pool
/// `C` of `n` codes uploaded in one batch.
async fn pool(n: usize) -> (App, Arc<MemoryKeyService>, Vec<String>) {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.soldout_cache_ms = 0;
    c.sku_cache_ms = 0;
    c.code_key = Secret::new(Keyring::generate_secret("t1").unwrap());
    let (app, _w) = memory_app("test", c).unwrap();
    let mem = Arc::new(MemoryKeyService::new().unwrap());
    let app = App { code_key_service: Some(Arc::new(CachedKeys::new(mem.clone()))), ..app };
    let sku = Sku::parse("C").unwrap();
    let spec = crate::service::admin::SkuSpec {
        controls: Default::default(),
        name: "gift".into(),
        price: 100,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        per_user_limit: None,
        model: InventoryModel {
            management: Management::CodePool,
            unit: Unit::Single,
            deduct: Deduct::AtOrder,
            ..Default::default()
        },
        bundle: Vec::new(),
        supplier: None,
    };
    crate::service::admin::put_sku(&app, &sku, &spec, Some("ops")).await.unwrap();
    let codes: Vec<String> = (0..n).map(|i| format!("GIFT-CODE-{i:04}")).collect();
    upload(&app, &sku, "b1", &codes, Some("ops")).await.unwrap();
    (app, mem, codes)
}

/// A paid order of `user` for `q` codes of `C`, its lock SOLD.
async fn sold(app: &App, user: &str, q: u64) -> OrderId {
    let buyer = UserId::parse(user).unwrap();
    let key = crate::domain::IdempotencyKey::parse("k1").unwrap();
    let line = LineRequest::plain(Sku::parse("C").unwrap(), Quantity::new(q).unwrap());
    let (o, _) = crate::service::orders::create(app, &buyer, &key, vec![line]).await.unwrap();
    let n = crate::service::payments::PaymentNotice {
        payment_id: format!("p-{user}"),
        provider: crate::domain::order::Provider::Generic,
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    crate::service::payments::apply(app, &n).await.unwrap();
    crate::service::stock::confirm(app, &ReservationId::for_order(&o.id), OnReleased::Retake).await.unwrap();
    o.id
}

#[tokio::test]
async fn codes_sealed_under_a_kms_data_key_open_for_their_owner_with_one_key_service_call_per_data_key() {
    let (app, mem, codes) = pool(6).await;
    assert_eq!(mem.generated.load(Ordering::Relaxed), 1, "one GenerateDataKey for the batch of 6");
    let sku = Sku::parse("C").unwrap();
    let stored = app.code_pools.read_codes(&sku, &[(0, 0)]).await.unwrap().remove(0).unwrap();
    assert!(stored.sealed.starts_with("v3.0.0."), "{}", stored.sealed);
    assert_eq!(stored.kid, crate::domain::codes::KMS_KID);
    // a second batch within the cache period reuses the SKU's data key
    let more: Vec<String> = (0..2).map(|i| format!("MORE-CODE-{i:04}")).collect();
    upload(&app, &sku, "b2", &more, Some("ops")).await.unwrap();
    assert_eq!(mem.generated.load(Ordering::Relaxed), 1);
    // two buyers: the first reveal opens the data key once, the rest come from the cache
    let (ann, bob) = (sold(&app, "ann", 2).await, sold(&app, "bob", 1).await);
    let shown = reveal(&app, &UserId::parse("ann").unwrap(), &ann).await.unwrap();
    assert_eq!(shown.len(), 2);
    assert!(shown.iter().all(|(s, c)| *s == sku && codes.contains(c)));
    assert_eq!(mem.decrypted.load(Ordering::Relaxed), 1, "one Decrypt for two codes of one data key");
    let again = reveal(&app, &UserId::parse("ann").unwrap(), &ann).await.unwrap();
    assert_eq!(again, shown);
    assert_eq!(reveal(&app, &UserId::parse("bob").unwrap(), &bob).await.unwrap().len(), 1);
    assert_eq!(mem.decrypted.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_code_whose_data_key_the_key_service_refuses_is_never_shown() {
    let (app, _mem, _codes) = pool(2).await;
    let ann = sold(&app, "ann", 1).await;
    // the same table under another key service (another KMS key): its data keys do not open
    let other = App { code_key_service: Some(Arc::new(MemoryKeyService::new().unwrap())), ..app };
    let r = reveal(&other, &UserId::parse("ann").unwrap(), &ann).await;
    assert!(matches!(r, Err(CodeError::Tampered)), "{r:?}");
    // and without any key service a v3 code is a configuration error, not a code shown
    let none = App { code_key_service: None, ..other };
    let r = reveal(&none, &UserId::parse("ann").unwrap(), &ann).await;
    assert!(matches!(r, Err(CodeError::Keys(_))), "{r:?}");
}

#[tokio::test]
async fn without_a_key_service_uploads_seal_v2_and_both_versions_open_side_by_side() {
    let (app, _mem, codes) = pool(1).await;
    let service = app.code_key_service.clone();
    let v2_app = App { code_key_service: None, ..app };
    let sku = Sku::parse("C").unwrap();
    upload(&v2_app, &sku, "b2", &["OLD-CODE-0001".to_owned()], Some("ops")).await.unwrap();
    let stored = v2_app.code_pools.read_codes(&sku, &[(0, 1)]).await.unwrap().remove(0).unwrap();
    assert!(stored.sealed.starts_with("v2.0.1."), "{}", stored.sealed);
    // the rotation path: a v3 and a v2 code in one order both open
    let app = App { code_key_service: service, ..v2_app };
    let ann = sold(&app, "ann", 2).await;
    let mut shown: Vec<String> =
        reveal(&app, &UserId::parse("ann").unwrap(), &ann).await.unwrap().into_iter().map(|(_, c)| c).collect();
    shown.sort();
    assert_eq!(shown, vec![codes[0].clone(), "OLD-CODE-0001".to_owned()]);
}
