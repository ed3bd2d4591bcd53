//! The waitlists' routes (docs/waitlist.md): join, leave, where am I.

use crate::service::waitlist::Place;
use serde::Serialize;
use utoipa::ToSchema;

/// `POST /skus/{sku}/waitlist` (201 joined now, 200 the buyer's own entry again) and
/// `GET /skus/{sku}/waitlist/me`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct WaitlistEntryView {
    pub sku: String,
    /// The entry's place in join order on this SKU's waitlist (1 = the first ever to join it);
    /// buyers are told in this order.
    pub position: u64,
    /// `WAITING`, `NOTIFIED`, `USED`, `EXPIRED` or `LEFT`.
    #[schema(pattern = "^(WAITING|NOTIFIED|USED|EXPIRED|LEFT)$")]
    pub state: &'static str,
    /// When the buyer joined (RFC 3339).
    pub joined_at: String,
    /// Once `NOTIFIED`: what `POST /orders` takes as `admission_token` for a line of this SKU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_token: Option<String>,
    /// When the token (and the entry's claim) runs out (RFC 3339), once told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

impl WaitlistEntryView {
    pub fn new(sku: &str, p: Place) -> Self {
        WaitlistEntryView {
            sku: sku.to_owned(),
            position: p.entry.number,
            state: p.entry.state.as_str(),
            joined_at: crate::clock::rfc3339(p.entry.joined_at_ms),
            admission_token: p.admission_token,
            expires_at: p.entry.expires_at_ms.map(crate::clock::rfc3339),
        }
    }
}
