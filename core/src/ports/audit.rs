//! The whole-store read of the daily ledger report (docs/operations.md, "Daily ledger report"):
//! every counter, lock, per-user and pending counter, campaign quota, code pool ring and order,
//! read in pages and capped. Never on a checkout path: an admin route and the daily schedule.

use crate::domain::invariants::Snapshot;
use async_trait::async_trait;

/// What [`Audit::read_all`] read.
pub struct AuditRead {
    /// The store as read (`now_s` = when the read started; `check_delay_s` = 0: the caller's).
    pub snapshot: Snapshot,
    /// Items read over both tables.
    pub items: usize,
    /// `false`: a table held more than the cap and was read only in part (its checks are then
    /// not trustworthy: the caller reports the read as incomplete instead).
    pub complete: bool,
}

/// Whole-store reads (DynamoDB: a paged Scan of the stock table and of the order table).
#[async_trait]
pub trait Audit: Send + Sync {
    /// Everything [`crate::domain::invariants::check_all`] reads, stopping after `max_items`
    /// items of either table.
    async fn read_all(&self, max_items: usize) -> anyhow::Result<AuditRead>;
}

/// For apps wired without a whole-store reader (unit tests over bare ports): every read fails.
pub struct NoAudit;

#[async_trait]
impl Audit for NoAudit {
    async fn read_all(&self, _max_items: usize) -> anyhow::Result<AuditRead> {
        anyhow::bail!("this app reads no whole store")
    }
}
