//! The waiting room's routes (docs/waiting-room.md): join, where am I, the operators' view.

use crate::domain::queue::{HaltReason, Stock};
use crate::service::queue::{Place, QueueStats};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /campaigns/{campaign_id}/queue` (201 taken now, 200 the buyer's own again) and
/// `GET /campaigns/{campaign_id}/queue/me`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct QueuePlace {
    pub campaign_id: String,
    /// The buyer's ticket number; null when none was issued (the campaign was sold out).
    pub ticket: Option<u64>,
    /// Admitted in this order; null for a drawn queue before its start (drawn at the start).
    pub position: Option<u64>,
    /// `WAITING`, `ADMITTED`, `USED`, `EXPIRED` or `SOLD_OUT`.
    #[schema(pattern = "^(WAITING|ADMITTED|USED|EXPIRED|SOLD_OUT)$")]
    pub state: &'static str,
    /// Waiting: seconds until admitted (null while admission waits for held units to come back,
    /// or before a drawn queue's start). Admitted: seconds the token has left.
    pub eta_seconds: Option<i64>,
    /// Once `ADMITTED`: what `POST /orders` takes as `admission_token` for this campaign's items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission_token: Option<String>,
}

impl QueuePlace {
    pub fn new(campaign_id: &str, p: Place) -> Self {
        QueuePlace {
            campaign_id: campaign_id.to_owned(),
            ticket: p.ticket,
            position: p.position,
            state: p.state.as_str(),
            eta_seconds: p.eta_seconds,
            admission_token: p.admission_token,
        }
    }
}

/// `GET /admin/campaigns/{campaign_id}/queue` and the pause/resume answers.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct QueueStatsView {
    pub campaign_id: String,
    /// Admissions per second.
    pub rate: u32,
    pub token_ttl_seconds: u32,
    /// `fifo` or `random`.
    pub draw: String,
    /// Tickets taken.
    pub joined: u64,
    /// Positions admitted so far.
    pub admitted_through: u64,
    /// `null` while admitting; `all_held` (every unit left is held by a checkout) or `paused`.
    pub halted: Option<String>,
    /// `SELLING`, `ALL_HELD` or `SOLD_OUT`.
    pub stock: &'static str,
    /// Seconds until the last ticket taken is admitted (null while halted).
    pub tail_eta_seconds: Option<i64>,
}

impl QueueStatsView {
    pub fn new(campaign_id: &str, spec: &crate::domain::queue::QueueSpec, s: &QueueStats) -> Self {
        QueueStatsView {
            campaign_id: campaign_id.to_owned(),
            rate: spec.rate,
            token_ttl_seconds: spec.token_ttl_s,
            draw: match spec.draw {
                crate::domain::queue::Draw::Fifo => "fifo".into(),
                crate::domain::queue::Draw::Random => "random".into(),
            },
            joined: s.joined,
            admitted_through: s.admitted_through,
            halted: s.halted.map(|h| {
                match h {
                    HaltReason::AllHeld => "all_held",
                    HaltReason::Paused => "paused",
                }
                .to_owned()
            }),
            stock: match s.stock {
                Stock::Selling => "SELLING",
                Stock::AllHeld => "ALL_HELD",
                Stock::SoldOut => "SOLD_OUT",
            },
            tail_eta_seconds: s.tail_eta_seconds,
        }
    }
}

/// The public face of a campaign's queue in `GET /campaigns/{campaign_id}`: its rate, and the
/// draw's commitment (the seed's SHA-256 from creation, the seed itself after the start, and the
/// counters at the start, with which `scripts/verify-draw.py` recomputes every position).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueuePublic {
    pub rate: u32,
    pub token_ttl_seconds: u32,
    pub draw: String,
    pub seed_sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// A drawn queue after its start: each ticket counter's value at the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_start: Option<Vec<u64>>,
}
