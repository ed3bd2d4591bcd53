//! The order table over DynamoDB (docs/architecture.md, "Data model"). Partition key `pk` = `ORD#<id>`; the item is the
//! outbox (its stream announces every change). KEYS_ONLY indexes: `by-user` (newest first) and
//! the sparse, bucketed indexes of `OrderIndex` (core/src/ports.rs), each present only while
//! the order is that index's business.

use super::item::{get_n, get_s, key, n, opt_s, s, values, Item};
use super::retry::{Retries, RetryPolicy};
use super::{bucket_of, charge, item_bytes, rru, wru};
use crate::domain::order::history::appended_exactly;
use crate::domain::order::{Order, OrderLine, OrderRecord, OrderStatus, PaymentRecord};
use crate::domain::{Currency, OrderId, UserId};
use crate::ports::{OrderCursor, OrderIndex, OrderStore};
use anyhow::{anyhow, Context};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::KeysAndAttributes;
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

pub const USER_INDEX: &str = "by-user";
pub const PENDING_INDEX: &str = "pending-by-deadline";
/// How long a VOID tombstone is kept (DynamoDB TTL attribute `ttl`): far longer than any
/// retry of the checkout it fences.
pub const VOID_RETENTION_S: i64 = 7 * 24 * 3600;

#[derive(Clone)]
pub struct DynamoOrders {
    client: Client,
    table: String,
}

fn order_pk(id: &OrderId) -> String {
    format!("ORD#{id}")
}

pub fn encode_order(o: &Order) -> anyhow::Result<Item> {
    let mut it = values([
        ("pk", s(order_pk(&o.id))),
        ("uid", s(o.user.as_str())),
        ("st", s(o.status.as_str())),
        ("it", s(serde_json::to_string(&o.lines)?)),
        ("amt", n(o.amount)),
        ("cur", s(o.currency.as_str())),
        ("exp", n(o.pay_expire_at)),
        ("ca", n(o.created_at_ms)),
        ("ua", n(o.updated_at_ms)),
        ("v", n(o.version)),
        ("rh", s(o.request_hash.clone())),
    ]);
    if let Some(p) = &o.payment_id {
        it.insert("pid".into(), s(p.clone()));
    }
    if !o.payments.is_empty() {
        it.insert("pays".into(), s(serde_json::to_string(&o.payments)?));
    }
    if let Some(r) = &o.cancel_reason {
        it.insert("cr".into(), s(r.clone()));
    }
    if !o.refunds.is_empty() {
        it.insert("rfs".into(), s(serde_json::to_string(&o.refunds)?));
    }
    if let Some(sh) = &o.shipment {
        it.insert("shp".into(), s(serde_json::to_string(sh)?));
    }
    if let Some(r) = &o.return_info {
        it.insert("ret".into(), s(serde_json::to_string(r)?));
    }
    if !o.supplier.is_empty() {
        it.insert("sup".into(), s(serde_json::to_string(&o.supplier)?));
    }
    if !o.attempts.is_empty() {
        it.insert("att".into(), s(serde_json::to_string(&o.attempts)?));
    }
    if let Some(r) = &o.review {
        it.insert("rev".into(), s(serde_json::to_string(r)?));
    }
    if let Some(c) = &o.correlation {
        it.insert("cor".into(), s(c.clone()));
    }
    if let Some(t) = o.settled_at_ms {
        it.insert("stl".into(), n(t));
    }
    // the order record (personal data: never logged) and the order log (docs/order-record.md)
    if !o.details.is_empty() {
        it.insert("rec".into(), s(serde_json::to_string(&o.details)?));
    }
    if o.log.total > 0 {
        it.insert("log".into(), s(serde_json::to_string(&o.log)?));
    }
    // the bucketed sparse indexes (docs/runbook.md, "Reconcile")
    for index in OrderIndex::ALL {
        if let Some(v) = index.value_of(o) {
            let (_, hash, prefix, range) = index.keys();
            it.insert(hash.into(), s(format!("{prefix}{}", bucket_of(o.id.as_str()))));
            it.insert(range.into(), n(v));
        }
    }
    Ok(it)
}

