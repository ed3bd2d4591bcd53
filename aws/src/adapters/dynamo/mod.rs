//! DynamoDB adapters for the stock and order tables.

pub mod audit;
pub mod campaigns;
pub mod connections;
pub mod images;
pub mod item;
pub mod journal;
pub mod orders;
mod retry;
pub mod sale;
pub mod stock;
pub mod sweep;

use crate::ports::Throttled;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// Approximate stored size of an item by DynamoDB's rules (attribute names + values).
pub(crate) fn item_bytes(item: &HashMap<String, AttributeValue>) -> usize {
    fn value(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => n.len() / 2 + 2,
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::L(l) => 3 + l.iter().map(|x| 1 + value(x)).sum::<usize>(),
            AttributeValue::M(m) => 3 + m.iter().map(|(k, x)| 1 + k.len() + value(x)).sum::<usize>(),
            AttributeValue::Ss(v) | AttributeValue::Ns(v) => v.iter().map(String::len).sum(),
            _ => 8,
        }
    }
    item.iter().map(|(k, v)| k.len() + value(v)).sum()
}

/// Write request units of one item write of `bytes` (on-demand: 1 per KB, rounded up).
pub(crate) fn wru(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

/// Read request units of reading `bytes` (1 per 4 KB strongly consistent, half that eventually).
pub(crate) fn rru(bytes: usize, consistent: bool) -> f64 {
    let u = bytes.div_ceil(4096).max(1) as f64;
    if consistent {
        u
    } else {
        u / 2.0
    }
}

/// Records the capacity AWS would bill for one request (the request itself is counted by the
/// clients' interceptor, `usage::Metering`). Computed from item sizes with AWS's rules, because
/// the emulator reports constants (and nothing for transactions).
pub(crate) fn charge(read: f64, write: f64) {
    super::usage::capacity(read, write);
}

/// DynamoDB's error codes for "too many requests": a hot partition (per-partition limits),
/// the table's or the account's throughput limits.
pub(crate) const THROTTLE_CODES: [&str; 3] =
    ["ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"];

/// An SDK error as the ports return it: a throttle becomes the typed [`Throttled`] marker (the
/// HTTP edge answers 429 `busy`), anything else keeps its SDK error with `what` as context.
pub(crate) fn sdk_error<E, R>(e: aws_sdk_dynamodb::error::SdkError<E, R>, what: String) -> anyhow::Error
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    if e.code().is_some_and(|c| THROTTLE_CODES.contains(&c)) {
        anyhow::Error::new(Throttled(what))
    } else {
        anyhow::Error::new(e).context(what)
    }
}

/// A strongly consistent GetItem by `pk`, metered.
pub(crate) async fn get_consistent(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: String,
) -> anyhow::Result<Option<HashMap<String, AttributeValue>>> {
    let r = client
        .get_item()
        .table_name(table)
        .set_key(Some(item::key(pk)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| sdk_error(e, format!("GetItem on {table}")))?;
    super::usage::capacity(rru(r.item().map(item_bytes).unwrap_or(0), true), 0.0);
    Ok(r.item)
}

pub(crate) use crate::ports::bucket_of;
/// The sparse indexes' bucketing is part of the [`crate::ports::SweepIndex`] contract.
pub use crate::ports::INDEX_BUCKETS;
