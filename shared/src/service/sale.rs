//! Running a sale (docs/operations.md): the sales switch, admission rates, live counters and the
//! campaign statistics the console shows.
//!
//! Live counters cost nothing per checkout: each warm Lambda adds them up in memory and flushes
//! them at most every `live_flush_ms` (one `UpdateItem` per campaign with activity), into a
//! totals item per campaign and one item per campaign and 10-second window (the per-second
//! checkouts and the latency histogram of that window).

use crate::clock;
use crate::context::App;
use crate::domain::campaign::Campaign;
use crate::domain::sale::{latency_bucket, quantile, SalesMode, SalesSwitch, WriteKind};
use crate::domain::{CampaignId, Sku};
use crate::ports::Counters;
use anyhow::Context;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

/// The live item of the reconcile sweep's report (`sweeps`, `last_ms`, `violations`).
pub const RECONCILE_KEY: &str = "reconcile";

/// Live windows are this many seconds long.
const WINDOW_S: i64 = 10;
/// The stats show this many seconds of checkouts per second and latency.
const RECENT_S: i64 = 60;
/// Window items expire this long after their window (the table's TTL).
const WINDOW_TTL_S: i64 = 3600;

/// The switch now: from this Lambda's cache (at most `switch_cache_ms` old) or a consistent read.
pub async fn switch(app: &App) -> anyhow::Result<SalesSwitch> {
    let now = clock::now_ms();
    if let Some(s) = app.caches.switch(now, app.config.switch_cache_ms) {
        return Ok(s);
    }
    let s = app.sale.sales_switch().await?.unwrap_or_default();
    app.caches.put_switch(&s, now);
    Ok(s)
}

/// Sets the switch (the actor is the admin's `sub`).
pub async fn set_switch(app: &App, mode: SalesMode, reason: String, by: Option<String>) -> anyhow::Result<SalesSwitch> {
    let s = SalesSwitch { mode, reason, since_ms: clock::now_ms(), by };
    app.sale.put_sales_switch(&s).await?;
    app.caches.put_switch(&s, clock::now_ms());
    tracing::warn!(mode = mode.as_str(), by = s.by.as_deref().unwrap_or("-"), reason = %s.reason, "sales switch set");
    Ok(s)
}

/// `Err(switch)` when the switch refuses a write of `kind`. Reads are never judged. A checkout
/// this Lambda cannot judge from its cache is let through: its freeze checks the switch in its
/// own transaction ([`checkout_known`]), so a warm checkout never spends a round trip on it.
pub async fn guard(app: &App, kind: WriteKind) -> anyhow::Result<Result<(), SalesSwitch>> {
    if kind == WriteKind::Always {
        return Ok(Ok(()));
    }
    if kind == WriteKind::Checkout && app.caches.switch(clock::now_ms(), app.config.switch_cache_ms).is_none() {
        return Ok(Ok(()));
    }
    let s = switch(app).await?;
    Ok(if s.admits(kind) { Ok(()) } else { Err(s) })
}

/// Whether this Lambda knows, within `switch_cache_ms`, that the switch admits a checkout: read
/// it, or a freeze's transaction found it OPEN. Otherwise the freeze checks it in its own
/// transaction (`FreezeLimits::sales_open`; docs/operations.md, "Sales switch").
pub fn checkout_known(app: &App) -> bool {
    let (now, ttl) = (clock::now_ms(), app.config.switch_cache_ms);
    app.caches.checkout_open(now, ttl) || app.caches.switch(now, ttl).is_some_and(|s| s.admits(WriteKind::Checkout))
}

/// A freeze's transaction found the switch OPEN: checkouts go on without checking it for
/// `switch_cache_ms`, as after a read.
pub fn saw_checkout_open(app: &App) {
    app.caches.put_checkout_open(clock::now_ms());
}

