use super::*;
use crate::app::memory_app;
use crate::config::Config;
use crate::domain::invariants::{check_all, ShardCounts};
use crate::domain::reservation::LockStatus;
use crate::domain::{Currency, IdempotencyKey, Quantity, UserId};
use crate::ports::{Campaigns, CodePools, Journal, Locks, SkuMeta};
use crate::service::after_sale::{self, Caller, Change};
use crate::service::payments::{self, PaymentNotice};
use crate::service::stock::{self, LineRequest, LockError};

#[tokio::test]
async fn the_sweep_confirms_and_restocks_the_stale_lock_of_an_order_refunded_before_its_confirm() {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.sku_cache_ms = 0;
    c.soldout_cache_ms = 0;
    c.stale_lock_s = 0;
    let (app, w) = memory_app("test", c).unwrap();
    let a = Sku::parse("A").unwrap();
    w.stock.seed(
        SkuMeta {
            fences: Vec::new(),
            warehouses: None,
            controls: Default::default(),
            sku: a.clone(),
            name: "A".into(),
            price: 500,
            currency: Currency::parse("EUR").unwrap(),
            shards: 1,
            slots: 1,
            per_user_limit: Some(2),
            stocked: 0,
            version: 1,
            paused: false,
            model: Default::default(),
            bundle: Vec::new(),
            supplier: None,
        },
        &[5],
    );
    let user = UserId::parse("u").unwrap();
    let line = LineRequest::plain(a.clone(), Quantity::new(2).unwrap());
    let (o, _) =
        crate::service::orders::create(&app, &user, &IdempotencyKey::parse("k1").unwrap(), vec![line]).await.unwrap();
    let notice = PaymentNotice {
        payment_id: "p1".into(),
        provider: Default::default(),
        order_id: o.id.clone(),
        amount: o.amount,
        currency: o.currency.to_string(),
        succeeded: true,
    };
    payments::apply(&app, &notice).await.unwrap();
    // refunded before the payment's confirm ran: the restock finds the lock FROZEN and gives
    // up (its message ends in the DLQ); the confirm's message is lost too
    let refund = Change::Refund { reason: "changed my mind".into() };
    after_sale::apply(&app, Caller::Buyer(&user), &o.id, refund).await.unwrap();
    let rid = ReservationId::for_order(&o.id);
    assert!(matches!(stock::restock(&app, &rid).await, Err(LockError::Store(_))));
    tokio::time::sleep(Duration::from_millis(5)).await;

    let rep = run(&app).await.unwrap();
    assert_eq!((rep.stale_locks, rep.locks_restocked), (1, 1), "{rep:?}");
    assert_eq!(w.stock.get_reservation(&rid).await.unwrap().unwrap().status, LockStatus::Restocked);
    assert_eq!(w.stock.shards(&a), vec![ShardCounts { available: 5, locked: 0, sold: 0 }], "back on sale");
    assert_eq!(w.stock.user_counter(&a, &user).unwrap_or(0), 0, "the allowance given back");
    let v = check_all(&w.snapshot(0));
    assert!(v.is_empty(), "{v:#?}");
    // nothing is repaired twice
    let rep = run(&app).await.unwrap();
    assert_eq!((rep.stale_locks, rep.locks_restocked), (0, 0), "{rep:?}");
}

fn plain(sku: &str, shards: u16) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: Sku::parse(sku).unwrap(),
        name: sku.into(),
        price: 500,
        currency: Currency::parse("EUR").unwrap(),
        shards,
        slots: shards,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: Default::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

fn sweep_config() -> Config {
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.sku_cache_ms = 0;
    c.soldout_cache_ms = 0;
    c.stale_lock_s = 0;
    c.reservation_check_delay_s = 0;
    c
}

