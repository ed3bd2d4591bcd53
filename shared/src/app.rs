//! The composition root: builds the [`App`] context from concrete adapters (AWS for a Lambda,
//! memory for unit tests), once per process. The context itself lives in [`crate::context`].

use crate::adapters::dynamo::{orders::DynamoOrders, stock::DynamoStock, sweep::DynamoSweep};
use crate::adapters::secrets::{SecretsManagerKeys, StaticKeys};
use crate::adapters::sweep::PortSweep;
use crate::adapters::{eventbridge::EventBridgeBus, sqs::SqsMessages};
use crate::config::Config;
use crate::faults::Faults;
use crate::ports::{EventBus, Messages, OrderStore, StockStore, WebhookKeys};
use std::sync::Arc;
use std::time::Duration;

pub use crate::context::{App, Caches, Providers, SdkBudget};

/// How the tables' items are laid out, for the stream functions that read their change images:
/// the streams come from the DynamoDB tables, so their decoder is that adapter's.
pub use crate::adapters::dynamo::images as table_images;

/// Overrides the AWS endpoint of every SDK client when set and non-empty (`sam local` only).
pub const AWS_ENDPOINT_VAR: &str = "HOLDFAST_AWS_ENDPOINT";

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
        let budget = SdkBudget::for_function(function).scaled(config.sdk_timeout_scale);
        let sdk = &budget.apply(sdk);
        let ddb = aws_sdk_dynamodb::Client::new(sdk);
        let stock = Arc::new(DynamoStock::new(ddb.clone(), config.stock_table.clone()));
        let orders = Arc::new(DynamoOrders::new(ddb.clone(), config.order_table.clone()));
        let sweep = Arc::new(DynamoSweep::new(ddb.clone(), config.stock_table.clone(), config.order_table.clone()));
        let messages = Arc::new(SqsMessages::new(
            aws_sdk_sqs::Client::new(sdk),
            config.payment_timeout_queue_url.clone(),
            config.reservation_check_queue_url.clone(),
            config.reconcile_work_queue_url.clone(),
        ));
        let bus = Arc::new(EventBridgeBus::new(aws_sdk_eventbridge::Client::new(sdk), config.event_bus_name.clone()));
        let keys: Option<Arc<dyn WebhookKeys>> = (!config.webhook_secret_arn.is_empty()).then(|| {
            Arc::new(SecretsManagerKeys::new(
                aws_sdk_secretsmanager::Client::new(sdk),
                config.webhook_secret_arn.clone(),
            )) as Arc<dyn WebhookKeys>
        });
        let stripe_keys = stripe_secrets(sdk, &config);
        let code_keys: Option<Arc<dyn WebhookKeys>> = (!config.code_key_secret_arn.is_empty()).then(|| {
            Arc::new(SecretsManagerKeys::new(
                aws_sdk_secretsmanager::Client::new(sdk),
                config.code_key_secret_arn.clone(),
            )) as Arc<dyn WebhookKeys>
        });
        let generic = Arc::new(crate::adapters::provider::HttpProvider::new(&config.provider_url, budget.operation)?);
        let supplier = Arc::new(crate::adapters::supplier::HttpSupplier::new(&config.supplier_url, budget.operation)?);
        let journal =
            Arc::new(crate::adapters::dynamo::journal::DynamoJournal::new(ddb.clone(), config.journal_table.clone()));
        let app =
            Self::with_ports(function, config, stock, orders, messages, bus)?.with_sweep(sweep).with_journal(journal);
        // Stripe refunds are wired below when a Stripe API key (or its secret) is configured.
        let stripe = Arc::new(crate::adapters::provider::Unconfigured("stripe"));
        let providers = Providers { generic, stripe };
        let app = App { supplier, ..app.with_providers(providers) };
        let app = match keys {
            Some(k) => App { webhook_keys: k, ..app },
            None => app,
        };
        let app = match code_keys {
            Some(k) => App { code_keys: k, ..app },
            None => app,
        };
        let app = match stripe_keys.webhook {
            Some(k) => App { stripe_webhook_keys: k, ..app },
            None => app,
        };
        Ok(match stripe_keys.api {
            Some(k) => {
                let stripe =
                    Arc::new(crate::adapters::stripe::StripeRefunds::new(app.config.stripe_api_base.clone(), k)?);
                let providers = Providers { stripe, ..app.providers.clone() };
                app.with_providers(providers)
            }
            None => app,
        })
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
        let budget = SdkBudget::for_function(function).scaled(config.sdk_timeout_scale);
        let sweep = Arc::new(PortSweep::new(stock.clone(), orders.clone(), Duration::ZERO));
        let webhook_keys =
            Arc::new(StaticKeys(vec![config.webhook_secret.clone(), config.webhook_secret_previous.clone()]));
        let stripe_webhook_keys = Arc::new(StaticKeys(vec![config.stripe_webhook_secret.clone()]));
        let code_keys = Arc::new(StaticKeys(vec![config.code_key.clone()]));
        Ok(App {
            code_keys,
            webhook_keys,
            stripe_webhook_keys,
            providers: Providers::memory(),
            supplier: Arc::new(crate::adapters::supplier::MemorySupplier::new()),
            budget,
            sweep,
            journal: Arc::new(crate::adapters::memory::MemoryJournal::new()),
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
}

/// Where the Stripe secrets come from: Secrets Manager when an ARN is set, else configuration;
/// `None` = keep the default (the configured webhook secret; no Stripe refunds).
struct StripeSecrets {
    webhook: Option<Arc<dyn WebhookKeys>>,
    api: Option<Arc<dyn WebhookKeys>>,
}

fn stripe_secrets(sdk: &aws_config::SdkConfig, config: &Config) -> StripeSecrets {
    let from_arn = |arn: &str| -> Option<Arc<dyn WebhookKeys>> {
        (!arn.is_empty()).then(|| {
            Arc::new(SecretsManagerKeys::new(aws_sdk_secretsmanager::Client::new(sdk), arn.to_owned()))
                as Arc<dyn WebhookKeys>
        })
    };
    let api = from_arn(&config.stripe_api_key_secret_arn).or_else(|| {
        (!config.stripe_api_key.is_empty())
            .then(|| Arc::new(StaticKeys(vec![config.stripe_api_key.clone()])) as Arc<dyn WebhookKeys>)
    });
    StripeSecrets { webhook: from_arn(&config.stripe_webhook_secret_arn), api }
}

impl Providers {
    /// In-memory providers that accept every refund (unit tests).
    pub fn memory() -> Providers {
        Providers {
            generic: Arc::new(crate::adapters::memory::MemoryProvider::new()),
            stripe: Arc::new(crate::adapters::memory::MemoryProvider::new()),
        }
    }
}
