//! Notify-me waitlists (docs/waitlist.md) through the services over the in-memory ports: a
//! release tells exactly as many buyers as units came back, in join order; the told buyers'
//! tokens are spent once by their checkouts; a told buyer who leaves hands the unit on; the
//! refusals write nothing.

use super::*;
use crate::domain::waitlist::WaitState;
use crate::service::waitlist::{self, WaitlistError};

async fn state(app: &App, s: &str, u: &str) -> WaitState {
    waitlist::me(app, &user(u), &sku(s)).await.unwrap().entry.state
}

#[tokio::test]
async fn a_release_of_two_units_tells_the_first_two_in_order_whose_tokens_sell_once() {
    let mut c = config();
    c.admission_key = crate::config::Secret::new("waitlist-test-key");
    let (app, w) = world_with(c, &[(meta("W", 1, None), &[2]), (meta("FREE", 1, None), &[3])]);
    let (o1, _) = checkout(&app, "h1", "k", &[("W", 2)]).await.unwrap();
    assert!(matches!(waitlist::join(&app, &user("ann"), &sku("FREE")).await, Err(WaitlistError::NotSoldOut(_, 3))));
    assert!(matches!(waitlist::join(&app, &user("ann"), &sku("NOPE")).await, Err(WaitlistError::UnknownSku(_))));
    for (i, u) in ["ann", "bob", "cy"].iter().enumerate() {
        let (p, created) = waitlist::join(&app, &user(u), &sku("W")).await.unwrap();
        assert_eq!((created, p.entry.number, p.entry.state), (true, i as u64 + 1, WaitState::Waiting));
    }
    let (again, created) = waitlist::join(&app, &user("ann"), &sku("W")).await.unwrap();
    assert_eq!((created, again.entry.number), (false, 1), "one entry per buyer");
    // nothing free: the upkeep tells no one
    assert_eq!(waitlist::upkeep(&app, &sku("W")).await.unwrap(), 0);
    // the hold expires unpaid and is released: two units back, the first two told
    let overdue = make_overdue(&w, &o1, 60).await;
    let expired = timeouts::payment_timeout(&app, &o1.id, overdue.pay_expire_at).await.unwrap();
    assert_eq!(expired, TimeoutOutcome::Expired);
    stock::release(&app, &ReservationId::for_order(&o1.id)).await.unwrap();
    assert_eq!(waitlist::upkeep(&app, &sku("W")).await.unwrap(), 2);
    assert_eq!(waitlist::upkeep(&app, &sku("W")).await.unwrap(), 0, "told once");
    let ann = waitlist::me(&app, &user("ann"), &sku("W")).await.unwrap();
    assert_eq!((ann.entry.state, state(&app, "W", "bob").await), (WaitState::Notified, WaitState::Notified));
    assert_eq!(state(&app, "W", "cy").await, WaitState::Waiting);
    let token = ann.admission_token.clone().unwrap();
    // another buyer's checkout with it is refused; hers spends it once
    let key = |k: &str| IdempotencyKey::parse(k).unwrap();
    let bob_try = orders::create_admitted(&app, &user("bob"), &key("b1"), lines(&[("W", 1)]), Some(&token)).await;
    assert!(matches!(bob_try, Err(CreateError::Admission(_))), "{bob_try:?}");
    orders::create_admitted(&app, &user("ann"), &key("a1"), lines(&[("W", 1)]), Some(&token)).await.unwrap();
    let twice = orders::create_admitted(&app, &user("ann"), &key("a2"), lines(&[("W", 1)]), Some(&token)).await;
    assert!(matches!(twice, Err(CreateError::Freeze(FreezeError::AdmissionUsed))), "{twice:?}");
    assert_eq!(state(&app, "W", "ann").await, WaitState::Used);
    // bob leaves while told: his unit goes to cy at once
    waitlist::leave(&app, &user("bob"), &sku("W")).await.unwrap();
    assert_eq!((state(&app, "W", "bob").await, state(&app, "W", "cy").await), (WaitState::Left, WaitState::Notified));
    assert_eq!(totals(&w, "W"), counts(1, 1, 0));
    assert_invariants(&w);
}

