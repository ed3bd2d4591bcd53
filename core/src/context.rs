//! The context every use case runs in: configuration, the ports and warm-Lambda caches. The
//! composition root (the library's `app`) builds it from concrete adapters; services and handlers only
//! see the ports.

use crate::config::Config;
use crate::domain::campaign::{Campaign, GateRefusal};
use crate::domain::{CampaignId, Sku};
use crate::faults::Faults;
use crate::ports::{
    Campaigns, Catalogue, CodePools, EventBus, Locks, Messages, OrderStore, PaymentProvider, Queues, Shards, SkuMeta,
    StockStore, SweepIndex, WebhookKeys,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct App {
    /// The function this process serves (metric dimension).
    pub function: String,
    pub config: Config,
    /// The stock table's ports, one field each (docs/architecture.md, "Ports"): SKUs and their
    /// metadata, stock shards, locks, campaigns, code pools, waiting rooms. Over one table they
    /// are one object ([`App::set_stock`]); a use case names the port it needs.
    pub catalogue: Arc<dyn Catalogue>,
    pub shards: Arc<dyn Shards>,
    pub locks: Arc<dyn Locks>,
    pub campaigns: Arc<dyn Campaigns>,
    pub code_pools: Arc<dyn CodePools>,
    pub queues: Arc<dyn Queues>,
    pub orders: Arc<dyn OrderStore>,
    pub messages: Arc<dyn Messages>,
    pub bus: Arc<dyn EventBus>,
    /// Paged reads of the sparse indexes (the reconcile sweep).
    pub sweep: Arc<dyn SweepIndex>,
    /// "Notify me" waitlists of sold-out SKUs (docs/waitlist.md).
    pub waitlists: Arc<dyn crate::ports::Waitlists>,
    /// Whole-store reads for the daily ledger report (docs/operations.md, "Daily ledger report").
    pub audit: Arc<dyn crate::ports::Audit>,
    /// The stock journal (docs/after-sale.md, "Stock journal").
    pub journal: Arc<dyn crate::ports::Journal>,
    /// The sale room: the sales switch, live counters, low-stock marks (docs/operations.md).
    pub sale: Arc<dyn crate::ports::SaleStore>,
    /// The payment webhook's HMAC keys (every one returned is accepted).
    pub webhook_keys: Arc<dyn WebhookKeys>,
    /// Stripe's webhook endpoint secrets (docs/after-sale.md, "Stripe"; every one returned verifies).
    pub stripe_webhook_keys: Arc<dyn WebhookKeys>,
    /// The refund confirmation's own HMAC keys (`POST /payments/refunds`, security review L1):
    /// a payment callback's signature cannot confirm a refund.
    pub refund_webhook_keys: Arc<dyn WebhookKeys>,
    /// The code pool keyring's secret(s), current first (docs/code-pools.md).
    pub code_keys: Arc<dyn WebhookKeys>,
    /// The admission tokens' HMAC keys, current first (docs/waiting-room.md): new tokens are
    /// signed with the first, every one returned verifies (a rotation's previous key too).
    pub admission_keys: Arc<dyn WebhookKeys>,
    /// The key service new codes are sealed under (KMS, envelope encryption; docs/code-pools.md,
    /// "Sealed under KMS"). `None`: uploads seal v2 under the keyring, and v3 codes cannot open.
    pub code_key_service: Option<Arc<dyn crate::ports::CodeKeyService>>,
    /// Where refunds are issued, by the provider the payment came through (docs/after-sale.md,
    /// "Providers").
    pub providers: Providers,
    /// The outside supplier of SUPPLIER SKUs (docs/suppliers.md).
    pub supplier: Arc<dyn crate::ports::SupplierPort>,
    pub faults: Faults,
    pub caches: Caches,
    /// Time limits of this function's AWS calls and of one HTTP request (docs/runbook.md,
    /// "Timeouts and retries").
    pub budget: SdkBudget,
    /// The push channel: connections, the WebSocket API's management endpoint, watch timers
    /// (docs/push.md).
    pub push: crate::ports::push::PushPorts,
}

impl App {
    /// Every stock port from one store (the stock table's adapter, or the in-memory one).
    pub fn set_stock(&mut self, store: Arc<dyn StockStore>) {
        self.catalogue = store.clone();
        self.shards = store.clone();
        self.locks = store.clone();
        self.campaigns = store.clone();
        self.code_pools = store.clone();
        self.queues = store;
    }
}

/// Connect/attempt/operation timeouts and retry attempts of every AWS client, chosen per path:
/// an HTTP caller (checkout above all) is answered inside `request`, so each call gets a tight
/// attempt timeout and one retry; consumers and the sweep are retried by their source anyway,
/// so they can wait longer for a slow dependency, inside their Lambda timeout (10 s / 60 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SdkBudget {
    pub connect: Duration,
    /// One HTTP attempt of one AWS call.
    pub attempt: Duration,
    /// One AWS call, retries and backoff included.
    pub operation: Duration,
    /// Attempts per call (1 = no retry). Throttles are retried too, with the SDK's backoff.
    pub max_attempts: u32,
    pub max_backoff: Duration,
    /// A whole HTTP request (create-order answers 503 "retry" past it).
    pub request: Duration,
}

