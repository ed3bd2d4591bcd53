//! The OpenAPI 3.1 document of the HTTP API, generated from the types in [`crate::api`]. Each
//! operation's `security` is not written here: [`document`] takes it from the route table's rows
//! (`handlers::routes`), so it cannot disagree with what the handlers and `template.yaml` say.
//! The committed copy is `docs/openapi.json` (a test keeps it current; `make openapi` rewrites
//! it), the local stack serves it at `GET /openapi.json`, and a test checks that its routes equal
//! the handlers' route tables and `template.yaml`.
//!
//! Each operation below documents every status the route can answer with, including the API
//! Gateway authorizer's 401/403, whose body is `{"message"}` rather than a problem.

#![allow(dead_code)] // the functions exist only to carry their `#[utoipa::path]` operation

mod campaigns;
mod orders;
mod payments;
mod queue;
mod reservations;
mod sale;
mod stock;
mod waitlist;

use super::after_sale::{
    AdminOrderView, BackorderLineView, HeldRefundView, LockLineView, LockView, PaymentView, ReasonRequest,
    RefundDecisionRequest, RefundReviewList, RefundView, RefundWebhook, RefundWebhookAnswer, RefundWebhookStatus,
    ReturnReceivedRequest, ShipRequest, WarehouseUnits,
};
use super::campaigns::{
    Availability, CampaignAdjustmentRequest, CampaignItemRequest, CampaignItemView, CampaignRequest, CampaignViewBody,
    QueueRequest, WaveRequest, WaveView,
};
use super::codes::{CodeRedemption, CodesReissued, RedeemCodeRequest, ReissueCodesRequest};
use super::ledger::{
    LedgerDifference, LedgerJournal, LedgerLocks, LedgerMoney, LedgerReport, LedgerShard, LedgerSku, LedgerStock,
    LedgerTotals,
};
use super::orders::{
    CreateOrderRequest, DeliveryBody, ItemRequest, OrderCode, OrderCodes, OrderItem, OrderList, OrderLogEntryView,
    OrderLogView, OrderView, RecordedCheckoutView, RefundReviewView, SupplierBookingView,
};
use super::payments::{
    CallbackAnswer, CallbackResult, PaymentAttemptView, PaymentCallback, PaymentStarted, PaymentStatus,
    SettlementMismatch, SettlementReport, StartPaymentRequest,
};
use super::queue::{QueuePlace, QueuePublic, QueueStatsView};
use super::reservations::{ReservationRequest, ReservationView, ReservedItem};
use super::sale::{
    AdminSkuView, CampaignList, CampaignStats, CampaignSummary, LatencyView, Machinery, PerSecond, QueueView,
    ReconcileView, SalesSwitchRequest, SalesSwitchView, ShardView, StatsItem,
};
use super::stock::{
    AdjustmentRequest, BacklogView, CalendarDate, CalendarView, CodeBatchRequest, CodeBatchView, CodePoolView,
    CountersBody, JournalEntryBody, JournalPage, PutSkuRequest, SkuView, WarehouseStock,
};
use super::stripe::{StripeAnswer, StripeEvent, StripeEventData, StripeResult};
use super::waitlist::WaitlistEntryView;
use super::Auth;
use crate::domain::model::{BundleChild, Deduct, InventoryModel, Management, Oversell, Unit};
use crate::domain::sale::SalesMode;
use crate::domain::supplier::{BookingStatus, SimOutcome, SupplierAdapter, SupplierConfig};
use crate::domain::warehouse::Allocation;
use crate::http::{Code, ProblemBody};
use serde::Serialize;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::{Modify, OpenApi, ToSchema};

/// What API Gateway itself answers when its JWT authorizer refuses a request.
#[derive(Debug, Serialize, ToSchema)]
pub struct GatewayError {
    pub message: String,
}

/// The rows most operations share, each written once (utoipa's `IntoResponses`) and named in
/// an operation's `responses(...)` beside its own rows.
///
/// 401: API Gateway's JWT authorizer found no valid token.
#[derive(utoipa::IntoResponses)]
#[response(status = 401, description = "No valid token")]
pub struct NoValidToken(GatewayError);

