//! One simulated run: the seeded draws of actors and faults, their concurrent execution against
//! the real services, and the event pipeline played by the scheduler.

use crate::shop::{self, Item, T0_MS};
use crate::sometimes::Tally;
use crate::waitlist::{self as wl, Use, Watched};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use holdfast::adapters::memory::{MemoryProvider, MemoryStock, MemoryWorld};
use holdfast::adapters::supplier::MemorySupplier;
use holdfast::app::memory_app;
use holdfast::app::{App, Providers};
use holdfast::clock;
use holdfast::config::Config;
use holdfast::domain::events::{events_for_change, releases_bookings, EventKind, OrderEvent, SOURCE};
use holdfast::domain::invariants::ShardCounts;
use holdfast::domain::order::{AttemptState, OrderRecord, OrderStatus, Provider};
use holdfast::domain::quantity::Quantity;
use holdfast::domain::queue::{HaltReason, TicketState};
use holdfast::domain::refund::RefundStatus;
use holdfast::domain::supplier::BookingStatus;
use holdfast::domain::{CampaignId, IdempotencyKey, OrderId, Sku, UserId};
use holdfast::ports::{Message, PaymentProvider, PaymentRequest, PaymentState};
use holdfast::service::after_sale::{self, Caller, Change};
use holdfast::service::payments::{self, PaymentNotice};
use holdfast::service::queue::{self, QueueError};
use holdfast::service::refunds::{self, RefundConfirmation};
use holdfast::service::stock::LineRequest;
use holdfast::service::{admin, campaigns, codes, orders, paying, reconcile};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

mod kinds;

pub const USERS: usize = 6;
/// The probability an armed fault point fires at each of its draws.
const FAULT_P: f64 = 0.3;

/// A queued delivery: an order event (stream → EventBridge → SQS, at least once, retried), a
/// delay-queue message (SQS, at least once; a lost one is what reconcile heals), or a batch of
/// the stock table's stream for stock-journal (records as Lambda gets them; `true` while it was
/// never taken, so new records join it as a stream source batches what arrived).
#[derive(Clone, Debug)]
pub enum Delivery {
    Event(OrderEvent),
    Queue(Message),
    Stream(Vec<serde_json::Value>, bool),
    /// A `WaitlistNotified` event for its buyer (bus → push → the buyer's device): the buyer then
    /// reads where they stand and takes the token.
    Told(UserId, Sku),
}

#[derive(Clone, Debug)]
pub struct Queued {
    pub due_ms: i64,
    pub what: Delivery,
}

/// A checkout a buyer may retry with the same Idempotency-Key.
#[derive(Clone, Debug)]
pub struct Checkout {
    pub user: UserId,
    pub key: IdempotencyKey,
    pub lines: Vec<LineRequest>,
    /// The order record (docs/order-record.md): some checkouts carry a delivery, a remark and
    /// a discount, which payment must then charge less of.
    pub details: holdfast::domain::order::OrderDetails,
}

/// What an actor does, drawn before it runs so that several can run at once.
#[derive(Clone, Debug)]
pub enum Action {
    Checkout(Checkout),
    Pay(PaymentNotice),
    Cancel(UserId, OrderId),
    Admin(OrderId, Change),
    Buyer(UserId, OrderId, Change),
    Reveal(UserId, OrderId),
    /// The merchant redeems an order's first code, once its buyer was shown it
    /// (docs/code-pools.md, "Redemption").
    Redeem(OrderId),
    /// The provider finishes a refund; its webhook is then delivered 0, 1 or 2 times (0: what
    /// the sweep's `refunds-issued` arm must find).
    RefundWebhook(RefundConfirmation, u8),
    Pause(Sku, bool),
    Adjust(Sku, String, i64, Vec<holdfast::domain::model::Day>),
    PauseCampaign(bool),
    Supplier(BookingStatus),
    /// A reconcile sweep, inline (`reconcile::run`). When the armed `reconcile.crash` fires,
    /// the scheduled handler is invoked instead and dies before it seeds anything.
    Reconcile,
    Deliver(Queued),
    /// A hostile or stray `OversellDetected` for an order whose lock was never oversold.
    ForgedOversell(OrderEvent),
    /// The buyer starts a payment (`POST /orders/{id}/payments`).
    StartPay(UserId, OrderId),
    /// The buyer pays (or fails, or the provider keeps processing) at the provider; its webhook
    /// is then delivered 0, 1 or 2 times (0: what the deadline queries must heal).
    AtProvider(OrderId, String, PaymentState, u8),
    /// An admin decides a refund held for review.
    Decide(OrderId, bool),
    /// A buyer in the drop's waiting room: where am I (joining first when they have no ticket),
    /// and once admitted, the checkout with the token at once (`Some`) or later.
    QueueBuyer(UserId, CampaignId, Option<Checkout>),
    /// A buyer joins the drop's queue (a repeat is answered the same ticket).
    Join(UserId, CampaignId),
    /// A checkout of the drop with this admission token, or none: a later use (the token may
    /// have expired or been spent), a replay, another buyer's token, a forged one.
    /// `true`: one of two racing with the same token.
    QueuedCheckout(Checkout, Option<String>, bool),
    /// Two checkouts racing with one token (drawn as one, run as two concurrent actions).
    Race(Checkout, Checkout, String),
    /// An operator pauses (`true`) or resumes the drop's admission.
    PauseQueue(CampaignId, bool),
    /// A buyer on a SKU's waitlist: where am I (joining first when not on it; with `true`, again
    /// when their entry is done), and once told, what they do with the token at once.
    WlBuyer(UserId, Sku, bool, wl::Then),
    /// A buyer joins a SKU's waitlist (a repeat is answered the same entry).
    WlJoin(UserId, Sku),
    /// A buyer leaves a SKU's waitlist.
    WlLeave(UserId, Sku),
    /// A checkout with a token: a waitlist's (the entry it is) or, misused, a queue's.
    WlCheckout(Checkout, String, Option<(Sku, u64)>, Use),
    /// Two checkouts racing with one waitlist token (drawn as one, run as two concurrently).
    WlRace(Checkout, Checkout, wl::Token),
    /// The supplier fails its next n code issues (docs/simulator.md, "Backorders and supplier codes").
    FailIssues(u32),
    /// An operator reissues an order's supplier codes.
    Reissue(OrderId),
    /// A checkout while the store does not answer for its SKUs (docs/simulator.md, "Backorders
    /// and supplier codes"): a backorder-only one is recorded, anything else is 503.
    Outage(Checkout),
}

/// A checkout drawn with a token (the waitlist entry it is, if one) and how it uses it.
type WlKept = (Checkout, String, Option<(Sku, u64)>, Use);

