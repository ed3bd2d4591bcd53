//! The simulated supplier the local stack starts (docs/suppliers.md): a real HTTP peer speaking
//! the supplier wire format of `aws/src/adapters/supplier.rs`. It honours the per-SKU
//! settings the adapter passes on every call — `confirm_after_seconds` (default 2), `outcome`
//! (`confirm` | `fail` | `silent`), `available` (what a quote answers; absent = unlimited),
//! `latency_ms` — books once per idempotency key, and counts every status and cancel call per
//! booking so tests can assert "cancel called exactly once".
//!
//! - `POST /quotes`, `POST /bookings`, `GET /bookings/{id}`, `POST /bookings/{id}/cancel`,
//!   `POST /bookings/{id}/codes` (the wire format); an issue fails (503) for the first
//!   `issue_failures` calls of each booking, then issues `quantity` codes once per key
//! - `GET /bookings` — every booking with its counters; `GET /bookings/{id}` carries them too
//! - `POST /control` — `{"latency_ms"?, "fail_rate"?, "hang_ms"?}`: latency of every call, the
//!   share of calls answered 503, and a stall before answering (to exercise timeouts); also from
//!   `HOLDFAST_SIM_SUPPLIER_LATENCY_MS` / `_FAIL_RATE` / `_HANG_MS`
//!
//! The wire-format routes demand `Authorization: Bearer <credential>` (security review M3) and
//! answer 401 without it; the two test controls (`POST /control`, `GET /bookings`) are open.

use super::{json, lock};
use holdfast::adapters::supplier::{BookingAnswer, CodesAnswer, QuoteAnswer, SupplierBody};
use holdfast::domain::supplier::{BookingStatus, SimOutcome};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One booking as the simulator keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimBooking {
    pub booking_id: String,
    pub key: String,
    pub sku: String,
    pub quantity: u32,
    pub status: BookingStatus,
    /// Epoch ms when it was booked.
    pub booked_at_ms: i64,
    pub confirm_after_ms: i64,
    pub outcome: SimOutcome,
    /// `POST /bookings` calls under its key (1 = booked once, never replayed).
    pub book_calls: u32,
    pub status_calls: u32,
    pub cancel_calls: u32,
    /// `POST /bookings/{id}/codes` calls, failed ones included.
    #[serde(default)]
    pub issue_calls: u32,
    /// The codes issued (once; a repeat answers them again).
    #[serde(default)]
    pub codes: Vec<String>,
}

