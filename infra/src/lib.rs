//! The local stack (no Docker, no AWS account): reads `template.yaml`, creates its resources in
//! the moto emulator, and runs the real handlers in-process behind local HTTP routes, SQS and
//! stream pollers and schedules.

pub mod auth;
pub mod client;
pub mod contract;
pub mod docs;
pub mod door;
pub mod peers;
pub mod pollers;
pub mod resources;
pub mod sam;
pub mod server;
pub mod stack;
pub mod template;
pub mod websocket;

pub use stack::{LocalStack, Options};
