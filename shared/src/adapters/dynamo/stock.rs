//! The stock table over DynamoDB (docs/architecture.md, "Data model"). One partition key `pk`; item kinds:
//! `SKU#<sku>` metadata, `SKU#<sku>#<n>` shard counters, `RES#<id>` reservations (the lock
//! record of one order), `LIM#<sku>#<user>` per-user counters, `ADJ#<sku>#<id>` adjustments,
//! `PEND#<user>` pending-checkout counters, and the campaign items of [`super::campaigns`].
//! Sparse KEYS_ONLY indexes: `frozen-by-age` (bucketed; only FROZEN reservations) and `skus`
//! (SKUs under `skl = SKU`, campaigns under `skl = CMP`).

use super::item::{get_n, get_s, key, n, opt_n, opt_s, s, values, Item};
use super::{bucket_of, charge, item_bytes, rru, wru};
use crate::domain::campaign::Campaign;
use crate::domain::codes::{BatchResult, CodeAppend, Ring, StoredCode};
use crate::domain::invariants::ShardCounts;
use crate::domain::journal::{move_cause, Cause};
use crate::domain::kind::Stocking;
use crate::domain::plan::{self, Action, CounterMove, Op, RingStep, Target};
use crate::domain::reservation::{CodeFate, CodeRange, LockStatus, Reservation, ReservationKind, ReservedLine};
use crate::domain::{CampaignId, Currency, ReservationId, Sku, UserId};
use crate::ports::{
    AdjustRejection, Adjustment, CampaignAdjustment, CodeUpload, Counter, FreezeLimits, FreezeRejection, MoveRejection,
    SkuMeta, StockStore,
};
use anyhow::{anyhow, Context};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

pub const FROZEN_INDEX: &str = "frozen-by-age";
pub const SKU_INDEX: &str = "skus";

#[derive(Clone)]
pub struct DynamoStock {
    pub(super) client: Client,
    pub(super) table: String,
}

fn meta_pk(sku: &Sku) -> String {
    format!("SKU#{sku}")
}
pub(super) fn shard_pk(sku: &Sku, shard: u16) -> String {
    format!("SKU#{sku}#{shard}")
}
fn res_pk(id: &ReservationId) -> String {
    format!("RES#{id}")
}
fn limit_pk(sku: &Sku, user: &UserId) -> String {
    format!("LIM#{sku}#{user}")
}
pub(super) fn quota_pk(id: &CampaignId, sku: &Sku, shard: u16) -> String {
    format!("CQ#{id}#{sku}#{shard}")
}
fn campaign_limit_pk(id: &CampaignId, sku: &Sku, user: &UserId) -> String {
    format!("LIMC#{id}#{sku}#{user}")
}
fn pending_pk(user: &UserId) -> String {
    format!("PEND#{user}")
}
/// One position of a code pool shard's ring (docs/code-pools.md): `fp`, `kid`, `sc` (sealed).
fn code_pk(sku: &Sku, shard: u16, pos: u64) -> String {
    format!("CODE#{sku}#{shard}#{pos}")
}
/// A fingerprint the pool holds, with the batch that added it (`b`).
fn fingerprint_pk(sku: &Sku, fp: &str) -> String {
    format!("CFP#{sku}#{fp}")
}
/// A finished batch upload (`r`: its result as JSON).
fn batch_pk(sku: &Sku, batch_id: &str) -> String {
    format!("CBATCH#{sku}#{batch_id}")
}

fn encode_code(pk: String, c: &StoredCode) -> Item {
    values([("pk", s(pk)), ("fp", s(c.fingerprint.clone())), ("kid", s(c.kid.clone())), ("sc", s(c.sealed.clone()))])
}

fn decode_code(it: &Item) -> anyhow::Result<StoredCode> {
    Ok(StoredCode {
        fingerprint: get_s(it, "fp")?.to_owned(),
        kid: get_s(it, "kid")?.to_owned(),
        sealed: get_s(it, "sc")?.to_owned(),
    })
}

fn decode_ring(it: &Item) -> Ring {
    Ring {
        head: opt_n(it, "chd").unwrap_or(0),
        tail: opt_n(it, "ctl").unwrap_or(0),
        uploaded: opt_n(it, "cup").unwrap_or(0),
        claimed_at_ms: opt_n(it, "cht").unwrap_or(0),
        checked: opt_n(it, "cck").unwrap_or(0),
    }
}

/// The key of the item an action writes.
fn target_pk(r: &Reservation, t: &Target) -> String {
    match t {
        Target::Reservation => res_pk(&r.id),
        Target::Shard { sku, shard } => shard_pk(sku, *shard),
        Target::Quota { campaign, sku, shard } => quota_pk(campaign, sku, *shard),
        Target::Limit { sku, user } => limit_pk(sku, user),
        Target::CampaignLimit { campaign, sku, user } => campaign_limit_pk(campaign, sku, user),
        Target::Pending { user } => pending_pk(user),
        Target::CodeSlot { sku, shard, pos } => code_pk(sku, *shard, *pos),
    }
}

pub(super) fn counter_pk(c: &Counter) -> String {
    match c {
        Counter::Limit(sku, user) => limit_pk(sku, user),
        Counter::CampaignLimit(id, sku, user) => campaign_limit_pk(id, sku, user),
        Counter::Pending(user) => pending_pk(user),
    }
}

/// What each action of an adjustment stands for, to read cancellation reasons item by item.
#[derive(Debug, Clone)]
pub(super) enum Role {
    Adjustment,
    Meta,
    Shard,
    /// A code slot or fingerprint of a code upload.
    Code,
}

