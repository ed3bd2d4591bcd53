//! The application: configuration, ports and warm-Lambda caches, built once per process.

use crate::adapters::dynamo::{orders::DynamoOrders, stock::DynamoStock};
use crate::adapters::{eventbridge::EventBridgeBus, sqs::SqsMessages};
use crate::config::Config;
use crate::domain::Sku;
use crate::faults::Faults;
use crate::ports::{EventBus, Messages, OrderStore, SkuMeta, StockStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Overrides the AWS endpoint of every SDK client when set and non-empty (`sam local` only).
pub const AWS_ENDPOINT_VAR: &str = "HOLDFAST_AWS_ENDPOINT";

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
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        // `sam local` points the functions at the local emulator through this variable; the
        // template declares it empty, which in AWS means the regional endpoints (README, "Local
        // test with sam local").
        if let Some(url) = std::env::var(AWS_ENDPOINT_VAR).ok().filter(|u| !u.is_empty()) {
            loader = loader.endpoint_url(url);
        }
        let sdk = loader.load().await;
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
#[derive(Default)]
pub struct Caches {
    skus: Mutex<HashMap<Sku, (i64, SkuMeta)>>,
    sold_out: Mutex<HashMap<Sku, (i64, i64)>>,
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

    /// Whether a fresh mark says `quantity` cannot be had.
    pub fn known_short(&self, sku: &Sku, quantity: u32, now_ms: i64, ttl_ms: i64) -> bool {
        self.sold_out
            .lock()
            .ok()
            .and_then(|m| m.get(sku).copied())
            .is_some_and(|(at, av)| now_ms - at < ttl_ms && av < i64::from(quantity))
    }
}
