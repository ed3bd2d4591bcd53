//! A process-wide tally of AWS requests and the capacity DynamoDB would bill. The benchmark
//! prices a lifecycle from it; it costs a few atomic adds per call.
//!
//! Every AWS request is counted, and timed when tracing, by one SDK interceptor, [`Metering`],
//! which the composition root puts on every client it builds (`app::Wiring`): no adapter places
//! a span by hand, so none can be forgotten or taken after its request. The adapters still say
//! what a DynamoDB write costs (`dynamo::charge`: capacity from item sizes, which the emulator
//! does not report), and the outbound HTTP peers that are not AWS (the payment provider, the
//! supplier) hold a [`call`] span across their request.

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
    /// Write units by what was written (`operation item-kinds`, e.g.
    /// `TransactWriteItems RES+SKU+PEND`): where a lifecycle's write units go.
    pub writes: BTreeMap<String, Writes>,
    /// Handler wall time per function, as the local runner (playing Lambda) measured it.
    pub lambda: BTreeMap<String, Billed>,
}

/// Invocations of one function and their durations: `ms` as measured, `billed_ms` each rounded
/// up to the whole millisecond, as Lambda bills.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Billed {
    pub invocations: u64,
    pub ms: f64,
    pub billed_ms: f64,
}

/// Requests and write units of one kind of write.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Writes {
    pub requests: u64,
    pub write_units: f64,
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

