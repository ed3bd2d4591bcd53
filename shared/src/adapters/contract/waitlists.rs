//! The check of the waitlists' store (docs/waitlist.md): a commit writes all or nothing over the
//! versions it names, entries read back in number order, a buyer's pointer names their latest
//! entry and moves only from the number a join read, a commit naming one item twice is an error
//! (as DynamoDB refuses such a transaction), and a told entry's token is spent once by the
//! freeze under the SKU's waitlist scope, apart from any campaign's queue.

use super::*;
use crate::domain::waitlist::{self as wl, Entry, Head, UserWaits, WaitState};
use crate::ports::{Pointer, WaitCommit, Waitlists};

fn entry(number: u64, user: &UserId, state: WaitState) -> Entry {
    Entry { number, user: user.to_string(), state, joined_at_ms: 1, notified_at_ms: None, expires_at_ms: None }
}

/// Commits over versions, entries, pointers and buyers' lists; the spend under the scope.
pub async fn waitlists(store: &dyn StockStore, w: &dyn Waitlists, prefix: &str) {
    let a = sku(prefix, "WA");
    let (u, v) = (user(prefix, "wu"), user(prefix, "wv"));
    assert_eq!(w.waitlist(&a).await.unwrap(), Head::default());
    assert_eq!(w.user_waits(&u).await.unwrap(), UserWaits::default());
    assert_eq!(w.wait_entry_of(&a, &u).await.unwrap(), None);
    let waits = UserWaits { version: 1, skus: vec![a.to_string()] };
    let head = Head { version: 1, next: 1, cursor: 0, active: 1, live: vec![] };
    let first = WaitCommit {
        sku: a.clone(),
        head: head.clone(),
        entries: vec![entry(1, &u, WaitState::Waiting)],
        pointer: Some(Pointer { user: u.clone(), number: 1, over: None }),
        users: vec![(u.clone(), waits.clone())],
    };
    assert!(w.commit_waitlist(&first).await.unwrap());
    assert!(!w.commit_waitlist(&first).await.unwrap(), "the head's version moved");
    assert_eq!(w.waitlist(&a).await.unwrap(), head);
    assert_eq!(w.user_waits(&u).await.unwrap(), waits);
    assert_eq!(w.wait_entry_of(&a, &u).await.unwrap(), Some(entry(1, &u, WaitState::Waiting)));
    // a buyer's list at a stale version cancels the whole commit: the head stays
    let head2 = Head { version: 2, next: 2, active: 2, ..head.clone() };
    let stale = WaitCommit {
        sku: a.clone(),
        head: head2.clone(),
        entries: vec![entry(2, &v, WaitState::Waiting)],
        pointer: Some(Pointer { user: v.clone(), number: 2, over: None }),
        users: vec![(v.clone(), UserWaits { version: 2, skus: vec![a.to_string()] })],
    };
    assert!(!w.commit_waitlist(&stale).await.unwrap());
    assert_eq!((w.waitlist(&a).await.unwrap(), w.wait_entry_of(&a, &v).await.unwrap()), (head.clone(), None));
    let ok = WaitCommit { users: vec![(v.clone(), UserWaits { version: 1, skus: vec![a.to_string()] })], ..stale };
    assert!(w.commit_waitlist(&ok).await.unwrap());
    // a buyer's pointer moves only from the number the join read (or from absent): a second join
    // of `u` that read no entry, or an older one, is refused whole, even at the head's version
    let head3 = Head { version: 3, next: 3, active: 3, ..head.clone() };
    let twice = |over: Option<u64>| WaitCommit {
        sku: a.clone(),
        head: head3.clone(),
        entries: vec![entry(3, &u, WaitState::Waiting)],
        pointer: Some(Pointer { user: u.clone(), number: 3, over }),
        users: vec![],
    };
    for over in [None, Some(2)] {
        assert!(!w.commit_waitlist(&twice(over)).await.unwrap(), "the pointer read {over:?} moved");
        assert_eq!(w.waitlist(&a).await.unwrap().version, 2, "nothing written");
        assert_eq!(w.wait_entries(&a, &[3]).await.unwrap(), vec![]);
        assert_eq!(w.wait_entry_of(&a, &u).await.unwrap().map(|e| e.number), Some(1));
    }
    // one buyer's list twice in one commit: an error, nothing written
    let list = UserWaits { version: 1, skus: vec![a.to_string()] };
    let dup = WaitCommit { users: vec![(u.clone(), list.clone()), (u.clone(), list)], ..twice(Some(1)) };
    assert!(w.commit_waitlist(&dup).await.is_err());
    assert_eq!(w.waitlist(&a).await.unwrap().version, 2, "nothing written");
    assert!(w.commit_waitlist(&twice(Some(1))).await.unwrap());
    assert_eq!(w.wait_entry_of(&a, &u).await.unwrap(), Some(entry(3, &u, WaitState::Waiting)));
    // entries in number order, missing numbers skipped
    let got: Vec<u64> = w.wait_entries(&a, &[4, 3, 2, 1]).await.unwrap().iter().map(|e| e.number).collect();
    assert_eq!(got, [1, 2, 3]);
    // the spend: a told entry's admission under the SKU's waitlist scope, once
    let scope = wl::scope(&a);
    stocked(store, &a, &[2]).await;
    let spend = FreezeLimits { admission: Some((scope.clone(), 1)), ..FreezeLimits::default() };
    let first_use = reservation(rid(prefix, "w1"), Some(&u), vec![line(&a, &[(0, 1)])]);
    assert_eq!(freeze(store, &first_use, &spend).await, Ok(()));
    assert!(store.spent(&scope, 1).await.unwrap());
    let again = reservation(rid(prefix, "w2"), Some(&u), vec![line(&a, &[(0, 1)])]);
    assert_eq!(freeze(store, &again, &spend).await, Err(FreezeRejection::AdmissionUsed));
    assert_eq!(shards(store, &a, 1).await, vec![(1, 1, 0)], "the refused freeze took nothing");
    // a campaign named like the SKU has its own tickets: not spent
    let same_name = CampaignId::parse(a.as_str()).unwrap();
    assert!(!store.spent(&same_name, 1).await.unwrap());
    assert!(!store.spent(&scope, 2).await.unwrap());
}