/// What running an action left behind.
#[derive(Default)]
pub struct Done {
    pub log: String,
    pub requeue: Vec<Queued>,
    pub revealed: Vec<(OrderId, String)>,
    /// An order one of whose codes was redeemed.
    pub redeemed: Option<OrderId>,
    /// A buyer's refund that was accepted.
    pub buyer_refunded: Option<OrderId>,
    /// A checkout that died half-way (the client will retry it).
    pub crashed: Option<Checkout>,
    /// A checkout recorded during a store outage (answered 202, no order yet).
    pub recorded: Option<OrderId>,
    /// A recorded checkout the consumer finished: written (`true`) or refused.
    pub recorded_done: Option<(OrderId, bool)>,
    /// An admission token a buyer was given.
    pub token: Option<(UserId, String)>,
    /// A buyer's queue state as read, with the room's halt when waiting without an ETA.
    pub queue_seen: Option<(UserId, TicketState, Option<HaltReason>)>,
    /// Rare paths reached ([`crate::sometimes`]).
    pub hits: Vec<&'static str>,
    /// A waitlist token a told buyer read.
    pub wl_token: Option<wl::Token>,
    /// Orders a waitlist token made: its SKU, entry number, the order.
    pub wl_sold: Vec<(Sku, u64, OrderId)>,
    /// A token that admitted what it must not.
    pub wl_violations: Vec<String>,
    /// What finding W1 (docs/simulator.md, fixed in 1048fb2) looks like when it happens:
    /// violations (a regression), counted too.
    pub wl_findings: Vec<(&'static str, String)>,
    /// A checkout made with a token just read, kept for replays.
    pub wl_kept: Vec<(Checkout, String, (Sku, u64))>,
    /// What an actor saw that must never happen.
    pub violations: Vec<String>,
}

#[derive(Default, Debug)]
pub struct Stats {
    pub steps: u64,
    pub concurrent_steps: u64,
    pub statuses: HashMap<String, u64>,
    pub faults_hit: HashMap<&'static str, u64>,
    /// Rare paths reached (docs/simulator.md, "Sometimes").
    pub sometimes: Tally,
}

pub struct Sim {
    rng: fastrand::Rng,
    pub app: App,
    pub world: MemoryWorld,
    pub provider: Arc<MemoryProvider>,
    pub supplier: Arc<MemorySupplier>,
    items: Vec<Item>,
    /// The queued drop's campaign (docs/simulator.md, "The waiting room").
    pub drop: CampaignId,
    /// The last admission token each buyer was given.
    tokens: BTreeMap<UserId, String>,
    /// Queued checkouts drawn, with the token they carry (a replay sends one again).
    queued: Vec<(Checkout, Option<String>)>,
    /// Buyers seen waiting while every unit of the drop was held.
    waited_all_held: HashSet<UserId>,
    /// The waitlists' port as the services use it, watched (docs/simulator.md, "The waitlist").
    pub watch: Arc<Watched>,
    /// The event bus as the services use it, its `WaitlistNotified` events tapped.
    bus: Arc<wl::Tapped>,
    /// Every SKU's product shards (the shop's SKUs and shard counts never change in a run).
    slots: Vec<Sku>,
    /// The last waitlist token each buyer read, per SKU.
    wl_tokens: BTreeMap<(UserId, Sku), wl::Token>,
    /// Checkouts drawn with a token, for replays (a crashed one is retried so).
    wl_checkouts: Vec<WlKept>,
    /// The orders each waitlist entry's token made (a token sells at most once).
    pub wl_sold: BTreeMap<(Sku, u64), Vec<OrderId>>,
    /// The stock table's product shards as the stream last saw them, and its sequence number.
    shards_seen: HashMap<(Sku, u16), ShardCounts>,
    stream_seq: u64,
    wl_keys: u64,
    /// The fault point armed now (at [`FAULT_P`]).
    armed: Option<&'static str>,
    queue: Vec<Queued>,
    /// The order table as the stream last saw it.
    seen: HashMap<OrderId, OrderRecord>,
    sent_seen: usize,
    published_seen: usize,
    checkouts: Vec<Checkout>,
    crashed: Vec<Checkout>,
    payments: u64,
    adjustments: u64,
    notices: Vec<PaymentNotice>,
    /// Every code shown, and the order it was shown for.
    pub shown: BTreeMap<String, OrderId>,
    /// Orders whose buyer's refund was accepted.
    pub buyer_refunded: HashSet<OrderId>,
    /// Orders one of whose codes was redeemed: never refunded.
    pub redeemed: HashSet<OrderId>,
    /// Checkouts recorded during a store outage and not yet written or refused.
    pub recorded: BTreeSet<OrderId>,
    /// Recorded checkouts the consumer wrote (each must be an order at quiescence).
    pub recorded_written: BTreeSet<OrderId>,
    pub trace: Vec<String>,
    pub stats: Stats,
    /// `--strict`: also arms the fault point whose loss nothing repairs yet (F2).
    pub strict: bool,
    /// Steps drawn but not run (the shrinker's knob).
    pub skip: HashSet<u64>,
    pub extra: Vec<String>,
}

fn now() -> i64 {
    clock::now_ms()
}

impl Sim {
    pub async fn new(seed: u64, interleave: bool) -> anyhow::Result<Sim> {
        clock::set_virtual_ms(Some(T0_MS));
        holdfast::adapters::memory::set_interleaving(false);
        let mut c = Config::from_lookup(&|_| None).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        c.sku_cache_ms = 0;
        c.soldout_cache_ms = 0;
        c.code_key = holdfast::config::Secret::new(holdfast::domain::codes::Keyring::generate_secret("sim1")?);
        c.admission_key = holdfast::config::Secret::new("sim-admission-key");
        c.waitlist_max_per_sku = shop::WAITLIST_MAX_PER_SKU;
        c.waitlist_max_per_user = shop::WAITLIST_MAX_PER_USER;
        // the queue's process-wide ticket cursor, then the seed: the same run alone or in a range
        shop::align_ticket_cursor(c.clone()).await?;
        fastrand::seed(seed);
        let (app, world) = memory_app("sim", c)?;
        let provider = Arc::new(MemoryProvider::new());
        let supplier = Arc::new(MemorySupplier::new());
        let mut app = app
            .with_providers(Providers { generic: provider.clone(), stripe: Arc::new(MemoryProvider::new()) })
            .with_supplier(supplier.clone());
        let watch = Arc::new(Watched::new(app.waitlists.clone(), world.stock.clone()));
        app.waitlists = watch.clone();
        let bus = Arc::new(wl::Tapped::new(app.bus.clone()));
        app.bus = bus.clone();
        let items = shop::open(&app).await?;
        let drop = shop::drop_id();
        shop::open_drop(&app, &drop).await?;
        let mut slots: Vec<Sku> = world.stock.metas().into_iter().map(|m| m.sku).collect();
        slots.sort();
        holdfast::adapters::memory::set_interleaving(interleave);
        Ok(Sim {
            rng: fastrand::Rng::with_seed(seed),
            app,
            world,
            provider,
            supplier,
            items,
            drop,
            tokens: BTreeMap::new(),
            queued: Vec::new(),
            waited_all_held: HashSet::new(),
            watch,
            bus,
            slots,
            wl_tokens: BTreeMap::new(),
            wl_checkouts: Vec::new(),
            wl_sold: BTreeMap::new(),
            shards_seen: HashMap::new(),
            stream_seq: 0,
            wl_keys: 0,
            armed: None,
            queue: Vec::new(),
            seen: HashMap::new(),
            sent_seen: 0,
            published_seen: 0,
            checkouts: Vec::new(),
            crashed: Vec::new(),
            payments: 0,
            adjustments: 0,
            notices: Vec::new(),
            shown: BTreeMap::new(),
            buyer_refunded: HashSet::new(),
            redeemed: HashSet::new(),
            recorded: BTreeSet::new(),
            recorded_written: BTreeSet::new(),
            trace: Vec::new(),
            stats: Stats::default(),
            strict: false,
            skip: HashSet::new(),
            extra: Vec::new(),
        })
    }

    pub fn log(&mut self, s: String) {
        self.trace.push(format!("[{}s] {s}", (now() - T0_MS) / 1000));
    }

    fn user(&mut self) -> UserId {
        UserId::parse(&format!("u{}", self.rng.usize(..USERS))).expect("user id")
    }

    fn orders(&self) -> Vec<holdfast::domain::order::Order> {
        let mut v: Vec<_> = self
            .world
            .orders
            .records()
            .into_iter()
            .filter_map(|(_, r)| match r {
                OrderRecord::Order(o) => Some(*o),
                OrderRecord::Void => None,
            })
            .collect();
        v.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        v
    }

    /// Turns what the ports recorded since the last step into queued deliveries: the order
    /// table's changes (the stream) become events, new delay messages and directly published
    /// events are queued.
    pub fn collect(&mut self) {
        for (id, rec) in self.world.orders.records() {
            let old = self.seen.get(&id);
            if old == Some(&rec) {
                continue;
            }
            let as_order = |r: Option<&OrderRecord>| match r {
                Some(OrderRecord::Order(o)) => Some((**o).clone()),
                _ => None,
            };
            let (before, after) = (as_order(old), as_order(Some(&rec)));
            let events = events_for_change(before.as_ref(), after.as_ref());
            self.codes_changed(before.as_ref(), after.as_ref());
            // the stream's contract, not a backstop's: a SUPPLIER order entering a state that
            // releases its bookings announces SupplierCancelRequested (reconcile's booking arm
            // would otherwise hide a lost announcement at quiescence)
            if let Some(n) = &after {
                let entering = releases_bookings(n) && !before.as_ref().is_some_and(releases_bookings);
                if !n.supplier.is_empty()
                    && entering
                    && !events.iter().any(|e| e.kind == EventKind::SupplierCancelRequested)
                {
                    self.extra.push(format!(
                        "BookingCancelNotAnnounced {{ order: {}, status: {} }}",
                        n.id,
                        n.status.as_str()
                    ));
                }
            }
            for e in events {
                // the publisher dropping a stream record: lost for good. Reconcile heals a lost
                // event only while the lock is FROZEN (F2), so without --strict only those drop.
                if (self.strict || heals(e.kind)) && self.app.faults.hit(holdfast::faults::PUBLISH_EVENTS_DROP) {
                    self.stats.sometimes.hit("fault publish-events.drop");
                    self.log(format!("DROPPED by publish-events {} {}", e.kind.as_str(), e.detail.order_id));
                    continue;
                }
                let due = now() + self.rng.i64(0..30_000);
                self.queue.push(Queued { due_ms: due, what: Delivery::Event(e) });
            }
            if let OrderRecord::Order(o) = &rec {
                *self.stats.statuses.entry(o.status.as_str().to_owned()).or_default() += 1;
            }
            self.seen.insert(id, rec);
        }
        let sent = self.world.messages.sent();
        for (m, delay) in sent.into_iter().skip(self.sent_seen) {
            self.sent_seen += 1;
            let due = now() + i64::from(delay) * 1000 + self.rng.i64(0..5_000);
            self.queue.push(Queued { due_ms: due, what: Delivery::Queue(m) });
        }
        let published = self.world.bus.published();
        for e in published.into_iter().skip(self.published_seen) {
            self.published_seen += 1;
            let due = now() + self.rng.i64(0..10_000);
            self.queue.push(Queued { due_ms: due, what: Delivery::Event(e) });
        }
        self.collect_stream();
        for e in self.bus.take_told() {
            let user = e["user_id"].as_str().and_then(|u| UserId::parse(u).ok());
            let sku = e["sku"].as_str().and_then(|s| Sku::parse(s).ok());
            if let (Some(user), Some(sku)) = (user, sku) {
                let due = now() + self.rng.i64(0..10_000);
                self.queue.push(Queued { due_ms: due, what: Delivery::Told(user, sku) });
            }
        }
        let (hits, violations) = {
            let mut w = self.watch.lock();
            (std::mem::take(&mut w.hits), std::mem::take(&mut w.violations))
        };
        for h in hits {
            self.stats.sometimes.hit(h);
        }
        self.extra.extend(violations);
    }

