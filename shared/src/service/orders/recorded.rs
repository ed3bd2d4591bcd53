//! Backorder checkouts accepted while the store is out of reach (docs/inventory-models.md,
//! "Accepted during a store outage"). A checkout whose every line is of a kind that may be sold
//! short ([`Rules::recorded_on_outage`](crate::domain::kind::Rules)) and whose freeze could not
//! reach the store is recorded on the reservation-check queue (SQS, which the store's outage
//! does not reach) and answered 202 `RECORDED`; the queue's consumer runs the same checkout once
//! the store answers, under the same order id, so a retry of the buyer's, a second recording and
//! the consumer all end in one order. Nothing is claimed that was not recorded: if the message
//! cannot be sent either, the checkout is 503 as before.

use super::*;
use crate::domain::kind::Kind;
use crate::domain::Quantity;
use crate::ports::{RecordedLine, SkuMeta};
use std::collections::HashMap;

/// What a checkout does when its freeze cannot reach the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOutage {
    /// The front door: record a checkout that may be recorded (202).
    Record,
    /// The consumer of a recorded checkout: fail, so the recording is tried again later.
    Fail,
}

/// A checkout recorded during an outage: not an order yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub order_id: OrderId,
    /// Each line with its unit price as the (cached) metadata said when it was recorded; the
    /// order is priced by its freeze when it is written.
    pub lines: Vec<(Sku, Quantity, u64)>,
    pub amount: u64,
    pub details: OrderDetails,
    pub currency: Currency,
    pub recorded_at: i64,
}

/// A recorded checkout is given up after a day of failed attempts: its message then fails
/// until SQS moves it to the reservation-check DLQ, whose alarm calls a person
/// (docs/runbook.md, "DLQ alarms").
pub const RECORDED_HORIZON_S: i64 = 24 * 3600;

/// The delay before attempt `attempt` + 1 of a recorded checkout: 2, 4, … 60 s.
pub fn retry_delay(attempt: u32) -> u32 {
    2u32.saturating_pow(attempt.min(6)).min(60)
}

/// Whether a checkout of `lines` may be recorded: every line's kind says so (no campaign, no
/// dates: a recordable kind has neither).
fn recordable(lines: &[LineRequest], metas: &HashMap<Sku, SkuMeta>) -> bool {
    !lines.is_empty()
        && lines.iter().all(|l| {
            l.campaign.is_none()
                && l.dates.is_empty()
                && metas.get(&l.sku).is_some_and(|m| Kind::of(&m.model).rules().recorded_on_outage)
        })
}

/// The freeze's answer, unless it is an outage the checkout may be recorded through: then the
/// checkout is recorded and `Err(CreateError::Recorded)` answers it. A throttle is not an
/// outage (429, retried a moment later); nor is any refusal.
pub(super) async fn or_record(
    app: &App,
    on: OnOutage,
    key: &IdempotencyKey,
    req: &FreezeRequest,
    details: &OrderDetails,
    metas: &HashMap<Sku, SkuMeta>,
    frozen: Result<Frozen, FreezeError>,
) -> Result<Result<Frozen, FreezeError>, CreateError> {
    let Err(FreezeError::Store(e)) = &frozen else { return Ok(frozen) };
    let Some(user) = req.user.as_ref() else { return Ok(frozen) };
    if on != OnOutage::Record || crate::ports::is_throttled(e) || !recordable(&req.lines, metas) {
        return Ok(frozen);
    }
    let recorded_at = clock::now_s();
    let msg = message(user, key, &req.lines, details, recorded_at, 1);
    let id = OrderId::derive(user, key);
    if let Err(send) = app.messages.send(&msg, 0).await {
        tracing::error!(order_id = %id, error = format!("{send:#}"), "store out of reach and the checkout not recorded");
        return Ok(frozen);
    }
    tracing::warn!(order_id = %id, error = format!("{e:#}"), "store out of reach: checkout recorded");
    app.count(names::CHECKOUTS_RECORDED, 1);
    let lines: Vec<_> = req.lines.iter().map(|l| (l.sku.clone(), l.quantity, metas[&l.sku].price)).collect();
    let amount = lines.iter().map(|(_, q, p)| p.saturating_mul(u64::from(q.get()))).fold(0u64, u64::saturating_add);
    let currency = single_currency(metas.values().map(|m| &m.currency))?;
    Err(CreateError::Recorded(Box::new(Recorded {
        order_id: id,
        lines,
        amount,
        details: details.clone(),
        currency,
        recorded_at,
    })))
}

