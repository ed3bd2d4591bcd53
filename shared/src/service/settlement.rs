//! Settlement reconcile (docs/payments.md, "Settlement"): for one UTC day and each provider,
//! what the provider lists (captures, refunds) against what Holdfast recorded (orders with a
//! capture that day, refunds issued that day), every difference named by kind. Read-only: it
//! repairs nothing (a capture Holdfast never applied is healed by the PAYING queries and the
//! callback's refund path; a person reads the rest), and it costs one listing per provider plus
//! one read per order involved.

use crate::clock;
use crate::context::App;
use crate::domain::model::Day;
use crate::domain::order::{Order, OrderRecord, Provider};
use crate::domain::refund::RefundStatus;
use crate::domain::OrderId;
use crate::ports::{DayListing, OrderIndex};
use crate::telemetry::names;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// What kind of difference a mismatch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// The provider captured money for no order Holdfast knows.
    CaptureWithoutOrder,
    /// The provider captured money for an order that never recorded that payment (its webhook
    /// and the deadline query both missed it).
    CaptureNotRecorded,
    /// Holdfast recorded a capture the provider does not list.
    PaidWithoutCapture,
    /// Both list the payment, with different amounts or currencies.
    AmountMismatch,
    /// The provider lists a refund Holdfast never issued.
    RefundNotRecorded,
    /// Holdfast issued a refund the provider does not list.
    RefundNotAtProvider,
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub kind: MismatchKind,
    pub provider: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<u64>,
}

/// The day's settlement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub date: String,
    pub payments_matched: usize,
    pub refunds_matched: usize,
    pub mismatches: Vec<Mismatch>,
}

const PROVIDERS: [Provider; 2] = [Provider::Generic, Provider::Stripe];

fn name(p: Provider) -> &'static str {
    p.as_str()
}

/// Settles `day` for every provider. A provider that is not configured is skipped when it
/// has nothing recorded (its listing would fail); one that fails otherwise fails the run.
pub async fn run(app: &App, day: Day) -> anyhow::Result<Report> {
    let from = day_start_ms(day);
    let to = from + 86_400_000;
    let mut orders: BTreeMap<OrderId, Order> = BTreeMap::new();
    for index in [OrderIndex::Captured, OrderIndex::Refunded] {
        for id in app.orders.between(index, from, to).await? {
            if let Some(OrderRecord::Order(o)) = app.orders.get(&id).await? {
                orders.insert(id, *o);
            }
        }
    }
    let mut report = Report { date: day.to_string(), payments_matched: 0, refunds_matched: 0, mismatches: Vec::new() };
    for p in PROVIDERS {
        let recorded = orders.values().any(|o| {
            o.payments.iter().any(|x| x.provider == p && x.succeeded) || o.refunds.iter().any(|r| r.provider == p)
        });
        let listing = match app.providers.get(p).day_listing(&day.to_string()).await {
            Ok(l) => l,
            Err(e) if !recorded => {
                tracing::debug!(provider = name(p), error = format!("{e:#}"), "settlement: provider not listed");
                continue;
            }
            Err(e) => return Err(e.context(format!("settlement {day}: listing {}", name(p)))),
        };
        compare(app, p, &listing, &orders, from, to, &mut report).await?;
    }
    report.mismatches.sort_by(|a, b| (a.kind, &a.order_id, &a.payment_id).cmp(&(b.kind, &b.order_id, &b.payment_id)));
    Ok(report)
}

