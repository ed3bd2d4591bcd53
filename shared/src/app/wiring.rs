//! Per-function wiring (docs/architecture.md, "How a function is wired"). Each Lambda's `main`
//! names the ports its handler reaches — `|w| w.stock_table().order_table().queues()` — and
//! [`Wiring`] builds the AWS (or HTTP peer) adapter of those ports only. Every other port is an
//! [`Unwired`] stand-in whose calls fail naming the port. A port's constructor is reachable from
//! a binary's `main` only when that `main` calls it, so link-time optimisation leaves the SDK
//! clients and adapters of the other ports out of the binary (README, "Package").
//!
//! What a function wires must agree with what its IAM role grants (`crate::permissions`):
//! [`check_grants`] says where they disagree, and each function crate's test calls it on its own
//! `wire` function. The local stack keeps wiring every port ([`Wiring::everything`]).

use super::unwired::Unwired;
use crate::adapters::dynamo::{orders::DynamoOrders, stock::DynamoStock, sweep::DynamoSweep};
use crate::adapters::secrets::{SecretsManagerKeys, StaticKeys};
use crate::adapters::usage::Metering;
use crate::config::{Config, Secret};
use crate::context::{App, Caches, Providers, SdkBudget};
use crate::faults::Faults;
use crate::ports::WebhookKeys;
use std::sync::Arc;
use std::time::Duration;

pub use super::port::Port;

/// `sdk` with `budget`'s timeouts and the standard retry mode bounded to its `max_attempts`
/// ([`SdkBudget`] is plain data in the context; only the wiring knows the SDK).
pub fn budgeted(budget: &SdkBudget, sdk: &aws_config::SdkConfig) -> aws_config::SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(budget.connect)
        .operation_attempt_timeout(budget.attempt)
        .operation_timeout(budget.operation)
        .build();
    let retry = aws_config::retry::RetryConfig::standard()
        .with_max_attempts(budget.max_attempts)
        .with_initial_backoff(Duration::from_millis(20))
        .with_max_backoff(budget.max_backoff);
    sdk.to_builder().timeout_config(timeouts).retry_config(retry).build()
}

/// An [`App`] being wired: every port starts [`Unwired`]; each method below wires one port.
/// The first constructor error is kept and returned by [`Wiring::build`].
pub struct Wiring {
    app: App,
    sdk: aws_config::SdkConfig,
    wired: Vec<Port>,
    error: Option<anyhow::Error>,
}

impl Wiring {
    /// Nothing wired yet: `sdk` gets the function's time limits ([`SdkBudget::for_function`]).
    pub fn new(function: &str, config: Config, sdk: &aws_config::SdkConfig) -> anyhow::Result<Wiring> {
        let budget = SdkBudget::for_function(function).scaled(config.sdk_timeout_scale);
        let sdk = budgeted(&budget, sdk);
        let faults = Faults::parse(&config.faults)?;
        Ok(Wiring { app: unwired_app(function, config, budget, faults), sdk, wired: Vec::new(), error: None })
    }

    /// The ports wired so far, in the order they were wired.
    pub fn ports(&self) -> &[Port] {
        &self.wired
    }

