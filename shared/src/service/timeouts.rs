//! The payment deadline of an order (docs/payments.md, "Never guessing at the deadline"): the
//! payment-timeout message's use case, re-armed until the deadline, then expiring an unpaid order
//! or asking a PAYING order's provider.

use super::orders::expire;
use super::paying::DeadlineOutcome;
use crate::clock;
use crate::context::App;
use crate::domain::order::{OrderRecord, OrderStatus};
use crate::domain::OrderId;
use crate::ports::{Message, MAX_DELAY_SECONDS};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutOutcome {
    Expired,
    ReArmed(u32),
    Ignored,
    /// A PAYING order's provider reported its payment succeeded (docs/payments.md).
    Paid,
}

/// Expires an unpaid order at its deadline; re-arms if the deadline is further than one hop.
pub async fn payment_timeout(app: &App, id: &OrderId, due_at: i64) -> anyhow::Result<TimeoutOutcome> {
    for attempt in 1..=super::CAS_ATTEMPTS {
        let now_ms = clock::now_ms();
        let now = now_ms / 1000;
        let o = match app.orders.get(id).await? {
            Some(OrderRecord::Order(o)) if matches!(o.status, OrderStatus::PendingPayment | OrderStatus::Paying) => o,
            // paid or closed with a payment attempt that could still take money: settle it
            Some(OrderRecord::Order(o)) if o.attempts.iter().any(|a| a.state.unsettled()) => {
                super::paying::settle_stray_attempts(app, &o).await?;
                return Ok(TimeoutOutcome::Ignored);
            }
            _ => return Ok(TimeoutOutcome::Ignored),
        };
        // not yet due: the order's deadline, or a later time the message was re-armed for (a
        // processing payment asked again during the grace)
        if !o.deadline_passed(now_ms) || now < due_at {
            let deadline = o.pay_expire_at.max(due_at);
            let wait = (deadline - now).min(MAX_DELAY_SECONDS) as u32;
            let msg = Message::PaymentTimeout { schema: 1, order_id: id.to_string(), due_at: deadline };
            app.messages.send(&msg, wait).await?;
            return Ok(TimeoutOutcome::ReArmed(wait));
        }
        if o.status == OrderStatus::Paying {
            // a payment was started: its provider decides (docs/payments.md, "At the deadline")
            match super::paying::at_deadline(app, &o).await? {
                DeadlineOutcome::Paid => return Ok(TimeoutOutcome::Paid),
                DeadlineOutcome::Expired => return Ok(TimeoutOutcome::Expired),
                DeadlineOutcome::Waiting(s) => return Ok(TimeoutOutcome::ReArmed(s)),
                DeadlineOutcome::Moved => {}
            }
        } else if o.attempts.iter().any(|a| a.state.unsettled()) {
            // a failed attempt may have been paid since at the provider: asked before expiring
            super::paying::settle_stray_attempts(app, &o).await?;
            // one still processing there stays open (the sweep asks again) and the order
            // expires anyway; anything else changed the order, which is decided again
            if super::paying::reread(app, id).await?.is_some_and(|now| now.version == o.version)
                && expire(app, &o).await?
            {
                return Ok(TimeoutOutcome::Expired);
            }
            continue;
        } else if expire(app, &o).await? {
            return Ok(TimeoutOutcome::Expired);
        }
        super::backoff(attempt).await;
    }
    anyhow::bail!("order {id} kept changing under the timeout; the message will be retried")
}
