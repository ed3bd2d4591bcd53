//! Warehouses: a counted SKU's stock kept per warehouse (docs/inventory-models.md, "Warehouses").
//!
//! A SKU whose model has unit `WAREHOUSE` declares its warehouses (`["SH","BJ"]`) and an
//! allocation policy. Each warehouse is a stock *cell* of the SKU (`<sku>~<warehouse>`, its own
//! metadata and shards, exactly like a calendar date's cell), so the freeze, confirm, release,
//! restock, reconcile and the invariants move it as they move any cell, and a lock's draws
//! record which warehouses a line came from. Here: the ids, the policy and the one pure choice
//! of how a line is spread over the warehouses ([`allocate`]).

use super::allocation::Shortfall;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Most warehouses one SKU may declare.
pub const MAX_WAREHOUSES: usize = 8;
/// Longest warehouse id.
pub const MAX_WAREHOUSE_LEN: usize = 16;

/// A warehouse id: 1–16 characters of `[A-Za-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Warehouse(String);

impl Warehouse {
    pub fn parse(s: &str) -> Result<Warehouse, String> {
        let ok = !s.is_empty()
            && s.len() <= MAX_WAREHOUSE_LEN
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            Ok(Warehouse(s.to_owned()))
        } else {
            Err(format!("{s:?} is not a warehouse id (1-{MAX_WAREHOUSE_LEN} characters of A-Z a-z 0-9 _ -)"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Warehouse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Warehouse {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Warehouse, D::Error> {
        let s = String::deserialize(d)?;
        Warehouse::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// How an order line is spread over a SKU's warehouses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Allocation {
    /// The whole line from one warehouse: the first in declared order that holds it. Sold out
    /// when none does, even if the warehouses together would.
    #[default]
    Single,
    /// From as few warehouses as possible: one if any holds the line (first in declared order),
    /// else the fullest first.
    Split,
}

/// A warehoused SKU's warehouses (declared order = preference order) and policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warehouses {
    pub list: Vec<Warehouse>,
    pub allocation: Allocation,
}

/// How `quantity` units of a line are taken from warehouses whose `available` units are given
/// (declared order): `(index, units)` pieces, never more from one than it has. `Single`: the
/// first warehouse that holds the whole line. `Split`: the same when one can; otherwise the
/// fullest first (ties in declared order), which needs the fewest warehouses — the shape of
/// [`super::allocation::split`] over shards. The shortfall names what the policy could give.
pub fn allocate(policy: Allocation, available: &[i64], quantity: u32) -> Result<Vec<(usize, u32)>, Shortfall> {
    let q = i64::from(quantity);
    if let Some(i) = available.iter().position(|a| *a >= q) {
        return Ok(vec![(i, quantity)]);
    }
    if policy == Allocation::Single {
        return Err(Shortfall { available: available.iter().copied().max().unwrap_or(0).max(0) });
    }
    let pieces = super::allocation::split(available, 0, quantity)?;
    Ok(pieces.into_iter().map(|p| (usize::from(p.shard), p.quantity)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_tokens() {
        assert!(Warehouse::parse("SH").is_ok());
        assert!(Warehouse::parse("bj-2_x").is_ok());
        for bad in ["", "a b", "SH~1", "x".repeat(17).as_str(), "上海"] {
            assert!(Warehouse::parse(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Warehouse>("\"a/b\"").is_err());
        assert_eq!(serde_json::from_str::<Allocation>("\"split\"").unwrap(), Allocation::Split);
        assert!(serde_json::from_str::<Allocation>("\"SPLIT\"").is_err());
    }

    #[test]
    fn single_takes_the_whole_line_from_the_first_warehouse_that_holds_it() {
        assert_eq!(allocate(Allocation::Single, &[2, 5, 9], 4), Ok(vec![(1, 4)]));
        assert_eq!(allocate(Allocation::Single, &[4, 5], 4), Ok(vec![(0, 4)]));
        // the sum would do, no warehouse alone does: sold out
        assert_eq!(allocate(Allocation::Single, &[3, 3], 4), Err(Shortfall { available: 3 }));
        assert_eq!(allocate(Allocation::Single, &[-1, 0], 1), Err(Shortfall { available: 0 }));
        assert_eq!(allocate(Allocation::Single, &[], 1), Err(Shortfall { available: 0 }));
    }

    #[test]
    fn split_uses_as_few_warehouses_as_possible() {
        assert_eq!(allocate(Allocation::Split, &[2, 5, 9], 4), Ok(vec![(1, 4)]));
        assert_eq!(allocate(Allocation::Split, &[3, 3], 4), Ok(vec![(0, 3), (1, 1)]));
        assert_eq!(allocate(Allocation::Split, &[1, 2, 3], 5), Ok(vec![(2, 3), (1, 2)]));
        assert_eq!(allocate(Allocation::Split, &[1, 1], 3), Err(Shortfall { available: 2 }));
    }

    #[test]
    fn allocations_never_take_more_than_a_warehouse_has_and_split_is_minimal() {
        let mut rng = fastrand::Rng::with_seed(37);
        for _ in 0..2_000 {
            let n = rng.usize(1..=MAX_WAREHOUSES);
            let av: Vec<i64> = (0..n).map(|_| rng.i64(-1..8)).collect();
            let q = rng.u32(1..=20);
            for policy in [Allocation::Single, Allocation::Split] {
                match allocate(policy, &av, q) {
                    Ok(p) => {
                        assert_eq!(p.iter().map(|x| x.1).sum::<u32>(), q);
                        assert!(p.iter().all(|(i, u)| *u > 0 && i64::from(*u) <= av[*i]));
                        if policy == Allocation::Single {
                            assert_eq!(p.len(), 1);
                        }
                        // no fewer warehouses could hold the line
                        let mut sorted = av.clone();
                        sorted.sort_unstable_by(|a, b| b.cmp(a));
                        let fewer: i64 = sorted.iter().take(p.len() - 1).map(|a| (*a).max(0)).sum();
                        assert!(fewer < i64::from(q), "{av:?} {q} {p:?}");
                    }
                    Err(s) => match policy {
                        Allocation::Single => assert!(av.iter().all(|a| *a < i64::from(q))),
                        Allocation::Split => {
                            assert!(s.available < i64::from(q));
                            assert_eq!(s.available, av.iter().map(|a| (*a).max(0)).sum::<i64>());
                        }
                    },
                }
            }
        }
    }
}
