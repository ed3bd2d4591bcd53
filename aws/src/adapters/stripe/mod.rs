//! Stripe as a [`PaymentProvider`] (docs/after-sale.md, "Stripe"; docs/payments.md, "Provider
//! wire format"): PaymentIntents for payments, Refunds for refunds, balance transactions for the
//! day's captures. Form-encoded requests as Stripe's API takes them, `Authorization: Bearer
//! <secret key>`, `Stripe-Version: 2024-06-20` (the shapes read below are that version's; pinned
//! so an account upgrade changes nothing here). Answers are translated by the pure functions of
//! this module and nowhere else.
//!
//! - `create_payment`: `POST /v1/payment_intents` [`payment_form`] (`amount`, `currency` lower
//!   case, `automatic_payment_methods[enabled]=true`, `metadata[order_id]`,
//!   `metadata[attempt_key]`), `Idempotency-Key: <attempt_key>` (Stripe keeps keys 24 hours and
//!   replays the first answer: the same attempt key never makes a second intent within a day) →
//!   `id` (the payment id), `client_secret` (for Stripe.js), [`interpret_created`].
//! - `payment`: `GET /v1/payment_intents/{id}`, [`interpret_intent`], status by [`intent_state`]:
//!   `requires_payment_method`/`requires_confirmation`/`requires_action` → Open, `processing` →
//!   Processing, `requires_capture` → Processing (Holdfast creates automatic-capture intents, so
//!   an authorised-not-captured intent is one a person or another integration set up: money is
//!   held but not taken, so neither paid nor failed), `succeeded` → Succeeded, `canceled` →
//!   Cancelled; any other status is an error. Amount: `amount_received` once succeeded, else
//!   `amount`; currency upper-cased.
//! - `cancel_payment`: `POST /v1/payment_intents/{id}/cancel` (`cancellation_reason=abandoned`).
//!   Stripe answers 400 `payment_intent_unexpected_state` for an intent it can no longer cancel
//!   (succeeded, already canceled, processing): then the intent is read and answered as it
//!   stands — `Succeeded` means the money was taken ([`interpret_cancel`]).
//! - `refund`: `POST /v1/refunds` ([`form`], [`interpret`]); `refund_state`:
//!   `GET /v1/refunds/{id}` ([`interpret_refund_state`]: `succeeded` → `Some(true)`,
//!   `failed`/`canceled` → `Some(false)`, `pending`/`requires_action` → `None`).
//! - `day_listing`: captures from `GET /v1/balance_transactions?created[gte]=<day 00:00 UTC>&
//!   created[lt]=<next day>&limit=100&expand[]=data.source`, keeping `type` `charge`/`payment`
//!   and reading the expanded charge ([`balance_page`]); refunds from
//!   `GET /v1/refunds?created[gte]=…&created[lt]=…&limit=100`, failed/canceled ones left out
//!   ([`refunds_page`]); every page followed with `starting_after=<last id>` while `has_more`.
//!   Why balance transactions: Stripe lists PaymentIntents and charges by *creation* time, but a
//!   payment is captured when it succeeds — a buyer who opens the page at 23:59 and pays at
//!   00:01, or a bank debit that settles days later, would be listed on the wrong day (or, listed
//!   while still pending, never). A charge's balance transaction is created when the money is
//!   captured and is what Stripe's own balance reports use. Its `amount`/`currency` are in the
//!   settlement currency, so amount, currency, PaymentIntent and `metadata.order_id` (Stripe
//!   copies the intent's metadata to its charge at confirmation) come from the expanded charge.
//!
//! Errors, for every call: 2xx is read; 429, 409 (a request with this key is in flight), 5xx,
//! an unreadable 2xx, an oversized answer, a timeout or a network error → outer error (retry
//! later with the same key). A 404 `resource_missing` on a read or a cancel → `None`. Other 4xx:
//! on `create_payment` and `refund` → inner `Err(message)` (Stripe refusing: retrying will not
//! help); on the reads → outer error naming Stripe's error (a wrong key is not "no such
//! payment"). Single objects are read up to [`super::outbound::MAX_ANSWER_BYTES`] (64 KiB; an
//! object with Stripe's maximum metadata is under 30 KiB); list pages up to
//! [`LIST_ANSWER_BYTES`], since 100 expanded charges run to several hundred KiB.

