//! orders-api: the buyer's orders (`GET /orders`, `GET /orders/{order_id}`, cancel, refund,
//! confirm-receipt, return) and the admin's order routes (view, ship, return-received, cancel;
//! docs/after-sale.md).

use super::routes::Route;
use crate::api::after_sale::{
    AdminOrderView, HeldRefundView, ReasonRequest, RefundDecisionRequest, RefundReviewList, ReturnReceivedRequest,
    ShipRequest,
};
use crate::api::orders::{OrderCode, OrderCodes, OrderList, OrderView, DEFAULT_PAGE, MAX_PAGE};
use crate::api::payments::{PaymentStarted, SettlementReport, StartPaymentRequest};
use crate::api::{Auth, ADMIN_CODES, ADMIN_ORDERS, SCOPE_ORDERS_READ, SCOPE_ORDERS_WRITE};
use crate::app::App;
use crate::domain::order::OrderRecord;
use crate::domain::sale::WriteKind::{Always, Other};
use crate::domain::{OrderId, ReservationId};
use crate::http::{self, json_response, path_param, query, subject, typed_body, Code, Problem, Request, Response};
use crate::ports::OrderCursor;
use crate::service::after_sale::{self, Caller, Change};
use crate::service::orders::{self};
use base64::Engine;

/// The routes this function handles (checked against template.yaml and the OpenAPI document).
pub const ROUTES: &[Route] = &[
    Route::read("GET /orders", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(list(a, r))),
    Route::read("GET /orders/{order_id}", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(get(a, r))),
    Route::read("GET /orders/{order_id}/codes", Auth::Scope(SCOPE_ORDERS_READ), |a, r| Box::pin(codes(a, r))),
    Route::write("POST /orders/{order_id}/cancel", Auth::Scope(SCOPE_ORDERS_WRITE), Always, |a, r| {
        Box::pin(cancel(a, r))
    }),
    Route::write("POST /orders/{order_id}/payments", Auth::Scope(SCOPE_ORDERS_WRITE), Always, |a, r| {
        Box::pin(start_payment(a, r))
    }),
    Route::write("POST /orders/{order_id}/refund", Auth::Scope(SCOPE_ORDERS_WRITE), Always, |a, r| {
        Box::pin(refund(a, r))
    }),
    Route::write("POST /orders/{order_id}/confirm-receipt", Auth::Scope(SCOPE_ORDERS_WRITE), Other, |a, r| {
        Box::pin(confirm_receipt(a, r))
    }),
    Route::write("POST /orders/{order_id}/return", Auth::Scope(SCOPE_ORDERS_WRITE), Other, |a, r| {
        Box::pin(request_return(a, r))
    }),
    Route::read("GET /admin/orders/{order_id}", Auth::AnyScope(ADMIN_ORDERS), |a, r| Box::pin(admin_get(a, r))),
    Route::read("GET /admin/orders/{order_id}/log", Auth::AnyScope(ADMIN_ORDERS), |a, r| Box::pin(admin_log(a, r))),
    Route::write("POST /admin/orders/{order_id}/ship", Auth::AnyScope(ADMIN_ORDERS), Other, |a, r| {
        Box::pin(ship(a, r))
    }),
    Route::write("POST /admin/orders/{order_id}/return-received", Auth::AnyScope(ADMIN_ORDERS), Other, |a, r| {
        Box::pin(return_received(a, r))
    }),
    Route::write("POST /admin/orders/{order_id}/cancel", Auth::AnyScope(ADMIN_ORDERS), Always, |a, r| {
        Box::pin(admin_cancel(a, r))
    }),
    Route::write("POST /admin/orders/{order_id}/refund-decision", Auth::AnyScope(ADMIN_ORDERS), Always, |a, r| {
        Box::pin(refund_decision(a, r))
    }),
    // the merchant's redemption system holds the codes scope, not the orders one (docs/code-pools.md)
    Route::write("POST /admin/orders/{order_id}/codes/redeem", Auth::AnyScope(ADMIN_CODES), Other, |a, r| {
        Box::pin(redeem_code(a, r))
    }),
    // a supplier's codes asked for again by an operator (docs/suppliers.md)
    Route::write("POST /admin/orders/{order_id}/codes/reissue", Auth::AnyScope(ADMIN_CODES), Other, |a, r| {
        Box::pin(reissue_codes(a, r))
    }),
    Route::read("GET /admin/refund-reviews", Auth::AnyScope(ADMIN_ORDERS), |a, r| Box::pin(refund_reviews(a, r))),
    Route::read("GET /admin/settlement/{date}", Auth::AnyScope(ADMIN_ORDERS), |a, r| Box::pin(settlement(a, r, false))),
    Route::write("POST /admin/settlement/{date}/run", Auth::AnyScope(ADMIN_ORDERS), Other, |a, r| {
        Box::pin(run_settlement(a, r))
    }),
    Route::read("GET /admin/ledger/{date}", Auth::AnyScope(ADMIN_ORDERS), |a, r| Box::pin(ledger(a, r))),
];

