//! The composition root: builds the [`App`] context from concrete adapters (AWS for a Lambda,
//! memory for unit tests), once per process. The context itself lives in [`crate::context`].
//! A Lambda wires only the ports its `main` names ([`wiring`]); the local stack wires them all.

use crate::adapters::secrets::StaticKeys;
use crate::adapters::sweep::PortSweep;
use crate::config::Config;
use crate::faults::Faults;
use crate::ports::{EventBus, Messages, OrderStore, StockStore};
use std::sync::Arc;
use std::time::Duration;

pub use crate::context::{App, Caches, Providers, SdkBudget};

mod grants;
mod port;
mod unwired;
pub mod wiring;
pub use grants::{check_grants, disagreements};
pub use unwired::Unwired;
pub use wiring::{Port, Wiring};

/// How the tables' items are laid out, for the stream functions that read their change images:
/// the streams come from the DynamoDB tables, so their decoder is that adapter's.
pub use crate::adapters::dynamo::images as table_images;
/// The push channel's `$connect` token check (docs/push.md, "Who may connect") and the stock
/// events' bus source, for push-api.
pub use crate::adapters::eventbridge::STOCK_SOURCE;
pub use crate::adapters::jwks::TokenCheck;

/// Overrides the AWS endpoint of every SDK client when set and non-empty (`sam local` only).
pub const AWS_ENDPOINT_VAR: &str = "HOLDFAST_AWS_ENDPOINT";

/// For a Lambda: AWS configuration and settings from the environment, and the ports `wire`
/// names (the function's `main`).
pub async fn from_env(function: &str, wire: impl FnOnce(Wiring) -> Wiring) -> anyhow::Result<App> {
    let config = Config::from_env()?;
    wire(Wiring::new(function, config, &lambda_sdk_config(&|k| std::env::var(k).ok()))?).build()
}

/// Every port over AWS (and the HTTP peers): the local stack, which serves every function
/// from one process.
pub fn with_aws(function: &str, config: Config, sdk: &aws_config::SdkConfig) -> anyhow::Result<App> {
    Wiring::new(function, config, sdk)?.everything().build()
}

/// The given stock, order, message and bus ports, every other port in memory: the unit tests,
/// the benchmarks and the simulator.
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
        providers: memory_providers(),
        supplier: Arc::new(crate::adapters::supplier::MemorySupplier::new()),
        budget,
        sweep,
        audit: Arc::new(crate::ports::NoAudit),
        journal: Arc::new(crate::adapters::memory::MemoryJournal::new()),
        sale: Arc::new(crate::adapters::memory::MemorySale::new()),
        waitlists: Arc::new(crate::adapters::memory::MemoryWaitlists::new()),
        function: function.to_owned(),
        config,
        catalogue: stock.clone(),
        shards: stock.clone(),
        locks: stock.clone(),
        campaigns: stock.clone(),
        code_pools: stock.clone(),
        queues: stock,
        orders,
        messages,
        bus,
        faults,
        caches: Caches::default(),
        push: crate::adapters::memory::MemoryPush::new().ports(),
    })
}

/// The SDK configuration of a Lambda, from the variables Lambda sets: the region
/// (`AWS_REGION`) and the execution role's credentials (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`). Built by hand rather than by
/// `aws_config::load_defaults`, whose provider chains (profile files, SSO, web identity through
/// STS, IMDS, ECS) a Lambda never uses and every binary would link (docs/architecture.md, "How a
/// function is wired"). `HOLDFAST_AWS_ENDPOINT` (`sam local`: the emulator; the template declares
/// it empty, which in AWS means the regional endpoints) or else `AWS_ENDPOINT_URL` overrides every
/// client's endpoint.
pub fn lambda_sdk_config(get: &dyn Fn(&str) -> Option<String>) -> aws_config::SdkConfig {
    use aws_config::environment::EnvironmentVariableCredentialsProvider;
    use aws_credential_types::provider::SharedCredentialsProvider;
    let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")).filter(|r| !r.is_empty());
    let endpoint = [AWS_ENDPOINT_VAR, "AWS_ENDPOINT_URL"].into_iter().find_map(|k| get(k).filter(|u| !u.is_empty()));
    let mut b = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(region.map(aws_config::Region::new))
        .http_client(crate::adapters::sdk_http::client(None))
        .credentials_provider(SharedCredentialsProvider::new(EnvironmentVariableCredentialsProvider::new()));
    if let Some(url) = endpoint {
        b = b.endpoint_url(url);
    }
    b.build()
}

/// An App over fresh in-memory ports, and the world that holds them (unit tests, benchmarks, the
/// simulator).
pub fn memory_app(function: &str, config: Config) -> anyhow::Result<(App, crate::adapters::memory::MemoryWorld)> {
    let w = crate::adapters::memory::MemoryWorld::default();
    let mut app = with_ports(function, config, w.stock.clone(), w.orders.clone(), w.messages.clone(), w.bus.clone())?
        .with_providers(crate::context::Providers { generic: w.provider.clone(), stripe: w.provider.clone() })
        .with_audit(Arc::new(crate::adapters::memory::MemoryAudit::new(w.stock.clone(), w.orders.clone())));
    app.sale = Arc::new(crate::adapters::memory::MemorySale::sharing(w.stock.switch_cell()));
    Ok((app, w))
}

/// In-memory providers that accept every refund (unit tests).
pub fn memory_providers() -> Providers {
    Providers {
        generic: Arc::new(crate::adapters::memory::MemoryProvider::new()),
        stripe: Arc::new(crate::adapters::memory::MemoryProvider::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn a_lambda_reads_its_region_credentials_and_endpoint_from_the_environment() {
        let sdk = lambda_sdk_config(&env(&[
            ("AWS_REGION", "eu-west-1"),
            (AWS_ENDPOINT_VAR, "http://127.0.0.1:4566"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ]));
        assert_eq!(sdk.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(sdk.endpoint_url(), Some("http://127.0.0.1:4566"));
        assert!(sdk.credentials_provider().is_some());

        // the template's empty HOLDFAST_AWS_ENDPOINT means the regional endpoints
        let sdk = lambda_sdk_config(&env(&[("AWS_DEFAULT_REGION", "us-east-1"), (AWS_ENDPOINT_VAR, "")]));
        assert_eq!(sdk.region().map(|r| r.as_ref()), Some("us-east-1"));
        assert_eq!(sdk.endpoint_url(), None);
        let sdk = lambda_sdk_config(&env(&[(AWS_ENDPOINT_VAR, ""), ("AWS_ENDPOINT_URL", "http://127.0.0.1:9")]));
        assert_eq!(sdk.endpoint_url(), Some("http://127.0.0.1:9"));
    }
}
