//! Parsing shared by the HTTP handlers, and the mapping of use-case errors to problems.

use crate::domain::reservation::MAX_LINES;
use crate::domain::{CampaignId, Quantity, Sku};
use crate::http::{only_fields, Problem};
use crate::service::stock::{FreezeError, LineRequest};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `items: [{"sku","quantity","campaign_id"?}]` → lines merged by SKU, sorted, 1..=MAX_LINES of
/// them. One SKU is bought under one campaign (or none) per order: its lines write the same
/// shard items, which one transaction may not touch twice.
pub fn parse_items(body: &Map<String, Value>) -> Result<Vec<LineRequest>, Problem> {
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
    let mut merged: BTreeMap<Sku, (Quantity, Option<CampaignId>)> = BTreeMap::new();
    for (i, it) in items.iter().enumerate() {
        let Value::Object(line) = it else {
            return Err(Problem::validation(format!("items[{i}] must be an object")));
        };
        only_fields(line, &["sku", "quantity", "campaign_id"])?;
        let sku = match line.get("sku") {
            Some(Value::String(s)) => Sku::parse(s).map_err(|e| Problem::validation(format!("items[{i}].{e}")))?,
            _ => return Err(Problem::validation(format!("items[{i}].sku must be a string"))),
        };
        let q = line
            .get("quantity")
            .ok_or_else(|| Problem::validation(format!("items[{i}].quantity is required")))
            .and_then(|v| Quantity::from_json(v).map_err(|e| Problem::validation(format!("items[{i}].{e}"))))?;
        let campaign = match line.get("campaign_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(CampaignId::parse(c).map_err(|e| {
                Problem::validation(format!("items[{i}].{e}")).with("field", format!("items[{i}].campaign_id"))
            })?),
            Some(_) => return Err(Problem::validation(format!("items[{i}].campaign_id must be a string"))),
        };
        let total = match merged.get(&sku) {
            Some((_, c)) if *c != campaign => {
                return Err(Problem::validation(format!(
                    "{sku} appears under two campaigns (or with and without one); order it once"
                ))
                .with("field", format!("items[{i}].campaign_id")))
            }
            Some((prev, _)) => prev.checked_add(q).map_err(|e| Problem::validation(format!("{sku}: {e}")))?,
            None => q,
        };
        merged.insert(sku, (total, campaign));
    }
    if merged.len() > MAX_LINES {
        return Err(Problem::validation(format!("at most {MAX_LINES} distinct SKUs per order")).with("field", "items"));
    }
    Ok(merged.into_iter().map(|(sku, (quantity, campaign))| LineRequest { sku, quantity, campaign }).collect())
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
        FreezeError::UnknownCampaign(c) => {
            Problem::new(422, "unknown_campaign", "Unknown campaign", format!("no campaign {c}"))
                .with("campaign_id", c.as_str())
        }
        FreezeError::NotInCampaign(s, c) => {
            Problem::new(422, "not_in_campaign", "SKU not in campaign", format!("campaign {c} does not sell {s}"))
                .with("sku", s.as_str())
                .with("campaign_id", c.as_str())
        }
        FreezeError::QuotaExhausted(s) => Problem::new(
            409,
            "campaign_quota_exhausted",
            "Campaign quota exhausted",
            format!("the campaign has no more {s} to sell"),
        )
        .with("sku", s.as_str()),
        FreezeError::SaleNotStarted(s) => {
            Problem::new(409, "sale_not_started", "Sale not started", format!("the sale of {s} has not started"))
                .with("sku", s.as_str())
        }
        FreezeError::SaleEnded(s) => {
            Problem::new(409, "sale_ended", "Sale ended", format!("the sale of {s} has ended")).with("sku", s.as_str())
        }
        FreezeError::SalePaused(s) => {
            Problem::new(409, "sale_paused", "Sale paused", format!("the sale of {s} is paused"))
                .with("sku", s.as_str())
        }
        FreezeError::TooManyPending => Problem::new(
            409,
            "too_many_pending_orders",
            "Too many pending orders",
            "you have the most unpaid checkouts allowed; pay or cancel one first",
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
        assert_eq!(l.iter().map(|l| (l.sku.as_str(), l.quantity.get())).collect::<Vec<_>>(), vec![("A", 2), ("B", 4)]);
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
            json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": "c b"}]}),
            json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": 3}]}),
            json!({"items": [{"sku": "A", "quantity": 1, "campaign_id": "c"}, {"sku": "A", "quantity": 1}]}),
        ] {
            assert_eq!(parse_items(&body(b.clone())).unwrap_err().status, 422, "{b}");
        }
        let many: Vec<Value> = (0..21).map(|i| json!({"sku": format!("S{i}"), "quantity": 1})).collect();
        assert!(parse_items(&body(json!({ "items": many }))).is_err());
    }
}