/// The sparse index keys an order item carries (pending-by-deadline, shipped-by-due,
/// refunds-requested): an index is written only when its key changes.
fn sparse_keys(o: &Order) -> [Option<i64>; OrderIndex::ALL.len()] {
    OrderIndex::ALL.map(|i| i.value_of(o))
}

/// The writes a sparse index takes when an item's key in it goes from `a` to `b`.
fn index_writes(a: Option<i64>, b: Option<i64>) -> usize {
    match (a, b) {
        (Some(x), Some(y)) if x != y => 2,
        (x, y) if x != y => 1,
        _ => 0,
    }
}

/// Decodes an order item (also a stream image); a VOID tombstone decodes to `OrderRecord::Void`.
pub fn decode_record(it: &Item) -> anyhow::Result<OrderRecord> {
    let st = get_s(it, "st")?;
    if st == "VOID" {
        return Ok(OrderRecord::Void);
    }
    let pk = get_s(it, "pk")?;
    let id = pk.strip_prefix("ORD#").ok_or_else(|| anyhow!("not an order: {pk}"))?;
    Ok(OrderRecord::Order(Box::new(Order {
        id: OrderId::parse(id)?,
        user: UserId::parse(get_s(it, "uid")?)?,
        status: OrderStatus::parse(st).ok_or_else(|| anyhow!("unknown order status {st}"))?,
        lines: serde_json::from_str::<Vec<OrderLine>>(get_s(it, "it")?).context("order lines")?,
        amount: get_n(it, "amt")?,
        currency: Currency::parse(get_s(it, "cur")?)?,
        pay_expire_at: get_n(it, "exp")?,
        created_at_ms: get_n(it, "ca")?,
        updated_at_ms: get_n(it, "ua")?,
        version: get_n(it, "v")?,
        payment_id: opt_s(it, "pid").map(str::to_owned),
        payments: match opt_s(it, "pays") {
            Some(p) => serde_json::from_str::<Vec<PaymentRecord>>(p).context("order payments")?,
            None => Vec::new(),
        },
        request_hash: get_s(it, "rh")?.to_owned(),
        cancel_reason: opt_s(it, "cr").map(str::to_owned),
        refunds: match opt_s(it, "rfs") {
            Some(r) => serde_json::from_str(r).context("order refunds")?,
            None => Vec::new(),
        },
        shipment: opt_s(it, "shp").map(serde_json::from_str).transpose().context("order shipment")?,
        return_info: opt_s(it, "ret").map(serde_json::from_str).transpose().context("order return")?,
        supplier: match opt_s(it, "sup") {
            Some(b) => serde_json::from_str(b).context("order supplier bookings")?,
            None => Vec::new(),
        },
        attempts: match opt_s(it, "att") {
            Some(a) => serde_json::from_str(a).context("order payment attempts")?,
            None => Vec::new(),
        },
        review: opt_s(it, "rev").map(serde_json::from_str).transpose().context("order refund review")?,
        correlation: opt_s(it, "cor").map(str::to_owned),
        settled_at_ms: it.contains_key("stl").then(|| get_n(it, "stl")).transpose()?,
        details: opt_s(it, "rec").map(serde_json::from_str).transpose().context("order record")?.unwrap_or_default(),
        log: opt_s(it, "log").map(serde_json::from_str).transpose().context("order log")?.unwrap_or_default(),
    })))
}

fn is_ccf<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> bool {
    e.as_service_error().and_then(|se| se.code()).is_some_and(|c| c == "ConditionalCheckFailedException")
}

