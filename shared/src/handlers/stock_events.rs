//! stock-events: applies order events to stock (docs/architecture.md, "Events and self-healing"). OrderPaid → confirm;
//! OrderCancelled / OrderExpired / OrderFailed → release (a SUPPLIER order's bookings are the
//! refunds consumer's, docs/suppliers.md); OrderRefunding / OrderRefunded / OrderReturned (with
//! restock) → restock (docs/after-sale.md, "Restock"). Every step is conditional on the lock's status, so
//! duplicates and any order of arrival are harmless. A message that is not exactly a Holdfast
//! event of a known schema is refused (retried into the DLQ), never applied.

use super::sqs::{each, ConsumerFaults, Handled};
use crate::app::App;
use crate::domain::events::{EventDetail, EventKind, SCHEMA_VERSION, SOURCE};
use crate::domain::order::OrderRecord;
use crate::domain::{OrderId, ReservationId};
use crate::faults;
use crate::service::stock::{self, LockChange, LockError, OnReleased};
use crate::telemetry::names;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use serde::Deserialize;

/// The EventBridge envelope as delivered to an SQS target.
#[derive(Debug, Deserialize)]
struct Envelope {
    source: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    detail: EventDetail,
}

/// The stock action an event asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockAction {
    Confirm(ReservationId),
    Release(ReservationId),
    Restock(ReservationId),
}

/// A Holdfast event as delivered to an SQS target: its kind (`None`: unknown detail-type) and
/// detail, checked for source and schema.
pub(crate) fn parse_envelope(body: &str) -> anyhow::Result<(Option<EventKind>, EventDetail, String)> {
    let env: Envelope = serde_json::from_str(body).map_err(|e| anyhow::anyhow!("rejected event: {e}"))?;
    if env.source != SOURCE {
        anyhow::bail!("rejected event: source {}", env.source);
    }
    if env.detail.schema != SCHEMA_VERSION {
        anyhow::bail!("rejected event: schema {}", env.detail.schema);
    }
    Ok((EventKind::parse(&env.detail_type), env.detail, env.detail_type))
}

pub fn parse_event(body: &str) -> anyhow::Result<StockAction> {
    let (kind, detail, detail_type) = parse_envelope(body)?;
    let id = ReservationId::for_order(&OrderId::parse(&detail.order_id)?);
    match kind {
        Some(EventKind::OrderPaid) => Ok(StockAction::Confirm(id)),
        Some(EventKind::OrderCancelled | EventKind::OrderExpired | EventKind::OrderFailed) => {
            Ok(StockAction::Release(id))
        }
        Some(EventKind::OrderRefunding | EventKind::OrderRefunded) => Ok(StockAction::Restock(id)),
        Some(EventKind::OrderReturned) if detail.restock == Some(true) => Ok(StockAction::Restock(id)),
        _ => anyhow::bail!("rejected event: detail-type {detail_type}"),
    }
}

/// The order's own record must agree with the event before stock moves (security review V4):
/// a principal that can put events on the bus or send to the queue cannot release a pending
/// order's stock or sell an unpaid one. The stream publishes after the order write, so a
/// consistent read sees at least the state the event announces. A disagreeing event is
/// refused: it goes to the DLQ, whose alarm a person acts on.
async fn cross_check(app: &App, action: &StockAction) -> anyhow::Result<()> {
    let id = match action {
        StockAction::Confirm(id) | StockAction::Release(id) | StockAction::Restock(id) => id,
    };
    let Some(order_id) = id.order_id() else { anyhow::bail!("rejected event: {id} is not an order's reservation") };
    let agrees = match (app.orders.get(&order_id).await?, action) {
        (Some(OrderRecord::Order(o)), StockAction::Confirm(_)) => o.status.is_paid_or_later(),
        (Some(OrderRecord::Order(o)), StockAction::Release(_)) => o.status.is_closed_unpaid(),
        (Some(OrderRecord::Order(o)), StockAction::Restock(_)) => o.restocks(),
        (Some(OrderRecord::Void), StockAction::Release(_)) => true,
        _ => false,
    };
    if !agrees {
        app.count(names::REJECTED_MESSAGES, 1);
        tracing::error!(order_id = %order_id, ?action, "event disagrees with the order's status; refused");
        anyhow::bail!("rejected event: order {order_id} does not say {action:?}");
    }
    Ok(())
}

pub async fn handle(app: &App, ev: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    each(
        &app.function,
        ev,
        super::sqs::batch_budget(app),
        || ConsumerFaults {
            drop: crate::fault!(app.faults, faults::STOCK_EVENTS_DROP),
            crash: crate::fault!(app.faults, faults::STOCK_EVENTS_CRASH).then_some(faults::STOCK_EVENTS_CRASH),
            fail: crate::fault!(app.faults, faults::STOCK_EVENTS_FAIL),
        },
        |m| async move {
            let correlation =
                parse_envelope(m.body.as_deref().unwrap_or("")).ok().and_then(|(_, d, _)| d.correlation_id);
            crate::telemetry::correlated(&app.function, correlation, apply(app, m)).await
        },
    )
    .await
}

