//! Holdfast: order and stock reservation on AWS serverless.
//!
//! Floors, lowest first (a module imports only from its own floor or below; `layering_tests`
//! checks it on every `make test`): [`domain`] (pure) → commons ([`clock`], [`config`],
//! [`faults`], [`telemetry`], [`registry`]) → [`ports`] (traits) → [`context`] (the [`App`]
//! the use cases run in) → [`service`] (use cases) → [`api`] / [`http`] (the HTTP contract) →
//! [`adapters`] (DynamoDB, SQS, EventBridge, memory; no adapter imports another) → [`app`]
//! (composition) → [`handlers`] (one per Lambda) → [`lambda`], [`sam_local`], [`edge`]. Each
//! `functions/<name>` binary is a thin `main` over [`lambda`].
//!
//! [`App`]: context::App

pub mod adapters;
pub mod api;
pub mod app;
pub mod clock;
pub mod config;
pub mod context;
pub mod edge;
pub mod faults;
pub mod handlers;
pub mod http;
pub mod lambda;
pub mod permissions;
pub mod ports;
pub mod registry;
pub mod sam_local;
pub mod service;
pub mod telemetry;

// The pure domain is its own crate (domain/), so the compiler holds the lowest floor; every
// `crate::domain::…` path here goes through this re-export, as does the simulator's `mutant!`.
pub use holdfast_domain as domain;
pub use holdfast_domain::{mutant, mutation};

#[cfg(test)]
mod layering_tests;
