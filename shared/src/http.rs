//! The HTTP edge: reading API Gateway HTTP API (payload v2) requests and answering with JSON or
//! RFC 9457 problem+json. Handlers stay thin: parse here (bodies are the types in
//! [`crate::api`]), decide in the services.

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use base64::Engine;
use http::header::{HeaderValue, CONTENT_TYPE};

pub type Request = ApiGatewayV2httpRequest;
pub type Response = ApiGatewayV2httpResponse;

/// Every stable error code the API answers with, its HTTP status and its title. A code names one
/// kind of problem: clients branch on it, so it never changes meaning (docs/architecture.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    MalformedJson,
    IdempotencyKeyRequired,
    Unauthorized,
    NotFound,
    PayloadTooLarge,
    ValidationFailed,
    UnknownSku,
    IdempotencyKeyReused,
    InvalidTransition,
    InsufficientStock,
    PurchaseLimitExceeded,
    StockTooFragmented,
    ReservationExpired,
    Oversold,
    AmountMismatch,
    TooManyPayments,
    UnknownCampaign,
    NotInCampaign,
    CampaignQuotaExhausted,
    SaleNotStarted,
    SaleEnded,
    SalePaused,
    TooManyPendingOrders,
    CampaignLockedField,
    InjectedCrash,
    TemporarilyUnavailable,
    CheckoutAborted,
    Busy,
    NotPaid,
    /// The payment provider refused to create a payment (docs/payments.md).
    ProviderRefused,
    /// The order's codes were voided by an approved refund: they are never shown again.
    CodesVoided,
    /// The sales switch is not OPEN (docs/operations.md).
    SalesClosed,
    /// An admission rate refused this checkout before any stock was touched.
    RateLimited,
    /// A refund of the order waits for an admin's review: its codes are not shown meanwhile.
    RefundPending,
    /// The order's payment is processing at its provider (a bank debit): it can be neither
    /// cancelled nor replaced until the provider decides (docs/payments.md).
    PaymentProcessing,
    /// A refund decision named a request that is no longer the one waiting.
    StaleDecision,
    /// A queued campaign's item checked out without an admission token (docs/waiting-room.md).
    AdmissionRequired,
    /// An admission token that is forged, expired, malformed or another buyer's.
    AdmissionInvalid,
    /// An admission token already spent by a committed checkout.
    AdmissionUsed,
    /// The campaign has ended: its queue takes no one.
    CampaignEnded,
    /// A waitlist join for a SKU that has units available (docs/waitlist.md).
    NotSoldOut,
    /// The SKU's waitlist holds its most entries.
    WaitlistFull,
    /// The buyer is on the most waitlists one buyer may be on.
    TooManyWaitlists,
    /// A SKU whose kind has no waitlist (calendar, bundle, code pool, unlimited, pay-time,
    /// supplier).
    NotWaitlistable,
    /// A code redeemed once is redeemed again (docs/code-pools.md, "Redemption").
    AlreadyRedeemed,
    /// A paid order's codes are not issued by its supplier yet (docs/suppliers.md).
    CodesPending,
    /// A code past its expire time (docs/code-pools.md, "Expiry").
    CodeExpired,
    /// A refund of an order whose code was redeemed: never refunded.
    CodesRedeemed,
}

impl Code {
    pub const ALL: [Code; 48] = [
        Code::MalformedJson,
        Code::IdempotencyKeyRequired,
        Code::Unauthorized,
        Code::NotFound,
        Code::PayloadTooLarge,
        Code::ValidationFailed,
        Code::UnknownSku,
        Code::IdempotencyKeyReused,
        Code::InvalidTransition,
        Code::InsufficientStock,
        Code::PurchaseLimitExceeded,
        Code::StockTooFragmented,
        Code::ReservationExpired,
        Code::Oversold,
        Code::AmountMismatch,
        Code::TooManyPayments,
        Code::UnknownCampaign,
        Code::NotInCampaign,
        Code::CampaignQuotaExhausted,
        Code::SaleNotStarted,
        Code::SaleEnded,
        Code::SalePaused,
        Code::TooManyPendingOrders,
        Code::CampaignLockedField,
        Code::InjectedCrash,
        Code::TemporarilyUnavailable,
        Code::CheckoutAborted,
        Code::Busy,
        Code::NotPaid,
        Code::ProviderRefused,
        Code::CodesVoided,
        Code::SalesClosed,
        Code::RateLimited,
        Code::RefundPending,
        Code::PaymentProcessing,
        Code::StaleDecision,
        Code::AdmissionRequired,
        Code::AdmissionInvalid,
        Code::AdmissionUsed,
        Code::CampaignEnded,
        Code::NotSoldOut,
        Code::WaitlistFull,
        Code::TooManyWaitlists,
        Code::NotWaitlistable,
        Code::AlreadyRedeemed,
        Code::CodesPending,
        Code::CodeExpired,
        Code::CodesRedeemed,
    ];

