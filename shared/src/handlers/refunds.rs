//! refunds: the one consumer that moves money back (docs/after-sale.md, "Refunds").
//! `RefundRequested` (a refund record written on an order) → issue it at the payment's
//! provider; `OversellDetected` → write the refund record on the paid order (whose write is
//! announced as `RefundRequested` in turn); `SupplierCancelRequested` → cancel a closed SUPPLIER
//! order's bookings at its supplier, once each (docs/suppliers.md, "Compensation"). A failure is retried by the queue, then kept in its
//! DLQ under an alarm; reconcile re-drives records left REQUESTED.

use super::sqs::{each, ConsumerFaults, Handled};
use super::stock_events::parse_envelope;
use crate::app::App;
use crate::domain::events::EventKind;
use crate::domain::OrderId;
use crate::service::refunds::{self, RefundError};
use crate::telemetry::names;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

/// What one event asks of the refunds function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundWork {
    Issue {
        order_id: OrderId,
        refund_id: String,
    },
    Oversold {
        order_id: OrderId,
    },
    /// A closed SUPPLIER order: cancel its bookings at the supplier (docs/suppliers.md).
    SupplierCancel {
        order_id: OrderId,
    },
}

pub fn parse(body: &str) -> anyhow::Result<RefundWork> {
    let (kind, detail, detail_type) = parse_envelope(body)?;
    let order_id = OrderId::parse(&detail.order_id)?;
    match (kind, detail.refund_id) {
        (Some(EventKind::RefundRequested), Some(refund_id)) => Ok(RefundWork::Issue { order_id, refund_id }),
        (Some(EventKind::OversellDetected), _) => Ok(RefundWork::Oversold { order_id }),
        (Some(EventKind::SupplierCancelRequested), _) => Ok(RefundWork::SupplierCancel { order_id }),
        _ => anyhow::bail!("rejected event: detail-type {detail_type} (refund id required for RefundRequested)"),
    }
}

pub async fn handle(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    each(&app.function, ev, super::sqs::batch_budget(app), ConsumerFaults::default, |m| async move {
        let work = parse(m.body.as_deref().unwrap_or("")).inspect_err(|_| app.count(names::REJECTED_MESSAGES, 1))?;
        let result = match &work {
            RefundWork::Issue { order_id, refund_id } => {
                refunds::issue(app, order_id, refund_id).await.map(|o| format!("{o:?}"))
            }
            RefundWork::Oversold { order_id } => {
                refunds::request_for_oversell(app, order_id).await.map(|a| format!("requested={a}"))
            }
            // a failed cancel is retried through the queue (then its DLQ and alarm)
            RefundWork::SupplierCancel { order_id } => {
                let n = crate::service::supplier::compensate(app, order_id).await?;
                Ok(format!("supplier_cancels={n}"))
            }
        };
        match result {
            Ok(outcome) => {
                tracing::info!(?work, outcome, "refund work done");
                Ok(Handled::Done)
            }
            // A forged or stale event names nothing real: refused into the DLQ.
            Err(e @ (RefundError::UnknownOrder | RefundError::UnknownRefund)) => {
                app.count(names::REJECTED_MESSAGES, 1);
                anyhow::bail!("rejected event: {e}")
            }
            Err(e) => Err(anyhow::anyhow!(e)),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(detail_type: &str, extra: serde_json::Value) -> String {
        let mut detail = json!({"schema":1,"order_id":"o1","user_id":"u","status":"EXPIRED","version":2,"amount":1,"currency":"EUR","lines":[]});
        for (k, v) in extra.as_object().unwrap() {
            detail[k] = v.clone();
        }
        json!({"detail-type":detail_type,"source":"holdfast.orders","detail":detail}).to_string()
    }

    #[test]
    fn refund_requests_and_oversells_are_work_and_nothing_else_is() {
        let o1 = OrderId::parse("o1").unwrap();
        assert_eq!(
            parse(&envelope("RefundRequested", json!({"refund_id":"rf_p1","payment_id":"p1"}))).unwrap(),
            RefundWork::Issue { order_id: o1.clone(), refund_id: "rf_p1".into() }
        );
        assert_eq!(parse(&envelope("OversellDetected", json!({}))).unwrap(), RefundWork::Oversold { order_id: o1 });
        assert!(parse(&envelope("RefundRequested", json!({}))).is_err(), "no refund id");
        assert!(parse(&envelope("OrderPaid", json!({}))).is_err());
        assert!(parse(&envelope("RefundRequested", json!({"refund_id":"r","evil":1}))).is_err());
    }
}
