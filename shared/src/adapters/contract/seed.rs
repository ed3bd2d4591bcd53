//! Seeding and reading, through the port only.

use super::*;

pub(super) fn sku(prefix: &str, name: &str) -> Sku {
    Sku::parse(&format!("{prefix}-{name}")).expect("a valid SKU")
}

pub(super) fn user(prefix: &str, name: &str) -> UserId {
    UserId::parse(&format!("{prefix}-{name}")).expect("a valid user")
}

pub(super) fn rid(prefix: &str, name: &str) -> ReservationId {
    ReservationId::for_order(&OrderId::parse(&format!("{prefix}-{name}")).expect("a valid order id"))
}

pub(super) fn campaign_id(prefix: &str, name: &str) -> CampaignId {
    CampaignId::parse(&format!("{prefix}-{name}")).expect("a valid campaign id")
}

pub(super) fn eur() -> Currency {
    Currency::parse("EUR").expect("EUR")
}

pub(super) fn new_meta(sku: &Sku, shards: u16) -> SkuMeta {
    SkuMeta {
        fences: Vec::new(),
        warehouses: None,
        controls: Default::default(),
        sku: sku.clone(),
        name: format!("{sku} (contract)"),
        price: 100,
        currency: eur(),
        shards,
        slots: shards,
        per_user_limit: None,
        stocked: 0,
        version: 1,
        paused: false,
        model: InventoryModel::default(),
        bundle: Vec::new(),
        supplier: None,
    }
}

pub(super) async fn meta_of(store: &dyn StockStore, sku: &Sku) -> SkuMeta {
    store.get_skus(std::slice::from_ref(sku)).await.expect("get_skus").remove(sku).expect("the SKU exists")
}

pub(super) fn adjustment(sku: &Sku, id: &str, pieces: &[(u16, i64)]) -> Adjustment {
    Adjustment {
        sku: sku.clone(),
        adjustment_id: id.to_owned(),
        delta: pieces.iter().map(|(_, d)| d).sum(),
        reason: "contract".into(),
        actor: Some("contract-admin".into()),
        at_ms: crate::clock::now_ms(),
        pieces: pieces.to_vec(),
    }
}

pub(super) async fn adjust(
    store: &dyn StockStore,
    sku: &Sku,
    id: &str,
    pieces: &[(u16, i64)],
) -> Result<(), AdjustRejection> {
    store.adjust(&adjustment(sku, id, pieces), 0).await.expect("adjust")
}

/// Creates `meta` (its shards empty) and puts `available[i]` units on shard `i` with one
/// adjustment; the metadata as stored afterwards.
pub(super) async fn create(store: &dyn StockStore, meta: SkuMeta, available: &[i64]) -> SkuMeta {
    assert!(store.put_sku(&meta, None).await.expect("put_sku"), "create {}", meta.sku);
    let pieces: Vec<(u16, i64)> =
        available.iter().enumerate().filter(|(_, a)| **a != 0).map(|(i, a)| (i as u16, *a)).collect();
    if !pieces.is_empty() {
        assert_eq!(adjust(store, &meta.sku, "seed", &pieces).await, Ok(()), "seed {}", meta.sku);
    }
    meta_of(store, &meta.sku).await
}

/// A plain SKU with `available[i]` units on shard `i`.
pub(super) async fn stocked(store: &dyn StockStore, sku: &Sku, available: &[i64]) -> SkuMeta {
    create(store, new_meta(sku, available.len() as u16), available).await
}

/// (available, locked, sold) of shards `0..n`.
pub(super) async fn shards(store: &dyn StockStore, sku: &Sku, n: u16) -> Vec<(i64, i64, i64)> {
    store.read_shards(sku, n).await.expect("read_shards").iter().map(|c| (c.available, c.locked, c.sold)).collect()
}

pub(super) async fn quota(store: &dyn StockStore, c: &CampaignId, sku: &Sku, n: u16) -> Vec<(i64, i64, i64)> {
    store
        .read_quota_shards(c, sku, n, true)
        .await
        .expect("read_quota_shards")
        .iter()
        .map(|c| (c.available, c.locked, c.sold))
        .collect()
}

pub(super) async fn counter(store: &dyn StockStore, c: Counter) -> i64 {
    store.read_counters(std::slice::from_ref(&c)).await.expect("read_counters").get(&c).copied().unwrap_or(0)
}

