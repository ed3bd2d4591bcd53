//! The local stack: the template's resources in the emulator, its routes on a local port, its
//! event sources polled, its schedules fired — each function's real handler in-process.

use crate::peers::provider::SimProvider;
use crate::peers::stripe::FakeStripe;
use crate::peers::supplier::SimSupplier;
use crate::pollers::{schedule, SqsSource, StreamSource};
use crate::resources::{self, Resources};
use crate::server::{serve, Route, Server};
use crate::template::{EnvValue, Event, Template};
use anyhow::{anyhow, Context};
use holdfast::app::App;
use holdfast::config::Config;
use holdfast::domain::invariants::Snapshot;
use holdfast::handlers::{trigger_of, Trigger, FUNCTIONS};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub const DEFAULT_WEBHOOK_SECRET: &str = "holdfast-local-webhook-secret";
/// The refund confirmation's own key in the local stack (`REFUND_WEBHOOK_SECRET`; in AWS
/// `REFUND_WEBHOOK_SECRET_ARN`): the simulated provider signs its confirmations with it.
pub const DEFAULT_REFUND_WEBHOOK_SECRET: &str = "holdfast-local-refund-webhook-secret";
/// The credentials the functions send to the simulated provider and supplier, which refuse
/// calls without them (`PROVIDER_CREDENTIAL`, `SUPPLIER_CREDENTIAL`; security review M3).
pub const DEFAULT_PROVIDER_CREDENTIAL: &str = "holdfast-local-provider-credential";
pub const DEFAULT_SUPPLIER_CREDENTIAL: &str = "holdfast-local-supplier-credential";
/// The code pool keyring of the local stack (`HOLDFAST_CODE_KEY`; docs/code-pools.md). A
/// well-known key for local runs only: in AWS the keyring comes from `CODE_KEY_SECRET_ARN`.
pub const DEFAULT_CODE_KEY: &str = r#"{"kid":"local-1","key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","fingerprint_key":"ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM="}"#;
/// The admission tokens' key in the local stack (`HOLDFAST_ADMISSION_KEY`; docs/waiting-room.md):
/// in AWS it comes from `ADMISSION_KEY_SECRET_ARN`.
pub const DEFAULT_ADMISSION_KEY: &str = "holdfast-local-admission-key";
/// Stripe's webhook endpoint secret in the local stack (`STRIPE_WEBHOOK_SECRET`) and its fake Stripe.
pub const DEFAULT_STRIPE_WEBHOOK_SECRET: &str = "whsec_holdfast_local";

/// `HOLDFAST_SDK_TIMEOUT_SCALE` of the local stack unless a test sets it. The emulator
/// serialises every DynamoDB request and the e2e tests share one emulator in parallel: 400
/// concurrent freezes queue for many seconds on a 2-core machine (measured: 110 of 400
/// reservations timed out at scale 10), which AWS never does. At 40, with four agents' builds
/// on the machine (load 16), 68 of 300 concurrent checkouts still timed out once and then found
/// the SDK's retry quota (10 tokens per timeout retry, 500 in all) empty: 100 keeps the queueing
/// of the emulator from reading as a hung dependency.
pub const LOCAL_SDK_TIMEOUT_SCALE: &str = "100";

