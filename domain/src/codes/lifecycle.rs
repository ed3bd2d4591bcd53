//! A sold code's life after the sale (docs/code-pools.md, "Redemption" and "Expiry"): which
//! fate a code lock may take next, whether a code may still be sold or redeemed, what its owner
//! is shown, and what a refund may do. Pure: both stores and the services ask these, so the
//! in-memory store and DynamoDB's conditions judge alike.

use crate::reservation::{CodeFate, LockStatus};

/// Whether a code lock in `status` whose codes' fate is `current` may record `fate`. One-way:
/// - `Revealed` only on a SOLD lock, and only first;
/// - `Withdrawn` (a refund before any reveal) only on a lock not released, and only first;
/// - `Voided` (a refund of shown codes) only after `Revealed`: never once a code is redeemed;
/// - `Redeemed` only on a SOLD lock after `Revealed` (a code never shown is never redeemed),
///   never after `Voided`.
///
/// Recording the fate a lock already has is allowed (a retry writes the same value).
pub fn fate_may_become(current: Option<CodeFate>, status: LockStatus, fate: CodeFate) -> bool {
    use CodeFate::*;
    match fate {
        Revealed => status == LockStatus::Sold && matches!(current, None | Some(Revealed)),
        Withdrawn => status != LockStatus::Released && matches!(current, None | Some(Withdrawn)),
        Voided => matches!(current, Some(Revealed | Voided)),
        Redeemed => status == LockStatus::Sold && matches!(current, Some(Revealed | Redeemed)),
    }
}

/// Whether a code whose expire time is `expires_at_ms` may still be handed out or redeemed at
/// `now_ms`: a code is valid strictly before its expire time.
pub fn valid_at(expires_at_ms: Option<i64>, now_ms: i64) -> bool {
    expires_at_ms.is_none_or(|e| e > now_ms)
}

/// The most an upload's `expire_time` may lie ahead (100 years): anything further is a typo.
pub const MAX_EXPIRY_AHEAD_MS: i64 = 100 * 366 * 86_400_000;

/// Why an upload's expire time is refused: a batch that is already expired would never sell.
pub fn check_expiry(expires_at_ms: i64, now_ms: i64) -> Result<(), &'static str> {
    if expires_at_ms <= now_ms {
        return Err("is not in the future: an expired code is never sold");
    }
    if expires_at_ms - now_ms > MAX_EXPIRY_AHEAD_MS {
        return Err("is more than 100 years ahead");
    }
    Ok(())
}

/// What a code's owner is shown about it (`GET /orders/{order_id}/codes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeState {
    /// Usable: until its expire time, if it has one.
    Valid { until_ms: Option<i64> },
    /// Redeemed by the merchant at this time (whatever its expire time).
    Redeemed { at_ms: i64 },
    /// Past its expire time, never redeemed.
    Expired { at_ms: i64 },
}

impl CodeState {
    pub fn of(redeemed_at_ms: Option<i64>, expires_at_ms: Option<i64>, now_ms: i64) -> CodeState {
        match (redeemed_at_ms, expires_at_ms) {
            (Some(at_ms), _) => CodeState::Redeemed { at_ms },
            (None, Some(at_ms)) if !valid_at(Some(at_ms), now_ms) => CodeState::Expired { at_ms },
            (None, until_ms) => CodeState::Valid { until_ms },
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CodeState::Valid { .. } => "VALID",
            CodeState::Redeemed { .. } => "REDEEMED",
            CodeState::Expired { .. } => "EXPIRED",
        }
    }
}

/// Why a code cannot be redeemed, judged in this order: a redemption already recorded answers
/// first (a retry learns the first time), then the lock, then the code's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedeemRefusal {
    /// Redeemed before, at this time.
    AlreadyRedeemed(i64),
    /// The lock is not SOLD (the payment's stock move has not run, or the codes went back).
    NotSold,
    /// The codes were never shown to their buyer.
    NotShown,
    /// Refunded before a reveal: never shown, never redeemable.
    Withdrawn,
    /// Refunded after a reveal: void.
    Voided,
    /// Past its expire time (at this time).
    Expired(i64),
}