/// Stops recording and returns the sequential round trips: the longest chain of requests each
/// of which started after the previous one ended (the critical path), each with the requests
/// that started during it (those ran in parallel).
pub fn trace_rounds() -> Vec<Vec<String>> {
    let mut calls = trace().lock().ok().and_then(|mut t| t.take()).unwrap_or_default();
    for c in &mut calls {
        c.1 = Some(c.1.unwrap_or(c.0));
    }
    // activity selection by earliest end = the most mutually sequential requests
    let mut by_end: Vec<usize> = (0..calls.len()).collect();
    by_end.sort_by_key(|&i| calls[i].1);
    let mut chain: Vec<usize> = Vec::new();
    for i in by_end {
        if chain.last().is_none_or(|&j| calls[i].0 >= calls[j].1.unwrap_or(calls[j].0)) {
            chain.push(i);
        }
    }
    let mut rounds: Vec<Vec<String>> = vec![Vec::new(); chain.len()];
    for (start, _, op) in &calls {
        // the round whose window [previous end, own end) the request started in
        let k = chain
            .iter()
            .position(|&j| *start < calls[j].1.unwrap_or(calls[j].0))
            .unwrap_or(chain.len().saturating_sub(1));
        if let Some(r) = rounds.get_mut(k) {
            r.push(op.clone());
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

/// The SDK interceptor that meters every request of a client built with it: one count per
/// operation (a paginator's page is one), under `service:Operation` as AWS bills it
/// (`dynamodb:GetItem`, `sqs:SendMessage`, `events:PutEvents`, …), and, when tracing, the
/// operation's start before its request is serialised and its end after its last attempt
/// (retries included), as a span held across `.send().await` measured it. A `GetItem` is traced
/// with the kind of item it reads (`dynamodb:GetItem SALE`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Metering;

/// Where [`Metering`] keeps an operation's trace entry between its start and its end.
#[derive(Debug, Clone, Copy)]
struct Traced(Option<usize>);

impl aws_smithy_types::config_bag::Storable for Traced {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for Metering {
    fn name(&self) -> &'static str {
        "holdfast-metering"
    }

    // Not `read_before_execution`: a client's interceptor runs that before the operation's
    // configuration (its `Metadata`, the name) is in the bag.
    fn read_before_serialization(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef<'_>,
        _components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use aws_smithy_runtime_api::client::orchestrator::Metadata;
        let op =
            cfg.load::<Metadata>().map_or_else(|| "aws:unknown".to_owned(), |m| billed_name(m.service(), m.name()));
        let read = context
            .input()
            .downcast_ref::<aws_sdk_dynamodb::operation::get_item::GetItemInput>()
            .and_then(|i| i.key()?.get("pk")?.as_s().ok().cloned());
        let mut span = match &read {
            Some(pk) => call_of(&op, kind_of(pk)),
            None => call(&op),
        };
        cfg.interceptor_state().store_put(Traced(span.0.take()));
        Ok(())
    }

    fn read_after_execution(
        &self,
        _context: &aws_smithy_runtime_api::client::interceptors::context::FinalizerInterceptorContextRef<'_>,
        _components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        drop(Span(cfg.load::<Traced>().and_then(|t| t.0)));
        Ok(())
    }
}

/// An operation's name as AWS bills it: the service's IAM prefix and the operation
/// (the WebSocket API's management calls are all `execute-api:ManageConnections`).
fn billed_name(service: &str, operation: &str) -> String {
    let prefix = match service {
        "DynamoDB" => "dynamodb",
        "SQS" => "sqs",
        "EventBridge" => "events",
        "KMS" => "kms",
        "Secrets Manager" => "secretsmanager",
        "ApiGatewayManagementApi" => return "execute-api:ManageConnections".to_owned(),
        other => return format!("{}:{operation}", other.to_lowercase().replace(' ', "")),
    };
    format!("{prefix}:{operation}")
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

/// [`call`], traced as `op` and `what` (e.g. the kind of item read), so a round trip names
/// what it was for; counted as `op`.
pub fn call_of(op: &str, what: &str) -> Span {
    let span = call(op);
    if let (Some(i), Ok(mut t)) = (span.0, trace().lock()) {
        if let Some(c) = t.as_mut().and_then(|v| v.get_mut(i)) {
            c.2 = format!("{op} {what}");
        }
    }
    span
}

/// A Lambda invocation (counted by the local runner, which plays Lambda): hold the returned
/// timer until the handler has answered; its drop records the handler's wall time.
#[must_use = "the invocation's duration is recorded when this is dropped"]
pub fn invocation(function: &str) -> Invocation {
    drop(call(&format!("lambda:Invoke:{function}")));
    Invocation { function: function.to_owned(), start: std::time::Instant::now() }
}

/// The running invocation of [`invocation`].
pub struct Invocation {
    function: String,
    start: std::time::Instant,
}

impl Drop for Invocation {
    fn drop(&mut self) {
        let ms = self.start.elapsed().as_secs_f64() * 1000.0;
        if let Ok(mut t) = tally().lock() {
            let b = t.lambda.entry(std::mem::take(&mut self.function)).or_default();
            b.invocations += 1;
            b.ms += ms;
            b.billed_ms += ms.ceil().max(1.0);
        }
    }
}

pub fn capacity(read: f64, write: f64) {
    if let Ok(mut t) = tally().lock() {
        t.read_units += read;
        t.write_units += write;
    }
}

/// Attributes `units` write units (already counted by [`capacity`]) to the write `label`.
pub fn write_detail(label: &str, units: f64) {
    if let Ok(mut t) = tally().lock() {
        let w = t.writes.entry(label.to_owned()).or_default();
        w.requests += 1;
        w.write_units += units;
    }
}

/// The kind of an item by its key: the `pk` prefix before the first `#` (`RES`, `SKU`, `ORD`).
pub fn kind_of(pk: &str) -> &str {
    pk.split('#').next().unwrap_or(pk)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_operation_is_counted_under_its_billed_name() {
        assert_eq!(billed_name("DynamoDB", "TransactWriteItems"), "dynamodb:TransactWriteItems");
        assert_eq!(billed_name("SQS", "SendMessage"), "sqs:SendMessage");
        assert_eq!(billed_name("EventBridge", "PutEvents"), "events:PutEvents");
        assert_eq!(billed_name("KMS", "Decrypt"), "kms:Decrypt");
        assert_eq!(billed_name("Secrets Manager", "GetSecretValue"), "secretsmanager:GetSecretValue");
        assert_eq!(billed_name("ApiGatewayManagementApi", "PostToConnection"), "execute-api:ManageConnections");
        assert_eq!(billed_name("DynamoDB Streams", "GetRecords"), "dynamodbstreams:GetRecords");
    }

    #[test]
    fn an_invocation_is_billed_its_wall_time_rounded_up_to_the_ms() {
        let before = snapshot().lambda.get("billing-test").copied().unwrap_or_default();
        let running = invocation("billing-test");
        std::thread::sleep(Duration::from_millis(3));
        drop(running);
        let after = snapshot().lambda.get("billing-test").copied().unwrap_or_default();
        assert_eq!(after.invocations, before.invocations + 1);
        assert!(after.ms - before.ms >= 3.0, "{after:?}");
        assert!(after.billed_ms - before.billed_ms >= (after.ms - before.ms).ceil(), "{after:?}");
    }

    #[test]
    fn overlapping_requests_count_as_one_round_trip_and_chains_as_many() {
        trace_start();
        let t0 = std::time::Instant::now();
        let mk = |a: u64, b: u64, op: &str| {
            (t0 + Duration::from_millis(a), Some(t0 + Duration::from_millis(b)), op.to_owned())
        };
        if let Ok(mut t) = trace().lock() {
            // freeze ∥ long message send; then (meta ∥ shards); then freeze; then order put ∥ send
            *t = Some(vec![
                mk(0, 5, "twi"),
                mk(0, 12, "send"),
                mk(6, 8, "bg1"),
                mk(6, 8, "bg2"),
                mk(9, 13, "twi2"),
                mk(14, 16, "put"),
                mk(14, 15, "send2"),
            ]);
        }
        let r = trace_rounds();
        assert_eq!(r.len(), 4, "{r:?}");
        assert_eq!(r[0], vec!["twi", "send"]);
    }
}