#[derive(Debug, Clone)]
pub struct Options {
    pub emulator_endpoint: String,
    pub template: PathBuf,
    /// 0 = any free port.
    pub port: u16,
    /// Prefix of every resource name (unique per stack).
    pub prefix: String,
    /// Settings for every function, over the process environment and the template.
    pub env: BTreeMap<String, String>,
    pub jwt_secret: String,
    /// Concurrent pollers per SQS event source.
    pub sqs_pollers: usize,
    /// How often schedules fire; `None` = never (tests drive reconcile themselves).
    pub schedule_every: Option<Duration>,
    /// Read settings (`HOLDFAST_*`, `PAYMENT_WEBHOOK_SECRET`, `STRIPE_*`) from the process environment.
    pub inherit_env: bool,
    /// Functions whose event sources are not polled (a test plays the source itself).
    pub paused: Vec<String>,
    /// Upper bound on queue visibility timeouts, so redrive-to-DLQ takes seconds in tests.
    pub visibility_timeout_cap: Option<i64>,
    /// The template's parameters overridden, as `sam deploy --parameter-overrides` would
    /// (`HOLDFAST_PARAMETERS` for `make run`); they set the door's throttles and concurrency.
    pub parameters: BTreeMap<String, String>,
    /// Route throttles and reserved concurrency enforced (door.rs); off lets everything in.
    pub door: bool,
}

impl Options {
    pub fn new(emulator_endpoint: &str, template: PathBuf) -> Self {
        Options {
            emulator_endpoint: emulator_endpoint.to_owned(),
            template,
            port: 0,
            prefix: format!("hf{:08x}", fastrand::u32(..)),
            env: BTreeMap::new(),
            jwt_secret: std::env::var("LOCAL_JWT_SECRET").unwrap_or_else(|_| crate::auth::DEFAULT_SECRET.to_owned()),
            sqs_pollers: 2,
            schedule_every: None,
            inherit_env: false,
            paused: Vec::new(),
            visibility_timeout_cap: None,
            parameters: BTreeMap::new(),
            door: true,
        }
    }
}

/// Problems that make the template and the code disagree (empty = they agree).
pub fn coverage_problems(t: &Template) -> Vec<String> {
    let mut out = Vec::new();
    for f in &t.functions {
        let Some(trigger) = trigger_of(&f.binary) else {
            out.push(format!("{}: binary {} has no handler in the library", f.logical_id, f.binary));
            continue;
        };
        if f.events.is_empty() {
            out.push(format!("{}: no event source", f.logical_id));
        }
        for (name, e) in &f.events {
            let want = match e {
                Event::Http { .. } => Trigger::Http,
                Event::Sqs { .. } => Trigger::Sqs,
                Event::Stream { .. } => Trigger::Stream,
                Event::Schedule { .. } => Trigger::Schedule,
            };
            if want != trigger {
                out.push(format!("{}.{name}: a {want:?} event on a {trigger:?} function", f.logical_id));
            }
        }
    }
    for (name, _) in FUNCTIONS {
        if t.function(name).is_none() {
            out.push(format!("function {name} is in the library but not in template.yaml"));
        }
    }
    out.extend(crate::websocket::coverage_problems(t));
    let declared: Vec<(String, String)> = t.routes().into_iter().map(|(k, f, _)| (k, f)).collect();
    for (name, routes) in holdfast::handlers::ROUTES {
        for r in *routes {
            if !declared.iter().any(|(k, f)| k == r.key && f == name) {
                out.push(format!("{name} handles {}, which template.yaml does not route to it", r.key));
            }
        }
    }
    for (k, f) in &declared {
        let handled = holdfast::handlers::ROUTES.iter().any(|(n, rs)| n == f && rs.iter().any(|r| r.key == k));
        if !handled {
            out.push(format!("template.yaml routes {k} to {f}, which does not handle it"));
        }
    }
    out
}

pub struct LocalStack {
    pub base_url: String,
    pub resources: Resources,
    pub template: Template,
    pub sdk: aws_config::SdkConfig,
    pub jwt_secret: String,
    pub emulator_endpoint: String,
    /// The prefix of this stack's resource names (its owner id for emulator fault rules).
    pub prefix: String,
    /// The fake Stripe the functions' `STRIPE_API_BASE` points at (docs/after-sale.md, "Stripe").
    pub stripe: FakeStripe,
    apps: HashMap<String, Arc<App>>,
    /// The simulated payment provider refunds go to (docs/after-sale.md, "Providers").
    pub provider: Arc<SimProvider>,
    /// The simulated supplier of SUPPLIER SKUs (docs/suppliers.md); its URL is the functions'
    /// `HOLDFAST_SUPPLIER_URL`.
    pub supplier: Arc<SimSupplier>,
    pub supplier_url: String,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// AWS configuration pointing at the emulator.
pub async fn emulator_sdk(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .http_client(holdfast::adapters::sdk_http::client(None))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("test", "test", None, None, "holdfast-local"))
        .load()
        .await
}

