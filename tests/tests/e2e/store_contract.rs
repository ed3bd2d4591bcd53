//! One behaviour, two stores: the stock store contract (`holdfast::adapters::contract`, which
//! the in-memory store passes in its unit tests) against the DynamoDB store of a local stack on
//! the emulator, through the same port.

use crate::common::spawn;

#[tokio::test]
async fn the_dynamodb_store_passes_the_stock_store_contract() {
    let s = spawn().await;
    let app = s.local.app("create-order").expect("create-order");
    let (stock, waitlists) = (s.local.stock_store().expect("stock store"), app.waitlists.clone());
    // every check, each under its own names, so one failure does not hide the others
    let prefix = format!("sc{}-", fastrand::u32(..));
    let failed = holdfast::adapters::contract::failures(stock.as_ref(), waitlists.as_ref(), &prefix).await;
    assert!(failed.is_empty(), "the DynamoDB store broke the contract:\n{}", failed.join("\n"));
}

/// The reference model of the stock operations (`holdfast::adapters::contract::model`) against
/// the DynamoDB store on the emulator: `HOLDFAST_MODEL_DYNAMO_CASES` random cases (16) of at most
/// `HOLDFAST_MODEL_DYNAMO_STEPS` operations (20) from `HOLDFAST_MODEL_SEED` (0), each under
/// names of its own in this stack's table; after every step the store's answer and everything
/// the port shows equal the model's. A failing case is shrunk (at most 64 reruns) and printed.
#[test]
fn the_dynamodb_store_answers_and_shows_what_the_reference_model_does_after_every_step() {
    use holdfast::adapters::contract::model::{self, run::Tally};
    use std::sync::atomic::{AtomicU32, Ordering};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let s = rt.block_on(spawn());
    let stock = s.local.stock_store().expect("stock store");
    let cases = model::gen::size("HOLDFAST_MODEL_DYNAMO_CASES", 16) as u32;
    let steps = model::gen::size("HOLDFAST_MODEL_DYNAMO_STEPS", 20);
    let seed = model::gen::size("HOLDFAST_MODEL_SEED", 0) as u64;
    let (run, case_no) = (fastrand::u32(..), AtomicU32::new(0));
    let tally = std::sync::Mutex::new(Tally::new());
    let verdict = model::check(seed, cases, steps, 64, |case| {
        let prefix = format!("md{run:x}-{}", case_no.fetch_add(1, Ordering::Relaxed));
        let mut t = Tally::new();
        let out = rt.block_on(model::run_case(stock.as_ref(), &prefix, case, &mut t));
        for (k, n) in t {
            *tally.lock().expect("tally").entry(k).or_default() += n;
        }
        out
    });
    rt.block_on(async move { drop(s) });
    if let Err(e) = verdict {
        panic!("the DynamoDB store left the model:\n{e}");
    }
    // the run moved stock, refused freezes and replayed adjustments (else it proved little)
    let tally = tally.into_inner().expect("tally");
    for k in ["freeze: Ok", "freeze: ShardShort", "release: Ok", "confirm: Ok", "adjust: Ok"] {
        assert!(tally.contains_key(k), "never reached {k:?}: {tally:#?}");
    }
}
