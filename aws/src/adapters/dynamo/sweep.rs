//! The reconcile sweep's paged index reads over DynamoDB: one `Query` page per call, resumed
//! from the `LastEvaluatedKey` the cursor carries (as DynamoDB JSON).

use super::item::{get_s, n, s, Item};
use super::orders::PENDING_INDEX;
use super::stock::{FROZEN_INDEX, SKU_INDEX};
use super::{item_bytes, rru, sdk_error};
use crate::domain::{OrderId, ReservationId, Sku};
use crate::ports::{OrderIndex, Page, SweepIndex};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;

pub struct DynamoSweep {
    client: Client,
    stock_table: String,
    order_table: String,
}

impl DynamoSweep {
    pub fn new(client: Client, stock_table: impl Into<String>, order_table: impl Into<String>) -> Self {
        Self { client, stock_table: stock_table.into(), order_table: order_table.into() }
    }

    /// One page of `index` on `table`: the `pk` of each entry, and the cursor after it.
    async fn page(
        &self,
        table: &str,
        index: &str,
        cond: &str,
        vals: Vec<(&str, aws_sdk_dynamodb::types::AttributeValue)>,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<String>> {
        let start: Option<Item> = match cursor {
            Some(c) => Some(serde_json::from_str::<serde_dynamo::Item>(c)?.into()),
            None => None,
        };
        let mut q = self
            .client
            .query()
            .table_name(table)
            .index_name(index)
            .key_condition_expression(cond)
            .limit(limit.clamp(1, 10_000) as i32)
            .set_exclusive_start_key(start);
        for (k, v) in vals {
            q = q.expression_attribute_values(k, v);
        }
        let r = q.send().await.map_err(|e| sdk_error(e, format!("Query {index}")))?;
        super::super::usage::capacity(rru(r.items().iter().map(item_bytes).sum(), false), 0.0);
        let items = r.items().iter().map(|it| get_s(it, "pk").map(str::to_owned)).collect::<anyhow::Result<_>>()?;
        let next = match r.last_evaluated_key() {
            Some(k) if !k.is_empty() => Some(serde_json::to_string(&serde_dynamo::Item::from(k.clone()))?),
            _ => None,
        };
        Ok(Page { items, next })
    }
}

fn parse_all<T>(page: Page<String>, f: impl Fn(&str) -> Option<anyhow::Result<T>>) -> anyhow::Result<Page<T>> {
    let items = page.items.iter().filter_map(|pk| f(pk)).collect::<anyhow::Result<_>>()?;
    Ok(Page { items, next: page.next })
}

#[async_trait]
impl SweepIndex for DynamoSweep {
    async fn frozen_page(
        &self,
        bucket: u32,
        before_ms: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<ReservationId>> {
        let vals = vec![(":b", s(format!("F#{bucket}"))), (":c", n(before_ms))];
        let page = self.page(&self.stock_table, FROZEN_INDEX, "fzb = :b AND fza < :c", vals, cursor, limit).await?;
        parse_all(page, |pk| pk.strip_prefix("RES#").map(|id| ReservationId::from_stored(id).map_err(Into::into)))
    }

    async fn pending_page(
        &self,
        bucket: u32,
        before_s: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        let vals = vec![(":b", s(format!("P#{bucket}"))), (":d", n(before_s))];
        let page = self.page(&self.order_table, PENDING_INDEX, "pb = :b AND pd < :d", vals, cursor, limit).await?;
        parse_all(page, |pk| pk.strip_prefix("ORD#").map(|id| OrderId::parse(id).map_err(Into::into)))
    }

    async fn orders_page(
        &self,
        index: OrderIndex,
        bucket: u32,
        before: i64,
        cursor: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Page<OrderId>> {
        let (name, hash, prefix, range) = index.keys();
        let vals = vec![(":b", s(format!("{prefix}{bucket}"))), (":d", n(before))];
        let cond = format!("{hash} = :b AND {range} < :d");
        let page = self.page(&self.order_table, name, &cond, vals, cursor, limit).await?;
        parse_all(page, |pk| pk.strip_prefix("ORD#").map(|id| OrderId::parse(id).map_err(Into::into)))
    }

    async fn skus_page(&self, cursor: Option<&str>, limit: usize) -> anyhow::Result<Page<Sku>> {
        let vals = vec![(":k", s("SKU"))];
        let page = self.page(&self.stock_table, SKU_INDEX, "skl = :k", vals, cursor, limit).await?;
        parse_all(page, |pk| Some(Sku::from_stored(pk.trim_start_matches("SKU#")).map_err(Into::into)))
    }
}
