//! [`ENV`](super::ENV): per function, the environment variables it needs set; and the variables
//! a template may omit ([`DEFAULTED_ENV`]) or must never set ([`SECRET_VALUE_ENV`]).

/// Per function binary: the environment variables (read by `config::Config`) its handler
/// paths depend on and the template must set. Resource names follow from [`USES`]
/// ([`Resource::env_var`]); the rest are settings the template exposes as parameters.
pub const ENV: &[(&str, &[&str])] = &[
    (
        "create-order",
        &[
            "STOCK_TABLE",
            "ORDER_TABLE",
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "RESERVATION_CHECK_QUEUE_URL",
            // the edge's origin check (holdfast::edge; empty with the edge off)
            "HOLDFAST_ORIGIN_VERIFY",
            // orders::create: the order's deadline and the orphan check's delay
            "HOLDFAST_PAYMENT_TTL_SECONDS",
            "HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS",
            // the anti-hoarding cap charged in the freeze
            "HOLDFAST_MAX_PENDING_PER_USER",
            // SUPPLIER orders: quote and book (docs/suppliers.md), their deadline
            "HOLDFAST_SUPPLIER_URL",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
            "HOLDFAST_SUPPLIER_TIMEOUT_SECONDS",
            // a queued campaign's admission token (docs/waiting-room.md)
            "ADMISSION_KEY_SECRET_ARN",
        ],
    ),
    // the waiting room and the queued checkout: create-order's settings and the token's key
    (
        "queue-api",
        &[
            "STOCK_TABLE",
            "ORDER_TABLE",
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "RESERVATION_CHECK_QUEUE_URL",
            "HOLDFAST_ORIGIN_VERIFY",
            "HOLDFAST_PAYMENT_TTL_SECONDS",
            "HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS",
            "HOLDFAST_MAX_PENDING_PER_USER",
            "HOLDFAST_SUPPLIER_URL",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
            "HOLDFAST_SUPPLIER_TIMEOUT_SECONDS",
            "ADMISSION_KEY_SECRET_ARN",
        ],
    ),
    // GET /orders/{order_id}/codes opens the codes with the keyring the secret holds
    (
        "orders-api",
        &[
            "ORDER_TABLE",
            "STOCK_TABLE",
            "JOURNAL_TABLE",
            "HOLDFAST_AUTO_COMPLETE_SECONDS",
            "CODE_KEY_SECRET_ARN",
            "CODE_KMS_KEY_ID",
            "HOLDFAST_ORIGIN_VERIFY",
            "HOLDFAST_PROVIDER_URL",
            "PROVIDER_CREDENTIAL_SECRET_ARN",
            "STRIPE_API_KEY_SECRET_ARN",
            "HOLDFAST_PAYMENT_GRACE_SECONDS",
            "HOLDFAST_PAYMENT_PROVIDER",
            "HOLDFAST_REFUND_REVIEW_ABOVE",
            // a supplier-codes order's manual reissue (docs/suppliers.md, "Codes issued by the supplier")
            "HOLDFAST_SUPPLIER_URL",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
        ],
    ),
    // where refunds of generic payments are issued; where a closed SUPPLIER order's bookings
    // are cancelled (docs/suppliers.md, "Compensation")
    (
        "refunds",
        &[
            "ORDER_TABLE",
            "STOCK_TABLE",
            "HOLDFAST_PROVIDER_URL",
            "PROVIDER_CREDENTIAL_SECRET_ARN",
            "STRIPE_API_KEY_SECRET_ARN",
            "HOLDFAST_SUPPLIER_URL",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
        ],
    ),
    // the webhook's HMAC keys are fetched at run time from the secret this names
    // (and Stripe's endpoint secret, the same way)
    // and the refund confirmation's own key; the previous keys' window; Stripe's expected mode
    (
        "payment-callback",
        &[
            "ORDER_TABLE",
            "WEBHOOK_SECRET_ARN",
            "STRIPE_WEBHOOK_SECRET_ARN",
            "REFUND_WEBHOOK_SECRET_ARN",
            "HOLDFAST_PREVIOUS_KEY_WINDOW_SECONDS",
            "STRIPE_LIVEMODE",
            "HOLDFAST_ORIGIN_VERIFY",
            "HOLDFAST_PAYMENT_GRACE_SECONDS",
            // a supplier-codes order just paid: its first SupplierIssue message
            "PAYMENT_TIMEOUT_QUEUE_URL",
        ],
    ),
    // default ttl_seconds of a hold
    (
        "reservations",
        &["STOCK_TABLE", "RESERVATION_CHECK_QUEUE_URL", "HOLDFAST_PAYMENT_TTL_SECONDS", "HOLDFAST_ORIGIN_VERIFY"],
    ),
    // public views' cache lifetime; the cap the eligibility check reports
    // and the code keyring's secret (code uploads)
    (
        "stock-api",
        &[
            "STOCK_TABLE",
            "HOLDFAST_PUBLIC_CACHE_MS",
            "HOLDFAST_MAX_PENDING_PER_USER",
            "JOURNAL_TABLE",
            "CODE_KEY_SECRET_ARN",
            "CODE_KMS_KEY_ID",
            "HOLDFAST_ORIGIN_VERIFY",
            // GET /admin/machinery
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "RESERVATION_CHECK_QUEUE_URL",
            "RECONCILE_WORK_QUEUE_URL",
            // waitlists (docs/waitlist.md): the told buyer's token, WaitlistNotified
            "ADMISSION_KEY_SECRET_ARN",
            "EVENT_BUS_NAME",
        ],
    ),
    // the public views' cache lifetime; no keyring (CODE_KEY_SECRET_ARN), no journal; the
    // storefront's push endpoint (its page and its CSP name no other, docs/shop.md)
    ("stock-read", &["STOCK_TABLE", "HOLDFAST_PUBLIC_CACHE_MS", "HOLDFAST_ORIGIN_VERIFY", "PUSH_URL"]),
    ("stock-journal", &["JOURNAL_TABLE", "STOCK_TABLE", "EVENT_BUS_NAME"]),
    ("publish-events", &["EVENT_BUS_NAME", "STOCK_TABLE"]),
    // the push channel (docs/push.md): its table, queue and management endpoint, whose tokens
    // $connect takes, and the waiting room's read of a watched ticket
    (
        "push-api",
        &[
            "CONNECTION_TABLE",
            "PUSH_QUEUE_URL",
            "PUSH_ENDPOINT",
            "PUSH_JWT_ISSUER",
            "PUSH_JWT_AUDIENCE",
            "STOCK_TABLE",
            "ADMISSION_KEY_SECRET_ARN",
        ],
    ),
    ("stock-events", &["STOCK_TABLE", "ORDER_TABLE", "EVENT_BUS_NAME"]),
    // SUPPLIER polls: the supplier, and the payment deadline that starts at confirmation
    (
        "payment-timeout",
        &[
            "ORDER_TABLE",
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "HOLDFAST_SUPPLIER_URL",
            "HOLDFAST_PAYMENT_TTL_SECONDS",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
            "HOLDFAST_PROVIDER_URL",
            "PROVIDER_CREDENTIAL_SECRET_ARN",
            "STRIPE_API_KEY_SECRET_ARN",
            "HOLDFAST_PAYMENT_GRACE_SECONDS",
            "HOLDFAST_PAYMENT_QUERY_SECONDS",
            // SupplierIssue: the issued codes sealed under the keyring
            "CODE_KEY_SECRET_ARN",
            "CODE_KMS_KEY_ID",
        ],
    ),
    // a recorded checkout (orders::recorded) is written as create-order writes an order: its
    // deadline, its own orphan check and its payment timeout, the pending cap
    (
        "reservation-check",
        &[
            "STOCK_TABLE",
            "ORDER_TABLE",
            "RESERVATION_CHECK_QUEUE_URL",
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "HOLDFAST_PAYMENT_TTL_SECONDS",
            "HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS",
            "HOLDFAST_MAX_PENDING_PER_USER",
        ],
    ),
    // the sweep's age threshold
    ("reconcile", &["RECONCILE_WORK_QUEUE_URL", "HOLDFAST_STALE_LOCK_SECONDS", "STOCK_TABLE"]),
    // the interval tells a worker when its sweep has fallen behind
    (
        "reconcile-worker",
        &[
            "STOCK_TABLE",
            "ORDER_TABLE",
            "EVENT_BUS_NAME",
            "RECONCILE_WORK_QUEUE_URL",
            "HOLDFAST_STALE_LOCK_SECONDS",
            "HOLDFAST_RESERVATION_CHECK_DELAY_SECONDS",
            "HOLDFAST_RECONCILE_INTERVAL_MINUTES",
            "HOLDFAST_PROVIDER_URL",
            "JOURNAL_TABLE",
            // SUPPLIER orders past their timeout (docs/suppliers.md, "Reconcile")
            "HOLDFAST_SUPPLIER_URL",
            "PAYMENT_TIMEOUT_QUEUE_URL",
            "HOLDFAST_PAYMENT_TTL_SECONDS",
            "SUPPLIER_CREDENTIAL_SECRET_ARN",
            "PROVIDER_CREDENTIAL_SECRET_ARN",
            "STRIPE_API_KEY_SECRET_ARN",
            "HOLDFAST_PAYMENT_GRACE_SECONDS",
            "HOLDFAST_PAYMENT_QUERY_SECONDS",
            // a lost SupplierIssue found by the sweep: the codes sealed under the keyring
            "CODE_KEY_SECRET_ARN",
            "CODE_KMS_KEY_ID",
        ],
    ),
];

