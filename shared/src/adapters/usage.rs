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

type Trace = Vec<(std::time::Instant, Option<std::time::Instant>, String)>;

/// When tracing, the start and end of every AWS request (for counting sequential round trips).
fn trace() -> &'static Mutex<Option<Trace>> {
    static T: OnceLock<Mutex<Option<Trace>>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(None))
}

/// Starts recording requests.
pub fn trace_start() {
    if let Ok(mut t) = trace().lock() {
        *t = Some(Vec::new());
    }
}

/// Stops recording and groups the requests into sequential round trips: requests whose
/// lifetimes overlap ran in parallel and count as one round trip.
pub fn trace_rounds() -> Vec<Vec<String>> {
    let mut calls = trace().lock().ok().and_then(|mut t| t.take()).unwrap_or_default();
    calls.sort_by_key(|c| c.0);
    let mut rounds: Vec<Vec<String>> = Vec::new();
    let mut round_end: Option<std::time::Instant> = None;
    for (start, end, op) in calls {
        let end = end.unwrap_or(start);
        match (round_end, rounds.last_mut()) {
            (Some(e), Some(r)) if start < e => {
                r.push(op);
                round_end = Some(e.max(end));
            }
            _ => {
                rounds.push(vec![op]);
                round_end = Some(end);
            }
        }
    }
    rounds
}

/// Marks the end of a traced request when dropped: hold it across the request's `.await`.
pub struct Span(Option<usize>);

impl Drop for Span {
    fn drop(&mut self) {
        if let (Some(i), Ok(mut t)) = (self.0, trace().lock()) {
            if let Some(c) = t.as_mut().and_then(|v| v.get_mut(i)) {
                c.1 = Some(std::time::Instant::now());
            }
        }
    }
}

fn tally() -> &'static Mutex<Usage> {
    static T: OnceLock<Mutex<Usage>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Usage::default()))
}

/// Counts one request; the returned span, held until the response, times it when tracing.
pub fn call(op: &str) -> Span {
    if let Ok(mut t) = tally().lock() {
        *t.calls.entry(op.to_owned()).or_default() += 1;
    }
    let mut idx = None;
    if let Ok(mut t) = trace().lock() {
        if let Some(v) = t.as_mut() {
            v.push((std::time::Instant::now(), None, op.to_owned()));
            idx = Some(v.len() - 1);
        }
    }
    Span(idx)
}

/// A Lambda invocation (counted by the local runner, which plays Lambda).
pub fn invocation(function: &str) {
    drop(call(&format!("lambda:Invoke:{function}")));
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