/// A FROZEN lock of `quantity` on shard 0 of `sku`, made `age_ms` ago, with no order.
fn orphan(id: &str, sku: &str, quantity: u32, age_ms: i64) -> crate::domain::reservation::Reservation {
    use crate::domain::reservation::{Reservation, ReservationKind, ReservedLine};
    Reservation {
        id: ReservationId::from_stored(id).unwrap(),
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: Some(UserId::parse("u").unwrap()),
        request_hash: "h".into(),
        created_at_ms: clock::now_ms() - age_ms,
        expires_at: clock::now_s() + 900,
        lines: vec![ReservedLine {
            sku: Sku::parse(sku).unwrap(),
            quantity,
            unit_price: 500,
            currency: Currency::parse("EUR").unwrap(),
            limited: false,
            pieces: vec![crate::domain::allocation::Piece { shard: 0, quantity }],
            campaign: None,
            dates: Vec::new(),
            draws: Vec::new(),
            at_payment: false,
            at_shipment: false,
            codes: None,
            backorder: None,
        }],
        oversold: false,
        code_fate: None,
        pending: false,
    }
}

/// Runs `item` and its continuations to the end with `budget` each; the reports merged.
async fn chain(app: &App, item: WorkItem, budget: Duration) -> ReconcileReport {
    let mut rep = ReconcileReport::default();
    let mut next = Some(item);
    while let Some(item) = next {
        let out = work(app, &item, budget).await.unwrap();
        rep.merge(out.report);
        next = out.next;
        assert!(rep.items < 10_000, "the chain makes progress");
    }
    rep
}

/// A journal whose every read fails: the poison of a `SkuJournals` item.
struct PoisonJournal;

#[async_trait::async_trait]
impl crate::ports::Journal for PoisonJournal {
    async fn put(&self, _: &[journal::Entry]) -> anyhow::Result<()> {
        anyhow::bail!("poison")
    }
    async fn for_sku(
        &self,
        _: &Sku,
        _: u16,
        _: Option<&str>,
        _: usize,
    ) -> anyhow::Result<(Vec<journal::Entry>, Option<String>)> {
        anyhow::bail!("poison")
    }
    async fn for_cause(&self, _: &str) -> anyhow::Result<Vec<journal::Entry>> {
        anyhow::bail!("poison")
    }
    async fn since(
        &self,
        _: &Sku,
        _: u16,
        _: Option<&str>,
        _: usize,
    ) -> anyhow::Result<(Vec<journal::Entry>, Option<String>)> {
        anyhow::bail!("poison")
    }
    async fn checkpoint(&self, _: &Sku) -> anyhow::Result<Option<journal::Checkpoint>> {
        anyhow::bail!("poison")
    }
    async fn put_checkpoint(&self, _: &Sku, _: &journal::Checkpoint, _: Option<u64>) -> anyhow::Result<bool> {
        anyhow::bail!("poison")
    }
}

