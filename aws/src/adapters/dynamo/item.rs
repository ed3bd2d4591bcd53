//! Small helpers for reading and writing attribute maps.

use anyhow::{anyhow, Context};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::str::FromStr;

pub type Item = HashMap<String, AttributeValue>;

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub fn key(pk: impl Into<String>) -> Item {
    HashMap::from([("pk".to_owned(), s(pk))])
}

pub fn get_s<'a>(item: &'a Item, k: &str) -> anyhow::Result<&'a str> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Ok(v),
        Some(_) => Err(anyhow!("attribute {k} is not a string")),
        None => Err(anyhow!("attribute {k} missing")),
    }
}

pub fn opt_s<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

pub fn get_n<T: FromStr>(item: &Item, k: &str) -> anyhow::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match item.get(k) {
        Some(AttributeValue::N(v)) => v.parse().with_context(|| format!("attribute {k}")),
        Some(_) => Err(anyhow!("attribute {k} is not a number")),
        None => Err(anyhow!("attribute {k} missing")),
    }
}

pub fn opt_n<T: FromStr>(item: &Item, k: &str) -> Option<T> {
    match item.get(k) {
        Some(AttributeValue::N(v)) => v.parse().ok(),
        _ => None,
    }
}

pub fn values<const N: usize>(pairs: [(&str, AttributeValue); N]) -> Item {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
