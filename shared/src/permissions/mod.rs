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
//!   `Put` items, `dynamodb:UpdateItem` for `Update`, `dynamodb:ConditionCheckItem` for a
//!   `ConditionCheck` (a freeze's check of the sales switch), on the table each item names.
//! - `BatchGetItem` is its own action; `GetItem` does not cover it, nor the reverse.
//! - `Query` on a GSI is authorised on `<table-arn>/index/<name>`, not on the table.
//! - The audit `dump` Scans (`adapters::dynamo::stock::audit::dump`,
//!   `adapters::dynamo::orders::dump`) are reached by one handler only, capped: the daily ledger
//!   report of orders-api (`GET /admin/ledger/{date}`, `adapters::dynamo::audit`); no other
//!   function is granted `dynamodb:Scan`.
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
    /// `!Ref AdmissionKeySecretArn`: the HMAC key of queue admission tokens (docs/waiting-room.md).
    AdmissionKeySecret,
    /// `CodeKey`, the KMS key code data keys come from. Its use is granted by the key policy
    /// naming the function's role (the role's own policy cannot name the key: a cycle).
    CodeKey,
    /// `!GetAtt ConnectionTable.Arn`: the push channel's connections (docs/push.md).
    ConnectionTable,
    /// `!GetAtt PushQueue.Arn`: order events for push-api and its watch timers.
    PushQueue,
    /// The WebSocket API's connections, `!Sub "arn:${AWS::Partition}:execute-api:…:${PushApi}/live/POST/@connections/*"`
    /// ([`PUSH_CONNECTIONS_ARN`]): `PostToConnection` on this API's stage and nothing else.
    PushConnections,
}

/// The one grant with a wildcard the policy test accepts: every connection id of the push API's
/// stage (connection ids are not known in advance), for `execute-api:ManageConnections`.
pub const PUSH_CONNECTIONS_ARN: &str =
    "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${PushApi}/live/POST/@connections/*";

impl Resource {
    pub const ALL: [Resource; 24] = [
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
        Resource::AdmissionKeySecret,
        Resource::CodeKey,
        Resource::ConnectionTable,
        Resource::PushQueue,
        Resource::PushConnections,
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
            Resource::AdmissionKeySecret => "AdmissionKeySecretArn",
            Resource::CodeKey => "CodeKey",
            Resource::ConnectionTable => "ConnectionTable",
            Resource::PushQueue => "PushQueue",
            Resource::PushConnections => "PushApi",
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
            | Resource::SupplierCredentialSecret
            | Resource::AdmissionKeySecret => "Parameter",
            Resource::CodeKey => "AWS::KMS::Key",
            Resource::ConnectionTable => "AWS::DynamoDB::Table",
            Resource::PushQueue => "AWS::SQS::Queue",
            Resource::PushConnections => "AWS::ApiGatewayV2::Api",
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
            Resource::AdmissionKeySecret => Some("ADMISSION_KEY_SECRET_ARN"),
            Resource::CodeKey => Some("CODE_KMS_KEY_ID"),
            Resource::ConnectionTable => Some("CONNECTION_TABLE"),
            Resource::PushQueue => Some("PUSH_QUEUE_URL"),
            // addressed through PUSH_ENDPOINT, the stage's URL (a !Sub, checked by the policy test)
            Resource::PushConnections => None,
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

mod environment;
mod grants;
pub use environment::{DEFAULTED_ENV, ENV, SECRET_VALUE_ENV};
pub use grants::USES;

use Resource::*;

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
