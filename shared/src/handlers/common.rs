//! The mapping of use-case errors shared by the HTTP handlers to problems.

use crate::http::{Code, Problem};
use crate::service::stock::FreezeError;

pub fn freeze_problem(e: FreezeError) -> Problem {
    match e {
        FreezeError::UnknownSku(s) => Problem::new(Code::UnknownSku, format!("no SKU {s}")).sku(s.as_str()),
        FreezeError::Insufficient(s) => {
            Problem::new(Code::InsufficientStock, format!("not enough {s} available")).sku(s.as_str())
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
        FreezeError::Contention => Problem::internal("contention on the SKU; retry"),
        FreezeError::Store(e) => Problem::from(e),
    }
}