impl LocalStack {
    pub async fn start(opts: Options) -> anyhow::Result<LocalStack> {
        // the stack, its peers and the tests beside it build reqwest clients (TLS on ring)
        holdfast::adapters::outbound::install_crypto();
        let template = Template::load(&opts.template)?;
        let problems = coverage_problems(&template);
        if !problems.is_empty() {
            return Err(anyhow!("template.yaml and the code disagree:\n  {}", problems.join("\n  ")));
        }
        let sdk = emulator_sdk(&opts.emulator_endpoint).await;
        let mut template = template;
        if let Some(cap) = opts.visibility_timeout_cap {
            for q in &mut template.queues {
                q.visibility_timeout = Some(q.visibility_timeout.unwrap_or(30).min(cap));
            }
        }
        let res =
            resources::create(&sdk, &template, &opts.prefix).await.context("creating resources in the emulator")?;

        let (tx, rx) = watch::channel(false);
        let mut tasks = Vec::new();
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", opts.port)).await.context("binding the local API port")?;
        let base_url = format!("http://{}", listener.local_addr()?);
        // The simulated payment provider: refunds go to it, its confirmations come back to us,
        // signed with the webhook key the payment callback checks.
        let secret =
            opts.env.get("PAYMENT_WEBHOOK_SECRET").cloned().unwrap_or_else(|| DEFAULT_WEBHOOK_SECRET.to_owned());
        let delay_ms = opts.env.get("HOLDFAST_SIM_PROVIDER_DELAY_MS").and_then(|d| d.parse().ok()).unwrap_or(300);
        let (provider, provider_url) =
            SimProvider::start(format!("{base_url}/payments/refunds"), secret, delay_ms).await?;
        // Its buyer's page calls back here, signed with the payment webhook key.
        provider.set_callback_url(&format!("{base_url}/payments/callback"));
        // The endpoint secret the functions verify with and the fake Stripe signs with: a test's,
        // else (the local runner) the environment's — e.g. the one `stripe listen` prints — else
        // the well-known local one.
        let stripe_secret = opts
            .env
            .get("STRIPE_WEBHOOK_SECRET")
            .cloned()
            .or_else(|| opts.inherit_env.then(|| std::env::var("STRIPE_WEBHOOK_SECRET").ok()).flatten())
            .unwrap_or_else(|| DEFAULT_STRIPE_WEBHOOK_SECRET.to_owned());
        // The simulated supplier: latency / failure rate / stall from the test's settings or,
        // for the local runner, the environment.
        let control = SimSupplier::control_from(|k| {
            opts.env.get(k).cloned().or_else(|| opts.inherit_env.then(|| std::env::var(k).ok()).flatten())
        });
        let (supplier, supplier_url) = SimSupplier::start(control).await?;
        // The keys the peers work with: a test's, else the well-known local ones.
        let setting = |k: &str, default: &str| opts.env.get(k).cloned().unwrap_or_else(|| default.to_owned());
        let refund_secret = setting("REFUND_WEBHOOK_SECRET", DEFAULT_REFUND_WEBHOOK_SECRET);
        let provider_credential = setting("PROVIDER_CREDENTIAL", DEFAULT_PROVIDER_CREDENTIAL);
        let supplier_credential = setting("SUPPLIER_CREDENTIAL", DEFAULT_SUPPLIER_CREDENTIAL);
        provider.set_keys(&refund_secret, &provider_credential);
        supplier.set_credential(&supplier_credential);
        let (stripe, stripe_task) =
            FakeStripe::start(crate::peers::stripe::LOCAL_API_KEY, &stripe_secret, rx.clone()).await?;
        tasks.push(stripe_task);
        stripe.set_webhook_target(&format!("{base_url}/payments/stripe"));

        let mut apps = HashMap::new();
        for f in &template.functions {
            let lookup = |k: &str| -> Option<String> {
                if let Some(v) = opts.env.get(k) {
                    return Some(v.clone());
                }
                if k == "HOLDFAST_PROVIDER_URL" {
                    return Some(provider_url.clone());
                }
                if k == "HOLDFAST_SUPPLIER_URL" {
                    return Some(supplier_url.clone());
                }
                if opts.inherit_env
                    && (k.starts_with("HOLDFAST_") || k == "PAYMENT_WEBHOOK_SECRET" || k.starts_with("STRIPE_"))
                {
                    if let Ok(v) = std::env::var(k) {
                        return Some(v);
                    }
                }
                if k == "HOLDFAST_SDK_TIMEOUT_SCALE" {
                    // The emulator serialises every DynamoDB request: under a test's load one
                    // call can take seconds, which AWS never does. Tests of the budgets set 1.
                    return Some(LOCAL_SDK_TIMEOUT_SCALE.to_owned());
                }
                if k == "PAYMENT_WEBHOOK_SECRET" {
                    // AWS reads the key from Secrets Manager (WEBHOOK_SECRET_ARN); locally it is
                    // this well-known one unless a test sets another.
                    return Some(DEFAULT_WEBHOOK_SECRET.to_owned());
                }
                if k == "HOLDFAST_CODE_KEY" {
                    // likewise the code keyring (CODE_KEY_SECRET_ARN in AWS)
                    return Some(DEFAULT_CODE_KEY.to_owned());
                }
                // the push channel (docs/push.md): the WebSocket API's management endpoint is this
                // stack's own port, and $connect checks this stack's HS256 tokens
                match k {
                    "PUSH_ENDPOINT" => return Some(base_url.clone()),
                    "LOCAL_JWT_SECRET" => return Some(opts.jwt_secret.clone()),
                    "PUSH_JWT_ISSUER" => return Some(holdfast::sam_local::LOCAL_ISSUER.to_owned()),
                    "PUSH_JWT_AUDIENCE" => return Some(holdfast::sam_local::LOCAL_AUDIENCE.to_owned()),
                    _ => {}
                }
                if k == "HOLDFAST_ADMISSION_KEY" {
                    // likewise the admission tokens' key (ADMISSION_KEY_SECRET_ARN in AWS)
                    return Some(DEFAULT_ADMISSION_KEY.to_owned());
                }
                // likewise the refund confirmation key and the peers' credentials (*_SECRET_ARN)
                match k {
                    "REFUND_WEBHOOK_SECRET" => return Some(refund_secret.clone()),
                    "PROVIDER_CREDENTIAL" => return Some(provider_credential.clone()),
                    "SUPPLIER_CREDENTIAL" => return Some(supplier_credential.clone()),
                    _ => {}
                }
                // Stripe: the local endpoint secret, and refunds at the fake Stripe.
                match k {
                    "STRIPE_WEBHOOK_SECRET" => return Some(stripe_secret.clone()),
                    "STRIPE_API_BASE" => return Some(stripe.url.clone()),
                    "STRIPE_API_KEY" => return Some(crate::peers::stripe::LOCAL_API_KEY.to_owned()),
                    // the fake Stripe sends test-mode events
                    "STRIPE_LIVEMODE" => return Some("false".to_owned()),
                    _ => {}
                }
                match f.env.get(k)? {
                    EnvValue::Deferred(_) => None,
                    v => res.resolve(v),
                }
            };
            let config = Config::from_lookup(&lookup).with_context(|| format!("configuring {}", f.binary))?;
            apps.insert(f.binary.clone(), Arc::new(holdfast::app::with_aws(&f.binary, config, &sdk)?));
        }

        let routes = template.routes().into_iter().map(|(k, f, a)| Route::new(&k, &f, a)).collect();
        let door = if opts.door {
            let doc = crate::template::yaml(&std::fs::read_to_string(&opts.template)?)?;
            crate::door::Door::from_template(&doc, &opts.parameters).context("the API's throttles")?
        } else {
            crate::door::Door::open()
        };
        let websocket = crate::websocket::WebSocketServer::from_template(&template, &apps);
        let server =
            Arc::new(Server { routes, door, apps: apps.clone(), jwt_secret: opts.jwt_secret.clone(), websocket });
        tasks.push(tokio::spawn(serve(listener, server, rx.clone())));

        let sqs = aws_sdk_sqs::Client::new(&sdk);
        // DynamoDB as it is (DESIGN §23): `stream-split` in HOLDFAST_EMULATE (this stack's
        // settings, else the process's when inherited) reshapes the stream pollers' batches
        let emulate = opts
            .env
            .get("HOLDFAST_EMULATE")
            .cloned()
            .or_else(|| opts.inherit_env.then(|| std::env::var("HOLDFAST_EMULATE").ok()).flatten())
            .unwrap_or_default();
        let stream_split = holdfast::adapters::emulate::Switches::parse(&emulate)?.stream_split;
        for f in template.functions.iter().filter(|f| !opts.paused.contains(&f.binary)) {
            let app = apps[&f.binary].clone();
            for (_, e) in &f.events {
                match e {
                    Event::Sqs { queue, batch_size, report_failures } => {
                        let q = template
                            .queues
                            .iter()
                            .find(|q| &q.logical_id == queue)
                            .ok_or_else(|| anyhow!("no queue {queue}"))?;
                        let redrive = match &q.redrive {
                            Some((dlq, max)) => Some((res.queue_url(dlq)?.to_owned(), *max)),
                            None => None,
                        };
                        let src = Arc::new(SqsSource {
                            function: f.binary.clone(),
                            app: app.clone(),
                            client: sqs.clone(),
                            queue_url: res.queue_url(queue)?.to_owned(),
                            queue_arn: res.queue_arn(queue)?.to_owned(),
                            batch_size: *batch_size as i32,
                            report_failures: *report_failures,
                            redrive,
                            fed_by_rule: template.rules.iter().any(|r| r.targets.iter().any(|(_, q)| q == queue)),
                        });
                        for _ in 0..opts.sqs_pollers.max(1) {
                            tasks.push(tokio::spawn(src.clone().run(rx.clone())));
                        }
                    }
                    Event::Stream { table, batch_size, max_retries, max_record_age_s, bisect, on_failure, filters } => {
                        let src = Arc::new(StreamSource {
                            function: f.binary.clone(),
                            app: app.clone(),
                            ddb: aws_sdk_dynamodb::Client::new(&sdk),
                            streams: aws_sdk_dynamodbstreams::Client::new(&sdk),
                            sqs: sqs.clone(),
                            table: res.table(table)?.to_owned(),
                            batch_size: *batch_size as usize,
                            max_retries: *max_retries,
                            max_record_age_s: *max_record_age_s,
                            bisect: *bisect,
                            on_failure_url: on_failure
                                .as_ref()
                                .map(|q| res.queue_url(q).map(str::to_owned))
                                .transpose()?,
                            filters: filters.clone(),
                            split: stream_split,
                        });
                        tasks.push(tokio::spawn(src.run(rx.clone())));
                    }
                    Event::Schedule { .. } => {
                        if let Some(every) = opts.schedule_every {
                            tasks.push(tokio::spawn(schedule(f.binary.clone(), app.clone(), every, rx.clone())));
                        }
                    }
                    Event::Http { .. } => {}
                }
            }
        }
        Ok(LocalStack {
            emulator_endpoint: opts.emulator_endpoint.clone(),
            prefix: opts.prefix.clone(),
            stripe,
            base_url,
            resources: res,
            template,
            sdk,
            jwt_secret: opts.jwt_secret,
            apps,
            provider,
            supplier,
            supplier_url,
            shutdown: tx,
            tasks,
        })
    }

