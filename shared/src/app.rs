//! The application: configuration, ports and warm-Lambda caches, built once per process.

use crate::adapters::dynamo::{orders::DynamoOrders, stock::DynamoStock};
use crate::adapters::{eventbridge::EventBridgeBus, sqs::SqsMessages};
use crate::config::Config;
use crate::domain::campaign::{Campaign, GateRefusal};
use crate::domain::{CampaignId, Sku};
use crate::faults::Faults;
use crate::ports::{EventBus, Messages, OrderStore, SkuMeta, StockStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct App {
    /// The function this process serves (metric dimension).
    pub function: String,
    pub config: Config,
    pub stock: Arc<dyn StockStore>,
    pub orders: Arc<dyn OrderStore>,
    pub messages: Arc<dyn Messages>,
    pub bus: Arc<dyn EventBus>,
    pub faults: Faults,
    pub caches: Caches,
}

impl App {
    /// For a Lambda: AWS configuration and settings from the environment.
    pub async fn from_env(function: &str) -> anyhow::Result<App> {
        let config = Config::from_env()?;
        let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self::with_aws(function, config, &sdk)
    }

    pub fn with_aws(function: &str, config: Config, sdk: &aws_config::SdkConfig) -> anyhow::Result<App> {
        let ddb = aws_sdk_dynamodb::Client::new(sdk);
        let stock = Arc::new(DynamoStock::new(ddb.clone(), config.stock_table.clone()));
        let orders = Arc::new(DynamoOrders::new(ddb, config.order_table.clone()));
        let messages = Arc::new(SqsMessages::new(
            aws_sdk_sqs::Client::new(sdk),
            config.payment_timeout_queue_url.clone(),
            config.reservation_check_queue_url.clone(),
        ));
        let bus = Arc::new(EventBridgeBus::new(aws_sdk_eventbridge::Client::new(sdk), config.event_bus_name.clone()));
        Self::with_ports(function, config, stock, orders, messages, bus)
    }

    pub fn with_ports(
        function: &str,
        config: Config,
        stock: Arc<dyn StockStore>,
        orders: Arc<dyn OrderStore>,
        messages: Arc<dyn Messages>,
        bus: Arc<dyn EventBus>,
    ) -> anyhow::Result<App> {
        let faults = Faults::parse(&config.faults)?;
        Ok(App {
            function: function.to_owned(),
            config,
            stock,
            orders,
            messages,
            bus,
            faults,
            caches: Caches::default(),
        })
    }

    pub fn count(&self, metric: &str, n: u64) {
        crate::telemetry::count(&self.function, metric, n);
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
}

impl Caches {
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