impl SdkBudget {
    pub fn for_function(function: &str) -> SdkBudget {
        let ms = Duration::from_millis;
        match crate::registry::trigger_of(function) {
            // A checkout is at most ~4 sequential calls (freeze, re-split, order put, VOID on
            // failure); 1.8 s each is far above DynamoDB's single-digit ms, and 5 s for the
            // request leaves the 10 s Lambda timeout unreached.
            Some(crate::registry::Trigger::Http) => SdkBudget {
                connect: ms(500),
                attempt: ms(800),
                operation: ms(1800),
                max_attempts: 2,
                max_backoff: ms(200),
                request: ms(5000),
            },
            _ => SdkBudget {
                connect: ms(2000),
                attempt: ms(3000),
                operation: ms(8000),
                max_attempts: 4,
                max_backoff: ms(2000),
                request: ms(9000),
            },
        }
    }

    /// Every duration times `f` (the local emulator serialises DynamoDB requests and is far
    /// slower than AWS under load: `HOLDFAST_SDK_TIMEOUT_SCALE`).
    pub fn scaled(self, f: f64) -> SdkBudget {
        let m = |d: Duration| d.mul_f64(f.max(0.01));
        SdkBudget {
            connect: m(self.connect),
            attempt: m(self.attempt),
            operation: m(self.operation),
            max_backoff: m(self.max_backoff),
            request: m(self.request),
            ..self
        }
    }
}

impl App {
    /// The same app issuing refunds through `providers`.
    pub fn with_providers(self, providers: Providers) -> App {
        App { providers, ..self }
    }

    /// The same app booking SUPPLIER SKUs through `supplier`.
    pub fn with_supplier(self, supplier: Arc<dyn crate::ports::SupplierPort>) -> App {
        App { supplier, ..self }
    }

    /// The same app with its stock journal at `journal`.
    pub fn with_journal(self, journal: Arc<dyn crate::ports::Journal>) -> App {
        App { journal, ..self }
    }

    /// The same app reading the whole store (the ledger report) through `audit`.
    pub fn with_audit(self, audit: Arc<dyn crate::ports::Audit>) -> App {
        App { audit, ..self }
    }

    /// The same app reading the sweep's indexes through `sweep`.
    pub fn with_sweep(self, sweep: Arc<dyn SweepIndex>) -> App {
        App { sweep, ..self }
    }

    pub fn count(&self, metric: &str, n: u64) {
        crate::telemetry::count(&self.function, metric, n);
    }
}

/// The refund side of each payment provider.
#[derive(Clone)]
pub struct Providers {
    pub generic: Arc<dyn PaymentProvider>,
    pub stripe: Arc<dyn PaymentProvider>,
}

impl Providers {
    pub fn get(&self, p: crate::domain::order::Provider) -> &Arc<dyn PaymentProvider> {
        match p {
            crate::domain::order::Provider::Generic => &self.generic,
            crate::domain::order::Provider::Stripe => &self.stripe,
        }
    }
}

