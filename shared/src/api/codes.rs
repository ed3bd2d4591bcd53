//! A sold code's life after the sale (docs/code-pools.md, "Redemption", "Expiry"):
//! `POST /admin/orders/{order_id}/codes/redeem` and the state `GET /orders/{order_id}/codes`
//! shows for each code.

use super::orders::OrderCode;
use crate::clock;
use crate::domain::codes::lifecycle::CodeState;
use crate::service::codes::redeem::Redemption;
use crate::service::codes::RevealedCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /admin/orders/{order_id}/codes/redeem`: the merchant's system marks one of the order's
/// codes redeemed (the gift card was used).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemCodeRequest {
    /// The code itself, as the buyer presented it (1..=128 characters). Never logged.
    #[schema(min_length = 1, max_length = 128)]
    pub code: String,
}

/// `POST /admin/orders/{order_id}/codes/reissue`: an operator asks the supplier once more for a
/// paid order's codes, after its automatic retries were spent (docs/suppliers.md).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReissueCodesRequest {
    /// Why (the ticket or the supplier's all-clear), 1..=200 characters; logged with the admin.
    #[schema(min_length = 1, max_length = 200)]
    pub reason: String,
}

impl ReissueCodesRequest {
    /// The reason, checked: 1..=200 characters, no control characters.
    pub fn check(&self) -> Result<&str, &'static str> {
        let n = self.reason.chars().count();
        if n == 0 || n > 200 || self.reason.chars().any(char::is_control) || self.reason.trim().is_empty() {
            return Err("reason must be 1..=200 characters without control characters");
        }
        Ok(&self.reason)
    }
}

/// The supplier issued the order's codes on an operator's reissue.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodesReissued {
    pub order_id: String,
    #[schema(example = "ISSUED")]
    pub codes_status: &'static str,
    /// How many codes were issued (shown only to the buyer, at `GET /orders/{order_id}/codes`).
    pub codes: usize,
}

/// A redemption, recorded once.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodeRedemption {
    pub order_id: String,
    pub sku: String,
    /// The code, masked (`••••` and at most its last four characters).
    pub code: String,
    #[schema(example = "REDEEMED")]
    pub state: &'static str,
    /// When it was redeemed (RFC 3339).
    pub redeemed_at: String,
}

impl From<&Redemption> for CodeRedemption {
    fn from(r: &Redemption) -> Self {
        CodeRedemption {
            order_id: r.order_id.to_string(),
            sku: r.sku.to_string(),
            code: r.masked.clone(),
            state: "REDEEMED",
            redeemed_at: clock::rfc3339(r.redeemed_at_ms),
        }
    }
}

impl From<RevealedCode> for OrderCode {
    fn from(c: RevealedCode) -> Self {
        let redeemed_at = match c.state {
            CodeState::Redeemed { at_ms } => Some(clock::rfc3339(at_ms)),
            _ => None,
        };
        OrderCode {
            sku: c.sku.to_string(),
            code: c.code,
            state: c.state.as_str(),
            expire_time: c.expires_at_ms.map(clock::rfc3339),
            redeemed_at,
        }
    }
}