    /// (status, code, title)
    fn parts(self) -> (u16, &'static str, &'static str) {
        match self {
            Code::MalformedJson => (400, "malformed_json", "Request body is not valid JSON"),
            Code::IdempotencyKeyRequired => (400, "idempotency_key_required", "Idempotency-Key required"),
            Code::Unauthorized => (401, "unauthorized", "Unauthorized"),
            Code::NotFound => (404, "not_found", "Not found"),
            Code::PayloadTooLarge => (413, "payload_too_large", "Payload too large"),
            Code::ValidationFailed => (422, "validation_failed", "Request failed validation"),
            Code::UnknownSku => (422, "unknown_sku", "Unknown SKU"),
            Code::IdempotencyKeyReused => (422, "idempotency_key_reused", "Id reused with another request"),
            Code::InvalidTransition => (409, "invalid_transition", "Invalid state transition"),
            Code::InsufficientStock => (409, "insufficient_stock", "Insufficient stock"),
            Code::PurchaseLimitExceeded => (409, "purchase_limit_exceeded", "Purchase limit exceeded"),
            Code::StockTooFragmented => (409, "stock_too_fragmented", "Order too fragmented"),
            Code::ReservationExpired => (409, "reservation_expired", "Reservation expired"),
            Code::Oversold => (409, "oversold", "Stock no longer available"),
            Code::AmountMismatch => (409, "amount_mismatch", "Amount mismatch"),
            Code::TooManyPayments => (409, "too_many_payments", "Too many payments"),
            Code::UnknownCampaign => (422, "unknown_campaign", "Unknown campaign"),
            Code::NotInCampaign => (422, "not_in_campaign", "SKU not in campaign"),
            Code::CampaignQuotaExhausted => (409, "campaign_quota_exhausted", "Campaign quota exhausted"),
            Code::SaleNotStarted => (409, "sale_not_started", "Sale not started"),
            Code::SaleEnded => (409, "sale_ended", "Sale ended"),
            Code::SalePaused => (409, "sale_paused", "Sale paused"),
            Code::TooManyPendingOrders => (409, "too_many_pending_orders", "Too many pending orders"),
            Code::CampaignLockedField => (409, "campaign_locked_field", "Field fixed at creation"),
            Code::InjectedCrash => (500, "injected_crash", "Injected crash"),
            Code::TemporarilyUnavailable => (503, "temporarily_unavailable", "Temporarily unavailable, retry"),
            Code::CheckoutAborted => (503, "checkout_aborted", "Checkout aborted"),
            Code::Busy => (429, "busy", "Busy, retry shortly"),
            Code::NotPaid => (409, "not_paid", "Order not paid"),
            Code::ProviderRefused => (502, "provider_refused", "Payment provider refused"),
            Code::CodesVoided => (409, "codes_voided", "Codes voided by a refund"),
            Code::SalesClosed => (503, "sales_closed", "Sales closed"),
            Code::RateLimited => (429, "rate_limited", "Too many checkouts, retry shortly"),
            Code::RefundPending => (409, "refund_pending", "A refund waits for review"),
            Code::PaymentProcessing => (409, "payment_processing", "Payment processing at the provider"),
            Code::StaleDecision => (409, "stale_decision", "Decision names another request"),
            Code::AdmissionRequired => (403, "admission_required", "Admission token required"),
            Code::AdmissionInvalid => (403, "admission_invalid", "Admission token invalid"),
            Code::AdmissionUsed => (409, "admission_used", "Admission token already used"),
            Code::CampaignEnded => (409, "campaign_ended", "Campaign ended"),
            Code::NotSoldOut => (409, "not_sold_out", "Not sold out"),
            Code::WaitlistFull => (409, "waitlist_full", "Waitlist full"),
            Code::TooManyWaitlists => (409, "too_many_waitlists", "Too many waitlists"),
            Code::NotWaitlistable => (422, "not_waitlistable", "SKU has no waitlist"),
            Code::AlreadyRedeemed => (409, "already_redeemed", "Code already redeemed"),
            Code::CodesPending => (409, "codes_pending", "Codes not issued yet"),
            Code::CodeExpired => (409, "code_expired", "Code expired"),
            Code::CodesRedeemed => (409, "codes_redeemed", "A code was redeemed; never refunded"),
        }
    }

