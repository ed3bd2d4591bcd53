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
/// The push channel's `$connect` token check (docs/push.md, "Who may connect") and the stock
/// events' bus source, for push-api.
pub use crate::adapters::eventbridge::STOCK_SOURCE;
pub use crate::adapters::jwks::TokenCheck;

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
        // Webhook keys: the previous version verifies only for a window after the rotation
        // (security review M1).
        let window = Some(Duration::from_secs(config.previous_key_window_s));
        let keys = secret_keys(sdk, &config.webhook_secret_arn, window);
        let refund_keys = secret_keys(sdk, &config.refund_webhook_secret_arn, window);
        let admission_keys = secret_keys(sdk, &config.admission_key_secret_arn, window);
        let stripe_keys = stripe_secrets(sdk, &config);
        let code_keys: Option<Arc<dyn WebhookKeys>> = (!config.code_key_secret_arn.is_empty()).then(|| {
            Arc::new(SecretsManagerKeys::new(
                aws_sdk_secretsmanager::Client::new(sdk),
                config.code_key_secret_arn.clone(),
            )) as Arc<dyn WebhookKeys>
        });
        // The credential sent on every provider and supplier call (security review M3).
        let credential = |arn: &str, value: &crate::config::Secret| {
            secret_keys(sdk, arn, None).unwrap_or_else(|| Arc::new(StaticKeys(vec![value.clone()])))
        };
        let generic = Arc::new(
            crate::adapters::provider::HttpProvider::new(&config.provider_url, budget.operation)?
                .with_credential(credential(&config.provider_credential_secret_arn, &config.provider_credential)),
        );
        let supplier = Arc::new(
            crate::adapters::supplier::HttpSupplier::new(&config.supplier_url, budget.operation)?
                .with_credential(credential(&config.supplier_credential_secret_arn, &config.supplier_credential)),
        );
        let journal =
            Arc::new(crate::adapters::dynamo::journal::DynamoJournal::new(ddb.clone(), config.journal_table.clone()));
        let sale = Arc::new(crate::adapters::dynamo::sale::DynamoSale::new(ddb.clone(), config.stock_table.clone()));
        // New codes are sealed under KMS data keys when a key is configured (docs/code-pools.md).
        let code_key_service = (!config.code_kms_key_id.is_empty()).then(|| {
            let kms = crate::adapters::kms::KmsKeys::new(aws_sdk_kms::Client::new(sdk), config.code_kms_key_id.clone());
            Arc::new(crate::adapters::kms::CachedKeys::new(Arc::new(kms))) as Arc<dyn crate::ports::CodeKeyService>
        });
        // Stripe refunds when a Stripe API key (or its secret) is configured.
        let stripe: Arc<dyn crate::ports::PaymentProvider> = match stripe_keys.api {
            Some(k) => Arc::new(crate::adapters::stripe::StripeRefunds::new(config.stripe_api_base.clone(), k)?),
            None => Arc::new(crate::adapters::provider::Unconfigured("stripe")),
        };
        // Keys set in the environment when no secret ARN is (the local stack, `sam local`).
        let configured = |values: Vec<crate::config::Secret>| Arc::new(StaticKeys(values)) as Arc<dyn WebhookKeys>;
        // Every field is an AWS (or HTTP peer) adapter: a Lambda binary links none of the
        // in-memory ones, which only `with_ports` (unit tests) wires.
        Ok(App {
            webhook_keys: keys.unwrap_or_else(|| {
                configured(vec![config.webhook_secret.clone(), config.webhook_secret_previous.clone()])
            }),
            stripe_webhook_keys: stripe_keys
                .webhook
                .unwrap_or_else(|| configured(vec![config.stripe_webhook_secret.clone()])),
            refund_webhook_keys: refund_keys.unwrap_or_else(|| configured(vec![config.refund_webhook_secret.clone()])),
            code_keys: code_keys.unwrap_or_else(|| configured(vec![config.code_key.clone()])),
            admission_keys: admission_keys.unwrap_or_else(|| {
                configured(vec![config.admission_key.clone(), config.admission_key_previous.clone()])
            }),
            code_key_service,
            providers: Providers { generic, stripe },
            supplier,
            faults: Faults::parse(&config.faults)?,
            budget,
            sweep,
            audit: Arc::new(crate::adapters::dynamo::audit::DynamoAudit::new(
                ddb.clone(),
                config.stock_table.clone(),
                config.order_table.clone(),
            )),
            journal,
            sale,
            function: function.to_owned(),
            waitlists: stock.clone(),
            stock,
            orders,
            messages,
            bus,
            caches: Caches::default(),
            push: push_ports(sdk, &config),
            config,
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
        let refund_webhook_keys = Arc::new(StaticKeys(vec![config.refund_webhook_secret.clone()]));
        let code_keys = Arc::new(StaticKeys(vec![config.code_key.clone()]));
        let admission_keys =
            Arc::new(StaticKeys(vec![config.admission_key.clone(), config.admission_key_previous.clone()]));
        Ok(App {
            code_keys,
            admission_keys,
            code_key_service: None,
            webhook_keys,
            stripe_webhook_keys,
            refund_webhook_keys,
            providers: Providers::memory(),
            supplier: Arc::new(crate::adapters::supplier::MemorySupplier::new()),
            budget,
            sweep,
            audit: Arc::new(crate::ports::NoAudit),
            journal: Arc::new(crate::adapters::memory::MemoryJournal::new()),
            sale: Arc::new(crate::adapters::memory::MemorySale::new()),
            waitlists: Arc::new(crate::adapters::memory::MemoryWaitlists::new()),
            function: function.to_owned(),
            config,
            stock,
            orders,
            messages,
            bus,
            faults,
            caches: Caches::default(),
            push: crate::adapters::memory::MemoryPush::new().ports(),
        })
    }
}

