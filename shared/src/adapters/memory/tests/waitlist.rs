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
    let expired = orders::payment_timeout(&app, &o1.id, overdue.pay_expire_at).await.unwrap();
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
