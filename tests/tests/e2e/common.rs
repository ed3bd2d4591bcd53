//! `spawn()`: a fresh local stack (own tables, queues, bus) on the shared emulator, and a
//! client that speaks to it over HTTP like any caller would.

use holdfast::domain::invariants::{check_all, Violation};
pub use holdfast_local::client::Answer;
use holdfast_local::client::ApiClient;
use holdfast_local::{LocalStack, Options};
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub const WEBHOOK_SECRET: &str = holdfast_local::stack::DEFAULT_WEBHOOK_SECRET;

pub fn emulator() -> String {
    std::env::var("HOLDFAST_EMULATOR_ENDPOINT")
        .expect("HOLDFAST_EMULATOR_ENDPOINT is not set: run the tests with `make test` (or scripts/with-emulator.sh)")
}

pub fn template_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../template.yaml")
}

pub struct Stack {
    pub local: LocalStack,
    pub api: ApiClient,
    pub admin: String,
    pub internal: String,
}

pub async fn spawn() -> Stack {
    spawn_with(&[]).await
}

pub async fn spawn_with(env: &[(&str, &str)]) -> Stack {
    spawn_opts(env, |_| {}).await
}

pub async fn spawn_opts(env: &[(&str, &str)], tweak: impl FnOnce(&mut Options)) -> Stack {
    let mut opts = Options::new(&emulator(), template_path());
    for (k, v) in env {
        opts.env.insert((*k).to_owned(), (*v).to_owned());
    }
    tweak(&mut opts);
    let local = LocalStack::start(opts).await.expect("local stack starts");
    let admin = local.token("admin", &["stock:admin"]);
    let internal = local.token("partner-system", &["reservations:write"]);
    let api = ApiClient::new(&local.base_url);
    Stack { local, api, admin, internal }
}

