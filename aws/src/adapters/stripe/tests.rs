//! Tests of the Stripe adapter: its request forms and the translation of Stripe's answers.

use super::*;
use crate::domain::OrderId;

#[test]
fn the_form_is_what_stripe_takes() {
    let r = RefundRequest {
        refund_id: "rf-1".into(),
        payment_id: "pi_1".into(),
        order_id: OrderId::parse("o1").unwrap(),
        amount: 500,
        currency: "EUR".into(),
    };
    let f = form(&r);
    assert_eq!(
        f,
        vec![
            ("payment_intent", "pi_1".to_owned()),
            ("amount", "500".to_owned()),
            ("metadata[refund_id]", "rf-1".to_owned()),
            ("metadata[order_id]", "o1".to_owned()),
        ]
    );
}

#[test]
fn answers_are_translated() {
    let ok = interpret(200, r#"{"id":"re_1","object":"refund","status":"succeeded","amount":5}"#).unwrap();
    assert_eq!(ok, Ok(ProviderRefund { provider_refund_id: "re_1".into(), succeeded: true }));
    let pending = interpret(200, r#"{"id":"re_2","status":"pending"}"#).unwrap().unwrap();
    assert!(!pending.succeeded);
    assert!(interpret(200, r#"{"id":"re_3","status":"failed","failure_reason":"expired_or_canceled_card"}"#)
        .unwrap()
        .unwrap_err()
        .contains("expired_or_canceled_card"));
    let refused = interpret(
        400,
        r#"{"error":{"type":"invalid_request_error","code":"charge_already_refunded","message":"already refunded"}}"#,
    )
    .unwrap()
    .unwrap_err();
    assert!(refused.contains("charge_already_refunded") && refused.contains("already refunded"), "{refused}");
    assert!(interpret(401, "not json").unwrap().is_err());
    for s in [409, 429, 500, 502, 503] {
        assert!(interpret(s, r#"{"error":{"message":"later"}}"#).is_err(), "{s} is retryable");
    }
    assert!(interpret(200, "<html>").is_err(), "an unreadable 200 is retried, not taken as a refund");
}

#[test]
fn the_payment_intent_form_is_what_stripe_takes() {
    let r = PaymentRequest {
        attempt_key: "pay_o1_1".into(),
        order_id: OrderId::parse("o1").unwrap(),
        amount: 1234,
        currency: "EUR".into(),
    };
    assert_eq!(
        payment_form(&r),
        vec![
            ("amount", "1234".to_owned()),
            ("currency", "eur".to_owned()),
            ("automatic_payment_methods[enabled]", "true".to_owned()),
            ("metadata[order_id]", "o1".to_owned()),
            ("metadata[attempt_key]", "pay_o1_1".to_owned()),
        ]
    );
}

#[test]
fn every_payment_intent_status_maps_and_an_unknown_one_is_an_error() {
    use PaymentState::*;
    for (s, want) in [
        ("requires_payment_method", Open),
        ("requires_confirmation", Open),
        ("requires_action", Open),
        ("processing", Processing),
        ("requires_capture", Processing),
        ("succeeded", Succeeded),
        ("canceled", Cancelled),
    ] {
        assert_eq!(intent_state(s), Some(want), "{s}");
    }
    assert_eq!(intent_state("cancelled"), None);
    let pi = |status: &str| {
        format!(
            r#"{{"id":"pi_1","object":"payment_intent","amount":1000,"amount_received":{},"currency":"eur",
                   "status":"{status}","client_secret":"pi_1_secret_x","metadata":{{"order_id":"o1"}},"extra":{{"x":1}}}}"#,
            if status == "succeeded" { 1000 } else { 0 }
        )
    };
    let p = interpret_intent(200, &pi("succeeded")).unwrap().unwrap();
    assert_eq!(
        p,
        ProviderPayment {
            payment_id: "pi_1".into(),
            order_id: Some("o1".into()),
            amount: 1000,
            currency: "EUR".into(),
            state: Succeeded
        }
    );
    assert_eq!(interpret_intent(200, &pi("requires_action")).unwrap().unwrap().state, Open);
    assert!(interpret_intent(200, &pi("on_hold")).is_err(), "an unknown status is not guessed");
    let created = interpret_created(200, &pi("requires_payment_method")).unwrap().unwrap();
    assert_eq!(created.payment_id, "pi_1");
    assert_eq!(created.client_secret.as_deref(), Some("pi_1_secret_x"));
    assert_eq!(created.redirect_url, None);
}

#[test]
fn missing_objects_are_none_and_other_errors_are_not() {
    let missing = r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_x'"}}"#;
    assert_eq!(interpret_intent(404, missing).unwrap(), None);
    assert_eq!(interpret_refund_state(404, missing).unwrap(), None);
    let unrouted = r#"{"error":{"type":"invalid_request_error","message":"Unrecognized request URL (GET: /v2/x)"}}"#;
    assert!(interpret_intent(404, unrouted).is_err(), "a wrong URL is not an unknown payment");
    assert!(interpret_intent(401, r#"{"error":{"message":"Invalid API Key provided"}}"#).is_err());
    assert!(interpret_intent(503, "").is_err());
    // create: 400 is Stripe refusing; 429/5xx retryable
    let small = r#"{"error":{"type":"invalid_request_error","code":"amount_too_small","message":"too small"}}"#;
    assert!(interpret_created(400, small).unwrap().unwrap_err().contains("amount_too_small"));
    assert!(interpret_created(429, "{}").is_err());
    assert!(interpret_created(409, "{}").is_err(), "a request with this key in flight: retry");
}

#[test]
fn a_cancel_refused_for_its_state_reads_the_intent() {
    let unexpected = r#"{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state",
            "message":"You cannot cancel this PaymentIntent because it has a status of succeeded."}}"#;
    assert_eq!(interpret_cancel(400, unexpected).unwrap(), CancelAnswer::ReadIt);
    let canceled = r#"{"id":"pi_2","amount":5,"currency":"usd","status":"canceled","metadata":{}}"#;
    let CancelAnswer::Stands(Some(p)) = interpret_cancel(200, canceled).unwrap() else { panic!() };
    assert_eq!((p.state, p.order_id, p.currency.as_str()), (PaymentState::Cancelled, None, "USD"));
    let missing = r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such"}}"#;
    assert_eq!(interpret_cancel(404, missing).unwrap(), CancelAnswer::Stands(None));
    assert!(interpret_cancel(400, r#"{"error":{"code":"parameter_invalid_empty"}}"#).is_err());
}

#[test]
fn refund_states_map() {
    let r = |status: &str| {
        format!(
            r#"{{"id":"re_1","object":"refund","amount":300,"currency":"eur","status":"{status}","payment_intent":"pi_1",
                   "charge":"ch_1","metadata":{{"refund_id":"rf_1","order_id":"o1"}}}}"#
        )
    };
    let s = interpret_refund_state(200, &r("succeeded")).unwrap().unwrap();
    assert_eq!(
        s,
        ProviderRefundState {
            provider_refund_id: "re_1".into(),
            refund_id: Some("rf_1".into()),
            payment_id: "pi_1".into(),
            amount: 300,
            currency: "EUR".into(),
            succeeded: Some(true),
        }
    );
    for (status, want) in
        [("pending", None), ("requires_action", None), ("failed", Some(false)), ("canceled", Some(false))]
    {
        assert_eq!(interpret_refund_state(200, &r(status)).unwrap().unwrap().succeeded, want, "{status}");
    }
}

#[test]
fn a_day_is_its_utc_seconds() {
    assert_eq!(day_bounds("1970-01-02").unwrap(), (86_400, 172_800));
    assert_eq!(day_bounds("2026-12-03").unwrap().0, 1_796_256_000);
    for bad in ["2026-13-01", "2026-1-1", "", "2026-12-03T00:00:00Z"] {
        assert!(day_bounds(bad).is_err(), "{bad}");
    }
}

#[test]
fn captures_come_from_charge_balance_transactions_with_their_expanded_charge() {
    let page = r#"{"object":"list","url":"/v1/balance_transactions","has_more":true,"data":[
          {"id":"txn_1","object":"balance_transaction","type":"charge","amount":950,"currency":"usd","created":1,
           "source":{"id":"ch_1","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur",
                     "payment_intent":"pi_1","metadata":{"order_id":"o1"},"status":"succeeded"}},
          {"id":"txn_2","object":"balance_transaction","type":"refund","amount":-100,"currency":"usd",
           "source":{"id":"re_1","object":"refund"}},
          {"id":"txn_3","object":"balance_transaction","type":"payment","amount":70,"currency":"eur",
           "source":{"id":"py_3","object":"charge","amount":70,"currency":"eur","payment_intent":null,"metadata":{}}},
          {"id":"txn_4","object":"balance_transaction","type":"payout","amount":-5000,"currency":"eur","source":"po_1"}
        ]}"#;
    let (caps, next) = balance_page(200, page).unwrap();
    assert_eq!(next.as_deref(), Some("txn_4"), "the cursor is the last object of the page, kept or not");
    assert_eq!(
        caps,
        vec![
            ProviderPayment {
                payment_id: "pi_1".into(),
                order_id: Some("o1".into()),
                amount: 1000,
                currency: "EUR".into(),
                state: PaymentState::Succeeded,
            },
            ProviderPayment {
                payment_id: "py_3".into(),
                order_id: None,
                amount: 70,
                currency: "EUR".into(),
                state: PaymentState::Succeeded,
            },
        ],
        "presentment amount and currency from the charge, not the settlement ones"
    );
    let unexpanded = r#"{"object":"list","has_more":false,"data":[{"id":"txn_1","type":"charge","source":"ch_1"}]}"#;
    assert!(balance_page(200, unexpanded).is_err());
    let (none, next) = balance_page(200, r#"{"object":"list","has_more":false,"data":[]}"#).unwrap();
    assert!(none.is_empty() && next.is_none());
    assert!(balance_page(500, "{}").is_err());
}

#[test]
fn listed_refunds_leave_out_failed_ones() {
    let page = r#"{"object":"list","url":"/v1/refunds","has_more":false,"data":[
          {"id":"re_1","amount":1,"currency":"eur","status":"succeeded","payment_intent":"pi_1","metadata":{}},
          {"id":"re_2","amount":2,"currency":"eur","status":"failed","payment_intent":"pi_2","metadata":{}},
          {"id":"re_3","amount":3,"currency":"eur","status":"pending","payment_intent":null,"charge":"ch_3","metadata":{"refund_id":"rf_3"}}
        ]}"#;
    let (rs, next) = refunds_page(200, page).unwrap();
    assert_eq!(next, None);
    assert_eq!(rs.iter().map(|r| r.provider_refund_id.as_str()).collect::<Vec<_>>(), ["re_1", "re_3"]);
    assert_eq!(rs[1].payment_id, "ch_3");
    assert_eq!(rs[1].refund_id.as_deref(), Some("rf_3"));
}
