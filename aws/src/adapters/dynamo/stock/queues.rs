//! [`Queues`] over DynamoDB (docs/waiting-room.md): `QC#<campaign>#<k>` ticket counters (`n`),
//! `QT#<campaign>#<user>` tickets, `QR#<campaign>` the room's clock (JSON, versioned) and
//! `QU#<campaign>#<ticket>` spent admissions (written by the freeze). None is a stock shard: the
//! stream's filter (`SKU#`, `CQ#`) skips them.

use super::DynamoStock;
use crate::adapters::dynamo::item::{get_s, key, n, opt_n, s, values};
use crate::adapters::dynamo::{charge, get_consistent, sdk_error};
use crate::domain::queue::{Room, Ticket};
use crate::domain::{CampaignId, UserId};
use crate::ports::Queues;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

fn counter_pk(c: &CampaignId, k: u16) -> String {
    format!("QC#{c}#{k}")
}
fn ticket_pk(c: &CampaignId, u: &UserId) -> String {
    format!("QT#{c}#{u}")
}
fn room_pk(c: &CampaignId) -> String {
    format!("QR#{c}")
}

fn is_ccf<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> bool {
    e.as_service_error().and_then(|se| se.code()).is_some_and(|c| c == "ConditionalCheckFailedException")
}

#[async_trait]
impl Queues for DynamoStock {
    async fn next_number(&self, c: &CampaignId, k: u16) -> anyhow::Result<u64> {
        charge(0.0, 1.0);
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(counter_pk(c, k))))
            .update_expression("ADD n :one")
            .expression_attribute_values(":one", n(1))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| sdk_error(e, format!("UpdateItem {}", counter_pk(c, k))))?;
        let it = r.attributes.unwrap_or_default();
        opt_n(&it, "n").ok_or_else(|| anyhow::anyhow!("counter {} answered no value", counter_pk(c, k)))
    }

    async fn put_ticket(&self, c: &CampaignId, user: &UserId, t: &Ticket) -> anyhow::Result<bool> {
        charge(0.0, 1.0);
        let item = values([("pk", s(ticket_pk(c, user))), ("t", s(serde_json::to_string(t)?))]);
        match self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_ccf(&e) => Ok(false),
            Err(e) => Err(sdk_error(e, format!("PutItem {}", ticket_pk(c, user)))),
        }
    }

    async fn ticket(&self, c: &CampaignId, user: &UserId) -> anyhow::Result<Option<Ticket>> {
        match get_consistent(&self.client, &self.table, ticket_pk(c, user)).await? {
            Some(it) => Ok(Some(serde_json::from_str(get_s(&it, "t")?)?)),
            None => Ok(None),
        }
    }

    async fn counters(&self, c: &CampaignId, counters: u16) -> anyhow::Result<Vec<u64>> {
        let mut out = Vec::with_capacity(usize::from(counters));
        for k in 0..counters {
            let it = get_consistent(&self.client, &self.table, counter_pk(c, k)).await?;
            out.push(it.as_ref().and_then(|i| opt_n(i, "n")).unwrap_or(0));
        }
        Ok(out)
    }

    async fn room(&self, c: &CampaignId) -> anyhow::Result<Room> {
        match get_consistent(&self.client, &self.table, room_pk(c)).await? {
            Some(it) => Ok(serde_json::from_str(get_s(&it, "r")?)?),
            None => Ok(Room::default()),
        }
    }

    async fn put_room(&self, c: &CampaignId, next: &Room) -> anyhow::Result<bool> {
        charge(0.0, 1.0);
        let item = values([("pk", s(room_pk(c))), ("r", s(serde_json::to_string(next)?)), ("v", n(next.version))]);
        let prev = next.version.saturating_sub(1);
        let (cond, vals): (&str, Option<std::collections::HashMap<String, AttributeValue>>) =
            if prev == 0 { ("attribute_not_exists(pk)", None) } else { ("v = :v", Some(values([(":v", n(prev))]))) };
        match self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(cond)
            .set_expression_attribute_values(vals)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_ccf(&e) => Ok(false),
            Err(e) => Err(sdk_error(e, format!("PutItem {}", room_pk(c)))),
        }
    }

    async fn spent(&self, c: &CampaignId, number: u64) -> anyhow::Result<bool> {
        let pk = super::keys::admission_pk(c, number);
        let it = get_consistent(&self.client, &self.table, pk).await?;
        Ok(it.as_ref().and_then(|i| opt_n::<i64>(i, "n")).unwrap_or(0) > 0)
    }
}