/// The per-item codes of a cancelled transaction, or `None` if the call failed otherwise.
pub(super) fn cancellation_codes(e: &SdkError<TransactWriteItemsError>) -> Option<Vec<String>> {
    match e {
        SdkError::ServiceError(se) => match se.err() {
            TransactWriteItemsError::TransactionCanceledException(c) => {
                Some(c.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None").to_owned()).collect())
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_conflict(e: &SdkError<TransactWriteItemsError>) -> bool {
    match e {
        SdkError::ServiceError(se) => {
            use aws_sdk_dynamodb::error::ProvideErrorMetadata;
            matches!(se.err().code(), Some("TransactionConflictException" | "TransactionInProgressException"))
        }
        _ => false,
    }
}

/// How a cancelled transaction failed, in the order that decides the answer.
pub(super) enum Cancel {
    Conflict,
    Failed(Vec<Role>),
    Unexplained,
}

pub(super) fn classify(codes: &[String], roles: &[Role]) -> Cancel {
    if codes.iter().any(|c| c == "TransactionConflict") {
        return Cancel::Conflict;
    }
    let failed: Vec<Role> = codes
        .iter()
        .zip(roles)
        .filter(|(c, _)| c.as_str() == "ConditionalCheckFailed")
        .map(|(_, r)| r.clone())
        .collect();
    if failed.is_empty() {
        Cancel::Unexplained
    } else {
        Cancel::Failed(failed)
    }
}

fn encode_meta(m: &SkuMeta) -> Item {
    let mut it = values([
        ("pk", s(meta_pk(&m.sku))),
        ("sku", s(m.sku.as_str())),
        ("skl", s("SKU")),
        ("name", s(m.name.clone())),
        ("price", n(m.price)),
        ("cur", s(m.currency.as_str())),
        ("shards", n(m.shards)),
        ("slots", n(m.slots)),
        ("stocked", n(m.stocked)),
        ("v", n(m.version)),
    ]);
    if let Some(l) = m.per_user_limit {
        it.insert("lim".into(), n(l));
    }
    if m.paused {
        it.insert("ps".into(), AttributeValue::Bool(true));
    }
    // the default model and an empty bundle are absent: every SKU stored before models exists
    // reads back unchanged
    if !m.model.is_default() {
        it.insert("mdl".into(), s(serde_json::to_string(&m.model).unwrap_or_default()));
    }
    if !m.bundle.is_empty() {
        it.insert("bdl".into(), s(serde_json::to_string(&m.bundle).unwrap_or_default()));
    }
    if let Some(c) = &m.supplier {
        it.insert("sup".into(), s(serde_json::to_string(c).unwrap_or_default()));
    }
    it
}

fn decode_meta(it: &Item) -> anyhow::Result<SkuMeta> {
    Ok(SkuMeta {
        sku: Sku::from_stored(get_s(it, "sku")?)?,
        name: get_s(it, "name")?.to_owned(),
        price: get_n(it, "price")?,
        currency: Currency::parse(get_s(it, "cur")?)?,
        shards: get_n(it, "shards")?,
        slots: get_n(it, "slots")?,
        per_user_limit: opt_n(it, "lim"),
        stocked: get_n(it, "stocked")?,
        version: get_n(it, "v")?,
        paused: matches!(it.get("ps"), Some(AttributeValue::Bool(true))),
        model: opt_s(it, "mdl").map(serde_json::from_str).transpose().context("inventory model")?.unwrap_or_default(),
        bundle: opt_s(it, "bdl").map(serde_json::from_str).transpose().context("bundle")?.unwrap_or_default(),
        supplier: opt_s(it, "sup").map(serde_json::from_str).transpose().context("supplier settings")?,
    })
}

fn encode_reservation(r: &Reservation) -> anyhow::Result<Item> {
    let mut it = values([
        ("pk", s(res_pk(&r.id))),
        ("st", s(r.status.as_str())),
        ("kind", s(r.kind.as_str())),
        ("rh", s(r.request_hash.clone())),
        ("ca", n(r.created_at_ms)),
        ("ex", n(r.expires_at)),
        ("ln", s(serde_json::to_string(&r.lines)?)),
    ]);
    if let Some(u) = &r.user {
        it.insert("uid".into(), s(u.as_str()));
    }
    if r.pending {
        it.insert("pc".into(), AttributeValue::Bool(true));
    }
    if r.status == LockStatus::Frozen {
        it.insert("fzb".into(), s(format!("F#{}", bucket_of(r.id.as_str()))));
        it.insert("fza".into(), n(r.created_at_ms));
    }
    Ok(it)
}

fn decode_reservation(it: &Item) -> anyhow::Result<Reservation> {
    let pk = get_s(it, "pk")?;
    let id = pk.strip_prefix("RES#").ok_or_else(|| anyhow!("not a reservation: {pk}"))?;
    let kind = match get_s(it, "kind")? {
        "order" => ReservationKind::Order,
        "external" => ReservationKind::External,
        k => return Err(anyhow!("unknown reservation kind {k}")),
    };
    Ok(Reservation {
        id: ReservationId::from_stored(id)?,
        kind,
        status: LockStatus::parse(get_s(it, "st")?).ok_or_else(|| anyhow!("bad lock status"))?,
        user: opt_s(it, "uid").map(UserId::parse).transpose()?,
        request_hash: get_s(it, "rh")?.to_owned(),
        created_at_ms: get_n(it, "ca")?,
        expires_at: get_n(it, "ex")?,
        lines: serde_json::from_str::<Vec<ReservedLine>>(get_s(it, "ln")?).context("reservation lines")?,
        oversold: it.contains_key("ov"),
        pending: it.contains_key("pc"),
        code_fate: opt_s(it, "cf")
            .map(|f| CodeFate::parse(f).ok_or_else(|| anyhow!("bad code fate {f}")))
            .transpose()?,
    })
}

/// `expr` with the cause's three attributes set too, and their values and names.
pub(super) fn stamped(expr: &str, vals: &mut Item, cause: &Cause) -> (String, HashMap<String, String>) {
    vals.insert(":jref".into(), s(cause.reference.clone()));
    vals.insert(":jact".into(), s(cause.actor.clone()));
    vals.insert(":jwhy".into(), s(cause.why.clone()));
    let set = "#jref = :jref, #jact = :jact, #jwhy = :jwhy";
    let expr = match expr.strip_prefix("SET ") {
        Some(rest) => format!("SET {set}, {rest}"),
        None => format!("SET {set} {expr}"),
    };
    let names = [("#jref", "ref"), ("#jact", "actor"), ("#jwhy", "why")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (expr, names)
}

/// The three cause attributes as item values (for a put).
pub(super) fn cause_values(cause: &Cause) -> [(&'static str, AttributeValue); 3] {
    [("ref", s(cause.reference.clone())), ("actor", s(cause.actor.clone())), ("why", s(cause.why.clone()))]
}

/// An update that also stamps `cause` on the item.
pub(super) fn update_stamped(
    table: &str,
    pk: String,
    expr: &str,
    cond: Option<&str>,
    mut vals: Item,
    cause: &Cause,
) -> anyhow::Result<TransactWriteItem> {
    let (expr, names) = stamped(expr, &mut vals, cause);
    let u = Update::builder()
        .table_name(table)
        .set_key(Some(key(pk)))
        .update_expression(expr)
        .set_condition_expression(cond.map(str::to_owned))
        .set_expression_attribute_values(Some(vals))
        .set_expression_attribute_names(Some(names))
        .build()?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// The transaction item of one planned action; `now_s` is the clock the sale gates judge by.
fn action_item(table: &str, r: &Reservation, a: &Action, now_s: i64) -> anyhow::Result<TransactWriteItem> {
    let pk = target_pk(r, &a.target);
    match &a.op {
        Op::Move { how, quantity, ring } => {
            let cause = move_cause(r, *how);
            let update = |table: &str, pk: String, expr: &str, cond: Option<&str>, vals: Item| {
                update_stamped(table, pk, expr, cond, vals, &cause)
            };
            let q = n(*quantity);
            let (expr, cond) = match how {
                CounterMove::Freeze => ("SET av = av - :q, lk = lk + :q", "av >= :q"),
                CounterMove::Sell => ("SET lk = lk - :q, sd = sd + :q", "lk >= :q"),
                CounterMove::Release => ("SET lk = lk - :q, av = av + :q", "lk >= :q"),
                CounterMove::Retake => ("SET av = av - :q, sd = sd + :q", "av >= :q"),
                CounterMove::Restock => ("SET sd = sd - :q, av = av + :q", "sd >= :q"),
            };
            match (&a.target, how, ring) {
                // A code pool's ring moves with its counters: the tail must still be where the
                // plan read it (docs/code-pools.md).
                (Target::Shard { .. }, _, Some(RingStep::Append { tail })) => update(
                    table,
                    pk,
                    &format!("{expr}, ctl = ctl + :q"),
                    Some(&format!("{cond} AND ctl = :t")),
                    values([(":q", q), (":t", n(*tail))]),
                ),
                // The sale gates live on the shards the freeze writes anyway: a stop-sale on
                // product shards, window and pause on quota shards.
                (Target::Shard { .. }, CounterMove::Freeze, _) => update(
                    table,
                    pk,
                    expr,
                    Some("av >= :q AND (attribute_not_exists(ps) OR ps = :f)"),
                    values([(":q", q), (":f", AttributeValue::Bool(false))]),
                ),
                (Target::Quota { .. }, CounterMove::Freeze, _) => update(
                    table,
                    pk,
                    expr,
                    Some("av >= :q AND sa <= :now AND ea > :now AND ps = :f"),
                    values([(":q", q), (":now", n(now_s)), (":f", AttributeValue::Bool(false))]),
                ),
                _ => update(table, pk, expr, Some(cond), values([(":q", q)])),
            }
        }
        Op::PutCode(c) => put(table, encode_code(pk, c), "attribute_not_exists(pk)"),
        Op::TakeCode => update(
            table,
            pk,
            "SET o = :o",
            Some("attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret)"),
            values([(":o", s(r.id.as_str()))]),
        ),
        Op::Add { delta, max_before: Some(max) } => update(
            table,
            pk,
            "ADD n :d",
            // an absent counter counts as 0 (as in the memory store): it passes only when 0 does
            Some(if *max >= 0 { "attribute_not_exists(n) OR n <= :max" } else { "n <= :max" }),
            values([(":d", n(*delta)), (":max", n(*max))]),
        ),
        Op::Add { delta, max_before: None } => update(table, pk, "ADD n :d", None, values([(":d", n(*delta))])),
    }
}

pub(super) fn update(
    table: &str,
    pk: String,
    expr: &str,
    cond: Option<&str>,
    vals: Item,
) -> anyhow::Result<TransactWriteItem> {
    let u = Update::builder()
        .table_name(table)
        .set_key(Some(key(pk)))
        .update_expression(expr)
        .set_condition_expression(cond.map(str::to_owned))
        .set_expression_attribute_values((!vals.is_empty()).then_some(vals))
        .build()?;
    Ok(TransactWriteItem::builder().update(u).build())
}

/// A put conditional on the stored item's version `v`.
pub(super) fn versioned_put(table: &str, item: Item, expected_version: u64) -> anyhow::Result<TransactWriteItem> {
    let p = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("v = :v")
        .expression_attribute_values(":v", n(expected_version))
        .build()?;
    Ok(TransactWriteItem::builder().put(p).build())
}

/// How a cancelled lock move failed. Item 0 is the reservation (its status condition); only
/// shard pieces carry the other conditions, so anything else (throttling, an empty list) is
/// retryable, never a shortfall.
fn move_rejection(codes: Option<Vec<String>>) -> MoveRejection {
    let Some(codes) = codes else { return MoveRejection::Conflict };
    match codes.first().map(String::as_str) {
        _ if codes.iter().any(|c| c == "TransactionConflict") => MoveRejection::Conflict,
        Some("ConditionalCheckFailed") => MoveRejection::StatusChanged,
        _ if codes.iter().skip(1).any(|c| c == "ConditionalCheckFailed") => MoveRejection::ShardShort,
        _ => MoveRejection::Conflict,
    }
}

/// The two items every stock adjustment writes first: its idempotency record `ADJ#sku#id`
/// (which fails on a replay) and the metadata's `stocked`, with the version bumped so a
/// concurrent metadata write (which carries `stocked`) loses its condition and re-reads instead
/// of writing the old `stocked` back.
fn adjustment_items(t: &str, adj: &Adjustment) -> anyhow::Result<(Vec<TransactWriteItem>, Vec<Role>)> {
    let mut rec = values([
        ("pk", s(adjustment_pk(adj))),
        ("delta", n(adj.delta)),
        ("reason", s(adj.reason.clone())),
        ("at", n(adj.at_ms)),
    ]);
    if let Some(a) = &adj.actor {
        rec.insert("by".into(), s(a.clone()));
    }
    let items = vec![
        put(t, rec, "attribute_not_exists(pk)")?,
        update(
            t,
            meta_pk(&adj.sku),
            "ADD stocked :d, v :one",
            Some("attribute_exists(pk)"),
            values([(":d", n(adj.delta)), (":one", n(1))]),
        )?,
    ];
    Ok((items, vec![Role::Adjustment, Role::Meta]))
}

fn adjustment_pk(adj: &Adjustment) -> String {
    format!("ADJ#{}#{}", adj.sku, adj.adjustment_id)
}

impl DynamoStock {
    /// A replayed adjustment: what the first one moved.
    async fn duplicate_adjustment(&self, adj: &Adjustment) -> anyhow::Result<AdjustRejection> {
        let it = self.batch_get(vec![adjustment_pk(adj)], true).await?;
        let delta = it.first().map(|i| get_n(i, "delta")).transpose()?.unwrap_or(0);
        Ok(AdjustRejection::Duplicate { delta })
    }
}

pub(super) fn put(table: &str, item: Item, cond: &str) -> anyhow::Result<TransactWriteItem> {
    let p = Put::builder().table_name(table).set_item(Some(item)).condition_expression(cond).build()?;
    Ok(TransactWriteItem::builder().put(p).build())
}

impl DynamoStock {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    /// Runs one transaction; `Ok(Err(codes))` when DynamoDB cancelled it. Billed (cancelled or
    /// not) at 2 write units per item-KB, plus `index_writes` GSI entries.
    pub(super) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        index_writes: f64,
    ) -> anyhow::Result<Result<(), Option<Vec<String>>>> {
        let units: f64 = items.iter().map(|i| 2.0 * i.put().map(|p| wru(item_bytes(p.item()))).unwrap_or(1.0)).sum();
        let _span = charge("dynamodb:TransactWriteItems", 0.0, units + index_writes);
        let r = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        match r {
            Ok(_) => Ok(Ok(())),
            Err(e) => {
                if let Some(codes) = cancellation_codes(&e) {
                    // A cancellation caused only by throttled items (a hot shard past its
                    // partition's limit) is capacity, not a rejection: no condition failed.
                    if codes.iter().any(|c| c == "ThrottlingError")
                        && !codes.iter().any(|c| c == "ConditionalCheckFailed")
                    {
                        return Err(anyhow::Error::new(crate::ports::Throttled(
                            "TransactWriteItems on the stock table (hot shard)".into(),
                        )));
                    }
                    Ok(Err(Some(codes)))
                } else if is_conflict(&e) {
                    Ok(Err(None))
                } else {
                    Err(super::sdk_error(e, "TransactWriteItems on the stock table".into()))
                }
            }
        }
    }

    /// Counter triples of the given items, in order (a missing item counts as zero).
    async fn read_counts(&self, pks: Vec<String>, consistent: bool) -> anyhow::Result<Vec<ShardCounts>> {
        let items = self.batch_get(pks.clone(), consistent).await?;
        let by_pk: HashMap<&str, &Item> = items.iter().filter_map(|it| Some((opt_s(it, "pk")?, it))).collect();
        pks.iter()
            .map(|pk| match by_pk.get(pk.as_str()) {
                Some(it) => {
                    Ok(ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? })
                }
                None => Ok(ShardCounts::default()),
            })
            .collect()
    }

    pub(super) async fn batch_get(&self, pks: Vec<String>, consistent: bool) -> anyhow::Result<Vec<Item>> {
        let mut out = Vec::new();
        for chunk in pks.chunks(100) {
            let mut keys: Vec<Item> = chunk.iter().cloned().map(key).collect();
            let mut tries = 0;
            while !keys.is_empty() {
                let ka = KeysAndAttributes::builder().set_keys(Some(keys)).consistent_read(consistent).build()?;
                let _span = super::super::usage::call("dynamodb:BatchGetItem");
                let r = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, ka)
                    .send()
                    .await
                    .context("BatchGetItem on the stock table")?;
                // every requested key is billed, found or not
                let found: Vec<usize> =
                    r.responses().and_then(|m| m.get(&self.table)).into_iter().flatten().map(item_bytes).collect();
                let missing = chunk.len().saturating_sub(found.len());
                let read: f64 =
                    found.iter().map(|b| rru(*b, consistent)).sum::<f64>() + missing as f64 * rru(0, consistent);
                super::super::usage::capacity(read, 0.0);
                if let Some(items) = r.responses().and_then(|m| m.get(&self.table)) {
                    out.extend(items.iter().cloned());
                }
                keys = r
                    .unprocessed_keys()
                    .and_then(|m| m.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
                tries += 1;
                if !keys.is_empty() {
                    if tries > 8 {
                        return Err(anyhow!("BatchGetItem kept returning unprocessed keys"));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20 * tries)).await;
                }
            }
        }
        Ok(out)
    }

    async fn query_keys(&self, index: &str, cond: &str, vals: Item) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let _span = super::super::usage::call("dynamodb:Query");
            let r = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(cond)
                .set_expression_attribute_values(Some(vals.clone()))
                .set_exclusive_start_key(start)
                .send()
                .await
                .with_context(|| format!("Query {index}"))?;
            super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
            for it in r.items() {
                out.push(get_s(it, "pk")?.to_owned());
            }
            match r.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    /// The reservation's status change `from` → `to`, then the counter writes of the move.
    fn lock_move_items(
        &self,
        r: &Reservation,
        from: LockStatus,
        to: LockStatus,
        returns: &[CodeAppend],
    ) -> anyhow::Result<Vec<TransactWriteItem>> {
        let t = &self.table;
        let actions =
            plan::lock_move(r, from, to, returns).ok_or_else(|| anyhow!("no lock move {from:?} -> {to:?}"))?;
        // the lines are written back: a pay-time confirm may have re-planned its pieces
        let mut items = vec![update(
            t,
            res_pk(&r.id),
            "SET st = :to, ln = :ln REMOVE fzb, fza",
            // a lock marked oversold is decided: never retaken (service/stock.rs, `retake`)
            Some(if from == LockStatus::Released { "st = :from AND attribute_not_exists(ov)" } else { "st = :from" }),
            values([
                (":to", s(to.as_str())),
                (":from", s(from.as_str())),
                (":ln", s(serde_json::to_string(&r.lines)?)),
            ]),
        )?];
        for a in &actions {
            items.push(action_item(t, r, a, r.created_at_ms / 1000)?);
        }
        Ok(items)
    }

    /// Where a release puts each code line's codes back: the ring tail now (consistent) and
    /// the codes the line took. A tail that moves before the release commits fails its
    /// condition, and the release is retried from a fresh read.
    async fn code_returns(&self, r: &Reservation) -> anyhow::Result<Vec<CodeAppend>> {
        let mut out = Vec::new();
        for l in r.lines.iter().filter(|l| l.holds_codes()) {
            let ranges = l.codes.as_deref().unwrap_or_default();
            out.extend(self.appends_for(&l.sku, ranges).await?);
        }
        Ok(out)
    }

    /// The codes at `ranges`, grouped by shard (in range order), each with its ring's tail now.
    async fn appends_for(&self, sku: &Sku, ranges: &[CodeRange]) -> anyhow::Result<Vec<CodeAppend>> {
        let mut shards: Vec<u16> = ranges.iter().map(|g| g.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        let rings = self.read_rings_of(sku, &shards).await?;
        let mut out = Vec::new();
        for (shard, ring) in shards.iter().zip(rings) {
            let slots: Vec<(u16, u64)> = ranges
                .iter()
                .filter(|g| g.shard == *shard)
                .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(|p| (g.shard, p)))
                .collect();
            let codes = self.read_codes(sku, &slots).await?.into_iter().flatten().collect();
            out.push(CodeAppend { cell: sku.clone(), shard: *shard, tail: ring.tail, codes });
        }
        Ok(out)
    }

    async fn read_rings_of(&self, sku: &Sku, shards: &[u16]) -> anyhow::Result<Vec<Ring>> {
        let pks: Vec<String> = shards.iter().map(|i| shard_pk(sku, *i)).collect();
        let items = self.batch_get(pks.clone(), true).await?;
        let by_pk: HashMap<&str, &Item> = items.iter().filter_map(|it| Some((opt_s(it, "pk")?, it))).collect();
        Ok(pks.iter().map(|pk| by_pk.get(pk.as_str()).map(|it| decode_ring(it)).unwrap_or_default()).collect())
    }
}

#[async_trait]
impl StockStore for DynamoStock {
    async fn get_skus(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), true).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn put_sku(&self, meta: &SkuMeta, expected_version: Option<u64>) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = vec![match expected_version {
            None => put(t, encode_meta(meta), "attribute_not_exists(pk)")?,
            Some(v) => versioned_put(t, encode_meta(meta), v)?,
        }];
        let existing = if expected_version.is_some() {
            self.batch_get((0..meta.slots).map(|i| shard_pk(&meta.sku, i)).collect(), true).await?.len() as u16
        } else {
            0
        };
        for i in existing..meta.slots {
            // a shard added during a stop-sale is stopped too: the freeze condition reads `ps`
            let mut shard = values([
                ("pk", s(shard_pk(&meta.sku, i))),
                ("av", n(0)),
                ("lk", n(0)),
                ("sd", n(0)),
                ("ps", AttributeValue::Bool(meta.paused)),
            ]);
            if Stocking::of(&meta.model).holds_codes() {
                shard.extend(values([("chd", n(0)), ("ctl", n(0)), ("cup", n(0))]));
            }
            items.push(put(t, shard, "attribute_not_exists(pk)")?);
        }
        Ok(self.transact(items, if expected_version.is_none() { 1.0 } else { 0.0 }).await?.is_ok())
    }

    async fn read_shards(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..slots).map(|i| shard_pk(sku, i)).collect(), true).await
    }

    async fn rebalance(
        &self,
        meta: &SkuMeta,
        expected_version: u64,
        old: &[ShardCounts],
        new_available: &[i64],
        cause: &Cause,
    ) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = vec![versioned_put(t, encode_meta(meta), expected_version)?];
        for (i, &av) in new_available.iter().enumerate() {
            let pk = shard_pk(&meta.sku, i as u16);
            match old.get(i) {
                Some(o) if o.available == av => {}
                Some(o) => items.push(update_stamped(
                    t,
                    pk,
                    "SET av = :new",
                    Some("av = :old"),
                    values([(":new", n(av)), (":old", n(o.available))]),
                    cause,
                )?),
                None => {
                    // a shard added during a stop-sale is stopped too: the freeze condition reads `ps`
                    let mut shard = values([
                        ("pk", s(pk)),
                        ("av", n(av)),
                        ("lk", n(0)),
                        ("sd", n(0)),
                        ("ps", AttributeValue::Bool(meta.paused)),
                    ]);
                    shard.extend(cause_values(cause).map(|(k, v)| (k.to_owned(), v)));
                    items.push(put(t, shard, "attribute_not_exists(pk)")?)
                }
            }
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn adjust(&self, adj: &Adjustment, _meta_version: u64) -> anyhow::Result<Result<(), AdjustRejection>> {
        let t = &self.table;
        let (mut items, mut roles) = adjustment_items(t, adj)?;
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for &(shard, d) in &adj.pieces {
            let cond = (d < 0).then_some("av >= :m");
            let mut v = values([(":d", n(d))]);
            if d < 0 {
                v.insert(":m".into(), n(-d));
            }
            let cond = cond.or(Some("attribute_exists(pk)"));
            items.push(update_stamped(t, shard_pk(&adj.sku, shard), "ADD av :d", cond, v, &cause)?);
            roles.push(Role::Shard);
        }
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Conflict | Cancel::Unexplained => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(adj).await.map(Err),
                Cancel::Failed(_) => Ok(Err(AdjustRejection::ShardShort)),
            },
        }
    }

    async fn put_frozen(&self, r: &Reservation, limits: &FreezeLimits) -> anyhow::Result<Result<(), FreezeRejection>> {
        let t = &self.table;
        // The reservation goes first so a replay is the first reason reported.
        let actions = plan::freeze(r, limits);
        let mut items = vec![put(t, encode_reservation(r)?, "attribute_not_exists(pk)")?];
        let mut targets = vec![Target::Reservation];
        for a in &actions {
            items.push(action_item(t, r, a, r.created_at_ms / 1000)?);
            targets.push(a.target.clone());
        }
        // + the frozen-by-age index entry
        match self.transact(items, 1.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(FreezeRejection::Conflict)),
            Err(Some(codes)) if codes.iter().any(|c| c == "TransactionConflict") => Ok(Err(FreezeRejection::Conflict)),
            Err(Some(codes)) => {
                let failed: Vec<Target> = codes
                    .iter()
                    .zip(targets)
                    .filter(|(c, _)| c.as_str() == "ConditionalCheckFailed")
                    .map(|(_, t)| t)
                    .collect();
                Ok(Err(plan::freeze_rejection(&failed)))
            }
        }
    }

    async fn get_reservation(&self, id: &ReservationId) -> anyhow::Result<Option<Reservation>> {
        super::get_consistent(&self.client, &self.table, res_pk(id)).await?.as_ref().map(decode_reservation).transpose()
    }

    async fn move_lock(&self, r: &Reservation, to: LockStatus) -> anyhow::Result<Result<(), MoveRejection>> {
        let returns = if to == LockStatus::Released { self.code_returns(r).await? } else { Vec::new() };
        let items = self.lock_move_items(r, LockStatus::Frozen, to, &returns)?;
        // + removing the frozen-by-age index entry
        Ok(self.transact(items, 1.0).await?.map_err(move_rejection))
    }

    async fn retake(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        let items = self.lock_move_items(r, LockStatus::Released, LockStatus::Sold, &[])?;
        Ok(self.transact(items, 0.0).await?.map_err(move_rejection))
    }

    async fn restock(&self, r: &Reservation) -> anyhow::Result<Result<(), MoveRejection>> {
        let items = self.lock_move_items(r, LockStatus::Sold, LockStatus::Restocked, &[])?;
        Ok(self.transact(items, 0.0).await?.map_err(move_rejection))
    }

    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(res_pk(&r.id))))
            .update_expression("SET ov = :t")
            .condition_expression("st = :released AND attribute_not_exists(ov)")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":released", s(LockStatus::Released.as_str()))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context("mark oversold")),
        }
    }

    async fn settle_codes(&self, id: &ReservationId, fate: CodeFate) -> anyhow::Result<Option<CodeFate>> {
        let cond = match fate {
            CodeFate::Revealed => "st = :sold AND (attribute_not_exists(cf) OR cf = :f)",
            CodeFate::Withdrawn => "attribute_exists(pk) AND st <> :released AND (attribute_not_exists(cf) OR cf = :f)",
        };
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(res_pk(id))))
            .update_expression("SET cf = :f")
            .condition_expression(cond)
            .set_expression_attribute_values(Some(
                [
                    (":f".to_owned(), s(fate.as_str())),
                    (
                        if fate == CodeFate::Revealed { ":sold" } else { ":released" }.to_owned(),
                        s(if fate == CodeFate::Revealed { LockStatus::Sold } else { LockStatus::Released }.as_str()),
                    ),
                ]
                .into(),
            ))
            .send()
            .await;
        match out {
            Ok(_) => Ok(Some(fate)),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                Ok(self.get_reservation(id).await?.and_then(|r| r.code_fate))
            }
            Err(e) => Err(anyhow::Error::new(e).context("settle codes")),
        }
    }

    async fn frozen_before(&self, before_ms: i64) -> anyhow::Result<Vec<ReservationId>> {
        let mut out = Vec::new();
        for b in 0..super::INDEX_BUCKETS {
            let pks = self
                .query_keys(
                    FROZEN_INDEX,
                    "fzb = :b AND fza < :c",
                    values([(":b", s(format!("F#{b}"))), (":c", n(before_ms))]),
                )
                .await?;
            for pk in pks {
                if let Some(id) = pk.strip_prefix("RES#") {
                    out.push(ReservationId::from_stored(id)?);
                }
            }
        }
        Ok(out)
    }

    async fn get_reservations(&self, ids: &[ReservationId]) -> anyhow::Result<Vec<Reservation>> {
        let items = self.batch_get(ids.iter().map(res_pk).collect(), true).await?;
        items.iter().map(decode_reservation).collect()
    }

    async fn list_skus(&self) -> anyhow::Result<Vec<Sku>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("SKU"))])).await?;
        pks.iter().map(|pk| Sku::from_stored(pk.trim_start_matches("SKU#")).map_err(anyhow::Error::from)).collect()
    }

    async fn get_skus_public(&self, skus: &[Sku]) -> anyhow::Result<HashMap<Sku, SkuMeta>> {
        let items = self.batch_get(skus.iter().map(meta_pk).collect(), false).await?;
        items.iter().map(|it| decode_meta(it).map(|m| (m.sku.clone(), m))).collect()
    }

    async fn read_shards_public(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..slots).map(|i| shard_pk(sku, i)).collect(), false).await
    }

    async fn set_sku_paused(&self, meta: &SkuMeta, expected_version: u64) -> anyhow::Result<bool> {
        let t = &self.table;
        let mut items = vec![versioned_put(t, encode_meta(meta), expected_version)?];
        for i in 0..meta.slots {
            items.push(update(
                t,
                shard_pk(&meta.sku, i),
                "SET ps = :p",
                Some("attribute_exists(pk)"),
                values([(":p", AttributeValue::Bool(meta.paused))]),
            )?);
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn get_campaign(&self, id: &CampaignId, consistent: bool) -> anyhow::Result<Option<Campaign>> {
        self.campaign(id, consistent).await
    }

    async fn write_campaign(&self, c: &Campaign, expected_version: Option<u64>) -> anyhow::Result<bool> {
        self.put_campaign(c, expected_version).await
    }

    async fn read_quota_shards(
        &self,
        id: &CampaignId,
        sku: &Sku,
        shards: u16,
        consistent: bool,
    ) -> anyhow::Result<Vec<ShardCounts>> {
        self.read_counts((0..shards).map(|i| quota_pk(id, sku, i)).collect(), consistent).await
    }

    async fn adjust_campaign(
        &self,
        adj: &CampaignAdjustment,
        next: &Campaign,
        expected_version: u64,
    ) -> anyhow::Result<Result<(), AdjustRejection>> {
        self.campaign_adjustment(adj, next, expected_version).await
    }

    async fn list_campaigns(&self) -> anyhow::Result<Vec<CampaignId>> {
        let pks = self.query_keys(SKU_INDEX, "skl = :k", values([(":k", s("CMP"))])).await?;
        pks.iter().map(|pk| CampaignId::parse(pk.trim_start_matches("CMP#")).map_err(anyhow::Error::from)).collect()
    }

    async fn read_counters(&self, counters: &[Counter]) -> anyhow::Result<HashMap<Counter, i64>> {
        let items = self.batch_get(counters.iter().map(counter_pk).collect(), false).await?;
        let by_pk: HashMap<&str, i64> =
            items.iter().filter_map(|it| Some((opt_s(it, "pk")?, opt_n(it, "n").unwrap_or(0)))).collect();
        Ok(counters.iter().map(|c| (c.clone(), by_pk.get(counter_pk(c).as_str()).copied().unwrap_or(0))).collect())
    }

    async fn read_rings(&self, sku: &Sku, slots: u16) -> anyhow::Result<Vec<Ring>> {
        self.read_rings_of(sku, &(0..slots).collect::<Vec<_>>()).await
    }

    async fn read_codes(&self, sku: &Sku, slots: &[(u16, u64)]) -> anyhow::Result<Vec<Option<StoredCode>>> {
        let pks: Vec<String> = slots.iter().map(|(shard, pos)| code_pk(sku, *shard, *pos)).collect();
        let items = self.batch_get(pks.clone(), true).await?;
        let mut by_pk: HashMap<String, StoredCode> = HashMap::new();
        for it in &items {
            by_pk.insert(get_s(it, "pk")?.to_owned(), decode_code(it)?);
        }
        Ok(pks.iter().map(|pk| by_pk.remove(pk)).collect())
    }

    async fn code_left_slot(&self, sku: &Sku, shard: u16, pos: u64) -> anyhow::Result<bool> {
        // BatchGetItem, as read_codes: the reveal's role needs no other action for it
        let Some(slot) = self.batch_get(vec![code_pk(sku, shard, pos)], true).await?.pop() else { return Ok(false) };
        if slot.contains_key("ret") {
            return Ok(true);
        }
        let Some(holder) = opt_s(&slot, "o") else { return Ok(false) };
        let id = ReservationId::from_stored(holder).map_err(|e| anyhow!("code slot {shard}#{pos} of {sku}: {e}"))?;
        let lock = self.batch_get(vec![res_pk(&id)], true).await?.pop();
        Ok(match lock {
            Some(it) => decode_reservation(&it)?.status == LockStatus::Released,
            None => false,
        })
    }

    async fn known_codes(&self, sku: &Sku, fingerprints: &[String]) -> anyhow::Result<HashMap<String, String>> {
        let mut pks: Vec<String> = fingerprints.iter().map(|f| fingerprint_pk(sku, f)).collect();
        pks.sort();
        pks.dedup();
        let items = self.batch_get(pks, true).await?;
        let prefix = fingerprint_pk(sku, "");
        items
            .iter()
            .map(|it| {
                let fp = get_s(it, "pk")?.strip_prefix(&prefix).unwrap_or_default().to_owned();
                Ok((fp, get_s(it, "b")?.to_owned()))
            })
            .collect()
    }

    async fn add_codes(&self, up: &CodeUpload) -> anyhow::Result<Result<(), AdjustRejection>> {
        let t = &self.table;
        let adj = &up.adjustment;
        let (mut items, mut roles) = adjustment_items(t, adj)?;
        let cause = Cause::adjustment(&adj.adjustment_id, adj.actor.as_deref(), &adj.reason);
        for a in &up.appends {
            let k = n(a.codes.len());
            items.push(update_stamped(
                t,
                shard_pk(&adj.sku, a.shard),
                "ADD av :k, ctl :k, cup :k",
                Some("ctl = :t"),
                values([(":k", k), (":t", n(a.tail))]),
                &cause,
            )?);
            roles.push(Role::Shard);
            for (i, c) in a.codes.iter().enumerate() {
                let slot = code_pk(&adj.sku, a.shard, a.tail + i as u64);
                items.push(put(t, encode_code(slot, c), "attribute_not_exists(pk)")?);
                roles.push(Role::Code);
                let fp = values([("pk", s(fingerprint_pk(&adj.sku, &c.fingerprint))), ("b", s(up.batch_id.clone()))]);
                items.push(put(t, fp, "attribute_not_exists(pk)")?);
                roles.push(Role::Code);
            }
        }
        match self.transact(items, 0.0).await? {
            Ok(()) => Ok(Ok(())),
            Err(None) => Ok(Err(AdjustRejection::Conflict)),
            Err(Some(codes)) => match classify(&codes, &roles) {
                Cancel::Conflict | Cancel::Unexplained => Ok(Err(AdjustRejection::Conflict)),
                Cancel::Failed(f) if matches!(f[0], Role::Adjustment) => self.duplicate_adjustment(adj).await.map(Err),
                Cancel::Failed(f) if f.iter().any(|r| matches!(r, Role::Code)) => Ok(Err(AdjustRejection::CodeTaken)),
                Cancel::Failed(_) => Ok(Err(AdjustRejection::Conflict)),
            },
        }
    }

    async fn claim_codes(&self, sku: &Sku, shard: u16, quantity: u32, max_head: u64) -> anyhow::Result<Option<u64>> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(shard_pk(sku, shard))))
            .update_expression("SET chd = chd + :q, cht = :now")
            .condition_expression("chd <= :max")
            .expression_attribute_values(":q", n(quantity))
            .expression_attribute_values(":max", n(max_head))
            .expression_attribute_values(":now", n(crate::clock::now_ms()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await;
        match out {
            Ok(o) => {
                let head =
                    o.attributes().and_then(|a| opt_n::<u64>(a, "chd")).ok_or_else(|| anyhow!("no chd returned"))?;
                Ok(Some(head - u64::from(quantity)))
            }
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(None),
            Err(e) => Err(super::sdk_error(e, format!("UpdateItem (claim codes of {sku})"))),
        }
    }

    async fn give_back_codes(&self, sku: &Sku, ranges: &[CodeRange]) -> anyhow::Result<bool> {
        let t = &self.table;
        let appends = self.appends_for(sku, ranges).await?;
        let wanted: usize = ranges.iter().map(|g| g.count as usize).sum();
        if appends.iter().map(|a| a.codes.len()).sum::<usize>() != wanted {
            return Err(anyhow!("give back: a claimed position of {sku} holds no code"));
        }
        let mut items = Vec::new();
        for a in &appends {
            items.push(update(
                t,
                shard_pk(sku, a.shard),
                "ADD ctl :k",
                Some("ctl = :t"),
                values([(":k", n(a.codes.len())), (":t", n(a.tail))]),
            )?);
            for (i, c) in a.codes.iter().enumerate() {
                items.push(put(
                    t,
                    encode_code(code_pk(sku, a.shard, a.tail + i as u64), c),
                    "attribute_not_exists(pk)",
                )?);
            }
        }
        for g in ranges {
            for pos in g.from..g.from + u64::from(g.count) {
                items.push(update(
                    t,
                    code_pk(sku, g.shard, pos),
                    "SET ret = :y",
                    Some("attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret)"),
                    values([(":y", AttributeValue::Bool(true))]),
                )?);
            }
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }

    async fn unbound_codes(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<Vec<u64>> {
        let items = self.batch_get((from..to).map(|p| code_pk(sku, shard, p)).collect(), true).await?;
        let prefix = format!("CODE#{sku}#{shard}#");
        let mut out: Vec<u64> = items
            .iter()
            .filter(|it| !it.contains_key("o") && !it.contains_key("ret"))
            .filter_map(|it| opt_s(it, "pk")?.strip_prefix(&prefix)?.parse().ok())
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    async fn mark_checked(&self, sku: &Sku, shard: u16, from: u64, to: u64) -> anyhow::Result<bool> {
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(shard_pk(sku, shard))))
            .update_expression("SET cck = :to")
            .condition_expression(if from == 0 { "attribute_not_exists(cck) OR cck = :from" } else { "cck = :from" })
            .expression_attribute_values(":to", n(to))
            .expression_attribute_values(":from", n(from))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(super::sdk_error(e, format!("UpdateItem (checked mark of {sku})"))),
        }
    }

    async fn code_batch(&self, sku: &Sku, batch_id: &str) -> anyhow::Result<Option<BatchResult>> {
        let it = super::get_consistent(&self.client, &self.table, batch_pk(sku, batch_id)).await?;
        it.map(|it| serde_json::from_str(get_s(&it, "r")?).context("code batch record")).transpose()
    }

    async fn put_code_batch(&self, sku: &Sku, batch_id: &str, result: &BatchResult) -> anyhow::Result<()> {
        let item = values([("pk", s(batch_pk(sku, batch_id))), ("r", s(serde_json::to_string(result)?))]);
        let _span = charge("dynamodb:PutItem", 0.0, 1.0);
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context("put code batch")),
        }
    }
}

