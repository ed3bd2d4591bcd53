//! Every use case's error as the problem a client is answered (docs/api.md, "Errors"): one
//! `From` per error type, so a handler writes `?` or `map_err(Problem::from)` and never decides a
//! status itself.

use crate::domain::model::{LineRefusal, ModelError};
use crate::domain::Sku;
use crate::http::{Code, Problem};
use crate::service::admin::AdminError;
use crate::service::campaigns::CampaignError;
use crate::service::codes::CodeError;
use crate::service::orders::{CreateError, OrderError, StockRefusal};
use crate::service::queue::QueueError;
use crate::service::stock::FreezeError;
use crate::service::waitlist::WaitlistError;

fn e_not_pool(s: &Sku) -> String {
    format!("{s} is not a CODE_POOL SKU: only a code pool takes codes")
}

fn e_mixed(s: &Sku) -> String {
    format!("{s} and another line would move one stock item both at order and at payment; order them separately")
}

/// The answer to a code pool error (docs/code-pools.md). No detail ever carries a code.
impl From<CodeError> for Problem {
    fn from(e: CodeError) -> Self {
        match e {
            CodeError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).sku(s.as_str()),
            CodeError::NotACodePool(s) => Problem::validation(e_not_pool(&s)).sku(s.as_str()),
            CodeError::BadBatchId => Problem::validation(CodeError::BadBatchId.to_string()).field("batch_id"),
            CodeError::BatchSize => Problem::validation(CodeError::BatchSize.to_string()).field("codes"),
            CodeError::BadCode { index, reason } => {
                Problem::validation(format!("code {index} {reason}")).field(format!("codes[{index}]"))
            }
            CodeError::BatchReused => {
                Problem::new(Code::IdempotencyKeyReused, "this batch_id was already used with other codes")
                    .field("batch_id")
            }
            e @ CodeError::BadExpiry(_) => Problem::validation(e.to_string()).field("expire_time"),
            CodeError::OrderNotFound => Problem::not_found("no such order"),
            e @ CodeError::NotPaid(_) => Problem::new(Code::NotPaid, e.to_string()),
            e @ (CodeError::CodesReturned | CodeError::CodesWithdrawn) => {
                Problem::new(Code::InvalidTransition, e.to_string())
            }
            e @ CodeError::CodesVoided => Problem::new(Code::CodesVoided, e.to_string()),
            e @ CodeError::RefundPending => Problem::new(Code::RefundPending, e.to_string()),
            e @ CodeError::IssuePending => Problem::new(Code::CodesPending, e.to_string()),
            e @ CodeError::NotReady => {
                let mut p = Problem::new(Code::TemporarilyUnavailable, e.to_string());
                p.retry_after = Some(1);
                p
            }
            CodeError::Contention => Problem::new(Code::TemporarilyUnavailable, "contention; retry"),
            CodeError::Keys(e) => {
                tracing::error!(error = format!("{e:#}"), "code keys unavailable");
                Problem::new(Code::TemporarilyUnavailable, "the code keys are not available")
            }
            // not retried: the same stored code fails the same way (security review L6)
            e @ CodeError::Tampered => Problem::new(Code::InvalidTransition, e.to_string()),
            CodeError::Store(e) => e.into(),
        }
    }
}

