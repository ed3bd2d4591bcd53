//! A process-wide tally of AWS requests and the capacity DynamoDB reported consuming
//! (`ReturnConsumedCapacity`). The benchmark prices a lifecycle from it; it costs a few atomic
//! adds per call.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Usage {
    /// Requests per `service:operation`.
    pub calls: BTreeMap<String, u64>,
    pub read_units: f64,
    pub write_units: f64,
    /// Entries put on the bus (EventBridge bills per entry).
    pub events: u64,
}

fn tally() -> &'static Mutex<Usage> {
    static T: OnceLock<Mutex<Usage>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Usage::default()))
}

pub fn call(op: &str) {
    if let Ok(mut t) = tally().lock() {
        *t.calls.entry(op.to_owned()).or_default() += 1;
    }
}

pub fn capacity(read: f64, write: f64) {
    if let Ok(mut t) = tally().lock() {
        t.read_units += read;
        t.write_units += write;
    }
}

pub fn events(n: u64) {
    if let Ok(mut t) = tally().lock() {
        t.events += n;
    }
}

pub fn snapshot() -> Usage {
    tally().lock().map(|t| t.clone()).unwrap_or_default()
}

pub fn reset() {
    if let Ok(mut t) = tally().lock() {
        *t = Usage::default();
    }
}