    /// The stock table's stream: every product shard whose counters changed since the stream
    /// last saw it is one record (old and new image, the cause its last write stamped), queued
    /// for stock-journal. Records join the batch not yet taken, as a stream source batches what
    /// arrived; a batch is taken late, twice, or after a newer one like the other deliveries.
    fn collect_stream(&mut self) {
        let mut records = Vec::new();
        for sku in &self.slots {
            for (i, counts) in self.world.stock.shards(sku).into_iter().enumerate() {
                let key = (sku.clone(), i as u16);
                let old = self.shards_seen.get(&key).copied();
                if old == Some(counts) {
                    continue;
                }
                self.stream_seq += 1;
                let pk = format!("SKU#{sku}#{i}");
                let cause = self.world.stock.cause_of(&pk);
                records.push(stream_record(&pk, old, counts, cause, self.stream_seq));
                self.shards_seen.insert(key, counts);
            }
        }
        if records.is_empty() {
            return;
        }
        match self.queue.iter_mut().find(|q| matches!(q.what, Delivery::Stream(_, true))) {
            Some(Queued { what: Delivery::Stream(batch, _), .. }) => batch.extend(records),
            _ => {
                let due = now() + self.rng.i64(0..10_000);
                self.queue.push(Queued { due_ms: due, what: Delivery::Stream(records, true) });
            }
        }
    }

    /// Takes a random due delivery off the queue; a lost one (3 % with faults) is logged and
    /// either comes back a minute later (an event: EventBridge and SQS retry) or is gone (a delay
    /// message: reconcile is the design's answer).
    fn take_due(&mut self, faults: bool) -> Option<Queued> {
        self.take_due_of(faults, false)
    }

    /// [`Self::take_due`] among every due delivery, or (`told`) among the waitlist pushes only.
    fn take_due_of(&mut self, faults: bool, told: bool) -> Option<Queued> {
        let due: Vec<usize> = (0..self.queue.len())
            .filter(|&i| self.queue[i].due_ms <= now() && (!told || matches!(self.queue[i].what, Delivery::Told(..))))
            .collect();
        if due.is_empty() {
            return None;
        }
        let mut q = self.queue.swap_remove(due[self.rng.usize(..due.len())]);
        if let Delivery::Stream(_, fresh) = &mut q.what {
            // taken: later records make a batch of their own
            *fresh = false;
        }
        if faults && self.rng.u8(..100) < 3 {
            match q.what {
                Delivery::Stream(..) => {
                    // the stream source retries a failed batch (bounded; then its on-failure queue)
                    self.stats.sometimes.hit("delivery: stream batch failed, retried later");
                    self.log(format!("LOST (retried later) {}", label(&q.what)));
                    self.queue.push(Queued { due_ms: now() + 60_000, ..q.clone() });
                }
                Delivery::Event(_) | Delivery::Told(..) => {
                    self.stats.sometimes.hit("delivery: event lost, redelivered a minute later");
                    self.log(format!("LOST (redelivered later) {}", label(&q.what)));
                    self.queue.push(Queued { due_ms: now() + 60_000, ..q.clone() });
                }
                // SQS keeps a message it took (a recording has no other copy: docs/inventory-models.md)
                Delivery::Queue(Message::RecordedCheckout { .. }) => {
                    self.stats.sometimes.hit("delivery: event lost, redelivered a minute later");
                    self.log(format!("LOST (redelivered later) {}", label(&q.what)));
                    self.queue.push(Queued { due_ms: now() + 60_000, ..q.clone() });
                }
                Delivery::Queue(_) => {
                    self.stats.sometimes.hit("delivery: delay message lost");
                    self.log(format!("LOST {}", label(&q.what)))
                }
            }
            return self.take_due_of(faults, told);
        }
        if faults && self.rng.u8(..100) < 10 {
            self.stats.sometimes.hit("delivery: queued again (a duplicate)");
            self.log(format!("duplicate queued: {}", label(&q.what)));
            self.queue.push(Queued { due_ms: now() + self.rng.i64(0..60_000), ..q.clone() });
        }
        Some(q)
    }

    /// A line of `q` units of item `i`, on one or two of its dates, maybe through the campaign.
    fn line(&mut self, i: usize, q: u64) -> LineRequest {
        let it = &self.items[i];
        let mut l = LineRequest::plain(it.sku.clone(), Quantity::new(q).expect("quantity"));
        l.dates = it.dates.iter().take(self.rng.usize(1..=2)).cloned().collect();
        if self.rng.u8(..3) == 0 && it.in_campaign {
            l.campaign = Some(CampaignId::parse(shop::CAMPAIGN).expect("campaign id"));
        }
        l
    }

    fn pick_order(
        &mut self,
        want: impl Fn(&holdfast::domain::order::Order) -> bool,
    ) -> Option<holdfast::domain::order::Order> {
        let v: Vec<_> = self.orders().into_iter().filter(|o| want(o)).collect();
        (!v.is_empty()).then(|| v[self.rng.usize(..v.len())].clone())
    }

    /// Draws one actor's action (`None`: nothing to do); a delivery is sometimes made to two
    /// consumers at once (SQS at least once: a message whose visibility lapsed mid-work).
    fn draw(&mut self) -> Vec<Action> {
        match self.draw_one() {
            Some(Action::Deliver(q)) if self.rng.u8(..100) < 8 => {
                self.stats.sometimes.hit("delivery: two consumers at once");
                self.log(format!("two consumers get {}", label(&q.what)));
                vec![Action::Deliver(q.clone()), Action::Deliver(q)]
            }
            Some(Action::Race(a, b, token)) => {
                self.log(format!("two checkouts race with {}'s token", a.user));
                vec![Action::QueuedCheckout(a, Some(token.clone()), true), Action::QueuedCheckout(b, Some(token), true)]
            }
            Some(Action::WlRace(a, b, t)) => {
                self.log(format!("two checkouts race with {}'s waitlist token for {}", t.user, t.sku));
                let entry = Some((t.sku.clone(), t.number));
                vec![
                    Action::WlCheckout(a, t.token.clone(), entry.clone(), Use::Race),
                    Action::WlCheckout(b, t.token, entry, Use::Race),
                ]
            }
            a => a.into_iter().collect(),
        }
    }

    fn draw_one(&mut self) -> Option<Action> {
        Some(match self.rng.u32(..120) {
            0..=19 => {
                let user = self.user();
                let key = IdempotencyKey::parse(&format!("k{}", self.checkouts.len())).ok()?;
                let n = if self.rng.u8(..3) == 0 { 2 } else { 1 };
                let mut picked: Vec<usize> = Vec::new();
                let mut lines = Vec::new();
                for _ in 0..n {
                    let i = self.rng.usize(..self.items.len());
                    if !picked.contains(&i) {
                        picked.push(i);
                        let q = self.rng.u64(1..=2);
                        lines.push(self.line(i, q));
                    }
                }
                let details = crate::shop::order_details((self.checkouts.len() % 6) as u8);
                let c = Checkout { user, key, lines, details };
                self.checkouts.push(c.clone());
                Action::Checkout(c)
            }
            // a retry with the same Idempotency-Key: half of them of a checkout that crashed
            20..=25 if !self.crashed.is_empty() && self.rng.bool() => {
                self.stats.sometimes.hit("checkout: retry of a crashed checkout");
                Action::Checkout(self.crashed[self.rng.usize(..self.crashed.len())].clone())
            }
            20..=25 => Action::Checkout(self.checkouts.get(self.rng.usize(..self.checkouts.len().max(1)))?.clone()),
            26..=29 => {
                let o = self.pick_order(|o| matches!(o.status, OrderStatus::PendingPayment | OrderStatus::Paying))?;
                Action::StartPay(o.user, o.id)
            }
            30..=33 => {
                let o = self.pick_order(|o| {
                    o.status == OrderStatus::Paying
                        && o.current_attempt().is_some_and(|a| a.state == AttemptState::Open)
                })?;
                let a = o.current_attempt()?;
                let state = match self.rng.u8(..10) {
                    0..=5 => PaymentState::Succeeded,
                    6..=7 => PaymentState::Failed,
                    _ => PaymentState::Processing,
                };
                Action::AtProvider(o.id.clone(), a.payment_id.clone(), state, [0, 1, 1, 2][self.rng.usize(..4)])
            }
            34..=39 => Action::Pay(self.notice()?),
            40..=42 => {
                let o = self.pick_order(|_| true)?;
                Action::Cancel(o.user, o.id)
            }
            43..=48 => {
                let o = self.pick_order(|o| o.status != OrderStatus::PendingPayment)?;
                let change = match self.rng.u8(..5) {
                    0 | 1 => Change::Ship { carrier: "sim".into(), tracking_number: "t1".into() },
                    2 => Change::Refund { reason: "sim".into() },
                    3 => Change::ReceiveReturn { restock: self.rng.bool() },
                    _ => Change::AdminCancel { reason: "sim".into() },
                };
                Action::Admin(o.id, change)
            }
            49..=53 => {
                let o = self.pick_order(|o| o.status.is_paid_or_later())?;
                let change = match self.rng.u8(..3) {
                    0 => Change::Refund { reason: "changed my mind".into() },
                    1 => Change::RequestReturn { reason: "broken".into() },
                    _ => Change::ConfirmReceipt,
                };
                Action::Buyer(o.user, o.id, change)
            }
            54..=55 => {
                let o = self.pick_order(|o| o.status.is_paid_or_later())?;
                Action::Reveal(o.user, o.id)
            }
            56 => Action::Redeem(self.pick_order(|o| o.status.is_paid_or_later())?.id),
            57..=58 => {
                let o = self.pick_order(|o| o.refunds.iter().any(|r| r.status == RefundStatus::Issued))?;
                let r = o.refunds.iter().find(|r| r.status == RefundStatus::Issued)?;
                Action::RefundWebhook(
                    RefundConfirmation {
                        provider: r.provider,
                        order_id: o.id.clone(),
                        refund_id: Some(r.refund_id.clone()),
                        provider_refund_id: r.provider_refund_id.clone().unwrap_or_default(),
                        amount: r.amount,
                        succeeded: true,
                    },
                    [0, 1, 1, 2][self.rng.usize(..4)],
                )
            }
            59 => {
                let i = self.rng.usize(..self.items.len());
                Action::Pause(self.items[i].sku.clone(), self.rng.bool())
            }
            60 => {
                // an operator's stock adjustment: found units, a write-off, a delivery
                let it = self.items[self.rng.usize(..self.items.len())].clone();
                self.adjustments += 1;
                let dates = it.dates.into_iter().take(1).collect();
                Action::Adjust(it.sku, format!("adj{}", self.adjustments), [-1, 1, 2][self.rng.usize(..3)], dates)
            }
            61 => Action::PauseCampaign(self.rng.u8(..3) == 0),
            62..=63 => Action::Supplier(match self.rng.u8(..4) {
                0 => BookingStatus::Failed,
                1 => BookingStatus::Pending,
                _ => BookingStatus::Confirmed,
            }),
            64..=65 => Action::Reconcile,
            66 => {
                let o = self.pick_order(|o| o.status.is_paid_or_later())?;
                Action::ForgedOversell(OrderEvent::of(EventKind::OversellDetected, &o, None))
            }
            67..=68 => {
                let o = self.pick_order(|o| o.status == OrderStatus::RefundRequested)?;
                Action::Decide(o.id, self.rng.bool())
            }
            69..=78 => self.draw_queue()?,
            100..=106 => self.draw_waitlist()?,
            107.. => self.draw_kinds()?,
            // the push channel is a consumer of its own: half of the deliveries look there first
            _ => match (self.rng.bool().then(|| self.take_due_of(true, true)).flatten())
                .or_else(|| self.take_due(true))?
            {
                // a told buyer reads where they stand: checks out at once, or keeps the token
                Queued { what: Delivery::Told(user, sku), .. } => {
                    let then = match self.rng.u8(..8) {
                        0 => wl::Then::Keep,
                        1 => wl::Then::Leave,
                        2..=5 => wl::Then::Once(self.wl_checkout(user.clone(), &sku)),
                        6 => {
                            wl::Then::Twice(self.wl_checkout(user.clone(), &sku), self.wl_checkout(user.clone(), &sku))
                        }
                        _ => wl::Then::Race(self.wl_checkout(user.clone(), &sku), self.wl_checkout(user.clone(), &sku)),
                    };
                    Action::WlBuyer(user, sku, false, then)
                }
                q => Action::Deliver(q),
            },
        })
    }

