//! Codes issued by the supplier when a `SUPPLIER_CODES` order is paid (docs/suppliers.md, "Codes
//! issued by the supplier"): the issue (first attempt right after the payment's write, retries
//! after 1, 2 and 4 s through the payment-timeout queue, the sweep for an order whose message was
//! lost), an operator's reissue once the retries are spent, and the reveal to the paid owner.
//! Each booking's codes are asked for under its booking key (`<order_id>.<sku>`), so however
//! often the issue runs the supplier issues one set, and the order's compare-and-set records it
//! once.

use super::{keyring, CodeError, RevealedCode};
use crate::clock;
use crate::context::App;
use crate::domain::codes::{check_code, key_context, wrapped_key, StoredCode};
use crate::domain::order::codes::{self as issue, OrderCodes};
use crate::domain::order::{Order, OrderRecord, OrderStatus};
use crate::domain::supplier::codes::{self as booking, SealedCode};
use crate::domain::supplier::{booking_key, BookingStatus};
use crate::domain::{OrderId, Sku};
use crate::ports::{BookingRequest, Message};
use crate::service::lookup::StockRefusal;
use crate::telemetry::names;

/// What one issue attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssueOutcome {
    /// The codes are recorded on the order.
    Issued,
    /// The supplier failed; attempt `next` is queued after `delay_s`.
    Retrying { next: u32, delay_s: u32 },
    /// The last automatic attempt failed: the order stays paid with its codes pending.
    GaveUp,
    /// Nothing to ask (not paid, issued already, not a code order, refunded).
    NotWanted,
}