/// The recording of a checkout (attempt `attempt`).
fn message(
    user: &UserId,
    key: &IdempotencyKey,
    lines: &[LineRequest],
    details: &OrderDetails,
    recorded_at: i64,
    attempt: u32,
) -> Message {
    Message::RecordedCheckout {
        schema: 1,
        user: user.to_string(),
        key: key.as_str().to_owned(),
        lines: lines.iter().map(|l| RecordedLine { sku: l.sku.to_string(), quantity: l.quantity.get() }).collect(),
        details: details.clone(),
        recorded_at,
        attempt,
    }
}

/// What the consumer did with one recorded checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedOutcome {
    /// Written as an order (or found written: a retry of the buyer's, or a second recording).
    Written { replayed: bool },
    /// The store still does not take it: recorded again, attempt `n`, after a delay.
    Again(u32),
    /// Refused now that the store answers (the SKU was paused or removed meanwhile, a limit, a
    /// key reused with another body): nothing written; counted and logged.
    Refused(String),
}

/// The consumer of [`Message::RecordedCheckout`]: the checkout, run again as the buyer sent it.
pub async fn complete(
    app: &App,
    user: &str,
    key: &str,
    lines: &[RecordedLine],
    details: &OrderDetails,
    recorded_at: i64,
    attempt: u32,
) -> anyhow::Result<RecordedOutcome> {
    let user = UserId::parse(user)?;
    let key = IdempotencyKey::parse(key)?;
    let lines = lines
        .iter()
        .map(|l| Ok(LineRequest::plain(Sku::parse(&l.sku)?, Quantity::new(u64::from(l.quantity))?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let id = OrderId::derive(&user, &key);
    match super::checkout(app, &user, &key, lines.clone(), details, None, OnOutage::Fail).await {
        Ok((_, replayed)) => {
            if !replayed {
                app.count(names::RECORDED_CHECKOUTS_WRITTEN, 1);
                tracing::info!(order_id = %id, attempt, "recorded checkout written");
            }
            Ok(RecordedOutcome::Written { replayed })
        }
        Err(e) if transient(&e) => {
            if clock::now_s() > recorded_at.saturating_add(RECORDED_HORIZON_S) {
                anyhow::bail!("recorded checkout {id} still not written after {RECORDED_HORIZON_S} s: {e:#}");
            }
            let next = attempt.saturating_add(1);
            let msg = message(&user, &key, &lines, details, recorded_at, next);
            app.messages.send(&msg, retry_delay(attempt)).await?;
            tracing::warn!(order_id = %id, attempt, error = format!("{e:#}"), "recorded checkout not written yet");
            Ok(RecordedOutcome::Again(next))
        }
        Err(e) => {
            app.count(names::RECORDED_CHECKOUTS_REFUSED, 1);
            tracing::warn!(order_id = %id, error = %e, "recorded checkout refused");
            Ok(RecordedOutcome::Refused(e.to_string()))
        }
    }
}

/// A failure a later attempt may not meet: the store (or its budget), contention, a rate.
fn transient(e: &CreateError) -> bool {
    matches!(
        e,
        CreateError::Store(_)
            | CreateError::Freeze(FreezeError::Store(_) | FreezeError::Contention)
            | CreateError::RateLimited(..)
            | CreateError::Crash(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_a_minute() {
        let delays: Vec<u32> = (1..=8).map(retry_delay).collect();
        assert_eq!(delays, vec![2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