/// Whether a code of a lock in `status` with fate `fate`, redeemed at `redeemed_at_ms` (if ever)
/// and expiring at `expires_at_ms`, may be redeemed at `now_ms`. The store's conditional write
/// judges the same conditions ([`fate_may_become`] to `Redeemed`, no redemption yet, [`valid_at`]).
pub fn may_redeem(
    status: LockStatus,
    fate: Option<CodeFate>,
    redeemed_at_ms: Option<i64>,
    expires_at_ms: Option<i64>,
    now_ms: i64,
) -> Result<(), RedeemRefusal> {
    if let Some(at) = redeemed_at_ms {
        return Err(RedeemRefusal::AlreadyRedeemed(at));
    }
    match fate {
        Some(CodeFate::Withdrawn) => return Err(RedeemRefusal::Withdrawn),
        Some(CodeFate::Voided) => return Err(RedeemRefusal::Voided),
        None => return Err(RedeemRefusal::NotShown),
        Some(CodeFate::Revealed | CodeFate::Redeemed) => {}
    }
    if status != LockStatus::Sold {
        return Err(RedeemRefusal::NotSold);
    }
    match expires_at_ms {
        Some(at) if !valid_at(Some(at), now_ms) => Err(RedeemRefusal::Expired(at)),
        _ => Ok(()),
    }
}

/// Who refunds a code order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refunder {
    /// The buyer (`POST /orders/{order_id}/refund`).
    Buyer,
    /// An operator's refund, or an admin approving a held refund.
    Operator,
}

/// What a refund may do with a code order's codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRefund {
    /// Never shown (withdrawn now or before, or gone back to the pool unseen): the refund goes
    /// ahead and the codes are never shown.
    Withdraw,
    /// Shown: a buyer's refund waits for an admin's review (docs/payments.md, "Refund review").
    Review,
    /// Shown, refunded by an operator: the codes are voided (never shown again).
    Void,
    /// A code was redeemed (the gift card was used): never refunded, by anyone.
    Never,
}

