//! One configuration struct, read from the environment (docs/architecture.md, "Configuration"). Defaults are production values.

use crate::domain::waitlist;
use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Config {
    pub stock_table: String,
    /// The stock journal (docs/after-sale.md, "Stock journal").
    pub journal_table: String,
    pub order_table: String,
    pub payment_timeout_queue_url: String,
    pub reservation_check_queue_url: String,
    /// The reconcile sweep's work items (fan-out from the schedule to the workers).
    pub reconcile_work_queue_url: String,
    pub event_bus_name: String,
    pub payment_ttl_s: i64,
    pub reservation_check_delay_s: i64,
    pub reconcile_interval_s: i64,
    pub stale_lock_s: i64,
    /// Lifetime of a warm Lambda's sold-out mark: the longest a restock or release goes unseen
    /// by that Lambda's fast path.
    pub soldout_cache_ms: i64,
    /// Lifetime of cached SKU metadata (price, shards, limit) in a warm Lambda.
    pub sku_cache_ms: i64,
    /// Most checkouts one signed-in buyer may have pending (frozen, unpaid) at once; 0 = no cap.
    pub max_pending_per_user: u32,
    /// Lifetime of a warm Lambda's cached public views (`GET /skus/{sku}`, campaigns,
    /// availability) and their `Cache-Control: max-age`.
    pub public_cache_ms: i64,
    /// How long a warm Lambda keeps the sales switch it read: the time a switch change takes to
    /// bite (docs/operations.md).
    pub switch_cache_ms: i64,
    /// How often a warm Lambda flushes its live counters (docs/operations.md, "Live stats").
    pub live_flush_ms: i64,
    /// The webhook's HMAC key when no secret ARN is set (local stack, tests), and the previous
    /// one during a rotation. In AWS both come from `webhook_secret_arn` at run time.
    pub webhook_secret: Secret,
    pub webhook_secret_previous: Secret,
    /// Secrets Manager secret holding the HMAC key (`WEBHOOK_SECRET_ARN`; empty = use the above).
    pub webhook_secret_arn: String,
    /// How long after a webhook secret's current version was created its previous version still
    /// verifies (`HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS`, default a day; 0 = never): the payment
    /// callback's, the refund confirmation's and Stripe's (security review M1).
    pub previous_key_window_s: u64,
    /// The refund confirmation's own HMAC key (`POST /payments/refunds`; security review L1) when
    /// no secret ARN is set (local stack, tests; no default: unset answers 503, never accepts),
    /// or the Secrets Manager secret holding it (`REFUND_WEBHOOK_SECRET_ARN`).
    pub refund_webhook_secret: Secret,
    pub refund_webhook_secret_arn: String,
    /// The credential sent as `Authorization: Bearer …` on every call to the generic payment
    /// provider (`PROVIDER_CREDENTIAL`, local stack and tests), or the secret holding it
    /// (`PROVIDER_CREDENTIAL_SECRET_ARN`; security review M3).
    pub provider_credential: Secret,
    pub provider_credential_secret_arn: String,
    /// The same for the supplier (`SUPPLIER_CREDENTIAL`, `SUPPLIER_CREDENTIAL_SECRET_ARN`).
    pub supplier_credential: Secret,
    pub supplier_credential_secret_arn: String,
    /// Whether Stripe events must be live (`true`) or test mode (`false`) events
    /// (`STRIPE_LIVEMODE`; empty = not checked). An event of the other mode is ignored and counted.
    pub stripe_livemode: Option<bool>,
    /// Stripe's webhook endpoint secret (`whsec_…`) when no secret ARN is set (local stack, tests;
    /// no default: an unset secret answers 503, never accepts).
    pub stripe_webhook_secret: Secret,
    /// Secrets Manager secret holding it (`STRIPE_WEBHOOK_SECRET_ARN`; AWSCURRENT and AWSPREVIOUS
    /// both verify during a roll).
    pub stripe_webhook_secret_arn: String,
    /// Stripe's API (`STRIPE_API_BASE`; the local stack points it at its fake Stripe).
    pub stripe_api_base: String,
    /// Stripe secret API key for refunds (`STRIPE_API_KEY`), or the secret holding it
    /// (`STRIPE_API_KEY_SECRET_ARN`). Neither set: Stripe refunds are not wired.
    pub stripe_api_key: Secret,
    pub stripe_api_key_secret_arn: String,
    /// The code pool keyring (docs/code-pools.md): a JSON key `{"kid","key","fingerprint_key"}`
    /// when no secret ARN is set (local stack, tests; no default: codes cannot be uploaded or
    /// shown without it), or the Secrets Manager secret holding it (`CODE_KEY_SECRET_ARN`;
    /// AWSCURRENT seals, AWSPREVIOUS still opens during a rotation).
    pub code_key: Secret,
    pub code_key_secret_arn: String,
    /// The queue admission tokens' HMAC key (docs/waiting-room.md) and a rotation's previous one
    /// (`HOLDFAST_ADMISSION_KEY`, `…_PREVIOUS`; local stack and tests), or the Secrets Manager
    /// secret holding it (`ADMISSION_KEY_SECRET_ARN`: AWSCURRENT signs, AWSPREVIOUS verifies for
    /// the rotation window).
    pub admission_key: Secret,
    pub admission_key_previous: Secret,
    pub admission_key_secret_arn: String,
    /// The push channel (docs/push.md): the connection table (`CONNECTION_TABLE`), the WebSocket
    /// API's management endpoint (`PUSH_ENDPOINT`, `https://{api}.execute-api.{region}.amazonaws.com/{stage}`;
    /// locally the stack's own port), the push queue its watch timers ride (`PUSH_QUEUE_URL`),
    /// and whose tokens `$connect` accepts (`PUSH_JWT_ISSUER`, `PUSH_JWT_AUDIENCE`: the HTTP API's
    /// `JwtIssuer`/`JwtAudience`; `LOCAL_JWT_SECRET`, the local stack's HS256 key, only where the
    /// template does not set it).
    pub connection_table: String,
    pub push_endpoint: String,
    pub push_queue_url: String,
    pub push_jwt_issuer: String,
    pub push_jwt_audience: String,
    pub local_jwt_secret: Secret,
    /// Where the storefront's page connects for pushes (`PUSH_URL`, stock-read: the WebSocket
    /// API's `wss://{api}.execute-api.{region}.amazonaws.com/live`; unset locally, where the
    /// page's own origin serves `/ws`). The page and its CSP take no other (docs/shop.md).
    pub push_url: String,
    /// The KMS key codes are sealed under (`CODE_KMS_KEY_ID`; empty = the keyring alone seals).
    pub code_kms_key_id: String,
    /// A freeze that leaves a code pool with fewer codes counts `CodePoolLow` (the alarm's metric).
    pub code_pool_low_water: i64,
    /// Reconcile returns claimed, unbound codes of a shard whose head has not moved for this
    /// long (a checkout that claimed them has died; docs/code-pools.md, "Crashes").
    pub code_claim_quiet_ms: i64,
    /// Waitlists (docs/waitlist.md): most active entries on one SKU's waitlist, most waitlists
    /// one buyer is on, and a told buyer's admission token's life (10..=3600 s).
    pub waitlist_max_per_sku: u32,
    pub waitlist_max_per_user: u32,
    pub waitlist_token_ttl_s: u32,
    pub faults: String,
    pub max_body_bytes: usize,
    /// Multiplies every SDK timeout of [`crate::context::SdkBudget`] (1 in AWS; the local stack
    /// raises it for the serialising emulator).
    pub sdk_timeout_scale: f64,
    /// Event kinds publish-events puts on the bus. `OrderCreated` is off by default: nothing in
    /// the stack consumes it, and EventBridge bills every event.
    pub publish_events: Vec<crate::domain::events::EventKind>,
    /// A shipped order the buyer never confirms is completed this long after shipping.
    pub auto_complete_after_s: i64,
    /// Reconcile issues a refund still REQUESTED this long after it was asked for (the event
    /// that should have issued it was lost or failed).
    pub refund_redrive_after_s: i64,
    /// Base URL of the generic payment provider's refund API (`POST {url}/refunds`); empty = no
    /// generic provider (its refunds fail into the refunds DLQ).
    pub provider_url: String,
    /// The supplier adapter's endpoint (`HOLDFAST_SUPPLIER_URL`; docs/suppliers.md); empty = no
    /// supplier (SUPPLIER orders answer 503).
    pub supplier_url: String,
    /// An order whose supplier bookings are not all confirmed this long after it was written fails.
    pub supplier_timeout_s: i64,
    /// Lifetime of a warm Lambda's supplier quote (at most 30 s).
    pub supplier_quote_cache_ms: i64,
    /// How long past its deadline a PAYING order the provider still reports processing is
    /// waited for before its payment is cancelled (docs/payments.md, "At the deadline").
    pub payment_grace_s: i64,
    /// How often the provider is asked about a processing payment during the grace.
    pub payment_query_every_s: i64,
    /// The provider `POST /orders/{id}/payments` uses when the body names none
    /// (`HOLDFAST_PAYMENT_PROVIDER`: `generic`, the default, or `stripe`).
    pub payment_provider: String,
    /// Buyer refunds above this amount (minor units) wait for an admin's review
    /// (`HOLDFAST_REFUND_REVIEW_ABOVE`; unset = no threshold).
    pub refund_review_above: Option<u64>,
}