/// The switch, read now (and cached), if it refuses a checkout: what a freeze whose
/// transaction found it closed answers with.
pub async fn checkout_refusal(app: &App) -> anyhow::Result<Option<SalesSwitch>> {
    let s = app.sale.sales_switch().await?.unwrap_or_default();
    app.caches.put_switch(&s, clock::now_ms());
    Ok((!s.admits(WriteKind::Checkout)).then_some(s))
}

/// A line's admission bucket and rate: its campaign item's rate when it has one, else the SKU's.
pub fn admission_key(sku: &Sku, sku_rate: Option<u32>, campaign: Option<&Campaign>) -> Option<(String, u32)> {
    if let Some((c, rate)) = campaign.and_then(|c| Some((c, c.item(sku)?.admission_rate?))) {
        return Some((format!("c#{}#{sku}", c.id), rate));
    }
    sku_rate.map(|r| (format!("s#{sku}"), r))
}

/// Takes one admission per line from its bucket; `Err((sku, retry_after_s))` on the first
/// refused. Checked before anything is written: a refused checkout touches no shard.
pub fn admit(app: &App, keys: &[(Sku, Option<(String, u32)>)]) -> Result<(), (Sku, u64)> {
    let now = clock::now_ms();
    for (sku, k) in keys {
        if let Some((key, rate)) = k {
            if let Err(ms) = app.caches.admit(key, *rate, 1, now) {
                return Err((sku.clone(), (ms.max(1) as u64).div_ceil(1000)));
            }
        }
    }
    Ok(())
}

fn add(pending: &mut HashMap<String, Counters>, key: String, counter: String, n: i64) {
    *pending.entry(key).or_default().entry(counter).or_insert(0) += n;
}

/// Records one checkout of these campaigns: its outcome (`None` = ordered, else the refusal's
/// code) and its latency.
pub fn record_checkout(app: &App, campaigns: &[CampaignId], refusal: Option<&str>, latency_ms: u64) {
    if campaigns.is_empty() {
        return;
    }
    let now = clock::now_s();
    let Ok(mut pending) = app.caches.live.lock() else { return };
    for c in campaigns {
        let window = format!("{c}#{}", now.div_euclid(WINDOW_S));
        match refusal {
            None => add(&mut pending, window.clone(), format!("k_{now}"), 1),
            Some(r) => add(&mut pending, c.to_string(), format!("r_{r}"), 1),
        }
        add(&mut pending, window, format!("l_{}", latency_bucket(latency_ms)), 1);
    }
}

/// Records order status changes of campaign orders (the order stream): `-1` from, `+1` to.
pub fn record_orders(app: &App, changes: &[(CampaignId, Option<&str>, &str)]) {
    let Ok(mut pending) = app.caches.live.lock() else { return };
    for (c, from, to) in changes {
        if let Some(f) = from {
            add(&mut pending, c.to_string(), format!("o_{f}"), -1);
        }
        add(&mut pending, c.to_string(), format!("o_{to}"), 1);
    }
}

/// Flushes this Lambda's live counters when `live_flush_ms` has passed since the last flush
/// (or always, with `force`). A failed flush puts its counters back for the next one.
pub async fn flush(app: &App, force: bool) {
    let now = clock::now_ms();
    let last = app.caches.live_flushed_ms.load(Ordering::Relaxed);
    if !force && now - last < app.config.live_flush_ms {
        return;
    }
    if app.caches.live_flushed_ms.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return; // another request of this Lambda is flushing
    }
    let batch: HashMap<String, Counters> = match app.caches.live.lock() {
        Ok(mut p) => std::mem::take(&mut *p),
        Err(_) => return,
    };
    for (key, deltas) in batch {
        let expires = key.contains('#').then(|| clock::now_s() + WINDOW_TTL_S);
        emit_metrics(app, &key, &deltas);
        if let Err(e) = app.sale.add_live(&key, &deltas, expires).await {
            tracing::warn!(key, error = format!("{e:#}"), "live counters not flushed; kept for the next flush");
            if let Ok(mut p) = app.caches.live.lock() {
                for (k, d) in deltas {
                    add(&mut p, key.clone(), k, d);
                }
            }
        }
    }
}

