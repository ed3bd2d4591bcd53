//! Adapters: the ports implemented over AWS (and in memory). AWS errors become domain answers
//! here and nowhere else.

#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod dynamo;
pub mod emulate;
pub mod eventbridge;
pub mod https;
pub mod jwks;
pub mod kms;
pub mod memory;
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
