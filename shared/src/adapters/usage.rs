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

/// When tracing, the start of every AWS request (for counting sequential round trips).
fn trace() -> &'static Mutex<Option<Vec<(std::time::Instant, String)>>> {
    static T: OnceLock<Mutex<Option<Vec<(std::time::Instant, String)>>>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(None))
}

/// Starts recording request start times.
pub fn trace_start() {
    if let Ok(mut t) = trace().lock() {
        *t = Some(Vec::new());
    }
}

/// Stops recording and groups the requests into sequential round trips: requests started
/// within `gap` of the previous one ran in parallel (they were issued in one poll).
pub fn trace_rounds(gap: std::time::Duration) -> Vec<Vec<String>> {
    let calls = trace().lock().ok().and_then(|mut t| t.take()).unwrap_or_default();
    let mut rounds: Vec<Vec<String>> = Vec::new();
    let mut last: Option<std::time::Instant> = None;
    for (at, op) in calls {
        match (last, rounds.last_mut()) {
            (Some(l), Some(r)) if at.duration_since(l) < gap => r.push(op),
            _ => rounds.push(vec![op]),
        }
        last = Some(at);
    }
    rounds
}

fn tally() -> &'static Mutex<Usage> {
    static T: OnceLock<Mutex<Usage>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Usage::default()))
}

pub fn call(op: &str) {
    if let Ok(mut t) = tally().lock() {
        *t.calls.entry(op.to_owned()).or_default() += 1;
    }
    if let Ok(mut t) = trace().lock() {
        if let Some(v) = t.as_mut() {
            v.push((std::time::Instant::now(), op.to_owned()));
        }
    }
}

/// A Lambda invocation (counted by the local runner, which plays Lambda).
pub fn invocation(function: &str) {
    call(&format!("lambda:Invoke:{function}"));
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
