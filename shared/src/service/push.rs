//! The push channel's use cases (docs/push.md): connections opened and closed, pings, watched
//! queue tickets, and bus events fanned out to the buyer's open connections, each frame at most
//! once per event per connection.

use crate::clock;
use crate::context::App;
use crate::domain::events::{EventDetail, EventKind};
use crate::domain::push::{self, Frame, Push, Watch, CONNECTION_TTL_S};
use crate::domain::{CampaignId, UserId};
use crate::ports::push::Posted;
use crate::service::queue::{self, QueueError};
use crate::telemetry::{count, names};

/// What one fan-out did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub sent: u64,
    pub duplicates: u64,
    pub gone: u64,
}

/// How long a watch chain's mark outlives the chain's next timer: the timer's message may come
/// back after a failed delivery (60 s visibility, three receives) and still be the chain.
const WATCH_MARK_SLACK_S: i64 = 300;

fn watch_mark_expiry(delay_s: u32) -> i64 {
    clock::now_s() + i64::from(delay_s) + WATCH_MARK_SLACK_S
}

/// `$connect` of an authenticated buyer: the connection recorded for 2 hours; with
/// `?campaign=`, their ticket is watched from now on (unless a chain watches it already).
pub async fn connect(app: &App, connection: &str, user: &str, watch: Option<&str>) -> anyhow::Result<()> {
    app.push.connections.open(user, connection, clock::now_s() + CONNECTION_TTL_S).await?;
    if let Some(c) = watch {
        start_chain(app, user, c, clock::now_ms()).await?;
    }
    Ok(())
}

/// A chain of watch timers on `user`'s ticket in `campaign`, first due at `due_ms`, unless one
/// is alive (its mark in the connection table): `false` then, and no timer sent. Every
/// `{"action":"watch"}` and every reconnect with `?campaign=` comes here, so a ticket has one
/// chain however often it is watched.
pub async fn start_chain(app: &App, user: &str, campaign: &str, due_ms: i64) -> anyhow::Result<bool> {
    let delay = push::timer_delay_s(clock::now_ms(), due_ms);
    let c = &app.push.connections;
    if !c.start_watch(user, campaign, watch_mark_expiry(delay), clock::now_s()).await? {
        return Ok(false);
    }
    let w = Watch { schema: 1, user: user.to_owned(), campaign_id: campaign.to_owned(), due_ms };
    if let Err(e) = app.push.timers.schedule(&w, delay).await {
        // no timer, no chain: the next watch may start one
        c.end_watch(user, campaign).await.ok();
        return Err(e);
    }
    Ok(true)
}

/// The chain goes on under its mark: `w` again after its delay.
async fn rearm(app: &App, w: &Watch) -> anyhow::Result<()> {
    let delay = push::timer_delay_s(clock::now_ms(), w.due_ms);
    app.push.connections.keep_watch(&w.user, &w.campaign_id, watch_mark_expiry(delay)).await?;
    app.push.timers.schedule(w, delay).await
}

/// `$disconnect`: the connection forgotten.
pub async fn disconnect(app: &App, connection: &str) -> anyhow::Result<()> {
    app.push.connections.close(connection).await?;
    Ok(())
}

/// `{"action":"ping"}` → `{"type":"pong"}` on the same connection.
pub async fn ping(app: &App, connection: &str) -> anyhow::Result<()> {
    post_one(app, connection, &Frame::Pong).await.map(|_| ())
}

/// `{"action":"watch","campaign_id"}`: the buyer's ticket as it stands now, on this connection,
/// and a look at it again when it is due to move.
pub async fn watch(app: &App, connection: &str, campaign: &str) -> anyhow::Result<()> {
    let Some(user) = app.push.connections.user_of(connection).await? else {
        anyhow::bail!("connection {connection} is not open");
    };
    let Some((frame, next)) = look(app, &user, campaign).await? else { return Ok(()) };
    post_one(app, connection, &frame).await?;
    if let Some(due_ms) = next {
        start_chain(app, &user, campaign, due_ms).await?;
    }
    Ok(())
}