/// Runs `day` and announces its mismatches (metric, log line per mismatch): the daily schedule
/// and `POST /admin/settlement/{date}/run`. First, every refund of the day still ISSUED (its
/// provider's confirmation never came) is asked of its provider and confirmed if done.
pub async fn run_and_report(app: &App, day: Day) -> anyhow::Result<Report> {
    let asked = ask_about_issued_refunds(app, day).await?;
    if asked > 0 {
        tracing::info!(date = %day, confirmed = asked, "settlement: refunds confirmed by asking their provider");
    }
    let report = run(app, day).await?;
    for m in report.mismatches.iter().filter(|m| m.kind == MismatchKind::CaptureNotRecorded) {
        if let Err(e) = apply_unrecorded_capture(app, m).await {
            tracing::warn!(date = %day, order_id = ?m.order_id, payment_id = ?m.payment_id, error = format!("{e:#}"),
                "settlement: unrecorded capture not applied");
        }
    }
    app.count(names::SETTLEMENT_MISMATCHES, report.mismatches.len() as u64);
    for m in &report.mismatches {
        tracing::warn!(date = %day, kind = ?m.kind, provider = m.provider, order_id = ?m.order_id,
            payment_id = ?m.payment_id, refund_id = ?m.refund_id, amount = ?m.amount, "settlement mismatch");
    }
    tracing::info!(date = %day, payments = report.payments_matched, refunds = report.refunds_matched,
        mismatches = report.mismatches.len(), "settlement done");
    Ok(report)
}

/// A capture the provider lists and its order never recorded (webhook lost, deadline query
/// missed or judged it cancellable) is applied as its webhook would have been (review
/// protocol-3 N1): the order is paid if it still can be, or the money is refunded (the order
/// closed meanwhile). Only a payment Holdfast started for that order (one of its attempts) is
/// applied; anything else stays a mismatch for a person. The report still names it.
async fn apply_unrecorded_capture(app: &App, m: &Mismatch) -> anyhow::Result<()> {
    let (Some(order_id), Some(payment_id)) = (m.order_id.as_deref(), m.payment_id.as_deref()) else { return Ok(()) };
    let id = OrderId::parse(order_id)?;
    let Some(OrderRecord::Order(o)) = app.orders.get(&id).await? else { return Ok(()) };
    let Some(a) = o.attempts.iter().find(|a| a.payment_id == payment_id) else { return Ok(()) };
    let Some(p) = app.providers.get(a.provider).payment(payment_id).await? else { return Ok(()) };
    if p.state != crate::ports::PaymentState::Succeeded {
        return Ok(());
    }
    let n = crate::service::payments::PaymentNotice {
        payment_id: payment_id.to_owned(),
        provider: a.provider,
        order_id: id,
        amount: p.amount,
        currency: p.currency,
        succeeded: true,
    };
    match crate::service::payments::apply(app, &n).await {
        Ok(r) => {
            app.count(names::CAPTURES_APPLIED_BY_SETTLEMENT, 1);
            tracing::warn!(order_id, payment_id, result = ?r, "settlement: an unrecorded capture applied");
            Ok(())
        }
        Err(crate::service::payments::PaymentError::Store(e)) => Err(e),
        // a wrong amount is recorded and refunded by apply; nothing else to do here
        Err(e) => {
            tracing::warn!(order_id, payment_id, error = %e, "settlement: unrecorded capture refused");
            Ok(())
        }
    }
}

/// Refunds issued on `day` whose confirmation never arrived: each is asked of its provider, and
/// one the provider reports done is confirmed as its webhook would have (service/refunds.rs,
/// `confirm`: only an ISSUED refund of that provider under its recorded id). Answers how many.
async fn ask_about_issued_refunds(app: &App, day: Day) -> anyhow::Result<usize> {
    let from = day_start_ms(day);
    let mut confirmed = 0;
    for id in app.orders.between(OrderIndex::Refunded, from, from + 86_400_000).await? {
        let Some(OrderRecord::Order(o)) = app.orders.get(&id).await? else { continue };
        confirmed += crate::service::refunds::ask_provider(app, &o).await?;
    }
    Ok(confirmed)
}

/// Yesterday, UTC: what the daily schedule settles.
pub fn yesterday() -> Day {
    Day::of_epoch_s(clock::now_s() - 86_400)
}

