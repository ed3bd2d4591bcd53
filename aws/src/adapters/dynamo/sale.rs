//! The sale room's items in the stock table (docs/operations.md): `SALE#switch` (the global
//! sales switch), `SALE#live#<key>` (live counters, `ADD`ed by warm Lambdas and expiring by the
//! table's `exp` TTL) and `SALE#low#<sku>` (present while the SKU is below its low-stock
//! threshold). None of them is a stock shard: the stock stream's filter (`SKU#`, `CQ#`) skips them.

use super::item::{get_n, key, n, opt_n, opt_s, s, values, Item};
use super::{charge, get_consistent, item_bytes, rru, sdk_error, wru};
use crate::domain::sale::{SalesMode, SalesSwitch};
use crate::domain::Sku;
use crate::ports::sale::{Counters, SaleStore};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::KeysAndAttributes;
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

/// The sales switch's item (a freeze's transaction checks it: `stock::tx`, `Op::Open`).
pub(in crate::adapters::dynamo) const SWITCH_PK: &str = "SALE#switch";

fn live_pk(key: &str) -> String {
    format!("SALE#live#{key}")
}

fn low_pk(sku: &Sku) -> String {
    format!("SALE#low#{sku}")
}

#[derive(Clone)]
pub struct DynamoSale {
    client: Client,
    table: String,
}

impl DynamoSale {
    pub fn new(client: Client, table: String) -> Self {
        DynamoSale { client, table }
    }

    /// One `UpdateItem` of the live item `key`: `<verb> c_<name><op>:value, …` over `counters`
    /// (`ADD c :v` adds, `SET c = :v` sets), and its expiry when given.
    async fn update_counters(
        &self,
        key_: &str,
        verb: &str,
        op: &str,
        counters: &Counters,
        expires_at: Option<i64>,
    ) -> anyhow::Result<()> {
        if counters.is_empty() {
            return Ok(());
        }
        let mut names = HashMap::new();
        let mut vals = HashMap::new();
        let mut parts = Vec::new();
        for (i, (k, v)) in counters.iter().enumerate() {
            names.insert(format!("#c{i}"), format!("c_{k}"));
            vals.insert(format!(":c{i}"), n(*v));
            parts.push(format!("#c{i}{op}:c{i}"));
        }
        let mut expr = format!("{verb} {}", parts.join(", "));
        if let Some(exp) = expires_at {
            expr.push_str(" SET #exp = :exp");
            names.insert("#exp".into(), "exp".into());
            vals.insert(":exp".into(), n(exp));
        }
        charge(0.0, 1.0);
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(live_pk(key_))))
            .update_expression(expr)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(vals))
            .send()
            .await
            .map_err(|e| sdk_error(e, format!("UpdateItem {}", live_pk(key_))))?;
        Ok(())
    }
}

fn decode_switch(it: &Item) -> anyhow::Result<SalesSwitch> {
    let mode = opt_s(it, "mode").and_then(SalesMode::parse).ok_or_else(|| anyhow::anyhow!("sales switch mode"))?;
    Ok(SalesSwitch {
        mode,
        reason: opt_s(it, "why").unwrap_or_default().to_owned(),
        since_ms: get_n(it, "at")?,
        by: opt_s(it, "by").map(str::to_owned),
    })
}

/// Counter attributes are `c_<name>`; the rest of the item is its key and expiry.
fn decode_counters(it: &Item) -> Counters {
    it.keys().filter_map(|k| Some((k.strip_prefix("c_")?.to_owned(), opt_n::<i64>(it, k)?))).collect()
}

#[async_trait]
impl SaleStore for DynamoSale {
    async fn sales_switch(&self) -> anyhow::Result<Option<SalesSwitch>> {
        get_consistent(&self.client, &self.table, SWITCH_PK.to_owned()).await?.as_ref().map(decode_switch).transpose()
    }

    async fn put_sales_switch(&self, sw: &SalesSwitch) -> anyhow::Result<()> {
        let mut it = values([
            ("pk", s(SWITCH_PK)),
            ("mode", s(sw.mode.as_str())),
            ("why", s(sw.reason.clone())),
            ("at", n(sw.since_ms)),
        ]);
        if let Some(by) = &sw.by {
            it.insert("by".into(), s(by.clone()));
        }
        charge(0.0, wru(item_bytes(&it)));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(it))
            .send()
            .await
            .map_err(|e| sdk_error(e, format!("PutItem {SWITCH_PK}")))?;
        Ok(())
    }

    async fn add_live(&self, key_: &str, deltas: &Counters, expires_at: Option<i64>) -> anyhow::Result<()> {
        self.update_counters(key_, "ADD", " ", deltas, expires_at).await
    }

    async fn set_live(&self, key_: &str, values_: &Counters) -> anyhow::Result<()> {
        self.update_counters(key_, "SET", " = ", values_, None).await
    }

    async fn read_live(&self, keys: &[String]) -> anyhow::Result<HashMap<String, Counters>> {
        let mut out = HashMap::new();
        for chunk in keys.chunks(100) {
            let mut pending = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|k| key(live_pk(k))).collect()))
                .consistent_read(false)
                .build()?;
            // unprocessed keys are asked again, as every batch read of the tables is
            let mut retries = super::retry::Retries::new(super::retry::RetryPolicy::BATCH_READS);
            loop {
                let r = {
                    self.client
                        .batch_get_item()
                        .request_items(&self.table, pending.clone())
                        .send()
                        .await
                        .map_err(|e| sdk_error(e, "BatchGetItem SALE#live".into()))?
                };
                for it in r.responses().and_then(|m| m.get(&self.table)).into_iter().flatten() {
                    super::super::usage::capacity(rru(item_bytes(it), false), 0.0);
                    if let Some(pk) = opt_s(it, "pk").and_then(|p| p.strip_prefix("SALE#live#")) {
                        out.insert(pk.to_owned(), decode_counters(it));
                    }
                }
                match r.unprocessed_keys().and_then(|m| m.get(&self.table)) {
                    Some(left) if !left.keys().is_empty() => {
                        pending = left.clone();
                        retries.wait("BatchGetItem SALE#live").await?;
                    }
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    async fn mark_low_stock(&self, sku: &Sku, low: bool) -> anyhow::Result<bool> {
        let pk = low_pk(sku);
        let r = if low {
            charge(0.0, 1.0);
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(values([("pk", s(pk.clone())), ("sku", s(sku.as_str()))])))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()), e.into())
                })
        } else {
            charge(0.0, 1.0);
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key(pk.clone())))
                .condition_expression("attribute_exists(pk)")
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()), e.into())
                })
        };
        match r {
            Ok(()) => Ok(true),
            Err((true, _)) => Ok(false),
            Err((false, e)) => Err(anyhow::Error::new::<aws_sdk_dynamodb::Error>(e).context(format!("mark {pk}"))),
        }
    }
}