#[tokio::test]
async fn a_poison_work_item_does_not_hold_back_the_next_sweeps_repair_of_a_stale_lock() {
    let (app, w) = memory_app("test", sweep_config()).unwrap();
    let app = app.with_journal(std::sync::Arc::new(PoisonJournal));
    w.stock.seed(plain("A", 1), &[5]);
    // the journal item fails on every delivery: it stays on the queue (SQS redelivers it)
    let poison = WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false };
    assert!(work(&app, &poison, WORK_BUDGET).await.is_err());
    w.messages.set_reconcile_backlog(1);
    // meanwhile a checkout dies after its freeze
    let lock = orphan("dead-1", "A", 2, 3_600_000);
    assert_eq!(w.stock.put_frozen(&lock, &Default::default()).await.unwrap(), Ok(()));

    let seeded = seed(&app).await.unwrap();
    let repairs = repair_items(&app, clock::now_ms()).len();
    assert_eq!(seeded, Seeded { items_seeded: repairs, backlog: 1 }, "the repairs are seeded over the poison");
    let items: Vec<WorkItem> = w
        .messages
        .sent()
        .into_iter()
        .filter_map(|(m, _)| match m {
            Message::ReconcileWork { item, .. } => Some(item),
            _ => None,
        })
        .collect();
    assert_eq!(items.len(), repairs);
    assert!(!items.iter().any(|i| check_items().contains(i)), "no second chain of a check over the first");
    let mut rep = ReconcileReport::default();
    for item in items {
        rep.merge(chain(&app, item, WORK_BUDGET).await);
    }
    assert_eq!((rep.stale_locks, rep.locks_released, rep.errors), (1, 1, 0), "{rep:?}");
    assert_eq!(w.stock.shards(&Sku::parse("A").unwrap()), vec![ShardCounts { available: 5, locked: 0, sold: 0 }]);
    // an empty queue gets a whole sweep; a sweep's worth left over, none
    w.messages.set_reconcile_backlog(0);
    assert_eq!(seed(&app).await.unwrap().items_seeded, repairs + check_items().len());
    w.messages.set_reconcile_backlog(BACKLOG_ALLOWANCE + 1);
    assert_eq!(seed(&app).await.unwrap().items_seeded, 0);
}

/// A journal for shard 0 of `sku` going 0 → `n` one unit at a time (a creation, then `n`
/// adjustments), written `age_ms` ago.
fn adjustments(sku: &str, from: i64, n: i64, age_ms: i64) -> Vec<journal::Entry> {
    let c = |a: i64| ShardCounts { available: a, locked: 0, sold: 0 };
    let at = clock::now_ms() - age_ms;
    let mut out = Vec::new();
    if from == 0 {
        out.push(journal::entry(
            &journal::Counted::Shard { sku: Sku::parse(sku).unwrap(), shard: 0 },
            None,
            Some(&journal::Image::default()),
            at,
            "0",
        ));
    }
    for i in from..from + n {
        let before = journal::Image { counts: c(i), cause: None };
        let after = journal::Image { counts: c(i + 1), cause: Some(journal::Cause::new("adj", None, "adjust: x")) };
        let item = journal::Counted::Shard { sku: Sku::parse(sku).unwrap(), shard: 0 };
        out.push(journal::entry(&item, Some(&before), Some(&after), at, &format!("{:09}", i + 1)));
    }
    out.into_iter().flatten().collect()
}

#[tokio::test]
async fn the_journal_check_reads_only_entries_after_its_checkpoint_and_stops_inside_a_sku() {
    let (app, w) = memory_app("test", sweep_config()).unwrap();
    let j = std::sync::Arc::new(crate::adapters::memory::MemoryJournal::new());
    let app = app.with_journal(j.clone());
    w.stock.seed(plain("A", 1), &[2500]);
    j.put(&adjustments("A", 0, 2500, 60_000)).await.unwrap();
    let item = WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false };

    // no budget at all: one page of entries per invocation, the SKU resumed from its checkpoint
    let rep = chain(&app, item.clone(), Duration::ZERO).await;
    assert_eq!((rep.journals_held, rep.journal_entries_read, rep.items), (1, 2501, 3), "{rep:?}");
    // the next sweep reads nothing old
    let rep = chain(&app, item.clone(), WORK_BUDGET).await;
    assert_eq!((rep.journals_held, rep.journal_entries_read), (1, 0), "{rep:?}");
    // only what was written since
    w.stock.seed(plain("A", 1), &[2503]);
    j.put(&adjustments("A", 2500, 3, 0)).await.unwrap();
    let rep = chain(&app, item.clone(), WORK_BUDGET).await;
    assert_eq!((rep.journals_held, rep.journal_entries_read), (1, 3), "{rep:?}");
    assert!(rep.violations.is_empty(), "{rep:?}");
    // a counter write the journal never got: behind until the gap is older than the grace
    w.stock.seed(plain("A", 1), &[2504]);
    let rep = chain(&app, item.clone(), WORK_BUDGET).await;
    assert_eq!((rep.journals_behind, rep.violations.len()), (1, 0), "{rep:?}");
}