/// 400: the body is not JSON.
#[derive(utoipa::IntoResponses)]
#[response(status = 400, description = "Not JSON", content_type = "application/problem+json")]
pub struct NotJson(ProblemBody);

/// 413: the body is over the 16 KiB limit.
#[derive(utoipa::IntoResponses)]
#[response(status = 413, description = "Body too large", content_type = "application/problem+json")]
pub struct TooLarge(ProblemBody);

/// 503: a dependency did not answer in time; the same request may be sent again.
#[derive(utoipa::IntoResponses)]
#[response(status = 503, description = "Retry", content_type = "application/problem+json")]
pub struct Retry(ProblemBody);

/// Name of the JWT bearer scheme (API Gateway's JWT authorizer; scopes from the `scope` claim).
pub const JWT: &str = "jwt";
/// Name of the webhook-signature scheme (`X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`).
pub const SIGNATURE: &str = "webhook_signature";
/// Name of Stripe's signature scheme (`Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`).
pub const STRIPE_SIGNATURE: &str = "stripe_signature";

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let c = doc.components.get_or_insert_with(Default::default);
        c.add_security_scheme(
            JWT,
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
        c.add_security_scheme(
            SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Signature",
                "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<raw body>\")>; at most 300 s old",
            ))),
        );
        c.add_security_scheme(
            STRIPE_SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Stripe-Signature",
                "Stripe's webhook signature: t=<unix seconds>,v1=<hex HMAC-SHA256(endpoint secret, \"<t>.<raw body>\")>, \
                 one or more v1 (any may match; other schemes ignored); within 300 s of now either way",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Holdfast",
        description = "Orders and stock reservations that never oversell. Errors are RFC 9457 \
                       application/problem+json with a stable `code`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(stock::put_sku, stock::adjust_sku, stock::pause_sku, stock::resume_sku, stock::sku_journal, stock::upload_codes, stock::code_pool, stock::get_sku, stock::availability, stock::calendar, stock::my_availability, campaigns::put_campaign,
          campaigns::adjust_campaign, campaigns::pause_campaign, campaigns::resume_campaign, campaigns::get_campaign, orders::create_order, orders::list_orders, orders::get_order, orders::order_codes, orders::cancel_order, orders::start_payment, payments::payment_callback,
          payments::stripe_webhook,
          orders::refund_order, orders::confirm_receipt, orders::return_order, orders::admin_get_order, orders::admin_order_log, orders::admin_ship_order, orders::admin_return_received,
          orders::admin_cancel_order, orders::admin_refund_decision, orders::admin_redeem_code, orders::admin_reissue_codes, orders::list_refund_reviews, orders::get_settlement, orders::run_settlement, orders::get_ledger,
          payments::refund_webhook,
          reservations::create_reservation, reservations::confirm_reservation, reservations::release_reservation,
          sale::get_sales_switch, sale::put_sales_switch, sale::admin_get_sku, sale::list_campaigns, sale::campaign_stats,
          sale::machinery, sale::console, sale::shop,
          queue::join_queue, queue::my_queue_place, queue::get_queue, queue::queued_checkout, queue::admin_queue,
          queue::pause_queue, queue::resume_queue,
          waitlist::join_waitlist, waitlist::leave_waitlist, waitlist::my_waitlist_entry),
    components(schemas(Code, ProblemBody, GatewayError, ItemRequest, CreateOrderRequest, OrderItem, OrderView,
                       RecordedCheckoutView,
                       DeliveryBody, OrderLogView, OrderLogEntryView,
                       StartPaymentRequest, PaymentStarted, PaymentAttemptView, RefundDecisionRequest, RefundReviewView,
                       QueuePlace, QueuePublic, QueueStatsView, QueueRequest, WaitlistEntryView,
                       RefundReviewList, HeldRefundView,
                       SettlementReport, SettlementMismatch,
                       LedgerReport, LedgerTotals, LedgerStock, LedgerLocks, LedgerJournal, LedgerMoney, LedgerSku,
                       LedgerShard, LedgerDifference,
                       OrderList, PutSkuRequest, AdjustmentRequest, SkuView, ReservationRequest, ReservedItem,
                       ReservationView, PaymentCallback, PaymentStatus, CallbackAnswer, CallbackResult,
                       StripeEvent, StripeEventData, StripeAnswer, StripeResult,
                       CampaignItemRequest, CampaignRequest, CampaignAdjustmentRequest, CampaignItemView,
                       WaveRequest, WaveView,
                       CampaignViewBody, Availability, ReasonRequest, ShipRequest, ReturnReceivedRequest,
                       RefundWebhook, RefundWebhookStatus, RefundWebhookAnswer, AdminOrderView, LockView,
                       LockLineView, BackorderLineView, WarehouseUnits, PaymentView, RefundView,
                       JournalPage, JournalEntryBody, CountersBody, CalendarView, CalendarDate,
                       InventoryModel, Management, Unit, Deduct, Oversell, BacklogView, BundleChild, WarehouseStock, Allocation,
                       CodeBatchRequest, CodeBatchView, CodePoolView, OrderCode, OrderCodes, RedeemCodeRequest,
                       CodeRedemption, ReissueCodesRequest, CodesReissued,
                       SupplierConfig, SupplierAdapter, SimOutcome, SupplierBookingView, BookingStatus,
                       SalesMode, SalesSwitchRequest, SalesSwitchView, AdminSkuView, ShardView, CampaignList,
                       CampaignSummary, CampaignStats, StatsItem, PerSecond, LatencyView, Machinery, QueueView,
                       ReconcileView)),
    modifiers(&Security),
    tags((name = "stock"), (name = "campaigns"), (name = "orders"), (name = "payments"), (name = "reservations"), (name = "sale"), (name = "queue"), (name = "waitlist")),
)]
pub struct ApiDoc;

