//! Pushed outcomes (docs/push.md): the JSON text frames a buyer's open WebSocket connections are
//! sent, which bus events become which frame, the key that lets a frame go at most once per event
//! per connection, the size bound, and the watch timer's delays. Pure.

use super::events::{EventDetail, EventKind};
use serde::{Deserialize, Serialize};

/// The largest frame sent (API Gateway's WebSocket frame limit is 32 KB). A larger one is never
/// truncated: it is not sent, and counted (`PushFrameTooLarge`).
pub const MAX_FRAME_BYTES: usize = 32 * 1024;
/// How long a connection (and each of its sent-marks) is kept: API Gateway closes a WebSocket
/// connection after 2 hours at most, so nothing of it is worth keeping longer.
pub const CONNECTION_TTL_S: i64 = 2 * 3600;
/// The longest SQS delay; a watch due later is re-delayed when it arrives.
pub const MAX_TIMER_DELAY_S: u32 = 900;
/// How soon a watched ticket whose admission time is unknown (admission halted while every unit
/// is held, or a drawn queue before its start) is looked at again.
pub const UNKNOWN_ETA_RECHECK_S: u32 = 30;

/// One frame, as the wire contract has it (README, "Push").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Frame {
    /// An order's status changed (`at`: when the bus carried it, RFC 3339).
    Order {
        order_id: String,
        status: String,
        at: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        codes_ready: Option<bool>,
    },
    /// Where the buyer stands in a campaign's queue.
    Queue {
        campaign_id: String,
        ticket: Option<u64>,
        state: String,
        position: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        admission_token: Option<String>,
    },
    /// A waitlisted buyer told units came back (`WaitlistNotified` on the bus; docs/waitlist.md):
    /// their token is read with `GET /skus/{sku}/waitlist/me`.
    Waitlist {
        sku: String,
        position: Option<u64>,
        state: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        expires_at_ms: Option<i64>,
    },
    /// The answer to `{"action":"ping"}`.
    Pong,
}

/// A frame too large to send whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {0}-byte frame is over the {MAX_FRAME_BYTES}-byte limit")]
pub struct TooLarge(pub usize);

impl Frame {
    /// The frame's text, or [`TooLarge`]: never cut.
    pub fn encode(&self) -> Result<String, TooLarge> {
        let text = serde_json::to_string(self).map_err(|_| TooLarge(usize::MAX))?;
        if text.len() > MAX_FRAME_BYTES {
            return Err(TooLarge(text.len()));
        }
        Ok(text)
    }
}

/// A frame for one buyer, with the key that makes it once per connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    pub user: String,
    pub frame: Frame,
    /// Unique per event: an order's write (`o#<order>#<version>`), a ticket's state
    /// (`q#<campaign>#<ticket>#<state>`). A redelivered or republished event has the same key.
    pub key: String,
}

/// The order status a bus event tells its buyer about, `None` for events that are no news to
/// them (their own checkout, the machinery's bookkeeping).
pub fn order_status_pushed(kind: EventKind) -> bool {
    match kind {
        EventKind::OrderPaid
        | EventKind::OrderCancelled
        | EventKind::OrderExpired
        | EventKind::OrderFailed
        | EventKind::OrderShipped
        | EventKind::OrderCompleted
        | EventKind::OrderRefunding
        | EventKind::OrderRefunded
        | EventKind::OrderReturnRequested
        | EventKind::OrderReturned => true,
        EventKind::OrderCreated
        | EventKind::RefundRequested
        | EventKind::OversellDetected
        | EventKind::SupplierCancelRequested => false,
    }
}

/// The push of one order event (`at`: the bus's time of it), `None` when it tells the buyer nothing.
/// A refund decided is the order's next status: REFUNDING when approved, PAID when refused.
pub fn order_push(kind: EventKind, d: &EventDetail, at: &str) -> Option<Push> {
    if !order_status_pushed(kind) {
        return None;
    }
    Some(Push {
        user: d.user_id.clone(),
        key: format!("o#{}#{}", d.order_id, d.version),
        frame: Frame::Order {
            order_id: d.order_id.clone(),
            status: d.status.clone(),
            at: at.to_owned(),
            codes_ready: None,
        },
    })
}

/// The push of a code pool order's codes becoming readable (its lock sold): the order frame
/// with `codes_ready`.
pub fn codes_ready_push(user: &str, order_id: &str, at: &str) -> Push {
    Push {
        user: user.to_owned(),
        key: format!("c#{order_id}"),
        frame: Frame::Order {
            order_id: order_id.to_owned(),
            status: "PAID".to_owned(),
            at: at.to_owned(),
            codes_ready: Some(true),
        },
    }
}