    pub fn app(&self, function: &str) -> anyhow::Result<&Arc<App>> {
        self.apps.get(function).ok_or_else(|| anyhow!("no function {function}"))
    }

    /// The stock table as one store, every stock port (what the store contract and the reference
    /// model check): the adapter the functions' ports are, over this stack's table.
    pub fn stock_store(&self) -> anyhow::Result<Arc<dyn holdfast::ports::StockStore>> {
        let table = self.app("create-order")?.config.stock_table.clone();
        let ddb = aws_sdk_dynamodb::Client::new(&self.sdk);
        Ok(Arc::new(holdfast::adapters::dynamo::stock::DynamoStock::new(ddb, table)))
    }

    /// Runs a scheduled function once, now.
    pub async fn run_schedule(&self, function: &str) -> anyhow::Result<serde_json::Value> {
        let ev = serde_json::json!({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}});
        holdfast::handlers::schedule(function, self.app(function)?, ev)
            .await
            .ok_or_else(|| anyhow!("{function} is not scheduled"))?
    }

    /// Changes the active fault points of every function (`HOLDFAST_FAULTS` syntax).
    pub fn set_faults(&self, spec: &str) -> anyhow::Result<()> {
        for app in self.apps.values() {
            app.faults.set(spec)?;
        }
        Ok(())
    }

    /// Replaces the emulator's fault rules (slow or throttled requests; see `FaultHook` in
    /// infra/emulator/launcher.py). Scope each rule with a `match` unique to this stack.
    pub async fn set_emulator_faults(&self, rules: serde_json::Value) -> anyhow::Result<()> {
        let url = format!("{}/_holdfast/faults", self.emulator_endpoint);
        let body = serde_json::json!({"owner": self.prefix, "rules": rules});
        let r = reqwest::Client::new().post(&url).body(body.to_string()).send().await?;
        anyhow::ensure!(r.status().is_success(), "setting emulator faults: {}", r.status());
        Ok(())
    }

    /// A buyer's token: `sub` with the user routes' scopes.
    pub fn user_token(&self, sub: &str) -> String {
        self.token(sub, crate::auth::USER_SCOPES)
    }

    pub fn token(&self, sub: &str, scopes: &[&str]) -> String {
        crate::auth::mint(&self.jwt_secret, sub, scopes, 3600)
    }

    /// Messages in a queue: visible, in flight, and delayed.
    pub async fn queue_depth(&self, logical: &str) -> anyhow::Result<i64> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let out = aws_sdk_sqs::Client::new(&self.sdk)
            .get_queue_attributes()
            .queue_url(self.resources.queue_url(logical)?)
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .send()
            .await?;
        let attrs = out.attributes().cloned().unwrap_or_default();
        Ok([
            A::ApproximateNumberOfMessages,
            A::ApproximateNumberOfMessagesNotVisible,
            A::ApproximateNumberOfMessagesDelayed,
        ]
        .iter()
        .filter_map(|a| attrs.get(a).and_then(|v| v.parse::<i64>().ok()))
        .sum())
    }

    /// Everything the invariants of docs/architecture.md, "Invariants" are checked over (scans both tables).
    /// The same whole-store read the daily ledger report makes (`ports::Audit`), uncapped.
    pub async fn snapshot(&self) -> anyhow::Result<Snapshot> {
        let app = self.app("reservation-check")?;
        let mut snap = app.audit.read_all(usize::MAX).await?.snapshot;
        snap.check_delay_s = app.config.reservation_check_delay_s;
        Ok(snap)
    }

    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(3), t).await;
        }
    }
}