use crate::ports::{
    CreatedPayment, DayListing, PaymentProvider, PaymentRequest, PaymentState, ProviderPayment, ProviderRefund,
    ProviderRefundState, RefundRequest, WebhookKeys,
};
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Connecting to Stripe; and one whole request (Stripe answers in well under a second; the
/// callers' own timeouts are above this, and a timeout is retried).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The API version the shapes read here are from.
pub const STRIPE_VERSION: &str = "2024-06-20";
/// Objects asked per list page (Stripe's maximum).
pub const LIST_LIMIT: u32 = 100;
/// Most bytes read from one list page: 100 expanded charges with Stripe's maximum metadata
/// (50 keys × 540 bytes) stay under it.
pub const LIST_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Most pages followed for one list (a peer that never ends its list is an error).
pub const MAX_LIST_PAGES: usize = 10_000;

pub struct Stripe {
    http: super::outbound::Client,
    base: String,
    /// The secret API key: from configuration or Secrets Manager (first key returned).
    key: Arc<dyn WebhookKeys>,
}

/// The adapter's name while it only refunded.
pub type StripeRefunds = Stripe;

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    r#type: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RefundObject {
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    failure_reason: Option<String>,
}

/// The fields of a Refund read for its state.
#[derive(Debug, Deserialize)]
struct RefundDetail {
    id: String,
    amount: u64,
    currency: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    payment_intent: Option<String>,
    #[serde(default)]
    charge: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

/// The fields of a PaymentIntent read.
#[derive(Debug, Deserialize)]
struct IntentObject {
    id: String,
    amount: u64,
    #[serde(default)]
    amount_received: u64,
    currency: String,
    status: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

/// A Stripe list object, one page.
#[derive(Debug, Deserialize)]
struct ListPage<T> {
    data: Vec<T>,
    has_more: bool,
}

/// The fields of a balance transaction read.
#[derive(Debug, Deserialize)]
struct BalanceTransaction {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    /// The expanded source (a charge for `charge`/`payment`), or its id if not expanded.
    #[serde(default)]
    source: Option<serde_json::Value>,
}

/// The fields of a Charge read (the source of a capture's balance transaction).
#[derive(Debug, Deserialize)]
struct ChargeObject {
    id: String,
    amount: u64,
    #[serde(default)]
    amount_captured: Option<u64>,
    currency: String,
    /// The PaymentIntent's id (or the intent, if expanded).
    #[serde(default)]
    payment_intent: Option<serde_json::Value>,
    #[serde(default)]
    metadata: HashMap<String, String>,
}

/// The form Stripe's `POST /v1/refunds` takes for `r`.
pub fn form(r: &RefundRequest) -> Vec<(&'static str, String)> {
    vec![
        ("payment_intent", r.payment_id.clone()),
        ("amount", r.amount.to_string()),
        ("metadata[refund_id]", r.refund_id.clone()),
        ("metadata[order_id]", r.order_id.as_str().to_owned()),
    ]
}

/// The form Stripe's `POST /v1/payment_intents` takes for `r`.
pub fn payment_form(r: &PaymentRequest) -> Vec<(&'static str, String)> {
    vec![
        ("amount", r.amount.to_string()),
        ("currency", r.currency.to_ascii_lowercase()),
        ("automatic_payment_methods[enabled]", "true".to_owned()),
        ("metadata[order_id]", r.order_id.as_str().to_owned()),
        ("metadata[attempt_key]", r.attempt_key.clone()),
    ]
}

/// What a PaymentIntent's `status` means here (`None`: a status this code does not know).
pub fn intent_state(status: &str) -> Option<PaymentState> {
    Some(match status {
        "requires_payment_method" | "requires_confirmation" | "requires_action" => PaymentState::Open,
        // requires_capture: authorised, not captured (Holdfast's intents capture automatically).
        "processing" | "requires_capture" => PaymentState::Processing,
        "succeeded" => PaymentState::Succeeded,
        "canceled" => PaymentState::Cancelled,
        _ => return None,
    })
}

/// What a refund's `status` means here: `Some(true)` done, `Some(false)` failed, `None` pending.
pub fn refund_outcome(status: Option<&str>) -> Option<bool> {
    match status {
        Some("succeeded") => Some(true),
        Some("failed") | Some("canceled") => Some(false),
        // pending, requires_action, or a status added later: not decided
        _ => None,
    }
}

/// Stripe's error answer as one line, and its `code`.
fn error_of(status: u16, body: &str) -> (String, Option<String>) {
    let detail = serde_json::from_str::<ErrorBody>(body).ok().map(|b| b.error);
    let message = match &detail {
        Some(d) => format!(
            "Stripe {status} {}{}: {}",
            d.r#type.as_deref().unwrap_or("error"),
            d.code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
            d.message.as_deref().unwrap_or("no message")
        ),
        None => format!("Stripe {status}: {}", body.chars().take(200).collect::<String>()),
    };
    (message, detail.and_then(|d| d.code))
}

fn retryable(status: u16) -> bool {
    status == 429 || status == 409 || status >= 500
}

/// A non-2xx answer to a call whose refusal is an inner error (create, refund).
fn refusal<T>(status: u16, body: &str) -> anyhow::Result<Result<T, String>> {
    let (message, _) = error_of(status, body);
    if retryable(status) {
        return Err(anyhow::anyhow!("{message} (retryable)"));
    }
    Ok(Err(message))
}

/// A non-2xx answer to a read: `None` for 404 `resource_missing`, else an error.
fn missing<T>(status: u16, body: &str) -> anyhow::Result<Option<T>> {
    let (message, code) = error_of(status, body);
    if status == 404 && code.as_deref() == Some("resource_missing") {
        return Ok(None);
    }
    Err(anyhow::anyhow!("{message}{}", if retryable(status) { " (retryable)" } else { "" }))
}

fn parse<T: serde::de::DeserializeOwned>(status: u16, body: &str, what: &str) -> anyhow::Result<T> {
    serde_json::from_str(body).map_err(|e| anyhow::anyhow!("Stripe answered {status} with an unreadable {what}: {e}"))
}

/// What an HTTP answer of Stripe to a refund means (pure; see the module documentation).
pub fn interpret(status: u16, body: &str) -> anyhow::Result<Result<ProviderRefund, String>> {
    if (200..300).contains(&status) {
        let o: RefundObject = parse(status, body, "refund object")?;
        return Ok(match o.status.as_deref() {
            Some("failed") | Some("canceled") => Err(format!(
                "Stripe refund {} {}: {}",
                o.id,
                o.status.as_deref().unwrap_or(""),
                o.failure_reason.as_deref().unwrap_or("no reason given")
            )),
            s => Ok(ProviderRefund { provider_refund_id: o.id, succeeded: s == Some("succeeded") }),
        });
    }
    refusal(status, body)
}

fn payment_of(o: IntentObject) -> anyhow::Result<ProviderPayment> {
    let state = intent_state(&o.status).ok_or_else(|| {
        anyhow::anyhow!("Stripe PaymentIntent {} has a status Holdfast does not know: {:?}", o.id, o.status)
    })?;
    Ok(ProviderPayment {
        amount: if state == PaymentState::Succeeded && o.amount_received > 0 { o.amount_received } else { o.amount },
        order_id: o.metadata.get("order_id").cloned(),
        currency: o.currency.to_ascii_uppercase(),
        payment_id: o.id,
        state,
    })
}

/// What Stripe's answer to `POST /v1/payment_intents` means (pure).
pub fn interpret_created(status: u16, body: &str) -> anyhow::Result<Result<CreatedPayment, String>> {
    if (200..300).contains(&status) {
        let o: IntentObject = parse(status, body, "PaymentIntent")?;
        return Ok(Ok(CreatedPayment { payment_id: o.id, redirect_url: None, client_secret: o.client_secret }));
    }
    refusal(status, body)
}

/// What Stripe's answer to `GET /v1/payment_intents/{id}` means (pure).
pub fn interpret_intent(status: u16, body: &str) -> anyhow::Result<Option<ProviderPayment>> {
    if (200..300).contains(&status) {
        return payment_of(parse(status, body, "PaymentIntent")?).map(Some);
    }
    missing(status, body)
}

/// What Stripe's answer to a cancel means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelAnswer {
    /// The intent after the call (`None`: Stripe does not know it).
    Stands(Option<ProviderPayment>),
    /// 400 `payment_intent_unexpected_state`: it can no longer be cancelled; read it.
    ReadIt,
}

/// What Stripe's answer to `POST /v1/payment_intents/{id}/cancel` means (pure).
pub fn interpret_cancel(status: u16, body: &str) -> anyhow::Result<CancelAnswer> {
    if status == 400 && error_of(status, body).1.as_deref() == Some("payment_intent_unexpected_state") {
        return Ok(CancelAnswer::ReadIt);
    }
    interpret_intent(status, body).map(CancelAnswer::Stands)
}

fn refund_state_of(r: RefundDetail) -> ProviderRefundState {
    ProviderRefundState {
        succeeded: refund_outcome(r.status.as_deref()),
        refund_id: r.metadata.get("refund_id").cloned(),
        payment_id: r.payment_intent.or(r.charge).unwrap_or_default(),
        amount: r.amount,
        currency: r.currency.to_ascii_uppercase(),
        provider_refund_id: r.id,
    }
}

/// What Stripe's answer to `GET /v1/refunds/{id}` means (pure).
pub fn interpret_refund_state(status: u16, body: &str) -> anyhow::Result<Option<ProviderRefundState>> {
    if (200..300).contains(&status) {
        return Ok(Some(refund_state_of(parse(status, body, "refund")?)));
    }
    missing(status, body)
}

/// `created[gte]` and `created[lt]` (epoch seconds) of a UTC day `YYYY-MM-DD`.
pub fn day_bounds(day: &str) -> anyhow::Result<(i64, i64)> {
    crate::domain::model::Day::parse(day).map_err(|e| anyhow::anyhow!("settlement day: {e}"))?;
    let date = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")?;
    let start = date.and_hms_opt(0, 0, 0).ok_or_else(|| anyhow::anyhow!("no midnight on {day}"))?.and_utc().timestamp();
    Ok((start, start + 86_400))
}

/// One page of a list: the items kept and, while `has_more`, the id to start after.
pub type Page<T> = (Vec<T>, Option<String>);

fn page<T: serde::de::DeserializeOwned>(status: u16, body: &str, what: &str) -> anyhow::Result<ListPage<T>> {
    if !(200..300).contains(&status) {
        let (message, _) = error_of(status, body);
        anyhow::bail!("listing {what}: {message}");
    }
    parse(status, body, what)
}

/// The captures on one page of `GET /v1/balance_transactions?expand[]=data.source` (pure):
/// `charge`/`payment` transactions, read from their expanded charge; other types skipped.
pub fn balance_page(status: u16, body: &str) -> anyhow::Result<Page<ProviderPayment>> {
    let p: ListPage<BalanceTransaction> = page(status, body, "balance transactions")?;
    let next = p.has_more.then(|| p.data.last().map(|t| t.id.clone())).flatten();
    let mut out = Vec::new();
    for t in p.data {
        if t.kind != "charge" && t.kind != "payment" {
            continue;
        }
        let Some(source @ serde_json::Value::Object(_)) = t.source else {
            anyhow::bail!("balance transaction {} has no expanded source (expand[]=data.source)", t.id)
        };
        let c: ChargeObject = serde_json::from_value(source)
            .map_err(|e| anyhow::anyhow!("balance transaction {}: unreadable charge: {e}", t.id))?;
        let intent = match &c.payment_intent {
            Some(serde_json::Value::String(id)) => Some(id.clone()),
            Some(serde_json::Value::Object(o)) => o.get("id").and_then(|v| v.as_str()).map(str::to_owned),
            _ => None,
        };
        out.push(ProviderPayment {
            payment_id: intent.unwrap_or_else(|| c.id.clone()),
            order_id: c.metadata.get("order_id").cloned(),
            amount: c.amount_captured.unwrap_or(c.amount),
            currency: c.currency.to_ascii_uppercase(),
            state: PaymentState::Succeeded,
        });
    }
    Ok((out, next))
}

/// The refunds on one page of `GET /v1/refunds` (pure): failed and canceled ones left out (no
/// money moved).
pub fn refunds_page(status: u16, body: &str) -> anyhow::Result<Page<ProviderRefundState>> {
    let p: ListPage<RefundDetail> = page(status, body, "refunds")?;
    let next = p.has_more.then(|| p.data.last().map(|r| r.id.clone())).flatten();
    let out = p.data.into_iter().map(refund_state_of).filter(|r| r.succeeded != Some(false)).collect();
    Ok((out, next))
}

/// A capped read of an answer (`cap` bytes; longer is an error).
async fn read_up_to(resp: super::outbound::Answer, cap: usize) -> anyhow::Result<Vec<u8>> {
    super::outbound::read_up_to(resp, cap.max(super::outbound::MAX_ANSWER_BYTES), "Stripe").await
}

/// One call: what to send.
struct Call<'a> {
    method: http::Method,
    path: &'a [&'a str],
    query: Vec<(&'static str, String)>,
    form: Option<Vec<(&'static str, String)>>,
    idempotency_key: Option<&'a str>,
    cap: usize,
}

impl<'a> Call<'a> {
    fn get(path: &'a [&'a str]) -> Self {
        Call {
            method: http::Method::GET,
            path,
            query: Vec::new(),
            form: None,
            idempotency_key: None,
            cap: super::outbound::MAX_ANSWER_BYTES,
        }
    }

    fn post(path: &'a [&'a str], form: Vec<(&'static str, String)>) -> Self {
        Call { method: http::Method::POST, form: Some(form), ..Call::get(path) }
    }
}