/// Reads of the whole stock table for invariant checks at quiescence (tests, demo). A Scan:
/// never on a request path.
pub mod audit {
    use super::*;
    use crate::domain::invariants::{CampaignCounters, CampaignItemSnapshot, CodePools, SkuSnapshot};

    pub struct StockDump {
        pub skus: Vec<SkuSnapshot>,
        pub reservations: Vec<Reservation>,
        pub user_counters: Vec<(Sku, UserId, i64)>,
        pub campaigns: CampaignCounters,
        pub codes: CodePools,
    }

    pub async fn dump(client: &Client, table: &str) -> anyhow::Result<StockDump> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let r = client.scan().table_name(table).consistent_read(true).set_exclusive_start_key(start).send().await?;
            items.extend(r.items().iter().cloned());
            match r.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => break,
            }
        }
        let mut metas = Vec::new();
        let mut shards: HashMap<String, ShardCounts> = HashMap::new();
        let mut reservations = Vec::new();
        let mut user_counters = Vec::new();
        let mut campaigns = Vec::new();
        let mut campaign_counters = CampaignCounters::default();
        let mut codes = CodePools::default();
        let mut rings: HashMap<String, Ring> = HashMap::new();
        for it in &items {
            let pk = get_s(it, "pk")?;
            if let Some(rest) = pk.strip_prefix("CODE#") {
                // CODE#<sku>#<shard>#<pos>: a SKU has no '#'
                let parts: Vec<&str> = rest.split('#').collect();
                if let [sku, shard, pos] = parts[..] {
                    codes
                        .slots
                        .insert((Sku::from_stored(sku)?, shard.parse()?, pos.parse()?), get_s(it, "fp")?.to_owned());
                }
                continue;
            }
            if pk.starts_with("SKU#") && it.contains_key("chd") {
                rings.insert(pk.to_owned(), decode_ring(it));
            }
            if pk.starts_with("CMP#") {
                campaigns.push(super::super::campaigns::decode_item(it)?);
            } else if pk.starts_with("CQ#") {
                shards.insert(
                    pk.to_owned(),
                    ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? },
                );
            } else if let Some(rest) = pk.strip_prefix("LIMC#") {
                let mut parts = rest.splitn(3, '#');
                if let (Some(c), Some(k), Some(u)) = (parts.next(), parts.next(), parts.next()) {
                    let n = opt_n(it, "n").unwrap_or(0);
                    campaign_counters.user_counters.push((CampaignId::parse(c)?, Sku::parse(k)?, UserId::parse(u)?, n));
                }
            } else if let Some(u) = pk.strip_prefix("PEND#") {
                campaign_counters.pending.push((UserId::parse(u)?, opt_n(it, "n").unwrap_or(0)));
            } else if pk.starts_with("RES#") {
                reservations.push(decode_reservation(it)?);
            } else if let Some(rest) = pk.strip_prefix("LIM#") {
                if let Some((sku, user)) = rest.split_once('#') {
                    user_counters.push((Sku::parse(sku)?, UserId::parse(user)?, opt_n(it, "n").unwrap_or(0)));
                }
            } else if pk.starts_with("SKU#") && it.contains_key("av") {
                shards.insert(
                    pk.to_owned(),
                    ShardCounts { available: get_n(it, "av")?, locked: get_n(it, "lk")?, sold: get_n(it, "sd")? },
                );
            } else if pk.starts_with("SKU#") {
                metas.push(decode_meta(it)?);
            }
        }
        for m in metas.iter().filter(|m| Stocking::of(&m.model).holds_codes()) {
            codes.pools.push(m.sku.clone());
            for i in 0..m.slots {
                if let Some(g) = rings.get(&shard_pk(&m.sku, i)) {
                    codes.rings.insert((m.sku.clone(), i), *g);
                }
            }
        }
        let skus = metas
            .into_iter()
            .map(|m| SkuSnapshot {
                shards: (0..m.slots).map(|i| shards.get(&shard_pk(&m.sku, i)).copied().unwrap_or_default()).collect(),
                sku: m.sku,
                stocked: m.stocked,
                per_user_limit: m.per_user_limit,
            })
            .collect();
        for c in campaigns {
            for i in &c.items {
                campaign_counters.items.push(CampaignItemSnapshot {
                    campaign: c.id.clone(),
                    sku: i.sku.clone(),
                    quota: i.quota,
                    per_user_limit: i.per_user_limit,
                    shards: (0..i.shards)
                        .map(|n| shards.get(&quota_pk(&c.id, &i.sku, n)).copied().unwrap_or_default())
                        .collect(),
                });
            }
        }
        Ok(StockDump { skus, reservations, user_counters, campaigns: campaign_counters, codes })
    }
}

