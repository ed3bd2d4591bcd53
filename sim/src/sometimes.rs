//! "Sometimes" counters (docs/simulator.md, "Sometimes"): a tally of the fault points and rare
//! paths a run reached. Each is counted where the simulator sees it happen (a crash returned, a
//! consumer's fault drawn, a refusal answered, a queue state read), not where it is armed or
//! drawn. A run as large as `make sim`'s fails if a path listed as required was never reached:
//! a change that quietly stops the simulator exploring a path turns the run red instead of
//! leaving it green for the wrong reason.

use holdfast::telemetry::names;
use std::collections::BTreeMap;

/// Runs of at least this many seeds of at least [`MIN_STEPS`] steps are held to [`PATHS`].
pub const MIN_SEEDS: u64 = 100;
pub const MIN_STEPS: u64 = 300;

/// Whether a run as large as `make sim`'s must reach a path.
pub enum Need {
    Required,
    /// Not required, and why.
    Optional(&'static str),
}

use Need::{Optional, Required};

const STRICT_ONLY: Need = Optional("armed only with --strict (F2)");
const STREAM_PLAYED: Need =
    Optional("the simulator plays the stream-to-EventBridge publisher itself: its crash is the redelivery it models");
const NO_CONFLICTS: Need = Optional("the in-memory store has no transaction conflicts or throttling");
const NEVER_WRONG: Need = Optional("the simulator's webhooks carry the order's amount");
const FINDING_W1: Need = Optional("finding W1 (docs/simulator.md), fixed in 1048fb2: reaching it is a violation");
const RARE_DEADLINE: Need =
    Optional("reached 5-9 times in each 100 seeds tried; usually the sweep meets the deadline first");

/// Every path the simulator counts, in the order they are printed.
pub const PATHS: &[(&str, Need)] = &[
    // fault points, by hit
    ("fault create-order.after-freeze", Required),
    ("fault create-order.after-code-claim", Required),
    ("fault create-order.after-order-put", Required),
    ("fault payment-timeout.drop", Required),
    ("fault payment-timeout.crash", Required),
    ("fault stock-events.drop", STRICT_ONLY),
    ("fault stock-events.crash", Required),
    ("fault stock-events.fail", Required),
    ("fault reservation-check.drop", Required),
    ("fault reservation-check.crash", Required),
    ("fault publish-events.drop", Required),
    ("fault publish-events.crash", STREAM_PLAYED),
    ("fault reconcile.crash", Required),
    ("fault reconcile-worker.crash-mid-page", Required),
    // the scheduler's deliveries
    ("delivery: event lost, redelivered a minute later", Required),
    ("delivery: delay message lost", Required),
    ("delivery: queued again (a duplicate)", Required),
    ("delivery: two consumers at once", Required),
    ("delivery: consumer failed, retried", Required),
    // checkouts
    ("checkout: retry of a crashed checkout", Required),
    ("checkout: replay answered its order", Required),
    ("checkout: refused, too many pending", Required),
    ("checkout: refused, campaign quota exhausted", Required),
    ("checkout: refused, sale ended", Required),
    ("checkout: reservation expired", Required),
    // payments
    ("payment: processing at the provider", Required),
    ("payment: captured, webhook never sent", Required),
    ("payment: webhook sent twice", Required),
    ("payment: processing when its deadline passed", Required),
    ("payment: timeout met a processing payment at its deadline", RARE_DEADLINE),
    ("payment webhook: applied", Required),
    ("payment webhook: duplicate", Required),
    ("payment webhook: refund_requested", Required),
    ("payment webhook: failed_recorded", Required),
    ("payment webhook: amount mismatch", NEVER_WRONG),
    // refunds
    ("refund review: an admin decided", Required),
    ("code: redeemed", Required),
    ("code: a second redemption refused", Optional("an order drawn twice for redemption: 3-7 in 100 seeds")),
    ("refund: confirmed by the provider's webhook", Required),
    ("refund: done, webhook never sent", Required),
    // the waiting room
    ("queue: WAITING", Required),
    ("queue: ADMITTED", Required),
    ("queue: USED", Required),
    ("queue: EXPIRED", Required),
    ("queue: SOLD_OUT", Required),
    ("queue: join answered SOLD_OUT without a ticket", Required),
    ("queue: halted, every unit held", Required),
    ("queue: halted, paused by the operator", Required),
    ("queue: next admitted after a hold came back", Required),
    ("queue: checkout with the token", Required),
    ("queue: admission_used", Required),
    ("queue: race sold once, the other admission_used", Required),
    ("queue: expired token refused", Required),
    ("queue: another buyer's token refused", Required),
    ("queue: forged token refused", Required),
    ("queue: admission_required", Required),
    ("queue: replay answered its order", Required),
    // the waitlists (docs/simulator.md, "The waitlist")
    ("delivery: stream batch failed, retried later", Required),
    ("waitlist: joined", Required),
    ("waitlist: repeat join answered the same entry", Required),
    ("waitlist: joined again after its entry was done", Required),
    ("waitlist: join refused, not sold out", Required),
    ("waitlist: join refused, full", Required),
    ("waitlist: join refused, too many waitlists", Required),
    ("waitlist: join refused, not waitlistable", Required),
    ("waitlist: left while waiting", Required),
    ("waitlist: left after being told", Required),
    ("waitlist: told", Required),
    ("waitlist: a lapsed token's unit told to the next", Required),
    ("waitlist: a told buyer read the token", Required),
    ("waitlist: checkout with the token", Required),
    ("waitlist: token spent, entry USED", Required),
    ("waitlist: token expired unused", Required),
    ("waitlist: token spent twice refused", Required),
    ("waitlist: race sold once, the other admission_used", Required),
    ("waitlist: expired token refused", Required),
    ("waitlist: told buyer refused for stock (no set-aside)", Required),
    ("waitlist: token refused for another SKU", Required),
    ("waitlist: token refused by the queue", Required),
    ("waitlist: another buyer's token refused", Required),
    ("waitlist: a queue's token refused for a waitlist", Required),
    ("waitlist: replay answered its order", Required),
    // a store outage for a checkout's SKUs (docs/inventory-models.md, "Accepted during a store
    // outage"): the backorder SKU alone recorded and later written (or refused then), beside
    // another kind 503
    ("backorder: checkout recorded in a store outage", Required),
    ("backorder: a checkout beside another kind is refused in an outage", Required),
    ("backorder: recorded checkout written", Required),
    (
        "backorder: recorded checkout refused once the store answered",
        Optional("a recording the store refuses once back (the SKU paused, the buyer's pending cap): rare"),
    ),
    // the gift cards' codes (docs/simulator.md, "Backorders and supplier codes")
    ("supplier codes: read before payment (not_paid)", Required),
    ("supplier codes: read while pending (codes_pending)", Required),
    ("supplier codes: shown to the paid owner", Required),
    ("supplier codes: another buyer's read refused", Required),
    ("supplier codes: reissued by an operator", Required),
    ("supplier codes: reissue refused, already issued", Required),
    ("supplier codes: reissue refused, not paid", Required),
    ("supplier codes: reissue failed at the supplier", Required),
    ("supplier codes: reissue refused, other", Optional("an order of the gift cards always has them")),
    ("supplier codes: given up at quiescence, left for an operator", Required),
    ("waitlist: finding W1, a join answered a lapsed NOTIFIED entry", FINDING_W1),
    ("waitlist: finding W1, too_many_waitlists counting a lapsed entry", FINDING_W1),
    ("waitlist: finding W1, waitlist_full counting a lapsed entry", FINDING_W1),
    // the services' own counters (`holdfast::telemetry`), below
    ("metric RefundsHeldForReview", Required),
    ("metric PaymentsRecovered", Required),
    ("metric PaymentsNotCancellable", Required),
    ("metric Oversell", Optional("a sweep's repair confirming a lock released meanwhile, its stock gone: not reached")),
    ("metric PayTimeShortfalls", Required),
    // an AT_SHIPMENT order shipped (its held units taken), and one refunded before shipping
    ("metric ShipmentDeductions", Required),
    ("metric ShipmentHoldsReleased", Required),
    // a warehoused line frozen over two warehouses (docs/inventory-models.md, "Warehouses")
    ("metric WarehouseSplits", Required),
    // a backorder SKU's checkout accepted short, and its shortfall filled by a restock
    ("metric BackordersAccepted", Required),
    ("metric BackorderUnitsFilled", Required),
    ("metric CheckoutsRecorded", Required),
    ("metric RecordedCheckoutsWritten", Required),
    ("metric RecordedCheckoutsRefused", Optional("as its path above: rare")),
    // the gift cards: issued at payment, after a retry, given up after four failures, reissued
    ("metric SupplierCodesIssued", Required),
    ("metric SupplierCodesRetried", Required),
    ("metric SupplierCodesPending", Required),
    ("metric SupplierCodesReissued", Required),
    ("metric OrphansReleased", Required),
    ("metric Restocks", Required),
    ("metric Repairs", Required),
    ("metric StockSettleRepairs", Required),
    ("metric RefundsSettledBySweep", Required),
    ("metric CapturesAppliedBySettlement", Optional("the daily settlement is not run: a run lasts hours of one day")),
    ("metric CodeClaimRetries", Optional("two claims of the same ring positions at once: about once in 300 seeds")),
    ("metric RejectedMessages", Required),
    ("metric SupplierRefused", Required),
    ("metric SupplierTimeouts", Required),
    ("metric SupplierCancels", Required),
    ("metric FreezeReplans", NO_CONFLICTS),
    ("metric Throttled", NO_CONFLICTS),
    ("metric WaitlistNotified", Required),
    ("metric WaitlistExpired", Required),
];

/// The services' counters shown as `metric <name>` paths: the run's increase of each.
pub const METRICS: &[&str] = &[
    names::REFUNDS_HELD_FOR_REVIEW,
    names::PAYMENTS_RECOVERED,
    names::PAYMENTS_NOT_CANCELLABLE,
    names::OVERSELL,
    names::PAY_TIME_SHORT,
    names::SHIPMENT_TAKES,
    names::SHIPMENT_HOLDS_RELEASED,
    names::WAREHOUSE_SPLITS,
    names::BACKORDERS_ACCEPTED,
    names::BACKORDER_UNITS_FILLED,
    names::CHECKOUTS_RECORDED,
    names::RECORDED_CHECKOUTS_WRITTEN,
    names::RECORDED_CHECKOUTS_REFUSED,
    names::SUPPLIER_CODES_ISSUED,
    names::SUPPLIER_CODES_RETRIED,
    names::SUPPLIER_CODES_PENDING,
    names::SUPPLIER_CODES_REISSUED,
    names::ORPHANS_RELEASED,
    names::RESTOCKS,
    names::REPAIRS,
    names::STOCK_SETTLE_REPAIRS,
    names::REFUNDS_SETTLED_BY_SWEEP,
    names::CAPTURES_APPLIED_BY_SETTLEMENT,
    names::CODE_CLAIM_RETRIES,
    names::REJECTED_MESSAGES,
    names::SUPPLIER_REFUSED,
    names::SUPPLIER_TIMEOUTS,
    names::SUPPLIER_CANCELS,
    names::FREEZE_REPLANS,
    names::THROTTLED,
    names::WAITLIST_NOTIFIED,
    names::WAITLIST_EXPIRED,
];

/// How often each path was reached.
#[derive(Debug, Default, Clone)]
pub struct Tally(pub BTreeMap<String, u64>);

impl Tally {
    pub fn hit(&mut self, path: &str) {
        *self.0.entry(path.to_owned()).or_default() += 1;
    }

