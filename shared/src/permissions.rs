//! The declared map of what each function's code touches: the IAM actions on which resources
//! ([`USES`]) and the environment variables it needs set ([`ENV`]). `tests/tests/policy.rs`
//! reads `template.yaml` and demands that every function's inline policy grants exactly
//! [`USES`] (nothing more, nothing less, no `*`) and that its `Environment.Variables` are
//! exactly [`ENV`] (plus the Globals).
//!
//! # Keeping it true
//!
//! The entries were derived by following each handler through the services and ports down to
//! the adapter calls (`adapters/dynamo/{stock,orders}.rs`, `adapters/sqs.rs`,
//! `adapters/eventbridge.rs`). When you change what a handler path reaches:
//!
//! 1. New port call (or a port method that now issues another AWS request): add the IAM action
//!    here for every function whose handler reaches it. The policy test then fails until the
//!    template grants it — that is the point: the deploy would fail at runtime with
//!    AccessDenied otherwise, and no emulator test would notice (the emulator does not
//!    evaluate IAM).
//! 2. Removed call: remove the action here; the test then demands the grant be removed too.
//! 3. A function reads a new setting or resource name: add the variable to [`ENV`] (and to the
//!    function's `Environment.Variables` in the template). A tuning knob whose default is the
//!    production value and that the template does not set belongs in [`DEFAULTED_ENV`].
//!
//! IAM facts the map encodes:
//! - `TransactWriteItems` is not an IAM action: a transaction needs `dynamodb:PutItem` for its
//!   `Put` items, `dynamodb:UpdateItem` for `Update`, (`DeleteItem`, `ConditionCheckItem` for the
//!   kinds Holdfast does not use) on the table each item names.
//! - `BatchGetItem` is its own action; `GetItem` does not cover it, nor the reverse.
//! - `Query` on a GSI is authorised on `<table-arn>/index/<name>`, not on the table.
//! - The audit `dump` Scans (`adapters::dynamo::stock::audit::dump`,
//!   `adapters::dynamo::orders::dump`) are test-only and never reached by a handler: no function
//!   is granted `dynamodb:Scan`.
//! - Reading the order stream (`dynamodb:GetRecords` …) is granted by SAM's DynamoDB event
//!   source, not by an inline statement, and is not part of this map.
//! - The code key's use (`kms:GenerateDataKey` for stock-api, `kms:Decrypt` for orders-api) is
//!   granted by the key's own policy naming the function's role, not by the role's policy (the
//!   role would then depend on the key and the key on the role); the policy test counts those
//!   statements as the function's grants.

/// A resource of `template.yaml` a function may be granted access to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `!GetAtt StockTable.Arn`
    StockTable,
    /// `!Sub "${StockTable.Arn}/index/…"`
    StockTableIndexes,
    /// `!GetAtt OrderTable.Arn`
    OrderTable,
    /// `!Sub "${OrderTable.Arn}/index/…"`
    OrderTableIndexes,
    PaymentTimeoutQueue,
    ReservationCheckQueue,
    /// `!GetAtt EventBus.Arn` (`!Ref EventBus` is the bus *name*, not an ARN).
    EventBus,
    /// The on-failure destination of publish-events' stream source.
    PublishEventsFailureQueue,
    /// The reconcile sweep's work items.
    ReconcileWorkQueue,
    /// `!Ref WebhookSecretArn`: the Secrets Manager secret holding the webhook's HMAC keys (a
    /// parameter whose value is an ARN outside the stack).
    WebhookSecret,
    /// `!Ref StripeWebhookSecretArn`: the secret holding Stripe's webhook endpoint secret.
    StripeWebhookSecret,
    /// `!GetAtt JournalTable.Arn`: the stock journal.
    JournalTable,
    /// `!Sub "${JournalTable.Arn}/index/…"` (`by-ref`).
    JournalTableIndexes,
    /// The on-failure destination of stock-journal's stream source.
    StockJournalFailureQueue,
    /// `!Ref CodeKeySecretArn`: the secret holding the code pool keyring (docs/code-pools.md).
    CodeKeySecret,
    /// `!Ref RefundWebhookSecretArn`: the refund confirmation's own HMAC key (review L1).
    RefundWebhookSecret,
    /// `!Ref StripeApiKeySecretArn`: Stripe's secret API key (review L8).
    StripeApiKeySecret,
    /// `!Ref ProviderCredentialSecretArn`: the bearer credential of generic provider calls (M3).
    ProviderCredentialSecret,
    /// `!Ref SupplierCredentialSecretArn`: the bearer credential of supplier calls (M3).
    SupplierCredentialSecret,
    /// `CodeKey`, the KMS key code data keys come from. Its use is granted by the key policy
    /// naming the function's role (the role's own policy cannot name the key: a cycle).
    CodeKey,
}