pub(super) async fn status(store: &dyn StockStore, id: &ReservationId) -> Option<LockStatus> {
    store.get_reservation(id).await.expect("get_reservation").map(|r| r.status)
}

/// A plain line of `sku` taking `pieces` (shard, units).
pub(super) fn line(sku: &Sku, pieces: &[(u16, u32)]) -> ReservedLine {
    ReservedLine {
        sku: sku.clone(),
        quantity: pieces.iter().map(|(_, q)| q).sum(),
        unit_price: 100,
        currency: eur(),
        limited: false,
        pieces: pieces.iter().map(|&(shard, quantity)| Piece { shard, quantity }).collect(),
        campaign: None,
        dates: Vec::new(),
        draws: Vec::new(),
        at_payment: false,
        at_shipment: false,
        codes: None,
        backorder: None,
    }
}

/// A line that also charges the buyer's per-user counter.
pub(super) fn limited(l: ReservedLine) -> ReservedLine {
    ReservedLine { limited: true, ..l }
}

/// A line that also draws on campaign `c`'s quota shards (`pieces`), charging the campaign
/// per-user counter when `limited`.
pub(super) fn on_campaign(l: ReservedLine, c: &CampaignId, pieces: &[(u16, u32)], limited: bool) -> ReservedLine {
    let pieces = pieces.iter().map(|&(shard, quantity)| Piece { shard, quantity }).collect();
    ReservedLine { campaign: Some(CampaignLine { campaign_id: c.clone(), pieces, limited }), ..l }
}

/// A FROZEN order reservation as the stock service builds one before its freeze.
pub(super) fn reservation(id: ReservationId, buyer: Option<&UserId>, lines: Vec<ReservedLine>) -> Reservation {
    let now = crate::clock::now_ms();
    Reservation {
        id,
        kind: ReservationKind::Order,
        status: LockStatus::Frozen,
        user: buyer.cloned(),
        request_hash: "contract".into(),
        created_at_ms: now,
        expires_at: now / 1000 + 900,
        lines,
        oversold: false,
        pending: false,
        code_fate: None,
    }
}

pub(super) async fn freeze(
    store: &dyn StockStore,
    r: &Reservation,
    limits: &FreezeLimits,
) -> Result<(), FreezeRejection> {
    store.put_frozen(r, limits).await.expect("put_frozen")
}

/// A freeze of one unit on `shard` of `sku` (no buyer, no limits) under a fresh id.
pub(super) async fn freeze_one(
    store: &dyn StockStore,
    prefix: &str,
    sku: &Sku,
    shard: u16,
) -> Result<(), FreezeRejection> {
    let id = rid(prefix, &format!("one{}", fastrand::u64(..)));
    freeze(store, &reservation(id, None, vec![line(sku, &[(shard, 1)])]), &FreezeLimits::default()).await
}

pub(super) async fn move_lock(store: &dyn StockStore, r: &Reservation, to: LockStatus) -> Result<(), MoveRejection> {
    store.move_lock(r, to).await.expect("move_lock")
}

/// Sets the stop-sale switch from the stored metadata; whether it was written.
pub(super) async fn set_paused(store: &dyn StockStore, sku: &Sku, paused: bool) -> bool {
    let m = meta_of(store, sku).await;
    let next = SkuMeta { paused, version: m.version + 1, ..m.clone() };
    store.set_sku_paused(&next, m.version).await.expect("set_sku_paused")
}

pub(super) fn campaign(
    id: &CampaignId,
    sku: &Sku,
    quota: i64,
    per_user_limit: Option<u32>,
    window: (i64, i64),
) -> Campaign {
    Campaign {
        end_grace_s: 0,
        queue: None,
        id: id.clone(),
        name: format!("{id} (contract)"),
        starts_at: window.0,
        ends_at: window.1,
        paused: false,
        items: vec![CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku: sku.clone(),
            price: None,
            per_user_limit,
            shards: 1,
            quota,
        }],
        version: 1,
    }
}

/// A campaign window open now (an hour each way).
pub(super) fn live() -> (i64, i64) {
    let now = crate::clock::now_s();
    (now - 3600, now + 3600)
}

pub(super) async fn write_campaign(store: &dyn StockStore, c: &Campaign, expected: Option<u64>) -> bool {
    store.write_campaign(c, expected).await.expect("write_campaign")
}