/// A watch timer delivered: early (a delay over 900 s) → delayed again; else the ticket looked
/// at, a final state (ADMITTED with its token, SOLD_OUT, EXPIRED, USED) pushed to every
/// connection of the buyer, a waiting one looked at again when due (the chain re-armed under its
/// mark). A buyer with no connection left is not watched any more (they watch again when they
/// come back); a chain that ends removes its mark.
pub async fn on_watch(app: &App, w: Watch) -> anyhow::Result<Delivery> {
    let now = clock::now_ms();
    if w.due_ms > now + 1000 {
        rearm(app, &w).await?;
        return Ok(Delivery::default());
    }
    let ended = || app.push.connections.end_watch(&w.user, &w.campaign_id);
    if app.push.connections.of_user(&w.user, clock::now_s()).await?.is_empty() {
        ended().await?;
        return Ok(Delivery::default());
    }
    let Some((frame, next)) = look(app, &w.user, &w.campaign_id).await? else {
        ended().await?;
        return Ok(Delivery::default());
    };
    if let Some(due_ms) = next {
        rearm(app, &Watch { due_ms, ..w.clone() }).await?;
        return Ok(Delivery::default());
    }
    let d = match &frame {
        Frame::Queue { ticket, state, .. } => {
            let key = push::queue_key(&w.campaign_id, *ticket, state);
            deliver(app, &Push { user: w.user.clone(), frame: frame.clone(), key }).await?
        }
        _ => Delivery::default(),
    };
    ended().await?;
    Ok(d)
}

/// The buyer's ticket in `campaign` as a frame, and when to look again (`None`: final). `None`
/// when there is nothing to tell (no such queue, no ticket).
async fn look(app: &App, user: &str, campaign: &str) -> anyhow::Result<Option<(Frame, Option<i64>)>> {
    let (Ok(u), Ok(c)) = (UserId::parse(user), CampaignId::parse(campaign)) else { return Ok(None) };
    let place = match queue::me(app, &u, &c).await {
        Ok(p) => p,
        Err(QueueError::NotFound(_) | QueueError::Ended(_)) => return Ok(None),
        Err(QueueError::Store(e)) => return Err(e),
    };
    let state = place.state.as_str().to_owned();
    let next = push::next_look(&state, place.eta_seconds, clock::now_ms());
    let frame = Frame::Queue {
        campaign_id: campaign.to_owned(),
        ticket: place.ticket,
        state,
        position: place.position,
        admission_token: place.admission_token,
    };
    Ok(Some((frame, next)))
}

/// An order event from the bus (`at`: the bus's time of it), pushed to its buyer if it is news to them.
pub async fn on_order_event(app: &App, kind: EventKind, detail: &EventDetail, at: &str) -> anyhow::Result<Delivery> {
    match push::order_push(kind, detail, at) {
        Some(p) => deliver(app, &p).await,
        None => Ok(Delivery::default()),
    }
}

/// A stock-side event (`CodesReady`, `WaitlistNotified`), pushed to the buyer it names.
pub async fn on_stock_event(
    app: &App,
    detail_type: &str,
    detail: &serde_json::Value,
    at: &str,
) -> anyhow::Result<Delivery> {
    match push::stock_push(detail_type, detail, at) {
        Some(p) => deliver(app, &p).await,
        None => Ok(Delivery::default()),
    }
}