    pub fn status(self) -> u16 {
        self.parts().0
    }
    pub fn as_str(self) -> &'static str {
        self.parts().1
    }
    pub fn title(self) -> &'static str {
        self.parts().2
    }
}

/// An error answer (RFC 9457).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub code: Code,
    pub detail: String,
    /// The SKU the problem is about, when there is one.
    pub sku: Option<String>,
    /// The campaign the problem is about, when there is one.
    pub campaign_id: Option<String>,
    /// The date of a calendar SKU the problem is about, when there is one.
    pub date: Option<crate::domain::model::Day>,
    /// Where in the request the problem is: a body field (`items[2].quantity`), a path
    /// parameter, a query parameter or a header.
    pub field: Option<String>,
    /// Seconds after which a retry should succeed (429 `busy`, a checkout out of its budget).
    pub retry_after: Option<u64>,
}

/// The body of every error answer, `application/problem+json`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ProblemBody {
    /// A URI naming the problem type; it ends with `code`.
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: &'static str,
    pub status: u16,
    pub code: Code,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl Problem {
    pub fn new(code: Code, detail: impl Into<String>) -> Self {
        Problem {
            code,
            detail: detail.into(),
            sku: None,
            campaign_id: None,
            date: None,
            field: None,
            retry_after: None,
        }
    }

    pub fn status(&self) -> u16 {
        self.code.status()
    }

    pub fn sku(mut self, sku: impl Into<String>) -> Self {
        self.sku = Some(sku.into());
        self
    }

    pub fn date(mut self, date: crate::domain::model::Day) -> Self {
        self.date = Some(date);
        self
    }

    /// The SKU a stock problem is about: for a calendar date's cell, the SKU and the date.
    pub fn stock_cell(self, cell: &crate::domain::Sku) -> Self {
        match cell.calendar_parent() {
            Some((sku, day)) => self.sku(sku.as_str()).date(day),
            None => self.sku(cell.as_str()),
        }
    }

    pub fn campaign(mut self, campaign_id: impl Into<String>) -> Self {
        self.campaign_id = Some(campaign_id.into());
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn malformed(detail: impl Into<String>) -> Self {
        Self::new(Code::MalformedJson, detail)
    }
    pub fn validation(detail: impl Into<String>) -> Self {
        Self::new(Code::ValidationFailed, detail)
    }
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(Code::NotFound, detail)
    }
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(Code::Unauthorized, detail)
    }
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(Code::TemporarilyUnavailable, detail)
    }
    pub fn invalid_transition(detail: impl Into<String>) -> Self {
        Self::new(Code::InvalidTransition, detail)
    }

    pub fn body(self) -> ProblemBody {
        ProblemBody {
            type_uri: format!("https://holdfast.dev/problems/{}", self.code.as_str()),
            title: self.code.title(),
            status: self.code.status(),
            code: self.code,
            detail: self.detail,
            sku: self.sku,
            campaign_id: self.campaign_id,
            date: self.date.map(|d| d.to_string()),
            field: self.field,
            retry_after: self.retry_after,
        }
    }

    pub fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = self.retry_after;
        let body = serde_json::to_string(&self.body()).unwrap_or_else(|e| {
            // a problem is strings and numbers; should one ever fail, the status stands and
            // the failure is logged, with the minimal problem body in place of the detail
            tracing::error!(error = %e, "problem body does not serialise");
            format!(r#"{{"type":"about:blank","status":{status}}}"#)
        });
        let mut r = respond(status, "application/problem+json", body);
        if let Some(s) = retry_after {
            r.headers.insert(http::header::RETRY_AFTER, HeaderValue::from(s));
        }
        r
    }

    /// 429 `busy`: the store is throttling (a hot SKU past its partitions' limits); the same
    /// request succeeds a moment later. `retry_after` is also sent as the `Retry-After` header.
    pub fn busy() -> Self {
        Self::new(Code::Busy, "the stock store is at capacity for this SKU; retry after a moment").retry_after(1)
    }

    /// Seconds after which the client should retry (body field and `Retry-After` header).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// A dependency failure: [`Problem::busy`] when the store throttled, else the generic 503.
    pub fn from_store(e: anyhow::Error) -> Self {
        if crate::ports::is_throttled(&e) {
            tracing::warn!(error = format!("{e:#}"), "throttled");
            return Self::busy();
        }
        Self::from(e)
    }
}