impl SimBooking {
    /// The status now: the outcome once `confirm_after` has passed (a silent one never).
    fn settle(&mut self, now_ms: i64) {
        if self.status == BookingStatus::Pending && now_ms - self.booked_at_ms >= self.confirm_after_ms {
            self.status = match self.outcome {
                SimOutcome::Confirm => BookingStatus::Confirmed,
                SimOutcome::Fail => BookingStatus::Failed,
                SimOutcome::Silent => BookingStatus::Pending,
            };
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupplierControl {
    pub latency_ms: Option<u64>,
    /// Share of calls (0.0..=1.0) answered 503.
    pub fail_rate: Option<f64>,
    /// Stall this long before answering every call.
    pub hang_ms: Option<u64>,
}

#[derive(Default)]
struct State {
    bookings: Vec<SimBooking>,
    latency_ms: u64,
    fail_rate: f64,
    hang_ms: u64,
    quotes: u64,
}

pub struct SimSupplier {
    state: Mutex<State>,
    /// What `Authorization: Bearer …` must carry (the local stack's well-known credential unless
    /// [`SimSupplier::set_credential`] says otherwise).
    credential: Mutex<String>,
}

fn error(status: u16, msg: &str) -> hyper::Response<Full<Bytes>> {
    json(status, &serde_json::json!({"error": msg}))
}

impl SimSupplier {
    /// Binds `127.0.0.1:0` and serves until the runtime stops; returns the peer and its URL.
    pub async fn start(control: SupplierControl) -> anyhow::Result<(Arc<Self>, String)> {
        let (listener, url) = super::bind().await?;
        let me = Arc::new(SimSupplier {
            state: Mutex::new(State::default()),
            credential: Mutex::new(crate::stack::DEFAULT_SUPPLIER_CREDENTIAL.to_owned()),
        });
        me.control(&control);
        let peer = me.clone();
        super::serve(listener, move |req| peer.clone().handle(req), None);
        Ok((me, url))
    }

    /// Settings from `HOLDFAST_SIM_SUPPLIER_*` in `get`.
    pub fn control_from(get: impl Fn(&str) -> Option<String>) -> SupplierControl {
        SupplierControl {
            latency_ms: get("HOLDFAST_SIM_SUPPLIER_LATENCY_MS").and_then(|v| v.parse().ok()),
            fail_rate: get("HOLDFAST_SIM_SUPPLIER_FAIL_RATE").and_then(|v| v.parse().ok()),
            hang_ms: get("HOLDFAST_SIM_SUPPLIER_HANG_MS").and_then(|v| v.parse().ok()),
        }
    }

    pub fn control(&self, c: &SupplierControl) {
        let mut s = lock(&self.state);
        if let Some(l) = c.latency_ms {
            s.latency_ms = l.min(10_000);
        }
        if let Some(f) = c.fail_rate {
            s.fail_rate = f.clamp(0.0, 1.0);
        }
        if let Some(h) = c.hang_ms {
            s.hang_ms = h.min(60_000);
        }
    }

    /// The credential calls must carry from now on.
    pub fn set_credential(&self, credential: &str) {
        *lock(&self.credential) = credential.to_owned();
    }

    /// `Authorization: Bearer <credential>`, as the wire format demands.
    pub fn authorization(&self) -> String {
        format!("Bearer {}", lock(&self.credential))
    }

    /// Every booking (settled to now), oldest first.
    pub fn bookings(&self) -> Vec<SimBooking> {
        let now = holdfast::clock::now_ms();
        let mut s = lock(&self.state);
        s.bookings.iter_mut().for_each(|b| b.settle(now));
        s.bookings.clone()
    }

    /// The booking made under the idempotency key of `order_id` and `sku`.
    pub fn booking_for(&self, key: &str) -> Option<SimBooking> {
        self.bookings().into_iter().find(|b| b.key == key)
    }

    /// Quote calls received.
    pub fn quotes(&self) -> u64 {
        lock(&self.state).quotes
    }

    async fn handle(self: Arc<Self>, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let authorised = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .is_some_and(|v| v.as_bytes() == self.authorization().as_bytes());
        let body = match Limited::new(req.into_body(), 64 * 1024).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return error(413, "body too large"),
        };
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let is_control = segments == ["control"] || (method == hyper::Method::GET && segments == ["bookings"]);
        if !is_control && !authorised {
            return error(401, "missing or wrong credential");
        }
        if !is_control {
            let (latency, hang, fail) = {
                let s = lock(&self.state);
                (s.latency_ms, s.hang_ms, s.fail_rate > 0.0 && fastrand::f64() < s.fail_rate)
            };
            // per-SKU latency from the settings the adapter passed
            let sku_latency = serde_json::from_slice::<SupplierBody>(&body)
                .ok()
                .and_then(|b| b.settings.latency_ms)
                .map(u64::from)
                .unwrap_or(0);
            let wait = latency + hang + sku_latency;
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            if fail {
                return error(503, "supplier temporarily unavailable");
            }
        }
        match (method.as_str(), segments.as_slice()) {
            ("POST", ["control"]) => match serde_json::from_slice::<SupplierControl>(&body) {
                Ok(c) => {
                    self.control(&c);
                    json(200, &serde_json::json!({"ok": true}))
                }
                Err(e) => error(400, &e.to_string()),
            },
            ("GET", ["bookings"]) => json(200, &self.bookings()),
            ("POST", ["quotes"]) => match serde_json::from_slice::<SupplierBody>(&body) {
                Ok(b) => {
                    lock(&self.state).quotes += 1;
                    json(200, &QuoteAnswer { available: b.settings.available })
                }
                Err(e) => error(400, &e.to_string()),
            },
            ("POST", ["bookings"]) => match serde_json::from_slice::<SupplierBody>(&body) {
                Ok(b) if b.key.is_empty() || b.quantity == 0 => error(400, "a booking needs a key and a quantity"),
                Ok(b) => self.book(b),
                Err(e) => error(400, &e.to_string()),
            },
            ("GET", ["bookings", id]) => self.with_booking(id, |b| b.status_calls += 1),
            ("POST", ["bookings", id, "codes"]) => match serde_json::from_slice::<SupplierBody>(&body) {
                Ok(b) => self.issue(id, &b),
                Err(e) => error(400, &e.to_string()),
            },
            ("POST", ["bookings", id, "cancel"]) => self.with_booking(id, |b| {
                b.cancel_calls += 1;
                b.status = BookingStatus::Cancelled;
            }),
            _ => error(404, "no such route"),
        }
    }

    fn book(&self, b: SupplierBody) -> hyper::Response<Full<Bytes>> {
        let now = holdfast::clock::now_ms();
        let mut s = lock(&self.state);
        if let Some(existing) = s.bookings.iter_mut().find(|x| x.key == b.key) {
            // idempotent by key: the same booking again, nothing more booked
            existing.book_calls += 1;
            existing.settle(now);
            return json(200, &BookingAnswer { booking_id: existing.booking_id.clone(), status: existing.status });
        }
        if b.settings.available.is_some_and(|a| u64::from(b.quantity) > a) {
            return error(409, "not available");
        }
        let n = s.bookings.len() + 1;
        let booking = SimBooking {
            booking_id: format!("sim-bk-{n}"),
            key: b.key,
            sku: b.sku,
            quantity: b.quantity,
            status: BookingStatus::Pending,
            booked_at_ms: now,
            confirm_after_ms: i64::from(b.settings.confirm_after_seconds.unwrap_or(2)) * 1000,
            outcome: b.settings.outcome.unwrap_or_default(),
            book_calls: 1,
            status_calls: 0,
            cancel_calls: 0,
            issue_calls: 0,
            codes: Vec::new(),
        };
        let mut booking = booking;
        booking.settle(now);
        let answer = BookingAnswer { booking_id: booking.booking_id.clone(), status: booking.status };
        s.bookings.push(booking);
        json(201, &answer)
    }

    /// `POST /bookings/{id}/codes`: the booking's codes, issued once (idempotent by its key).
    fn issue(&self, id: &str, b: &SupplierBody) -> hyper::Response<Full<Bytes>> {
        let now = holdfast::clock::now_ms();
        let mut s = lock(&self.state);
        let Some(bk) = s.bookings.iter_mut().find(|x| x.booking_id == id) else {
            return error(404, "unknown booking");
        };
        bk.settle(now);
        bk.issue_calls += 1;
        if bk.key != b.key || b.quantity != bk.quantity {
            return error(400, "the key and quantity must be the booking's");
        }
        if bk.status != BookingStatus::Confirmed {
            return error(409, "the booking is not confirmed");
        }
        if !bk.codes.is_empty() {
            return json(200, &CodesAnswer { booking_id: bk.booking_id.clone(), codes: bk.codes.clone() });
        }
        if bk.issue_calls <= b.settings.issue_failures.unwrap_or(0) {
            return error(503, "the code issuer is temporarily unavailable");
        }
        bk.codes = (1..=bk.quantity).map(|i| format!("SIM-{}-{i}-{}", bk.booking_id, fastrand_code())).collect();
        json(201, &CodesAnswer { booking_id: bk.booking_id.clone(), codes: bk.codes.clone() })
    }

    fn with_booking(&self, id: &str, f: impl FnOnce(&mut SimBooking)) -> hyper::Response<Full<Bytes>> {
        let now = holdfast::clock::now_ms();
        let mut s = lock(&self.state);
        match s.bookings.iter_mut().find(|b| b.booking_id == id) {
            Some(b) => {
                b.settle(now);
                f(b);
                json(200, &*b)
            }
            None => error(404, "unknown booking"),
        }
    }
}

/// Eight random characters of a simulated code (the supplier's secret part).
fn fastrand_code() -> String {
    (0..8).map(|_| fastrand::alphanumeric()).collect()
}
