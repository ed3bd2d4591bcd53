//! Property tests over everything that parses untrusted input: request bodies, path and header
//! values, webhook bodies and queue messages. Whatever the bytes, parsing never panics, and
//! whatever it accepts satisfies the domain's bounds.

use super::payment_callback::parse_notice;
use super::sqs::parse_message;
use super::stock_events::parse_event;
use crate::api::orders::CreateOrderRequest;
use crate::api::reservations::ReservationRequest;
use crate::api::stock::{AdjustmentRequest, PutSkuRequest};
use crate::domain::quantity::MAX_QUANTITY;
use crate::domain::reservation::MAX_LINES;
use crate::domain::{IdempotencyKey, OrderId, Sku, UserId};
use crate::http::{typed_body, Request};
use aws_lambda_events::sqs::SqsMessage;
use proptest::prelude::*;

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<u64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        "\\PC{0,12}".prop_map(serde_json::Value::String),
        prop_oneof![Just("sku"), Just("quantity"), Just("items"), Just("SKU-1")].prop_map(|s| serde_json::json!(s)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("sku".to_owned()),
                    Just("quantity".to_owned()),
                    Just("items".to_owned()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn parse_items(body: &serde_json::Value) -> Result<CreateOrderRequest, crate::http::Problem> {
    crate::api::body::parse(body.to_string().as_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_any_parser(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let req = Request { body: Some(text.clone()), ..Default::default() };
        let _ = typed_body::<CreateOrderRequest>(&req, 16 * 1024);
        let _ = typed_body::<ReservationRequest>(&req, 16 * 1024);
        let _ = typed_body::<PutSkuRequest>(&req, 16 * 1024);
        let _ = typed_body::<AdjustmentRequest>(&req, 16 * 1024);
        let _ = parse_notice(&bytes);
        let _ = parse_event(&text);
        let _ = parse_message(&SqsMessage { body: Some(text.clone()), ..Default::default() });
        for s in [&text[..], text.trim()] {
            let _ = (Sku::parse(s), OrderId::parse(s), UserId::parse(s), IdempotencyKey::parse(s));
        }
    }

    #[test]
    fn accepted_items_are_merged_bounded_and_valid(v in json_value()) {
        let body = serde_json::json!({ "items": v });
        if let Ok(CreateOrderRequest { items: lines, .. }) = parse_items(&body) {
            prop_assert!(!lines.is_empty() && lines.len() <= MAX_LINES);
            let mut skus: Vec<&str> = lines.iter().map(|l| l.sku.as_str()).collect();
            let n = skus.len();
            skus.dedup();
            prop_assert_eq!(skus.len(), n, "merged and sorted");
            for l in &lines {
                prop_assert!(Sku::parse(l.sku.as_str()).is_ok());
                prop_assert!(l.quantity.get() >= 1 && l.quantity.get() <= MAX_QUANTITY);
            }
        }
    }

    #[test]
    fn structured_item_lists_parse_exactly_when_valid(
        lines in prop::collection::vec(("[A-Z]{1,3}", -5i64..20_000), 1..30)
    ) {
        let items: Vec<_> = lines.iter().map(|(s, q)| serde_json::json!({"sku": s, "quantity": q})).collect();
        let body = serde_json::json!({ "items": items });
        let r = parse_items(&body).map(|b| b.items);
        let mut totals = std::collections::BTreeMap::new();
        let mut bad = false;
        for (s, q) in &lines {
            if *q < 1 || *q > i64::from(MAX_QUANTITY) { bad = true; }
            *totals.entry(s.clone()).or_insert(0i64) += q;
        }
        bad |= totals.len() > MAX_LINES || totals.values().any(|t| *t > i64::from(MAX_QUANTITY));
        prop_assert_eq!(r.is_ok(), !bad, "{:?}", r.err());
        if let Ok(parsed) = r {
            let got: Vec<(String, i64)> = parsed.iter().map(|l| (l.sku.to_string(), i64::from(l.quantity.get()))).collect();
            prop_assert_eq!(got, totals.into_iter().collect::<Vec<_>>());
        }
    }
}