impl Stripe {
    pub fn new(base: impl Into<String>, key: Arc<dyn WebhookKeys>) -> anyhow::Result<Self> {
        let http = super::outbound::client(REQUEST_TIMEOUT, CONNECT_TIMEOUT)?;
        Ok(Stripe { http, base: super::outbound::base_url(&base.into())?, key })
    }

    /// Sends one call (every request to Stripe is built here: key, version, idempotency key) and
    /// answers its status and body (capped).
    async fn call(&self, c: Call<'_>) -> anyhow::Result<(u16, String)> {
        if let Some(bad) = c.path.iter().find(|s| s.is_empty() || **s == "." || **s == ".." || s.len() > 255) {
            anyhow::bail!("{bad:?} cannot be a Stripe id");
        }
        let key = self.key.keys().await?.into_iter().next().ok_or_else(|| anyhow::anyhow!("no Stripe API key"))?;
        let key = std::str::from_utf8(key.expose()).map_err(|_| anyhow::anyhow!("the Stripe API key is not UTF-8"))?;
        let mut url = url::Url::parse(&self.base)?;
        url.path_segments_mut()
            .map_err(|_| anyhow::anyhow!("Stripe URL {:?} cannot take a path", self.base))?
            .pop_if_empty()
            .extend(c.path);
        let shown = format!("{} {}", c.method, url.path());
        let mut rb = self.http.request(c.method, url).bearer(key.as_bytes()).header("Stripe-Version", STRIPE_VERSION);
        if !c.query.is_empty() {
            rb = rb.query(&c.query);
        }
        if let Some(k) = c.idempotency_key {
            rb = rb.header("Idempotency-Key", k);
        }
        if let Some(f) = &c.form {
            rb = rb.form(f);
        }
        let _span = super::usage::call("stripe:request");
        // the error names the method and path, never the headers: the key is not in it.
        let answer = rb.send().await?;
        let status = answer.status().as_u16();
        let body = read_up_to(answer, c.cap)
            .await
            .map_err(|e| anyhow::anyhow!("reading Stripe's answer to {shown}: {e:#}"))?;
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// Every page of a list at `path` with `query`, read by `read_page`.
    async fn list_all<T>(
        &self,
        path: &[&str],
        query: Vec<(&'static str, String)>,
        read_page: fn(u16, &str) -> anyhow::Result<Page<T>>,
    ) -> anyhow::Result<Vec<T>> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut q = query.clone();
            q.push(("limit", LIST_LIMIT.to_string()));
            if let Some(a) = &after {
                q.push(("starting_after", a.clone()));
            }
            let (status, body) = self.call(Call { query: q, cap: LIST_ANSWER_BYTES, ..Call::get(path) }).await?;
            let (items, next) = read_page(status, &body)?;
            out.extend(items);
            match next {
                None => return Ok(out),
                Some(n) if after.as_deref() == Some(n.as_str()) => {
                    anyhow::bail!("Stripe's list {} repeats starting_after={n}", path.join("/"))
                }
                n => after = n,
            }
        }
        anyhow::bail!("Stripe's list {} runs past {MAX_LIST_PAGES} pages", path.join("/"))
    }
}

