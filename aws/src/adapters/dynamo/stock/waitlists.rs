//! [`Waitlists`] over DynamoDB (docs/waitlist.md), in the stock table: `WLH#<sku>` a SKU's
//! head (JSON `w`, version `v`), `WLE#<sku>#<n>` its entries (JSON `w`), `WLP#<sku>#<user>` a
//! buyer's latest entry number (`n`), `WLU#<user>` the SKUs a buyer waits for (JSON `w`,
//! version `v`). A commit is one TransactWriteItems of Puts: the head and the buyers' lists
//! conditional on the versions read, a buyer's pointer on the number read (or its absence), so a
//! moved version or pointer cancels it and nothing is written. None
//! is a stock shard: the stream's filter (`SKU#`, `CQ#`) skips them.

use super::DynamoStock;
use crate::adapters::dynamo::get_consistent;
use crate::adapters::dynamo::item::{get_s, n, opt_n, opt_s, s, values, Item};
use crate::domain::waitlist::{Entry, Head, UserWaits};
use crate::domain::{Sku, UserId};
use crate::ports::{WaitCommit, Waitlists};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

fn head_pk(sku: &Sku) -> String {
    format!("WLH#{sku}")
}
fn entry_pk(sku: &Sku, number: u64) -> String {
    format!("WLE#{sku}#{number}")
}
fn pointer_pk(sku: &Sku, user: &UserId) -> String {
    format!("WLP#{sku}#{user}")
}
fn user_pk(user: &UserId) -> String {
    format!("WLU#{user}")
}

/// A Put of a versioned item: over `version - 1`, or new when that is 0.
fn versioned(table: &str, item: Item, version: u64) -> anyhow::Result<TransactWriteItem> {
    let prev = version.saturating_sub(1);
    let p = Put::builder().table_name(table).set_item(Some(item));
    let p = if prev == 0 {
        p.condition_expression("attribute_not_exists(pk)")
    } else {
        p.condition_expression("v = :v").expression_attribute_values(":v", n(prev))
    };
    Ok(TransactWriteItem::builder().put(p.build()?).build())
}

fn plain(table: &str, item: Item) -> anyhow::Result<TransactWriteItem> {
    Ok(TransactWriteItem::builder().put(Put::builder().table_name(table).set_item(Some(item)).build()?).build())
}

#[async_trait]
impl Waitlists for DynamoStock {
    async fn waitlist(&self, sku: &Sku) -> anyhow::Result<Head> {
        match get_consistent(&self.client, &self.table, head_pk(sku)).await? {
            Some(it) => Ok(serde_json::from_str(get_s(&it, "w")?)?),
            None => Ok(Head::default()),
        }
    }

    async fn wait_entries(&self, sku: &Sku, numbers: &[u64]) -> anyhow::Result<Vec<Entry>> {
        if numbers.is_empty() {
            return Ok(Vec::new());
        }
        let items = self.batch_get(numbers.iter().map(|k| entry_pk(sku, *k)).collect(), true).await?;
        let mut out = Vec::with_capacity(items.len());
        for it in &items {
            out.push(serde_json::from_str::<Entry>(get_s(it, "w")?)?);
        }
        out.sort_by_key(|e| e.number);
        out.dedup_by_key(|e| e.number);
        Ok(out)
    }

    async fn wait_entry_of(&self, sku: &Sku, user: &UserId) -> anyhow::Result<Option<Entry>> {
        let Some(p) = get_consistent(&self.client, &self.table, pointer_pk(sku, user)).await? else { return Ok(None) };
        let Some(number) = opt_n::<u64>(&p, "n") else { return Ok(None) };
        Ok(self.wait_entries(sku, &[number]).await?.into_iter().next())
    }

    async fn user_waits(&self, user: &UserId) -> anyhow::Result<UserWaits> {
        match get_consistent(&self.client, &self.table, user_pk(user)).await? {
            Some(it) => Ok(opt_s(&it, "w").map(serde_json::from_str).transpose()?.unwrap_or_default()),
            None => Ok(UserWaits::default()),
        }
    }

    async fn commit_waitlist(&self, c: &WaitCommit) -> anyhow::Result<bool> {
        let t = &self.table;
        let head =
            values([("pk", s(head_pk(&c.sku))), ("w", s(serde_json::to_string(&c.head)?)), ("v", n(c.head.version))]);
        let mut items = vec![versioned(t, head, c.head.version)?];
        for e in &c.entries {
            items.push(plain(t, values([("pk", s(entry_pk(&c.sku, e.number))), ("w", s(serde_json::to_string(e)?))]))?);
        }
        if let Some(p) = &c.pointer {
            let item = values([("pk", s(pointer_pk(&c.sku, &p.user))), ("n", n(p.number))]);
            let put = Put::builder().table_name(t).set_item(Some(item));
            let put = match p.over {
                None => put.condition_expression("attribute_not_exists(pk)"),
                Some(was) => put.condition_expression("n = :n").expression_attribute_values(":n", n(was)),
            };
            items.push(TransactWriteItem::builder().put(put.build()?).build());
        }
        for (u, w) in &c.users {
            let item = values([("pk", s(user_pk(u))), ("w", s(serde_json::to_string(w)?)), ("v", n(w.version))]);
            items.push(versioned(t, item, w.version)?);
        }
        Ok(self.transact(items, 0.0).await?.is_ok())
    }
}