    pub fn build(self) -> anyhow::Result<App> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.app),
        }
    }

    /// Every port (the local stack, which runs every handler in one process).
    pub fn everything(self) -> Wiring {
        self.stock_table()
            .order_table()
            .sweep()
            .audit()
            .journal()
            .queues()
            .bus()
            .webhook_keys()
            .stripe_webhook_keys()
            .refund_webhook_keys()
            .code_keys()
            .admission_keys()
            .code_key_service()
            .providers()
            .supplier()
            .push()
    }

    fn mark(mut self, port: Port) -> Wiring {
        if !self.wired.contains(&port) {
            self.wired.push(port);
        }
        self
    }

    fn keep_error(mut self, r: anyhow::Result<()>) -> Wiring {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e);
        }
        self
    }

    // Every AWS client is built here, each with the interceptor that meters its requests
    // (`usage::Metering`; the benchmark's request counts and round trips come from it).

    fn ddb(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&self.sdk).interceptor(Metering).build(),
        )
    }

    fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::from_conf(aws_sdk_sqs::config::Builder::from(&self.sdk).interceptor(Metering).build())
    }

    fn events(&self) -> aws_sdk_eventbridge::Client {
        aws_sdk_eventbridge::Client::from_conf(
            aws_sdk_eventbridge::config::Builder::from(&self.sdk).interceptor(Metering).build(),
        )
    }

    fn kms(&self) -> aws_sdk_kms::Client {
        aws_sdk_kms::Client::from_conf(aws_sdk_kms::config::Builder::from(&self.sdk).interceptor(Metering).build())
    }

    fn secrets(&self) -> aws_sdk_secretsmanager::Client {
        aws_sdk_secretsmanager::Client::from_conf(
            aws_sdk_secretsmanager::config::Builder::from(&self.sdk).interceptor(Metering).build(),
        )
    }

    pub fn stock_table(mut self) -> Wiring {
        let table = self.app.config.stock_table.clone();
        let stock = Arc::new(DynamoStock::new(self.ddb(), table.clone()));
        self.app.sale = Arc::new(crate::adapters::dynamo::sale::DynamoSale::new(self.ddb(), table));
        self.app.waitlists = stock.clone();
        self.app.set_stock(stock);
        self.mark(Port::StockTable)
    }

    pub fn order_table(mut self) -> Wiring {
        self.app.orders = Arc::new(DynamoOrders::new(self.ddb(), self.app.config.order_table.clone()));
        self.mark(Port::OrderTable)
    }

    pub fn sweep(mut self) -> Wiring {
        let c = &self.app.config;
        self.app.sweep = Arc::new(DynamoSweep::new(self.ddb(), c.stock_table.clone(), c.order_table.clone()));
        self.mark(Port::Sweep)
    }

    pub fn audit(mut self) -> Wiring {
        let c = &self.app.config;
        self.app.audit = Arc::new(crate::adapters::dynamo::audit::DynamoAudit::new(
            self.ddb(),
            c.stock_table.clone(),
            c.order_table.clone(),
        ));
        self.mark(Port::Audit)
    }

    pub fn journal(mut self) -> Wiring {
        let table = self.app.config.journal_table.clone();
        self.app.journal = Arc::new(crate::adapters::dynamo::journal::DynamoJournal::new(self.ddb(), table));
        self.mark(Port::Journal)
    }

    pub fn queues(mut self) -> Wiring {
        let c = &self.app.config;
        self.app.messages = Arc::new(crate::adapters::sqs::SqsMessages::new(
            self.sqs(),
            c.payment_timeout_queue_url.clone(),
            c.reservation_check_queue_url.clone(),
            c.reconcile_work_queue_url.clone(),
        ));
        self.mark(Port::Queues)
    }

    pub fn bus(mut self) -> Wiring {
        let bus = self.app.config.event_bus_name.clone();
        self.app.bus = Arc::new(crate::adapters::eventbridge::EventBridgeBus::new(self.events(), bus));
        self.mark(Port::Bus)
    }

    /// The payment webhook's keys: the secret's current and (for a window after a rotation,
    /// security review M1) previous version, or the configured values when no ARN is set.
    pub fn webhook_keys(mut self) -> Wiring {
        let c = &self.app.config;
        let configured = vec![c.webhook_secret.clone(), c.webhook_secret_previous.clone()];
        self.app.webhook_keys = self.keys(&self.app.config.webhook_secret_arn, self.window(), configured);
        self.mark(Port::WebhookKeys)
    }

    pub fn stripe_webhook_keys(mut self) -> Wiring {
        let c = &self.app.config;
        let configured = vec![c.stripe_webhook_secret.clone()];
        // Stripe signs with both secrets while an endpoint secret is rolled; the old one
        // verifies only for the generic webhook's window.
        self.app.stripe_webhook_keys = self.keys(&c.stripe_webhook_secret_arn, self.window(), configured);
        self.mark(Port::StripeWebhookKeys)
    }

    pub fn refund_webhook_keys(mut self) -> Wiring {
        let c = &self.app.config;
        let configured = vec![c.refund_webhook_secret.clone()];
        self.app.refund_webhook_keys = self.keys(&c.refund_webhook_secret_arn, self.window(), configured);
        self.mark(Port::RefundWebhookKeys)
    }

    pub fn code_keys(mut self) -> Wiring {
        let c = &self.app.config;
        self.app.code_keys = self.keys(&c.code_key_secret_arn, None, vec![c.code_key.clone()]);
        self.mark(Port::CodeKeys)
    }

    pub fn admission_keys(mut self) -> Wiring {
        let c = &self.app.config;
        let configured = vec![c.admission_key.clone(), c.admission_key_previous.clone()];
        self.app.admission_keys = self.keys(&c.admission_key_secret_arn, self.window(), configured);
        self.mark(Port::AdmissionKeys)
    }

    /// New codes are sealed under KMS data keys when a key is configured (docs/code-pools.md);
    /// with none, `code_key_service` is `None` (v2 under the keyring), as before.
    pub fn code_key_service(mut self) -> Wiring {
        let key = self.app.config.code_kms_key_id.clone();
        self.app.code_key_service = (!key.is_empty()).then(|| {
            let kms = crate::adapters::kms::KmsKeys::new(self.kms(), key);
            Arc::new(crate::adapters::kms::CachedKeys::new(Arc::new(kms))) as Arc<dyn crate::ports::CodeKeyService>
        });
        self.mark(Port::CodeKeyService)
    }

    /// The generic provider (with its credential, security review M3) and Stripe refunds when a
    /// Stripe API key (or its secret) is configured.
    pub fn providers(mut self) -> Wiring {
        let r = self.build_providers().map(|p| self.app.providers = p);
        self.keep_error(r).mark(Port::Providers)
    }

    fn build_providers(&self) -> anyhow::Result<Providers> {
        let c = &self.app.config;
        let credential = self.credential(&c.provider_credential_secret_arn, &c.provider_credential);
        let generic = crate::adapters::provider::HttpProvider::new(&c.provider_url, self.app.budget.operation)?
            .with_credential(credential);
        let api = self
            .secret(&c.stripe_api_key_secret_arn, None)
            .or_else(|| (!c.stripe_api_key.is_empty()).then(|| static_keys(vec![c.stripe_api_key.clone()])));
        let stripe: Arc<dyn crate::ports::PaymentProvider> = match api {
            Some(k) => Arc::new(crate::adapters::stripe::StripeRefunds::new(c.stripe_api_base.clone(), k)?),
            None => Arc::new(crate::adapters::provider::Unconfigured("stripe")),
        };
        Ok(Providers { generic: Arc::new(generic), stripe })
    }

    pub fn supplier(mut self) -> Wiring {
        let c = &self.app.config;
        let credential = self.credential(&c.supplier_credential_secret_arn, &c.supplier_credential);
        let r = crate::adapters::supplier::HttpSupplier::new(&c.supplier_url, self.app.budget.operation)
            .map(|s| self.app.supplier = Arc::new(s.with_credential(credential)));
        self.keep_error(r).mark(Port::Supplier)
    }

    /// The push channel over AWS (docs/push.md).
    pub fn push(mut self) -> Wiring {
        use crate::adapters::push::{ManagementApi, SqsPushTimers};
        let c = &self.app.config;
        self.app.push = crate::ports::push::PushPorts {
            connections: Arc::new(crate::adapters::dynamo::connections::DynamoConnections::new(
                self.ddb(),
                c.connection_table.clone(),
            )),
            pusher: Arc::new(ManagementApi::new(&self.sdk, &c.push_endpoint)),
            timers: Arc::new(SqsPushTimers::new(self.sqs(), c.push_queue_url.clone())),
        };
        self.mark(Port::Push)
    }

    /// The previous key verifies only for a window after a rotation (security review M1).
    fn window(&self) -> Option<Duration> {
        Some(Duration::from_secs(self.app.config.previous_key_window_s))
    }

    /// The keys of the secret `arn`, or `configured` when no ARN is set (the local stack, `sam local`).
    fn keys(&self, arn: &str, window: Option<Duration>, configured: Vec<Secret>) -> Arc<dyn WebhookKeys> {
        self.secret(arn, window).unwrap_or_else(|| static_keys(configured))
    }

    /// The credential sent on every provider and supplier call (security review M3).
    fn credential(&self, arn: &str, value: &Secret) -> Arc<dyn WebhookKeys> {
        self.keys(arn, None, vec![value.clone()])
    }

    /// The keys of the secret `arn` (`None` when no ARN is set), the previous version accepted
    /// for `previous_window` after the current one was created (`None`: no limit).
    fn secret(&self, arn: &str, previous_window: Option<Duration>) -> Option<Arc<dyn WebhookKeys>> {
        (!arn.is_empty()).then(|| {
            let keys = SecretsManagerKeys::new(self.secrets(), arn.to_owned());
            Arc::new(match previous_window {
                Some(w) => keys.with_previous_window(w),
                None => keys,
            }) as Arc<dyn WebhookKeys>
        })
    }
}

