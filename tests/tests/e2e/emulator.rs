//! The emulator contract the whole test suite relies on: linearizable conditional writes and
//! transactions that never fail with 5xx under concurrency (docs/architecture.md, "Local stack").

use crate::common::emulator;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use futures::future::join_all;

async fn client_and_table() -> (Client, String) {
    let sdk = holdfast_local::stack::emulator_sdk(&emulator()).await;
    let c = Client::new(&sdk);
    let table = format!("lin-{:08x}", fastrand::u32(..));
    c.create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder().attribute_name("pk").attribute_type(ScalarAttributeType::S).build().unwrap(),
        )
        .key_schema(KeySchemaElement::builder().attribute_name("pk").key_type(KeyType::Hash).build().unwrap())
        .send()
        .await
        .unwrap();
    (c, table)
}

async fn put_counter(c: &Client, table: &str, pk: &str, n: i64) {
    c.put_item()
        .table_name(table)
        .item("pk", AttributeValue::S(pk.into()))
        .item("av", AttributeValue::N(n.to_string()))
        .send()
        .await
        .unwrap();
}

async fn read_counter(c: &Client, table: &str, pk: &str) -> i64 {
    let r = c
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    r.item().unwrap()["av"].as_n().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_conditional_decrements_succeed_exactly_once_per_unit() {
    let (c, table) = client_and_table().await;
    put_counter(&c, &table, "hot", 100).await;
    // 64 independent clients (own connection pools), 3 attempts each = 192 decrements for 100 units.
    let sdk = holdfast_local::stack::emulator_sdk(&emulator()).await;
    let tasks = (0..64).map(|_| {
        let c = Client::new(&sdk);
        let table = table.clone();
        tokio::spawn(async move {
            let mut ok = 0;
            for _ in 0..3 {
                let r = c
                    .update_item()
                    .table_name(&table)
                    .key("pk", AttributeValue::S("hot".into()))
                    .update_expression("SET av = av - :one")
                    .condition_expression("av >= :one")
                    .expression_attribute_values(":one", AttributeValue::N("1".into()))
                    .send()
                    .await;
                match r {
                    Ok(_) => ok += 1,
                    Err(e) => assert!(
                        e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()),
                        "unexpected error: {e:?}"
                    ),
                }
            }
            ok
        })
    });
    let successes: i32 = join_all(tasks).await.into_iter().map(|r| r.unwrap()).sum();
    assert_eq!(successes, 100);
    assert_eq!(read_counter(&c, &table, "hot").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_transactions_never_fail_with_server_errors_and_stay_atomic() {
    let (c, table) = client_and_table().await;
    put_counter(&c, &table, "a", 40).await;
    put_counter(&c, &table, "b", 40).await;
    let sdk = holdfast_local::stack::emulator_sdk(&emulator()).await;
    let tasks = (0..32).map(|i| {
        let c = Client::new(&sdk);
        let table = table.clone();
        tokio::spawn(async move {
            let mut ok = 0;
            for j in 0..3 {
                let upd = |pk: &str| {
                    TransactWriteItem::builder()
                        .update(
                            Update::builder()
                                .table_name(&table)
                                .key("pk", AttributeValue::S(pk.into()))
                                .update_expression("SET av = av - :one")
                                .condition_expression("av >= :one")
                                .expression_attribute_values(":one", AttributeValue::N("1".into()))
                                .build()
                                .unwrap(),
                        )
                        .build()
                };
                // alternate the item order so transactions overlap in both directions
                let items = if (i + j) % 2 == 0 { vec![upd("a"), upd("b")] } else { vec![upd("b"), upd("a")] };
                match c.transact_write_items().set_transact_items(Some(items)).send().await {
                    Ok(_) => ok += 1,
                    Err(e) => {
                        let raw = e.raw_response().map(|r| r.status().as_u16()).unwrap_or(0);
                        assert!(raw < 500, "HTTP {raw} from TransactWriteItems: {e:?}");
                    }
                }
            }
            ok
        })
    });
    let successes: i32 = join_all(tasks).await.into_iter().map(|r| r.unwrap()).sum();
    assert_eq!(successes, 40);
    assert_eq!(read_counter(&c, &table, "a").await, 0);
    assert_eq!(read_counter(&c, &table, "b").await, 0);
}