#[async_trait]
impl PaymentProvider for Stripe {
    async fn create_payment(&self, r: &PaymentRequest) -> anyhow::Result<Result<CreatedPayment, String>> {
        let (status, body) = self
            .call(Call {
                idempotency_key: Some(&r.attempt_key),
                ..Call::post(&["v1", "payment_intents"], payment_form(r))
            })
            .await?;
        let out = interpret_created(status, &body);
        match &out {
            Ok(Ok(p)) => {
                tracing::info!(order_id = %r.order_id, attempt_key = r.attempt_key, payment_id = p.payment_id, "Stripe PaymentIntent created")
            }
            Ok(Err(m)) => {
                tracing::warn!(order_id = %r.order_id, attempt_key = r.attempt_key, reason = m, "Stripe refused the PaymentIntent")
            }
            Err(e) => {
                tracing::warn!(order_id = %r.order_id, attempt_key = r.attempt_key, error = %e, "Stripe PaymentIntent not created; retryable")
            }
        }
        out
    }

    async fn payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        let (status, body) = self.call(Call::get(&["v1", "payment_intents", payment_id])).await?;
        interpret_intent(status, &body)
    }

    async fn cancel_payment(&self, payment_id: &str) -> anyhow::Result<Option<ProviderPayment>> {
        let form = vec![("cancellation_reason", "abandoned".to_owned())];
        let (status, body) = self.call(Call::post(&["v1", "payment_intents", payment_id, "cancel"], form)).await?;
        match interpret_cancel(status, &body)? {
            CancelAnswer::Stands(p) => Ok(p),
            CancelAnswer::ReadIt => {
                let p = self.payment(payment_id).await?;
                tracing::info!(payment_id, state = ?p.as_ref().map(|p| p.state), "Stripe PaymentIntent could not be cancelled: answered as it stands");
                Ok(p)
            }
        }
    }

    async fn refund(&self, r: &RefundRequest) -> anyhow::Result<Result<ProviderRefund, String>> {
        let (status, body) =
            self.call(Call { idempotency_key: Some(&r.refund_id), ..Call::post(&["v1", "refunds"], form(r)) }).await?;
        let out = interpret(status, &body);
        match &out {
            Ok(Ok(p)) => {
                tracing::info!(refund_id = r.refund_id, stripe_refund = p.provider_refund_id, "Stripe refund accepted")
            }
            Ok(Err(m)) => tracing::warn!(refund_id = r.refund_id, reason = m, "Stripe refused the refund"),
            Err(e) => tracing::warn!(refund_id = r.refund_id, error = %e, "Stripe refund failed; will be retried"),
        }
        out
    }

    async fn refund_state(&self, provider_refund_id: &str) -> anyhow::Result<Option<ProviderRefundState>> {
        let (status, body) = self.call(Call::get(&["v1", "refunds", provider_refund_id])).await?;
        interpret_refund_state(status, &body)
    }

    async fn day_listing(&self, day: &str) -> anyhow::Result<DayListing> {
        let (gte, lt) = day_bounds(day)?;
        let created = vec![("created[gte]", gte.to_string()), ("created[lt]", lt.to_string())];
        let mut captures_query = created.clone();
        captures_query.push(("expand[]", "data.source".to_owned()));
        let captures = self.list_all(&["v1", "balance_transactions"], captures_query, balance_page).await?;
        let refunds = self.list_all(&["v1", "refunds"], created, refunds_page).await?;
        Ok(DayListing { captures, refunds })
    }
}

#[cfg(test)]
mod tests;