    /// The drop's waiting room: buyers join, ask where they stand and check out when admitted
    /// (or later, when the token may have expired); two checkouts race with one token; a replay;
    /// a checkout with no token, another buyer's or a forged one; the operator's pause.
    fn draw_queue(&mut self) -> Option<Action> {
        let user = self.user();
        let drop = self.drop.clone();
        Some(match self.rng.u8(..20) {
            0..=9 => {
                let then = (self.rng.u8(..4) != 0).then(|| self.queued_checkout(user.clone(), None));
                Action::QueueBuyer(user, drop, then)
            }
            10..=12 => {
                let token = self.tokens.get(&user)?.clone();
                Action::QueuedCheckout(self.queued_checkout(user, Some(token.clone())), Some(token), false)
            }
            13..=14 => {
                let tokens: Vec<(UserId, String)> = self.tokens.iter().map(|(u, t)| (u.clone(), t.clone())).collect();
                let (u, token) = tokens.get(self.rng.usize(..tokens.len().max(1)))?.clone();
                let a = self.queued_checkout(u.clone(), Some(token.clone()));
                let b = self.queued_checkout(u, Some(token.clone()));
                Action::Race(a, b, token)
            }
            // a retry with the same Idempotency-Key (and the token it carried)
            15 => {
                let (c, token) = self.queued.get(self.rng.usize(..self.queued.len().max(1)))?.clone();
                Action::QueuedCheckout(c, token, false)
            }
            16 => {
                let others: Vec<String> =
                    self.tokens.iter().filter(|(u, _)| **u != user).map(|(_, t)| t.clone()).collect();
                let how = self.rng.u8(..3);
                let what = ["no token", "another buyer's token", "a forged token"][usize::from(how)];
                self.log(format!("{user} checks out the drop with {what}"));
                let token = match how {
                    0 => None,
                    1 => others.get(self.rng.usize(..others.len().max(1))).cloned(),
                    // a forged one: the buyer's own token with its MAC's last character changed
                    _ => self.tokens.get(&user).map(|t| {
                        let last = if t.ends_with('A') { 'B' } else { 'A' };
                        format!("{}{last}", &t[..t.len().saturating_sub(1)])
                    }),
                };
                Action::QueuedCheckout(self.queued_checkout(user, token.clone()), token, false)
            }
            17 => Action::PauseQueue(drop, self.rng.u8(..3) == 0),
            _ => Action::Join(user, drop),
        })
    }

    /// The waitlists (docs/simulator.md, "The waitlist"): buyers join a SKU's waitlist (again,
    /// and SKUs that have none), leave it, ask where they stand and, once told, check out with
    /// the token at once, later (maybe expired or spent), twice, racing, or never; the token
    /// misused for other SKUs, the queued drop, another buyer; a queue's token for a waitlist.
    fn draw_waitlist(&mut self) -> Option<Action> {
        let user = self.user();
        let sku = Sku::parse(shop::WAITLIST_SKUS[self.rng.usize(..shop::WAITLIST_SKUS.len())]).ok()?;
        Some(match self.rng.u8(..20) {
            0..=7 => {
                let again = self.rng.bool();
                let then = match self.rng.u8(..4) {
                    0 => wl::Then::Keep,
                    _ => wl::Then::Once(self.wl_checkout(user.clone(), &sku)),
                };
                Action::WlBuyer(user, sku, again, then)
            }
            8..=9 if self.rng.u8(..4) == 0 => {
                let other = shop::NOT_WAITLISTABLE[self.rng.usize(..shop::NOT_WAITLISTABLE.len())];
                Action::WlJoin(user, Sku::parse(other).ok()?)
            }
            8..=9 => Action::WlJoin(user, sku),
            10..=11 => Action::WlLeave(user, sku),
            // a kept token used later: maybe expired, maybe spent already (the second use)
            12..=14 => {
                let t = self.wl_tokens.get(&(user.clone(), sku.clone()))?.clone();
                let c = self.wl_checkout(user, &sku);
                self.wl_keep(&c, &t.token, Some((t.sku.clone(), t.number)), Use::Own);
                Action::WlCheckout(c, t.token, Some((t.sku, t.number)), Use::Own)
            }
            15 => {
                let t = self.any_wl_token()?;
                let a = self.wl_checkout(t.user.clone(), &t.sku);
                let b = self.wl_checkout(t.user.clone(), &t.sku);
                Action::WlRace(a, b, t)
            }
            // a retry with the same Idempotency-Key and token (of a crashed one too)
            16 => {
                let (c, token, entry, how) =
                    self.wl_checkouts.get(self.rng.usize(..self.wl_checkouts.len().max(1)))?.clone();
                Action::WlCheckout(c, token, entry, how)
            }
            _ => {
                let t = self.any_wl_token()?;
                let entry = Some((t.sku.clone(), t.number));
                let (c, token, entry, how) = match self.rng.u8(..4) {
                    0 => {
                        let others: Vec<usize> =
                            (0..self.items.len()).filter(|&i| self.items[i].sku != t.sku).collect();
                        let i = others[self.rng.usize(..others.len())];
                        let mut l = self.line(i, 1);
                        l.campaign = None;
                        let c = self.wl_checkout_of(t.user.clone(), vec![l]);
                        (c, t.token, entry, Use::OtherSku)
                    }
                    1 => {
                        let c = self.queued_checkout(t.user.clone(), Some(t.token.clone()));
                        (c, t.token, entry, Use::Queue)
                    }
                    2 => {
                        let other = (0..USERS)
                            .map(|i| UserId::parse(&format!("u{i}")).expect("user id"))
                            .find(|u| *u != t.user)?;
                        let c = self.wl_checkout(other, &t.sku);
                        (c, t.token, entry, Use::OtherBuyer)
                    }
                    _ => {
                        let queue: Vec<(UserId, String)> =
                            self.tokens.iter().map(|(u, t)| (u.clone(), t.clone())).collect();
                        let (u, q) = queue.get(self.rng.usize(..queue.len().max(1)))?.clone();
                        (self.wl_checkout(u, &sku), q, None, Use::QueueToken)
                    }
                };
                self.wl_keep(&c, &token, entry.clone(), how);
                Action::WlCheckout(c, token, entry, how)
            }
        })
    }

    fn any_wl_token(&mut self) -> Option<wl::Token> {
        let all: Vec<wl::Token> = self.wl_tokens.values().cloned().collect();
        all.get(self.rng.usize(..all.len().max(1))).cloned()
    }

    /// A plain checkout of one unit of `sku` (sometimes two) with a fresh key.
    fn wl_checkout(&mut self, user: UserId, sku: &Sku) -> Checkout {
        let q = if self.rng.u8(..6) == 0 { 2 } else { 1 };
        self.wl_checkout_of(user, vec![LineRequest::plain(sku.clone(), Quantity::new(q).expect("quantity"))])
    }

