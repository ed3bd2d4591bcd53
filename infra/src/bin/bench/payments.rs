//! The money path's cost (docs/payments.md): `n` orders paid the way Holdfast now expects —
//! created, a payment started at the simulated provider (`PAYING`), paid on the provider's page,
//! its webhook applied — against `n` paid by the webhook alone, as before; the difference is what
//! the payment attempt adds. Then `n` more whose webhook is dropped, paid by the deadline query.

use super::prices::{delta, usage_json};
use super::Bench;
use holdfast::adapters::usage;
use serde_json::{json, Value};
use std::time::Duration;

async fn start(b: &Bench, user: &str, id: &str) -> Value {
    let t = b.stack.user_token(user);
    b.call("POST", &format!("/orders/{id}/payments"), Some(&t), &[], None).await.1
}

async fn pay_page(url: &str, webhook: &str) {
    let _ = reqwest::Client::new().post(url).json(&json!({"outcome": "succeed", "webhook": webhook})).send().await;
}

pub(crate) async fn payments_section(endpoint: &str, n: usize) -> anyhow::Result<Value> {
    let b = Bench::start(endpoint, &[("HOLDFAST_PAYMENT_TTL_SECONDS", "3")]).await?;
    b.sku("COST", 1_000_000, 1).await;
    let (_, o) = b.order("warm", "warm", "COST", 1).await;
    b.pay(o["order_id"].as_str().unwrap_or_default(), 1000).await;
    b.drain(Duration::from_secs(4)).await;
    let mut runs = serde_json::Map::new();
    for mode in ["webhook_only", "with_payment_attempt", "webhook_dropped"] {
        let before = usage::snapshot();
        let calls_before = b.stack.provider.payments().len();
        for i in 0..n {
            let user = format!("{mode}-{i}");
            let (st, o) = b.order(&user, "k", "COST", 1).await;
            if st != 201 {
                continue;
            }
            let id = o["order_id"].as_str().unwrap_or_default().to_owned();
            match mode {
                "webhook_only" => {
                    b.pay(&id, 1000).await;
                }
                _ => {
                    let p = start(&b, &user, &id).await;
                    let url = p["redirect_url"].as_str().unwrap_or_default().to_owned();
                    pay_page(&url, if mode == "webhook_dropped" { "drop" } else { "deliver" }).await;
                }
            }
        }
        b.drain(Duration::from_secs(6)).await;
        let u = delta(&before, &usage::snapshot());
        let snap = b.stack.snapshot().await?;
        let paid = snap
            .orders
            .iter()
            .filter(|(_, r)| matches!(r, holdfast::domain::order::OrderRecord::Order(o) if o.status.as_str() == "PAID"))
            .count();
        runs.insert(
            mode.into(),
            json!({"orders": n, "paid_total_so_far": paid,
                   "provider_payments_created": b.stack.provider.payments().len() - calls_before,
                   "usage": usage_json(&u, n as f64)}),
        );
    }
    b.stack.shutdown().await;
    Ok(Value::Object(runs))
}
