//! A payment as the order records it: which provider it came through, what it was and what
//! became of it. Its own module so a refund can name a payment without depending on the order.

use serde::{Deserialize, Serialize};

/// What became of one payment callback, recorded on the order so a payment id is applied once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentOutcome {
    Applied,
    RefundRequested,
    FailedRecorded,
    AmountMismatch,
}

/// Which payment provider a payment came through: its refund goes back through the same one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// The generic signed webhook (`POST /payments/callback`).
    #[default]
    Generic,
    /// Stripe (`POST /payments/stripe`).
    Stripe,
}

impl Provider {
    /// Its name on the wire (`generic`, `stripe`).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Generic => "generic",
            Provider::Stripe => "stripe",
        }
    }

    /// The provider `name` names, if any.
    pub fn parse(name: &str) -> Option<Provider> {
        [Provider::Generic, Provider::Stripe].into_iter().find(|p| p.as_str() == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRecord {
    pub payment_id: String,
    #[serde(default)]
    pub provider: Provider,
    pub succeeded: bool,
    pub amount: u64,
    pub currency: String,
    pub outcome: PaymentOutcome,
    pub at_ms: i64,
}
