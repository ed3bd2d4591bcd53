//! The stock store contract: one behaviour, two stores. Every write condition of the
//! [`StockStore`] port is judged here through the port alone, so the in-memory store (unit tests,
//! `adapters::memory::contract_tests`) and DynamoDB on the emulator (tests/tests/e2e/store_contract.rs)
//! run the same checks and must give the same answers.
//!
//! Each check seeds what it needs through the port (`put_sku`, `adjust`, `add_codes`,
//! `write_campaign`) under SKU, campaign, user and order names made from `prefix`, so checks can
//! share a table with each other and with other tests. A failed expectation panics with what
//! differed; [`failures`] runs every check and collects them.

// Test support: a failed expectation panics with what differed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::domain::allocation::Piece;
use crate::domain::campaign::{Campaign, CampaignItem};
use crate::domain::codes::{CodeAppend, StoredCode};
use crate::domain::journal::Cause;
use crate::domain::model::{InventoryModel, Management};
use crate::domain::reservation::{CampaignLine, CodeRange, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{CampaignId, Currency, OrderId, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, CodeUpload, Counter, FreezeLimits, FreezeRejection, MoveRejection, SkuMeta,
    StockStore, Waitlists,
};
mod backorders;
mod checks;
mod codes;
pub mod model;
mod seed;
mod shipment;
mod waitlists;
mod warehouses;
mod waves;

pub use backorders::backorder_fills;
pub use checks::{
    batched_reads, campaign_gates, freezes, lock_moves, pending_cap, per_user_limits, queues, stop_sale,
    stop_sale_on_new_shards,
};
pub use codes::{adjustment_pairs, adjustments, code_lifecycle, code_pools};
use seed::*;
pub use shipment::shipment_takes;
pub use waitlists::waitlists;
pub use warehouses::warehouse_cells;
pub use waves::waves;

use futures::future::BoxFuture;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;

/// One check of the contract.
/// (The waitlists' store is checked beside the stock store: docs/waitlist.md.)
pub type Check = for<'a> fn(&'a dyn StockStore, &'a dyn Waitlists, &'a str) -> BoxFuture<'a, ()>;

/// Every check, by name.
pub const CHECKS: &[(&str, Check)] = &[
    ("freezes", |s, _, p| Box::pin(freezes(s, p))),
    ("per_user_limits", |s, _, p| Box::pin(per_user_limits(s, p))),
    ("pending_cap", |s, _, p| Box::pin(pending_cap(s, p))),
    ("campaign_gates", |s, _, p| Box::pin(campaign_gates(s, p))),
    ("lock_moves", |s, _, p| Box::pin(lock_moves(s, p))),
    ("shipment_takes", |s, _, p| Box::pin(shipment_takes(s, p))),
    ("stop_sale", |s, _, p| Box::pin(stop_sale(s, p))),
    ("stop_sale_on_new_shards", |s, _, p| Box::pin(stop_sale_on_new_shards(s, p))),
    ("code_pools", |s, _, p| Box::pin(code_pools(s, p))),
    ("code_lifecycle", |s, _, p| Box::pin(code_lifecycle(s, p))),
    ("adjustments", |s, _, p| Box::pin(adjustments(s, p))),
    ("adjustment_pairs", |s, _, p| Box::pin(adjustment_pairs(s, p))),
    ("batched_reads", |s, _, p| Box::pin(batched_reads(s, p))),
    ("queues", |s, _, p| Box::pin(queues(s, p))),
    ("waitlists", |s, w, p| Box::pin(waitlists(s, w, p))),
    ("waves", |s, _, p| Box::pin(waves(s, p))),
    ("backorder_fills", |s, _, p| Box::pin(backorder_fills(s, p))),
    ("warehouse_cells", |s, _, p| Box::pin(warehouse_cells(s, p))),
];

/// Runs every check (each under `prefix` + its name) and returns the failed ones with their
/// panic message; empty when the store keeps the whole contract.
pub async fn failures(store: &dyn StockStore, waitlists: &dyn Waitlists, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, check) in CHECKS {
        let p = format!("{prefix}{name}");
        if let Err(e) = AssertUnwindSafe(check(store, waitlists, &p)).catch_unwind().await {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(no message)".into());
            out.push(format!("{name}: {msg}"));
        }
    }
    out
}