#[tokio::test]
async fn locked_equals_frozen_is_checked_past_the_old_limits_and_finds_a_planted_mismatch() {
    let (app, w) = memory_app("test", sweep_config()).unwrap();
    let j = std::sync::Arc::new(crate::adapters::memory::MemoryJournal::new());
    let app = app.with_journal(j.clone());
    // more than the 2,000 SKUs and 20,000 FROZEN locks the check used to give up at
    let (skus, locks) = (2_500, 22_500);
    for i in 0..skus {
        w.stock.seed(plain(&format!("S{i:05}"), 1), &[10]);
    }
    for i in 0..locks {
        let r = orphan(&format!("o{i:08}"), &format!("S{:05}", i % skus), 1, 120_000);
        assert_eq!(w.stock.put_frozen(&r, &Default::default()).await.unwrap(), Ok(()));
    }
    let rep = chain(&app, WorkItem::LockedTotals(Default::default()), WORK_BUDGET).await;
    assert_eq!((rep.locked_skus_judged, rep.locked_locks_read, rep.locked_runs), (skus, locks, 1), "{rep:?}");
    assert!(rep.violations.is_empty() && !rep.locked_check_skipped, "{rep:?}");

    // S00007 loses its locked units while its 9 locks stay FROZEN; S00008 too, but it was
    // written a moment ago (its journal says so): not judged
    w.stock.seed(plain("S00007", 1), &[10]);
    w.stock.seed(plain("S00008", 1), &[10]);
    j.put(&adjustments("S00008", 0, 10, 1_000)).await.unwrap();
    let rep = chain(&app, WorkItem::LockedTotals(Default::default()), Duration::ZERO).await;
    assert_eq!(
        rep.violations,
        vec![format!("{:?}", Violation::LockedMismatch { sku: Sku::parse("S00007").unwrap(), locked: 0, frozen: 9 })],
        "{rep:?}"
    );
    assert_eq!((rep.locked_groups_suspect, rep.locked_runs, rep.locked_skus_moved), (1, 2, 1), "{rep:?}");
    assert!(rep.continuations > 10, "paged with no budget: {rep:?}");
}

/// `n` FROZEN locks of one unit on `sku`, each drawn on quota shard `i % shards` of `campaign`.
fn campaign_locks(campaign: &str, sku: &str, shards: u16, n: usize) -> Vec<crate::domain::reservation::Reservation> {
    use crate::domain::allocation::Piece;
    use crate::domain::reservation::CampaignLine;
    (0..n)
        .map(|i| {
            let mut r = orphan(&format!("{campaign}-{sku}-{i:06}"), sku, 1, 120_000);
            r.lines[0].campaign = Some(CampaignLine {
                campaign_id: crate::domain::CampaignId::parse(campaign).unwrap(),
                pieces: vec![Piece { shard: (i % usize::from(shards)) as u16, quantity: 1 }],
                limited: false,
            });
            r
        })
        .collect()
}