/// The push channel over AWS (docs/push.md): the connection table, the management endpoint,
/// the push queue.
fn push_ports(sdk: &aws_config::SdkConfig, config: &Config) -> crate::ports::push::PushPorts {
    use crate::adapters::push::{ManagementApi, SqsPushTimers};
    let ddb = aws_sdk_dynamodb::Client::new(sdk);
    crate::ports::push::PushPorts {
        connections: Arc::new(crate::adapters::dynamo::connections::DynamoConnections::new(
            ddb,
            config.connection_table.clone(),
        )),
        pusher: Arc::new(ManagementApi::new(sdk, &config.push_endpoint)),
        timers: Arc::new(SqsPushTimers::new(aws_sdk_sqs::Client::new(sdk), config.push_queue_url.clone())),
    }
}

/// Where the Stripe secrets come from: Secrets Manager when an ARN is set, else configuration;
/// `None` = keep the default (the configured webhook secret; no Stripe refunds).
struct StripeSecrets {
    webhook: Option<Arc<dyn WebhookKeys>>,
    api: Option<Arc<dyn WebhookKeys>>,
}

fn stripe_secrets(sdk: &aws_config::SdkConfig, config: &Config) -> StripeSecrets {
    let api = secret_keys(sdk, &config.stripe_api_key_secret_arn, None).or_else(|| {
        (!config.stripe_api_key.is_empty())
            .then(|| Arc::new(StaticKeys(vec![config.stripe_api_key.clone()])) as Arc<dyn WebhookKeys>)
    });
    // Stripe signs with both secrets while an endpoint secret is rolled; the old one verifies
    // here only for the same window as the generic webhook's previous key.
    let window = Some(Duration::from_secs(config.previous_key_window_s));
    StripeSecrets { webhook: secret_keys(sdk, &config.stripe_webhook_secret_arn, window), api }
}

/// The keys of the secret `arn` (`None` when no ARN is set), the previous version accepted for
/// `previous_window` after the current one was created (`None`: no limit).
fn secret_keys(
    sdk: &aws_config::SdkConfig,
    arn: &str,
    previous_window: Option<Duration>,
) -> Option<Arc<dyn WebhookKeys>> {
    (!arn.is_empty()).then(|| {
        let keys = SecretsManagerKeys::new(aws_sdk_secretsmanager::Client::new(sdk), arn.to_owned());
        Arc::new(match previous_window {
            Some(w) => keys.with_previous_window(w),
            None => keys,
        }) as Arc<dyn WebhookKeys>
    })
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