/// Why an operator's reissue is refused. Nothing is written for any of them.
#[derive(Debug, thiserror::Error)]
pub enum ReissueError {
    #[error("no such order")]
    NotFound,
    #[error("the order has no codes issued by a supplier")]
    NoCodes,
    #[error("the order is {0}: codes are issued for a PAID order only")]
    NotPaid(&'static str),
    #[error("the order's codes are already issued")]
    AlreadyIssued,
    #[error("the supplier did not issue the codes; try again later")]
    SupplierFailed(#[source] anyhow::Error),
    #[error(transparent)]
    Store(#[from] anyhow::Error),
}

/// The first attempt's message for an order just paid, if its supplier must issue codes.
pub fn first_issue(o: &Order) -> Option<Message> {
    issue::wanted(o, false).then(|| Message::SupplierIssue { schema: 1, order_id: o.id.to_string(), attempt: 1 })
}

/// After the payment's write: queues the first attempt. A send that fails is logged; the sweep
/// runs the issue `SWEEP_AFTER_S` after the payment (the order is in its index until then).
pub async fn after_paid(app: &App, o: &Order) {
    if let Some(msg) = first_issue(o) {
        if let Err(e) = app.messages.send(&msg, 0).await {
            tracing::warn!(order_id = %o.id, error = format!("{e:#}"), "supplier code issue not queued; the sweep runs it");
        }
    }
}

/// Attempt `attempt` (1-based) at the order's codes (the `SupplierIssue` message, or the sweep).
pub async fn issue(app: &App, id: &OrderId, attempt: u32) -> anyhow::Result<IssueOutcome> {
    let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else {
        return Ok(IssueOutcome::NotWanted);
    };
    if !issue::wanted(&o, false) {
        return Ok(IssueOutcome::NotWanted);
    }
    match ask(app, &o, false).await {
        Ok(codes) => {
            if write(
                app,
                id,
                |o| issue::wanted(o, false),
                |x, now| codes.iter().all(|(s, c)| issue::record_issued(x, s, c.clone(), now, None)),
            )
            .await?
            {
                app.count(names::SUPPLIER_CODES_ISSUED, 1);
                if attempt > 1 {
                    app.count(names::SUPPLIER_CODES_RETRIED, 1);
                }
                tracing::info!(order_id = %id, attempt, "supplier issued the order's codes");
            }
            Ok(IssueOutcome::Issued)
        }
        Err(e) => {
            app.count(names::SUPPLIER_ERRORS, 1);
            tracing::warn!(order_id = %id, attempt, error = format!("{e:#}"), "supplier code issue failed");
            if let Some(delay_s) = booking::retry_delay(attempt) {
                let next = attempt + 1;
                app.messages
                    .send(&Message::SupplierIssue { schema: 1, order_id: id.to_string(), attempt: next }, delay_s)
                    .await?;
                return Ok(IssueOutcome::Retrying { next, delay_s });
            }
            if write(app, id, |o| issue::wanted(o, false), |x, _| issue::give_up(x)).await? {
                app.count(names::SUPPLIER_CODES_PENDING, 1);
                tracing::error!(order_id = %id, "supplier codes still pending after every retry; an operator must reissue them");
            }
            Ok(IssueOutcome::GaveUp)
        }
    }
}

/// `POST /admin/orders/{order_id}/codes/reissue`: one more attempt, by an operator, at a paid
/// order's pending codes (the automatic ones given up, or still running). The codes issued.
pub async fn reissue(app: &App, id: &OrderId, actor: &str) -> Result<usize, ReissueError> {
    let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else {
        return Err(ReissueError::NotFound);
    };
    match issue::state(&o) {
        OrderCodes::None => return Err(ReissueError::NoCodes),
        OrderCodes::Issued => return Err(ReissueError::AlreadyIssued),
        _ if o.status != OrderStatus::Paid => return Err(ReissueError::NotPaid(o.status.as_str())),
        _ => {}
    }
    let codes = ask(app, &o, true).await.map_err(|e| {
        app.count(names::SUPPLIER_ERRORS, 1);
        ReissueError::SupplierFailed(e)
    })?;
    let n = codes.iter().map(|(_, c)| c.len()).sum();
    if !write(
        app,
        id,
        |o| issue::wanted(o, true),
        |x, now| codes.iter().all(|(s, c)| issue::record_issued(x, s, c.clone(), now, Some(actor))),
    )
    .await?
    {
        return Err(ReissueError::AlreadyIssued);
    }
    app.count(names::SUPPLIER_CODES_REISSUED, 1);
    tracing::warn!(order_id = %id, actor, codes = n, "supplier codes reissued by an operator");
    Ok(n)
}

/// Asks the supplier for every booking's codes still wanted and seals them. Any failure (no
/// answer, a refusal, a wrong count or a malformed code) fails the whole attempt.
async fn ask(app: &App, o: &Order, manual: bool) -> anyhow::Result<Vec<(Sku, Vec<SealedCode>)>> {
    let keys = keyring(app).await?;
    let mut out = Vec::new();
    for b in o.supplier.iter().filter(|b| b.issues_codes) {
        let wanted = match b.codes.as_ref().map(|c| c.status) {
            Some(booking::IssueStatus::Pending) => true,
            Some(booking::IssueStatus::GaveUp) => manual,
            _ => false,
        };
        if !wanted {
            continue;
        }
        let booking_id = match (&b.booking_id, b.status) {
            (Some(id), BookingStatus::Confirmed) => id,
            _ => anyhow::bail!("booking of {} is not confirmed", b.sku),
        };
        let key = booking_key(&o.id, &b.sku);
        let req = BookingRequest { key: &key, sku: &b.sku, config: &b.config, quantity: b.quantity, dates: &[] };
        let codes = app.supplier.issue_codes(booking_id, &req).await?;
        if codes.len() != b.quantity as usize {
            anyhow::bail!("the supplier issued {} codes of {} for {} units", codes.len(), b.sku, b.quantity);
        }
        let data_key = match &app.code_key_service {
            Some(k) => Some(k.generate_data_key(&key_context(&b.sku)).await?),
            None => None,
        };
        let mut sealed = Vec::with_capacity(codes.len());
        for (i, code) in codes.iter().enumerate() {
            check_code(code).map_err(|why| anyhow::anyhow!("the supplier issued a code of {} that {why}", b.sku))?;
            let c = match &data_key {
                Some(dk) => keys.seal_kms(dk, &b.sku, 0, i as u64, code)?,
                None => keys.seal_at(&b.sku, 0, i as u64, code)?,
            };
            sealed.push(SealedCode { fingerprint: c.fingerprint, kid: c.kid, sealed: c.sealed });
        }
        out.push((b.sku.clone(), sealed));
    }
    Ok(out)
}

/// Applies `change` to the order with compare-and-set while `gate` holds (e.g. its codes are
/// still wanted); `false` if it no longer does (another attempt recorded them) or `change`
/// changed nothing.
async fn write(
    app: &App,
    id: &OrderId,
    gate: impl Fn(&Order) -> bool,
    change: impl Fn(&mut Order, i64) -> bool,
) -> anyhow::Result<bool> {
    for attempt in 1..=crate::service::CAS_ATTEMPTS {
        let Some(OrderRecord::Order(o)) = app.orders.get(id).await? else {
            return Ok(false);
        };
        if !gate(&o) {
            return Ok(false);
        }
        let now = clock::now_ms();
        let mut changed = true;
        let next = o.next(now, |x| changed = change(x, now));
        if !changed {
            return Ok(false);
        }
        if app.orders.replace(&o, &next).await? {
            return Ok(true);
        }
        crate::service::backoff(attempt).await;
    }
    anyhow::bail!("order {id} kept changing under the code issue; retried")
}

/// A buyer's or an operator's refund of an order with supplier codes: `None` if it has none;
/// else a buyer's refund of codes already shown waits for an admin (`Some(Some("codes_revealed"))`),
/// any other goes ahead (the codes are never shown after it).
pub fn refund_rule(o: &Order, buyer: bool) -> Option<Option<&'static str>> {
    match issue::state(o) {
        OrderCodes::None => None,
        _ if buyer && issue::revealed(o) => Some(Some("codes_revealed")),
        _ => Some(None),
    }
}

/// A shipment of an order whose supplier has not issued its codes yet is refused: once shipped,
/// the order is no longer PAID, so no attempt, sweep or reissue would ask for them again and its
/// buyer would never see them (found by the simulator, seed 6 of `make sim`).
pub fn ship_rule(o: &Order, ship: bool) -> Result<(), StockRefusal> {
    let pending = matches!(issue::state(o), OrderCodes::Pending | OrderCodes::GaveUp);
    if ship && pending {
        return Err(StockRefusal::CodesNotIssued);
    }
    Ok(())
}

/// The codes of a paid order with supplier codes, for its owner (the caller checked the owner,
/// the payment and the refund review); `None` if the order has none. The first reveal is
/// recorded on the order, conditional on it still being PAID, before anything is shown.
pub async fn reveal(app: &App, o: &Order) -> Result<Option<Vec<RevealedCode>>, CodeError> {
    match issue::state(o) {
        OrderCodes::None => return Ok(None),
        _ if matches!(o.status, OrderStatus::Refunding | OrderStatus::Refunded | OrderStatus::Returned) => {
            return Err(if issue::revealed(o) { CodeError::CodesVoided } else { CodeError::CodesWithdrawn });
        }
        OrderCodes::Issued => {}
        OrderCodes::Unpaid | OrderCodes::Pending | OrderCodes::GaveUp => return Err(CodeError::IssuePending),
    }
    if !issue::revealed(o) && !write(app, &o.id, |x| issue::buyer_keeps(x.status), issue::mark_revealed).await? {
        // refunded (or otherwise moved) meanwhile: shown never, or by the reveal that won
        return Err(CodeError::Contention);
    }
    open(app, o).await.map(Some)
}

async fn open(app: &App, o: &Order) -> Result<Vec<RevealedCode>, CodeError> {
    let keys = keyring(app).await?;
    let mut out = Vec::new();
    for b in o.supplier.iter().filter(|b| b.issues_codes) {
        let Some(c) = b.codes.as_ref() else { continue };
        for (i, s) in c.codes.iter().enumerate() {
            let stored = StoredCode {
                fingerprint: s.fingerprint.clone(),
                kid: s.kid.clone(),
                sealed: s.sealed.clone(),
                ..StoredCode::default()
            };
            let refuse = |why: String| {
                tracing::error!(order_id = %o.id, sku = %b.sku, pos = i, why, "an issued code was refused at reveal; nothing shown");
                CodeError::Tampered
            };
            let data_key = match wrapped_key(&stored).map_err(|e| refuse(e.to_string()))? {
                None => None,
                Some(w) => {
                    let service = app.code_key_service.as_ref().ok_or_else(|| {
                        CodeError::Keys(anyhow::anyhow!("a code sealed under KMS, and no KMS key is configured"))
                    })?;
                    let k = service.decrypt_data_key(&w, &key_context(&b.sku)).await.map_err(CodeError::Keys)?;
                    Some(k.ok_or_else(|| refuse("the key service refused its data key".into()))?)
                }
            };
            let opened = keys
                .open_at_with(&b.sku, (0, i as u64), &stored, data_key.as_ref())
                .map_err(|e| refuse(e.to_string()))?;
            if opened.relocated.is_some() {
                return Err(refuse("sealed for another place in the order".into()));
            }
            let state = crate::domain::codes::lifecycle::CodeState::of(None, None, clock::now_ms());
            out.push(RevealedCode { sku: b.sku.clone(), code: opened.code, state, expires_at_ms: None });
        }
    }
    Ok(out)
}
