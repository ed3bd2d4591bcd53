//! Transaction items and their failure mapping: the write of each planned action, stamped
//! with its cause (the stock journal), conditional puts and updates, and the reading of a
//! cancelled transaction's per-item reasons.

use super::*;

/// What each action of an adjustment stands for, to read cancellation reasons item by item.
#[derive(Debug, Clone)]
pub(in crate::adapters::dynamo) enum Role {
    Adjustment,
    Meta,
    Shard,
    /// A code slot or fingerprint of a code upload.
    Code,
}

/// The per-item codes of a cancelled transaction, or `None` if the call failed otherwise.
pub(in crate::adapters::dynamo) fn cancellation_codes(e: &SdkError<TransactWriteItemsError>) -> Option<Vec<String>> {
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

pub(super) fn is_conflict(e: &SdkError<TransactWriteItemsError>) -> bool {
    match e {
        SdkError::ServiceError(se) => {
            use aws_sdk_dynamodb::error::ProvideErrorMetadata;
            matches!(se.err().code(), Some("TransactionConflictException" | "TransactionInProgressException"))
        }
        _ => false,
    }
}

/// How a cancelled transaction failed, in the order that decides the answer.
pub(in crate::adapters::dynamo) enum Cancel {
    Conflict,
    Failed(Vec<Role>),
    Unexplained,
}

pub(in crate::adapters::dynamo) fn classify(codes: &[String], roles: &[Role]) -> Cancel {
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

/// `expr` with the cause's three attributes set too, and their values and names.
pub(in crate::adapters::dynamo) fn stamped(
    expr: &str,
    vals: &mut Item,
    cause: &Cause,
) -> (String, HashMap<String, String>) {
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
pub(in crate::adapters::dynamo) fn cause_values(cause: &Cause) -> [(&'static str, AttributeValue); 3] {
    [("ref", s(cause.reference.clone())), ("actor", s(cause.actor.clone())), ("why", s(cause.why.clone()))]
}

/// An update that also stamps `cause` on the item.
pub(in crate::adapters::dynamo) fn update_stamped(
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
pub(super) fn action_item(table: &str, r: &Reservation, a: &Action, now_s: i64) -> anyhow::Result<TransactWriteItem> {
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
        // an expired code is never handed out (docs/code-pools.md, "Expiry")
        Op::TakeCode => update(
            table,
            pk,
            "SET o = :o",
            Some(
                "attribute_exists(pk) AND attribute_not_exists(o) AND attribute_not_exists(ret) \
                 AND (attribute_not_exists(xat) OR xat > :nowms)",
            ),
            values([(":o", s(r.id.as_str())), (":nowms", n(now_s * 1000))]),
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
        Op::Backlog(b) => backlog_item(table, pk, r, b),
        Op::Open => open_switch_check(table, pk),
    }
}

/// The sales switch absent (never set) or OPEN: a `ConditionCheck`, nothing written; a closed
/// switch cancels the freeze (docs/operations.md, "Sales switch").
fn open_switch_check(table: &str, pk: String) -> anyhow::Result<TransactWriteItem> {
    let check = aws_sdk_dynamodb::types::ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(key(pk)))
        .condition_expression("attribute_not_exists(pk) OR #m = :open")
        .expression_attribute_names("#m", "mode")
        .expression_attribute_values(":open", s(crate::domain::sale::SalesMode::Open.as_str()))
        .build()?;
    Ok(TransactWriteItem::builder().condition_check(check).build())
}

/// A backorder's change of its SKU's backlog item: the counters added, the order listed as
/// waiting or taken off the list (docs/inventory-models.md, "Backorders").
fn backlog_item(
    table: &str,
    pk: String,
    r: &Reservation,
    b: &crate::domain::backorder::BacklogStep,
) -> anyhow::Result<TransactWriteItem> {
    let mut vals = values([(":o", n(b.ordered)), (":f", n(b.filled)), (":c", n(b.cancelled))]);
    let listed = match b.list {
        Some(add) => {
            vals.insert(":id".into(), AttributeValue::Ss(vec![r.id.as_str().to_owned()]));
            if add {
                ", q :id"
            } else {
                " DELETE q :id"
            }
        }
        None => "",
    };
    update(table, pk, &format!("ADD bo :o, bf :f, bc :c{listed}"), None, vals)
}

pub(in crate::adapters::dynamo) fn update(
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
pub(in crate::adapters::dynamo) fn versioned_put(
    table: &str,
    item: Item,
    expected_version: u64,
) -> anyhow::Result<TransactWriteItem> {
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
pub(super) fn move_rejection(codes: Option<Vec<String>>) -> MoveRejection {
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
pub(super) fn adjustment_items(t: &str, adj: &Adjustment) -> anyhow::Result<(Vec<TransactWriteItem>, Vec<Role>)> {
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

pub(in crate::adapters::dynamo) fn put(table: &str, item: Item, cond: &str) -> anyhow::Result<TransactWriteItem> {
    let p = Put::builder().table_name(table).set_item(Some(item)).condition_expression(cond).build()?;
    Ok(TransactWriteItem::builder().put(p).build())
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