impl Resource {
    pub const ALL: [Resource; 20] = [
        Resource::StockTable,
        Resource::StockTableIndexes,
        Resource::OrderTable,
        Resource::OrderTableIndexes,
        Resource::PaymentTimeoutQueue,
        Resource::ReservationCheckQueue,
        Resource::EventBus,
        Resource::PublishEventsFailureQueue,
        Resource::ReconcileWorkQueue,
        Resource::WebhookSecret,
        Resource::StripeWebhookSecret,
        Resource::JournalTable,
        Resource::JournalTableIndexes,
        Resource::StockJournalFailureQueue,
        Resource::CodeKeySecret,
        Resource::RefundWebhookSecret,
        Resource::StripeApiKeySecret,
        Resource::ProviderCredentialSecret,
        Resource::SupplierCredentialSecret,
        Resource::CodeKey,
    ];

    /// The template's logical id of the resource (for indexes: of their table).
    pub fn logical_id(self) -> &'static str {
        match self {
            Resource::StockTable | Resource::StockTableIndexes => "StockTable",
            Resource::OrderTable | Resource::OrderTableIndexes => "OrderTable",
            Resource::PaymentTimeoutQueue => "PaymentTimeoutQueue",
            Resource::ReservationCheckQueue => "ReservationCheckQueue",
            Resource::EventBus => "EventBus",
            Resource::PublishEventsFailureQueue => "PublishEventsFailureQueue",
            Resource::ReconcileWorkQueue => "ReconcileWorkQueue",
            Resource::WebhookSecret => "WebhookSecretArn",
            Resource::StripeWebhookSecret => "StripeWebhookSecretArn",
            Resource::JournalTable | Resource::JournalTableIndexes => "JournalTable",
            Resource::StockJournalFailureQueue => "StockJournalFailureQueue",
            Resource::CodeKeySecret => "CodeKeySecretArn",
            Resource::RefundWebhookSecret => "RefundWebhookSecretArn",
            Resource::StripeApiKeySecret => "StripeApiKeySecretArn",
            Resource::ProviderCredentialSecret => "ProviderCredentialSecretArn",
            Resource::SupplierCredentialSecret => "SupplierCredentialSecretArn",
            Resource::CodeKey => "CodeKey",
        }
    }

    /// The CloudFormation type the logical id must have.
    pub fn cfn_type(self) -> &'static str {
        match self {
            Resource::StockTable
            | Resource::StockTableIndexes
            | Resource::OrderTable
            | Resource::OrderTableIndexes
            | Resource::JournalTable
            | Resource::JournalTableIndexes => "AWS::DynamoDB::Table",
            Resource::StockJournalFailureQueue => "AWS::SQS::Queue",
            Resource::PaymentTimeoutQueue
            | Resource::ReservationCheckQueue
            | Resource::PublishEventsFailureQueue
            | Resource::ReconcileWorkQueue => "AWS::SQS::Queue",
            Resource::EventBus => "AWS::Events::EventBus",
            Resource::WebhookSecret
            | Resource::StripeWebhookSecret
            | Resource::CodeKeySecret
            | Resource::RefundWebhookSecret
            | Resource::StripeApiKeySecret
            | Resource::ProviderCredentialSecret
            | Resource::SupplierCredentialSecret => "Parameter",
            Resource::CodeKey => "AWS::KMS::Key",
        }
    }

    /// Whether this stands for a table's secondary indexes.
    pub fn is_index(self) -> bool {
        matches!(self, Resource::StockTableIndexes | Resource::OrderTableIndexes | Resource::JournalTableIndexes)
    }

    /// The environment variable through which the code learns this resource's name or URL
    /// (`None`: the code never addresses it; the platform does).
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Resource::StockTable | Resource::StockTableIndexes => Some("STOCK_TABLE"),
            Resource::OrderTable | Resource::OrderTableIndexes => Some("ORDER_TABLE"),
            Resource::PaymentTimeoutQueue => Some("PAYMENT_TIMEOUT_QUEUE_URL"),
            Resource::ReservationCheckQueue => Some("RESERVATION_CHECK_QUEUE_URL"),
            Resource::EventBus => Some("EVENT_BUS_NAME"),
            Resource::PublishEventsFailureQueue => None,
            Resource::ReconcileWorkQueue => Some("RECONCILE_WORK_QUEUE_URL"),
            Resource::WebhookSecret => Some("WEBHOOK_SECRET_ARN"),
            Resource::StripeWebhookSecret => Some("STRIPE_WEBHOOK_SECRET_ARN"),
            Resource::JournalTable | Resource::JournalTableIndexes => Some("JOURNAL_TABLE"),
            Resource::StockJournalFailureQueue => None,
            Resource::CodeKeySecret => Some("CODE_KEY_SECRET_ARN"),
            Resource::RefundWebhookSecret => Some("REFUND_WEBHOOK_SECRET_ARN"),
            Resource::StripeApiKeySecret => Some("STRIPE_API_KEY_SECRET_ARN"),
            Resource::ProviderCredentialSecret => Some("PROVIDER_CREDENTIAL_SECRET_ARN"),
            Resource::SupplierCredentialSecret => Some("SUPPLIER_CREDENTIAL_SECRET_ARN"),
            Resource::CodeKey => Some("CODE_KMS_KEY_ID"),
        }
    }
}