/// Variables `Config` (or the log setup) reads whose defaults are the production values, or
/// which only local/test builds use: a function's template environment may omit them, and may
/// set them. (The log level is Lambda's own `ApplicationLogLevel`, not a variable of ours.)
pub const DEFAULTED_ENV: &[&str] = &[
    "HOLDFAST_SOLDOUT_CACHE_MS",
    // waitlists' bounds and token life (docs/waitlist.md; defaults 10,000 / 20 / 300 s)
    "HOLDFAST_WAITLIST_MAX_PER_SKU",
    "HOLDFAST_WAITLIST_MAX_PER_USER",
    "HOLDFAST_WAITLIST_TOKEN_TTL_SECONDS",
    // the sale room: the switch's cache time and the live counters' flush interval
    "HOLDFAST_SWITCH_CACHE_MS",
    "HOLDFAST_LIVE_FLUSH_MS",
    "HOLDFAST_SKU_CACHE_MS",
    "HOLDFAST_MAX_BODY_BYTES",
    // SDK timeouts' multiplier (1 in AWS; the local stack raises it for the emulator)
    "HOLDFAST_SDK_TIMEOUT_SCALE",
    // local runner only: the schedule's interval (the template's rate() expression says it)
    "HOLDFAST_RECONCILE_INTERVAL_SECONDS",
    // local/test builds only (docs/architecture.md, "Local stack")
    "HOLDFAST_FAULTS",
    // publish-events: which event kinds go on the bus (default `config::DEFAULT_PUBLISHED`)
    "HOLDFAST_PUBLISH_EVENTS",
    // local/test builds: the webhook keys themselves when no secret ARN is set
    "PAYMENT_WEBHOOK_SECRET",
    "PAYMENT_WEBHOOK_SECRET_PREVIOUS",
    // `sam local` only: the emulator's URL for every SDK client (`app::AWS_ENDPOINT_VAR`);
    // declared empty in the template's Globals so an `--env-vars` file can set it
    "HOLDFAST_AWS_ENDPOINT",
    // reconcile's refund backstop: how long a REQUESTED refund waits for its event first
    "HOLDFAST_REFUND_REDRIVE_SECONDS",
    // local/test builds: Stripe's webhook endpoint secret when no STRIPE_WEBHOOK_SECRET_ARN is set
    "STRIPE_WEBHOOK_SECRET",
    // the Stripe refunds adapter (docs/after-sale.md, "Stripe"): the API (default the real one)
    // and its secret key, or the secret holding it; the function that issues refunds sets them
    // (`STRIPE_API_KEY_SECRET_ARN` is a resource of every provider caller: see `PROVIDER_CALLERS`)
    "STRIPE_API_BASE",
    "STRIPE_API_KEY",
    // local/test builds: the refund confirmation key and the provider and supplier credentials
    // themselves when no secret ARN is set (in AWS: *_SECRET_ARN, never a plain value)
    "REFUND_WEBHOOK_SECRET",
    "PROVIDER_CREDENTIAL",
    "SUPPLIER_CREDENTIAL",
    // local/test builds: the code keyring itself when no CODE_KEY_SECRET_ARN is set
    "HOLDFAST_CODE_KEY",
    // local/test builds: the admission tokens' keys when no ADMISSION_KEY_SECRET_ARN is set
    "HOLDFAST_ADMISSION_KEY",
    "HOLDFAST_ADMISSION_KEY_PREVIOUS",
    // the code pool level under which a freeze counts CodePoolLow (default 10)
    "HOLDFAST_CODE_POOL_LOW",
    // reconcile: how quiet a code pool shard must be before its unbound claims are returned
    "HOLDFAST_CODE_CLAIM_QUIET_MS",
    // a warm Lambda's supplier quote lifetime (default and maximum 30 s, docs/suppliers.md)
    "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS",
    // local/test builds: the local stack's HS256 token key, which push-api's $connect checks
    // instead of the issuer's keys (never set by the template: SECRET_VALUE_ENV)
    "LOCAL_JWT_SECRET",
];

/// Variables that would carry a secret's value itself: set only by the local stack and tests,
/// never by template.yaml (security review V5, L8).
pub const SECRET_VALUE_ENV: &[&str] = &[
    "LOCAL_JWT_SECRET",
    "PAYMENT_WEBHOOK_SECRET",
    "PAYMENT_WEBHOOK_SECRET_PREVIOUS",
    "REFUND_WEBHOOK_SECRET",
    "STRIPE_WEBHOOK_SECRET",
    "STRIPE_API_KEY",
    "PROVIDER_CREDENTIAL",
    "SUPPLIER_CREDENTIAL",
    "HOLDFAST_CODE_KEY",
    "HOLDFAST_ADMISSION_KEY",
    "HOLDFAST_ADMISSION_KEY_PREVIOUS",
];
