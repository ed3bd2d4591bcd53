//! What must hold after every step (safety) and once everything has settled (liveness and money).

use crate::world::Sim;
use holdfast::domain::invariants::{check_all, Violation};
use holdfast::domain::kind::held_until_shipment;
use holdfast::domain::order::{Order, OrderRecord, OrderStatus, PaymentOutcome};
use holdfast::domain::refund::RefundStatus;
use holdfast::domain::reservation::{LockStatus, Reservation};
use holdfast::domain::{OrderId, ReservationId, Sku, UserId};
use holdfast::ports::{PaymentState, Queues};
use std::collections::{BTreeMap, HashSet};

/// Everything `check_all` reports except what only holds at quiescence (a lock whose order moved
/// and whose event is still on its way; a closed order's bookings not yet cancelled).
fn safety(v: &Violation) -> bool {
    // codes claimed by a checkout that has not frozen yet (or crashed between claim and freeze,
    // until the orphan repair) are in no ring and no lock: the ring count and a released lock's
    // codes are judged once quiet, as reconcile does
    if let Violation::CodePool { detail, .. } = v {
        return !(detail.contains("ring holds") || detail.contains("neither pooled nor held"));
    }
    !matches!(
        v,
        Violation::StrandedLock { .. }
            | Violation::OrderLockMismatch { .. }
            | Violation::SupplierBookingHeld { .. }
            | Violation::RefundedSupplierBookingHeld { .. }
    )
}

fn orders(sim: &Sim) -> Vec<Order> {
    sim.world
        .orders
        .records()
        .into_iter()
        .filter_map(|(_, r)| match r {
            OrderRecord::Order(o) => Some(*o),
            OrderRecord::Void => None,
        })
        .collect()
}

/// The violations now; `quiescent` adds the liveness and money checks.
pub fn check(sim: &Sim, quiescent: bool) -> Vec<String> {
    let snap = sim.world.snapshot(sim.app.config.reservation_check_delay_s);
    let mut out: Vec<String> =
        check_all(&snap).into_iter().filter(|v| quiescent || safety(v)).map(|v| format!("{v:?}")).collect();
    out.extend(sim.extra.iter().cloned());
    // the backlog identity is part of `check_all` (a safety check: its item and the lock lines
    // move in one transaction, so it holds after every step); at quiescence nothing waits that
    // stock could fill
    if quiescent {
        out.extend(backlog_stranded(sim, &snap.backlogs));
    }
    let all = orders(sim);
    if quiescent {
        // a checkout answered RECORDED is written or refused once the store answers, never lost;
        // one written is an order
        out.extend(sim.recorded.iter().map(|id| format!("RecordedCheckoutLost {{ order: {id} }}")));
        for id in sim.recorded_written.iter().filter(|id| !all.iter().any(|o| &o.id == *id)) {
            out.push(format!("RecordedCheckoutNotAnOrder {{ order: {id} }}"));
        }
    }
    for o in &all {
        // a payment is applied only before the order's deadline (a payment started in time:
        // within the grace the provider is given, docs/payments.md)
        let grace = if o.attempts.is_empty() { 0 } else { sim.app.config.payment_grace_s };
        for p in o.payments.iter().filter(|p| p.outcome == PaymentOutcome::Applied) {
            if p.at_ms / 1000 >= o.pay_expire_at + grace {
                out.push(format!(
                    "PaidAfterDeadline {{ order: {}, paid_s: {}, deadline_s: {} }}",
                    o.id,
                    p.at_ms / 1000,
                    o.pay_expire_at
                ));
            }
        }
        // never more money back than came in, per payment
        // (a payment id may carry a FAILED notice and then a success: a retried card payment)
        for p in &o.payments {
            let back: u64 = o.refunds.iter().filter(|r| r.payment_id == p.payment_id).map(|r| r.amount).sum();
            let came: u64 =
                o.payments.iter().filter(|x| x.payment_id == p.payment_id && x.succeeded).map(|x| x.amount).sum();
            if back > came {
                out.push(format!(
                    "RefundedMoreThanPaid {{ order: {}, payment: {}, in: {came}, back: {back} }}",
                    o.id, p.payment_id
                ));
            }
        }
    }
    // the stock-lost mark goes only on a released lock, which is then never sold
    for r in snap.reservations.iter().filter(|r| r.oversold && r.status != LockStatus::Released) {
        out.push(format!("MarkedOversoldButHeld {{ lock: {}, status: {:?} }}", r.id, r.status));
    }
    if quiescent {
        // a paid order held until shipment keeps its lock FROZEN until it ships: held, and sold
        // to its buyer as far as the money goes (docs/inventory-models.md, "Deduction at shipment")
        let awaiting: HashSet<String> = all
            .iter()
            .filter(|o| matches!(o.status, OrderStatus::Paid | OrderStatus::RefundRequested) && o.shipment.is_none())
            .map(|o| ReservationId::for_order(&o.id).to_string())
            .collect();
        let held = |r: &&Reservation| {
            r.status == LockStatus::Frozen && held_until_shipment(r) && awaiting.contains(r.id.as_str())
        };
        for r in snap.reservations.iter().filter(|r| r.status == LockStatus::Frozen && !held(r)) {
            out.push(format!("FrozenAtQuiescence {{ lock: {} }}", r.id));
        }
        let sold: HashSet<String> = snap
            .reservations
            .iter()
            .filter(|r| (r.status == LockStatus::Sold || held(r)) && !r.oversold)
            .map(|r| r.id.to_string())
            .collect();
        out.extend(provider_money(sim, &all, &sold));
        out.extend(money(sim, &all, &sold));
    }
    out
}