/// Warm-Lambda caches. Both are bounded in time by configuration:
/// SKU metadata by `sku_cache_ms` (a price or limit change takes at most that long to apply)
/// and sold-out marks by `soldout_cache_ms` (a release or restock takes at most that long to be
/// seen by this Lambda's fast path; every write stays conditional, so staleness can refuse a
/// buyer early but never oversell).
///
/// Campaign metadata shares the SKU lifetime (prices and limits only: window and pause are
/// judged by write conditions). Closed-sale and exhausted-quota marks share the sold-out
/// lifetime. Public views (`public`) live `public_cache_ms`.
#[derive(Default)]
pub struct Caches {
    skus: Mutex<HashMap<Sku, (i64, SkuMeta)>>,
    sold_out: Mutex<HashMap<Sku, (i64, i64)>>,
    campaigns: Mutex<HashMap<CampaignId, (i64, Campaign)>>,
    closed: Mutex<HashMap<CampaignId, (i64, GateRefusal)>>,
    quota_short: Mutex<HashMap<(CampaignId, Sku), (i64, i64)>>,
    public: Mutex<HashMap<String, (i64, serde_json::Value)>>,
    /// Supplier quotes by SKU and settings: (at, available).
    quotes: Mutex<HashMap<String, (i64, Option<u64>)>>,
    /// Held while a public view is reloaded (single flight).
    pub public_refresh: tokio::sync::Mutex<()>,
    /// The sales switch as last read: (at, switch), kept `switch_cache_ms`.
    switch: Mutex<Option<(i64, crate::domain::sale::SalesSwitch)>>,
    /// When a freeze's transaction last found the switch OPEN (epoch ms), kept `switch_cache_ms`.
    checkout_open_ms: std::sync::atomic::AtomicI64,
    /// Admission-rate buckets by SKU or campaign item (docs/operations.md, "Admission rate").
    buckets: Mutex<HashMap<String, crate::domain::sale::Bucket>>,
    /// Live counters not yet flushed, by live item (service::live).
    pub live: Mutex<HashMap<String, crate::ports::Counters>>,
    /// When this Lambda last flushed its live counters (epoch ms).
    pub live_flushed_ms: std::sync::atomic::AtomicI64,
}