/// Longest a supplier quote may be cached.
pub const MAX_SUPPLIER_QUOTE_CACHE_MS: i64 = 30_000;

/// A secret value: never printed by `Debug` or `Display` (security review V5), so logging a
/// config or an error that holds one cannot leak it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(v: impl Into<String>) -> Self {
        Secret(v.into())
    }
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "Secret(<empty>)" } else { "Secret(<redacted>)" })
    }
}

/// Where Stripe's API is unless `STRIPE_API_BASE` says otherwise.
pub const DEFAULT_STRIPE_API_BASE: &str = "https://api.stripe.com";

/// Events published unless `HOLDFAST_PUBLISH_EVENTS` says otherwise.
pub const DEFAULT_PUBLISHED: [crate::domain::events::EventKind; 13] = {
    use crate::domain::events::EventKind::*;
    [
        OrderPaid,
        OrderCancelled,
        OrderExpired,
        RefundRequested,
        OversellDetected,
        OrderShipped,
        OrderCompleted,
        OrderRefunding,
        OrderRefunded,
        OrderReturnRequested,
        OrderReturned,
        OrderFailed,
        SupplierCancelRequested,
    ]
};

#[derive(Debug, thiserror::Error)]
#[error("configuration {name}: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub reason: String,
}

fn parse<T: FromStr>(get: &dyn Fn(&str) -> Option<String>, name: &'static str, default: T) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    match get(name) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(v) => v.parse().map_err(|e: T::Err| ConfigError { name, reason: e.to_string() }),
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let s = |k: &str| get(k).unwrap_or_default();
        let c = Config {
            stock_table: s("STOCK_TABLE"),
            journal_table: s("JOURNAL_TABLE"),
            order_table: s("ORDER_TABLE"),
            payment_timeout_queue_url: s("PAYMENT_TIMEOUT_QUEUE_URL"),
            reservation_check_queue_url: s("RESERVATION_CHECK_QUEUE_URL"),
            reconcile_work_queue_url: s("RECONCILE_WORK_QUEUE_URL"),
            event_bus_name: s("EVENT_BUS_NAME"),
            payment_ttl_s: parse(get, "HOLDFAST_PAYMENT_TTL_SECONDS", 900)?,
            reservation_check_delay_s: parse(get, "HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", 300)?,
            reconcile_interval_s: reconcile_interval_s(get)?,
            stale_lock_s: parse(get, "HOLDFAST_STALE_LOCK_SECONDS", 600)?,
            soldout_cache_ms: parse(get, "HOLDFAST_SOLDOUT_CACHE_MS", 1000)?,
            sku_cache_ms: parse(get, "HOLDFAST_SKU_CACHE_MS", 5000)?,
            max_pending_per_user: parse(get, "HOLDFAST_MAX_PENDING_PER_USER", 5)?,
            public_cache_ms: parse(get, "HOLDFAST_PUBLIC_CACHE_MS", 1000)?,
            switch_cache_ms: parse(get, "HOLDFAST_SWITCH_CACHE_MS", 1000)?,
            live_flush_ms: parse(get, "HOLDFAST_LIVE_FLUSH_MS", 2000)?,
            webhook_secret: Secret::new(get("PAYMENT_WEBHOOK_SECRET").unwrap_or_default()),
            webhook_secret_previous: Secret::new(get("PAYMENT_WEBHOOK_SECRET_PREVIOUS").unwrap_or_default()),
            webhook_secret_arn: s("WEBHOOK_SECRET_ARN"),
            previous_key_window_s: parse(get, "HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS", 24 * 3600)?,
            refund_webhook_secret: Secret::new(get("REFUND_WEBHOOK_SECRET").unwrap_or_default()),
            refund_webhook_secret_arn: s("REFUND_WEBHOOK_SECRET_ARN"),
            provider_credential: Secret::new(get("PROVIDER_CREDENTIAL").unwrap_or_default()),
            provider_credential_secret_arn: s("PROVIDER_CREDENTIAL_SECRET_ARN"),
            supplier_credential: Secret::new(get("SUPPLIER_CREDENTIAL").unwrap_or_default()),
            supplier_credential_secret_arn: s("SUPPLIER_CREDENTIAL_SECRET_ARN"),
            stripe_livemode: stripe_livemode(get)?,
            stripe_webhook_secret: Secret::new(get("STRIPE_WEBHOOK_SECRET").unwrap_or_default()),
            stripe_webhook_secret_arn: s("STRIPE_WEBHOOK_SECRET_ARN"),
            stripe_api_base: Some(s("STRIPE_API_BASE"))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| DEFAULT_STRIPE_API_BASE.to_owned()),
            stripe_api_key: Secret::new(get("STRIPE_API_KEY").unwrap_or_default()),
            stripe_api_key_secret_arn: s("STRIPE_API_KEY_SECRET_ARN"),
            code_key: Secret::new(get("HOLDFAST_CODE_KEY").unwrap_or_default()),
            code_key_secret_arn: s("CODE_KEY_SECRET_ARN"),
            admission_key: Secret::new(get("HOLDFAST_ADMISSION_KEY").unwrap_or_default()),
            admission_key_previous: Secret::new(get("HOLDFAST_ADMISSION_KEY_PREVIOUS").unwrap_or_default()),
            admission_key_secret_arn: s("ADMISSION_KEY_SECRET_ARN"),
            connection_table: s("CONNECTION_TABLE"),
            push_endpoint: s("PUSH_ENDPOINT"),
            push_queue_url: s("PUSH_QUEUE_URL"),
            push_jwt_issuer: s("PUSH_JWT_ISSUER"),
            push_jwt_audience: s("PUSH_JWT_AUDIENCE"),
            local_jwt_secret: Secret::new(get("LOCAL_JWT_SECRET").unwrap_or_default()),
            push_url: s("PUSH_URL"),
            code_kms_key_id: s("CODE_KMS_KEY_ID"),
            code_pool_low_water: parse(get, "HOLDFAST_CODE_POOL_LOW", 10)?,
            code_claim_quiet_ms: parse(get, "HOLDFAST_CODE_CLAIM_QUIET_MS", 60_000)?,
            waitlist_max_per_sku: parse(get, "HOLDFAST_WAITLIST_MAX_PER_SKU", waitlist::DEFAULT_MAX_PER_SKU)?,
            waitlist_max_per_user: parse(get, "HOLDFAST_WAITLIST_MAX_PER_USER", waitlist::DEFAULT_MAX_PER_USER)?,
            waitlist_token_ttl_s: parse(get, "HOLDFAST_WAITLIST_TOKEN_TTL_SECONDS", waitlist::DEFAULT_TOKEN_TTL_S)?
                .clamp(waitlist::MIN_TOKEN_TTL_S, waitlist::MAX_TOKEN_TTL_S),
            faults: s("HOLDFAST_FAULTS"),
            max_body_bytes: parse(get, "HOLDFAST_MAX_BODY_BYTES", 16 * 1024)?,
            sdk_timeout_scale: parse(get, "HOLDFAST_SDK_TIMEOUT_SCALE", 1.0)?,
            publish_events: published_events(get)?,
            auto_complete_after_s: parse(get, "HOLDFAST_AUTO_COMPLETE_SECONDS", 7 * 24 * 3600)?,
            refund_redrive_after_s: parse(get, "HOLDFAST_REFUND_REDRIVE_SECONDS", 300)?,
            provider_url: s("HOLDFAST_PROVIDER_URL"),
            supplier_url: s("HOLDFAST_SUPPLIER_URL"),
            supplier_timeout_s: parse(get, "HOLDFAST_SUPPLIER_TIMEOUT_SECONDS", 1800)?,
            supplier_quote_cache_ms: parse(get, "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS", MAX_SUPPLIER_QUOTE_CACHE_MS)?,
            payment_provider: payment_provider(get)?,
            payment_grace_s: parse(get, "HOLDFAST_PAYMENT_GRACE_SECONDS", 600)?,
            payment_query_every_s: parse(get, "HOLDFAST_PAYMENT_QUERY_SECONDS", 30)?,
            refund_review_above: refund_review_above(get)?,
        };
        c.check_ranges()?;
        Ok(c)
    }

    /// The settings that must be positive, and the quote cache's bounds.
    fn check_ranges(&self) -> Result<(), ConfigError> {
        let c = self;
        if !(0..=MAX_SUPPLIER_QUOTE_CACHE_MS).contains(&c.supplier_quote_cache_ms) {
            return Err(ConfigError {
                name: "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS",
                reason: format!("must be in 0..={MAX_SUPPLIER_QUOTE_CACHE_MS}"),
            });
        }
        for (name, v) in [
            ("HOLDFAST_PAYMENT_TTL_SECONDS", c.payment_ttl_s),
            ("HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS", c.reservation_check_delay_s),
            ("HOLDFAST_RECONCILE_INTERVAL_SECONDS", c.reconcile_interval_s),
            ("HOLDFAST_STALE_LOCK_SECONDS", c.stale_lock_s),
            ("HOLDFAST_AUTO_COMPLETE_SECONDS", c.auto_complete_after_s),
            ("HOLDFAST_SUPPLIER_TIMEOUT_SECONDS", c.supplier_timeout_s),
            ("HOLDFAST_PAYMENT_GRACE_SECONDS", c.payment_grace_s),
            ("HOLDFAST_PAYMENT_QUERY_SECONDS", c.payment_query_every_s),
        ] {
            if v <= 0 {
                return Err(ConfigError { name, reason: "must be positive".into() });
            }
        }
        Ok(())
    }
}