    fn wl_checkout_of(&mut self, user: UserId, lines: Vec<LineRequest>) -> Checkout {
        self.wl_keys += 1;
        let key = IdempotencyKey::parse(&format!("w{}", self.wl_keys)).expect("idempotency key");
        Checkout { user, key, lines, details: Default::default() }
    }

    /// Records a checkout with its token for replays.
    fn wl_keep(&mut self, c: &Checkout, token: &str, entry: Option<(Sku, u64)>, how: Use) {
        self.wl_checkouts.push((c.clone(), token.to_owned(), entry, how));
    }

    /// A checkout of the drop (one unit, sometimes two: over the buyer's limit of one),
    /// sometimes with a line of another item beside it; recorded for replays.
    fn queued_checkout(&mut self, user: UserId, token: Option<String>) -> Checkout {
        let key = IdempotencyKey::parse(&format!("q{}", self.queued.len())).expect("idempotency key");
        let q = if self.rng.u8(..6) == 0 { 2 } else { 1 };
        let mut l = LineRequest::plain(Sku::parse(shop::DROP_SKU).expect("sku"), Quantity::new(q).expect("quantity"));
        l.campaign = Some(self.drop.clone());
        let mut lines = vec![l];
        if self.rng.u8(..5) == 0 {
            let i = self.rng.usize(..self.items.len());
            if self.items[i].sku.as_str() != shop::DROP_SKU {
                lines.push(self.line(i, 1));
            }
        }
        let c = Checkout { user, key, lines, details: Default::default() };
        self.queued.push((c.clone(), token));
        c
    }

    fn notice(&mut self) -> Option<PaymentNotice> {
        // the same webhook again (a provider retry), or a new payment attempt on some order
        if !self.notices.is_empty() && self.rng.u8(..4) == 0 {
            return Some(self.notices[self.rng.usize(..self.notices.len())].clone());
        }
        let o = self.pick_order(|_| true)?;
        Some(self.new_notice(o, 5))
    }

    /// A new payment of `o` (the next payment id), failed one time in `fail_one_in`; kept so
    /// that it can be delivered again.
    pub(crate) fn new_notice(&mut self, o: holdfast::domain::order::Order, fail_one_in: u8) -> PaymentNotice {
        self.payments += 1;
        let n = PaymentNotice {
            payment_id: format!("pay{}", self.payments),
            provider: Provider::Generic,
            amount: o.pay_amount(),
            order_id: o.id,
            currency: o.currency.to_string(),
            succeeded: self.rng.u8(..fail_one_in) != 0,
        };
        self.notices.push(n.clone());
        n
    }

    /// One step: usually one actor; one in four, two or three actors at once, interleaving at
    /// every port call. Time and fault toggles are steps of their own.
    pub async fn step(&mut self, n: u64) {
        let skipped = self.skip.contains(&n);
        let roll = self.rng.u32(..100);
        if roll < 12 {
            let ms = if self.rng.u8(..5) == 0 { self.rng.i64(300_000..1_200_000) } else { self.rng.i64(1_000..60_000) };
            if skipped {
                return;
            }
            let before = now();
            clock::set_virtual_ms(Some(before + ms));
            self.log(format!("time +{}s", ms / 1000));
            self.deadlines_passed(before);
            return;
        }
        if roll < 15 {
            self.toggle_faults(skipped);
            return;
        }
        let k = if roll < 75 { 1 } else { self.rng.usize(2..=3) };
        let actions: Vec<Action> = (0..k).flat_map(|_| self.draw()).collect();
        if skipped {
            // drawn (so every later draw is the same) but not run; a taken delivery goes back
            for a in actions {
                if let Action::Deliver(q) = a {
                    self.queue.push(q);
                }
            }
            return;
        }
        if actions.len() > 1 {
            self.stats.concurrent_steps += 1;
        }
        let app = &self.app;
        let supplier = &self.supplier;
        let provider = &self.provider;
        let armed = self.armed;
        let watch = &*self.watch;
        let stock = &*self.world.stock;
        let done =
            futures_join_all(actions.iter().map(|a| exec(app, stock, supplier, provider, watch, armed, a))).await;
        let tag = if done.len() > 1 { "|| " } else { "" };
        for d in done {
            self.log(format!("{tag}{}", d.log));
            for h in &d.hits {
                self.stats.sometimes.hit(h);
            }
            match d.queue_seen {
                Some((u, TicketState::Waiting, Some(HaltReason::AllHeld))) => {
                    self.waited_all_held.insert(u);
                }
                Some((u, TicketState::Admitted, _)) if self.waited_all_held.remove(&u) => {
                    self.stats.sometimes.hit("queue: next admitted after a hold came back");
                }
                _ => {}
            }
            self.queue.extend(d.requeue);
            self.crashed.extend(d.crashed);
            self.note_recorded(d.recorded, d.recorded_done);
            if let Some((u, t)) = d.token {
                self.tokens.insert(u, t);
            }
            if let Some(o) = d.buyer_refunded {
                self.buyer_refunded.insert(o);
            }
            if let Some(o) = d.redeemed {
                self.redeemed.insert(o);
            }
            if let Some(t) = d.wl_token {
                self.wl_tokens.insert((t.user.clone(), t.sku.clone()), t);
            }
            for (c, token, entry) in d.wl_kept {
                self.wl_keep(&c, &token, Some(entry), Use::Own);
            }
            self.extra.extend(d.wl_violations);
            self.extra.extend(d.violations);
            for (path, v) in d.wl_findings {
                self.stats.sometimes.hit(path);
                self.extra.push(v);
            }
            for (sku, n, order) in d.wl_sold {
                // sold within the token's life (the clock stands still within a step)
                let expires = self.watch.lock().entries.get(&(sku.clone(), n)).and_then(|e| e.expires_at_ms);
                if expires.is_none_or(|x| now() >= x) {
                    self.extra.push(format!(
                        "WaitlistTokenSoldExpired {{ sku: {sku}, number: {n}, order: {order}, expires_at_ms: {expires:?} }}"
                    ));
                }
                let sold = self.wl_sold.entry((sku, n)).or_default();
                if !sold.contains(&order) {
                    sold.push(order);
                }
            }
            for (order, code) in d.revealed {
                match self.shown.get(&code) {
                    Some(o) if *o != order => {
                        self.extra.push(format!("CodeShownTwice {{ code: {code}, first: {o}, then: {order} }}"))
                    }
                    _ => {
                        self.shown.insert(code, order);
                    }
                }
            }
        }
        // a redeemed code's order is never refunded (the invariants also hold its lock SOLD)
        for o in self.redeemed.iter().filter(|o| self.buyer_refunded.contains(*o)) {
            let v = format!("RedeemedCodeRefunded {{ order: {o} }}");
            if !self.extra.contains(&v) {
                self.extra.push(v);
            }
        }
        // the codes' fate is one of shown or withdrawn: never both
        for o in self.shown.values() {
            if self.buyer_refunded.contains(o) {
                let v = format!("CodesShownAndRefunded {{ order: {o} }}");
                if !self.extra.contains(&v) {
                    self.extra.push(v);
                }
            }
        }
    }

    /// Counts the PAYING orders whose deadline the clock just passed while their provider was
    /// still processing the payment: what the deadline query must not guess at.
    fn deadlines_passed(&mut self, since_ms: i64) {
        let processing: HashSet<String> = self
            .provider
            .payments()
            .into_iter()
            .filter(|p| p.state == PaymentState::Processing)
            .map(|p| p.payment_id)
            .collect();
        let (from, to) = (since_ms / 1000, now() / 1000);
        for o in self.orders() {
            let passed = o.status == OrderStatus::Paying && from < o.pay_expire_at && o.pay_expire_at <= to;
            if passed && o.current_attempt().is_some_and(|a| processing.contains(&a.payment_id)) {
                self.stats.sometimes.hit("payment: processing when its deadline passed");
            }
        }
    }

    fn toggle_faults(&mut self, skipped: bool) {
        let spec = if self.rng.bool() {
            String::new()
        } else {
            let points: Vec<&'static str> = holdfast::faults::ALL
                .iter()
                .copied()
                .filter(|p| self.strict || *p != holdfast::faults::STOCK_EVENTS_DROP)
                .collect();
            let p = points[self.rng.usize(..points.len())];
            if skipped {
                return;
            }
            *self.stats.faults_hit.entry(p).or_default() += 1;
            format!("{p}@{FAULT_P}")
        };
        if skipped {
            return;
        }
        let _ = self.app.faults.set(&spec);
        self.armed = spec.split('@').next().and_then(|p| holdfast::faults::ALL.iter().copied().find(|q| *q == p));
        self.log(format!("faults = '{spec}'"));
    }

    /// Drain: no more faults, suppliers answer, every message delivered, time past every
    /// deadline, reconcile — six rounds.
    pub async fn quiesce(&mut self) {
        let _ = self.app.faults.set("");
        self.armed = None;
        self.log("--- quiesce".into());
        for round in 0..6 {
            if round == 1 {
                self.supplier.set_all(if self.rng.bool() { BookingStatus::Confirmed } else { BookingStatus::Failed });
                self.supplier.fail_issues(0);
            }
            self.drain().await;
            clock::set_virtual_ms(Some(now() + 1_200_000));
            self.drain().await;
            let d = self.exec_unarmed(&Action::Reconcile).await;
            self.log(d.log);
            for h in &d.hits {
                self.stats.sometimes.hit(h);
            }
            self.collect();
        }
        self.settled_codes();
    }

