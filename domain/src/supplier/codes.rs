//! Codes a supplier issues when a `SUPPLIER_CODES` order is paid (docs/suppliers.md, "Codes
//! issued by the supplier"). Pure: the retry schedule and the issue state each code booking keeps
//! on the order. What the order says about them (pending, issued, given up) and the steps that
//! change them are the order's: `crate::order::codes`.

use serde::{Deserialize, Serialize};

/// Automatic attempts at an issue: the first at payment, then retries after 1, 2 and 4 s.
pub const ISSUE_ATTEMPTS: u32 = 4;
/// Seconds after the payment from which the reconcile sweep runs an issue still pending itself
/// (its queue message was lost, or the Lambda sending it died): well past the last retry.
pub const SWEEP_AFTER_S: i64 = 60;
/// Most codes one line may ask its supplier for (an order line's quantity is checked at order).
pub const MAX_CODES_PER_LINE: u32 = 100;

/// Seconds to wait after failed attempt `attempt` (1-based) before the next one: 1, 2, 4; `None`
/// after the last: the order stays paid with its codes pending until an operator reissues them.
pub fn retry_delay(attempt: u32) -> Option<u32> {
    (1..ISSUE_ATTEMPTS).contains(&attempt).then(|| 1 << (attempt - 1))
}

/// Where a booking's codes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IssueStatus {
    /// Paid; the supplier is being asked (automatic attempts in flight).
    Pending,
    /// The supplier issued them; sealed on the booking.
    Issued,
    /// Every automatic attempt failed: waits for `POST /admin/orders/{id}/codes/reissue`.
    GaveUp,
}

impl IssueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IssueStatus::Pending => "PENDING",
            IssueStatus::Issued => "ISSUED",
            IssueStatus::GaveUp => "GAVE_UP",
        }
    }
}

/// One issued code as stored on the order: sealed like a pool code (KMS envelope or the
/// keyring), bound to the SKU and its place in the line. Never logged.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedCode {
    pub fingerprint: String,
    pub kid: String,
    pub sealed: String,
}

impl std::fmt::Debug for SealedCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedCode").field("fingerprint", &self.fingerprint).finish_non_exhaustive()
    }
}

/// A code booking's issue, recorded on the order from its payment on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeIssue {
    pub status: IssueStatus,
    /// Epoch s from which the sweep runs a `Pending` issue itself.
    pub due_s: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<SealedCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at_ms: Option<i64>,
    /// The admin (`sub`) whose reissue delivered them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reissued_by: Option<String>,
    /// First shown to the buyer (from then on a buyer's refund waits for an admin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revealed_at_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_after_one_two_and_four_seconds_then_gives_up() {
        let delays: Vec<_> = (1..=ISSUE_ATTEMPTS + 1).map(retry_delay).collect();
        assert_eq!(delays, [Some(1), Some(2), Some(4), None, None]);
        assert_eq!(retry_delay(0), None);
    }

    #[test]
    fn a_sealed_code_never_prints_its_sealed_bytes() {
        let c = SealedCode { fingerprint: "fp".into(), kid: "k".into(), sealed: "SECRET".into() };
        assert!(!format!("{c:?}").contains("SECRET"));
    }
}