fn day_start_ms(day: Day) -> i64 {
    // a Day is a real date: its midnight is the epoch day times a day
    let s = day.to_string();
    chrono::NaiveDate::parse_from_str(&s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
        .unwrap_or_default()
}

/// Every difference between what provider `p` lists for the day (`from..to`, ms) and what
/// `orders` recorded, into `report`: first the captures, then the refunds.
async fn compare(
    app: &App,
    p: Provider,
    listing: &DayListing,
    orders: &BTreeMap<OrderId, Order>,
    from: i64,
    to: i64,
    report: &mut Report,
) -> anyhow::Result<()> {
    compare_captures(app, p, listing, orders, from..to, report).await?;
    compare_refunds(p, listing, orders, from..to, report);
    Ok(())
}

/// One difference of provider `p`.
fn mismatch(
    p: Provider,
    kind: MismatchKind,
    order_id: Option<String>,
    payment_id: Option<String>,
    refund_id: Option<String>,
    amount: Option<u64>,
) -> Mismatch {
    Mismatch { kind, provider: name(p), order_id, payment_id, refund_id, amount }
}

/// Every succeeded payment through `p` Holdfast recorded in `day`, by payment id: its order,
/// amount and currency.
fn recorded_captures<'a>(
    orders: &'a BTreeMap<OrderId, Order>,
    p: Provider,
    day: &Range<i64>,
) -> BTreeMap<&'a str, (&'a Order, u64, &'a str)> {
    let mut ours = BTreeMap::new();
    for o in orders.values() {
        for x in o.payments.iter().filter(|x| x.provider == p && x.succeeded && day.contains(&x.at_ms)) {
            ours.insert(x.payment_id.as_str(), (o, x.amount, x.currency.as_str()));
        }
    }
    ours
}

/// Captures: each one the provider lists against the payment Holdfast recorded, and each
/// recorded one the provider does not list that day.
async fn compare_captures(
    app: &App,
    p: Provider,
    listing: &DayListing,
    orders: &BTreeMap<OrderId, Order>,
    day: Range<i64>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let ours = recorded_captures(orders, p, &day);
    let mut seen = BTreeSet::new();
    for c in &listing.captures {
        seen.insert(c.payment_id.as_str());
        match ours.get(c.payment_id.as_str()) {
            Some(&(o, amount, currency)) if amount != c.amount || !currency.eq_ignore_ascii_case(&c.currency) => {
                let (order_id, payment_id) = (Some(o.id.to_string()), Some(c.payment_id.clone()));
                report.mismatches.push(mismatch(
                    p,
                    MismatchKind::AmountMismatch,
                    order_id,
                    payment_id,
                    None,
                    Some(c.amount),
                ));
            }
            Some(_) => report.payments_matched += 1,
            None => report_capture_from_another_day(app, p, c, report).await?,
        }
    }
    for (pid, (o, amount, _)) in &ours {
        if seen.contains(pid) {
            continue;
        }
        // listed on the day the money moved, which may be the day before (midnight)
        let elsewhere = app.providers.get(p).payment(pid).await?;
        if elsewhere.is_some_and(|x| x.state == crate::ports::PaymentState::Succeeded) {
            report.payments_matched += 1;
            continue;
        }
        let (order_id, payment_id) = (Some(o.id.to_string()), Some((*pid).to_owned()));
        report.mismatches.push(mismatch(
            p,
            MismatchKind::PaidWithoutCapture,
            order_id,
            payment_id,
            None,
            Some(*amount),
        ));
    }
    Ok(())
}

/// A listed capture Holdfast did not record that day: recorded on another day, or not at all
/// (asked of the order it names, if any).
async fn report_capture_from_another_day(
    app: &App,
    p: Provider,
    c: &crate::ports::ProviderPayment,
    report: &mut Report,
) -> anyhow::Result<()> {
    let order = match c.order_id.as_deref().and_then(|id| OrderId::parse(id).ok()) {
        Some(id) => match app.orders.get(&id).await? {
            Some(OrderRecord::Order(o)) => Some(*o),
            _ => None,
        },
        None => None,
    };
    let payment_id = Some(c.payment_id.clone());
    match order {
        None => report.mismatches.push(mismatch(
            p,
            MismatchKind::CaptureWithoutOrder,
            c.order_id.clone(),
            payment_id,
            None,
            Some(c.amount),
        )),
        Some(o) if o.payments.iter().any(|x| x.payment_id == c.payment_id && x.succeeded) => {
            report.payments_matched += 1
        }
        Some(o) => report.mismatches.push(mismatch(
            p,
            MismatchKind::CaptureNotRecorded,
            Some(o.id.to_string()),
            payment_id,
            None,
            Some(c.amount),
        )),
    }
    Ok(())
}