/// **BacklogStranded**: at quiescence no backorder waits while its SKU has units free to fill it
/// (a restock fills the oldest orders at once, reconcile's SKU sweep finishes a fill stopped
/// half-way) — unless the SKU is stopped from sale, which holds its fills too.
fn backlog_stranded(sim: &Sim, backlogs: &[(Sku, holdfast::domain::backorder::Backlog)]) -> Vec<String> {
    let mut out = Vec::new();
    let metas = sim.world.stock.metas();
    for (sku, b) in backlogs.iter().filter(|(_, b)| b.waiting() > 0) {
        if metas.iter().any(|m| &m.sku == sku && m.paused) {
            continue;
        }
        let free: i64 = sim.world.stock.shards(sku).iter().map(|c| c.available.max(0)).sum();
        if free > 0 {
            out.push(format!("BacklogStranded {{ sku: {sku}, waiting: {}, free_units: {free} }}", b.waiting()));
        }
    }
    out
}

/// Money at quiescence from the payment provider's own ledger (what the in-memory provider
/// captured and refunded), not from Holdfast's records: for every order, captured − refunded
/// there = what Holdfast kept (the amount of an order paid and not taken back, else 0). An
/// order closed unpaid (EXPIRED, CANCELLED, FAILED) keeps nothing there, and the provider holds
/// money for no order Holdfast does not know.
fn provider_money(sim: &Sim, all: &[Order], sold: &HashSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut captured: BTreeMap<String, u64> = BTreeMap::new();
    for p in sim.provider.payments().into_iter().filter(|p| p.state == PaymentState::Succeeded) {
        match p.order_id {
            Some(id) => *captured.entry(id).or_default() += p.amount,
            None => out.push(format!("CaptureWithoutOrder {{ payment: {}, amount: {} }}", p.payment_id, p.amount)),
        }
    }
    // every refund the provider accepted (none fails in the simulator: accepted is money back)
    let mut refunded: BTreeMap<String, u64> = BTreeMap::new();
    for r in sim.provider.refunds() {
        *refunded.entry(r.order_id.to_string()).or_default() += r.amount;
    }
    let known: HashSet<&str> = all.iter().map(|o| o.id.as_str()).collect();
    for id in captured.keys().chain(refunded.keys()).filter(|id| !known.contains(id.as_str())) {
        out.push(format!("ProviderMoneyWithoutOrder {{ order: {id} }}"));
    }
    for o in all {
        let c = captured.get(o.id.as_str()).copied().unwrap_or(0);
        let r = refunded.get(o.id.as_str()).copied().unwrap_or(0);
        let kept = if kept(o, sold) { o.pay_amount() } else { 0 };
        if c.checked_sub(r) == Some(kept) {
            continue;
        }
        let name = if matches!(o.status, OrderStatus::Expired | OrderStatus::Cancelled | OrderStatus::Failed) {
            "UnpaidOrderKeepsMoney"
        } else {
            "ProviderMoneyIdentity"
        };
        out.push(format!(
            "{name} {{ order: {}, status: {}, captured: {c}, refunded: {r}, kept: {kept} }}",
            o.id,
            o.status.as_str()
        ));
    }
    out
}