async fn apply(app: &App, m: aws_lambda_events::sqs::SqsMessage) -> anyhow::Result<Handled> {
    {
        let action =
            parse_event(m.body.as_deref().unwrap_or("")).inspect_err(|_| app.count(names::REJECTED_MESSAGES, 1))?;
        cross_check(app, &action).await?;
        tracing::info!(?action, "order event applied to stock");
        let (id, result) = match &action {
            StockAction::Confirm(id) if crate::mutant!("paid-event-releases") => (id, stock::release(app, id).await),
            StockAction::Confirm(id) => (id, stock::confirm(app, id, OnReleased::Retake).await),
            StockAction::Release(id) => (id, stock::release(app, id).await),
            // A paid order's lock is SOLD before the after-sale events can exist (the order
            // was PAID first); a restock that finds it FROZEN waits for the confirm (retried).
            StockAction::Restock(id) => (id, stock::restock(app, id).await),
        };
        match result {
            Ok(LockChange::Moved(r) | LockChange::Retaken(r)) if matches!(action, StockAction::Confirm(_)) => {
                codes_ready(app, &r).await;
                Ok(Handled::Done)
            }
            Ok(LockChange::Moved(_) | LockChange::Unchanged(_) | LockChange::Retaken(_) | LockChange::Oversold(_)) => {
                Ok(Handled::Done)
            }
            Err(LockError::InvalidTransition(st)) => {
                // The lock already went the other way; the order's own history decides, not a
                // late message. Recorded, acknowledged.
                tracing::warn!(reservation = %id, status = st.as_str(), ?action, "event conflicts with the lock; ignored");
                Ok(Handled::Done)
            }
            Err(LockError::NotFound) => {
                app.count(names::REJECTED_MESSAGES, 1);
                anyhow::bail!("rejected event: no reservation {id}")
            }
            Err(LockError::Store(e)) => Err(e),
        }
    }
}

/// A code pool order's lock just sold: its codes can be read now. `CodesReady` on the bus tells
/// push-api (docs/push.md, "Which events"); best effort, like `LowStock`: a lost one only means
/// the buyer is not pushed `codes_ready` and reads the codes when they look.
async fn codes_ready(app: &App, lock: &crate::domain::reservation::Reservation) {
    let (Some(order), Some(user)) = (lock.id.order_id(), lock.user.as_ref()) else { return };
    if !lock.lines.iter().any(|l| l.holds_codes()) {
        return;
    }
    let detail = serde_json::json!({"order_id": order.to_string(), "user_id": user.to_string()});
    match app.bus.publish_stock("CodesReady", &detail).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(order_id = %order, "CodesReady refused by the bus"),
        Err(e) => tracing::warn!(order_id = %order, error = format!("{e:#}"), "CodesReady not sent"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(detail_type: &str, detail: serde_json::Value) -> String {
        json!({"version":"0","id":"1","detail-type":detail_type,"source":"holdfast.orders","account":"1","time":"t","region":"r","resources":[],"detail":detail}).to_string()
    }

    fn detail() -> serde_json::Value {
        json!({"schema":1,"order_id":"o1","user_id":"u","status":"PAID","version":2,"amount":1,"currency":"EUR","lines":[{"sku":"s","quantity":1}]})
    }

    #[test]
    fn paid_confirms_and_closed_releases() {
        let id = ReservationId::for_order(&OrderId::parse("o1").unwrap());
        assert_eq!(parse_event(&envelope("OrderPaid", detail())).unwrap(), StockAction::Confirm(id.clone()));
        assert_eq!(parse_event(&envelope("OrderExpired", detail())).unwrap(), StockAction::Release(id.clone()));
        assert_eq!(parse_event(&envelope("OrderCancelled", detail())).unwrap(), StockAction::Release(id.clone()));
        assert_eq!(parse_event(&envelope("OrderFailed", detail())).unwrap(), StockAction::Release(id.clone()));
        assert_eq!(parse_event(&envelope("OrderRefunding", detail())).unwrap(), StockAction::Restock(id.clone()));
        let mut restock = detail();
        restock["restock"] = json!(true);
        assert_eq!(parse_event(&envelope("OrderReturned", restock)).unwrap(), StockAction::Restock(id));
        let mut write_off = detail();
        write_off["restock"] = json!(false);
        assert!(parse_event(&envelope("OrderReturned", write_off)).is_err(), "a write-off moves no stock");
    }

    #[test]
    fn forged_or_unknown_events_are_rejected() {
        let mut extra = detail();
        extra["admin"] = json!(true);
        let mut v2 = detail();
        v2["schema"] = json!(2);
        let mut bad_id = detail();
        bad_id["order_id"] = json!("../x");
        for body in [
            envelope("OrderPaid", extra),
            envelope("OrderPaid", v2),
            envelope("OrderPaid", bad_id),
            envelope("OrderCreated", detail()),
            envelope("Whatever", detail()),
            envelope("OrderPaid", detail()).replace("holdfast.orders", "evil"),
            "not json".into(),
        ] {
            assert!(parse_event(&body).is_err(), "{body}");
        }
    }
}