#[tokio::test]
async fn quota_locked_equals_the_frozen_campaign_pieces_per_item_and_a_planted_mismatch_is_found() {
    use crate::domain::campaign::{Campaign, CampaignItem};
    let (app, w) = memory_app("test", sweep_config()).unwrap();
    let j = std::sync::Arc::new(crate::adapters::memory::MemoryJournal::new());
    let app = app.with_journal(j.clone());
    let now = clock::now_s();
    let skus = 40;
    for i in 0..skus {
        w.stock.seed(plain(&format!("S{i:03}"), 1), &[1_000]);
    }
    // 30 campaigns of 4 items each (more campaigns than a page), 3 quota shards per item
    let mut locks = 0;
    for c in 0..30 {
        let id = format!("C{c:02}");
        let items: Vec<CampaignItem> = (0..4)
            .map(|k| CampaignItem {
                reserve: false,
                waves: None,
                admission_rate: None,
                sku: Sku::parse(&format!("S{:03}", (c + k * 7) % skus)).unwrap(),
                price: None,
                per_user_limit: None,
                shards: 3,
                quota: 300,
            })
            .collect();
        let camp = Campaign {
            end_grace_s: 0,
            queue: None,
            id: crate::domain::CampaignId::parse(&id).unwrap(),
            name: id.clone(),
            starts_at: now - 3600,
            ends_at: now + 3600,
            paused: false,
            items: items.clone(),
            version: 1,
        };
        assert!(w.stock.write_campaign(&camp, None).await.unwrap());
        for (k, item) in items.iter().enumerate() {
            for r in campaign_locks(&id, item.sku.as_str(), 3, 1 + k + c % 5) {
                assert_eq!(w.stock.put_frozen(&r, &Default::default()).await.unwrap(), Ok(()));
                locks += 1;
            }
        }
    }
    let rep = chain(&app, WorkItem::LockedTotals(Default::default()), WORK_BUDGET).await;
    assert_eq!((rep.locked_items_judged, rep.locked_locks_read, rep.locked_runs), (120, locks, 1), "{rep:?}");
    assert!(rep.violations.is_empty(), "{rep:?}");

    // C03's first item loses a lock's campaign piece: the lock is released without its quota
    // piece, which stays locked on the quota shard (quota locked 1 more than its FROZEN pieces)
    let mut r = campaign_locks("C03", "S003", 3, 1).remove(0);
    r = w.stock.get_reservation(&r.id).await.unwrap().unwrap();
    r.lines[0].campaign = None;
    assert_eq!(w.stock.move_lock(&r, LockStatus::Released).await.unwrap(), Ok(()));
    let rep = chain(&app, WorkItem::LockedTotals(Default::default()), Duration::ZERO).await;
    let c03 = crate::domain::CampaignId::parse("C03").unwrap();
    let want = Violation::CampaignQuota {
        campaign: c03.clone(),
        sku: Sku::parse("S003").unwrap(),
        detail: "locked = 4 but FROZEN campaign pieces hold 3".into(),
    };
    assert_eq!(rep.violations, vec![format!("{want:?}")], "{rep:?}");
    // the product shards still agree (the release gave the SKU's unit back): only the item's
    // group is looked at again
    assert_eq!((rep.locked_groups_suspect, rep.locked_runs), (1, 2), "{rep:?}");
    assert!(rep.continuations > 10, "paged with no budget: {rep:?}");

    // an item whose SKU was written a moment ago is not judged, nor is its group
    j.put(&adjustments("S003", 0, 1, 1_000)).await.unwrap();
    let rep = chain(&app, WorkItem::LockedTotals(Default::default()), WORK_BUDGET).await;
    assert!(rep.violations.is_empty(), "{rep:?}");
    assert!(rep.locked_items_moved >= 1 && rep.locked_items_judged < 120, "{rep:?}");
}