/// Whether `action` changes data (for spot checks such as "the payment callback cannot write
/// the stock table").
pub fn is_write_action(action: &str) -> bool {
    matches!(
        action,
        "dynamodb:PutItem"
            | "dynamodb:UpdateItem"
            | "dynamodb:DeleteItem"
            | "dynamodb:BatchWriteItem"
            | "dynamodb:PartiQLInsert"
            | "dynamodb:PartiQLUpdate"
            | "dynamodb:PartiQLDelete"
    ) || action.ends_with(":*")
}

use Resource::*;

/// Per function binary: the IAM actions its handler paths need, on which resource.
///
/// The comment over each group names the code that issues the requests.
pub const USES: &[(&str, &[(&str, Resource)])] = &[
    (
        "create-order",
        &[
            // stock::metas → get_skus, stock::freeze → resplit → get_skus + read_shards
            ("dynamodb:BatchGetItem", StockTable),
            // stock::freeze: replay / fast-path → get_reservation; release (failed order put) → change
            ("dynamodb:GetItem", StockTable),
            // put_frozen: TransactWriteItems with a Put (reservation) …
            ("dynamodb:PutItem", StockTable),
            // … and Updates (shards, per-user counters); move_lock (release after a failed put)
            ("dynamodb:UpdateItem", StockTable),
            // write_order: replay → orders.get (a SUPPLIER order's replay check, too)
            ("dynamodb:GetItem", OrderTable),
            // put_new; put_void (order put failed); supplier::book_new → replace (booking ids)
            ("dynamodb:PutItem", OrderTable),
            // Message::PaymentTimeout (or a SUPPLIER order's first SupplierPoll) after the order put
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // Message::ReservationCheck in parallel with the freeze
            ("sqs:SendMessage", ReservationCheckQueue),
            // SUPPLIER SKUs: quote and book with the supplier's credential (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
        ],
    ),
    (
        "orders-api",
        &[
            // get_owned / cancel → orders.get
            ("dynamodb:GetItem", OrderTable),
            // cancel → orders.replace (a conditional PutItem, not UpdateItem)
            ("dynamodb:PutItem", OrderTable),
            // list → list_for_user: Query by-user (KEYS_ONLY) then BatchGetItem of the orders
            ("dynamodb:Query", OrderTableIndexes),
            ("dynamodb:BatchGetItem", OrderTable),
            // after_sale::apply → orders.get / replace (above); the admin view → get_reservation
            ("dynamodb:GetItem", StockTable),
            // the admin view → journal.for_cause (Query on the journal's by-ref index)
            ("dynamodb:Query", JournalTableIndexes),
            // GET /orders/{order_id}/codes → read_codes, and the keyring that opens them
            ("dynamodb:BatchGetItem", StockTable),
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            // … and a v3 code's data key, opened under the SKU's encryption context (granted by
            // the key's policy, not the role's: see `CodeKey`)
            ("kms:Decrypt", CodeKey),
            // a code lock's fate, once: revealed (GET …/codes) or withdrawn (the buyer's
            // refund) — settle_codes, one conditional UpdateItem on the lock record
            ("dynamodb:UpdateItem", StockTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
        ],
    ),
    (
        "payment-callback",
        &[
            // payments::apply, refunds::confirm → orders.get, orders.replace. Never touches stock
            // (docs/architecture.md, "Payment callback").
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // SecretsManagerKeys: the HMAC keys, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", WebhookSecret),
            // POST /payments/stripe: Stripe's endpoint secret, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", StripeWebhookSecret),
            // POST /payments/refunds: the refund confirmation's own key (review L1)
            ("secretsmanager:GetSecretValue", RefundWebhookSecret),
        ],
    ),
    (
        "reservations",
        &[
            // stock::metas, stock::freeze (as create-order)
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:GetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // put_frozen Updates; confirm / release → move_lock (OnReleased::Refuse: no retake)
            ("dynamodb:UpdateItem", StockTable),
            // Message::ReservationCheck at the hold's deadline
            ("sqs:SendMessage", ReservationCheckQueue),
        ],
    ),
    (
        "stock-api",
        &[
            // admin::put_sku / adjust / view → get_skus, read_shards; put_sku(Some) and the
            // duplicate-adjustment read → batch_get. No get_reservation: no GetItem.
            ("dynamodb:BatchGetItem", StockTable),
            // put_sku / rebalance / adjust: transactions with Put items …
            ("dynamodb:PutItem", StockTable),
            // … and Update items (rebalance shards, adjust meta + shards)
            ("dynamodb:UpdateItem", StockTable),
            // GET /admin/skus/{sku}/journal → journal.for_sku (a Query on the table's key)
            ("dynamodb:Query", JournalTable),
            // POST /admin/skus/{sku}/codes → code_batch (a finished batch's record)
            ("dynamodb:GetItem", StockTable),
            // … and the keyring that seals the codes, AWSCURRENT and AWSPREVIOUS, cached
            ("secretsmanager:GetSecretValue", CodeKeySecret),
            // … and the KMS data key new codes are sealed under (one per SKU per warm Lambda,
            // cached; granted by the key's policy)
            ("kms:GenerateDataKey", CodeKey),
            // GET /admin/machinery: the depths of the queues the functions send to
            ("sqs:GetQueueAttributes", PaymentTimeoutQueue),
            ("sqs:GetQueueAttributes", ReservationCheckQueue),
            ("sqs:GetQueueAttributes", ReconcileWorkQueue),
        ],
    ),
    (
        "stock-read",
        &[
            // the anonymous public reads only (security review L5): admin::public_view,
            // admin::calendar → get_skus_public, read_shards_public; campaigns::view →
            // get_campaign, read_quota_shards — all eventually consistent BatchGets. The
            // template narrows it to SKU#, CMP# and CQ# keys (dynamodb:LeadingKeys): no code item,
            // no fingerprint, no lock. No write, no keyring.
            ("dynamodb:BatchGetItem", StockTable),
        ],
    ),
    (
        "stock-journal",
        &[
            // DynamoJournal::put
            ("dynamodb:BatchWriteItem", JournalTable),
            // sale::check_low_stock: the SKU's metadata and shards, the low-stock mark (a
            // conditional PutItem / DeleteItem of SALE#low#<sku>) and the LowStock event
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            ("dynamodb:DeleteItem", StockTable),
            ("events:PutEvents", EventBus),
            // Not the code: the stream event source's OnFailure destination (as publish-events)
            ("sqs:SendMessage", StockJournalFailureQueue),
        ],
    ),
    (
        "publish-events",
        &[
            // EventBridgeBus::publish
            ("events:PutEvents", EventBus),
            // sale::flush: campaign orders by status, added to SALE#live#<campaign>
            ("dynamodb:UpdateItem", StockTable),
            // Not the code: the stream event source's OnFailure destination sends with the
            // function's role (its DestinationConfig names no Type, so SAM adds no policy).
            ("sqs:SendMessage", PublishEventsFailureQueue),
        ],
    ),
    (
        "stock-events",
        &[
            // stock::confirm (OnReleased::Retake) / release → change → get_reservation
            ("dynamodb:GetItem", StockTable),
            // move_lock, retake (Update-only transactions), mark_oversold (UpdateItem)
            ("dynamodb:UpdateItem", StockTable),
            // a release of a code line reads its codes and ring tails and puts the codes back
            // at the tails (docs/code-pools.md)
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // retake → OversellDetected
            ("events:PutEvents", EventBus),
            // cross_check: the order's status must agree with the event (security review V4)
            ("dynamodb:GetItem", OrderTable),
        ],
    ),
    (
        "refunds",
        &[
            // refunds::issue / request_for_oversell, supplier::compensate → orders.get,
            // orders.replace; the provider and the supplier are HTTP peers, not AWS resources
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // request_for_oversell cross-checks OversellDetected against the lock's mark
            // (get_reservation)
            ("dynamodb:GetItem", StockTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
        ],
    ),
    (
        "payment-timeout",
        &[
            // orders::payment_timeout → orders.get, expire → orders.replace; supplier::poll (same)
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // re-arm for a deadline more than one hop away; the next SupplierPoll; the payment
            // timeout of a SUPPLIER order that just became payable
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
        ],
    ),
    (
        "reservation-check",
        &[
            // checks::reservation_check → get_reservation; resolve_frozen(sweep = false) →
            // stock::release only (the confirm branch, which could publish OversellDetected,
            // is reconcile's: `sweep &&`).
            ("dynamodb:GetItem", StockTable),
            ("dynamodb:UpdateItem", StockTable),
            // a release of a code line: its codes and ring tails read, the codes put back
            ("dynamodb:BatchGetItem", StockTable),
            ("dynamodb:PutItem", StockTable),
            // orders.get; put_void (the fence)
            ("dynamodb:GetItem", OrderTable),
            ("dynamodb:PutItem", OrderTable),
            // re-arm when not yet due
            ("sqs:SendMessage", ReservationCheckQueue),
        ],
    ),
    (
        "reconcile",
        &[
            // reconcile::seed: one sweep's work items, unless the last sweep's are still queued
            ("sqs:SendMessage", ReconcileWorkQueue),
            ("sqs:GetQueueAttributes", ReconcileWorkQueue),
            // sale::note_sweep: the machinery page's last sweep (SALE#live#reconcile)
            ("dynamodb:UpdateItem", StockTable),
        ],
    ),
    (
        "reconcile-worker",
        &[
            // stale_locks → get_reservations; settled → get_skus + read_shards
            ("dynamodb:BatchGetItem", StockTable),
            // resolve_frozen(sweep = true) → release / confirm → get_reservation
            ("dynamodb:GetItem", StockTable),
            // move_lock, retake, mark_oversold
            ("dynamodb:UpdateItem", StockTable),
            // a code line's release and the code pool repair put codes back in their rings
            ("dynamodb:PutItem", StockTable),
            // DynamoSweep: frozen_page (frozen-by-age), skus_page (skus)
            ("dynamodb:Query", StockTableIndexes),
            // resolve_frozen / overdue orders → orders.get
            ("dynamodb:GetItem", OrderTable),
            // put_void (fence), expire → replace
            ("dynamodb:PutItem", OrderTable),
            // DynamoSweep::pending_page (pending-by-deadline), shipped_page, refunds_page
            ("dynamodb:Query", OrderTableIndexes),
            // confirm → retake → OversellDetected
            ("events:PutEvents", EventBus),
            // the rest of an item past its budget, sent back with its cursor
            ("sqs:SendMessage", ReconcileWorkQueue),
            // a SUPPLIER order resolved past its timeout that confirmed: its payment timeout
            ("sqs:SendMessage", PaymentTimeoutQueue),
            // SkuJournals → journal.since; LockedTotals → journal.for_sku (Queries on the key)
            ("dynamodb:Query", JournalTable),
            // SkuJournals → journal.checkpoint / put_checkpoint (review protocol-2 #7)
            ("dynamodb:GetItem", JournalTable),
            ("dynamodb:PutItem", JournalTable),
            // the payment providers (docs/after-sale.md, "Providers"): the generic provider's
            // credential and Stripe's API key, read at run time (PROVIDER_CALLERS; review M3, L8)
            ("secretsmanager:GetSecretValue", ProviderCredentialSecret),
            ("secretsmanager:GetSecretValue", StripeApiKeySecret),
            // the supplier's credential on every supplier call (review M3)
            ("secretsmanager:GetSecretValue", SupplierCredentialSecret),
        ],
    ),
];

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
        ],
    ),
    // the public views' cache lifetime; no keyring (CODE_KEY_SECRET_ARN), no journal
    ("stock-read", &["STOCK_TABLE", "HOLDFAST_PUBLIC_CACHE_MS", "HOLDFAST_ORIGIN_VERIFY"]),
    ("stock-journal", &["JOURNAL_TABLE", "STOCK_TABLE", "EVENT_BUS_NAME"]),
    ("publish-events", &["EVENT_BUS_NAME", "STOCK_TABLE"]),
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
        ],
    ),
    ("reservation-check", &["STOCK_TABLE", "ORDER_TABLE", "RESERVATION_CHECK_QUEUE_URL"]),
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
        ],
    ),
];

