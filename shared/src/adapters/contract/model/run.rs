//! Runs a case against a real store and the model side by side, comparing after every step.

use super::*;

/// How often each call got each answer (`"freeze: ShardShort"`, `"retake: Ok"`, ...): what a run
/// reached.
pub type Tally = BTreeMap<String, u64>;

/// Runs `case` on `store` under names made from `prefix` (fresh for each case): the setup
/// through the port, then each operation; `Err` says the first step where the store's answer
/// or anything observable differed from the model's. Counts each answer in `tally`.
pub async fn run_case(store: &dyn StockStore, prefix: &str, case: &Case, tally: &mut Tally) -> Result<(), String> {
    let mut model = Model::new(prefix, case);
    setup(store, &model, case).await.map_err(|e| format!("setup failed: {e:#}"))?;
    compare(store, &model, "after the setup").await?;
    for (i, op) in case.ops.iter().enumerate() {
        model.step = i;
        let call = model.call(op);
        let want = model.apply(&call);
        let got = perform(store, &call).await.map_err(|e| format!("step {i} {op:?}: the store failed: {e:#}"))?;
        if got != want {
            return Err(format!(
                "step {i} {op:?}: the store answered {got:?}, the model {want:?}\n  the call: {call:?}"
            ));
        }
        *tally.entry(label(&call, &got)).or_default() += 1;
        compare(store, &model, &format!("step {i} {op:?}")).await?;
    }
    Ok(())
}

/// A call's kind and its answer's, without the names.
pub fn label(call: &Call, answer: &Answer) -> String {
    let kind = match call {
        Call::Freeze(..) => "freeze",
        Call::Move(_, LockStatus::Sold) => "confirm",
        Call::Move(..) => "release",
        Call::Retake(_) => "retake",
        Call::Restock(_) => "restock",
        Call::MarkOversold(_) => "mark oversold",
        Call::Adjust(_) => "adjust",
        Call::AdjustPair(..) => "fence",
        Call::Pause(..) => "stop-sale",
        Call::WriteCampaign(..) => "campaign pause",
        Call::AdjustCampaign(..) => "campaign adjust",
        Call::Rebalance { .. } => "rebalance",
    };
    let answer = match answer {
        Answer::Freeze(Ok(())) | Answer::Move(Ok(())) | Answer::Adjust(Ok(())) => "Ok".to_owned(),
        Answer::Freeze(Err(e)) => format!("{e:?}").split('(').next().unwrap_or_default().to_owned(),
        Answer::Move(Err(e)) => format!("{e:?}"),
        Answer::Adjust(Err(e)) => format!("{e:?}").split(' ').next().unwrap_or_default().to_owned(),
        Answer::Written(w) => w.to_string(),
    };
    format!("{kind}: {answer}")
}

async fn setup(store: &dyn StockStore, model: &Model, case: &Case) -> anyhow::Result<()> {
    for (k, stock) in model.skus.iter().zip([&case.a_stock, &case.b_stock]) {
        let created = SkuMeta { version: 1, stocked: 0, ..k.meta.clone() };
        anyhow::ensure!(store.put_sku(&created, None).await?, "put_sku {}", k.meta.sku);
        let pieces: Vec<(u16, i64)> =
            stock.iter().enumerate().filter(|(_, u)| **u != 0).map(|(i, u)| (i as u16, *u)).collect();
        if !pieces.is_empty() {
            let seeded = store.adjust(&adjustment(&k.meta.sku, "seed", &pieces), 0).await?;
            anyhow::ensure!(seeded.is_ok(), "seed {}: {seeded:?}", k.meta.sku);
        }
    }
    anyhow::ensure!(store.write_campaign(&model.campaign.campaign, None).await?, "write_campaign");
    Ok(())
}

/// Asks the store.
pub async fn perform(store: &dyn StockStore, call: &Call) -> anyhow::Result<Answer> {
    Ok(match call {
        Call::Freeze(r, limits) => Answer::Freeze(store.put_frozen(r, limits).await?),
        Call::Move(r, to) => Answer::Move(store.move_lock(r, *to).await?),
        Call::Retake(r) => Answer::Move(store.retake(r).await?),
        Call::Restock(r) => Answer::Move(store.restock(r).await?),
        Call::MarkOversold(r) => Answer::Written(store.mark_oversold(r).await?),
        Call::Adjust(adj) => Answer::Adjust(store.adjust(adj, 0).await?),
        Call::AdjustPair(out, into) => Answer::Adjust(store.adjust_pair(out, into).await?),
        Call::Pause(next, expected) => Answer::Written(store.set_sku_paused(next, *expected).await?),
        Call::WriteCampaign(c, expected) => Answer::Written(store.write_campaign(c, Some(*expected)).await?),
        Call::AdjustCampaign(adj, next, expected) => Answer::Adjust(store.adjust_campaign(adj, next, *expected).await?),
        Call::Rebalance { meta, expected, old, new_available } => {
            let cause = Cause::new(format!("rebalance-v{}", meta.version), Some("model-admin"), "rebalance");
            Answer::Written(store.rebalance(meta, *expected, old, new_available, &cause).await?)
        }
    })
}