/// Per-campaign metrics (bounded: one dimension value per campaign) from a flushed batch.
fn emit_metrics(app: &App, key: &str, deltas: &Counters) {
    use crate::telemetry::{campaign_metric, names};
    let Some((campaign, _window)) = key.split_once('#') else {
        let refusals: i64 = deltas.iter().filter(|(k, _)| k.starts_with("r_")).map(|(_, n)| n).sum();
        if refusals > 0 && key != RECONCILE_KEY {
            campaign_metric(&app.function, key, names::CAMPAIGN_REFUSALS, refusals as f64, "Count");
        }
        return;
    };
    let checkouts: i64 = deltas.iter().filter(|(k, _)| k.starts_with("k_")).map(|(_, n)| n).sum();
    campaign_metric(&app.function, campaign, names::CAMPAIGN_CHECKOUTS, checkouts as f64, "Count");
    if let Some(p99) = quantile(&histogram(deltas), 0.99) {
        campaign_metric(&app.function, campaign, names::CHECKOUT_LATENCY_P99, p99 as f64, "Milliseconds");
    }
}

fn histogram(c: &Counters) -> BTreeMap<usize, i64> {
    c.iter().filter_map(|(k, n)| Some((k.strip_prefix("l_")?.parse().ok()?, *n))).collect()
}

/// A reconcile sweep was seeded (the machinery page's "last sweep").
pub async fn note_sweep(app: &App) {
    let now = clock::now_ms();
    let r = app.sale.set_live(RECONCILE_KEY, &Counters::from([("last_ms".to_owned(), now)])).await;
    let r = match r {
        Ok(()) => app.sale.add_live(RECONCILE_KEY, &Counters::from([("sweeps".to_owned(), 1)]), None).await,
        e => e,
    };
    if let Err(e) = r {
        tracing::warn!(error = format!("{e:#}"), "reconcile sweep not noted for the console");
    }
}

/// Invariant violations a sweep found (flushed with the live counters).
pub fn note_violations(app: &App, n: usize) {
    if n > 0 {
        if let Ok(mut p) = app.caches.live.lock() {
            add(&mut p, RECONCILE_KEY.to_owned(), "violations".to_owned(), n as i64);
        }
    }
}

/// Sends `LowStock` once per crossing of a SKU's `low_stock_threshold`: the SKU's available
/// units (all shards, read consistently) below it and the SKU not yet marked low. The mark is a
/// conditional write, so of two concurrent checks one sends; coming back to the threshold or
/// above clears it (the next fall sends again).
pub async fn check_low_stock(app: &App, skus: &[Sku]) -> anyhow::Result<()> {
    if skus.is_empty() {
        return Ok(());
    }
    let metas = app.catalogue.get_skus_public(skus).await?;
    for (sku, meta) in metas {
        let Some(threshold) = meta.controls.low_stock_threshold else { continue };
        let available: i64 = app.shards.read_shards(&sku, meta.slots).await?.iter().map(|c| c.available).sum();
        let low = available < threshold;
        if !app.sale.mark_low_stock(&sku, low).await? || !low {
            continue;
        }
        let detail = serde_json::json!({
            "schema": 1, "sku": sku.as_str(), "available": available, "threshold": threshold,
            "at": clock::rfc3339(clock::now_ms()),
        });
        match app.bus.publish_stock("LowStock", &detail).await {
            Ok(true) => {
                app.count(crate::telemetry::names::LOW_STOCK, 1);
                tracing::warn!(%sku, available, threshold, "low stock");
            }
            // not accepted, or the call failed (throttled, denied by the bus policy): clear the
            // mark so the next change sends it; a mark left set would silence the SKU for good
            sent => {
                app.sale.mark_low_stock(&sku, false).await?;
                sent.with_context(|| format!("LowStock for {sku} not sent"))?;
            }
        }
    }
    Ok(())
}