/// Variables `Config` (or the log setup) reads whose defaults are the production values, or
/// which only local/test builds use: a function's template environment may omit them, and may
/// set them. (The log level is Lambda's own `ApplicationLogLevel`, not a variable of ours.)
pub const DEFAULTED_ENV: &[&str] = &[
    "HOLDFAST_SOLDOUT_CACHE_MS",
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
    // the code pool level under which a freeze counts CodePoolLow (default 10)
    "HOLDFAST_CODE_POOL_LOW",
    // reconcile: how quiet a code pool shard must be before its unbound claims are returned
    "HOLDFAST_CODE_CLAIM_QUIET_MS",
    // a warm Lambda's supplier quote lifetime (default and maximum 30 s, docs/suppliers.md)
    "HOLDFAST_SUPPLIER_QUOTE_CACHE_MS",
];

/// The declared uses of `function`.
pub fn uses(function: &str) -> Option<&'static [(&'static str, Resource)]> {
    USES.iter().find(|(f, _)| *f == function).map(|(_, u)| *u)
}

/// The declared environment of `function`.
pub fn env(function: &str) -> Option<&'static [&'static str]> {
    ENV.iter().find(|(f, _)| *f == function).map(|(_, e)| *e)
}

/// Functions whose handlers may call a payment provider: refunds (issue), reconcile-worker (the
/// refund backstop, status queries of late payments and stuck refunds, settlement),
/// payment-timeout (asking the provider at the deadline, cancelling) and orders-api (starting a
/// payment). Each must be able to call every provider the configuration can select:
/// [`provider_needs`] says what that takes, and `tests/tests/policy.rs` walks every provider ×
/// caller against template.yaml (security review L8).
pub const PROVIDER_CALLERS: &[&str] = &["orders-api", "payment-timeout", "refunds", "reconcile-worker"];