    async fn drain(&mut self) {
        for _ in 0..10_000 {
            self.collect();
            let Some(q) = self.take_due(false) else { break };
            let d = self.exec_unarmed(&Action::Deliver(q)).await;
            self.log(d.log);
            // the paths the drain reaches count as reached, as in the run
            for h in &d.hits {
                self.stats.sometimes.hit(h);
            }
            self.queue.extend(d.requeue);
            self.extra.extend(d.wl_violations);
            self.note_recorded(d.recorded, d.recorded_done);
        }
    }

    /// One action with no fault armed (the quiescence phase).
    async fn exec_unarmed(&self, a: &Action) -> Done {
        exec(&self.app, &self.world.stock, &self.supplier, &self.provider, &self.watch, None, a).await
    }

    /// A checkout recorded during an outage, and one the consumer wrote (`true`) or refused.
    fn note_recorded(&mut self, recorded: Option<OrderId>, done: Option<(OrderId, bool)>) {
        self.recorded.extend(recorded);
        if let Some((id, written)) = done {
            self.recorded.remove(&id);
            if written {
                self.recorded_written.insert(id);
            }
        }
    }
}

/// Polls every future to completion on this task, in order — deterministic, and each yields at
/// the ports' interleaving points so the others run in between.
async fn futures_join_all<F: std::future::Future<Output = Done>>(fs: impl Iterator<Item = F>) -> Vec<Done> {
    use std::pin::Pin;
    use std::task::Poll;
    let mut fs: Vec<Pin<Box<F>>> = fs.map(Box::pin).collect();
    let mut out: Vec<Option<Done>> = (0..fs.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in fs.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(d) => out[i] = Some(d),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// Events whose loss reconcile repairs: the lock is still FROZEN, and the stale-lock sweep
/// decides it from the order.
fn heals(k: EventKind) -> bool {
    matches!(k, EventKind::OrderCreated | EventKind::OrderPaid | EventKind::OrderCancelled | EventKind::OrderExpired)
}

pub fn label(d: &Delivery) -> String {
    match d {
        Delivery::Event(e) => format!("event {} {}", e.kind.as_str(), e.detail.order_id),
        Delivery::Queue(Message::PaymentTimeout { order_id, .. }) => format!("queue PaymentTimeout {order_id}"),
        Delivery::Queue(Message::ReservationCheck { reservation_id, .. }) => {
            format!("queue ReservationCheck {reservation_id}")
        }
        Delivery::Queue(Message::ReconcileWork { .. }) => "queue ReconcileWork".into(),
        Delivery::Queue(Message::SupplierPoll { order_id, .. }) => format!("queue SupplierPoll {order_id}"),
        Delivery::Queue(Message::SupplierIssue { order_id, .. }) => format!("queue SupplierIssue {order_id}"),
        Delivery::Queue(Message::RecordedCheckout { user, key, .. }) => format!("queue RecordedCheckout {user} {key}"),
        Delivery::Stream(records, _) => format!("stream batch of {} records", records.len()),
        Delivery::Told(user, sku) => format!("push WaitlistNotified {user} {sku}"),
    }
}

/// One stream record of a product shard (`pk`) as Lambda delivers it: the old image's counters
/// (none for a new shard), the new image's with the cause its last write stamped.
fn stream_record(
    pk: &str,
    old: Option<ShardCounts>,
    new: ShardCounts,
    cause: Option<holdfast::domain::journal::Cause>,
    seq: u64,
) -> serde_json::Value {
    let n = |v: i64| serde_json::json!({ "N": v.to_string() });
    let counters = |c: ShardCounts| serde_json::json!({ "pk": { "S": pk }, "av": n(c.available), "lk": n(c.locked), "sd": n(c.sold) });
    let mut image = counters(new);
    if let (Some(c), Some(m)) = (cause, image.as_object_mut()) {
        m.insert("ref".into(), serde_json::json!({ "S": c.reference }));
        m.insert("actor".into(), serde_json::json!({ "S": c.actor }));
        m.insert("why".into(), serde_json::json!({ "S": c.why }));
    }
    serde_json::json!({
        "awsRegion": "sim", "eventID": seq.to_string(),
        "eventName": if old.is_some() { "MODIFY" } else { "INSERT" },
        "dynamodb": {
            "Keys": { "pk": { "S": pk } },
            "OldImage": old.map(counters).unwrap_or_else(|| serde_json::json!({})),
            "NewImage": image,
            "SequenceNumber": format!("{seq:020}"), "SizeBytes": 100,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
            "ApproximateCreationDateTime": now() as f64 / 1000.0,
        }
    })
}

fn envelope(e: &OrderEvent) -> String {
    serde_json::json!({
        "version": "0", "id": "sim", "detail-type": e.kind.as_str(), "source": SOURCE,
        "account": "0", "time": clock::rfc3339(now()), "region": "sim", "resources": [],
        "detail": e.detail,
    })
    .to_string()
}

fn sqs(body: String) -> SqsEvent {
    SqsEvent { records: vec![SqsMessage { message_id: Some("m".into()), body: Some(body), ..Default::default() }] }
}

/// The merchant redeems the first code of order `id`, as its buyer was shown it (the reveal is
/// the buyer's, so a code nobody saw is never the one redeemed).
async fn redeem_first(app: &App, id: &OrderId, d: &mut Done) -> String {
    use holdfast::service::codes::redeem::{redeem, RedeemError};
    let owner = match app.orders.get(id).await {
        Ok(Some(OrderRecord::Order(o))) => o.user,
        _ => return format!("redeem {id} -> no order"),
    };
    let Ok(shown) = codes::reveal(app, &owner, id).await else { return format!("redeem {id} -> nothing shown") };
    d.revealed = shown.iter().map(|(_, c)| (id.clone(), c.clone())).collect();
    let Some((_, code)) = shown.into_iter().next() else { return format!("redeem {id} -> no code") };
    let r = redeem(app, id, &code).await;
    match &r {
        Ok(_) => {
            d.hits.push("code: redeemed");
            d.redeemed = Some(id.clone());
        }
        Err(RedeemError::AlreadyRedeemed(_)) => d.hits.push("code: a second redemption refused"),
        Err(_) => {}
    }
    format!("redeem {id} -> {}", show(r, |x| format!("redeemed at {}", x.redeemed_at_ms)))
}

fn show<T, E: std::fmt::Display>(r: Result<T, E>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(t) => f(t),
        Err(e) => format!("err {e}"),
    }
}

/// A queue place as the trace shows it.
fn place(p: &queue::Place) -> String {
    let token = if p.admission_token.is_some() { " token" } else { "" };
    format!("{} ticket={:?} position={:?} eta={:?}{token}", p.state.as_str(), p.ticket, p.position, p.eta_seconds)
}

/// A checkout through `orders::create_admitted` (with a queued campaign's admission token, or
/// none); `true` = it crashed at an injected fault point (the client will retry it).
async fn checkout(app: &App, c: &Checkout, token: Option<&str>, race: bool, d: &mut Done) -> (String, bool) {
    let r = orders::create_with(app, &c.user, &c.key, c.lines.clone(), &c.details, token).await;
    let crashed = matches!(&r, Err(e) if e.to_string().contains("injected crash"));
    let queued = c.lines.iter().any(|l| l.campaign.as_ref().is_some_and(|id| id.as_str() != shop::CAMPAIGN));
    match &r {
        Ok((_, true)) if queued => d.hits.push("queue: replay answered its order"),
        Ok((_, true)) => d.hits.push("checkout: replay answered its order"),
        Ok((_, false)) if queued => d.hits.push("queue: checkout with the token"),
        Ok(_) => {}
        Err(e) => {
            let e = e.to_string();
            if let Some(p) = crash_point(&e) {
                d.hits.push(p);
            }
            let refusals: [(&str, &'static str); 9] = [
                ("already used by a checkout", "queue: admission_used"),
                ("admission token has expired", "queue: expired token refused"),
                ("issued to another buyer", "queue: another buyer's token refused"),
                ("signature does not verify", "queue: forged token refused"),
                ("with an admission token from its queue", "queue: admission_required"),
                ("too many pending checkouts", "checkout: refused, too many pending"),
                ("campaign quota of", "checkout: refused, campaign quota exhausted"),
                ("has ended", "checkout: refused, sale ended"),
                ("reservation of this checkout expired", "checkout: reservation expired"),
            ];
            if let Some((_, h)) = refusals.iter().find(|(text, _)| e.contains(text)) {
                d.hits.push(h);
            }
            if race && e.contains("already used by a checkout") {
                d.hits.push("queue: race sold once, the other admission_used");
            }
        }
    }
    let desc: Vec<String> = c
        .lines
        .iter()
        .map(|l| {
            let camp = match &l.campaign {
                Some(id) if id.as_str() == shop::CAMPAIGN => "@campaign",
                Some(_) => "@queue",
                None => "",
            };
            format!("{}x{}{camp}", l.sku, l.quantity.get())
        })
        .collect();
    // the token's text names the run's campaign id: left out, so a replay's trace is the same
    let admitted = if token.is_some() { " with token" } else { "" };
    let out = show(r, |(o, replay)| format!("ok {} {} replay={replay}", o.id, o.status.as_str()));
    (format!("create {} key={}{admitted} [{}] -> {out}", c.user, c.key.as_str(), desc.join(",")), crashed)
}

/// Runs one action through the real services and consumers.
pub async fn exec(
    app: &App,
    stock: &MemoryStock,
    supplier: &MemorySupplier,
    provider: &MemoryProvider,
    watch: &Watched,
    armed: Option<&'static str>,
    a: &Action,
) -> Done {
    let mut d = Done::default();
    d.log = match a {
        Action::Checkout(c) => {
            let (out, crashed) = checkout(app, c, None, false, &mut d).await;
            if crashed {
                d.crashed = Some(c.clone());
            }
            out
        }
        Action::QueueBuyer(u, id, then) => {
            let mut out = String::new();
            let mut r = queue::me(app, u, id).await;
            if matches!(r, Err(QueueError::NotFound(_))) {
                let j = queue::join(app, u, id).await;
                out.push_str(&format!(
                    "queue join {u} -> {}; ",
                    show(j.as_ref(), |(p, new)| place(p) + &format!(" new={new}"))
                ));
                r = j.map(|(p, _)| p);
            }
            out.push_str(&format!("queue me {u} -> {}", show(r.as_ref(), place)));
            if let Ok(p) = &r {
                seen(app, u, id, p, &mut d).await;
            }
            if let Ok(queue::Place { admission_token: Some(token), .. }) = &r {
                d.token = Some((u.clone(), token.clone()));
                if let Some(c) = then {
                    out.push_str(&format!("; {}", checkout(app, c, Some(token), false, &mut d).await.0));
                }
            }
            out
        }
        Action::Join(u, id) => {
            let r = queue::join(app, u, id).await;
            if let Ok((p, _)) = &r {
                if p.ticket.is_none() && p.state == TicketState::SoldOut {
                    d.hits.push("queue: join answered SOLD_OUT without a ticket");
                }
                seen(app, u, id, p, &mut d).await;
            }
            format!("queue join {u} -> {}", show(r.as_ref(), |(p, new)| place(p) + &format!(" new={new}")))
        }
        Action::QueuedCheckout(c, token, race) => checkout(app, c, token.as_deref(), *race, &mut d).await.0,
        Action::WlBuyer(u, sku, again, then) => wl::buyer(app, watch, u, sku, *again, then, &mut d).await,
        Action::WlJoin(u, sku) => wl::join(app, watch, u, sku, &mut d).await,
        Action::WlLeave(u, sku) => wl::leave(app, u, sku).await,
        Action::WlCheckout(c, token, entry, how) => {
            let entry = entry.as_ref().map(|(s, n)| (s, *n));
            wl::checkout(app, c, token, entry, *how, &mut d).await
        }
        Action::WlRace(a, b, t) => {
            // drawn as two concurrent actions (`Sim::draw`); run one after the other if ever here
            let entry = Some((&t.sku, t.number));
            let x = wl::checkout(app, a, &t.token, entry, Use::Race, &mut d).await;
            format!("{x}; {}", wl::checkout(app, b, &t.token, entry, Use::Race, &mut d).await)
        }
        Action::Race(a, b, token) => {
            // drawn as two concurrent actions (`Sim::draw`); run one after the other if ever here
            let x = checkout(app, a, Some(token), true, &mut d).await.0;
            format!("{x}; {}", checkout(app, b, Some(token), true, &mut d).await.0)
        }
        Action::PauseQueue(id, p) => {
            if *p {
                d.hits.push("queue: halted, paused by the operator");
            }
            let r = queue::set_paused(app, id, *p).await;
            format!(
                "queue paused={p} -> {}",
                show(r, |s| format!(
                    "admitted_through={} halted={:?} stock={:?}",
                    s.admitted_through, s.halted, s.stock
                ))
            )
        }
        Action::Pay(n) => {
            // the money moves at the provider first (a payment made there for the order, outside
            // Holdfast's attempts); its webhook carries the provider's payment id. The same
            // webhook again is the same payment (same key, already final).
            let req = PaymentRequest {
                attempt_key: format!("sim_{}", n.payment_id),
                order_id: n.order_id.clone(),
                amount: n.amount,
                currency: n.currency.clone(),
            };
            let pid = match provider.create_payment(&req).await {
                Ok(Ok(p)) => p.payment_id,
                _ => n.payment_id.clone(),
            };
            provider.settle(&pid, if n.succeeded { PaymentState::Succeeded } else { PaymentState::Failed });
            let n = PaymentNotice { payment_id: pid, ..n.clone() };
            let r = payments::apply(app, &n).await;
            webhook_hit(&r, &mut d);
            format!("pay {} {} ok={} -> {}", n.order_id, n.payment_id, n.succeeded, show(r, |r| r.as_str().to_owned()))
        }
        Action::Cancel(u, id) => {
            format!("cancel {id} -> {}", show(orders::cancel(app, u, id).await, |o| o.status.as_str().into()))
        }
        Action::Admin(id, change) => {
            let label = format!("{:?}", change.action());
            let r = after_sale::apply(app, Caller::Admin, id, change.clone()).await;
            format!("admin {label} {id} -> {}", show(r, |o| o.status.as_str().into()))
        }
        Action::Buyer(u, id, change) => {
            let label = format!("{:?}", change.action());
            // an accepted refund of an order not refunding yet (a repeat is answered as done)
            let fresh = matches!(app.orders.get(id).await, Ok(Some(OrderRecord::Order(o)))
                if !matches!(o.status, OrderStatus::Refunding | OrderStatus::Refunded));
            let r = after_sale::apply(app, Caller::Buyer(u), id, change.clone()).await;
            // held for review is not accepted (an admin's approval is an operator's refund); nor
            // is a repeat answered with an operator's refund that won a race with it (the
            // order's log says who moved it to REFUNDING)
            let by_buyer = |o: &holdfast::domain::order::Order| {
                o.log
                    .entries
                    .iter()
                    .any(|e| e.to == OrderStatus::Refunding && matches!(e.actor, holdfast::domain::order::Actor::Buyer))
            };
            let accepted = matches!(&r, Ok(o) if o.status != OrderStatus::RefundRequested && by_buyer(o));
            if fresh && accepted && matches!(change, Change::Refund { .. }) {
                d.buyer_refunded = Some(id.clone());
            }
            format!("buyer {label} {id} -> {}", show(r, |o| o.status.as_str().into()))
        }
        Action::Redeem(id) => redeem_first(app, id, &mut d).await,
        Action::Reveal(u, id) => kinds::reveal(app, u, id, &mut d).await,
        Action::FailIssues(n) => kinds::fail_issues(supplier, *n),
        Action::Outage(c) => kinds::in_outage(app, stock, c, &mut d).await,
        Action::Reissue(id) => kinds::reissue_codes(app, id, &mut d).await,
        Action::RefundWebhook(c, webhooks) => {
            provider.finish_refund(&c.provider_refund_id, c.succeeded);
            let mut out = format!("refund done at provider {} {:?}", c.order_id, c.refund_id);
            if *webhooks == 0 {
                d.hits.push("refund: done, webhook never sent");
            }
            for _ in 0..*webhooks {
                let r = refunds::confirm(app, c).await;
                if r.is_ok() {
                    d.hits.push("refund: confirmed by the provider's webhook");
                }
                out.push_str(&format!("; webhook -> {}", show(r, |r| format!("{r:?}"))));
            }
            out
        }
        Action::Pause(sku, p) => format!("admin paused={p} {sku} -> {}", admin::set_paused(app, sku, *p).await.is_ok()),
        Action::Adjust(sku, id, delta, dates) => {
            let r = admin::adjust(app, sku, id, *delta, "sim", Some("ops"), dates).await;
            format!("admin adjust {sku} {delta:+} -> {}", show(r, |applied| format!("applied={applied}")))
        }
        Action::PauseCampaign(p) => {
            let id = CampaignId::parse(shop::CAMPAIGN).expect("campaign id");
            format!("campaign paused={p} -> {}", campaigns::set_paused(app, &id, *p).await.is_ok())
        }
        Action::Supplier(st) => {
            supplier.set_all(*st);
            format!("supplier answers {}", st.as_str())
        }
        Action::Reconcile => match fires(armed, &[holdfast::faults::RECONCILE_CRASH]) {
            // the scheduled handler's crash comes first, before it seeds any work; a sweep that
            // runs is run inline (seeded, its ~400 items would crowd the scheduler's queue)
            Some(_) => {
                let r = holdfast::handlers::reconcile::handle(app, serde_json::json!({})).await;
                if let Err(e) = &r {
                    d.hits.extend(crash_point(&format!("{e:#}")));
                }
                format!("reconcile scheduled -> {}", show(r, |v| v.to_string()))
            }
            None => {
                let r = reconcile::run(app).await;
                // a work item that failed inside the inline sweep while the worker's crash point
                // was armed: the in-memory ports fail nothing else
                if armed == Some(holdfast::faults::RECONCILE_WORKER_CRASH) && r.as_ref().is_ok_and(|r| r.errors > 0) {
                    d.hits.extend(fault_path(holdfast::faults::RECONCILE_WORKER_CRASH));
                }
                format!("reconcile run -> {}", show(r, |r| format!("{:?}", r.errors)))
            }
        },
        Action::ForgedOversell(e) => {
            let r = holdfast::handlers::refunds::handle(app, sqs(envelope(e))).await;
            format!("forged OversellDetected {} -> {}", e.detail.order_id, r.is_ok())
        }
        Action::StartPay(u, id) => {
            let r = paying::start(app, u, id, None).await;
            format!(
                "start payment {id} -> {}",
                show(r, |(o, created)| format!("{} created={created}", o.status.as_str()))
            )
        }
        Action::AtProvider(id, pid, state, webhooks) => {
            let after = provider.settle(pid, *state).map(|p| p.state);
            let mut out = format!("at provider {id} {pid} {state:?} -> {after:?}");
            match (after, webhooks) {
                (Some(PaymentState::Processing), _) => d.hits.push("payment: processing at the provider"),
                (Some(PaymentState::Succeeded), 0) if *state == PaymentState::Succeeded => {
                    d.hits.push("payment: captured, webhook never sent")
                }
                (Some(PaymentState::Succeeded | PaymentState::Failed), 2) => d.hits.push("payment: webhook sent twice"),
                _ => {}
            }
            if let Some(st @ (PaymentState::Succeeded | PaymentState::Failed)) = after {
                if let Ok(Some(OrderRecord::Order(o))) = app.orders.get(id).await {
                    let n = PaymentNotice {
                        payment_id: pid.clone(),
                        provider: Provider::Generic,
                        order_id: id.clone(),
                        amount: o.pay_amount(),
                        currency: o.currency.to_string(),
                        succeeded: st == PaymentState::Succeeded,
                    };
                    for _ in 0..*webhooks {
                        let r = payments::apply(app, &n).await;
                        webhook_hit(&r, &mut d);
                        out.push_str(&format!("; webhook -> {}", show(r, |r| r.as_str().to_owned())));
                    }
                }
            }
            out
        }
        Action::Decide(id, approve) => {
            let r = after_sale::decide_refund(app, id, *approve, "sim", "ops", None).await;
            if r.is_ok() {
                d.hits.push("refund review: an admin decided");
            }
            format!("refund decision {id} approve={approve} -> {}", show(r, |o| o.status.as_str().into()))
        }
        Action::Deliver(q) => {
            let (ok, next) = deliver(app, armed, &q.what, &mut d).await;
            if !ok {
                d.hits.push("delivery: consumer failed, retried");
                d.requeue.push(Queued { due_ms: now() + 30_000, ..q.clone() });
            }
            d.requeue.extend(next);
            format!("deliver {} -> {}", label(&q.what), if ok { "ok" } else { "failed, retried" })
        }
    };
    d
}

/// The fault point a crash's error names (`injected crash at <point>`).
pub(crate) fn crash_point(error: &str) -> Option<&'static str> {
    let at = error.split("injected crash at ").nth(1)?;
    holdfast::faults::ALL.iter().copied().find(|p| at.starts_with(p)).and_then(fault_path)
}

/// The sometimes-path of a fault point.
fn fault_path(point: &str) -> Option<&'static str> {
    crate::sometimes::PATHS.iter().map(|(p, _)| *p).find(|p| p.strip_prefix("fault ") == Some(point))
}

/// Which of `points` (a consumer's, in the order it draws them) fires on the message about to be
/// handled. The consumer draws each armed point of its own from the services' thread-local
/// `fastrand` as the first thing it does; only one point is armed at a time, so that draw is the
/// generator's next `f64`, read here from a copy of its state without moving it. Call
/// immediately before the handler, with no await in between.
fn fires(armed: Option<&'static str>, points: &[&'static str]) -> Option<&'static str> {
    let p = armed.filter(|a| points.contains(a))?;
    (fastrand::Rng::with_seed(fastrand::get_seed()).f64() < FAULT_P).then_some(p)
}

