//! reservation-check: the delayed, fenced orphan check sent at every freeze (docs/architecture.md, "Orphan check"),
//! and the backorder checkouts recorded during a store outage (docs/inventory-models.md).

use super::sqs::{each, parse_message, ConsumerFaults, Handled};
use crate::app::App;
use crate::domain::ReservationId;
use crate::faults;
use crate::ports::Message;
use crate::service::checks;
use crate::service::orders::recorded;
use crate::telemetry::names;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

pub async fn handle(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    each(
        &app.function,
        ev,
        super::sqs::batch_budget(app),
        || ConsumerFaults {
            drop: crate::fault!(app.faults, faults::RESERVATION_CHECK_DROP),
            crash: crate::fault!(app.faults, faults::RESERVATION_CHECK_CRASH)
                .then_some(faults::RESERVATION_CHECK_CRASH),
            fail: false,
        },
        |m| async move {
            match parse_message(&m).inspect_err(|_| app.count(names::REJECTED_MESSAGES, 1))? {
                Message::ReservationCheck { reservation_id, kind, due_at, .. } => {
                    let id = ReservationId::from_stored(&reservation_id)?;
                    let outcome = checks::reservation_check(app, &id, kind, due_at).await?;
                    tracing::info!(reservation = %id, ?outcome, "reservation check handled");
                }
                // a backorder checkout recorded during a store outage (docs/inventory-models.md)
                Message::RecordedCheckout { user, key, lines, details, recorded_at, attempt, .. } => {
                    let outcome = recorded::complete(app, &user, &key, &lines, &details, recorded_at, attempt).await?;
                    tracing::info!(attempt, ?outcome, "recorded checkout handled");
                }
                _ => {
                    app.count(names::REJECTED_MESSAGES, 1);
                    anyhow::bail!("rejected message: not a reservation check or a recorded checkout");
                }
            }
            Ok(Handled::Done)
        },
    )
    .await
}
