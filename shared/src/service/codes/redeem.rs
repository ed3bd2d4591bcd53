//! Redemption of a sold code by the merchant's system (docs/code-pools.md, "Redemption"):
//! `POST /admin/orders/{order_id}/codes/redeem`. The code is found among the order's by its
//! fingerprint (no code is opened), judged by `domain::codes::lifecycle::may_redeem`, and
//! recorded by one conditional transaction on the lock and the code item
//! (`CodePools::redeem_code`), which judges the same conditions: of two redemptions of one code
//! only one is recorded, and of a redemption and a refund's void only the first wins.

use super::{keyring, CodeError};
use crate::clock;
use crate::context::App;
use crate::domain::codes::lifecycle::{may_redeem, RedeemRefusal};
use crate::domain::codes::{check_code, mask, StoredCode};
use crate::domain::order::OrderRecord;
use crate::domain::reservation::Reservation;
use crate::domain::{OrderId, ReservationId, Sku};
use crate::telemetry::names;

/// Most times a redemption re-reads after its write was refused by a change in between.
const ATTEMPTS: u32 = 5;

/// A recorded redemption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redemption {
    pub order_id: OrderId,
    pub sku: Sku,
    /// The code, masked: the only form that leaves this module.
    pub masked: String,
    pub redeemed_at_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    #[error("code {0}")]
    BadCode(&'static str),
    #[error("no such order")]
    OrderNotFound,
    #[error("this code is not one of the order's codes")]
    CodeNotFound,
    /// Redeemed before, at this time (epoch ms): redeeming is once.
    #[error("this code was already redeemed at {}", clock::rfc3339(*.0))]
    AlreadyRedeemed(i64),
    /// Past its expire time (epoch ms).
    #[error("this code expired at {}; it can no longer be redeemed", clock::rfc3339(*.0))]
    Expired(i64),
    /// Refunded after it was shown (an operator's refund, an approved review).
    #[error("the order's codes were voided by a refund; they cannot be redeemed")]
    Voided,
    /// Never shown to the buyer, withdrawn by a refund, or the lock is not SOLD.
    #[error("{0}")]
    NotRedeemable(&'static str),
    #[error("contention; retry")]
    Contention,
    #[error(transparent)]
    Codes(#[from] CodeError),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

impl From<RedeemRefusal> for RedeemError {
    fn from(r: RedeemRefusal) -> Self {
        match r {
            RedeemRefusal::AlreadyRedeemed(at) => RedeemError::AlreadyRedeemed(at),
            RedeemRefusal::Expired(at) => RedeemError::Expired(at),
            RedeemRefusal::Voided => RedeemError::Voided,
            RedeemRefusal::Withdrawn => {
                RedeemError::NotRedeemable("the order was refunded before its codes were shown; they are void")
            }
            RedeemRefusal::NotShown => {
                RedeemError::NotRedeemable("the code was never shown to its buyer; it cannot have been used")
            }
            RedeemRefusal::NotSold => {
                RedeemError::NotRedeemable("the order's codes are not sold to it (yet, or any more)")
            }
        }
    }
}

/// Redeems `code` of order `id` once, at the current time. Anyone's order (an admin route); the
/// code is never logged (the log names the order and the slot).
pub async fn redeem(app: &App, id: &OrderId, code: &str) -> Result<Redemption, RedeemError> {
    check_code(code).map_err(RedeemError::BadCode)?;
    match app.orders.get(id).await? {
        Some(OrderRecord::Order(_)) => {}
        _ => return Err(RedeemError::OrderNotFound),
    }
    let rid = ReservationId::for_order(id);
    for attempt in 1..=ATTEMPTS {
        let Some(lock) = app.locks.get_reservation(&rid).await? else { return Err(RedeemError::CodeNotFound) };
        let (sku, slot, stored) = find(app, &lock, code).await?.ok_or(RedeemError::CodeNotFound)?;
        let now = clock::now_ms();
        may_redeem(lock.status, lock.code_fate, stored.redeemed_at_ms, stored.expires_at_ms, now)?;
        if app.code_pools.redeem_code(&rid, &sku, slot, now).await? {
            app.count(names::CODES_REDEEMED, 1);
            tracing::info!(order_id = %id, sku = %sku, shard = slot.0, pos = slot.1, "code redeemed");
            return Ok(Redemption { order_id: id.clone(), sku, masked: mask(code), redeemed_at_ms: now });
        }
        // the lock or the code changed since the read (a concurrent redemption, a refund): judge again
        super::super::backoff(attempt).await;
    }
    Err(RedeemError::Contention)
}

/// The slot of `lock` holding `code`, found by its fingerprint (the code is not opened), with the
/// code as stored.
async fn find(app: &App, lock: &Reservation, code: &str) -> Result<Option<(Sku, (u16, u64), StoredCode)>, RedeemError> {
    let keys = keyring(app).await?;
    for l in lock.lines.iter().filter(|l| l.holds_codes()) {
        let fp = keys.fingerprint(&l.sku, code);
        let slots: Vec<(u16, u64)> = l
            .codes
            .iter()
            .flatten()
            .flat_map(|g| (g.from..g.from + u64::from(g.count)).map(move |p| (g.shard, p)))
            .collect();
        for (slot, c) in slots.iter().zip(app.code_pools.read_codes(&l.sku, &slots).await?) {
            if let Some(c) = c.filter(|c| c.fingerprint == fp) {
                return Ok(Some((l.sku.clone(), *slot, c)));
            }
        }
    }
    Ok(None)
}