/// A payment webhook's outcome as a rare path.
fn webhook_hit(r: &Result<payments::PaymentResult, payments::PaymentError>, d: &mut Done) {
    d.hits.push(match r {
        Ok(payments::PaymentResult::Applied) => "payment webhook: applied",
        Ok(payments::PaymentResult::Duplicate) => "payment webhook: duplicate",
        Ok(payments::PaymentResult::RefundRequested) => "payment webhook: refund_requested",
        Ok(payments::PaymentResult::FailedRecorded) => "payment webhook: failed_recorded",
        Err(payments::PaymentError::AmountMismatch) => "payment webhook: amount mismatch",
        Err(_) => return,
    });
}

/// Notes a buyer's queue state as read: the state itself and, for a ticket waiting with no ETA,
/// why the room is halted (read from the Queues port).
async fn seen(app: &App, u: &UserId, id: &CampaignId, p: &queue::Place, d: &mut Done) {
    d.hits.push(match p.state {
        TicketState::Waiting => "queue: WAITING",
        TicketState::Admitted => "queue: ADMITTED",
        TicketState::Used => "queue: USED",
        TicketState::Expired => "queue: EXPIRED",
        TicketState::SoldOut => "queue: SOLD_OUT",
    });
    let mut halt = None;
    if p.state == TicketState::Waiting && p.position.is_some() && p.eta_seconds.is_none() {
        halt = app.queues.room(id).await.ok().and_then(|r| r.halted).map(|h| h.reason);
        if halt == Some(HaltReason::AllHeld) {
            d.hits.push("queue: halted, every unit held");
        }
    }
    d.queue_seen = Some((u.clone(), p.state, halt));
}

