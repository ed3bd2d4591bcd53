//! The simulated shop: one SKU of every kind, a bundle over a quantity SKU, a campaign over
//! three kinds, and a drop behind a waiting room — made through the admin services, as an
//! operator would.

use holdfast::app::memory_app;
use holdfast::app::App;
use holdfast::config::Config;
use holdfast::domain::campaign::{CampaignItem, CampaignSpec, QueueSettings, Unsold, Wave, Waves};
use holdfast::domain::model::Oversell;
use holdfast::domain::model::{BundleChild, Day, Deduct, InventoryModel, Management, Unit};
use holdfast::domain::queue::Draw;
use holdfast::domain::supplier::SupplierConfig;
use holdfast::domain::warehouse::{Allocation, Warehouse, Warehouses};
use holdfast::domain::{CampaignId, Currency, Sku, UserId};
use holdfast::service::admin::{self, SkuSpec};
use holdfast::service::{campaigns, codes, queue};
use std::sync::atomic::{AtomicU64, Ordering};

/// Virtual start: 2026-12-01T00:00:00Z.
pub const T0_MS: i64 = 1_796_083_200_000;
pub const CAMPAIGN: &str = "flash";
/// The queued drop's SKU; its campaign's id is [`drop_id`].
pub const DROP_SKU: &str = "drop";
/// The drop's quota: fewer units than buyers, so the room halts, sells out and resumes.
pub const DROP_QUOTA: i64 = 2;
/// The drop's queue: one admission a second, a token lives fifteen minutes, first come first
/// served over 4 interleaved ticket counters.
pub const DROP_QUEUE: QueueSettings = QueueSettings { rate: 1, token_ttl_s: 900, draw: Draw::Fifo, counters: 4 };

/// A plain SKU of few units: the waitlist's main SKU (docs/simulator.md, "The waitlist").
pub const NOTIFY_SKU: &str = "notify";
/// The SKUs buyers wait for, drawn with these weights: `notify`, `qty-b` (a bundle's child) and
/// the drop's SKU (a queued campaign's item, whose own stock keeps a waitlist beside the queue).
pub const WAITLIST_SKUS: &[&str] = &[NOTIFY_SKU, NOTIFY_SKU, NOTIFY_SKU, "qty-b", DROP_SKU];
/// SKUs that have no waitlist (422 not_waitlistable).
pub const NOT_WAITLISTABLE: &[&str] =
    &["codes", "cal", "bundle", "unlimited", "paytime", "atship", "supp", "wh", BACKORDER_SKU, SUPPLIER_CODES_SKU];
/// The SKU sold short (kind BACKORDER, docs/inventory-models.md, "Backorders"): few units, so a
/// checkout often finds fewer than it asks for and its shortfall waits for a restock.
pub const BACKORDER_SKU: &str = "back";
/// The supplier's gift cards (kind SUPPLIER_CODES, docs/suppliers.md, "Codes issued by the
/// supplier"): booked like `supp`, its codes issued by the supplier once the order is paid.
pub const SUPPLIER_CODES_SKU: &str = "scodes";
/// The waitlists' bounds in the shop: fewer places per SKU than buyers, one waitlist per buyer
/// at a time (of three waitlisted SKUs), so both refusals are reached. Tokens live the default
/// 300 s.
pub const WAITLIST_MAX_PER_SKU: u32 = 3;
pub const WAITLIST_MAX_PER_USER: u32 = 1;

/// What the simulator needs to know about a SKU to order it.
#[derive(Clone, Debug)]
pub struct Item {
    pub sku: Sku,
    /// A calendar SKU's dates (a line takes one or both).
    pub dates: Vec<Day>,
    /// Whether the campaign sells it.
    pub in_campaign: bool,
}

struct Def {
    name: &'static str,
    price: u64,
    shards: u16,
    limit: Option<u32>,
    model: InventoryModel,
    stock: i64,
    bundle: &'static [(&'static str, u32)],
}

