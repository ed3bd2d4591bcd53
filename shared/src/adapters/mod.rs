//! Adapters: the ports implemented over AWS (and in memory). AWS errors become domain answers
//! here and nowhere else.
//!
//! The AWS adapters and the HTTP peers are a crate of their own (`aws/`, `holdfast-aws`),
//! re-exported here under their old paths; the in-memory twins, the emulated faults and the store
//! contract stay in the library (the in-memory adapters run the services in their tests).

#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod emulate;
pub mod memory;

pub use holdfast_aws::adapters::{
    dynamo, eventbridge, https, jwks, kms, outbound, provider, push, sdk_http, secrets, sqs, stripe, supplier, sweep,
    usage,
};