/// A stock-side event a buyer is told about (source `holdfast.stock`): a code pool order's
/// codes readable (`CodesReady` `{"order_id","user_id"}`), or a waitlist telling them units came
/// back (`WaitlistNotified` `{"user_id","sku","position","state","expires_at_ms"}`).
pub fn stock_push(detail_type: &str, d: &serde_json::Value, at: &str) -> Option<Push> {
    let text = |k: &str| d.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
    let user = text("user_id").filter(|u| !u.is_empty())?;
    match detail_type {
        "CodesReady" => Some(codes_ready_push(&user, &text("order_id")?, at)),
        "WaitlistNotified" => {
            let sku = text("sku")?;
            let state = text("state")?;
            let position = d.get("position").and_then(serde_json::Value::as_u64);
            Some(Push {
                key: format!("w#{sku}#{}#{state}", position.unwrap_or_default()),
                user,
                frame: Frame::Waitlist {
                    sku,
                    position,
                    state,
                    expires_at_ms: d.get("expires_at_ms").and_then(serde_json::Value::as_i64),
                },
            })
        }
        _ => None,
    }
}

/// A queue frame's key: one per ticket and state (a ticket is ADMITTED once, SOLD_OUT once).
pub fn queue_key(campaign: &str, ticket: Option<u64>, state: &str) -> String {
    format!("q#{campaign}#{}#{state}", ticket.map(|t| t.to_string()).unwrap_or_default())
}

/// A watched ticket: when its state is next looked at (SQS `DelaySeconds`, at most 900 s; a
/// later time arrives early and is delayed again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Watch {
    pub schema: u32,
    pub user: String,
    pub campaign_id: String,
    /// Epoch ms when the state should be looked at.
    pub due_ms: i64,
}

/// The delay to send a watch due at `due_ms` with, now being `now_ms`.
pub fn timer_delay_s(now_ms: i64, due_ms: i64) -> u32 {
    let s = (due_ms.saturating_sub(now_ms).max(0) + 999) / 1000;
    u32::try_from(s).unwrap_or(u32::MAX).min(MAX_TIMER_DELAY_S)
}

/// What to do with a watched ticket after looking at it: its state is final for a push
/// (ADMITTED, SOLD_OUT, EXPIRED, USED: push it, done), or it waits (look again at its
/// admission time, or in [`UNKNOWN_ETA_RECHECK_S`] when that is unknown).
pub fn next_look(state: &str, eta_s: Option<i64>, now_ms: i64) -> Option<i64> {
    if state != "WAITING" {
        return None;
    }
    Some(match eta_s {
        Some(s) => now_ms.saturating_add(s.max(0).saturating_mul(1000)),
        None => now_ms + i64::from(UNKNOWN_ETA_RECHECK_S) * 1000,
    })
}

