//! Holdfast: order and stock reservation on AWS serverless.
//!
//! Layers: [`domain`] (pure) → [`ports`] (traits) → [`adapters`] (DynamoDB, SQS, EventBridge,
//! memory) → [`service`] (use cases) → [`handlers`] (one per Lambda). Each `functions/<name>`
//! binary is a thin `main` over [`lambda`]. [`api`] is the HTTP contract as types.

pub mod adapters;
pub mod api;
pub mod app;
pub mod clock;
pub mod config;
pub mod domain;
pub mod edge;
pub mod faults;
pub mod handlers;
pub mod http;
pub mod lambda;
pub mod mutation;
pub mod permissions;
pub mod ports;
pub mod sam_local;
pub mod service;
pub mod telemetry;