/// The refund rule of a code order, from its codes' fate once the refund tried to withdraw them
/// (`None`: the lock is released, its codes went back unseen). Expiry does not enter: an expired
/// code that was never redeemed was still shown — it may have been copied before it expired and
/// only its issuer knows — so it follows the revealed rule (a buyer's refund is reviewed).
pub fn may_refund(fate: Option<CodeFate>, by: Refunder) -> CodeRefund {
    match (fate, by) {
        (Some(CodeFate::Redeemed), _) => CodeRefund::Never,
        (Some(CodeFate::Revealed), Refunder::Buyer) => CodeRefund::Review,
        (Some(CodeFate::Revealed | CodeFate::Voided), _) => CodeRefund::Void,
        (Some(CodeFate::Withdrawn) | None, _) => CodeRefund::Withdraw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CodeFate::*;

    const FATES: [Option<CodeFate>; 5] = [None, Some(Revealed), Some(Withdrawn), Some(Voided), Some(Redeemed)];
    const STATUSES: [LockStatus; 4] =
        [LockStatus::Frozen, LockStatus::Sold, LockStatus::Released, LockStatus::Restocked];

    #[test]
    fn a_fate_moves_one_way_and_a_redeemed_lock_is_never_voided_nor_a_voided_one_redeemed() {
        for st in STATUSES {
            for cur in FATES {
                // redeemed needs a reveal first and a SOLD lock
                assert_eq!(
                    fate_may_become(cur, st, Redeemed),
                    st == LockStatus::Sold && matches!(cur, Some(Revealed | Redeemed)),
                    "{cur:?} {st:?}"
                );
                assert_eq!(fate_may_become(cur, st, Voided), matches!(cur, Some(Revealed | Voided)), "{cur:?}");
                // nothing goes back to REVEALED or WITHDRAWN once another fate is recorded
                if matches!(cur, Some(Voided | Redeemed)) {
                    assert!(!fate_may_become(cur, st, Revealed) && !fate_may_become(cur, st, Withdrawn));
                }
            }
        }
        assert!(fate_may_become(None, LockStatus::Sold, Revealed));
        assert!(!fate_may_become(None, LockStatus::Frozen, Revealed), "shown only from a SOLD lock");
        assert!(fate_may_become(None, LockStatus::Frozen, Withdrawn));
        assert!(!fate_may_become(None, LockStatus::Released, Withdrawn));
        assert!(!fate_may_become(Some(Withdrawn), LockStatus::Sold, Revealed));
    }

    #[test]
    fn a_code_is_valid_strictly_before_its_expire_time_and_uploads_refuse_a_past_one() {
        assert!(valid_at(None, i64::MAX));
        assert!(valid_at(Some(1_000), 999));
        assert!(!valid_at(Some(1_000), 1_000));
        assert!(check_expiry(1_001, 1_000).is_ok());
        assert!(check_expiry(1_000, 1_000).is_err());
        assert!(check_expiry(0, 1_000).is_err());
        assert!(check_expiry(1_000 + MAX_EXPIRY_AHEAD_MS + 1, 1_000).is_err());
    }

    #[test]
    fn the_owner_sees_redeemed_before_expired_and_valid_until_the_expire_time() {
        assert_eq!(CodeState::of(Some(5), Some(3), 10), CodeState::Redeemed { at_ms: 5 });
        assert_eq!(CodeState::of(None, Some(3), 10), CodeState::Expired { at_ms: 3 });
        assert_eq!(CodeState::of(None, Some(30), 10), CodeState::Valid { until_ms: Some(30) });
        assert_eq!(CodeState::of(None, None, 10), CodeState::Valid { until_ms: None });
        assert_eq!(CodeState::of(None, Some(3), 10).as_str(), "EXPIRED");
    }

    #[test]
    fn redemption_needs_a_shown_unrefunded_unexpired_code_once() {
        let sold = LockStatus::Sold;
        assert_eq!(may_redeem(sold, Some(Revealed), None, None, 10), Ok(()));
        assert_eq!(may_redeem(sold, Some(Redeemed), None, Some(11), 10), Ok(()), "another code of the order");
        assert_eq!(may_redeem(sold, Some(Redeemed), Some(7), None, 10), Err(RedeemRefusal::AlreadyRedeemed(7)));
        // a retry after expiry still learns the first redemption
        assert_eq!(may_redeem(sold, Some(Redeemed), Some(7), Some(8), 10), Err(RedeemRefusal::AlreadyRedeemed(7)));
        assert_eq!(may_redeem(sold, None, None, None, 10), Err(RedeemRefusal::NotShown));
        assert_eq!(may_redeem(sold, Some(Withdrawn), None, None, 10), Err(RedeemRefusal::Withdrawn));
        assert_eq!(may_redeem(sold, Some(Voided), None, None, 10), Err(RedeemRefusal::Voided));
        assert_eq!(may_redeem(LockStatus::Restocked, Some(Revealed), None, None, 10), Err(RedeemRefusal::NotSold));
        assert_eq!(may_redeem(sold, Some(Revealed), None, Some(10), 10), Err(RedeemRefusal::Expired(10)));
        // every Ok agrees with the store's condition on the lock
        for st in STATUSES {
            for f in FATES {
                if may_redeem(st, f, None, None, 10).is_ok() {
                    assert!(fate_may_become(f, st, Redeemed), "{f:?} {st:?}");
                }
            }
        }
    }

    #[test]
    fn a_redeemed_code_is_never_refunded_and_an_expired_one_follows_the_revealed_rule() {
        for by in [Refunder::Buyer, Refunder::Operator] {
            assert_eq!(may_refund(Some(Redeemed), by), CodeRefund::Never);
            assert_eq!(may_refund(Some(Withdrawn), by), CodeRefund::Withdraw);
            assert_eq!(may_refund(None, by), CodeRefund::Withdraw);
        }
        // shown (expired or not: the fate is the same REVEALED)
        assert_eq!(may_refund(Some(Revealed), Refunder::Buyer), CodeRefund::Review);
        assert_eq!(may_refund(Some(Revealed), Refunder::Operator), CodeRefund::Void);
        assert_eq!(may_refund(Some(Voided), Refunder::Operator), CodeRefund::Void, "a retried approval");
    }
}