/// A message a client sends (`{"action": …}`): the route selection expression
/// `$request.body.action` picks the same.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ClientMessage {
    Ping,
    /// Tell me when my ticket in this campaign's queue moves.
    Watch {
        campaign_id: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::ALL_KINDS;

    fn detail(status: &str, version: u64) -> EventDetail {
        EventDetail {
            schema: 1,
            order_id: "o1".into(),
            user_id: "alice".into(),
            status: status.into(),
            version,
            amount: 10,
            currency: "EUR".into(),
            lines: vec![],
            payment_id: None,
            refund_id: None,
            restock: None,
            correlation_id: None,
        }
    }

    #[test]
    fn a_paid_order_becomes_an_order_frame_for_its_buyer_keyed_by_its_version() {
        let p = order_push(EventKind::OrderPaid, &detail("PAID", 3), "2026-12-06T16:00:00Z").unwrap();
        assert_eq!(p.user, "alice");
        assert_eq!(p.key, "o#o1#3");
        assert_eq!(
            p.frame.encode().unwrap(),
            r#"{"type":"order","order_id":"o1","status":"PAID","at":"2026-12-06T16:00:00Z"}"#
        );
        // the same event redelivered has the same key; the next write of the order another
        let again = order_push(EventKind::OrderPaid, &detail("PAID", 3), "later").unwrap();
        assert_eq!(again.key, p.key);
        assert_ne!(order_push(EventKind::OrderShipped, &detail("SHIPPED", 4), "t").unwrap().key, p.key);
    }

    #[test]
    fn only_status_changes_the_buyer_cares_about_are_pushed() {
        let pushed: Vec<EventKind> = ALL_KINDS.into_iter().filter(|k| order_status_pushed(*k)).collect();
        assert_eq!(pushed.len(), 10);
        for quiet in [EventKind::OrderCreated, EventKind::RefundRequested, EventKind::OversellDetected] {
            assert!(order_push(quiet, &detail("PENDING_PAYMENT", 1), "t").is_none());
        }
        // a refund decided: approved is REFUNDING, refused is PAID again
        assert!(order_push(EventKind::OrderRefunding, &detail("REFUNDING", 5), "t").is_some());
    }

    #[test]
    fn frames_are_the_wire_contract() {
        let q = Frame::Queue {
            campaign_id: "drop".into(),
            ticket: Some(7),
            state: "ADMITTED".into(),
            position: Some(7),
            admission_token: Some("v1.k.p.m".into()),
        };
        assert_eq!(
            q.encode().unwrap(),
            r#"{"type":"queue","campaign_id":"drop","ticket":7,"state":"ADMITTED","position":7,"admission_token":"v1.k.p.m"}"#
        );
        assert_eq!(Frame::Pong.encode().unwrap(), r#"{"type":"pong"}"#);
        let c = codes_ready_push("alice", "o1", "t");
        assert_eq!(
            c.frame.encode().unwrap(),
            r#"{"type":"order","order_id":"o1","status":"PAID","at":"t","codes_ready":true}"#
        );
        assert_eq!(queue_key("drop", Some(7), "ADMITTED"), "q#drop#7#ADMITTED");
    }

    #[test]
    fn codes_ready_and_a_waitlist_turn_become_frames_for_their_buyer() {
        let c = stock_push("CodesReady", &serde_json::json!({"order_id": "o1", "user_id": "ann"}), "t").unwrap();
        assert_eq!((c.user.as_str(), c.key.as_str()), ("ann", "c#o1"));
        let w = serde_json::json!({"type": "waitlist", "sku": "MUG", "user_id": "bob", "position": 3,
                                   "state": "NOTIFIED", "notified_at_ms": 1, "expires_at_ms": 9});
        let p = stock_push("WaitlistNotified", &w, "t").unwrap();
        assert_eq!(p.user, "bob");
        assert_eq!(
            p.frame.encode().unwrap(),
            r#"{"type":"waitlist","sku":"MUG","position":3,"state":"NOTIFIED","expires_at_ms":9}"#
        );
        assert!(stock_push("StockChanged", &w, "t").is_none(), "no buyer in it");
        assert!(stock_push("CodesReady", &serde_json::json!({"order_id": "o1"}), "t").is_none());
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_whole_never_cut() {
        let big = Frame::Order {
            order_id: "o".repeat(MAX_FRAME_BYTES),
            status: "PAID".into(),
            at: "t".into(),
            codes_ready: None,
        };
        let err = big.encode().unwrap_err();
        assert!(err.0 > MAX_FRAME_BYTES);
        let fits = Frame::Order {
            order_id: "o".repeat(MAX_FRAME_BYTES - 60),
            status: "PAID".into(),
            at: "t".into(),
            codes_ready: None,
        };
        assert!(fits.encode().unwrap().len() <= MAX_FRAME_BYTES);
    }

    #[test]
    fn a_watch_is_delayed_until_its_time_at_most_900_s_at_a_time() {
        assert_eq!(timer_delay_s(1_000, 1_000), 0);
        assert_eq!(timer_delay_s(1_000, 500), 0);
        assert_eq!(timer_delay_s(0, 1_001), 2);
        assert_eq!(timer_delay_s(0, 3_600_000), 900);
        assert_eq!(next_look("WAITING", Some(12), 1_000), Some(13_000));
        assert_eq!(next_look("WAITING", None, 1_000), Some(31_000));
        assert_eq!(next_look("ADMITTED", Some(100), 1_000), None);
        assert_eq!(next_look("SOLD_OUT", None, 1_000), None);
    }

    #[test]
    fn client_messages_are_chosen_by_their_action() {
        assert_eq!(serde_json::from_str::<ClientMessage>(r#"{"action":"ping"}"#).unwrap(), ClientMessage::Ping);
        assert_eq!(
            serde_json::from_str::<ClientMessage>(r#"{"action":"watch","campaign_id":"d"}"#).unwrap(),
            ClientMessage::Watch { campaign_id: "d".into() }
        );
        assert!(serde_json::from_str::<ClientMessage>(r#"{"action":"shout"}"#).is_err());
    }
}
