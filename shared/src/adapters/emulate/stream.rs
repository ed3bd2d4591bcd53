//! `stream-split` (DESIGN §23): DynamoDB Streams as they are. One transaction's items are
//! separate stream records, ordered only per item: a consumer may see them in different
//! batches, interleaved with other transactions' records. The local stack's stream poller
//! (infra/src/pollers.rs) reshapes what it read with [`split_and_interleave`] when the switch is
//! on, so every stream consumer is proven against it.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Reorders `records` at random while keeping the order of records with the same item key,
/// then cuts them into batches of at most `max_batch` records at random points (after any
/// record, one time in three). Every record comes out exactly once.
pub fn split_and_interleave<T, K: Eq + Hash>(
    records: Vec<T>,
    key: impl Fn(&T) -> K,
    max_batch: usize,
    rng: &mut fastrand::Rng,
) -> Vec<Vec<T>> {
    // one queue per item, in the order each item first appears
    let mut index: HashMap<K, usize> = HashMap::new();
    let mut queues: Vec<VecDeque<T>> = Vec::new();
    for r in records {
        let k = key(&r);
        let i = *index.entry(k).or_insert_with(|| {
            queues.push(VecDeque::new());
            queues.len() - 1
        });
        queues[i].push_back(r);
    }
    // take the front of a random item's queue until all are empty
    let mut mixed = Vec::new();
    let mut live: Vec<usize> = (0..queues.len()).collect();
    while !live.is_empty() {
        let at = rng.usize(..live.len());
        match queues[live[at]].pop_front() {
            Some(r) => mixed.push(r),
            None => {
                live.swap_remove(at);
            }
        }
    }
    // a cut after each record one time in three, and wherever a batch is full
    let mut batches = Vec::new();
    let mut batch = Vec::new();
    for r in mixed {
        batch.push(r);
        if batch.len() >= max_batch.max(1) || rng.u8(..3) == 0 {
            batches.push(std::mem::take(&mut batch));
        }
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (item, n-th write of it): three transactions of three items each, written one after another.
    fn writes() -> Vec<(u8, u32)> {
        (0..3).flat_map(|tx| (0..3u8).map(move |item| (item + 3 * (tx % 2) as u8, tx))).collect()
    }

    #[test]
    fn each_items_records_keep_their_order_every_record_comes_out_once_and_batches_stay_small() {
        for seed in 0..200 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let batches = split_and_interleave(writes(), |w| w.0, 4, &mut rng);
            assert!(batches.iter().all(|b| !b.is_empty() && b.len() <= 4), "{batches:?}");
            let flat: Vec<(u8, u32)> = batches.into_iter().flatten().collect();
            let mut sorted = flat.clone();
            sorted.sort();
            let mut want = writes();
            want.sort();
            assert_eq!(sorted, want, "every record once");
            for item in 0..6 {
                let order: Vec<u32> = flat.iter().filter(|w| w.0 == item).map(|w| w.1).collect();
                assert!(order.windows(2).all(|p| p[0] < p[1]), "item {item} out of order: {flat:?}");
            }
        }
    }

    #[test]
    fn records_of_different_items_are_interleaved_and_a_transaction_is_split_across_batches() {
        let (mut reordered, mut split) = (0, 0);
        for seed in 0..200 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let batches = split_and_interleave(writes(), |w| w.0, 4, &mut rng);
            let flat: Vec<(u8, u32)> = batches.iter().flatten().copied().collect();
            reordered += usize::from(flat != writes());
            // the first transaction's three items did not all land in one batch
            split += usize::from(!batches.iter().any(|b| b.iter().filter(|w| w.1 == 0).count() == 3));
        }
        assert!(reordered > 150 && split > 100, "reordered {reordered}/200, split {split}/200");
    }

    #[test]
    fn one_item_keeps_its_order_and_a_batch_size_of_one_gives_single_records() {
        let mut rng = fastrand::Rng::with_seed(7);
        let one: Vec<(u8, u32)> = (0..10).map(|n| (1, n)).collect();
        let batches = split_and_interleave(one.clone(), |w| w.0, 1, &mut rng);
        assert_eq!(batches.len(), 10);
        assert_eq!(batches.into_iter().flatten().collect::<Vec<_>>(), one);
        assert!(split_and_interleave(Vec::<(u8, u32)>::new(), |w| w.0, 5, &mut rng).is_empty());
    }
}