impl DynamoOrders {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    /// A conditional PutItem; `index_writes` = GSI entries it adds or removes (billed too).
    async fn conditional_put(
        &self,
        item: Item,
        cond: &str,
        vals: Option<Item>,
        index_writes: f64,
    ) -> anyhow::Result<bool> {
        let units = wru(item_bytes(&item)) + index_writes;
        charge(0.0, units);
        let what =
            if index_writes > 0.0 { format!("PutItem ORD (+{index_writes} index)") } else { "PutItem ORD".into() };
        super::super::usage::write_detail(&what, units);
        let r = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(cond)
            .set_expression_attribute_values(vals)
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e) if is_ccf(&e) => Ok(false),
            Err(e) => Err(super::sdk_error(e, "PutItem on the order table".into())),
        }
    }
}

#[async_trait]
impl OrderStore for DynamoOrders {
    async fn get(&self, id: &OrderId) -> anyhow::Result<Option<OrderRecord>> {
        super::get_consistent(&self.client, &self.table, order_pk(id)).await?.as_ref().map(decode_record).transpose()
    }

    async fn put_new(&self, o: &Order) -> anyhow::Result<bool> {
        // the by-user entry, and one in each sparse index the new order is in
        let index = 1 + sparse_keys(o).iter().flatten().count();
        self.conditional_put(encode_order(o)?, "attribute_not_exists(pk)", None, index as f64).await
    }

    async fn put_void(&self, id: &OrderId) -> anyhow::Result<bool> {
        let ttl = crate::clock::now_s() + VOID_RETENTION_S;
        let item = values([("pk", s(order_pk(id))), ("st", s("VOID")), ("ttl", n(ttl))]);
        self.conditional_put(item, "attribute_not_exists(pk)", None, 0.0).await
    }

    async fn replace(&self, prev: &Order, next: &Order) -> anyhow::Result<bool> {
        // a status change is written with its log entries, or not at all (docs/order-record.md)
        if !appended_exactly(prev, next) {
            anyhow::bail!("order {}: a status change must carry its log entry (and only then)", next.id);
        }
        // KEYS_ONLY indexes are written only when their keys change: an entry added or removed is
        // one index write, a key moved is two (the old entry deleted, the new one put); by-user
        // keys never change.
        let index: usize = sparse_keys(prev).iter().zip(sparse_keys(next)).map(|(a, b)| index_writes(*a, b)).sum();
        self.conditional_put(encode_order(next)?, "v = :v", Some(values([(":v", n(prev.version))])), index as f64).await
    }

    async fn list_for_user(
        &self,
        user: &UserId,
        after: Option<&OrderCursor>,
        limit: usize,
    ) -> anyhow::Result<(Vec<Order>, Option<OrderCursor>)> {
        let start = after
            .map(|c| values([("uid", s(user.as_str())), ("ca", n(c.created_at_ms)), ("pk", s(order_pk(&c.order_id)))]));
        let r = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(USER_INDEX)
            .key_condition_expression("uid = :u")
            .expression_attribute_values(":u", s(user.as_str()))
            .scan_index_forward(false)
            .limit(limit as i32)
            .set_exclusive_start_key(start)
            .send()
            .await
            .context("Query by-user")?;
        super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
        let keys: Vec<Item> = r.items().iter().filter_map(|it| Some(key(opt_s(it, "pk")?.to_owned()))).collect();
        let next = r.last_evaluated_key().and_then(|k| {
            let ca = get_n::<i64>(k, "ca").ok()?;
            let id = get_s(k, "pk").ok()?.strip_prefix("ORD#")?;
            Some(OrderCursor { created_at_ms: ca, order_id: OrderId::parse(id).ok()? })
        });
        if keys.is_empty() {
            return Ok((Vec::new(), next));
        }
        let mut by_pk: HashMap<String, Order> = HashMap::new();
        let mut pending = keys.clone();
        // unprocessed keys (DynamoDB throttling part of the batch) are asked again with a
        // growing pause, a bounded number of times, as the stock adapter's batch reads do
        let mut retries = Retries::new(RetryPolicy::BATCH_READS);
        while !pending.is_empty() {
            let ka = KeysAndAttributes::builder().set_keys(Some(pending)).build()?;
            let b = self
                .client
                .batch_get_item()
                .request_items(&self.table, ka)
                .send()
                .await
                .context("BatchGetItem orders")?;
            super::super::usage::capacity(
                b.responses()
                    .and_then(|m| m.get(&self.table))
                    .into_iter()
                    .flatten()
                    .map(|it| rru(item_bytes(it), false))
                    .sum(),
                0.0,
            );
            for it in b.responses().and_then(|m| m.get(&self.table)).into_iter().flatten() {
                if let OrderRecord::Order(o) = decode_record(it)? {
                    by_pk.insert(order_pk(&o.id), *o);
                }
            }
            pending =
                b.unprocessed_keys().and_then(|m| m.get(&self.table)).map(|k| k.keys().to_vec()).unwrap_or_default();
            if !pending.is_empty() {
                retries.wait("BatchGetItem orders").await?;
            }
        }
        let orders = keys.iter().filter_map(|k| opt_s(k, "pk").and_then(|pk| by_pk.remove(pk))).collect();
        Ok((orders, next))
    }