impl Caches {
    pub fn switch(&self, now_ms: i64, ttl_ms: i64) -> Option<crate::domain::sale::SalesSwitch> {
        let s = self.switch.lock().ok()?;
        s.as_ref().filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, s)| s.clone())
    }

    /// Whether a freeze's transaction found the switch OPEN within `ttl_ms`.
    pub fn checkout_open(&self, now_ms: i64, ttl_ms: i64) -> bool {
        let at = self.checkout_open_ms.load(std::sync::atomic::Ordering::Relaxed);
        at > 0 && now_ms - at < ttl_ms
    }

    pub fn put_checkout_open(&self, now_ms: i64) {
        self.checkout_open_ms.store(now_ms, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn put_switch(&self, s: &crate::domain::sale::SalesSwitch, now_ms: i64) {
        if let Ok(mut m) = self.switch.lock() {
            *m = Some((now_ms, s.clone()));
        }
    }

    /// Takes `n` admissions from the bucket `key` (created full at `rate`); `Err(ms)` = refused,
    /// retry after that long.
    pub fn admit(&self, key: &str, rate: u32, n: u32, now_ms: i64) -> Result<(), i64> {
        let Ok(mut m) = self.buckets.lock() else { return Ok(()) };
        m.entry(key.to_owned()).or_insert_with(|| crate::domain::sale::Bucket::full(rate, now_ms)).take(rate, n, now_ms)
    }

    pub fn sku(&self, sku: &Sku, now_ms: i64, ttl_ms: i64) -> Option<SkuMeta> {
        let m = self.skus.lock().ok()?;
        m.get(sku).filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, meta)| meta.clone())
    }

    pub fn put_sku(&self, meta: &SkuMeta, now_ms: i64) {
        if let Ok(mut m) = self.skus.lock() {
            m.insert(meta.sku.clone(), (now_ms, meta.clone()));
        }
    }

    pub fn forget_sku(&self, sku: &Sku) {
        if let Ok(mut m) = self.skus.lock() {
            m.remove(sku);
        }
        if let Ok(mut m) = self.sold_out.lock() {
            m.remove(sku);
        }
    }

    /// Records that a consistent read saw only `available` units of `sku`.
    pub fn mark_short(&self, sku: &Sku, available: i64, now_ms: i64) {
        if let Ok(mut m) = self.sold_out.lock() {
            m.insert(sku.clone(), (now_ms, available));
        }
    }

    pub fn campaign(&self, id: &CampaignId, now_ms: i64, ttl_ms: i64) -> Option<Campaign> {
        let m = self.campaigns.lock().ok()?;
        m.get(id).filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, c)| c.clone())
    }

    pub fn put_campaign(&self, c: &Campaign, now_ms: i64) {
        if let Ok(mut m) = self.campaigns.lock() {
            m.insert(c.id.clone(), (now_ms, c.clone()));
        }
    }

    /// Forgets everything cached about a campaign (after an admin write in this Lambda).
    pub fn forget_campaign(&self, id: &CampaignId) {
        if let Ok(mut m) = self.campaigns.lock() {
            m.remove(id);
        }
        if let Ok(mut m) = self.closed.lock() {
            m.remove(id);
        }
        if let Ok(mut m) = self.quota_short.lock() {
            m.retain(|(c, _), _| c != id);
        }
    }

    /// Records that a consistent read saw the sale closed (not started, ended or paused).
    pub fn mark_closed(&self, id: &CampaignId, why: GateRefusal, now_ms: i64) {
        if let Ok(mut m) = self.closed.lock() {
            m.insert(id.clone(), (now_ms, why));
        }
    }

    pub fn known_closed(&self, id: &CampaignId, now_ms: i64, ttl_ms: i64) -> Option<GateRefusal> {
        let m = self.closed.lock().ok()?;
        m.get(id).filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, g)| *g)
    }

    /// Records that a consistent read saw only `available` units of a campaign item's quota.
    pub fn mark_quota_short(&self, id: &CampaignId, sku: &Sku, available: i64, now_ms: i64) {
        if let Ok(mut m) = self.quota_short.lock() {
            m.insert((id.clone(), sku.clone()), (now_ms, available));
        }
    }

    pub fn known_quota_short(&self, id: &CampaignId, sku: &Sku, quantity: u32, now_ms: i64, ttl_ms: i64) -> bool {
        self.quota_short
            .lock()
            .ok()
            .and_then(|m| m.get(&(id.clone(), sku.clone())).copied())
            .is_some_and(|(at, av)| now_ms - at < ttl_ms && av < i64::from(quantity))
    }

    /// A cached supplier quote, if younger than `ttl_ms`.
    pub fn quote(&self, key: &str, now_ms: i64, ttl_ms: i64) -> Option<Option<u64>> {
        let m = self.quotes.lock().ok()?;
        m.get(key).filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, a)| *a)
    }

    pub fn put_quote(&self, key: &str, available: Option<u64>, now_ms: i64, ttl_ms: i64) {
        if let Ok(mut m) = self.quotes.lock() {
            if m.len() >= 10_000 {
                m.retain(|_, (at, _)| now_ms - *at < ttl_ms);
            }
            m.insert(key.to_owned(), (now_ms, available));
        }
    }

    /// A cached public view by key, if younger than `ttl_ms`.
    pub fn public(&self, key: &str, now_ms: i64, ttl_ms: i64) -> Option<serde_json::Value> {
        let m = self.public.lock().ok()?;
        m.get(key).filter(|(at, _)| now_ms - at < ttl_ms).map(|(_, v)| v.clone())
    }

    pub fn put_public(&self, key: &str, v: &serde_json::Value, now_ms: i64) {
        if let Ok(mut m) = self.public.lock() {
            // bounded: a public route must not let anyone grow a warm Lambda's memory
            if m.len() >= 10_000 {
                m.retain(|_, (at, _)| now_ms - *at < 1_000);
                if m.len() >= 10_000 {
                    m.clear();
                }
            }
            m.insert(key.to_owned(), (now_ms, v.clone()));
        }
    }

    /// Whether a fresh mark says `quantity` cannot be had.
    pub fn known_short(&self, sku: &Sku, quantity: u32, now_ms: i64, ttl_ms: i64) -> bool {
        self.sold_out
            .lock()
            .ok()
            .and_then(|m| m.get(sku).copied())
            .is_some_and(|(at, av)| now_ms - at < ttl_ms && av < i64::from(quantity))
    }
}