/// Whether the buyer keeps what the order sold: paid or later, not taken back, and its lock
/// sold (a released lock's stock went back; a restocked one came back).
fn kept(o: &Order, sold: &HashSet<String>) -> bool {
    matches!(
        o.status,
        OrderStatus::Paid
            | OrderStatus::Shipped
            | OrderStatus::Completed
            | OrderStatus::ReturnRequested
            | OrderStatus::RefundRequested
    ) && sold.contains(&ReservationId::for_order(&o.id).to_string())
}

/// Money at quiescence as Holdfast recorded it: for every order, the payments it recorded
/// captured − the refunds it recorded = the price of what it delivered; every refund asked for
/// reached the provider exactly once, and the provider refunded nothing else.
fn money(sim: &Sim, all: &[Order], sold: &HashSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let at_provider = sim.provider.refunds();
    let mut ids = HashSet::new();
    for r in &at_provider {
        if !ids.insert(r.refund_id.clone()) {
            out.push(format!("RefundSentTwice {{ refund: {} }}", r.refund_id));
        }
    }
    let mut ours = HashSet::new();
    for o in all {
        let captured: u64 = o
            .payments
            .iter()
            .filter(|p| p.succeeded && p.outcome != PaymentOutcome::FailedRecorded)
            .map(|p| p.amount)
            .sum();
        let refunded: u64 = o.refunds.iter().map(|r| r.amount).sum();
        let delivered = if kept(o, sold) { o.pay_amount() } else { 0 };
        if captured.checked_sub(refunded) != Some(delivered) {
            out.push(format!(
                "RecordedMoneyIdentity {{ order: {}, status: {}, captured: {captured}, refunded: {refunded}, delivered: {delivered} }}",
                o.id,
                o.status.as_str()
            ));
        }
        for r in &o.refunds {
            ours.insert(r.refund_id.clone());
            let sent = ids.contains(&r.refund_id);
            match (r.status, sent) {
                (RefundStatus::Requested, _) => {
                    out.push(format!("RefundNeverSent {{ order: {}, refund: {} }}", o.id, r.refund_id))
                }
                (RefundStatus::Issued | RefundStatus::Confirmed, false) => {
                    out.push(format!("RefundMarkedButNotSent {{ order: {}, refund: {} }}", o.id, r.refund_id))
                }
                _ => {}
            }
        }
    }
    for r in &at_provider {
        if !ours.contains(&r.refund_id) {
            out.push(format!("RefundWithoutRecord {{ refund: {} }}", r.refund_id));
        }
    }
    // money the provider took is on its order (applied, or owed back): a lost webhook is found
    // by the deadline query or reconcile, never left captured on an expired order
    for p in sim.provider.payments().into_iter().filter(|p| p.state == PaymentState::Succeeded) {
        let recorded = all.iter().any(|o| o.payments.iter().any(|x| x.payment_id == p.payment_id && x.succeeded));
        if !recorded {
            out.push(format!("CaptureNotRecorded {{ order: {:?}, payment: {} }}", p.order_id, p.payment_id));
        }
    }
    // nothing is left waiting on its provider at quiescence
    for o in all.iter().filter(|o| o.status == OrderStatus::Paying) {
        out.push(format!("PayingAtQuiescence {{ order: {} }}", o.id));
    }
    out
}