fn static_keys(values: Vec<Secret>) -> Arc<dyn WebhookKeys> {
    Arc::new(StaticKeys(values))
}

/// The app with every port [`Unwired`].
fn unwired_app(function: &str, config: Config, budget: SdkBudget, faults: Faults) -> App {
    let u = |port| Arc::new(Unwired::new(port, function));
    let push = u(Port::Push);
    App {
        function: function.to_owned(),
        config,
        catalogue: u(Port::StockTable),
        shards: u(Port::StockTable),
        locks: u(Port::StockTable),
        campaigns: u(Port::StockTable),
        code_pools: u(Port::StockTable),
        queues: u(Port::StockTable),
        waitlists: u(Port::StockTable),
        sale: u(Port::StockTable),
        orders: u(Port::OrderTable),
        sweep: u(Port::Sweep),
        audit: u(Port::Audit),
        journal: u(Port::Journal),
        messages: u(Port::Queues),
        bus: u(Port::Bus),
        webhook_keys: u(Port::WebhookKeys),
        stripe_webhook_keys: u(Port::StripeWebhookKeys),
        refund_webhook_keys: u(Port::RefundWebhookKeys),
        code_keys: u(Port::CodeKeys),
        admission_keys: u(Port::AdmissionKeys),
        code_key_service: Some(u(Port::CodeKeyService)),
        providers: Providers { generic: u(Port::Providers), stripe: u(Port::Providers) },
        supplier: u(Port::Supplier),
        faults,
        caches: Caches::default(),
        budget,
        push: crate::ports::push::PushPorts { connections: push.clone(), pusher: push.clone(), timers: push },
    }
}
