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

    /// One whole reconcile sweep, now, in this process: every work item the schedule would
    /// seed, run by the worker's code one after another (the fan-out through the work queue
    /// has its own test).
    pub async fn reconcile(&self) -> Value {
        let app = self.local.app("reconcile-worker").expect("reconcile-worker");
        let report = holdfast::service::reconcile::run(app).await.expect("reconcile runs");
        serde_json::to_value(report).expect("report")
    }
}

/// Polls `f` until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    // The timeouts the tests name are what the step takes on an idle machine; a shared CI
    // runner under a parallel soak is several times slower, and a wait that gives up early
    // fails a test whose behaviour is right. Waits never assert speed (`make bench` measures).
    let timeout = timeout.max(Duration::from_secs(120));
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