pub async fn handle(app: &App, req: Request) -> Response {
    super::routes::serve(ROUTES, app, &req).await
}

async fn refund(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: ReasonRequest = typed_body(req, app.config.max_body_bytes)?;
    buyer(app, req, 202, Change::Refund { reason: b.reason }).await
}

async fn confirm_receipt(app: &App, req: &Request) -> Result<Response, Problem> {
    http::body_bytes(req, app.config.max_body_bytes)?;
    buyer(app, req, 200, Change::ConfirmReceipt).await
}

async fn request_return(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: ReasonRequest = typed_body(req, app.config.max_body_bytes)?;
    buyer(app, req, 202, Change::RequestReturn { reason: b.reason }).await
}

async fn ship(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: ShipRequest = typed_body(req, app.config.max_body_bytes)?;
    admin(app, req, Change::Ship { carrier: b.carrier, tracking_number: b.tracking_number }).await
}

async fn return_received(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: ReturnReceivedRequest = typed_body(req, app.config.max_body_bytes)?;
    admin(app, req, Change::ReceiveReturn { restock: b.restock }).await
}

async fn admin_cancel(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: ReasonRequest = typed_body(req, app.config.max_body_bytes)?;
    admin(app, req, Change::AdminCancel { reason: b.reason }).await
}

async fn refund_decision(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: RefundDecisionRequest = typed_body(req, app.config.max_body_bytes)?;
    let actor = subject(req)?.to_string();
    let requested_at =
        match b.requested_at.as_deref() {
            None => None,
            Some(t) => Some(crate::clock::parse_rfc3339(t).ok_or_else(|| {
                Problem::validation("requested_at must be an RFC 3339 date-time").field("requested_at")
            })?),
        };
    let o = after_sale::decide_refund(app, &order_id(req)?, b.approve, &b.reason, &actor, requested_at)
        .await
        .map_err(Problem::from)?;
    Ok(json_response(200, &OrderView::from(&o)))
}

async fn run_settlement(app: &App, req: &Request) -> Result<Response, Problem> {
    http::body_bytes(req, app.config.max_body_bytes)?;
    settlement(app, req, true).await
}

/// A day's settlement (docs/payments.md, "Settlement"): `run` also counts and logs every
/// mismatch, as the daily schedule does; both compare afresh (nothing is stored).
async fn settlement(app: &App, req: &Request, run: bool) -> Result<Response, Problem> {
    use crate::service::settlement;
    let day = past_day(req)?;
    let report = if run { settlement::run_and_report(app, day).await? } else { settlement::run(app, day).await? };
    Ok(json_response(200, &SettlementReport::from(report)))
}

/// The daily ledger report (docs/operations.md, "Daily ledger report"): compared afresh, its
/// differences counted (metric and alarm) and logged.
async fn ledger(app: &App, req: &Request) -> Result<Response, Problem> {
    let day = past_day(req)?;
    let report = crate::service::ledger::run_and_report(app, day).await?;
    Ok(json_response(200, &crate::api::ledger::LedgerReport::from(report)))
}

/// The `date` path parameter: a real `YYYY-MM-DD` that is not after today (UTC).
fn past_day(req: &Request) -> Result<crate::domain::model::Day, Problem> {
    let raw = path_param(req, "date")?;
    let day = crate::domain::model::Day::parse(raw).map_err(|e| Problem::validation(e).field("date"))?;
    if day > crate::domain::model::Day::of_epoch_s(crate::clock::now_s()) {
        return Err(Problem::validation(format!("{day} is in the future")).field("date"));
    }
    Ok(day)
}

fn order_id(req: &Request) -> Result<OrderId, Problem> {
    OrderId::parse(path_param(req, "order_id")?).map_err(|_| Problem::not_found("no such order"))
}

async fn get(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let o = orders::get_owned(app, &user, &order_id(req)?).await.map_err(Problem::from)?;
    Ok(json_response(200, &OrderView::from(&o)))
}

/// The codes of a paid order, for its owner (docs/code-pools.md); 409 `not_paid` before.
async fn codes(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let id = order_id(req)?;
    let codes = crate::service::codes::reveal_codes(app, &user, &id).await.map_err(Problem::from)?;
    let codes = codes.into_iter().map(OrderCode::from).collect();
    let mut r = json_response(200, &OrderCodes { order_id: id.to_string(), codes });
    // a code is a bearer secret: no shared cache may keep it
    r.headers.insert(::http::header::CACHE_CONTROL, ::http::header::HeaderValue::from_static("private, no-store"));
    Ok(r)
}