/// Delivers one item through its real consumer; `false` = it failed and goes back on its queue.
/// Returns the reconcile work left over.
async fn deliver(app: &App, armed: Option<&'static str>, q: &Delivery, d: &mut Done) -> (bool, Vec<Queued>) {
    use holdfast::faults::*;
    use holdfast::handlers as h;
    let batch = |r: anyhow::Result<aws_lambda_events::sqs::SqsBatchResponse>, d: &mut Done| match r {
        Ok(b) => b.batch_item_failures.is_empty(),
        Err(e) => {
            d.hits.extend(crash_point(&format!("{e:#}")));
            false
        }
    };
    match q {
        // buyers do not act once the run settles
        Delivery::Told(..) => (true, Vec::new()),
        Delivery::Stream(records, _) => {
            // stock-journal, as Lambda calls it with a batch of the stock table's stream
            let ev = match serde_json::from_value(serde_json::json!({ "Records": records })) {
                Ok(ev) => ev,
                Err(e) => {
                    d.wl_violations.push(format!("StreamRecordUnreadable {{ error: {e} }}"));
                    return (true, Vec::new());
                }
            };
            let r = h::stock_journal::handle(app, ev).await;
            (r.is_ok_and(|b| b.batch_item_failures.is_empty()), Vec::new())
        }
        Delivery::Event(e) => {
            let ev = sqs(envelope(e));
            let stock = match e.kind {
                EventKind::OrderPaid
                | EventKind::OrderCancelled
                | EventKind::OrderExpired
                | EventKind::OrderFailed
                | EventKind::OrderRefunding
                | EventKind::OrderRefunded => true,
                EventKind::OrderReturned => e.detail.restock == Some(true),
                _ => false,
            };
            if stock {
                let fired = fires(armed, &[STOCK_EVENTS_DROP, STOCK_EVENTS_CRASH, STOCK_EVENTS_FAIL]);
                d.hits.extend(fired.and_then(fault_path));
                let r = h::stock_events::handle(app, ev).await;
                return (batch(r, d), Vec::new());
            }
            match e.kind {
                EventKind::RefundRequested | EventKind::OversellDetected | EventKind::SupplierCancelRequested => {
                    let r = h::refunds::handle(app, ev).await;
                    (batch(r, d), Vec::new())
                }
                _ => (true, Vec::new()),
            }
        }
        Delivery::Queue(
            m @ (Message::PaymentTimeout { .. } | Message::SupplierPoll { .. } | Message::SupplierIssue { .. }),
        ) => {
            if let Message::PaymentTimeout { order_id, due_at, .. } = m {
                if processing_at_deadline(app, order_id, *due_at).await {
                    d.hits.push("payment: timeout met a processing payment at its deadline");
                }
            }
            let ev = sqs(serde_json::to_string(m).unwrap_or_default());
            let fired = fires(armed, &[PAYMENT_TIMEOUT_DROP, PAYMENT_TIMEOUT_CRASH]);
            d.hits.extend(fired.and_then(fault_path));
            let r = h::payment_timeout::handle(app, ev).await;
            (batch(r, d), Vec::new())
        }
        Delivery::Queue(Message::RecordedCheckout { user, key, lines, details, recorded_at, attempt, .. }) => {
            kinds::complete_recorded(app, (user, key), lines, details, (*recorded_at, *attempt), d).await
        }
        Delivery::Queue(m @ Message::ReservationCheck { .. }) => {
            let ev = sqs(serde_json::to_string(m).unwrap_or_default());
            let fired = fires(armed, &[RESERVATION_CHECK_DROP, RESERVATION_CHECK_CRASH]);
            d.hits.extend(fired.and_then(fault_path));
            let r = h::reservation_check::handle(app, ev).await;
            (batch(r, d), Vec::new())
        }
        Delivery::Queue(Message::ReconcileWork { item, .. }) => {
            let mut next = Vec::new();
            let r = reconcile::work(app, item, std::time::Duration::from_secs(50)).await.map(|o| {
                // the rest of a page goes back on the reconcile queue
                if let Some(item) = o.next {
                    let m = Message::ReconcileWork { schema: 1, sweep_ms: now(), item };
                    next.push(Queued { due_ms: now(), what: Delivery::Queue(m) });
                }
            });
            if let Err(e) = &r {
                d.hits.extend(crash_point(&format!("{e:#}")));
            }
            (r.is_ok(), next)
        }
    }
}

/// Whether this payment-timeout message meets a PAYING order at its deadline whose payment the
/// provider is still processing (what `paying::at_deadline` must not guess at).
async fn processing_at_deadline(app: &App, order_id: &str, due_at: i64) -> bool {
    let Ok(id) = OrderId::parse(order_id) else { return false };
    let Ok(Some(OrderRecord::Order(o))) = app.orders.get(&id).await else { return false };
    if o.status != OrderStatus::Paying || clock::now_s() < o.pay_expire_at.max(due_at) {
        return false;
    }
    let Some(a) = o.current_attempt() else { return false };
    matches!(app.providers.get(a.provider).payment(&a.payment_id).await, Ok(Some(p)) if p.state == PaymentState::Processing)
}