/// A function's needs for one provider: the variables the template must set, the grants it
/// must give.
pub type Needs = (&'static [&'static str], &'static [(&'static str, Resource)]);

/// What calling `provider` takes in a function. Secrets are named by ARN and read at run time,
/// never put in the environment (security review V5).
pub fn provider_needs(provider: crate::domain::order::Provider) -> Needs {
    use crate::domain::order::Provider;
    match provider {
        Provider::Generic => (
            &["HOLDFAST_PROVIDER_URL", "PROVIDER_CREDENTIAL_SECRET_ARN"],
            &[("secretsmanager:GetSecretValue", ProviderCredentialSecret)],
        ),
        Provider::Stripe => (&["STRIPE_API_KEY_SECRET_ARN"], &[("secretsmanager:GetSecretValue", StripeApiKeySecret)]),
    }
}

/// What receiving `provider`'s webhooks takes in payment-callback (the same walk).
pub fn webhook_needs(provider: crate::domain::order::Provider) -> Needs {
    use crate::domain::order::Provider;
    match provider {
        // the payment callback and the refund confirmation, each with its own key
        Provider::Generic => (
            &["WEBHOOK_SECRET_ARN", "REFUND_WEBHOOK_SECRET_ARN"],
            &[("secretsmanager:GetSecretValue", WebhookSecret), ("secretsmanager:GetSecretValue", RefundWebhookSecret)],
        ),
        Provider::Stripe => (&["STRIPE_WEBHOOK_SECRET_ARN"], &[("secretsmanager:GetSecretValue", StripeWebhookSecret)]),
    }
}

/// Variables that would carry a secret's value itself: set only by the local stack and tests,
/// never by template.yaml (security review V5, L8).
pub const SECRET_VALUE_ENV: &[&str] = &[
    "PAYMENT_WEBHOOK_SECRET",
    "PAYMENT_WEBHOOK_SECRET_PREVIOUS",
    "REFUND_WEBHOOK_SECRET",
    "STRIPE_WEBHOOK_SECRET",
    "STRIPE_API_KEY",
    "PROVIDER_CREDENTIAL",
    "SUPPLIER_CREDENTIAL",
    "HOLDFAST_CODE_KEY",
];