#[tokio::test]
async fn the_bounds_refuse_a_join_and_write_nothing() {
    let mut c = config();
    c.waitlist_max_per_sku = 1;
    c.waitlist_max_per_user = 1;
    let (app, _w) = world_with(c, &[(meta("X", 1, None), &[0]), (meta("Y", 1, None), &[0])]);
    waitlist::join(&app, &user("ann"), &sku("X")).await.unwrap();
    let full = waitlist::join(&app, &user("bob"), &sku("X")).await;
    assert!(matches!(full, Err(WaitlistError::Refused(crate::domain::waitlist::JoinRefusal::Full(1)))), "{full:?}");
    let many = waitlist::join(&app, &user("ann"), &sku("Y")).await;
    assert!(matches!(many, Err(WaitlistError::Refused(crate::domain::waitlist::JoinRefusal::TooMany(1)))));
    for (s, u) in [("X", "bob"), ("Y", "ann")] {
        assert!(matches!(waitlist::me(&app, &user(u), &sku(s)).await, Err(WaitlistError::NotFound)), "{s} {u}");
    }
    // leaving frees the place
    waitlist::leave(&app, &user("ann"), &sku("X")).await.unwrap();
    assert!(waitlist::join(&app, &user("ann"), &sku("Y")).await.is_ok());
}

/// The in-memory waitlists with a gate: once armed, the next read of a buyer's entry answers
/// what the store holds then and returns only after the next commit (another task's), so that
/// read is stale by the time its reader goes on, as a concurrent Lambda's may be.
#[derive(Default)]
struct Gated {
    inner: crate::adapters::memory::MemoryWaitlists,
    armed: std::sync::atomic::AtomicBool,
    commits: tokio::sync::watch::Sender<u64>,
}

#[async_trait::async_trait]
impl crate::ports::Waitlists for Gated {
    async fn waitlist(&self, sku: &Sku) -> anyhow::Result<crate::domain::waitlist::Head> {
        self.inner.waitlist(sku).await
    }
    async fn wait_entries(&self, sku: &Sku, numbers: &[u64]) -> anyhow::Result<Vec<crate::domain::waitlist::Entry>> {
        self.inner.wait_entries(sku, numbers).await
    }
    async fn wait_entry_of(&self, sku: &Sku, u: &UserId) -> anyhow::Result<Option<crate::domain::waitlist::Entry>> {
        let mut commits = self.commits.subscribe();
        let at = *commits.borrow_and_update();
        let e = self.inner.wait_entry_of(sku, u).await?;
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            commits.wait_for(|n| *n > at).await?;
        }
        Ok(e)
    }
    async fn user_waits(&self, u: &UserId) -> anyhow::Result<crate::domain::waitlist::UserWaits> {
        self.inner.user_waits(u).await
    }
    async fn commit_waitlist(&self, c: &crate::ports::WaitCommit) -> anyhow::Result<bool> {
        let ok = self.inner.commit_waitlist(c).await?;
        if ok {
            self.commits.send_modify(|n| *n += 1);
        }
        Ok(ok)
    }
}

/// An app over `c` whose waitlists are [`Gated`].
fn gated_world(c: Config, skus: &[(SkuMeta, &[i64])]) -> (App, MemoryWorld, std::sync::Arc<Gated>) {
    let (mut app, w) = world_with(c, skus);
    let gated = std::sync::Arc::new(Gated::default());
    app.waitlists = gated.clone();
    (app, w, gated)
}

/// Two futures run together (the first polled first), within a bound: a test never hangs.
async fn both<A: std::future::Future, B: std::future::Future>(a: A, b: B) -> (A::Output, B::Output) {
    tokio::time::timeout(std::time::Duration::from_secs(10), async { tokio::join!(a, b) }).await.unwrap()
}