impl From<FreezeError> for Problem {
    fn from(e: FreezeError) -> Self {
        match e {
            e @ FreezeError::AdmissionUsed => Problem::new(Code::AdmissionUsed, e.to_string()),
            FreezeError::SalesClosed(s) => super::common::sales_closed(&s),
            FreezeError::UnknownSku(s) => Problem::new(Code::UnknownSku, format!("no SKU {s}")).sku(s.as_str()),
            FreezeError::Insufficient(s) => match s.calendar_parent() {
                Some((sku, day)) => {
                    Problem::new(Code::InsufficientStock, format!("not enough {sku} available on {day}"))
                }
                None => Problem::new(Code::InsufficientStock, format!("not enough {s} available")),
            }
            .stock_cell(&s),
            FreezeError::Line(e) => {
                let field = match &e {
                    LineRefusal::Overflow(_) | LineRefusal::WarehousesShort(_) => "items",
                    _ => "dates",
                };
                let sku = match &e {
                    LineRefusal::DatesMissing(s)
                    | LineRefusal::DatesNotAllowed(s)
                    | LineRefusal::PastDate(s, _)
                    | LineRefusal::DuplicateDate(s, _)
                    | LineRefusal::TooManyDates(s)
                    | LineRefusal::Overflow(s)
                    | LineRefusal::WarehousesShort(s) => s.to_string(),
                };
                Problem::validation(e.to_string()).sku(sku).field(field)
            }
            FreezeError::TooManyCodes(ref s) => {
                let sku = s.to_string();
                Problem::validation(e.to_string()).sku(sku).field("quantity")
            }
            FreezeError::MixedDeduction(s) => Problem::validation(e_mixed(&s)).sku(s.as_str()).field("items"),
            FreezeError::Admission(r) => {
                let sku = r.sku().to_string();
                Problem::validation(r.to_string()).sku(sku).field("items")
            }
            FreezeError::LimitExceeded(s) => {
                Problem::new(Code::PurchaseLimitExceeded, format!("the per-user limit of {s} would be exceeded"))
                    .sku(s.as_str())
            }
            FreezeError::RequestMismatch => {
                Problem::new(Code::IdempotencyKeyReused, "this id was already used with a different body")
            }
            FreezeError::TooFragmented => Problem::new(
                Code::StockTooFragmented,
                "these lines need more shard pieces than one transaction allows; order fewer SKUs at once",
            ),
            FreezeError::UnknownCampaign(c) => {
                Problem::new(Code::UnknownCampaign, format!("no campaign {c}")).campaign(c.as_str())
            }
            FreezeError::NotInCampaign(s, c) => {
                Problem::new(Code::NotInCampaign, format!("campaign {c} does not sell {s}"))
                    .sku(s.as_str())
                    .campaign(c.as_str())
            }
            FreezeError::QuotaExhausted(s) => {
                Problem::new(Code::CampaignQuotaExhausted, format!("the campaign has no more {s} to sell"))
                    .sku(s.as_str())
            }
            FreezeError::SaleNotStarted(s) => {
                Problem::new(Code::SaleNotStarted, format!("the sale of {s} has not started")).sku(s.as_str())
            }
            FreezeError::SaleEnded(s) => {
                Problem::new(Code::SaleEnded, format!("the sale of {s} has ended")).sku(s.as_str())
            }
            FreezeError::SalePaused(s) => {
                Problem::new(Code::SalePaused, format!("the sale of {s} is paused")).sku(s.as_str())
            }
            FreezeError::TooManyPending => Problem::new(
                Code::TooManyPendingOrders,
                "you have the most unpaid checkouts allowed; pay or cancel one first",
            ),
            FreezeError::Contention => Problem::internal("contention on the SKU; retry"),
            FreezeError::Store(e) => Problem::from_store(e),
        }
    }
}

