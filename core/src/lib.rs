//! Holdfast's floors between the pure domain and the use cases: the commons every layer may read
//! ([`clock`], [`config`], [`faults`], [`telemetry`], [`registry`]), the [`ports`] (the traits the
//! use cases need) and the [`context`] they run in ([`context::App`]: ports, settings, caches).
//!
//! A crate of its own so that the compiler holds these floors (docs/architecture.md, "House
//! rules"): it depends on the domain and on no AWS SDK crate, so a port can name no AWS type and
//! nothing here can reach a service, an adapter or a handler. The `holdfast` library re-exports
//! every module under its old name (`holdfast::ports`, `holdfast::context`, …).

pub mod clock;
pub mod config;
pub mod context;
pub mod faults;
pub mod ports;
pub mod registry;
pub mod telemetry;

/// The pure domain, under the name the library uses (`crate::domain::…` reads the same here).
pub use holdfast_domain as domain;