#[tokio::test]
async fn two_joins_of_one_buyer_at_once_make_one_entry_and_both_answer_it() {
    let (app, _w, gated) = gated_world(config(), &[(meta("J", 1, None), &[0])]);
    // the first join reads no entry, then the second joins wholly before the first goes on
    gated.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let (a, b) =
        both(waitlist::join(&app, &user("ann"), &sku("J")), waitlist::join(&app, &user("ann"), &sku("J"))).await;
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut created = [a.1, b.1];
    created.sort();
    assert_eq!(created, [false, true], "one 201, one 200");
    assert_eq!((a.0.entry.number, b.0.entry.number), (1, 1), "the same entry");
    let head = app.waitlists.waitlist(&sku("J")).await.unwrap();
    assert_eq!((head.next, head.active), (1, 1), "one entry, counted once");
    assert_eq!(app.waitlists.user_waits(&user("ann")).await.unwrap().skus, ["J"]);
}

#[tokio::test]
async fn a_leave_racing_a_settle_acts_on_the_entry_as_the_head_has_it_and_a_second_leave_changes_nothing() {
    let mut c = config();
    c.waitlist_token_ttl_s = 0; // a told entry's token lapses at once
    let (app, w, gated) = gated_world(c, &[(meta("L", 1, None), &[0])]);
    for u in ["ann", "bob"] {
        waitlist::join(&app, &user(u), &sku("L")).await.unwrap();
    }
    w.stock.seed(meta("L", 1, None), &[1]);
    assert_eq!(waitlist::upkeep(&app, &sku("L")).await.unwrap(), 1, "ann told");
    // ann leaves while the upkeep settles her lapsed entry: her leave read it NOTIFIED, stale
    gated.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let (left, told) = both(waitlist::leave(&app, &user("ann"), &sku("L")), waitlist::upkeep(&app, &sku("L"))).await;
    left.unwrap();
    assert_eq!(told.unwrap(), 1, "the unit goes to bob");
    let ann = app.waitlists.wait_entry_of(&sku("L"), &user("ann")).await.unwrap().unwrap();
    assert_eq!(ann.state, WaitState::Expired, "settled, not overwritten LEFT");
    let head = app.waitlists.waitlist(&sku("L")).await.unwrap();
    assert_eq!((head.active, head.live.clone()), (1, vec![2]), "bob alone is active: ann counted off once");
    // leaving again: nothing changes
    waitlist::leave(&app, &user("ann"), &sku("L")).await.unwrap();
    assert_eq!(app.waitlists.waitlist(&sku("L")).await.unwrap(), head);
    assert_eq!(app.waitlists.wait_entry_of(&sku("L"), &user("ann")).await.unwrap(), Some(ann));
}

#[tokio::test]
async fn forty_five_units_back_tell_all_forty_five_waitlisted_buyers() {
    let (app, w) = world(&[(meta("M", 1, None), &[0])]);
    let buyers: Vec<String> = (0..46).map(|i| format!("b{i}")).collect();
    for b in &buyers {
        waitlist::join(&app, &user(b), &sku("M")).await.unwrap();
    }
    w.stock.seed(meta("M", 1, None), &[45]);
    assert_eq!(waitlist::upkeep(&app, &sku("M")).await.unwrap(), 45, "more than one write's worth");
    let head = app.waitlists.waitlist(&sku("M")).await.unwrap();
    assert_eq!((head.live.len(), head.cursor), (45, 45));
    let numbers: Vec<u64> = (1..=46).collect();
    let states: Vec<WaitState> =
        app.waitlists.wait_entries(&sku("M"), &numbers).await.unwrap().iter().map(|e| e.state).collect();
    assert_eq!(states[..45], [WaitState::Notified; 45]);
    assert_eq!(states[45], WaitState::Waiting, "the 46th waits");
    assert_eq!(waitlist::upkeep(&app, &sku("M")).await.unwrap(), 0, "told once");
}