impl From<anyhow::Error> for Problem {
    fn from(e: anyhow::Error) -> Self {
        tracing::error!(error = format!("{e:#}"), "request failed");
        Problem::internal("a dependency failed; the request may be retried with the same Idempotency-Key")
    }
}

pub fn respond(status: u16, content_type: &'static str, body: String) -> Response {
    let mut r = Response { status_code: i64::from(status), ..Default::default() };
    r.headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.body = Some(Body::Text(body));
    r
}

/// A JSON answer from one of the response types in [`crate::api`].
pub fn json_response<T: serde::Serialize>(status: u16, v: &T) -> Response {
    // the bodies are plain structs of strings and numbers; one that does not serialise is a
    // bug, logged and answered as a problem, never as a made-up body
    match serde_json::to_string(v) {
        Ok(body) => respond(status, "application/json", body),
        Err(e) => {
            tracing::error!(error = %e, "response body does not serialise");
            Problem::internal(format!("the response does not serialise: {e}")).into_response()
        }
    }
}

/// Collapses a handler result into the response API Gateway returns.
pub fn finish(r: Result<Response, Problem>) -> Response {
    r.unwrap_or_else(Problem::into_response)
}

pub fn route(req: &Request) -> &str {
    req.route_key.as_deref().or(req.request_context.route_key.as_deref()).unwrap_or("")
}

pub fn path_param<'a>(req: &'a Request, name: &str) -> Result<&'a str, Problem> {
    req.path_parameters
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| Problem::not_found(format!("missing path parameter {name}")))
}

pub fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

pub fn query<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.query_string_parameters.first(name)
}

/// The raw body bytes (API Gateway may base64-encode them), refused above `max` bytes.
pub fn body_bytes(req: &Request, max: usize) -> Result<Vec<u8>, Problem> {
    let raw = req.body.as_deref().unwrap_or("");
    let bytes = if req.is_base64_encoded {
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map_err(|_| Problem::malformed("body is not valid base64"))?
    } else {
        raw.as_bytes().to_vec()
    };
    if bytes.len() > max {
        return Err(Problem::new(Code::PayloadTooLarge, format!("body exceeds {max} bytes")));
    }
    Ok(bytes)
}

/// The body as one of the request types in [`crate::api`] (see [`crate::api::body`]).
pub fn typed_body<T: serde::de::DeserializeOwned>(req: &Request, max: usize) -> Result<T, Problem> {
    crate::api::body::parse(&body_bytes(req, max)?)
}

/// The authenticated principal: `sub` of the JWT the authorizer validated.
pub fn subject(req: &Request) -> Result<crate::domain::UserId, Problem> {
    let sub = req
        .request_context
        .authorizer
        .as_ref()
        .and_then(|a| a.jwt.as_ref())
        .and_then(|j| j.claims.get("sub"))
        .ok_or_else(|| Problem::unauthorized("no authenticated subject"))?;
    crate::domain::UserId::parse(sub).map_err(|e| Problem::unauthorized(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Request {
        Request { body: Some(body.into()), ..Default::default() }
    }

    #[test]
    fn bodies_are_objects_within_the_size_limit() {
        #[derive(Debug, serde::Deserialize)]
        struct Any {}
        let parse = |b: &str, max| typed_body::<Any>(&req(b), max).map(|_| ()).map_err(|p| p.code);
        assert_eq!(parse("{}", 100), Ok(()));
        assert_eq!(parse("{", 100), Err(Code::MalformedJson));
        assert_eq!(parse("", 100), Err(Code::MalformedJson));
        assert_eq!(parse("[1]", 100), Err(Code::ValidationFailed));
        assert_eq!(parse(&"x".repeat(101), 100), Err(Code::PayloadTooLarge));
        let deep = "[".repeat(10_000);
        assert_eq!(parse(&deep, 100_000), Err(Code::MalformedJson));
    }

    #[test]
    fn every_code_is_distinct_and_serialises_as_itself() {
        let names: std::collections::BTreeSet<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Code::ALL.len());
        for c in Code::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
            assert!((400..600).contains(&c.status()), "{c:?}");
        }
    }

    #[test]
    fn problems_render_as_rfc9457() {
        let r = Problem::validation("x").sku("A").into_response();
        assert_eq!(r.status_code, 422);
        assert_eq!(r.headers.get(CONTENT_TYPE).unwrap(), "application/problem+json");
        let Some(Body::Text(b)) = r.body else { panic!() };
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["code"], "validation_failed");
        assert_eq!(v["sku"], "A");
        assert_eq!(v["status"], 422);
    }
}