#[tokio::test]
async fn a_claim_in_flight_on_a_code_pool_with_a_trickle_of_sales_raises_no_ring_alarm() {
    use crate::domain::model::{InventoryModel, Management};
    use crate::service::admin::SkuSpec;
    let mut c = sweep_config();
    c.code_key = crate::config::Secret::new(crate::domain::codes::Keyring::generate_secret("t1").unwrap());
    let (app, w) = memory_app("test", c).unwrap();
    let spec = SkuSpec {
        controls: Default::default(),
        name: "card".into(),
        price: 100,
        currency: Currency::parse("EUR").unwrap(),
        shards: 1,
        per_user_limit: None,
        model: InventoryModel { management: Management::CodePool, ..Default::default() },
        bundle: Vec::new(),
        supplier: None,
    };
    let card = Sku::parse("CARD").unwrap();
    crate::service::admin::put_sku(&app, &card, &spec, None).await.unwrap();
    let codes: Vec<String> = (0..6).map(|i| format!("CODE-{i}-ABC")).collect();
    crate::service::codes::upload(&app, &card, "b1", &codes, None).await.unwrap();
    // a checkout claimed a code and has not frozen yet (or died, or its claim was retried)
    let head = w.stock.read_rings(&card, 1).await.unwrap()[0].head;
    assert_eq!(w.stock.claim_codes(&card, 0, 1, head).await.unwrap(), Some(head));
    let item = WorkItem::SkuInvariants { cursor: None };
    let rep = chain(&app, item.clone(), WORK_BUDGET).await;
    assert!(rep.violations.is_empty(), "the shard's head moved a moment ago: not judged: {rep:?}");
    assert_eq!(rep.codes_returned, 0);
    // once quiet, the orphan repair returns the code and the shard is judged: it holds
    let (app, _) = (App { config: Config { code_claim_quiet_ms: 0, ..app.config.clone() }, ..app }, ());
    let rep = chain(&app, item, WORK_BUDGET).await;
    assert_eq!((rep.codes_returned, rep.violations.len()), (1, 0), "{rep:?}");
    // a shard that is not settled is made to agree with its ring; a settled one is left
    let ring = crate::domain::codes::Ring {
        head: 3,
        tail: 6,
        uploaded: 6,
        claimed_at_ms: 1_000,
        checked: 2,
        ..Default::default()
    };
    let snap = SkuSnapshot {
        sku: card.clone(),
        stocked: 6,
        shards: vec![ShardCounts { available: 4, locked: 0, sold: 2 }],
        per_user_limit: None,
    };
    assert_eq!(settled_rings(&snap, &[ring], 1_500, 60_000).shards[0].available, 3);
    assert_eq!(settled_rings(&snap, &[ring], 61_000, 60_000).shards[0].available, 4);
    assert_eq!(
        settled_rings(&snap, &[crate::domain::codes::Ring { checked: 3, ..ring }], 1_500, 60_000).shards[0].available,
        4
    );
}

