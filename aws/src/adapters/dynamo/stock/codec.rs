//! Items of the stock table to and from domain types: SKU metadata, lock records and codes.

use super::*;

/// A code item: `xat` its expire time and `rdm` its redemption (epoch ms), when it has them
/// (docs/code-pools.md, "Storage").
pub(super) fn encode_code(pk: String, c: &StoredCode) -> Item {
    let mut it = values([
        ("pk", s(pk)),
        ("fp", s(c.fingerprint.clone())),
        ("kid", s(c.kid.clone())),
        ("sc", s(c.sealed.clone())),
    ]);
    if let Some(x) = c.expires_at_ms {
        it.insert("xat".into(), n(x));
    }
    if let Some(r) = c.redeemed_at_ms {
        it.insert("rdm".into(), n(r));
    }
    it
}

pub(super) fn decode_code(it: &Item) -> anyhow::Result<StoredCode> {
    Ok(StoredCode {
        fingerprint: get_s(it, "fp")?.to_owned(),
        kid: get_s(it, "kid")?.to_owned(),
        sealed: get_s(it, "sc")?.to_owned(),
        expires_at_ms: opt_n(it, "xat"),
        redeemed_at_ms: opt_n(it, "rdm"),
    })
}

pub(super) fn decode_ring(it: &Item) -> Ring {
    Ring {
        head: opt_n(it, "chd").unwrap_or(0),
        tail: opt_n(it, "ctl").unwrap_or(0),
        uploaded: opt_n(it, "cup").unwrap_or(0),
        claimed_at_ms: opt_n(it, "cht").unwrap_or(0),
        checked: opt_n(it, "cck").unwrap_or(0),
        expired: opt_n(it, "cxp").unwrap_or(0),
        expiring: it.contains_key("cxe"),
    }
}

/// A model, bundle or supplier setting that does not serialise is an error: nothing is stored
/// in its place.
pub(super) fn encode_meta(m: &SkuMeta) -> anyhow::Result<Item> {
    let mut it = values([
        ("pk", s(meta_pk(&m.sku))),
        ("sku", s(m.sku.as_str())),
        ("skl", s("SKU")),
        ("name", s(m.name.clone())),
        ("price", n(m.price)),
        ("cur", s(m.currency.as_str())),
        ("shards", n(m.shards)),
        ("slots", n(m.slots)),
        ("stocked", n(m.stocked)),
        ("v", n(m.version)),
    ]);
    if let Some(l) = m.per_user_limit {
        it.insert("lim".into(), n(l));
    }
    if m.paused {
        it.insert("ps".into(), AttributeValue::Bool(true));
    }
    // the default model and an empty bundle are absent: every SKU stored before models exists
    // reads back unchanged
    if !m.model.is_default() {
        it.insert("mdl".into(), s(serde_json::to_string(&m.model).context("SKU model")?));
    }
    if !m.bundle.is_empty() {
        it.insert("bdl".into(), s(serde_json::to_string(&m.bundle).context("SKU bundle")?));
    }
    if let Some(c) = &m.supplier {
        it.insert("sup".into(), s(serde_json::to_string(c).context("SKU supplier settings")?));
    }
    if let Some(r) = m.controls.admission_rate {
        it.insert("adm".into(), n(r));
    }
    if let Some(l) = m.controls.low_stock_threshold {
        it.insert("low".into(), n(l));
    }
    if !m.fences.is_empty() {
        it.insert("fen".into(), s(serde_json::to_string(&m.fences).context("SKU fences")?));
    }
    if let Some(w) = &m.warehouses {
        it.insert("whs".into(), s(serde_json::to_string(w).context("SKU warehouses")?));
    }
    Ok(it)
}

pub(super) fn decode_meta(it: &Item) -> anyhow::Result<SkuMeta> {
    Ok(SkuMeta {
        sku: Sku::from_stored(get_s(it, "sku")?)?,
        name: get_s(it, "name")?.to_owned(),
        price: get_n(it, "price")?,
        currency: Currency::parse(get_s(it, "cur")?)?,
        shards: get_n(it, "shards")?,
        slots: get_n(it, "slots")?,
        per_user_limit: opt_n(it, "lim"),
        stocked: get_n(it, "stocked")?,
        version: get_n(it, "v")?,
        paused: matches!(it.get("ps"), Some(AttributeValue::Bool(true))),
        model: opt_s(it, "mdl").map(serde_json::from_str).transpose().context("inventory model")?.unwrap_or_default(),
        bundle: opt_s(it, "bdl").map(serde_json::from_str).transpose().context("bundle")?.unwrap_or_default(),
        supplier: opt_s(it, "sup").map(serde_json::from_str).transpose().context("supplier settings")?,
        controls: crate::ports::SkuControls { admission_rate: opt_n(it, "adm"), low_stock_threshold: opt_n(it, "low") },
        fences: opt_s(it, "fen").map(serde_json::from_str).transpose().context("SKU fences")?.unwrap_or_default(),
        warehouses: opt_s(it, "whs").map(serde_json::from_str).transpose().context("SKU warehouses")?,
    })
}

pub(super) fn encode_reservation(r: &Reservation) -> anyhow::Result<Item> {
    let mut it = values([
        ("pk", s(res_pk(&r.id))),
        ("st", s(r.status.as_str())),
        ("kind", s(r.kind.as_str())),
        ("rh", s(r.request_hash.clone())),
        ("ca", n(r.created_at_ms)),
        ("ex", n(r.expires_at)),
        ("ln", s(serde_json::to_string(&r.lines)?)),
    ]);
    if let Some(u) = &r.user {
        it.insert("uid".into(), s(u.as_str()));
    }
    if r.pending {
        it.insert("pc".into(), AttributeValue::Bool(true));
    }
    if r.status == LockStatus::Frozen {
        it.insert("fzb".into(), s(format!("F#{}", bucket_of(r.id.as_str()))));
        it.insert("fza".into(), n(r.created_at_ms));
    }
    Ok(it)
}

pub(super) fn decode_reservation(it: &Item) -> anyhow::Result<Reservation> {
    let pk = get_s(it, "pk")?;
    let id = pk.strip_prefix("RES#").ok_or_else(|| anyhow!("not a reservation: {pk}"))?;
    let kind = match get_s(it, "kind")? {
        "order" => ReservationKind::Order,
        "external" => ReservationKind::External,
        k => return Err(anyhow!("unknown reservation kind {k}")),
    };
    Ok(Reservation {
        id: ReservationId::from_stored(id)?,
        kind,
        status: LockStatus::parse(get_s(it, "st")?).ok_or_else(|| anyhow!("bad lock status"))?,
        user: opt_s(it, "uid").map(UserId::parse).transpose()?,
        request_hash: get_s(it, "rh")?.to_owned(),
        created_at_ms: get_n(it, "ca")?,
        expires_at: get_n(it, "ex")?,
        lines: serde_json::from_str::<Vec<ReservedLine>>(get_s(it, "ln")?).context("reservation lines")?,
        oversold: it.contains_key("ov"),
        pending: it.contains_key("pc"),
        code_fate: opt_s(it, "cf")
            .map(|f| CodeFate::parse(f).ok_or_else(|| anyhow!("bad code fate {f}")))
            .transpose()?,
    })
}