#[cfg(test)]
mod journal_cost_tests {
    use super::*;
    use crate::adapters::dynamo::{item_bytes, wru};

    /// The journal adds no write units to a checkout: the cause rides on the shard item the
    /// freeze/confirm/release already updates, and even with the longest ids (a 64-byte SKU and
    /// order id, a 128-byte user id) the stamped item stays far under the 1 KB a write unit
    /// covers (DynamoDB bills an update by the larger of the item's before and after sizes).
    #[test]
    fn a_stamped_shard_item_stays_within_one_write_unit() {
        let sku = "S".repeat(64);
        let mut bare = values([
            ("pk", s(format!("SKU#{sku}#63"))),
            ("av", n(i64::MAX)),
            ("lk", n(i64::MAX)),
            ("sd", n(i64::MAX)),
            ("ps", AttributeValue::Bool(false)),
        ]);
        let before = item_bytes(&bare);
        let cause = Cause::new("o".repeat(64), Some(&"u".repeat(128)), "release");
        bare.extend(cause_values(&cause).map(|(k, v)| (k.to_owned(), v)));
        let after = item_bytes(&bare);
        assert!(after > before);
        assert_eq!((wru(before), wru(after)), (1.0, 1.0), "{before} -> {after} bytes");
        assert!(after < 400, "{after} bytes");
    }
}
