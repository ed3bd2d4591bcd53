//! The waitlists' port (docs/waitlist.md): per SKU a head, entries by number, each buyer's
//! pointer to their latest entry, and each buyer's list of SKUs they wait for. Every change is
//! one all-or-nothing commit conditional on the versions it read. Whether a told entry's token
//! was spent is the waiting rooms' spend ([`super::Queues::spent`] under the SKU's waitlist
//! scope), written by the freeze.

use crate::domain::waitlist::{Entry, Head, UserWaits};
use crate::domain::{Sku, UserId};
use async_trait::async_trait;

/// One change of one SKU's waitlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitCommit {
    pub sku: Sku,
    /// The head written at `head.version` over `head.version - 1` (absent counts as 0).
    pub head: Head,
    /// Entries written as they are.
    pub entries: Vec<Entry>,
    /// A new entry's buyer pointer, written only if it still names what the join read.
    pub pointer: Option<Pointer>,
    /// Buyers' lists written at their `version` over `version - 1` (absent counts as 0).
    pub users: Vec<(UserId, UserWaits)>,
}

/// A buyer's pointer to their latest entry on a SKU (`WLP#<sku>#<user>`), moved by a join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    pub user: UserId,
    /// The new entry's number.
    pub number: u64,
    /// The number the pointer held when the join read it (`None`: absent). The commit is
    /// refused (nothing written) unless the pointer still holds exactly that: two joins of one
    /// buyer never both make an entry.
    pub over: Option<u64>,
}

#[async_trait]
pub trait Waitlists: Send + Sync {
    /// The SKU's head (consistent; the default before the first join).
    async fn waitlist(&self, sku: &Sku) -> anyhow::Result<Head>;
    /// The entries numbered `numbers` that exist, in number order (consistent).
    async fn wait_entries(&self, sku: &Sku, numbers: &[u64]) -> anyhow::Result<Vec<Entry>>;
    /// `user`'s latest entry on the SKU's waitlist (consistent).
    async fn wait_entry_of(&self, sku: &Sku, user: &UserId) -> anyhow::Result<Option<Entry>>;
    /// The SKUs `user` waits for (consistent; the default before their first join).
    async fn user_waits(&self, user: &UserId) -> anyhow::Result<UserWaits>;
    /// Writes the commit all or nothing: `false` when a version it names moved (nothing written).
    async fn commit_waitlist(&self, c: &WaitCommit) -> anyhow::Result<bool>;
}
