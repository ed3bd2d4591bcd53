//! The stock store contract ([`crate::adapters::contract`]) against the in-memory store: each
//! check on a fresh store, then every check on one store (as the DynamoDB run shares a table).

use super::MemoryStock;
use crate::adapters::contract;

#[tokio::test]
async fn the_memory_store_judges_freezes_on_shard_stock_and_replays() {
    contract::freezes(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_per_user_limits() {
    contract::per_user_limits(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_the_waiting_rooms_and_spends_an_admission_once() {
    contract::queues(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_stores_judge_waitlist_commits_and_spend_a_told_entrys_admission_once() {
    contract::waitlists(&MemoryStock::new(), &super::MemoryWaitlists::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_the_pending_cap() {
    contract::pending_cap(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_campaign_quota_window_pause_and_limit() {
    contract::campaign_gates(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_freezes_a_line_over_warehouse_cells_as_one_and_gives_each_its_units_back() {
    contract::warehouse_cells(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_lists_fills_and_cancels_backorders_conditionally() {
    contract::backorder_fills(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_confirm_release_retake_and_restock() {
    contract::lock_moves(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_the_shipments_take_of_a_held_lock() {
    contract::shipment_takes(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_stops_a_sale_on_the_shards_it_pauses() {
    contract::stop_sale(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_stops_shards_added_during_a_stop_sale() {
    contract::stop_sale_on_new_shards(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_code_uploads_claims_and_give_backs() {
    contract::code_pools(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_code_expiry_retirement_fates_and_redemption() {
    contract::code_lifecycle(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_each_waves_window_and_rolls_exactly_the_remainder() {
    contract::waves(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_judges_adjustments() {
    contract::adjustments(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_reads_many_skus_shards_in_one_call() {
    contract::batched_reads(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_moves_an_adjustment_pair_together_or_not_at_all() {
    contract::adjustment_pairs(&MemoryStock::new(), "m").await;
}

#[tokio::test]
async fn the_memory_store_passes_the_whole_stock_store_contract_on_one_store() {
    let failed = contract::failures(&MemoryStock::new(), &super::MemoryWaitlists::new(), "m-").await;
    assert!(failed.is_empty(), "contract checks failed:\n{}", failed.join("\n"));
    assert_eq!(contract::CHECKS.len(), 18, "a new check gets its own test above");
}