fn defs() -> Vec<Def> {
    let m = |management, unit, deduct| InventoryModel { management, unit, deduct, ..Default::default() };
    let q = InventoryModel::default();
    let d = |name, price, shards, limit, model, stock| Def { name, price, shards, limit, model, stock, bundle: &[] };
    vec![
        d("qty-a", 500, 2, Some(3), q, 6),
        d("qty-b", 300, 1, None, q, 4),
        d("paytime", 200, 1, Some(2), m(Management::Quantity, Unit::Single, Deduct::AtPayment), 3),
        // held from the order, taken when shipped, given back by a refund before shipping
        d("atship", 250, 2, Some(2), m(Management::Quantity, Unit::Single, Deduct::AtShipment), 4),
        d("unlimited", 100, 1, None, m(Management::Unlimited, Unit::Single, Deduct::AtOrder), 0),
        d("codes", 700, 1, Some(2), m(Management::CodePool, Unit::Single, Deduct::AtOrder), 5),
        d("cal", 900, 1, Some(4), m(Management::Quantity, Unit::Calendar, Deduct::AtOrder), 2),
        Def {
            bundle: &[("qty-b", 1)],
            ..d("bundle", 650, 1, None, m(Management::Quantity, Unit::Bundle, Deduct::AtOrder), 0)
        },
        d("supp", 1200, 1, Some(2), m(Management::Supplier, Unit::Single, Deduct::AtOrder), 0),
        // the drop's SKU: sold through its queued campaign and to ordinary checkouts as well
        d(DROP_SKU, 800, 1, None, q, 4),
        // few units, sold to ordinary checkouts: sold out often, its waitlist told when they come back
        d(NOTIFY_SKU, 400, 1, None, q, 2),
        // kept per warehouse, lines split over them (docs/inventory-models.md, "Warehouses"):
        // stocked by [`WAREHOUSES`], so a line of 2 is taken whole from BJ, then split
        d("wh", 350, 1, None, m(Management::Quantity, Unit::Warehouse, Deduct::AtOrder), 0),
        // sold short: 2 units over 2 shards, restocked by its own actor (lines of up to 3)
        d(BACKORDER_SKU, 450, 2, None, InventoryModel { oversell: Oversell::Backorder, ..q }, 2),
        // booked at the (in-memory) supplier, which issues its codes at payment
        d(SUPPLIER_CODES_SKU, 1500, 1, Some(2), m(Management::Supplier, Unit::Code, Deduct::AtOrder), 0),
    ]
}

/// The warehoused SKU's warehouses (declared order) and the units each is stocked with.
pub const WAREHOUSES: &[(&str, i64)] = &[("SH", 1), ("BJ", 2), ("GZ", 1)];

/// Creates the warehoused SKU `sku` (allocation `split`) and stocks each of [`WAREHOUSES`].
async fn open_warehoused(app: &App, sku: &Sku, spec: &SkuSpec) -> anyhow::Result<()> {
    let list =
        WAREHOUSES.iter().map(|(w, _)| Warehouse::parse(w).map_err(anyhow::Error::msg)).collect::<Result<_, _>>()?;
    let stores = Warehouses { list, allocation: Allocation::Split };
    admin::put_sku_with(app, sku, spec, Some(&stores), Some("sim")).await.map_err(|e| anyhow::anyhow!("{sku}: {e}"))?;
    for ((_, units), w) in WAREHOUSES.iter().zip(&stores.list) {
        admin::adjust_warehouse(app, sku, w, "init", *units, "stock", Some("sim"))
            .await
            .map_err(|e| anyhow::anyhow!("{sku} in {w}: {e}"))?;
    }
    Ok(())
}

pub fn days() -> Vec<Day> {
    let s = T0_MS / 1000;
    vec![Day::of_epoch_s(s + 86_400), Day::of_epoch_s(s + 2 * 86_400)]
}