    pub fn merge(&mut self, other: &Tally) {
        for (k, n) in &other.0 {
            *self.0.entry(k.clone()).or_default() += n;
        }
    }

    /// Adds the increase of the services' counters between two snapshots.
    pub fn metrics(&mut self, before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) {
        for m in METRICS {
            let n = after.get(*m).copied().unwrap_or(0).saturating_sub(before.get(*m).copied().unwrap_or(0));
            if n > 0 {
                *self.0.entry(format!("metric {m}")).or_default() += n;
            }
        }
    }
}

/// Prints the tally; answers what makes the run fail when `gate`: the required paths never
/// reached, and any path counted but not listed in [`PATHS`].
pub fn report(t: &Tally, gate: bool) -> Vec<String> {
    let reached = PATHS.iter().filter(|(p, _)| t.0.contains_key(*p)).count();
    let held = if gate { "required paths held" } else { "not held: fewer than 100 seeds of 300 steps" };
    println!("sometimes: {reached} of {} rare paths reached ({held}):", PATHS.len());
    let mut missing = Vec::new();
    for (p, need) in PATHS {
        let n = t.0.get(*p).copied().unwrap_or(0);
        let note = match (n, need) {
            (0, Required) => {
                missing.push((*p).to_owned());
                "  <- never reached"
            }
            (0, Optional(why)) => why,
            _ => "",
        };
        println!("  {p:<52} {n:>6}  {note}");
    }
    for (p, n) in t.0.iter().filter(|(p, _)| !PATHS.iter().any(|(q, _)| q == p)) {
        println!("  {p:<52} {n:>6}  <- not listed in sim/src/sometimes.rs");
        missing.push(p.clone());
    }
    if gate {
        missing
    } else {
        Vec::new()
    }
}
