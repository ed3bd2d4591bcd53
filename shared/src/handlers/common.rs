//! The mapping of use-case errors shared by the HTTP handlers to problems.

use crate::domain::model::LineRefusal;
use crate::domain::Sku;
use crate::http::{Code, Problem};
use crate::ports::WebhookKeys;
use crate::service::codes::CodeError;
use crate::service::stock::FreezeError;

/// The answer to a code pool error (docs/code-pools.md). No detail ever carries a code.
pub fn code_problem(e: CodeError) -> Problem {
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

fn e_not_pool(s: &Sku) -> String {
    format!("{s} is not a CODE_POOL SKU: only a code pool takes codes")
}

fn e_mixed(s: &Sku) -> String {
    format!("{s} and another line would move one stock item both at order and at payment; order them separately")
}

/// A write the sales switch refuses: 503 `sales_closed`, its mode and reason, retry in 5 s —
/// whether the door judged it from this Lambda's cache or the freeze's transaction found it.
pub fn sales_closed(s: &crate::domain::sale::SalesSwitch) -> Problem {
    Problem::new(Code::SalesClosed, format!("sales are {}: {}", s.mode.as_str(), s.reason)).retry_after(5)
}

pub fn freeze_problem(e: FreezeError) -> Problem {
    match e {
        e @ FreezeError::AdmissionUsed => Problem::new(Code::AdmissionUsed, e.to_string()),
        FreezeError::SalesClosed(s) => sales_closed(&s),
        FreezeError::UnknownSku(s) => Problem::new(Code::UnknownSku, format!("no SKU {s}")).sku(s.as_str()),
        FreezeError::Insufficient(s) => match s.calendar_parent() {
            Some((sku, day)) => Problem::new(Code::InsufficientStock, format!("not enough {sku} available on {day}")),
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
            Problem::new(Code::CampaignQuotaExhausted, format!("the campaign has no more {s} to sell")).sku(s.as_str())
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

/// Whether `verify` passes under one of the webhook `keys`, tried in turn: the current key, and
/// the previous one during its window after a rotation (security review V5, M1). The caller
/// prechecks the header first, so a request that cannot verify fetches no key (review L4). No key
/// configured is a 500 with `not_configured`; a refusal under every key, a 401 with the last
/// key's reason.
pub async fn verify_with_any_key<E: std::fmt::Display>(
    keys: &dyn WebhookKeys,
    not_configured: &str,
    verify: impl Fn(&[u8]) -> Result<(), E>,
) -> Result<(), Problem> {
    let keys = keys.keys().await.map_err(Problem::from)?;
    let mut refusal = None;
    for k in &keys {
        match verify(k.expose()) {
            Ok(()) => return Ok(()),
            Err(e) => refusal = Some(e.to_string()),
        }
    }
    Err(refusal.map_or_else(|| Problem::internal(not_configured), Problem::unauthorized))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::secrets::StaticKeys;
    use crate::config::Secret;

    fn keys(ks: &[&str]) -> StaticKeys {
        StaticKeys(ks.iter().map(|k| Secret::new(*k)).collect())
    }

    /// `Ok` only under the key `good`; the refusal names the key it was tried with.
    fn only(good: &'static str) -> impl Fn(&[u8]) -> Result<(), String> {
        move |k| if k == good.as_bytes() { Ok(()) } else { Err(format!("not {}", String::from_utf8_lossy(k))) }
    }

    #[tokio::test]
    async fn any_one_key_verifies_else_the_last_refusal_and_no_key_is_a_500() {
        assert!(verify_with_any_key(&keys(&["new", "old"]), "none", only("old")).await.is_ok(), "the previous key");
        assert!(verify_with_any_key(&keys(&["new", "old"]), "none", only("new")).await.is_ok(), "the current key");
        let all_wrong = verify_with_any_key(&keys(&["new", "old"]), "none", only("other")).await.unwrap_err();
        assert_eq!((all_wrong.status(), all_wrong.detail.as_str()), (401, "not old"));
        let none = verify_with_any_key(&keys(&[]), "no secret configured", only("new")).await.unwrap_err();
        assert_eq!(
            (none.status(), none.detail.as_str()),
            (Code::TemporarilyUnavailable.status(), "no secret configured")
        );
    }
}
