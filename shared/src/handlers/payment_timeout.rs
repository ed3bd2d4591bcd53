//! payment-timeout: the delay-queue consumer that expires unpaid orders (docs/architecture.md, "Payment timeout")
//! and polls SUPPLIER orders' bookings (docs/suppliers.md, "Polling").

use super::sqs::{each, parse_message, ConsumerFaults, Handled};
use crate::app::App;
use crate::domain::OrderId;
use crate::faults;
use crate::ports::Message;
use crate::service::codes::supplier as supplier_codes;
use crate::service::{supplier, timeouts};
use crate::telemetry::names;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

pub async fn handle(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    each(
        &app.function,
        ev,
        super::sqs::batch_budget(app),
        || ConsumerFaults {
            drop: crate::fault!(app.faults, faults::PAYMENT_TIMEOUT_DROP),
            crash: crate::fault!(app.faults, faults::PAYMENT_TIMEOUT_CRASH).then_some(faults::PAYMENT_TIMEOUT_CRASH),
            fail: false,
        },
        |m| async move {
            match parse_message(&m).inspect_err(|_| app.count(names::REJECTED_MESSAGES, 1))? {
                Message::PaymentTimeout { order_id, due_at, .. } => {
                    let id = OrderId::parse(&order_id)?;
                    let outcome = timeouts::payment_timeout(app, &id, due_at).await?;
                    tracing::info!(order_id = %id, ?outcome, "payment timeout handled");
                }
                // SUPPLIER orders' polls ride this queue (docs/suppliers.md, "Polling")
                Message::SupplierPoll { order_id, attempt, started_at, .. } => {
                    let id = OrderId::parse(&order_id)?;
                    let outcome = supplier::poll(app, &id, attempt, started_at).await?;
                    tracing::info!(order_id = %id, attempt, ?outcome, "supplier poll handled");
                }
                // a paid order's supplier codes, and their retries (docs/suppliers.md)
                Message::SupplierIssue { order_id, attempt, .. } => {
                    let id = OrderId::parse(&order_id)?;
                    let outcome = supplier_codes::issue(app, &id, attempt).await?;
                    tracing::info!(order_id = %id, attempt, ?outcome, "supplier code issue handled");
                }
                _ => {
                    app.count(names::REJECTED_MESSAGES, 1);
                    anyhow::bail!("rejected message: not a payment timeout or supplier poll");
                }
            }
            Ok(Handled::Done)
        },
    )
    .await
}
