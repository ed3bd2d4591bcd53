//! Shard allocation for hot SKUs (docs/architecture.md, "Hot SKUs").
//!
//! A SKU's stock is split over `shards` counters. A freeze first tries one shard chosen
//! deterministically from (order, sku), so a retried request is the same request and freezes
//! spread over all shards. When that shard is short, the caller reads every shard and
//! [`split`] takes the line from whichever shards hold stock. Sold-out is reported only when
//! the SKU as a whole lacks the quantity.

use super::{OrderId, Sku};
use sha2::{Digest, Sha256};

/// Most shards one SKU may have.
pub const MAX_SHARDS: u16 = 64;

/// One piece of a line: `quantity` units taken from shard `shard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Piece {
    pub shard: u16,
    pub quantity: u32,
}

/// The shard a freeze of `sku` for `order` tries first.
pub fn start_shard(order: &str, sku: &Sku, shards: u16) -> u16 {
    if shards <= 1 {
        return 0;
    }
    let mut h = Sha256::new();
    h.update(order.as_bytes());
    h.update([0u8]);
    h.update(sku.as_str().as_bytes());
    let d = h.finalize();
    let n = u16::from_be_bytes([d[0], d[1]]);
    n % shards
}

/// Convenience for Holdfast orders.
pub fn start_shard_for(order: &OrderId, sku: &Sku, shards: u16) -> u16 {
    start_shard(order.as_str(), sku, shards)
}

/// The SKU as a whole has fewer than the requested units available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    pub available: i64,
}

/// Splits `quantity` over shards whose `available` counts are given (index = shard), starting
/// from `start`. If one shard can take the whole line, the first such shard from `start` on is
/// used (one write). Otherwise the fullest shards are taken first, so a line needs as few
/// pieces as possible. Fails only when the shards together hold less than `quantity`.
pub fn split(available: &[i64], start: u16, quantity: u32) -> Result<Vec<Piece>, Shortfall> {
    let total: i64 = available.iter().map(|a| (*a).max(0)).sum();
    if total < i64::from(quantity) {
        return Err(Shortfall { available: total });
    }
    let n = available.len();
    let start = usize::from(start) % n.max(1);
    let q = i64::from(quantity);
    if let Some(i) = (0..n).map(|k| (start + k) % n).find(|&i| available[i] >= q) {
        return Ok(vec![Piece { shard: i as u16, quantity }]);
    }
    let mut order: Vec<usize> = (0..n).filter(|&i| available[i] > 0).collect();
    // fullest first; ties broken by distance from the start shard for spread
    order.sort_by_key(|&i| (std::cmp::Reverse(available[i]), (i + n - start) % n));
    let mut left = q;
    let mut pieces = Vec::new();
    for i in order {
        if left == 0 {
            break;
        }
        let take = available[i].min(left);
        pieces.push(Piece { shard: i as u16, quantity: take as u32 });
        left -= take;
    }
    Ok(pieces)
}

/// The per-shard changes of a stock (or quota) adjustment: an addition spread evenly over
/// `shards`; a removal taken from the shards' `available` counts (fullest first). `short` when
/// the shards cannot give the units: the whole delta is then planned on shard 0, so the write's
/// condition fails — and a replay of an adjustment that already removed them is still told apart
/// (a duplicate) from a real shortfall.
pub fn adjustment_pieces(delta: i64, shards: u16, available: &[i64]) -> (Vec<(u16, i64)>, bool) {
    if delta > 0 {
        let pieces =
            spread(delta, shards).into_iter().enumerate().filter(|(_, d)| *d > 0).map(|(i, d)| (i as u16, d)).collect();
        return (pieces, false);
    }
    match u32::try_from(delta.unsigned_abs()).ok().map(|want| split(available, 0, want)) {
        Some(Ok(pieces)) => (pieces.into_iter().map(|p| (p.shard, -i64::from(p.quantity))).collect(), false),
        _ => (vec![(0, delta)], true),
    }
}