impl Stack {
    pub fn user(&self, sub: &str) -> String {
        self.local.user_token(sub)
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Answer {
        self.api.call(method, path, token, headers, body).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Answer {
        self.call("POST", path, Some(token), &[], Some(body.to_string())).await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.call("GET", path, token, &[], None).await
    }

    /// Creates a SKU with `units` in stock.
    pub async fn sku(&self, sku: &str, price: u64, units: i64, shards: u16, per_user_limit: Option<u32>) {
        let mut spec = json!({"name": format!("{sku} name"), "price": price, "currency": "EUR", "shards": shards});
        if let Some(l) = per_user_limit {
            spec["per_user_limit"] = json!(l);
        }
        let a = self.call("PUT", &format!("/admin/skus/{sku}"), Some(&self.admin), &[], Some(spec.to_string())).await;
        assert_eq!(a.status, 201, "create SKU: {}", a.body);
        if units != 0 {
            let a = self
                .post(
                    &format!("/admin/skus/{sku}/adjustments"),
                    &self.admin,
                    json!({"adjustment_id": format!("init-{sku}"), "delta": units, "reason": "initial stock"}),
                )
                .await;
            assert_eq!(a.status, 201, "stock SKU: {}", a.body);
        }
    }

    pub async fn view(&self, sku: &str) -> Value {
        let a = self.get(&format!("/skus/{sku}"), None).await;
        assert_eq!(a.status, 200, "{}", a.body);
        a.body
    }

    /// A SKU's (available, locked, sold) summed over its shards, read exactly (the public view
    /// is eventually consistent and cached for a second per warm Lambda).
    pub async fn exact(&self, sku: &str) -> (i64, i64, i64) {
        let snap = self.local.snapshot().await.expect("snapshot");
        let t = snap.skus.iter().find(|k| k.sku.as_str() == sku).unwrap_or_else(|| panic!("no SKU {sku}")).totals();
        (t.available, t.locked, t.sold)
    }

    pub async fn order(&self, user: &str, key: &str, items: Value) -> Answer {
        let t = self.user(user);
        self.call("POST", "/orders", Some(&t), &[("idempotency-key", key)], Some(json!({ "items": items }).to_string()))
            .await
    }

    pub async fn get_order(&self, user: &str, id: &str) -> Answer {
        self.get(&format!("/orders/{id}"), Some(&self.user(user))).await
    }

    /// Sends a payment callback signed with the local webhook secret.
    pub async fn pay(&self, order_id: &str, payment_id: &str, amount: u64, status: &str) -> Answer {
        self.api.pay(order_id, payment_id, amount, status).await
    }

    /// Every invariant of docs/architecture.md, "Invariants" over both tables.
    pub async fn violations(&self) -> Vec<Violation> {
        check_all(&self.local.snapshot().await.expect("snapshot"))
    }

    /// The invariants hold at quiescence: the event flow may still be moving stock, so this waits
    /// (bounded) for them to hold, and fails with the violations if they never do.
    pub async fn assert_invariants(&self) {
        let start = Instant::now();
        loop {
            let v = self.violations().await;
            if v.is_empty() {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "invariants violated at quiescence: {v:#?}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    pub async fn order_id(&self, user: &str, key: &str, items: Value) -> String {
        let a = self.order(user, key, items).await;
        assert_eq!(a.status, 201, "{}", a.body);
        a.body["order_id"].as_str().expect("order_id").to_owned()
    }

    pub async fn cancel(&self, user: &str, id: &str) -> Answer {
        self.call("POST", &format!("/orders/{id}/cancel"), Some(&self.user(user)), &[], None).await
    }

    /// The lock status of a Holdfast order's reservation.
    pub async fn lock_status(&self, order_id: &str) -> Option<String> {
        let snap = self.local.snapshot().await.expect("snapshot");
        snap.reservations.iter().find(|r| r.id.as_str() == order_id).map(|r| r.status.as_str().to_owned())
    }

    /// `PUT /admin/skus/{sku}` with this spec, as the admin.
    pub async fn put_sku(&self, sku: &str, spec: Value) -> Answer {
        self.call("PUT", &format!("/admin/skus/{sku}"), Some(&self.admin), &[], Some(spec.to_string())).await
    }

    /// Creates a SKU of `model` (no stock yet) with an optional per-user limit.
    pub async fn model_sku(&self, sku: &str, price: u64, shards: u16, model: Value, limit: Option<u32>) {
        let mut spec = json!({"name": format!("{sku} name"), "price": price, "currency": "EUR", "shards": shards,
                              "model": model});
        if let Some(l) = limit {
            spec["per_user_limit"] = json!(l);
        }
        let a = self.put_sku(sku, spec).await;
        assert_eq!(a.status, 201, "create {sku}: {}", a.body);
    }

    /// An admin stock adjustment that must be applied (201).
    pub async fn stock(&self, sku: &str, id: &str, delta: i64) {
        let a = self
            .post(
                &format!("/admin/skus/{sku}/adjustments"),
                &self.admin,
                json!({"adjustment_id": id, "delta": delta, "reason": "stock"}),
            )
            .await;
        assert_eq!(a.status, 201, "stock {sku}: {}", a.body);
    }

    /// The customer-service view of an order (`GET /admin/orders/{id}`).
    pub async fn admin_view(&self, id: &str) -> Value {
        let a = self.get(&format!("/admin/orders/{id}"), Some(&self.admin)).await;
        assert_eq!(a.status, 200, "{}", a.body);
        a.body
    }

    /// A checkout retried with the same key on 503, as clients are told to (a burst of
    /// checkouts at once can overrun the emulator, which serialises every DynamoDB request).
    pub async fn checkout(&self, user: &str, key: &str, items: Value) -> Answer {
        let mut a = self.order(user, key, items.clone()).await;
        for attempt in 1..=8 {
            if a.status != 503 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
            a = self.order(user, key, items.clone()).await;
        }
        a
    }

    /// `GET /orders/{order}/codes` as `user`.
    pub async fn codes_of(&self, user: &str, order: &str) -> Answer {
        self.get(&format!("/orders/{order}/codes"), Some(&self.user(user))).await
    }

    /// Waits until the order's lock has `status` (the event flow moves it).
    pub async fn lock_reaches(&self, order_id: &str, status: &str) {
        eventually(&format!("the lock of {order_id} to be {status}"), SIGNAL_WAIT, || async {
            (self.lock_status(order_id).await.as_deref() == Some(status)).then_some(())
        })
        .await
    }

    /// Waits until the buyer's view of the order shows `status`; returns it.
    pub async fn order_reaches(&self, user: &str, id: &str, status: &str) -> Value {
        eventually(&format!("order {id} to be {status}"), SIGNAL_WAIT, || async {
            let a = self.get_order(user, id).await;
            assert_eq!(a.status, 200, "{}", a.body);
            (a.body["status"] == status).then_some(a.body)
        })
        .await
    }

    /// Everything stored, campaigns included, in a stable textual form (a refused request must
    /// leave it unchanged).
    pub async fn fingerprint(&self) -> String {
        let snap = self.local.snapshot().await.expect("snapshot");
        let mut parts: Vec<String> = snap.skus.iter().map(|x| format!("{x:?}")).collect();
        parts.extend(snap.reservations.iter().map(|x| format!("{x:?}")));
        parts.extend(snap.orders.iter().map(|x| format!("{x:?}")));
        parts.extend(snap.user_counters.iter().map(|x| format!("{x:?}")));
        parts.push(format!("{:?}", snap.campaigns));
        parts.sort();
        parts.join("\n")
    }

    /// One whole reconcile sweep, now, in this process: every work item the schedule would
    /// seed (`reconcile::seed_items`), run by the worker's code (`reconcile::work`) with their
    /// continuations, several at a time as the worker Lambdas take them off the work queue (the
    /// fan-out through the queue itself has its own test). Returns the merged report.
    pub async fn reconcile(&self) -> Value {
        use futures::stream::{FuturesUnordered, StreamExt};
        use holdfast::service::reconcile;
        let app = self.local.app("reconcile-worker").expect("reconcile-worker");
        let mut todo = reconcile::seed_items(app, holdfast::clock::now_ms());
        let mut report = reconcile::ReconcileReport::default();
        let mut running = FuturesUnordered::new();
        loop {
            while running.len() < 8 {
                let Some(item) = todo.pop() else { break };
                running.push(async move { reconcile::work(app, &item, reconcile::WORK_BUDGET).await });
            }
            let Some(done) = running.next().await else { break };
            // as `reconcile::run` does: a failed item is counted, the sweep goes on
            match done {
                Ok(out) => {
                    report.merge(out.report);
                    todo.extend(out.next);
                }
                Err(e) => {
                    report.errors += 1;
                    eprintln!("reconcile: work item failed: {e:#}");
                }
            }
        }
        serde_json::to_value(report).expect("report")
    }
}

/// The least a wait is given however quick its step is on an idle machine. Every wait that
/// succeeds returns as soon as its signal shows (polled every 200 ms): the bound only decides
/// how long a broken build takes to fail, and a wait that gives up early fails a test whose
/// behaviour is right. 30 s is several times the slowest single step measured with the whole
/// suite running on this 2-core machine (a cross-stack flow — order, stream, bus, queue, stock —
/// settles in under 5 s there); waits that cover more (a whole reconcile sweep, a DLQ redrive)
/// name their own, longer, bound. Waits never assert speed (`make bench` measures).
pub const MIN_WAIT: Duration = Duration::from_secs(30);

/// How long a wait for a state the stack's own pollers bring about (an expiry, a lock move)
/// may take: it returns as soon as the state is seen, so a generous bound costs nothing when
/// things work, and on this 2-core machine, with three tests and the emulator's serialised
/// requests beside it, a poller round has been seen to take over 30 s.
pub const SIGNAL_WAIT: Duration = Duration::from_secs(120);

/// Polls `f` until it returns `Some`, or panics after `timeout` (at least [`MIN_WAIT`]) with
/// `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let timeout = timeout.max(MIN_WAIT);
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Moves this test process's clock forward (`holdfast::clock::advance_test_clock_ms`): the local
/// stack runs in the same process, so a deadline, a stale-lock age, an auto-completion delay or a
/// quiet period passes at once instead of being slept out. The emulator keeps real time: SQS
/// delays and visibility timeouts still take what they take.
pub fn advance_clock(by: Duration) {
    holdfast::clock::advance_test_clock_ms(by.as_millis() as i64);
}

/// A size read from the environment (`make soak` sets the large ones, see the Makefile), else
/// `default` — the size that proves the property in `make test`.
pub fn size(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A problem answer: its status, its stable `code` and the problem content type.
pub fn problem(a: &Answer, status: u16, code: &str) {
    assert_eq!((a.status, a.body["code"].as_str()), (status, Some(code)), "{}", a.body);
    assert_eq!(
        a.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/problem+json"),
        "{}",
        a.body
    );
}

/// `(available, locked, sold)` of a stock or campaign view.
pub fn counters(v: &Value) -> (i64, i64, i64) {
    let n = |k: &str| v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"));
    (n("available"), n("locked"), n("sold"))
}

/// Every log line of this test process (the local stack runs in it), at trace level for
/// Holdfast's own crates.
#[derive(Clone, Default)]
pub struct Logs(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn capture_logs() -> Logs {
    let logs = Logs::default();
    let w = logs.clone();
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info,holdfast=trace,holdfast_local=trace"))
        .with_writer(move || w.clone())
        .init();
    logs
}

impl Logs {
    /// Every line written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
