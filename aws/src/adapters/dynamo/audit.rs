//! The daily ledger report's whole-store read over DynamoDB (docs/operations.md, "Daily ledger
//! report"): the same paged Scans the test suites' invariant checks use (`stock::audit::dump`,
//! `orders::dump`), each stopped at the cap.

use crate::domain::invariants::Snapshot;
use crate::ports::{Audit, AuditRead};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;

pub struct DynamoAudit {
    client: Client,
    stock_table: String,
    order_table: String,
}

impl DynamoAudit {
    pub fn new(client: Client, stock_table: String, order_table: String) -> DynamoAudit {
        DynamoAudit { client, stock_table, order_table }
    }
}

#[async_trait]
impl Audit for DynamoAudit {
    async fn read_all(&self, max_items: usize) -> anyhow::Result<AuditRead> {
        let now_s = crate::clock::now_s();
        let (stock, stock_items, stock_done) =
            super::stock::audit::dump_capped(&self.client, &self.stock_table, max_items).await?;
        let (orders, order_items, orders_done) =
            super::orders::dump_capped(&self.client, &self.order_table, max_items).await?;
        Ok(AuditRead {
            snapshot: Snapshot {
                skus: stock.skus,
                reservations: stock.reservations,
                orders,
                user_counters: stock.user_counters,
                now_s,
                check_delay_s: 0,
                campaigns: stock.campaigns,
                codes: stock.codes,
                backlogs: stock.backlogs,
            },
            items: stock_items + order_items,
            complete: stock_done && orders_done,
        })
    }
}