impl From<CreateError> for Problem {
    fn from(e: CreateError) -> Self {
        match e {
            CreateError::Freeze(f) => Problem::from(f),
            CreateError::Admission(r) => {
                use crate::service::queue::AdmissionRefusal;
                let code = match r {
                    AdmissionRefusal::Required(_) => Code::AdmissionRequired,
                    AdmissionRefusal::Invalid(_) => Code::AdmissionInvalid,
                };
                Problem::new(code, r.to_string()).field("admission_token")
            }
            e @ CreateError::TwoQueues => Problem::validation(e.to_string()).field("items"),
            CreateError::KeyReused => {
                Problem::new(Code::IdempotencyKeyReused, "this Idempotency-Key was already used with a different body")
            }
            CreateError::ReservationExpired => Problem::new(
                Code::ReservationExpired,
                "the stock held for this checkout was released; start a new checkout with a new Idempotency-Key",
            ),
            CreateError::MixedCurrency => Problem::validation("all SKUs of one order must share a currency"),
            CreateError::Money(m) => Problem::validation(m.to_string()),
            CreateError::Crash(c) => Problem::new(Code::InjectedCrash, c.to_string()),
            CreateError::Aborted(e) => {
                tracing::error!(error = format!("{e:#}"), "checkout aborted");
                Problem::new(
                    Code::CheckoutAborted,
                    "the order could not be written and its stock was released; start a new checkout with a new Idempotency-Key",
                )
            }
            CreateError::Store(e) => Problem::from_store(e),
            // answered 202 by `checkout` before any problem is made
            CreateError::Recorded(r) => Problem::internal(format!("checkout {} recorded", r.order_id)),
            CreateError::RateLimited(sku, after) => Problem::new(
                Code::RateLimited,
                format!("{sku} admits no more checkouts this second; retry after {after} s"),
            )
            .sku(sku.as_str())
            .retry_after(after),
            // the record's discount against the amount (docs/order-record.md)
            CreateError::Discount(d) => Problem::validation(d.to_string()).field("discount"),
            CreateError::Supplier(q) => {
                use crate::service::supplier::QuoteError;
                match q {
                    QuoteError::Short(s) => Problem::from(crate::service::stock::FreezeError::Insufficient(s)),
                    QuoteError::Mixed(ref s) | QuoteError::Campaign(ref s) | QuoteError::TooManyCodes(ref s) => {
                        Problem::validation(q.to_string()).field("items").sku(s.as_str())
                    }
                    QuoteError::Unavailable(s, e) => {
                        tracing::warn!(sku = %s, error = format!("{e:#}"), "supplier quote failed");
                        Problem::internal(format!(
                            "the supplier of {s} did not answer; retry with the same Idempotency-Key"
                        ))
                        .retry_after(1)
                    }
                }
            }
        }
    }
}

impl From<OrderError> for Problem {
    fn from(e: OrderError) -> Self {
        match e {
            OrderError::NotFound => Problem::not_found("no such order"),
            OrderError::Invalid(t) => Problem::invalid_transition(format!("the order is {}", t.from.as_str())),
            OrderError::Refused(r) => match r {
                StockRefusal::StockLost => Problem::new(Code::Oversold, r.to_string()),
                StockRefusal::NotConfirmed | StockRefusal::Backordered(_) | StockRefusal::CodesNotIssued => {
                    Problem::invalid_transition(r.to_string())
                }
                StockRefusal::CodesRedeemed => Problem::new(Code::CodesRedeemed, r.to_string()),
            },
            e @ OrderError::PaymentProcessing => Problem::new(Code::PaymentProcessing, e.to_string()),
            e @ OrderError::StaleDecision => Problem::new(Code::StaleDecision, e.to_string()),
            OrderError::Store(e) => e.into(),
        }
    }
}

impl From<QueueError> for Problem {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::NotFound(m) => Problem::not_found(m),
            e @ QueueError::Ended(_) => Problem::new(Code::CampaignEnded, e.to_string()),
            QueueError::Store(e) => e.into(),
        }
    }
}

impl From<CampaignError> for Problem {
    fn from(e: CampaignError) -> Self {
        match e {
            CampaignError::UnknownCampaign(c) => Problem::not_found(format!("no campaign {c}")).campaign(c.as_str()),
            CampaignError::UnknownSku(s) => Problem::new(Code::UnknownSku, format!("no SKU {s}")).sku(s.as_str()),
            CampaignError::NotInCampaign(s) => {
                Problem::new(Code::NotInCampaign, format!("this campaign does not sell {s}")).sku(s.as_str())
            }
            CampaignError::Invalid(s) => Problem::validation(s.to_string()).field(s.field()),
            CampaignError::Update(u) => Problem::new(Code::CampaignLockedField, u.to_string()),
            CampaignError::Insufficient(n) => Problem::new(
                Code::InsufficientStock,
                format!("cannot remove {} units of quota: not that many available", n.unsigned_abs()),
            ),
            CampaignError::AdjustmentReused => Problem::new(
                Code::IdempotencyKeyReused,
                "this adjustment_id was already applied with a different change",
            ),
            CampaignError::Contention => Problem::internal("contention; retry"),
            CampaignError::NoCampaign(s, k) => {
                Problem::validation(format!("{s} ({k}) is not sold in campaigns")).field("items").sku(s.as_str())
            }
            CampaignError::NotFenceable(s) => {
                Problem::validation(format!("{s} cannot be ring-fenced: only plain stock taken at order can"))
                    .field("items")
                    .sku(s.as_str())
            }
            CampaignError::Store(e) => Problem::from(e),
        }
    }
}