    async fn between(&self, index: OrderIndex, from: i64, to: i64) -> anyhow::Result<Vec<OrderId>> {
        let mut out = Vec::new();
        let (name, hash, prefix, range) = index.keys();
        for b in 0..super::INDEX_BUCKETS {
            let mut start: Option<Item> = None;
            loop {
                let r = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(name)
                    .key_condition_expression(format!("{hash} = :b AND {range} BETWEEN :f AND :t"))
                    .expression_attribute_values(":b", s(format!("{prefix}{b}")))
                    .expression_attribute_values(":f", n(from))
                    .expression_attribute_values(":t", n(to - 1))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .with_context(|| format!("Query {name}"))?;
                super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
                for it in r.items() {
                    if let Some(id) = get_s(it, "pk")?.strip_prefix("ORD#") {
                        out.push(OrderId::parse(id)?);
                    }
                }
                match r.last_evaluated_key() {
                    Some(k) if !k.is_empty() => start = Some(k.clone()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    async fn due_in(&self, index: OrderIndex, before: i64) -> anyhow::Result<Vec<OrderId>> {
        let mut out = Vec::new();
        let (name, hash, prefix, range) = index.keys();
        for b in 0..super::INDEX_BUCKETS {
            let mut start: Option<Item> = None;
            loop {
                let r = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(name)
                    .key_condition_expression(format!("{hash} = :b AND {range} < :d"))
                    .expression_attribute_values(":b", s(format!("{prefix}{b}")))
                    .expression_attribute_values(":d", n(before))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .with_context(|| format!("Query {name}"))?;
                super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
                for it in r.items() {
                    if let Some(id) = get_s(it, "pk")?.strip_prefix("ORD#") {
                        out.push(OrderId::parse(id)?);
                    }
                }
                match r.last_evaluated_key() {
                    Some(k) if !k.is_empty() => start = Some(k.clone()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }
}

/// Every order record, for invariant checks at quiescence (tests, demo). A Scan: never on a
/// request path.
pub async fn dump(client: &Client, table: &str) -> anyhow::Result<Vec<(OrderId, OrderRecord)>> {
    Ok(dump_capped(client, table, usize::MAX).await?.0)
}

/// [`dump`], stopping after the page that reaches `max_items` items: (records, items read,
/// whether the table was read to its end). The daily ledger report's read.
pub async fn dump_capped(
    client: &Client,
    table: &str,
    max_items: usize,
) -> anyhow::Result<(Vec<(OrderId, OrderRecord)>, usize, bool)> {
    let mut out = Vec::new();
    let mut read = 0;
    let mut start = None;
    loop {
        let r = client.scan().table_name(table).consistent_read(true).set_exclusive_start_key(start).send().await?;
        read += r.items().len();
        for it in r.items() {
            let pk = get_s(it, "pk")?;
            if let Some(id) = pk.strip_prefix("ORD#") {
                out.push((OrderId::parse(id)?, decode_record(it)?));
            }
        }
        match r.last_evaluated_key() {
            Some(k) if !k.is_empty() && read < max_items => start = Some(k.clone()),
            Some(k) if !k.is_empty() => return Ok((out, read, false)),
            _ => return Ok((out, read, true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::history::{sample_order, MAX_LOG_ENTRIES};
    use crate::domain::order::{By, Delivery, OrderAction, OrderDetails, Provider};

    #[test]
    fn a_sparse_index_takes_a_write_per_entry_added_or_removed_and_two_for_a_key_moved() {
        assert_eq!(index_writes(None, None), 0);
        assert_eq!(index_writes(Some(5), Some(5)), 0);
        assert_eq!(index_writes(None, Some(5)), 1);
        assert_eq!(index_writes(Some(5), None), 1);
        assert_eq!(index_writes(Some(5), Some(6)), 2);
    }

    /// A typical record: a German address of two lines, a phone number, a one-line remark and a
    /// discount (docs/order-record.md, "Size").
    fn typical() -> OrderDetails {
        OrderDetails {
            delivery: Some(Delivery {
                name: "Ana Müller".into(),
                phone: "+49 30 1234567".into(),
                address: vec!["Hauptstraße 5".into(), "2. OG, Hinterhaus".into()],
                postcode: Some("10115".into()),
                country: "DE".into(),
            }),
            remark: Some("Please ring twice; the parcel box is round the back.".into()),
            discount: 500,
        }
    }

    #[test]
    fn the_record_and_the_log_round_trip_and_their_added_bytes_are_what_the_docs_say() {
        let mut bare = sample_order();
        bare.log = Default::default();
        let base = item_bytes(&encode_order(&bare).unwrap());
        let created = sample_order();
        let with_record = crate::domain::order::Order { details: typical(), ..created.clone() };
        let paid =
            with_record.apply(OrderAction::Pay, &By::provider(Provider::Generic, "payment_succeeded"), 5).unwrap();
        let refunding = paid.apply(OrderAction::StartRefund, &By::buyer("refund_requested"), 6).unwrap();
        let refunded = refunding
            .apply(OrderAction::FinishRefund, &By::provider(Provider::Generic, "refund_confirmed"), 7)
            .unwrap();
        for o in [&created, &with_record, &paid, &refunded] {
            let back = decode_record(&encode_order(o).unwrap()).unwrap();
            assert_eq!(back, OrderRecord::Order(Box::new(o.clone())));
        }
        let bytes = |o: &crate::domain::order::Order| item_bytes(&encode_order(o).unwrap());
        let record = bytes(&with_record) - bytes(&created);
        let log_created = bytes(&created) - base;
        let log_refunded = bytes(&Order { details: Default::default(), ..refunded.clone() }) - base;
        eprintln!("order item {base} B; typical record +{record} B; log +{log_created} B at creation, +{log_refunded} B after 4 changes");
        assert!((160..=200).contains(&record), "typical record: {record} B");
        assert!((60..=90).contains(&log_created), "creation entry: {log_created} B");
        assert!(log_refunded < 400, "a refunded order's log: {log_refunded} B");
        // the bound: 50 entries of the longest actor stay a few KB, far inside 400 KB
        let mut o = created;
        for i in 0..(2 * MAX_LOG_ENTRIES as i64) {
            let (action, by) = if i % 2 == 0 {
                (OrderAction::StartPayment, By::buyer("payment_started"))
            } else {
                (OrderAction::PaymentFailed, By::provider(Provider::Generic, "payment_failed"))
            };
            o = o.apply(action, &by, 1_765_000_000_000 + i).unwrap();
        }
        let full = bytes(&o) - base;
        eprintln!("a full log ({MAX_LOG_ENTRIES} entries): +{full} B");
        assert!(full < 6_000, "{full} B");
    }

    #[test]
    fn an_item_without_record_or_log_decodes_as_an_order_from_before_them() {
        let mut o = sample_order();
        o.log = Default::default();
        let it = encode_order(&o).unwrap();
        assert!(!it.contains_key("rec") && !it.contains_key("log"));
        assert_eq!(decode_record(&it).unwrap(), OrderRecord::Order(Box::new(o)));
    }
}