/// `p` to every open connection of its buyer: each connection's send claimed first (a
/// conditional write of the event's key), so a redelivered event is not sent twice; a gone
/// connection is removed. A frame over the limit is not sent (counted), never cut.
pub async fn deliver(app: &App, p: &Push) -> anyhow::Result<Delivery> {
    let text = match p.frame.encode() {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(key = %p.key, error = %e, "push frame too large: not sent");
            count(&app.function, names::PUSH_FRAME_TOO_LARGE, 1);
            return Ok(Delivery::default());
        }
    };
    let mut d = Delivery::default();
    let expires = clock::now_s() + CONNECTION_TTL_S;
    for connection in app.push.connections.of_user(&p.user, clock::now_s()).await? {
        if !app.push.connections.claim(&connection, &p.key, expires).await? {
            d.duplicates += 1;
            continue;
        }
        match app.push.pusher.post(&connection, &text).await? {
            Posted::Delivered => d.sent += 1,
            Posted::Gone => {
                app.push.connections.close(&connection).await?;
                d.gone += 1;
            }
        }
    }
    count(&app.function, names::PUSH_FRAMES_SENT, d.sent);
    count(&app.function, names::PUSH_DUPLICATES_SKIPPED, d.duplicates);
    count(&app.function, names::PUSH_CONNECTIONS_GONE, d.gone);
    Ok(d)
}

