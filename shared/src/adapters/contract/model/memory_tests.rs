//! The reference model against the in-memory store: `HOLDFAST_MODEL_CASES` cases (64) of at most
//! `HOLDFAST_MODEL_STEPS` operations (30) drawn from `HOLDFAST_MODEL_SEED` (0), each on a fresh
//! store.

use super::run::Tally;
use super::*;
use crate::adapters::memory::MemoryStock;
use std::sync::Mutex;

#[test]
fn the_memory_store_answers_and_shows_what_the_reference_model_does_after_every_step() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (cases, steps) = (gen::size("HOLDFAST_MODEL_CASES", 64), gen::size("HOLDFAST_MODEL_STEPS", 30));
    let seed = gen::size("HOLDFAST_MODEL_SEED", 0) as u64;
    let tally = Mutex::new(Tally::new());
    let verdict = check(seed, cases as u32, steps, 4096, |case| {
        let mut t = Tally::new();
        let out = rt.block_on(run_case(&MemoryStock::new(), "m", case, &mut t));
        for (k, n) in t {
            *tally.lock().unwrap().entry(k).or_default() += n;
        }
        out
    });
    if let Err(e) = verdict {
        panic!("the memory store left the model:\n{e}");
    }
    // the cases reach every answer the port gives (else the model proves less than it says):
    // a default-sized run or larger, whatever the seed
    let tally = tally.into_inner().unwrap();
    if cases < 64 || steps < 30 {
        return;
    }
    let missing: Vec<&str> = REACHED.iter().copied().filter(|k| !tally.contains_key(*k)).collect();
    assert!(missing.is_empty(), "never reached: {missing:?}\nreached: {tally:#?}");
}

/// Answers every run of 64 cases x 30 steps reaches (checked for seeds 0..40).
const REACHED: &[&str] = &[
    "freeze: Ok",
    "freeze: AlreadyExists",
    "freeze: ShardShort",
    "freeze: QuotaShort",
    "freeze: LimitExceeded",
    "freeze: CampaignLimitExceeded",
    "freeze: TooManyPending",
    "freeze: AdmissionUsed",
    "confirm: Ok",
    "confirm: StatusChanged",
    "release: Ok",
    "release: StatusChanged",
    "retake: Ok",
    "retake: StatusChanged",
    "restock: Ok",
    "restock: StatusChanged",
    "mark oversold: true",
    "mark oversold: false",
    "adjust: Ok",
    "adjust: Duplicate",
    "adjust: ShardShort",
    "fence: Ok",
    "fence: ShardShort",
    "stop-sale: true",
    "campaign pause: true",
    "campaign adjust: Ok",
    "campaign adjust: ShardShort",
    "rebalance: true",
    "rebalance: false",
];
