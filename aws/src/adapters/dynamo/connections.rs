//! The push channel's connection table (docs/push.md): `pk`/`sk` strings and the `ttl`
//! attribute DynamoDB expires items by. A buyer's connection is two items, one per direction:
//! `U#<user>` / `C#<connection>` (whom to push to) and `C#<connection>` / `U#<user>` (whose
//! connection closed); a frame sent is the mark `S#<connection>` / `<key>`, written before the
//! post on the condition that it is absent (at most once per event per connection). A watched
//! ticket's chain of timers is the mark `W#<user>` / `<campaign>`, written on the condition that
//! it is absent or expired (one chain per ticket), moved on as the chain re-arms, deleted when it ends.

use super::item::{opt_n, s};
use super::{charge, sdk_error};
use crate::adapters::usage::{kind_of, write_detail};
use crate::ports::push::Connections;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

#[derive(Clone)]
pub struct DynamoConnections {
    client: Client,
    table: String,
}

type Item = HashMap<String, AttributeValue>;

/// When a put writes.
#[derive(Clone, Copy)]
enum Only {
    Always,
    /// no item with the key yet
    New,
    /// no item with the key, or one expired at this time (epoch s)
    NewOrExpired(i64),
}

fn item(pk: String, sk: String, ttl: i64) -> Item {
    HashMap::from([
        ("pk".to_owned(), s(pk)),
        ("sk".to_owned(), s(sk)),
        ("ttl".to_owned(), AttributeValue::N(ttl.to_string())),
    ])
}

impl DynamoConnections {
    pub fn new(client: Client, table: String) -> Self {
        DynamoConnections { client, table }
    }

    async fn put(&self, it: Item, only: Only) -> anyhow::Result<bool> {
        charge(0.0, 1.0);
        let kind = it.get("pk").and_then(|v| v.as_s().ok()).map(|pk| kind_of(pk).to_owned()).unwrap_or_default();
        write_detail(&format!("PutItem CONN {kind}"), 1.0);
        let mut req = self.client.put_item().table_name(&self.table).set_item(Some(it));
        match only {
            Only::Always => {}
            Only::New => req = req.condition_expression("attribute_not_exists(pk)"),
            // TTL deletes lazily: an expired mark may still be there
            Only::NewOrExpired(now_s) => {
                req = req
                    .condition_expression("attribute_not_exists(pk) OR #ttl <= :now")
                    .expression_attribute_names("#ttl", "ttl")
                    .expression_attribute_values(":now", AttributeValue::N(now_s.to_string()));
            }
        }
        match req.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|x| x.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(sdk_error(e, format!("PutItem on {}", self.table))),
        }
    }

    /// The sort keys under `pk` (with their expiry).
    async fn sort_keys(&self, pk: String) -> anyhow::Result<Vec<(String, Option<i64>)>> {
        charge(0.5, 0.0);
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .send()
            .await
            .map_err(|e| sdk_error(e, format!("Query on {}", self.table)))?;
        Ok(out
            .items()
            .iter()
            .filter_map(|i| Some((i.get("sk")?.as_s().ok()?.clone(), opt_n::<i64>(i, "ttl"))))
            .collect())
    }

    async fn delete(&self, pk: String, sk: String) -> anyhow::Result<()> {
        charge(0.0, 1.0);
        write_detail(&format!("DeleteItem CONN {}", kind_of(&pk)), 1.0);
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .send()
            .await
            .map_err(|e| sdk_error(e, format!("DeleteItem on {}", self.table)))?;
        Ok(())
    }
}

#[async_trait]
impl Connections for DynamoConnections {
    async fn open(&self, user: &str, connection: &str, expires_at_s: i64) -> anyhow::Result<()> {
        self.put(item(format!("U#{user}"), format!("C#{connection}"), expires_at_s), Only::Always).await?;
        self.put(item(format!("C#{connection}"), format!("U#{user}"), expires_at_s), Only::Always).await?;
        Ok(())
    }

    async fn close(&self, connection: &str) -> anyhow::Result<Option<String>> {
        let user = self.user_of(connection).await?;
        if let Some(u) = &user {
            self.delete(format!("U#{u}"), format!("C#{connection}")).await?;
            self.delete(format!("C#{connection}"), format!("U#{u}")).await?;
        }
        Ok(user)
    }

    async fn of_user(&self, user: &str, now_s: i64) -> anyhow::Result<Vec<String>> {
        // TTL deletes lazily: an expired item may still be read
        Ok(self
            .sort_keys(format!("U#{user}"))
            .await?
            .into_iter()
            .filter(|(_, ttl)| ttl.is_none_or(|t| t > now_s))
            .filter_map(|(sk, _)| sk.strip_prefix("C#").map(str::to_owned))
            .collect())
    }

    async fn user_of(&self, connection: &str) -> anyhow::Result<Option<String>> {
        Ok(self
            .sort_keys(format!("C#{connection}"))
            .await?
            .into_iter()
            .find_map(|(sk, _)| sk.strip_prefix("U#").map(str::to_owned)))
    }

    async fn claim(&self, connection: &str, key: &str, expires_at_s: i64) -> anyhow::Result<bool> {
        self.put(item(format!("S#{connection}"), key.to_owned(), expires_at_s), Only::New).await
    }

    async fn start_watch(&self, user: &str, campaign: &str, expires_at_s: i64, now_s: i64) -> anyhow::Result<bool> {
        self.put(item(format!("W#{user}"), campaign.to_owned(), expires_at_s), Only::NewOrExpired(now_s)).await
    }

    async fn keep_watch(&self, user: &str, campaign: &str, expires_at_s: i64) -> anyhow::Result<()> {
        self.put(item(format!("W#{user}"), campaign.to_owned(), expires_at_s), Only::Always).await.map(|_| ())
    }

    async fn end_watch(&self, user: &str, campaign: &str) -> anyhow::Result<()> {
        self.delete(format!("W#{user}"), campaign.to_owned()).await
    }
}
