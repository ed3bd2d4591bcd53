//! The ports the composition root wires, by name ([`super::wiring`] wires them, [`super::unwired`]
//! stands in for one a function does not).

/// A port (or a group of ports over one AWS resource) the composition root wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Port {
    /// The stock table: `stock`, `waitlists` and the sale room (`sale`).
    StockTable,
    /// The order table: `orders`.
    OrderTable,
    /// Paged reads of the sparse indexes of both tables (the reconcile sweep): `sweep`.
    Sweep,
    /// The whole-store read of the ledger report (capped Scans): `audit`.
    Audit,
    /// The stock journal table: `journal`.
    Journal,
    /// The delay queues (SQS): `messages`.
    Queues,
    /// The event bus (EventBridge): `bus`.
    Bus,
    /// The payment webhook's HMAC keys.
    WebhookKeys,
    /// Stripe's webhook endpoint secrets.
    StripeWebhookKeys,
    /// The refund confirmation's HMAC keys.
    RefundWebhookKeys,
    /// The code pool keyring.
    CodeKeys,
    /// The admission tokens' HMAC keys.
    AdmissionKeys,
    /// The KMS key codes are sealed under: `code_key_service`.
    CodeKeyService,
    /// The payment providers' refund side (HTTP; the generic provider and Stripe).
    Providers,
    /// The outside supplier (HTTP).
    Supplier,
    /// The push channel: connections table, WebSocket management API, push queue.
    Push,
}

impl Port {
    pub const ALL: [Port; 16] = [
        Port::StockTable,
        Port::OrderTable,
        Port::Sweep,
        Port::Audit,
        Port::Journal,
        Port::Queues,
        Port::Bus,
        Port::WebhookKeys,
        Port::StripeWebhookKeys,
        Port::RefundWebhookKeys,
        Port::CodeKeys,
        Port::AdmissionKeys,
        Port::CodeKeyService,
        Port::Providers,
        Port::Supplier,
        Port::Push,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Port::StockTable => "stock-table",
            Port::OrderTable => "order-table",
            Port::Sweep => "sweep",
            Port::Audit => "audit",
            Port::Journal => "journal",
            Port::Queues => "queues",
            Port::Bus => "bus",
            Port::WebhookKeys => "webhook-keys",
            Port::StripeWebhookKeys => "stripe-webhook-keys",
            Port::RefundWebhookKeys => "refund-webhook-keys",
            Port::CodeKeys => "code-keys",
            Port::AdmissionKeys => "admission-keys",
            Port::CodeKeyService => "code-key-service",
            Port::Providers => "providers",
            Port::Supplier => "supplier",
            Port::Push => "push",
        }
    }
}