/// Refunds: every refund Holdfast issued (or saw confirmed) in `day` against the provider's
/// list, and every listed refund Holdfast never issued.
fn compare_refunds(
    p: Provider,
    listing: &DayListing,
    orders: &BTreeMap<OrderId, Order>,
    day: Range<i64>,
    report: &mut Report,
) {
    let listed: BTreeMap<&str, u64> =
        listing.refunds.iter().map(|r| (r.provider_refund_id.as_str(), r.amount)).collect();
    let mut known = BTreeSet::new();
    for o in orders.values() {
        for r in o.refunds.iter().filter(|r| r.provider == p && r.status != RefundStatus::Requested) {
            if let Some(prid) = r.provider_refund_id.as_deref() {
                known.insert(prid);
            }
            let in_day = r.issued_at_ms.is_some_and(|t| day.contains(&t));
            if !in_day {
                continue;
            }
            match r.provider_refund_id.as_deref().and_then(|prid| listed.get(prid)) {
                Some(_) => report.refunds_matched += 1,
                None => report.mismatches.push(mismatch(
                    p,
                    MismatchKind::RefundNotAtProvider,
                    Some(o.id.to_string()),
                    Some(r.payment_id.clone()),
                    Some(r.refund_id.clone()),
                    Some(r.amount),
                )),
            }
        }
    }
    for r in listing.refunds.iter().filter(|r| !known.contains(r.provider_refund_id.as_str())) {
        report.mismatches.push(mismatch(
            p,
            MismatchKind::RefundNotRecorded,
            None,
            Some(r.payment_id.clone()),
            Some(r.refund_id.clone().unwrap_or_else(|| r.provider_refund_id.clone())),
            Some(r.amount),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::memory_app;
    use crate::config::Config;
    use crate::domain::order::{OrderLine, OrderStatus, PaymentOutcome, PaymentRecord};
    use crate::domain::refund::{RefundReason, RefundRecord};
    use crate::domain::{Currency, Sku, UserId};
    use crate::ports::{PaymentRequest, PaymentState, RefundRequest};

    fn order(id: &str) -> Order {
        Order {
            id: OrderId::parse(id).unwrap(),
            user: UserId::parse("u").unwrap(),
            status: OrderStatus::PendingPayment,
            lines: vec![OrderLine {
                campaign: None,
                sku: Sku::parse("s").unwrap(),
                quantity: 1,
                unit_price: 500,
                dates: Vec::new(),
            }],
            amount: 500,
            currency: Currency::parse("EUR").unwrap(),
            pay_expire_at: clock::now_s() + 600,
            created_at_ms: 0,
            updated_at_ms: 0,
            version: 1,
            payment_id: None,
            payments: vec![],
            request_hash: String::new(),
            cancel_reason: None,
            refunds: vec![],
            shipment: None,
            return_info: None,
            supplier: Vec::new(),
            attempts: Vec::new(),
            review: None,
            correlation: None,
            settled_at_ms: None,
            details: Default::default(),
            log: Default::default(),
        }
    }

    fn paid(o: &Order, payment_id: &str) -> Order {
        let mut p = o.clone();
        p.status = OrderStatus::Paid;
        p.payment_id = Some(payment_id.into());
        p.payments.push(PaymentRecord {
            payment_id: payment_id.into(),
            provider: Provider::Generic,
            succeeded: true,
            amount: 500,
            currency: "EUR".into(),
            outcome: PaymentOutcome::Applied,
            at_ms: clock::now_ms(),
        });
        p
    }

    #[tokio::test]
    async fn each_kind_of_difference_is_named_and_matches_are_counted() {
        let (app, w) = memory_app("test", Config::from_lookup(&|_| None).unwrap()).unwrap();
        // Stripe lists nothing here
        let stripe = std::sync::Arc::new(crate::adapters::memory::MemoryProvider::new());
        let app = app.with_providers(crate::context::Providers { generic: w.provider.clone(), stripe });
        let today = Day::of_epoch_s(clock::now_s());
        let provider = app.providers.get(Provider::Generic).clone();
        let pay = |key: &str, order: &str| PaymentRequest {
            attempt_key: key.into(),
            order_id: OrderId::parse(order).unwrap(),
            amount: 500,
            currency: "EUR".into(),
        };
        // matched: captured at the provider and recorded
        let a = provider.create_payment(&pay("k1", "a")).await.unwrap().unwrap();
        w.provider.settle(&a.payment_id, PaymentState::Succeeded);
        app.orders.put_new(&paid(&order("a"), &a.payment_id)).await.unwrap();
        // captured for an order that never recorded it (webhook lost)
        let b = provider.create_payment(&pay("k2", "b")).await.unwrap().unwrap();
        w.provider.settle(&b.payment_id, PaymentState::Succeeded);
        app.orders.put_new(&order("b")).await.unwrap();
        // captured for no order at all
        let c = provider.create_payment(&pay("k3", "ghost")).await.unwrap().unwrap();
        w.provider.settle(&c.payment_id, PaymentState::Succeeded);
        // recorded paid, never captured
        app.orders.put_new(&paid(&order("d"), "never-captured")).await.unwrap();
        // a refund recorded issued that the provider never made, and one it made that we never issued
        let mut e = paid(&order("e"), &a.payment_id.replace('1', "9"));
        e.payments[0].at_ms = 0; // captured another day
        let mut rf = RefundRecord::requested(&e.payments[0], 500, RefundReason::BuyerRequest, 1);
        rf.status = RefundStatus::Issued;
        rf.provider_refund_id = Some("prov-never".into());
        rf.issued_at_ms = Some(clock::now_ms());
        e.refunds.push(rf);
        app.orders.put_new(&e).await.unwrap();
        let stray = RefundRequest {
            refund_id: "rf_stray".into(),
            payment_id: a.payment_id.clone(),
            order_id: OrderId::parse("a").unwrap(),
            amount: 100,
            currency: "EUR".into(),
        };
        provider.refund(&stray).await.unwrap().unwrap();

        let r = run(&app, today).await.unwrap();
        let kinds: Vec<_> = r.mismatches.iter().map(|m| (m.kind, m.order_id.clone())).collect();
        assert_eq!(r.payments_matched, 1, "{r:?}");
        assert_eq!(
            kinds,
            vec![
                (MismatchKind::CaptureWithoutOrder, Some("ghost".into())),
                (MismatchKind::CaptureNotRecorded, Some("b".into())),
                (MismatchKind::PaidWithoutCapture, Some("d".into())),
                (MismatchKind::RefundNotRecorded, None),
                (MismatchKind::RefundNotAtProvider, Some("e".into())),
            ]
        );
        // a refund the provider made whose confirmation never came is confirmed by asking
        let mut g = paid(&order("g"), &c.payment_id.replace('3', "7"));
        let req = RefundRequest {
            refund_id: "rf_g".into(),
            payment_id: g.payments[0].payment_id.clone(),
            order_id: g.id.clone(),
            amount: 500,
            currency: "EUR".into(),
        };
        let made = provider.refund(&req).await.unwrap().unwrap();
        w.provider.finish_refund(&made.provider_refund_id, true);
        let mut rg = RefundRecord::requested(&g.payments[0], 500, RefundReason::BuyerRequest, 1);
        rg.refund_id = "rf_g".into();
        rg.status = RefundStatus::Issued;
        rg.provider_refund_id = Some(made.provider_refund_id.clone());
        rg.issued_at_ms = Some(clock::now_ms());
        g.refunds.push(rg);
        app.orders.put_new(&g).await.unwrap();
        run_and_report(&app, today).await.unwrap();
        let Some(OrderRecord::Order(g)) = app.orders.get(&g.id).await.unwrap() else { panic!() };
        assert_eq!(g.refunds[0].status, RefundStatus::Confirmed);
        // another day has nothing
        let r = run(&app, today.next()).await.unwrap();
        assert!(r.mismatches.is_empty() && r.payments_matched == 0);
    }
}