/// Spreads `available` units evenly over `shards` counters (remainder to the lowest shards).
/// Used when the shard count of a SKU changes and when stock is added.
pub fn spread(available: i64, shards: u16) -> Vec<i64> {
    let n = i64::from(shards.max(1));
    let base = available / n;
    let extra = available % n;
    (0..n).map(|i| base + i64::from(i < extra)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku() -> Sku {
        Sku::parse("hot").unwrap()
    }

    #[test]
    fn start_shard_is_deterministic_and_in_range() {
        for s in [1u16, 2, 8, 64] {
            for o in 0..200 {
                let a = start_shard(&format!("o{o}"), &sku(), s);
                assert!(a < s);
                assert_eq!(a, start_shard(&format!("o{o}"), &sku(), s));
            }
        }
    }

    #[test]
    fn start_shards_spread_over_all_shards() {
        let mut seen = [0u32; 8];
        for o in 0..800 {
            seen[usize::from(start_shard(&format!("order-{o}"), &sku(), 8))] += 1;
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
    }

    #[test]
    fn a_shard_that_can_take_the_line_takes_it_whole() {
        assert_eq!(split(&[0, 5, 1], 0, 3).unwrap(), vec![Piece { shard: 1, quantity: 3 }]);
        assert_eq!(split(&[4, 5, 1], 1, 3).unwrap(), vec![Piece { shard: 1, quantity: 3 }]);
        assert_eq!(split(&[4, 0, 1], 1, 3).unwrap(), vec![Piece { shard: 0, quantity: 3 }]);
    }

    #[test]
    fn a_line_no_single_shard_holds_is_split_fullest_first() {
        let p = split(&[1, 2, 0, 1], 0, 3).unwrap();
        assert_eq!(p, vec![Piece { shard: 1, quantity: 2 }, Piece { shard: 0, quantity: 1 }]);
        let total: u32 = split(&[1, 1, 1, 1, 1, 1, 1, 1], 5, 8).unwrap().iter().map(|p| p.quantity).sum();
        assert_eq!(total, 8);
    }

    #[test]
    fn sold_out_only_when_the_whole_sku_lacks_stock() {
        assert_eq!(split(&[1, 1, 0], 0, 3), Err(Shortfall { available: 2 }));
        assert!(split(&[1, 1, 1], 2, 3).is_ok());
        assert_eq!(split(&[0, -1, 0], 0, 1), Err(Shortfall { available: 0 }));
    }

    #[test]
    fn split_never_takes_more_than_a_shard_has() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2_000 {
            let n = rng.usize(1..=16);
            let av: Vec<i64> = (0..n).map(|_| rng.i64(0..6)).collect();
            let q = rng.u32(1..=20);
            match split(&av, rng.u16(0..n as u16), q) {
                Ok(pieces) => {
                    assert_eq!(pieces.iter().map(|p| p.quantity).sum::<u32>(), q);
                    for p in &pieces {
                        assert!(i64::from(p.quantity) <= av[usize::from(p.shard)]);
                        assert!(p.quantity > 0);
                    }
                }
                Err(s) => assert!(s.available < i64::from(q)),
            }
        }
    }

    #[test]
    fn adjustments_spread_additions_and_take_removals_where_the_units_are() {
        assert_eq!(adjustment_pieces(10, 4, &[]), (vec![(0, 3), (1, 3), (2, 2), (3, 2)], false));
        assert_eq!(adjustment_pieces(-3, 2, &[1, 5]), (vec![(1, -3)], false));
        assert_eq!(adjustment_pieces(-7, 2, &[1, 5]), (vec![(0, -7)], true));
        assert_eq!(adjustment_pieces(i64::MIN, 2, &[1, 5]), (vec![(0, i64::MIN)], true));
    }

    #[test]
    fn spread_keeps_every_unit() {
        assert_eq!(spread(10, 4), vec![3, 3, 2, 2]);
        assert_eq!(spread(0, 3), vec![0, 0, 0]);
        assert_eq!(spread(7, 1), vec![7]);
        assert_eq!(spread(100, 8).iter().sum::<i64>(), 100);
    }
}
