//! The simulated shop: one SKU of every kind, a bundle over a quantity SKU, and a campaign over
//! three kinds — made through the admin services, as an operator would.

use holdfast::app::App;
use holdfast::domain::campaign::{CampaignItem, CampaignSpec};
use holdfast::domain::model::{BundleChild, Day, Deduct, InventoryModel, Management, Unit};
use holdfast::domain::supplier::SupplierConfig;
use holdfast::domain::{CampaignId, Currency, Sku};
use holdfast::service::admin::{self, SkuSpec};
use holdfast::service::{campaigns, codes};

/// Virtual start: 2026-12-01T00:00:00Z.
pub const T0_MS: i64 = 1_796_083_200_000;
pub const CAMPAIGN: &str = "flash";

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
    let m = |management, unit, deduct| InventoryModel { management, unit, deduct };
    let q = InventoryModel::default();
    let d = |name, price, shards, limit, model, stock| Def { name, price, shards, limit, model, stock, bundle: &[] };
    vec![
        d("qty-a", 500, 2, Some(3), q, 6),
        d("qty-b", 300, 1, None, q, 4),
        d("paytime", 200, 1, Some(2), m(Management::Quantity, Unit::Single, Deduct::AtPayment), 3),
        d("unlimited", 100, 1, None, m(Management::Unlimited, Unit::Single, Deduct::AtOrder), 0),
        d("codes", 700, 1, Some(2), m(Management::CodePool, Unit::Single, Deduct::AtOrder), 5),
        d("cal", 900, 1, Some(4), m(Management::Quantity, Unit::Calendar, Deduct::AtOrder), 2),
        Def {
            bundle: &[("qty-b", 1)],
            ..d("bundle", 650, 1, None, m(Management::Quantity, Unit::Bundle, Deduct::AtOrder), 0)
        },
        d("supp", 1200, 1, Some(2), m(Management::Supplier, Unit::Single, Deduct::AtOrder), 0),
    ]
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
        items: vec![item("qty-a", 400, 3)?, item("paytime", 150, 2)?, item("codes", 500, 2)?],
    };
    campaigns::put(app, &CampaignId::parse(CAMPAIGN)?, &spec).await.map_err(|e| anyhow::anyhow!("campaign: {e}"))?;
    Ok(items)
}