/// The reconcile schedule: seconds (the local runner) win over minutes (the template's schedule
/// parameter).
fn reconcile_interval_s(get: &dyn Fn(&str) -> Option<String>) -> Result<i64, ConfigError> {
    match get("HOLDFAST_RECONCILE_INTERVAL_SECONDS").filter(|v| !v.is_empty()) {
        Some(_) => parse(get, "HOLDFAST_RECONCILE_INTERVAL_SECONDS", 600),
        None => Ok(parse::<i64>(get, "HOLDFAST_RECONCILE_INTERVAL_MINUTES", 10)?.saturating_mul(60)),
    }
}

/// Which Stripe mode events must come from, if set (`true`/`false`).
fn stripe_livemode(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<bool>, ConfigError> {
    match get("STRIPE_LIVEMODE").unwrap_or_default().as_str() {
        "" => Ok(None),
        v => v.parse::<bool>().map(Some).map_err(|e| ConfigError { name: "STRIPE_LIVEMODE", reason: e.to_string() }),
    }
}

/// The event kinds put on the bus: a comma-separated list, or [`DEFAULT_PUBLISHED`].
fn published_events(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<crate::domain::events::EventKind>, ConfigError> {
    let Some(list) = get("HOLDFAST_PUBLISH_EVENTS").filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_PUBLISHED.to_vec());
    };
    list.split(',')
        .map(|k| {
            crate::domain::events::EventKind::parse(k.trim())
                .ok_or_else(|| ConfigError { name: "HOLDFAST_PUBLISH_EVENTS", reason: format!("unknown event {k}") })
        })
        .collect()
}