impl From<WaitlistError> for Problem {
    fn from(e: WaitlistError) -> Self {
        match e {
            WaitlistError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).sku(s.as_str()),
            WaitlistError::NotFound => Problem::not_found(e.to_string()),
            e @ WaitlistError::NotWaitlistable(_) => Problem::new(Code::NotWaitlistable, e.to_string()).field("sku"),
            e @ WaitlistError::NotSoldOut(..) => Problem::new(Code::NotSoldOut, e.to_string()),
            WaitlistError::Refused(r @ crate::domain::waitlist::JoinRefusal::Full(_)) => {
                Problem::new(Code::WaitlistFull, r.to_string())
            }
            WaitlistError::Refused(r) => Problem::new(Code::TooManyWaitlists, r.to_string()),
            // concurrent writers of one SKU's waitlist outlasted the retries: the same request
            // succeeds a moment later
            e @ WaitlistError::Contention => Problem::new(Code::TemporarilyUnavailable, e.to_string()).retry_after(1),
            WaitlistError::Store(e) => Problem::from_store(e),
        }
    }
}

impl From<AdminError> for Problem {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::UnknownSku(s) => Problem::not_found(format!("no SKU {s}")).sku(s.as_str()),
            AdminError::Insufficient(n) => {
                Problem::new(Code::InsufficientStock, format!("cannot remove {n} units: not that many available"))
            }
            AdminError::AdjustmentReused => Problem::new(
                Code::IdempotencyKeyReused,
                "this adjustment_id was already applied with a different delta",
            ),
            AdminError::Contention => Problem::internal("contention; retry"),
            AdminError::Model(e) => {
                let field = match e {
                    ModelError::ModelChanged(..) => "model",
                    ModelError::UnlimitedUnit
                    | ModelError::UnlimitedAtPayment
                    | ModelError::AtShipmentShape
                    | ModelError::BackorderShape
                    | ModelError::CodePoolShape => "model",
                    ModelError::CodePoolShards => "shards",
                    ModelError::WarehouseShape => "model",
                    ModelError::WarehousesMissing
                    | ModelError::WarehousesWithoutModel
                    | ModelError::TooManyWarehouses
                    | ModelError::DuplicateWarehouse(_)
                    | ModelError::WarehouseDropped(_) => "warehouses",
                    _ => "bundle",
                };
                Problem::validation(e.to_string()).field(field)
            }
            AdminError::NotAdjustable(d) => Problem::validation(d),
            e @ AdminError::UnknownWarehouse(..) => Problem::not_found(e.to_string()).field("warehouse"),
            AdminError::Store(e) => Problem::from(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::waitlist::WaitlistError;

    #[test]
    fn a_waitlists_contention_is_a_503_to_retry_after_a_second_and_a_store_failure_stays_a_503() {
        let r = Problem::from(WaitlistError::Contention).into_response();
        assert_eq!(r.status_code, 503);
        assert_eq!(r.headers.get(::http::header::RETRY_AFTER).and_then(|v| v.to_str().ok()), Some("1"));
        let p = Problem::from(WaitlistError::Contention);
        assert_eq!((p.code.as_str(), p.retry_after), ("temporarily_unavailable", Some(1)));
        let store = Problem::from(WaitlistError::Store(anyhow::anyhow!("down")));
        assert_eq!((store.status(), store.retry_after), (503, None));
    }
}
