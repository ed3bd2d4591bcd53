//! `holdfast-local sam-env`: the template's resources in the emulator, for `sam local`
//! (`scripts/sam-local.sh`). The local stack's resource creation without its server, pollers or
//! schedules — under `sam local` the functions run in SAM's containers — plus the `--env-vars`
//! file that gives each function's container what CloudFormation would: the table names and
//! queue URLs of the created resources, the ARN of the webhook key's secret (created in the
//! emulator's Secrets Manager holding the local key, so the functions read it the way they do
//! in AWS), and the emulator's URL in
//! `HOLDFAST_AWS_ENDPOINT`. SAM only overrides variables the template declares, which is why
//! that one is declared (empty) in the template's Globals.

use crate::resources;
use crate::stack::{emulator_sdk, DEFAULT_CODE_KEY, DEFAULT_STRIPE_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SECRET};
use crate::template::Template;
use anyhow::{anyhow, Context};
use serde_json::{Map, Value};
use std::path::Path;

/// Creates the resources under `prefix` through `endpoint` and returns the `--env-vars`
/// document: `{"<FunctionLogicalId>": {"VAR": "value", …}, …}`. `container_endpoint` is the
/// emulator's URL as the function containers reach it.
pub async fn env_vars(
    endpoint: &str,
    container_endpoint: &str,
    template: &Path,
    prefix: &str,
) -> anyhow::Result<Value> {
    let t = Template::load(template)?;
    let sdk = emulator_sdk(endpoint).await;
    let mut res = resources::create(&sdk, &t, prefix).await.context("creating resources in the emulator")?;
    let arn = webhook_secret(&sdk, prefix).await.context("creating the webhook key's secret")?;
    res.parameters.insert(WEBHOOK_SECRET_PARAMETER.to_owned(), Some(arn));
    // No simulated payment provider runs beside `sam local` (the local stack starts one): an
    // address nothing listens on, so a refund there fails and is retried like one to a provider
    // that is down (README, "Local test with sam local").
    res.parameters.insert("PaymentProviderUrl".to_owned(), Some(UNREACHABLE_PROVIDER.to_owned()));
    // Nor a simulated supplier: SUPPLIER checkouts answer 503, as with a supplier that is down.
    res.parameters.insert("SupplierUrl".to_owned(), Some(UNREACHABLE_PROVIDER.to_owned()));
    let arn = secret(&sdk, &format!("{prefix}-stripe-webhook-secret"), DEFAULT_STRIPE_WEBHOOK_SECRET)
        .await
        .context("creating Stripe's webhook secret")?;
    res.parameters.insert(STRIPE_WEBHOOK_SECRET_PARAMETER.to_owned(), Some(arn));
    let arn =
        secret(&sdk, &format!("{prefix}-code-key"), DEFAULT_CODE_KEY).await.context("creating the code keyring")?;
    res.parameters.insert(CODE_KEY_PARAMETER.to_owned(), Some(arn));
    // The refund confirmation's own key, Stripe's API key and the peers' credentials: secrets
    // in the emulator too, read at run time as in AWS (security review M3, L1, L8).
    for (parameter, name, value) in [
        ("RefundWebhookSecretArn", "refund-webhook-key", crate::stack::DEFAULT_REFUND_WEBHOOK_SECRET),
        ("StripeApiKeySecretArn", "stripe-api-key", crate::peers::stripe::LOCAL_API_KEY),
        ("ProviderCredentialSecretArn", "provider-credential", crate::stack::DEFAULT_PROVIDER_CREDENTIAL),
        ("SupplierCredentialSecretArn", "supplier-credential", crate::stack::DEFAULT_SUPPLIER_CREDENTIAL),
        ("AdmissionKeySecretArn", "admission-key", crate::stack::DEFAULT_ADMISSION_KEY),
    ] {
        let arn = secret(&sdk, &format!("{prefix}-{name}"), value).await.with_context(|| format!("creating {name}"))?;
        res.parameters.insert(parameter.to_owned(), Some(arn));
    }
    // Test-mode Stripe events only (a `stripe listen` forward or hand-made ones), as locally.
    res.parameters.insert("StripeLivemode".to_owned(), Some("false".to_owned()));
    let mut doc = Map::new();
    for f in &t.functions {
        let mut vars = Map::new();
        for (k, v) in &f.env {
            let value = if k == holdfast::app::AWS_ENDPOINT_VAR {
                Some(container_endpoint.to_owned())
            } else if k == "PUSH_ENDPOINT" {
                // no WebSocket API under `sam local`: nothing listens there, and the fixtures'
                // buyers have no connection to post to (docs/push.md)
                Some(UNREACHABLE_PROVIDER.to_owned())
            } else if k == "PUSH_URL" {
                // likewise: the storefront connects to its own origin (and polls without a socket)
                Some(String::new())
            } else if k == "PUSH_JWT_ISSUER" || k == "PUSH_JWT_AUDIENCE" {
                // the local tokens' issuer and audience, as sam_local checks them
                Some(
                    if k == "PUSH_JWT_ISSUER" {
                        holdfast::sam_local::LOCAL_ISSUER
                    } else {
                        holdfast::sam_local::LOCAL_AUDIENCE
                    }
                    .to_owned(),
                )
            } else if k == holdfast::edge::ORIGIN_VERIFY_VAR {
                // no CloudFront in front of `sam local`: the edge is off, so is its origin check
                Some(String::new())
            } else {
                res.resolve(v)
            };
            let value = value.ok_or_else(|| anyhow!("{}: cannot give {k} a local value ({v:?})", f.logical_id))?;
            vars.insert(k.clone(), Value::String(value));
        }
        if !vars.contains_key(holdfast::app::AWS_ENDPOINT_VAR) {
            return Err(anyhow!(
                "{}: template.yaml does not declare {} (Globals), so sam local cannot point it at the emulator",
                f.logical_id,
                holdfast::app::AWS_ENDPOINT_VAR
            ));
        }
        doc.insert(f.logical_id.clone(), Value::Object(vars));
    }
    Ok(Value::Object(doc))
}