/// The default payment provider: `generic` unless `stripe` is named.
fn payment_provider(get: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    match get("HOLDFAST_PAYMENT_PROVIDER").filter(|v| !v.is_empty()) {
        None => Ok("generic".into()),
        Some(p) if p == "generic" || p == "stripe" => Ok(p),
        Some(p) => Err(ConfigError {
            name: "HOLDFAST_PAYMENT_PROVIDER",
            reason: format!("{p:?} is not a provider (generic, stripe)"),
        }),
    }
}

/// The amount above which a buyer's refund waits for an admin; `None` when unset or `off`.
fn refund_review_above(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<u64>, ConfigError> {
    match get("HOLDFAST_REFUND_REVIEW_ABOVE").filter(|v| !v.is_empty() && v != "off") {
        None => Ok(None),
        Some(_) => Ok(Some(parse(get, "HOLDFAST_REFUND_REVIEW_ABOVE", 0u64)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_production_values() {
        let c = Config::from_lookup(&|_| None).unwrap();
        assert_eq!(c.payment_ttl_s, 900);
        assert_eq!(c.reservation_check_delay_s, 300);
        assert_eq!(c.reconcile_interval_s, 600);
        assert_eq!(c.stale_lock_s, 600);
        assert_eq!(c.max_pending_per_user, 5);
        assert_eq!(c.public_cache_ms, 1000);
        assert_eq!(c.auto_complete_after_s, 604_800);
        assert_eq!(c.refund_redrive_after_s, 300);
        assert_eq!((c.supplier_timeout_s, c.supplier_quote_cache_ms), (1800, 30_000));
        let e =
            Config::from_lookup(&|k| (k == "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS").then(|| "30001".into())).unwrap_err();
        assert_eq!(e.name, "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS");
        assert!(!c.publish_events.contains(&crate::domain::events::EventKind::OrderCreated));
    }

    #[test]
    fn published_events_are_configurable_and_checked() {
        let c = Config::from_lookup(&|k| (k == "HOLDFAST_PUBLISH_EVENTS").then(|| "OrderCreated, OrderPaid".into()))
            .unwrap();
        assert_eq!(c.publish_events.len(), 2);
        assert!(Config::from_lookup(&|k| (k == "HOLDFAST_PUBLISH_EVENTS").then(|| "OrderTeleported".into())).is_err());
    }

    #[test]
    fn the_webhook_key_never_appears_in_debug_output() {
        let c = Config::from_lookup(&|k| {
            (k == "PAYMENT_WEBHOOK_SECRET" || k == "PAYMENT_WEBHOOK_SECRET_PREVIOUS").then(|| "s3cr3t-key".into())
        })
        .unwrap();
        let printed = format!("{c:?} {c:#?}");
        assert!(!printed.contains("s3cr3t-key"), "{printed}");
        assert!(printed.contains("Secret(<redacted>)"));
        assert_eq!(c.webhook_secret.expose(), b"s3cr3t-key");
    }

    #[test]
    fn stripe_settings_default_to_the_real_api_and_no_secrets() {
        let c = Config::from_lookup(&|_| None).unwrap();
        assert_eq!(c.stripe_api_base, "https://api.stripe.com");
        assert!(c.stripe_webhook_secret.is_empty() && c.stripe_api_key.is_empty());
        let c = Config::from_lookup(&|k| {
            (k == "STRIPE_API_KEY" || k == "STRIPE_WEBHOOK_SECRET").then(|| "sk_test_hidden".into())
        })
        .unwrap();
        assert!(!format!("{c:?}").contains("sk_test_hidden"));
    }

    #[test]
    fn webhook_keys_have_a_day_of_overlap_and_livemode_is_checked_only_when_set() {
        let c = Config::from_lookup(&|_| None).unwrap();
        assert_eq!(c.previous_key_window_s, 86_400);
        assert_eq!(c.stripe_livemode, None);
        assert!(c.refund_webhook_secret.is_empty() && c.provider_credential.is_empty());
        let c = Config::from_lookup(&|k| match k {
            "HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS" => Some("0".into()),
            "STRIPE_LIVEMODE" => Some("true".into()),
            "PROVIDER_CREDENTIAL" | "SUPPLIER_CREDENTIAL" | "REFUND_WEBHOOK_SECRET" => Some("hidden-value".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((c.previous_key_window_s, c.stripe_livemode), (0, Some(true)));
        assert!(!format!("{c:?}").contains("hidden-value"));
        let e = Config::from_lookup(&|k| (k == "STRIPE_LIVEMODE").then(|| "live".into())).unwrap_err();
        assert_eq!(e.name, "STRIPE_LIVEMODE");
    }

    #[test]
    fn bad_numbers_are_named() {
        let e = Config::from_lookup(&|k| (k == "HOLDFAST_PAYMENT_TTL_SECONDS").then(|| "soon".into())).unwrap_err();
        assert_eq!(e.name, "HOLDFAST_PAYMENT_TTL_SECONDS");
        let e = Config::from_lookup(&|k| (k == "HOLDFAST_STALE_LOCK_SECONDS").then(|| "0".into())).unwrap_err();
        assert_eq!(e.name, "HOLDFAST_STALE_LOCK_SECONDS");
    }
}
