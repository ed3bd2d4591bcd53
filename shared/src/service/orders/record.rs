//! The order record at checkout (docs/order-record.md): the hash an `Idempotency-Key` is bound to
//! covers it, and a discount is judged against the amount before anything is written.

use super::{request_hash, CreateError};
use crate::context::App;
use crate::domain::campaign::Campaign;
use crate::domain::order::details::DiscountError;
use crate::domain::order::{Order, OrderDetails, OrderRecord};
use crate::domain::{OrderId, ReservationId};
use crate::ports::SkuMeta;
use crate::service::stock::{self, LineRequest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The fingerprint of a checkout: its lines' [`request_hash`], and the record when one is given
/// (a checkout without one hashes as it always did). The same key with another delivery, remark
/// or discount is a reused key, as another body always was.
pub fn checkout_hash(lines: &[LineRequest], details: &OrderDetails) -> String {
    let lines_hash = request_hash(lines);
    if details.is_empty() {
        return lines_hash;
    }
    let mut h = Sha256::new();
    h.update(lines_hash.as_bytes());
    h.update(b"\n#record\n");
    // field order is fixed by the struct, so equal records serialise to equal bytes
    h.update(serde_json::to_vec(details).unwrap_or_default());
    hex::encode(&h.finalize()[..16])
}

/// What the lines will cost, priced as the freeze prices them (a campaign item's price, else the
/// SKU's; per date for a dated line): what a discount is judged against before the freeze.
pub fn expected_amount(
    lines: &[LineRequest],
    metas: &HashMap<crate::domain::Sku, SkuMeta>,
    campaigns: &[Option<Campaign>],
) -> u64 {
    lines
        .iter()
        .zip(campaigns)
        .map(|(l, c)| {
            let list = metas.get(&l.sku).map_or(0, |m| m.price);
            let price = c.as_ref().and_then(|c| c.item(&l.sku)).and_then(|i| i.price).unwrap_or(list);
            let units =
                u64::from(l.quantity.get()).saturating_mul(u64::try_from(l.dates.len().max(1)).unwrap_or(u64::MAX));
            price.saturating_mul(units)
        })
        .fold(0u64, u64::saturating_add)
}

/// A discount the frozen amount cannot carry (a price changed between the check before the
/// freeze and the freeze itself): the id is voided and the stock released, as for any checkout
/// that cannot write its order, and the buyer is told why. If the order was written meanwhile
/// by a replay of the same checkout, that order is the answer.
pub async fn refuse_after_freeze(
    app: &App,
    id: &OrderId,
    hash: &str,
    e: DiscountError,
) -> Result<(Order, bool), CreateError> {
    if app.orders.put_void(id).await? {
        stock::release(app, &ReservationId::for_order(id))
            .await
            .map_err(|e| CreateError::Store(anyhow::anyhow!("{e}")))?;
        return Err(CreateError::Discount(e));
    }
    match app.orders.get(id).await? {
        Some(OrderRecord::Order(o)) if o.request_hash == hash => Ok((*o, true)),
        Some(OrderRecord::Order(_)) => Err(CreateError::KeyReused),
        _ => Err(CreateError::Discount(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::order::Delivery;
    use crate::domain::{Quantity, Sku};

    fn lines() -> Vec<LineRequest> {
        vec![LineRequest::plain(Sku::parse("A").unwrap(), Quantity::new(2).unwrap())]
    }

    #[test]
    fn a_checkout_without_a_record_hashes_as_before_and_any_record_change_changes_the_hash() {
        let plain = checkout_hash(&lines(), &OrderDetails::default());
        assert_eq!(plain, request_hash(&lines()));
        let delivery = |name: &str| Delivery {
            name: name.into(),
            phone: "+33 1 23 45 67 89".into(),
            address: vec!["1 rue de Rivoli".into()],
            postcode: Some("75001".into()),
            country: "FR".into(),
        };
        let a = OrderDetails { delivery: Some(delivery("Léa")), remark: None, discount: 0 };
        let b = OrderDetails { delivery: Some(delivery("Lea")), ..a.clone() };
        let c = OrderDetails { discount: 1, ..a.clone() };
        let d = OrderDetails { remark: Some("x".into()), ..a.clone() };
        let hashes = [
            plain,
            checkout_hash(&lines(), &a),
            checkout_hash(&lines(), &b),
            checkout_hash(&lines(), &c),
            checkout_hash(&lines(), &d),
        ];
        for (i, x) in hashes.iter().enumerate() {
            assert!(hashes.iter().skip(i + 1).all(|y| y != x), "{hashes:?}");
        }
        assert_eq!(checkout_hash(&lines(), &a), checkout_hash(&lines(), &a.clone()), "stable");
    }
}