/// Where refunds go under `sam local`: the discard port, nothing listens.
const UNREACHABLE_PROVIDER: &str = "http://127.0.0.1:9";

/// The template parameter naming the webhook key's secret (see `payment-callback` in template.yaml).
const WEBHOOK_SECRET_PARAMETER: &str = "WebhookSecretArn";
/// The template parameter naming Stripe's webhook endpoint secret (`POST /payments/stripe`).
const STRIPE_WEBHOOK_SECRET_PARAMETER: &str = "StripeWebhookSecretArn";
/// The template parameter naming the code pool keyring's secret (docs/code-pools.md).
const CODE_KEY_PARAMETER: &str = "CodeKeySecretArn";

/// The local webhook key as a Secrets Manager secret in the emulator; its ARN. Idempotent: a
/// second run against the same emulator finds the secret and sets its value again.
async fn webhook_secret(sdk: &aws_config::SdkConfig, prefix: &str) -> anyhow::Result<String> {
    secret(sdk, &format!("{prefix}-webhook-key"), DEFAULT_WEBHOOK_SECRET).await
}

/// A secret `name` holding `value` in the emulator (created, or its value set again); its ARN.
async fn secret(sdk: &aws_config::SdkConfig, name: &str, value: &str) -> anyhow::Result<String> {
    let sm = aws_sdk_secretsmanager::Client::new(sdk);
    match sm.create_secret().name(name).secret_string(value).send().await {
        Ok(out) => out.arn.ok_or_else(|| anyhow!("CreateSecret returned no ARN")),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_exists_exception()) => {
            sm.put_secret_value().secret_id(name).secret_string(value).send().await?;
            let out = sm.describe_secret().secret_id(name).send().await?;
            out.arn.ok_or_else(|| anyhow!("DescribeSecret returned no ARN"))
        }
        Err(e) => Err(anyhow::Error::new(e).context("CreateSecret")),
    }
}

/// `holdfast-local sam-env --endpoint URL --container-endpoint URL [--prefix P] [--template T] --out FILE`
pub async fn main(args: &[String]) -> anyhow::Result<()> {
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let endpoint = arg("--endpoint").ok_or_else(|| anyhow!("--endpoint URL is required"))?;
    let container = arg("--container-endpoint").unwrap_or_else(|| endpoint.clone());
    let prefix = arg("--prefix").unwrap_or_else(|| "sam".into());
    let template = arg("--template").unwrap_or_else(|| "template.yaml".into());
    let out = arg("--out").ok_or_else(|| anyhow!("--out FILE is required"))?;
    let doc = env_vars(&endpoint, &container, Path::new(&template), &prefix).await?;
    std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n").with_context(|| format!("writing {out}"))?;
    eprintln!("sam-env: resources created under prefix {prefix:?}; --env-vars file {out}");
    Ok(())
}
