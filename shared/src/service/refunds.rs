//! Refunds (docs/after-sale.md, "Refunds"): asked for on the order, issued at the provider by
//! the refunds function, confirmed by the provider's signed webhook.

use crate::app::App;
use crate::domain::OrderId;

/// A provider's webhook saying a refund went through (or failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundConfirmation {
    pub order_id: OrderId,
    /// Our refund id, when the provider echoes it (metadata); else matched by `provider_refund_id`.
    pub refund_id: Option<String>,
    pub provider_refund_id: String,
    /// Minor units.
    pub amount: u64,
    pub succeeded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmResult {
    Applied,
    Duplicate,
}

impl ConfirmResult {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmResult::Applied => "refund_confirmed",
            ConfirmResult::Duplicate => "duplicate",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RefundError {
    #[error("unknown order")]
    UnknownOrder,
    #[error("no such refund on this order")]
    UnknownRefund,
    #[error("amount does not match the refund")]
    AmountMismatch,
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// Records a provider's confirmation on the order (idempotent). Skeleton: filled in with the
/// lifecycle work.
pub async fn confirm(app: &App, c: &RefundConfirmation) -> Result<ConfirmResult, RefundError> {
    let _ = (app, c);
    Err(RefundError::Store(anyhow::anyhow!("refund confirmation is not built yet")))
}