/// `POST /admin/orders/{order_id}/codes/redeem`: one of the order's codes redeemed, once
/// (docs/code-pools.md, "Redemption"). The code is in the body, never in a log line.
async fn redeem_code(app: &App, req: &Request) -> Result<Response, Problem> {
    use crate::api::codes::{CodeRedemption, RedeemCodeRequest};
    use crate::service::codes::redeem::{redeem, RedeemError};
    let b: RedeemCodeRequest = typed_body(req, app.config.max_body_bytes)?;
    let r = redeem(app, &order_id(req)?, &b.code).await.map_err(|e| match e {
        e @ RedeemError::BadCode(_) => Problem::validation(e.to_string()).field("code"),
        RedeemError::OrderNotFound => Problem::not_found("no such order"),
        e @ RedeemError::CodeNotFound => Problem::not_found(e.to_string()),
        e @ RedeemError::AlreadyRedeemed(_) => Problem::new(Code::AlreadyRedeemed, e.to_string()),
        e @ RedeemError::Expired(_) => Problem::new(Code::CodeExpired, e.to_string()),
        e @ RedeemError::Voided => Problem::new(Code::CodesVoided, e.to_string()),
        e @ RedeemError::NotRedeemable(_) => Problem::invalid_transition(e.to_string()),
        RedeemError::Contention => Problem::new(Code::TemporarilyUnavailable, "contention; retry").retry_after(1),
        RedeemError::Codes(e) => Problem::from(e),
        RedeemError::Store(e) => e.into(),
    })?;
    Ok(json_response(200, &CodeRedemption::from(&r)))
}

/// `POST /admin/orders/{order_id}/codes/reissue`: the supplier asked once more for a paid order's
/// pending codes (docs/suppliers.md, "Codes issued by the supplier"). Nothing is written unless
/// it issues them.
async fn reissue_codes(app: &App, req: &Request) -> Result<Response, Problem> {
    use crate::api::codes::{CodesReissued, ReissueCodesRequest};
    use crate::service::codes::supplier::{reissue, ReissueError};
    let b: ReissueCodesRequest = typed_body(req, app.config.max_body_bytes)?;
    let reason = b.check().map_err(|e| Problem::validation(e).field("reason"))?;
    let id = order_id(req)?;
    let actor = subject(req).map(|u| u.to_string()).unwrap_or_else(|_| "admin".into());
    tracing::info!(order_id = %id, actor, reason, "supplier code reissue asked");
    let n = reissue(app, &id, &actor).await.map_err(|e| match e {
        ReissueError::NotFound => Problem::not_found("no such order"),
        e @ (ReissueError::NoCodes | ReissueError::NotPaid(_) | ReissueError::AlreadyIssued) => {
            Problem::invalid_transition(e.to_string())
        }
        ReissueError::SupplierFailed(err) => {
            tracing::warn!(order_id = %id, error = format!("{err:#}"), "supplier code reissue failed");
            Problem::new(Code::TemporarilyUnavailable, "the supplier did not issue the codes; try again later")
                .retry_after(5)
        }
        ReissueError::Store(e) => e.into(),
    })?;
    Ok(json_response(200, &CodesReissued { order_id: id.to_string(), codes_status: "ISSUED", codes: n }))
}

async fn cancel(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    http::body_bytes(req, app.config.max_body_bytes)?;
    let o = orders::cancel(app, &user, &order_id(req)?).await.map_err(Problem::from)?;
    Ok(json_response(200, &OrderView::from(&o)))
}

/// Starts a payment at the provider (docs/payments.md): 201 created, 200 the open one again.
async fn start_payment(app: &App, req: &Request) -> Result<Response, Problem> {
    use crate::service::paying::{self, StartError};
    let user = subject(req)?;
    let raw = http::body_bytes(req, app.config.max_body_bytes)?;
    let body: StartPaymentRequest = if raw.iter().all(u8::is_ascii_whitespace) {
        StartPaymentRequest::default()
    } else {
        crate::api::body::parse(&raw)?
    };
    let provider = match body.provider.as_deref() {
        None => None,
        Some(name) => Some(paying::provider_named(name).ok_or_else(|| {
            Problem::validation(format!("unknown provider {name:?} (generic, stripe)")).field("provider")
        })?),
    };
    let (o, created) = paying::start(app, &user, &order_id(req)?, provider).await.map_err(|e| match e {
        StartError::Order(e) => Problem::from(e),
        StartError::WindowClosed => Problem::invalid_transition("the order's payment deadline has passed"),
        StartError::TooManyAttempts => Problem::new(Code::TooManyPayments, e.to_string()),
        StartError::Refused(_) => Problem::new(Code::ProviderRefused, e.to_string()),
        // the provider's error stays in the log: a buyer is told what to do, never the chain
        // (roles, URLs, key suffixes: review security-3 L2)
        StartError::Unavailable(ref cause) => {
            tracing::warn!(error = format!("{cause:#}"), "payment provider unavailable");
            Problem::new(Code::TemporarilyUnavailable, "the payment provider did not answer; retry in a moment")
                .retry_after(2)
        }
        StartError::Processing => Problem::new(Code::PaymentProcessing, e.to_string()),
    })?;
    let answer = PaymentStarted::of(&o).ok_or_else(|| Problem::internal("a PAYING order without an attempt"))?;
    Ok(json_response(if created { 201 } else { 200 }, &answer))
}