/// The document as pretty JSON with a final newline, exactly as committed: each operation's
/// `security` is what `auth` says for its route key (`"METHOD /path"`), the route table's rows
/// (`handlers::routes::openapi_json`). An operation no route names, or a public one, has none.
pub fn document(auth: impl IntoIterator<Item = (&'static str, Auth)>) -> String {
    let mut doc = ApiDoc::openapi();
    for (key, auth) in auth {
        if let Some(op) = operation(&mut doc, key) {
            op.security = security(&auth);
        }
    }
    let mut s = doc.to_pretty_json().unwrap_or_default();
    s.push('\n');
    s
}

/// The operation of a route key in the document.
fn operation<'a>(doc: &'a mut utoipa::openapi::OpenApi, key: &str) -> Option<&'a mut utoipa::openapi::path::Operation> {
    let (method, path) = key.split_once(' ')?;
    let item = doc.paths.paths.get_mut(path)?;
    match method {
        "GET" => item.get.as_mut(),
        "PUT" => item.put.as_mut(),
        "POST" => item.post.as_mut(),
        "DELETE" => item.delete.as_mut(),
        _ => None,
    }
}

/// The OpenAPI security of a route's [`Auth`]: any one of its scopes, one requirement each.
fn security(auth: &Auth) -> Option<Vec<SecurityRequirement>> {
    match auth {
        Auth::Public => None,
        Auth::Signed(scheme) => Some(vec![SecurityRequirement::new(*scheme, Vec::<String>::new())]),
        Auth::User => Some(vec![SecurityRequirement::new(JWT, Vec::<String>::new())]),
        Auth::Scope(_) | Auth::AnyScope(_) => {
            Some(auth.scopes().into_iter().map(|s| SecurityRequirement::new(JWT, [s])).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_and_names_every_code() {
        let v: serde_json::Value = serde_json::from_str(&document([])).unwrap();
        assert_eq!(v["openapi"], "3.1.0");
        let codes = &v["components"]["schemas"]["Code"]["enum"];
        for c in Code::ALL {
            assert!(codes.as_array().unwrap().iter().any(|x| x == c.as_str()), "{c:?} missing");
        }
    }
}
