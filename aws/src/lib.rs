//! Holdfast's ports over AWS and its HTTP peers: DynamoDB, SQS, EventBridge, KMS, Secrets
//! Manager, the WebSocket management API, the payment providers, the suppliers and the push
//! issuer's keys; the SDK's HTTP client and the outbound HTTP client they share. AWS errors become
//! domain answers here and nowhere else.
//!
//! A crate of its own so that the compiler holds its floor (docs/architecture.md, "House rules"):
//! it depends on the domain and the core (ports, settings) and on nothing of the services, the
//! composition root or the handlers. The modules keep the paths they had in the library
//! (`adapters::dynamo`, `adapters::sqs`, …), which re-exports them; the in-memory twins, the
//! emulated faults and the store contract stay in the library's `adapters`.

pub mod adapters {
    pub mod dynamo;
    pub mod eventbridge;
    pub mod https;
    pub mod jwks;
    pub mod kms;
    pub mod outbound;
    pub mod provider;
    pub mod push;
    pub mod sdk_http;
    pub mod secrets;
    pub mod sqs;
    pub mod stripe;
    pub mod supplier;
    pub mod sweep;
    pub mod usage;
}

// The floors below, under the names the modules use (`crate::ports::…`, `crate::domain::…`).
pub use holdfast_core::{clock, config, context, faults, ports, registry, telemetry};
pub use holdfast_domain as domain;
