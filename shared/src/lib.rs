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
//! The floors up to [`context`] are crates of their own, re-exported here under these names: the
//! domain (`domain/`, `holdfast-domain`) and the commons, ports and context (`core/`,
//! `holdfast-core`, no AWS SDK). The compiler holds them; `layering_tests` reads all three.
//!
//! [`App`]: context::App

pub mod adapters;
pub mod api;
pub mod app;
pub mod edge;
pub mod handlers;
pub mod http;
pub mod lambda;
pub mod permissions;
pub mod sam_local;
pub mod service;

// The pure domain is its own crate (domain/), so the compiler holds the lowest floor; every
// `crate::domain::…` path here goes through this re-export, as does the simulator's `mutant!`.
pub use holdfast_domain as domain;
pub use holdfast_domain::{mutant, mutation};
// The commons, the ports and the context are a crate too (core/): a port can name no AWS type,
// and nothing on those floors can reach a service or an adapter.
pub use holdfast_core::{clock, config, context, fault, faults, ports, registry, telemetry};

#[cfg(test)]
mod layering_tests;
