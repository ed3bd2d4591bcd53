//! Real HTTP peers the local stack starts beside its API, speaking third parties' documented
//! shapes so the adapters are exercised over the wire (no mocks).

pub mod provider;
pub mod stripe;
pub mod supplier;
