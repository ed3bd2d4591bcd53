//! Parsing shared by the HTTP handlers, and the mapping of use-case errors to problems.

use crate::domain::reservation::MAX_LINES;
use crate::domain::{Quantity, Sku};
use crate::http::{only_fields, Problem};
use crate::service::stock::FreezeError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `items: [{"sku","quantity"}]` → lines merged by SKU, sorted, 1..=MAX_LINES of them.
pub fn parse_items(body: &Map<String, Value>) -> Result<Vec<(Sku, Quantity)>, Problem> {
    let items = match body.get("items") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(Problem::validation("items must be an array").with("field", "items")),
        None => return Err(Problem::validation("items is required").with("field", "items")),
    };
    if items.is_empty() {
        return Err(Problem::validation("items must not be empty").with("field", "items"));
    }
    if items.len() > MAX_LINES * 4 {
        return Err(Problem::validation(format!("at most {MAX_LINES} distinct SKUs per order")).with("field", "items"));
    }
    let mut merged: BTreeMap<Sku, Quantity> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let Value::Object(line) = it else {
            return Err(Problem::validation(format!("items[{i}] must be an object")));
        };
        only_fields(line, &["sku", "quantity"])?;
        let sku = match line.get("sku") {
            Some(Value::String(s)) => Sku::parse(s).map_err(|e| Problem::validation(format!("items[{i}].{e}")))?,
            _ => return Err(Problem::validation(format!("items[{i}].sku must be a string"))),
        };
        let q = line
            .get("quantity")
            .ok_or_else(|| Problem::validation(format!("items[{i}].quantity is required")))
            .and_then(|v| Quantity::from_json(v).map_err(|e| Problem::validation(format!("items[{i}].{e}"))))?;
        let total = match merged.get(&sku) {
            Some(prev) => prev.checked_add(q).map_err(|e| Problem::validation(format!("{sku}: {e}")))?,
            None => q,
        };
        merged.insert(sku, total);
    }
    if merged.len() > MAX_LINES {
        return Err(Problem::validation(format!("at most {MAX_LINES} distinct SKUs per order")).with("field", "items"));
    }
    Ok(merged.into_iter().collect())
}

pub fn freeze_problem(e: FreezeError) -> Problem {
    match e {
        FreezeError::UnknownSku(s) => {
            Problem::new(422, "unknown_sku", "Unknown SKU", format!("no SKU {s}")).with("sku", s.as_str())
        }
        FreezeError::Insufficient(s) => {
            Problem::new(409, "insufficient_stock", "Insufficient stock", format!("not enough {s} available"))
                .with("sku", s.as_str())
        }
        FreezeError::LimitExceeded(s) => Problem::new(
            409,
            "purchase_limit_exceeded",
            "Purchase limit exceeded",
            format!("the per-user limit of {s} would be exceeded"),
        )
        .with("sku", s.as_str()),
        FreezeError::RequestMismatch => Problem::new(
            422,
            "idempotency_key_reused",
            "Id reused with another request",
            "this id was already used with a different body",
        ),
        FreezeError::TooFragmented => Problem::new(
            409,
            "stock_too_fragmented",
            "Order too fragmented",
            "these lines need more shard pieces than one transaction allows; order fewer SKUs at once",
        ),
        FreezeError::Contention => Problem::internal("contention on the SKU; retry"),
        FreezeError::Store(e) => Problem::from_store(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn duplicate_skus_are_merged_and_sorted() {
        let l = parse_items(&body(
            json!({"items":[{"sku":"B","quantity":1},{"sku":"A","quantity":2},{"sku":"B","quantity":3}]}),
        ))
        .unwrap();
        assert_eq!(l.iter().map(|(s, q)| (s.as_str(), q.get())).collect::<Vec<_>>(), vec![("A", 2), ("B", 4)]);
    }

    #[test]
    fn bad_items_are_refused_with_a_reason() {
        for b in [
            json!({}),
            json!({"items": []}),
            json!({"items": {}}),
            json!({"items": [1]}),
            json!({"items": [{"sku": "A"}]}),
            json!({"items": [{"sku": "A", "quantity": 0}]}),
            json!({"items": [{"sku": "A", "quantity": -1}]}),
            json!({"items": [{"sku": "A", "quantity": 1.5}]}),
            json!({"items": [{"sku": "A", "quantity": "1"}]}),
            json!({"items": [{"sku": "A", "quantity": 99999999999u64}]}),
            json!({"items": [{"sku": "A b", "quantity": 1}]}),
            json!({"items": [{"sku": 5, "quantity": 1}]}),
            json!({"items": [{"sku": "A", "quantity": 1, "price": 0}]}),
            json!({"items": [{"sku": "A", "quantity": 6000}, {"sku": "A", "quantity": 6000}]}),
        ] {
            assert_eq!(parse_items(&body(b.clone())).unwrap_err().status, 422, "{b}");
        }
        let many: Vec<Value> = (0..21).map(|i| json!({"sku": format!("S{i}"), "quantity": 1})).collect();
        assert!(parse_items(&body(json!({ "items": many }))).is_err());
    }
}
