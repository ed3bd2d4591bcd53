//! One behaviour, two stores: the stock store contract (`holdfast::adapters::contract`, which
//! the in-memory store passes in its unit tests) against the DynamoDB store of a local stack on
//! the emulator, through the same port.

use crate::common::spawn;

#[tokio::test]
async fn the_dynamodb_store_passes_the_stock_store_contract() {
    let s = spawn().await;
    let app = s.local.app("create-order").expect("create-order");
    let (stock, waitlists) = (app.stock.clone(), app.waitlists.clone());
    // every check, each under its own names, so one failure does not hide the others
    let prefix = format!("sc{}-", fastrand::u32(..));
    let failed = holdfast::adapters::contract::failures(stock.as_ref(), waitlists.as_ref(), &prefix).await;
    assert!(failed.is_empty(), "the DynamoDB store broke the contract:\n{}", failed.join("\n"));
}
