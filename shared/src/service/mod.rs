//! Use cases: the domain's decisions executed through the ports. One error enum per use case.

pub mod admin;
pub mod after_sale;
pub mod campaigns;
pub mod checks;
pub mod codes;
pub mod ledger;
pub mod lookup;
pub mod orders;
pub mod paying;
pub mod payments;
pub mod push;
pub mod queue;
pub mod reconcile;
pub mod refunds;
pub mod sale;
pub mod settlement;
pub mod stock;
pub mod supplier;
pub mod timeouts;
pub mod waitlist;

use std::time::Duration;

/// Attempts of a compare-and-set loop on one order before giving up with a retryable error.
pub(crate) const CAS_ATTEMPTS: u32 = 10;

/// Jittered backoff for conditional-write races: 5–25 ms times the attempt number.
pub(crate) async fn backoff(attempt: u32) {
    let ms = u64::from(attempt.max(1)) * fastrand::u64(5..=25);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
