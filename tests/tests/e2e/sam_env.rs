//! `holdfast-local sam-env` (what `make sam-local` / `make test-sam` start from): every variable
//! every function declares gets a local value, and the webhook key is a real Secrets Manager
//! secret in the emulator that the payment callback can read the way it does in AWS.

use crate::common::{emulator, template_path};
use holdfast_local::stack::{emulator_sdk, DEFAULT_STRIPE_WEBHOOK_SECRET, DEFAULT_WEBHOOK_SECRET};
use holdfast_local::template::Template;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sam_env_gives_every_declared_variable_a_value_and_the_webhook_key_a_secret() {
    let prefix = format!("samenv{:06x}", fastrand::u32(..0xff_ffff));
    let doc = holdfast_local::sam::env_vars(&emulator(), "http://container.example:5000", &template_path(), &prefix)
        .await
        .expect("sam-env must configure every function");
    let template = Template::load(&template_path()).unwrap();
    for f in &template.functions {
        let vars = doc[&f.logical_id].as_object().unwrap_or_else(|| panic!("{} missing", f.logical_id));
        for k in f.env.keys() {
            let v = vars.get(k).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{}: no {k}", f.logical_id));
            // the storefront's push URL is empty under `sam local` (no WebSocket API there: the
            // page connects to its own origin and polls, infra/src/sam.rs)
            let may_be_empty =
                k == holdfast::app::AWS_ENDPOINT_VAR || k == holdfast::edge::ORIGIN_VERIFY_VAR || k == "PUSH_URL";
            assert!(!v.is_empty() || may_be_empty, "{}: {k} is empty", f.logical_id);
        }
        assert_eq!(vars[holdfast::app::AWS_ENDPOINT_VAR], "http://container.example:5000");
    }

    let arn = doc["PaymentCallbackFunction"]["WEBHOOK_SECRET_ARN"].as_str().unwrap();
    let sm = aws_sdk_secretsmanager::Client::new(&emulator_sdk(&emulator()).await);
    let got = sm.get_secret_value().secret_id(arn).version_stage("AWSCURRENT").send().await.unwrap();
    assert_eq!(got.secret_string(), Some(DEFAULT_WEBHOOK_SECRET));

    // Stripe's endpoint secret (POST /payments/stripe) the same way.
    let arn = doc["PaymentCallbackFunction"]["STRIPE_WEBHOOK_SECRET_ARN"].as_str().unwrap();
    let got = sm.get_secret_value().secret_id(arn).version_stage("AWSCURRENT").send().await.unwrap();
    assert_eq!(got.secret_string(), Some(DEFAULT_STRIPE_WEBHOOK_SECRET));
}
