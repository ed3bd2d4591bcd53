//! Helpers shared by the HTTP handlers: the sales switch's refusal, the webhook keys, the `sku`
//! path parameter and the SKU views (a use case's error becomes a problem in `problems.rs`).

use crate::api::stock::{SkuView, UpdatedBy};
use crate::app::App;
use crate::domain::Sku;
use crate::http::{path_param, Code, Problem, Request};
use crate::ports::WebhookKeys;
use crate::service::admin::{self, StockView};

/// A write the sales switch refuses: 503 `sales_closed`, its mode and reason, retry in 5 s —
/// whether the door judged it from this Lambda's cache or the freeze's transaction found it.
pub fn sales_closed(s: &crate::domain::sale::SalesSwitch) -> Problem {
    Problem::new(Code::SalesClosed, format!("sales are {}: {}", s.mode.as_str(), s.reason)).retry_after(5)
}

/// Whether `verify` passes under one of the webhook `keys`, tried in turn: the current key, and
/// the previous one during its window after a rotation (security review V5, M1). The caller
/// prechecks the header first, so a request that cannot verify fetches no key (review L4). No key
/// configured is a 500 with `not_configured`; a refusal under every key, a 401 with the last
/// key's reason.
pub async fn verify_with_any_key<E: std::fmt::Display>(
    keys: &dyn WebhookKeys,
    not_configured: &str,
    verify: impl Fn(&[u8]) -> Result<(), E>,
) -> Result<(), Problem> {
    let keys = keys.keys().await.map_err(Problem::from)?;
    let mut refusal = None;
    for k in &keys {
        match verify(k.expose()) {
            Ok(()) => return Ok(()),
            Err(e) => refusal = Some(e.to_string()),
        }
    }
    Err(refusal.map_or_else(|| Problem::internal(not_configured), Problem::unauthorized))
}

pub fn sku_param(req: &Request) -> Result<Sku, Problem> {
    Sku::parse(path_param(req, "sku")?).map_err(|e| Problem::validation(e.to_string()).field("sku"))
}

/// The stock view as JSON, the form the warm-Lambda public cache keeps.
pub fn view_json(v: &StockView) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::to_value(SkuView::from(v))?)
}

/// The SKU view of an admin answer: with who last wrote its metadata (security review L7).
pub async fn admin_sku_view(app: &App, v: &StockView) -> anyhow::Result<SkuView> {
    let stamp = admin::updated_by(app, &v.meta.sku).await?;
    Ok(SkuView { updated_by: stamp.as_ref().map(UpdatedBy::from), ..SkuView::from(v) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::secrets::StaticKeys;
    use crate::config::Secret;

    fn keys(ks: &[&str]) -> StaticKeys {
        StaticKeys(ks.iter().map(|k| Secret::new(*k)).collect())
    }

    /// `Ok` only under the key `good`; the refusal names the key it was tried with.
    fn only(good: &'static str) -> impl Fn(&[u8]) -> Result<(), String> {
        move |k| if k == good.as_bytes() { Ok(()) } else { Err(format!("not {}", String::from_utf8_lossy(k))) }
    }

    #[tokio::test]
    async fn any_one_key_verifies_else_the_last_refusal_and_no_key_is_a_500() {
        assert!(verify_with_any_key(&keys(&["new", "old"]), "none", only("old")).await.is_ok(), "the previous key");
        assert!(verify_with_any_key(&keys(&["new", "old"]), "none", only("new")).await.is_ok(), "the current key");
        let all_wrong = verify_with_any_key(&keys(&["new", "old"]), "none", only("other")).await.unwrap_err();
        assert_eq!((all_wrong.status(), all_wrong.detail.as_str()), (401, "not old"));
        let none = verify_with_any_key(&keys(&[]), "no secret configured", only("new")).await.unwrap_err();
        assert_eq!(
            (none.status(), none.detail.as_str()),
            (Code::TemporarilyUnavailable.status(), "no secret configured")
        );
    }
}
