//! Holdfast's pure domain: no AWS types, no async, no I/O. Everything here is unit-tested beside
//! its code.
//!
//! The lowest floor of the layering (docs/architecture.md, "Layers"), in its own crate so that the
//! compiler holds it: nothing here can name a port, a service, an adapter or the SDK, because this
//! crate does not depend on them. The `holdfast` library re-exports it as `holdfast::domain`.
//! [`mutation`] is the `mutant!` switch the simulator plants bugs with (docs/simulator.md).

pub mod allocation;
pub mod backorder;
pub mod campaign;
pub mod catalogue;
pub mod codes;
pub mod events;
pub mod ids;
pub mod invariants;
pub mod journal;
pub mod kind;
pub mod ledger;
pub mod ledger_journal;
pub mod model;
pub mod money;
pub mod mutation;
pub mod order;
pub mod payment;
pub mod plan;
pub mod push;
pub mod quantity;
pub mod queue;
pub mod refund;
pub mod reservation;
pub mod sale;
pub mod signature;
pub mod stock_changes;
pub mod stock_feed;
pub mod stripe;
pub mod supplier;
pub mod waitlist;
pub mod warehouse;
pub mod webhook_mac;

pub use ids::{CampaignId, IdempotencyKey, OrderId, ReservationId, Sku, UserId};
pub use money::{Currency, Money};
pub use quantity::Quantity;

/// Longest delay SQS allows on one message; longer waits re-arm (docs/architecture.md, "Payment
/// timeout"). A limit of the queues every delayed step runs through, so the domain plans with it.
pub const MAX_DELAY_SECONDS: i64 = 900;