/// What the store shows through the port, for the names of `model`.
pub async fn observe(store: &dyn StockStore, model: &Model) -> anyhow::Result<Seen> {
    let triple = |c: &crate::domain::invariants::ShardCounts| (c.available, c.locked, c.sold);
    let skus: Vec<Sku> = model.skus.iter().map(|k| k.meta.sku.clone()).collect();
    let metas = store.get_skus(&skus).await?;
    let mut seen_metas = Vec::new();
    let mut shards = Vec::new();
    for sku in &skus {
        let m = metas.get(sku).ok_or_else(|| anyhow::anyhow!("{sku} is gone"))?;
        seen_metas.push((m.slots, m.stocked, m.version, m.paused));
        shards.push(store.read_shards(sku, READ_SLOTS).await?.iter().map(triple).collect());
    }
    let c = &model.campaign.campaign;
    let stored = store.get_campaign(&c.id, true).await?.ok_or_else(|| anyhow::anyhow!("the campaign is gone"))?;
    let quota = store.read_quota_shards(&c.id, &skus[0], c.items[0].shards, true).await?;
    let mut named = Vec::new();
    for n in 0..USERS {
        let u = model.user(n);
        for sku in &skus {
            named.push((format!("limit {sku} {u}"), Counter::Limit(sku.clone(), u.clone())));
        }
        named.push((format!("campaign {u}"), Counter::CampaignLimit(c.id.clone(), skus[0].clone(), u.clone())));
        named.push((format!("pending {u}"), Counter::Pending(u)));
    }
    let values = store.read_counters(&named.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>()).await?;
    let counters = named
        .into_iter()
        .filter_map(|(name, c)| values.get(&c).copied().filter(|n| *n != 0).map(|n| (name, n)))
        .collect();
    let ids: Vec<ReservationId> = model.locks.iter().map(|(r, _)| r.id.clone()).collect();
    let found = if ids.is_empty() { Vec::new() } else { store.get_reservations(&ids).await? };
    let locks = ids
        .iter()
        .map(|id| found.iter().find(|r| &r.id == id).map(|r| (r.status, r.oversold, r.lines.clone())))
        .collect();
    let mut spent = Vec::new();
    for t in 0..TICKETS {
        spent.push(store.spent(&c.id, t).await?);
    }
    Ok(Seen {
        metas: seen_metas,
        shards,
        campaign: (stored.version, stored.paused, stored.items.first().map_or(0, |i| i.quota)),
        quota: quota.iter().map(triple).collect(),
        counters,
        locks,
        spent,
    })
}

async fn compare(store: &dyn StockStore, model: &Model, when: &str) -> Result<(), String> {
    let got = observe(store, model).await.map_err(|e| format!("{when}: reading the store failed: {e:#}"))?;
    let want = model.seen();
    if got == want {
        return Ok(());
    }
    let status = |l: &[Option<(LockStatus, bool, Vec<ReservedLine>)>]| -> Vec<Option<(LockStatus, bool)>> {
        l.iter().map(|x| x.as_ref().map(|(s, o, _)| (*s, *o))).collect()
    };
    let fields = [
        ("metas (slots, stocked, version, paused)", format!("{:?}", got.metas), format!("{:?}", want.metas)),
        ("shards", format!("{:?}", got.shards), format!("{:?}", want.shards)),
        ("campaign (version, paused, quota)", format!("{:?}", got.campaign), format!("{:?}", want.campaign)),
        ("quota shards", format!("{:?}", got.quota), format!("{:?}", want.quota)),
        ("counters", format!("{:?}", got.counters), format!("{:?}", want.counters)),
        ("locks (status, oversold)", format!("{:?}", status(&got.locks)), format!("{:?}", status(&want.locks))),
        ("spent admissions", format!("{:?}", got.spent), format!("{:?}", want.spent)),
    ];
    let mut diffs: Vec<String> = fields
        .iter()
        .filter(|(_, g, w)| g != w)
        .map(|(name, g, w)| format!("  {name}: store {g}\n  {:width$}  model {w}", "", width = name.len()))
        .collect();
    if status(&got.locks) == status(&want.locks) && got.locks != want.locks {
        diffs.push("  a lock's lines differ from those frozen".into());
    }
    Err(format!("{when}: the store differs from the model\n{}", diffs.join("\n")))
}
