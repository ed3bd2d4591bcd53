//! Who made an admin write (security review L7): the caller's JWT `sub`, kept on the record the
//! write replaced (SKU metadata, a campaign), with what the write was and when.

use crate::domain::{CampaignId, Sku};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminStamp {
    /// The admin's `sub`.
    pub by: String,
    /// What the write was: `put`, `pause`, `resume`, `adjust`.
    pub action: String,
    pub at_ms: i64,
}

impl AdminStamp {
    pub fn now(by: &str, action: &str) -> AdminStamp {
        AdminStamp { by: by.to_owned(), action: action.to_owned(), at_ms: crate::clock::now_ms() }
    }
}

/// A record an admin write stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamped<'a> {
    Sku(&'a Sku),
    Campaign(&'a CampaignId),
}