#[test]
fn work_items_of_the_last_version_still_parse_and_the_new_state_round_trips() {
    let old: WorkItem = serde_json::from_str(r#"{"kind":"LockedTotals"}"#).unwrap();
    assert_eq!(old, WorkItem::LockedTotals(Default::default()));
    let old: WorkItem = serde_json::from_str(r#"{"kind":"SkuJournals","cursor":null}"#).unwrap();
    assert_eq!(old, WorkItem::SkuJournals { cursor: None, pending: Vec::new(), last_page: false });
    let sums = LockSums {
        phase: 2,
        started_ms: 1,
        frozen: vec![7; LOCK_GROUPS],
        locked: vec![7; LOCK_GROUPS],
        quiet: vec![1; LOCK_GROUPS],
        ..Default::default()
    };
    let items = [
        WorkItem::LockedTotals(Box::new(sums)),
        WorkItem::SkuJournals { cursor: Some("c".into()), pending: vec!["A".into()], last_page: true },
    ];
    for item in items {
        let json =
            serde_json::to_string(&Message::ReconcileWork { schema: 1, sweep_ms: 1, item: item.clone() }).unwrap();
        assert!(json.len() < 64 * 1024, "{} bytes", json.len());
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Message::ReconcileWork { schema: 1, sweep_ms: 1, item });
    }
}

/// With the frozen-by-age index lagging its table (DynamoDB's global secondary indexes do;
/// `adapters::emulate`'s `index-lag`), the sweep repairs nothing falsely — a lock the index still
/// lists as FROZEN after it was confirmed is re-read and left alone — and misses nothing once the
/// lag has passed: a stale orphan is released exactly once.
#[tokio::test(start_paused = true)]
async fn with_the_index_lagging_the_sweep_repairs_nothing_falsely_or_twice_and_misses_nothing_after_the_lag() {
    use crate::adapters::emulate::{Emulated, Switches};
    use crate::adapters::memory::MemoryWorld;
    let mut c = Config::from_lookup(&|_| None).unwrap();
    c.sku_cache_ms = 0;
    c.soldout_cache_ms = 0;
    c.stale_lock_s = 0;
    c.reservation_check_delay_s = 0;
    let w = MemoryWorld::default();
    let lagging = std::sync::Arc::new(Emulated::new(
        w.stock.clone(),
        Switches { index_lag_ms: Some(2_000), ..Switches::default() },
    ));
    let app = crate::app::with_ports("test", c, lagging, w.orders.clone(), w.messages.clone(), w.bus.clone()).unwrap();
    w.stock.seed(plain("L", 1), &[5]);
    let user = UserId::parse("u").unwrap();
    let line = || LineRequest::plain(Sku::parse("L").unwrap(), Quantity::new(1).unwrap());
    // one order paid and confirmed (its lock leaves FROZEN at once, the index lags), one orphan
    let (paid, _) =
        crate::service::orders::create(&app, &user, &IdempotencyKey::parse("k1").unwrap(), vec![line()]).await.unwrap();
    // the index lists it as FROZEN from here on, and still does for the lag after its confirm
    tokio::time::advance(Duration::from_millis(2_500)).await;
    let notice = PaymentNotice {
        payment_id: "p1".into(),
        provider: Default::default(),
        order_id: paid.id.clone(),
        amount: paid.amount,
        currency: paid.currency.to_string(),
        succeeded: true,
    };
    payments::apply(&app, &notice).await.unwrap();
    let paid_lock = ReservationId::for_order(&paid.id);
    stock::confirm(&app, &paid_lock, stock::OnReleased::Retake).await.unwrap();
    let orphan = crate::service::stock::FreezeRequest {
        id: ReservationId::for_order(&crate::domain::OrderId::parse("orphan-1").unwrap()),
        kind: crate::domain::reservation::ReservationKind::Order,
        user: Some(UserId::parse("v").unwrap()),
        lines: vec![line()],
        request_hash: "h".into(),
        expires_at: crate::clock::now_s() + 900,
        admission: None,
    };
    let metas = stock::metas(&app, &[Sku::parse("L").unwrap()]).await.unwrap();
    stock::freeze(&app, &orphan, &metas).await.unwrap();
    // inside the lag: the orphan is not listed yet, so nothing is released; the confirmed lock
    // is never touched. (This store has no stream, so its journal never shows a SKU moving and
    // `locked = Σ FROZEN` judges every SKU quiet: its report may name the lagging orphan, which
    // in production the journal's 60 s quiet window keeps from being judged.)
    let rep = run(&app).await.unwrap();
    assert_eq!((rep.locks_released, rep.errors), (0, 0), "{rep:?}");
    assert_eq!(w.stock.get_reservation(&paid_lock).await.unwrap().unwrap().status, LockStatus::Sold, "no false repair");
    // after the lag: the orphan is released once, the sold lock (no longer listed) is untouched
    tokio::time::advance(Duration::from_millis(2_500)).await;
    let rep = run(&app).await.unwrap();
    assert_eq!(rep.locks_released, 1, "{rep:?}");
    assert_eq!(w.stock.get_reservation(&orphan.id).await.unwrap().unwrap().status, LockStatus::Released);
    assert_eq!(w.stock.get_reservation(&paid_lock).await.unwrap().unwrap().status, LockStatus::Sold);
    let rep = run(&app).await.unwrap();
    assert_eq!(rep.locks_released, 0, "nothing repaired twice: {rep:?}");
    assert_eq!(w.stock.shards(&Sku::parse("L").unwrap()), vec![ShardCounts { available: 4, locked: 0, sold: 1 }]);
}