/// The waiting room, read from the store's Queues port: every order with a line of the queued
/// drop spent its buyer's admission (the one ticket a buyer has), no admission carries two
/// orders, and the drop never holds or sells more units than its quota. The caller turns the
/// ports' interleaving off around it (a check draws nothing from the seeded generator).
pub async fn queue(sim: &Sim) -> Vec<String> {
    let c = &sim.drop;
    let mut out = Vec::new();
    let mut by_user: BTreeMap<UserId, Vec<OrderId>> = BTreeMap::new();
    for o in orders(sim).into_iter().filter(|o| o.lines.iter().any(|l| l.campaign.as_ref() == Some(c))) {
        by_user.entry(o.user.clone()).or_default().push(o.id.clone());
    }
    for (user, ids) in &by_user {
        if ids.len() > 1 {
            out.push(format!("TwoOrdersOneAdmission {{ campaign: {c}, user: {user}, orders: {ids:?} }}"));
        }
        let ticket = match sim.world.stock.ticket(c, user).await {
            Ok(Some(t)) => t.number,
            Ok(None) => {
                out.push(format!("QueuedOrderWithoutTicket {{ campaign: {c}, user: {user}, orders: {ids:?} }}"));
                continue;
            }
            Err(e) => {
                out.push(format!("QueueUnreadable {{ campaign: {c}, error: {e:#} }}"));
                continue;
            }
        };
        match sim.world.stock.spent(c, ticket).await {
            Ok(true) => {}
            Ok(false) => out.push(format!(
                "QueuedOrderWithoutAdmission {{ campaign: {c}, user: {user}, ticket: {ticket}, orders: {ids:?} }}"
            )),
            Err(e) => out.push(format!("QueueUnreadable {{ campaign: {c}, error: {e:#} }}")),
        }
    }
    // units held (FROZEN) or sold (SOLD) through the drop: a released or restocked lock gave
    // its units back to the quota
    let units: u64 = sim
        .world
        .stock
        .reservations()
        .iter()
        .filter(|r| matches!(r.status, LockStatus::Frozen | LockStatus::Sold) && !r.oversold)
        .flat_map(|r| r.lines.iter())
        .filter(|l| l.campaign.as_ref().is_some_and(|cl| cl.campaign_id == *c))
        .map(|l| u64::from(l.quantity))
        .sum();
    if units > crate::shop::DROP_QUOTA.unsigned_abs() {
        out.push(format!("QueueOverQuota {{ campaign: {c}, units: {units}, quota: {} }}", crate::shop::DROP_QUOTA));
    }
    out
}