/// One frame to one connection (an answer to what it sent); a gone one is removed.
async fn post_one(app: &App, connection: &str, frame: &Frame) -> anyhow::Result<Posted> {
    let text = frame.encode()?;
    let posted = app.push.pusher.post(connection, &text).await?;
    if posted == Posted::Gone {
        app.push.connections.close(connection).await?;
        count(&app.function, names::PUSH_CONNECTIONS_GONE, 1);
    } else {
        count(&app.function, names::PUSH_FRAMES_SENT, 1);
    }
    Ok(posted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::memory::MemoryPush;

    fn app_with(push: &std::sync::Arc<MemoryPush>) -> App {
        let (mut app, _world) =
            crate::app::memory_app("push-api", crate::config::Config::from_lookup(&|_| None).unwrap()).unwrap();
        app.push = push.ports();
        app
    }

    fn paid(user: &str, version: u64) -> EventDetail {
        EventDetail {
            schema: 1,
            order_id: "o1".into(),
            user_id: user.into(),
            status: "PAID".into(),
            version,
            amount: 1,
            currency: "EUR".into(),
            lines: vec![],
            payment_id: None,
            refund_id: None,
            restock: None,
            correlation_id: None,
        }
    }

    #[tokio::test]
    async fn an_event_goes_once_to_each_of_its_buyers_connections_and_to_no_one_else() {
        let m = MemoryPush::new();
        let app = app_with(&m);
        connect(&app, "a1", "alice", None).await.unwrap();
        connect(&app, "a2", "alice", None).await.unwrap();
        connect(&app, "b1", "bob", None).await.unwrap();
        let d = on_order_event(&app, EventKind::OrderPaid, &paid("alice", 2), "t").await.unwrap();
        assert_eq!(d, Delivery { sent: 2, duplicates: 0, gone: 0 });
        // redelivered (SQS at least once, or the stream republished it): nothing more
        let again = on_order_event(&app, EventKind::OrderPaid, &paid("alice", 2), "t").await.unwrap();
        assert_eq!(again, Delivery { sent: 0, duplicates: 2, gone: 0 });
        assert_eq!(m.frames_to("a1").len(), 1);
        assert!(m.frames_to("a1")[0].contains(r#""status":"PAID""#));
        assert!(m.frames_to("b1").is_empty());
    }

    #[tokio::test]
    async fn a_gone_connection_is_removed_and_the_others_still_get_the_frame() {
        let m = MemoryPush::new();
        let app = app_with(&m);
        connect(&app, "a1", "alice", None).await.unwrap();
        connect(&app, "a2", "alice", None).await.unwrap();
        m.gone.lock().unwrap().insert("a1".into());
        let d = on_order_event(&app, EventKind::OrderExpired, &paid("alice", 3), "t").await.unwrap();
        assert_eq!(d, Delivery { sent: 1, duplicates: 0, gone: 1 });
        assert!(!m.is_open("a1"));
        assert!(m.is_open("a2"));
    }

    #[tokio::test]
    async fn ping_answers_pong_on_the_same_connection_and_disconnect_forgets_it() {
        let m = MemoryPush::new();
        let app = app_with(&m);
        connect(&app, "a1", "alice", None).await.unwrap();
        ping(&app, "a1").await.unwrap();
        assert_eq!(m.frames_to("a1"), vec![r#"{"type":"pong"}"#.to_owned()]);
        disconnect(&app, "a1").await.unwrap();
        assert!(!m.is_open("a1"));
        // the buyer's checkout is no news to them
        let d = on_order_event(&app, EventKind::OrderCreated, &paid("alice", 1), "t").await.unwrap();
        assert_eq!(d, Delivery::default());
    }

    #[tokio::test]
    async fn a_ticket_watched_again_and_again_has_one_chain_of_timers() {
        let m = MemoryPush::new();
        let app = app_with(&m);
        let timers = || m.timers.lock().unwrap().len();
        let alive = || m.watches.lock().unwrap().contains_key(&("alice".to_owned(), "drop".to_owned()));
        connect(&app, "a1", "alice", Some("drop")).await.unwrap();
        assert_eq!((timers(), alive()), (1, true));
        // reconnects with ?campaign= and watches of the same ticket while the chain lives: none more
        connect(&app, "a2", "alice", Some("drop")).await.unwrap();
        connect(&app, "a3", "alice", Some("drop")).await.unwrap();
        for _ in 0..5 {
            assert!(!start_chain(&app, "alice", "drop", clock::now_ms() + 5_000).await.unwrap());
        }
        assert_eq!(timers(), 1);
        // another buyer's, or another campaign's, is a chain of its own
        assert!(start_chain(&app, "bob", "drop", clock::now_ms()).await.unwrap());
        assert!(start_chain(&app, "alice", "other", clock::now_ms()).await.unwrap());
        assert_eq!(timers(), 3);
        // the chain re-arms under its own mark (an early arrival is delayed again) …
        let far = clock::now_ms() + 3_600_000;
        on_watch(&app, Watch { schema: 1, user: "alice".into(), campaign_id: "drop".into(), due_ms: far })
            .await
            .unwrap();
        assert_eq!((timers(), alive()), (4, true));
        let exp = m.watches.lock().unwrap()[&("alice".to_owned(), "drop".to_owned())];
        assert!(exp >= clock::now_s() + 900, "the mark outlives the next timer: {exp}");
        // … and ends (nothing to look at here: no such queue), its mark removed: a watch starts anew
        on_watch(&app, Watch { schema: 1, user: "alice".into(), campaign_id: "drop".into(), due_ms: 0 }).await.unwrap();
        assert_eq!((timers(), alive()), (4, false));
        assert!(start_chain(&app, "alice", "drop", clock::now_ms()).await.unwrap());
        // a mark whose chain was lost (expired) does not block a new one
        m.watches.lock().unwrap().insert(("cat".to_owned(), "drop".to_owned()), clock::now_s() - 1);
        assert!(start_chain(&app, "cat", "drop", clock::now_ms()).await.unwrap());
    }

    #[tokio::test]
    async fn a_watch_due_later_than_900_s_is_delayed_again_and_a_buyer_without_connections_is_dropped() {
        let m = MemoryPush::new();
        let app = app_with(&m);
        let far = clock::now_ms() + 3_600_000;
        let w = Watch { schema: 1, user: "alice".into(), campaign_id: "drop".into(), due_ms: far };
        on_watch(&app, w.clone()).await.unwrap();
        assert_eq!(m.timers.lock().unwrap().last().map(|(w, d)| (w.due_ms, *d)), Some((far, 900)));
        // due now, nobody connected: no look, no new timer, the chain's mark gone
        on_watch(&app, Watch { due_ms: clock::now_ms(), ..w }).await.unwrap();
        assert_eq!(m.timers.lock().unwrap().len(), 1);
        assert!(m.watches.lock().unwrap().is_empty());
    }
}