/// Creates the shop; returns its items in a fixed order.
pub async fn open(app: &App) -> anyhow::Result<Vec<Item>> {
    let eur = Currency::parse("EUR")?;
    let mut items = Vec::new();
    for d in defs() {
        let sku = Sku::parse(d.name)?;
        let bundle = d
            .bundle
            .iter()
            .map(|(c, n)| Ok(BundleChild { sku: Sku::parse(c)?, quantity: *n }))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let supplier = (d.model.management == Management::Supplier).then(SupplierConfig::simulated);
        let spec = SkuSpec {
            controls: Default::default(),
            name: d.name.into(),
            price: d.price,
            currency: eur.clone(),
            shards: d.shards,
            per_user_limit: d.limit,
            model: d.model,
            bundle,
            supplier,
        };
        if d.model.unit == Unit::Warehouse {
            open_warehoused(app, &sku, &spec).await?;
            items.push(Item { sku, dates: Vec::new(), in_campaign: false });
            continue;
        }
        admin::put_sku(app, &sku, &spec, Some("sim")).await.map_err(|e| anyhow::anyhow!("{}: {e}", d.name))?;
        let dates = if d.model.unit == Unit::Calendar { days() } else { Vec::new() };
        if d.model.management == Management::CodePool {
            let codes: Vec<String> = (0..d.stock).map(|i| format!("GIFT-{i:04}-SIMCODE")).collect();
            codes::upload(app, &sku, "b1", &codes, Some("sim")).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        } else if d.stock > 0 {
            admin::adjust(app, &sku, "init", d.stock, "stock", Some("sim"), &dates)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", d.name))?;
        }
        let in_campaign = matches!(d.name, "qty-a" | "paytime" | "codes");
        items.push(Item { sku, dates, in_campaign });
    }
    let item = |name: &str, price, quota| -> anyhow::Result<CampaignItem> {
        Ok(CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku: Sku::parse(name)?,
            price: Some(price),
            per_user_limit: Some(2),
            shards: 1,
            quota,
        })
    };
    let spec = CampaignSpec {
        end_grace_s: 0,
        queue: None,
        name: "flash sale".into(),
        starts_at: T0_MS / 1000 - 3_600,
        // ends inside most runs, so checkouts meet the window's end
        ends_at: T0_MS / 1000 + 2 * 3_600,
        items: vec![waved(item("qty-a", 400, 3)?), item("paytime", 150, 2)?, item("codes", 500, 2)?],
    };
    campaigns::put(app, &CampaignId::parse(CAMPAIGN)?, &spec).await.map_err(|e| anyhow::anyhow!("campaign: {e}"))?;
    Ok(items)
}

/// `qty-a` drops in two waves (docs/campaigns.md, "Waves"): 1 unit for the first half hour, 2
/// after it, and what the first wave leaves unsold rolls into the second when reconcile runs.
fn waved(item: CampaignItem) -> CampaignItem {
    let t0 = T0_MS / 1000;
    let wave = |starts_at, ends_at, quota| Wave { starts_at, ends_at, quota, rolled_in: 0, rolled_out: 0 };
    let list = vec![wave(t0 - 3_600, t0 + 1_800, 1), wave(t0 + 1_800, t0 + 2 * 3_600, item.quota - 1)];
    CampaignItem { waves: Some(Waves { unsold: Unsold::Roll, list }), ..item }
}

/// A fresh id for this run's queued campaign. The queue service caches what it read of a
/// campaign's stock per process, keyed by campaign id and stamped with the (virtual) clock; every
/// run starts its clock again at [`T0_MS`], so a run must never meet an earlier run's entry.
pub fn drop_id() -> CampaignId {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    CampaignId::parse(&format!("drop{}", RUNS.fetch_add(1, Ordering::Relaxed))).expect("campaign id")
}