async fn buyer(app: &App, req: &Request, status: u16, change: Change) -> Result<Response, Problem> {
    let user = subject(req)?;
    let o = after_sale::apply(app, Caller::Buyer(&user), &order_id(req)?, change).await.map_err(Problem::from)?;
    Ok(json_response(status, &OrderView::from(&o)))
}

async fn admin(app: &App, req: &Request, change: Change) -> Result<Response, Problem> {
    let actor = subject(req).map(|u| u.to_string()).unwrap_or_else(|_| "admin".into());
    let id = order_id(req)?;
    let o = after_sale::apply_as(app, Caller::Admin, &id, change, Some(&actor)).await.map_err(Problem::from)?;
    tracing::info!(order_id = %id, actor, status = o.status.as_str(), "admin order change");
    Ok(json_response(200, &OrderView::from(&o)))
}

async fn admin_get(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = order_id(req)?;
    let o = match app.orders.get(&id).await? {
        Some(OrderRecord::Order(o)) => *o,
        _ => return Err(Problem::not_found("no such order")),
    };
    let lock = app.locks.get_reservation(&ReservationId::for_order(&id)).await?;
    let journal = app.journal.for_cause(id.as_str()).await?;
    let journal = journal.iter().map(crate::api::stock::JournalEntryBody::from).collect();
    let view = AdminOrderView::new(&o, lock.as_ref(), journal)
        .map_err(|e| Problem::internal(format!("order {} does not serialise: {e}", o.id)))?;
    Ok(json_response(200, &view))
}

/// The order's status changes, oldest first (docs/order-record.md, "Order log").
async fn admin_log(app: &App, req: &Request) -> Result<Response, Problem> {
    match app.orders.get(&order_id(req)?).await? {
        Some(OrderRecord::Order(o)) => Ok(json_response(200, &crate::api::orders::OrderLogView::from(&*o))),
        _ => Err(Problem::not_found("no such order")),
    }
}

fn encode_cursor(c: &OrderCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{}", c.created_at_ms, c.order_id))
}

fn decode_cursor(s: &str) -> Option<OrderCursor> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (ca, id) = text.split_once(':')?;
    Some(OrderCursor { created_at_ms: ca.parse().ok()?, order_id: OrderId::parse(id).ok()? })
}

/// The `limit` query parameter of a page (default [`DEFAULT_PAGE`], 1..=[`MAX_PAGE`]).
fn page_limit(req: &Request) -> Result<usize, Problem> {
    match query(req, "limit") {
        None => Ok(DEFAULT_PAGE),
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            _ => Err(Problem::validation(format!("limit must be an integer in 1..={MAX_PAGE}")).field("limit")),
        },
    }
}

/// Held refunds, oldest first (docs/payments.md, "Refund review").
async fn refund_reviews(app: &App, req: &Request) -> Result<Response, Problem> {
    let limit = page_limit(req)?;
    let after = match query(req, "cursor") {
        None => None,
        Some(c) => {
            let c = decode_cursor(c).ok_or_else(|| Problem::validation("cursor is not valid").field("cursor"))?;
            Some((c.created_at_ms, c.order_id))
        }
    };
    let (held, next) = after_sale::held_refunds(app, after, limit).await?;
    let now = crate::clock::now_ms();
    Ok(json_response(
        200,
        &RefundReviewList {
            reviews: held.iter().filter_map(|o| HeldRefundView::of(o, now)).collect(),
            next_cursor: next.map(|(t, id)| encode_cursor(&OrderCursor { created_at_ms: t, order_id: id })),
        },
    ))
}

async fn list(app: &App, req: &Request) -> Result<Response, Problem> {
    let user = subject(req)?;
    let limit = page_limit(req)?;
    let cursor = match query(req, "cursor") {
        None => None,
        Some(c) => Some(decode_cursor(c).ok_or_else(|| Problem::validation("cursor is not valid").field("cursor"))?),
    };
    let (orders, next) = app.orders.list_for_user(&user, cursor.as_ref(), limit).await?;
    Ok(json_response(
        200,
        &OrderList {
            orders: orders.iter().map(OrderView::from).collect(),
            next_cursor: next.as_ref().map(encode_cursor),
        },
    ))
}