#[tokio::test]
async fn a_join_settles_a_lapsed_token_first_so_it_is_no_ones_place_and_counts_against_no_bound() {
    let mut c = config();
    c.waitlist_token_ttl_s = 0; // a told entry's token lapses at once
    c.waitlist_max_per_sku = 1;
    c.waitlist_max_per_user = 1;
    let skus = ["X", "Y", "Z"].map(|s| (meta(s, 1, None), [0i64]));
    let skus: Vec<(SkuMeta, &[i64])> = skus.iter().map(|(m, s)| (m.clone(), s.as_slice())).collect();
    let (app, w) = world_with(c, &skus);
    // told, lapsed, and the unit taken by a buyer without a token: sold out again, nothing settles
    let told_then_taken = |s: &'static str, waiter: &'static str, taker: &'static str| {
        let (app, w) = (&app, &w);
        async move {
            waitlist::join(app, &user(waiter), &sku(s)).await.unwrap();
            w.stock.seed(meta(s, 1, None), &[1]);
            assert_eq!(waitlist::upkeep(app, &sku(s)).await.unwrap(), 1);
            checkout(app, taker, "k", &[(s, 1)]).await.unwrap();
            let e = app.waitlists.wait_entry_of(&sku(s), &user(waiter)).await.unwrap().unwrap();
            assert_eq!(e.state, WaitState::Notified, "lapsed but not settled yet");
        }
    };
    // the buyer's bound: ann's lapsed entry on X does not keep her off Y
    told_then_taken("X", "ann", "h1").await;
    let (y, created) = waitlist::join(&app, &user("ann"), &sku("Y")).await.unwrap();
    assert_eq!((created, y.entry.number), (true, 1));
    let x = app.waitlists.wait_entry_of(&sku("X"), &user("ann")).await.unwrap().unwrap();
    assert_eq!(x.state, WaitState::Expired);
    // her place: after leaving Y, a join of X is a new entry at the end of the line
    waitlist::leave(&app, &user("ann"), &sku("Y")).await.unwrap();
    let (again, created) = waitlist::join(&app, &user("ann"), &sku("X")).await.unwrap();
    assert_eq!((created, again.entry.number, again.entry.state), (true, 2, WaitState::Waiting));
    // the SKU's bound: dan's lapsed entry on Z does not fill it for fay
    told_then_taken("Z", "dan", "h2").await;
    let (fay, created) = waitlist::join(&app, &user("fay"), &sku("Z")).await.unwrap();
    assert_eq!((created, fay.entry.number), (true, 2));
    assert_eq!(state(&app, "Z", "dan").await, WaitState::Expired);
    let full = waitlist::join(&app, &user("gil"), &sku("Z")).await;
    assert!(matches!(full, Err(WaitlistError::Refused(crate::domain::waitlist::JoinRefusal::Full(1)))), "{full:?}");
}

#[tokio::test]
async fn a_buyer_leaves_a_sku_whose_model_changed_and_leaving_without_an_entry_says_why() {
    let (app, w) = world(&[(meta("P", 1, None), &[0]), (meta("Q", 1, None), &[0])]);
    waitlist::join(&app, &user("ann"), &sku("P")).await.unwrap();
    // an admin makes P a code pool: no waitlist any more, but ann's entry still goes
    let pool = crate::domain::model::InventoryModel {
        management: crate::domain::model::Management::CodePool,
        ..Default::default()
    };
    w.stock.seed(SkuMeta { model: pool, ..meta("P", 1, None) }, &[0]);
    waitlist::leave(&app, &user("ann"), &sku("P")).await.unwrap();
    let e = app.waitlists.wait_entry_of(&sku("P"), &user("ann")).await.unwrap().unwrap();
    assert_eq!(e.state, WaitState::Left);
    assert_eq!(app.waitlists.waitlist(&sku("P")).await.unwrap().active, 0);
    assert!(app.waitlists.user_waits(&user("ann")).await.unwrap().skus.is_empty(), "off her list");
    waitlist::leave(&app, &user("ann"), &sku("P")).await.unwrap();
    // no entry: the SKU's own answer
    assert!(matches!(waitlist::leave(&app, &user("bob"), &sku("P")).await, Err(WaitlistError::NotWaitlistable(_))));
    assert!(matches!(waitlist::leave(&app, &user("bob"), &sku("NOPE")).await, Err(WaitlistError::UnknownSku(_))));
    assert!(matches!(waitlist::leave(&app, &user("bob"), &sku("Q")).await, Err(WaitlistError::NotFound)));
}