/// Opens the drop: campaign `id` over [`DROP_SKU`] with quota [`DROP_QUOTA`] (one per buyer),
/// behind the queue [`DROP_QUEUE`]. It starts ten minutes into the run (buyers join before)
/// and ends three hours in.
pub async fn open_drop(app: &App, id: &CampaignId) -> anyhow::Result<()> {
    let spec = CampaignSpec {
        end_grace_s: 0,
        queue: Some(DROP_QUEUE),
        name: "queued drop".into(),
        starts_at: T0_MS / 1000 + 600,
        ends_at: T0_MS / 1000 + 3 * 3_600,
        items: vec![CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku: Sku::parse(DROP_SKU)?,
            price: Some(600),
            per_user_limit: Some(1),
            shards: 1,
            quota: DROP_QUOTA,
        }],
    };
    campaigns::put(app, id, &spec).await.map_err(|e| anyhow::anyhow!("drop: {e}"))?;
    Ok(())
}

/// Brings the queue service's process-wide ticket-counter cursor to a multiple of 16.
///
/// `service::queue::join` spreads a warm Lambda's joins over the counters from a cursor drawn
/// once per process and kept across calls. Ticket numbers (and so FIFO positions and admission
/// times) depend on it, so without this a seed would not replay the same alone as within a
/// range. Joins to a throw-away queue with 16 counters, in a world of its own, until the last
/// one took counter 15: the next join of any queue then starts at counter 0. The caller reseeds
/// `fastrand` afterwards (the cursor's first draw comes from it).
pub async fn align_ticket_cursor(config: Config) -> anyhow::Result<()> {
    let (app, _world) = memory_app("sim-align", config)?;
    let sku = Sku::parse("align")?;
    let spec = SkuSpec {
        controls: Default::default(),
        name: "align".into(),
        price: 1,
        currency: Currency::parse("EUR")?,
        shards: 1,
        per_user_limit: None,
        model: InventoryModel::default(),
        bundle: Vec::new(),
        supplier: None,
    };
    admin::put_sku(&app, &sku, &spec, Some("sim")).await.map_err(|e| anyhow::anyhow!("align: {e}"))?;
    admin::adjust(&app, &sku, "init", 1, "stock", Some("sim"), &[]).await.map_err(|e| anyhow::anyhow!("align: {e}"))?;
    let id = CampaignId::parse("align")?;
    let c = CampaignSpec {
        end_grace_s: 0,
        queue: Some(QueueSettings { counters: 16, ..DROP_QUEUE }),
        name: "align".into(),
        starts_at: T0_MS / 1000 - 3_600,
        ends_at: T0_MS / 1000 + 3_600,
        items: vec![CampaignItem {
            reserve: false,
            waves: None,
            admission_rate: None,
            sku,
            price: None,
            per_user_limit: None,
            shards: 1,
            quota: 1,
        }],
    };
    campaigns::put(&app, &id, &c).await.map_err(|e| anyhow::anyhow!("align: {e}"))?;
    for i in 0..16 {
        let (place, _) =
            queue::join(&app, &UserId::parse(&format!("a{i}"))?, &id).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let number = place.ticket.ok_or_else(|| anyhow::anyhow!("align: no ticket"))?;
        if (number - 1) % 16 == 15 {
            return Ok(());
        }
    }
    anyhow::bail!("align: 16 joins never took counter 15")
}

/// The order record of a drawn checkout (docs/order-record.md), by a die of six: none (three
/// faces), a delivery with a remark, the same with a discount of 100 minor units (refused when
/// the lines cost no more than that), or a discount of one unit alone.
pub fn order_details(face: u8) -> holdfast::domain::order::OrderDetails {
    use holdfast::domain::order::{Delivery, OrderDetails};
    let delivery = || Delivery {
        name: "Sim Buyer".into(),
        phone: "+44 20 7946 0000".into(),
        address: vec!["1 Test Street".into(), "Flat 2".into()],
        postcode: Some("EC1A 1BB".into()),
        country: "GB".into(),
    };
    match face {
        3 => OrderDetails { delivery: Some(delivery()), remark: Some("leave with the porter".into()), discount: 0 },
        4 => OrderDetails { delivery: Some(delivery()), remark: None, discount: 100 },
        5 => OrderDetails { discount: 1, ..OrderDetails::default() },
        _ => OrderDetails::default(),
    }
}