/// One campaign's live numbers (`GET /admin/campaigns/{id}/stats`).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub at_ms: i64,
    /// Per item: (sku, quota, available, locked, sold), read consistently.
    pub items: Vec<(Sku, i64, i64, i64, i64)>,
    /// Per item, each wave's counters (docs/campaigns.md, "Waves"; one entry without waves).
    pub waves: Vec<Vec<crate::domain::invariants::ShardCounts>>,
    pub refusals: BTreeMap<String, i64>,
    pub orders: BTreeMap<String, i64>,
    /// The last 60 seconds: (second, checkouts).
    pub per_second: Vec<(i64, i64)>,
    pub p50_ms: Option<u64>,
    pub p99_ms: Option<u64>,
}

pub async fn stats(app: &App, c: &Campaign) -> anyhow::Result<Stats> {
    // what this Lambda has not flushed yet is counted too
    flush(app, true).await;
    let now = clock::now_s();
    let mut items = Vec::new();
    let mut waves = Vec::new();
    for i in &c.items {
        let shards = app.campaigns.read_quota_shards(&c.id, &i.sku, i.quota_shards(), true).await?;
        let (a, l, s) = shards.iter().fold((0, 0, 0), |(a, l, s), x| (a + x.available, l + x.locked, s + x.sold));
        items.push((i.sku.clone(), i.quota, a, l, s));
        waves.push(crate::domain::campaign::wave_counts(i, &shards));
    }
    let windows: Vec<String> =
        ((now - RECENT_S).div_euclid(WINDOW_S)..=now.div_euclid(WINDOW_S)).map(|w| format!("{}#{w}", c.id)).collect();
    let mut keys = windows.clone();
    keys.push(c.id.to_string());
    let live = app.sale.read_live(&keys).await?;
    let total = live.get(c.id.as_str()).cloned().unwrap_or_default();
    let pick = |prefix: &str| -> BTreeMap<String, i64> {
        total
            .iter()
            .filter_map(|(k, n)| Some((k.strip_prefix(prefix)?.to_owned(), *n)))
            .filter(|(_, n)| *n != 0)
            .collect()
    };
    let mut per_second: BTreeMap<i64, i64> = (now - RECENT_S + 1..=now).map(|s| (s, 0)).collect();
    let mut hist = BTreeMap::new();
    for w in &windows {
        for (k, n) in live.get(w).into_iter().flatten() {
            if let Some(s) = k.strip_prefix("k_").and_then(|s| s.parse::<i64>().ok()) {
                if let Some(slot) = per_second.get_mut(&s) {
                    *slot += n;
                }
            }
        }
        for (b, n) in histogram(live.get(w).unwrap_or(&Counters::new())) {
            *hist.entry(b).or_insert(0) += n;
        }
    }
    Ok(Stats {
        at_ms: clock::now_ms(),
        items,
        waves,
        refusals: pick("r_"),
        orders: pick("o_"),
        per_second: per_second.into_iter().collect(),
        p50_ms: quantile(&hist, 0.5),
        p99_ms: quantile(&hist, 0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::memory_app;
    use crate::config::Config;

    fn app() -> App {
        memory_app("create-order", Config::from_lookup(&|_| None).unwrap()).unwrap().0
    }

    #[tokio::test]
    async fn live_counters_add_up_across_flushes() {
        let app = app();
        let c = CampaignId::parse("sale-1").unwrap();
        record_checkout(&app, std::slice::from_ref(&c), None, 12);
        record_checkout(&app, std::slice::from_ref(&c), None, 40);
        record_checkout(&app, std::slice::from_ref(&c), Some("sale_paused"), 3);
        record_orders(&app, &[(c.clone(), None, "PENDING_PAYMENT"), (c.clone(), Some("PENDING_PAYMENT"), "PAID")]);
        flush(&app, true).await;
        record_checkout(&app, std::slice::from_ref(&c), Some("sale_paused"), 3);
        flush(&app, true).await;
        let live = app.sale.read_live(&[c.to_string()]).await.unwrap();
        let total = &live[c.as_str()];
        assert_eq!(total["r_sale_paused"], 2);
        assert_eq!(total["o_PAID"], 1);
        assert_eq!(total["o_PENDING_PAYMENT"], 0);
    }

    /// A bus whose `PutEvents` call fails as a whole (as the bus policy's deny does in AWS).
    struct DeniedBus;

    #[async_trait::async_trait]
    impl crate::ports::EventBus for DeniedBus {
        async fn publish(&self, events: &[crate::domain::events::OrderEvent]) -> anyhow::Result<Vec<bool>> {
            Ok(vec![false; events.len()])
        }
        async fn publish_stock(&self, _: &str, _: &serde_json::Value) -> anyhow::Result<bool> {
            anyhow::bail!("AccessDeniedException: not authorized to perform events:PutEvents")
        }
    }

    /// Security review 3 L1 / protocol review 3 N7: a `LowStock` whose `PutEvents` call fails
    /// clears the SKU's low-stock mark, so the next change of its stock sends it again.
    #[tokio::test]
    async fn a_low_stock_event_the_bus_refuses_clears_the_mark_and_is_sent_on_the_next_check() {
        let (app, w) = memory_app("stock-journal", Config::from_lookup(&|_| None).unwrap()).unwrap();
        let sku = Sku::parse("LOW-1").unwrap();
        let spec = crate::service::admin::SkuSpec {
            controls: crate::ports::SkuControls { admission_rate: None, low_stock_threshold: Some(5) },
            name: "low".into(),
            price: 100,
            currency: crate::domain::Currency::parse("EUR").unwrap(),
            shards: 2,
            per_user_limit: None,
            model: Default::default(),
            bundle: Vec::new(),
            supplier: None,
        };
        crate::service::admin::put_sku(&app, &sku, &spec, Some("ops")).await.unwrap();
        crate::service::admin::adjust(&app, &sku, "a1", 3, "stock", Some("ops"), &[]).await.unwrap();
        let denied = App { bus: std::sync::Arc::new(DeniedBus), ..app };
        let err = check_low_stock(&denied, std::slice::from_ref(&sku)).await.unwrap_err();
        assert!(format!("{err:#}").contains("LowStock for LOW-1 not sent"), "{err:#}");
        // the mark was cleared (clearing it again finds nothing)
        assert!(!denied.sale.mark_low_stock(&sku, false).await.unwrap(), "the mark is still set");
        let app = App { bus: w.bus.clone(), ..denied };
        check_low_stock(&app, std::slice::from_ref(&sku)).await.unwrap();
        let sent = w.bus.stock_events();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!((sent[0].0.as_str(), &sent[0].1["available"]), ("LowStock", &serde_json::json!(3)));
        // sent once per crossing
        check_low_stock(&app, std::slice::from_ref(&sku)).await.unwrap();
        assert_eq!(w.bus.stock_events().len(), 1);
    }

    #[tokio::test]
    async fn the_switch_is_read_once_per_cache_time_and_set_at_once_in_this_lambda() {
        let app = app();
        assert_eq!(switch(&app).await.unwrap().mode, SalesMode::Open);
        assert_eq!(guard(&app, WriteKind::Checkout).await.unwrap(), Ok(()));
        set_switch(&app, SalesMode::Closed, "stop".into(), Some("ops".into())).await.unwrap();
        let refused = guard(&app, WriteKind::Checkout).await.unwrap().unwrap_err();
        assert_eq!((refused.mode, refused.by.as_deref()), (SalesMode::Closed, Some("ops")));
        assert_eq!(guard(&app, WriteKind::Other).await.unwrap(), Ok(()));
        assert_eq!(guard(&app, WriteKind::Always).await.unwrap(), Ok(()));
    }
}