/// The waitlists (docs/simulator.md, "The waitlist"). After every step: a waitlist entry's token
/// made at most one order (**WaitlistTokenSoldTwice**); what the watched port judged at each
/// commit arrives through `sim.extra`. At quiescence also, read through the Waitlists port with
/// the ports' interleaving off, per waitlisted SKU:
///
/// - **WaitlistUnwatchedWrite**: the store's entries are the watch's mirror (every write went
///   through the port the services use);
/// - **WaitlistHeadMismatch**: the head's live tokens are exactly the `NOTIFIED` entries, its
///   active count the `WAITING` + `NOTIFIED` ones, and no entry up to its cursor still waits;
/// - **WaitlistStranded**: no buyer waits while the SKU has more free units than tokens out
///   (after the last sweep's upkeep, a free unit is told);
/// - **WaitlistToldNotAnnounced** / **WaitlistAnnouncedNotTold**: one `WaitlistNotified` event on
///   the bus per told entry, and none for an entry never told;
/// - **WaitlistOrderUnspent** / **WaitlistUsedUnspent**: an order a token made, and a `USED`
///   entry, have the token's admission spent.
pub async fn waitlist(sim: &Sim, quiescent: bool) -> Vec<String> {
    use holdfast::domain::waitlist::{scope, WaitState};
    let mut out = Vec::new();
    for ((sku, n), orders) in &sim.wl_sold {
        if orders.len() > 1 {
            out.push(format!("WaitlistTokenSoldTwice {{ sku: {sku}, number: {n}, orders: {orders:?} }}"));
        }
    }
    if !quiescent {
        return out;
    }
    let mut skus: Vec<Sku> = crate::shop::WAITLIST_SKUS.iter().filter_map(|s| Sku::parse(s).ok()).collect();
    skus.sort();
    skus.dedup();
    let mut announced: BTreeMap<(String, u64), usize> = BTreeMap::new();
    for (_, d) in sim.world.bus.stock_events().iter().filter(|(t, _)| t == "WaitlistNotified") {
        let key = (d["sku"].as_str().unwrap_or_default().to_owned(), d["position"].as_u64().unwrap_or(0));
        *announced.entry(key).or_default() += 1;
    }
    for sku in &skus {
        let head = match sim.app.waitlists.waitlist(sku).await {
            Ok(h) => h,
            Err(e) => {
                out.push(format!("WaitlistUnreadable {{ sku: {sku}, error: {e:#} }}"));
                continue;
            }
        };
        let numbers: Vec<u64> = (1..=head.next).collect();
        let entries = match sim.app.waitlists.wait_entries(sku, &numbers).await {
            Ok(mut v) => {
                v.sort_by_key(|e| e.number);
                v
            }
            Err(e) => {
                out.push(format!("WaitlistUnreadable {{ sku: {sku}, error: {e:#} }}"));
                continue;
            }
        };
        let mirror: Vec<_> = {
            let w = sim.watch.lock();
            w.entries.range((sku.clone(), 0)..=(sku.clone(), u64::MAX)).map(|(_, e)| e.clone()).collect()
        };
        if mirror != entries {
            out.push(format!(
                "WaitlistUnwatchedWrite {{ sku: {sku}, store: {}, watched: {} }}",
                entries.len(),
                mirror.len()
            ));
        }
        let notified: Vec<u64> = entries.iter().filter(|e| e.state == WaitState::Notified).map(|e| e.number).collect();
        let mut live = head.live.clone();
        live.sort_unstable();
        let active = entries.iter().filter(|e| e.state.active()).count();
        let skipped: Vec<u64> = entries
            .iter()
            .filter(|e| e.state == WaitState::Waiting && e.number <= head.cursor)
            .map(|e| e.number)
            .collect();
        if live != notified || active != head.active as usize || !skipped.is_empty() {
            out.push(format!(
                "WaitlistHeadMismatch {{ sku: {sku}, live: {live:?}, notified: {notified:?}, active: {}, entries_active: {active}, waiting_up_to_cursor: {skipped:?} }}",
                head.active
            ));
        }
        let waiting = entries.iter().filter(|e| e.state == WaitState::Waiting).count();
        let free = sim.watch.free(sku);
        if waiting > 0 && free > head.live.len() as i64 {
            out.push(format!(
                "WaitlistStranded {{ sku: {sku}, waiting: {waiting}, free_units: {free}, tokens_out: {} }}",
                head.live.len()
            ));
        }
        for e in &entries {
            let n = announced.get(&(sku.to_string(), e.number)).copied().unwrap_or(0);
            match (e.notified_at_ms.is_some(), n) {
                (true, 1) | (false, 0) => {}
                (true, n) => {
                    out.push(format!("WaitlistToldNotAnnounced {{ sku: {sku}, number: {}, events: {n} }}", e.number))
                }
                (false, n) => {
                    out.push(format!("WaitlistAnnouncedNotTold {{ sku: {sku}, number: {}, events: {n} }}", e.number))
                }
            }
            if e.state == WaitState::Used && !sim.world.stock.spent(&scope(sku), e.number).await.unwrap_or(false) {
                out.push(format!("WaitlistUsedUnspent {{ sku: {sku}, number: {} }}", e.number));
            }
        }
    }
    for ((sku, n), orders) in &sim.wl_sold {
        if !sim.world.stock.spent(&scope(sku), *n).await.unwrap_or(false) {
            out.push(format!("WaitlistOrderUnspent {{ sku: {sku}, number: {n}, orders: {orders:?} }}"));
        }
    }
    out
}
