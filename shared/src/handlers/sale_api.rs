//! The sale room's admin routes (docs/operations.md), served by stock-api: the sales switch,
//! the exact SKU view, the campaign list and statistics, the machinery page; and the console's
//! HTML shell and the buyers' storefront, served by stock-read (public: everything they show comes
//! from the admin or the buyer's routes).

use super::campaigns_api::campaign_param;
use super::common::{admin_sku_view, sku_param};
use crate::api::sale::{
    AdminSkuView, CampaignList, CampaignStats, CampaignSummary, Machinery, QueueView, ReconcileView,
    SalesSwitchRequest, SalesSwitchView, ShardView,
};
use crate::app::App;
use crate::clock;
use crate::http::{json_response, respond, subject, typed_body, Problem, Request, Response};
use crate::service::{admin, sale};
use ::http::header::HeaderValue;

/// The console: one self-contained page (docs/operations.md, "Console").
pub const CONSOLE_HTML: &str = include_str!("../../../console/index.html");

pub fn console() -> Result<Response, Problem> {
    page(
        CONSOLE_HTML.to_owned(),
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    )
}

/// The storefront: one self-contained page (docs/shop.md).
pub const SHOP_HTML: &str = include_str!("../../../shop/index.html");
/// The page's push endpoint, filled in when served: empty, the page connects to this origin's
/// `/ws` (the local stack's).
const PUSH_META: &str = r#"<meta name="holdfast-push-url" content="">"#;

/// `GET /shop/`, with the push endpoint from the configuration (`PUSH_URL`: on AWS the
/// WebSocket API's `wss://…/live`, a host of its own; unset locally, where this origin serves
/// `/ws`) in the page and in its content security policy, which lets it connect to this
/// origin and that endpoint's only: a link cannot send the buyer's token anywhere else.
pub fn shop(push_url: &str) -> Result<Response, Problem> {
    let (html, connect) = match push_origin(push_url) {
        Some(origin) => {
            let meta = format!(r#"<meta name="holdfast-push-url" content="{}">"#, push_url.replace('&', "&amp;"));
            (SHOP_HTML.replacen(PUSH_META, &meta, 1), format!("'self' {origin}"))
        }
        None => {
            if !push_url.is_empty() {
                tracing::warn!(push_url, "PUSH_URL is not a ws:// or wss:// URL: the shop connects to its own origin");
            }
            (SHOP_HTML.to_owned(), "'self'".to_owned())
        }
    };
    page(
        html,
        &format!("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src {connect}; img-src 'self' data:; frame-ancestors 'none'"),
    )
}

/// The origin (`wss://host[:port]`) of a push endpoint URL, `None` unless it is a `ws://` or
/// `wss://` URL of a plain host name with nothing that could leave an HTML attribute or a CSP
/// source (quotes, angle brackets, spaces, `;`, `,`).
pub fn push_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "ws" | "wss")
        || url.chars().any(|c| c.is_whitespace() || c.is_control() || "\"'<>;,\\".contains(c))
    {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':');
    (!host.is_empty() && host.chars().all(plain)).then(|| format!("{scheme}://{host}"))
}

fn page(html: String, csp: &str) -> Result<Response, Problem> {
    let csp = HeaderValue::from_str(csp).map_err(|e| Problem::internal(format!("content security policy: {e}")))?;
    let mut r = respond(200, "text/html; charset=utf-8", html);
    r.headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    r.headers.insert("content-security-policy", csp);
    r.headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    Ok(r)
}

pub async fn get_switch(app: &App) -> Result<Response, Problem> {
    let s = app.sale.sales_switch().await?.unwrap_or_default();
    Ok(json_response(200, &SalesSwitchView::from(&s)))
}

pub async fn put_switch(app: &App, req: &Request) -> Result<Response, Problem> {
    let b: SalesSwitchRequest = typed_body(req, app.config.max_body_bytes)?;
    let by = subject(req).ok().map(|u| u.as_str().to_owned());
    let s = sale::set_switch(app, b.mode, b.reason, by).await?;
    Ok(json_response(200, &SalesSwitchView::from(&s)))
}

/// `GET /admin/skus/{sku}`: strongly consistent, with every shard.
pub async fn get_sku(app: &App, req: &Request) -> Result<Response, Problem> {
    let sku = sku_param(req)?;
    let v =
        admin::view(app, &sku).await?.ok_or_else(|| Problem::not_found(format!("no SKU {sku}")).sku(sku.as_str()))?;
    let shard_counts = v
        .shards
        .iter()
        .enumerate()
        .map(|(i, c)| ShardView { shard: i as u16, available: c.available, locked: c.locked, sold: c.sold })
        .collect();
    Ok(json_response(200, &AdminSkuView { sku: admin_sku_view(app, &v).await?, shard_counts }))
}

pub async fn list_campaigns(app: &App) -> Result<Response, Problem> {
    let now = clock::now_s();
    let mut campaigns = Vec::new();
    for id in app.campaigns.list_campaigns().await? {
        if let Some(c) = app.campaigns.get_campaign(&id, false).await? {
            campaigns.push(CampaignSummary {
                campaign_id: c.id.to_string(),
                name: c.name.clone(),
                starts_at: clock::rfc3339(c.starts_at.saturating_mul(1000)),
                ends_at: clock::rfc3339(c.ends_at.saturating_mul(1000)),
                paused: c.paused,
                status: c.status(now).as_str().to_owned(),
            });
        }
    }
    Ok(json_response(200, &CampaignList { campaigns }))
}

pub async fn campaign_stats(app: &App, req: &Request) -> Result<Response, Problem> {
    let id = campaign_param(req)?;
    let c = app
        .campaigns
        .get_campaign(&id, true)
        .await?
        .ok_or_else(|| Problem::not_found(format!("no campaign {id}")).campaign(id.as_str()))?;
    let s = sale::stats(app, &c).await?;
    Ok(json_response(200, &CampaignStats::new(&c, &s)))
}

pub async fn machinery(app: &App) -> Result<Response, Problem> {
    let queues = app
        .messages
        .queue_depths()
        .await?
        .into_iter()
        .map(|q| {
            let lower = q.name.to_ascii_lowercase();
            QueueView {
                dlq: lower.contains("dlq") || lower.contains("failure"),
                name: q.name,
                visible: q.visible,
                in_flight: q.in_flight,
                delayed: q.delayed,
            }
        })
        .collect();
    let r =
        app.sale.read_live(&[sale::RECONCILE_KEY.to_owned()]).await?.remove(sale::RECONCILE_KEY).unwrap_or_default();
    let reconcile = ReconcileView {
        last_sweep_at: r.get("last_ms").map(|ms| clock::rfc3339(*ms)),
        sweeps: r.get("sweeps").copied().unwrap_or(0),
        violations: r.get("violations").copied().unwrap_or(0),
    };
    Ok(json_response(200, &Machinery { queues, reconcile }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csp(r: &Response) -> String {
        r.headers.get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    }

    fn body(r: &Response) -> String {
        match &r.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => t.clone(),
            other => panic!("not a text body: {other:?}"),
        }
    }

    #[test]
    fn the_shop_is_served_with_its_configured_push_endpoint_and_may_connect_to_it_only() {
        let url = "wss://abc123.execute-api.eu-west-1.amazonaws.com/live";
        let r = shop(url).unwrap();
        assert!(
            body(&r).contains(
                r#"<meta name="holdfast-push-url" content="wss://abc123.execute-api.eu-west-1.amazonaws.com/live">"#
            ),
            "the page names its push endpoint"
        );
        let policy = csp(&r);
        assert!(policy.contains("connect-src 'self' wss://abc123.execute-api.eu-west-1.amazonaws.com;"), "{policy}");
        let sources = policy.split(';').flat_map(|d| d.split_whitespace()).collect::<Vec<_>>();
        assert!(!sources.iter().any(|s| ["ws:", "wss:", "http:", "https:"].contains(s) || s.contains('*')), "{policy}");
        // unset (the local stack): this origin's /ws, which 'self' covers
        let local = shop("").unwrap();
        assert!(body(&local).contains(PUSH_META), "an empty push URL: the page's default");
        assert!(csp(&local).contains("connect-src 'self';"), "{}", csp(&local));
        // nothing but a plain ws(s) URL is taken
        for bad in [
            "https://x.example/",
            "wss://",
            "wss://a.example\"; connect-src *",
            "wss://a b",
            "wss://*.example/",
            "javascript:x",
        ] {
            assert_eq!(push_origin(bad), None, "{bad}");
            assert!(csp(&shop(bad).unwrap()).contains("connect-src 'self';"), "{bad}");
        }
        assert_eq!(push_origin("ws://127.0.0.1:3000/ws").as_deref(), Some("ws://127.0.0.1:3000"));
    }

    #[test]
    fn the_page_takes_its_push_endpoint_from_the_server_only() {
        assert_eq!(SHOP_HTML.matches(PUSH_META).count(), 1, "the placeholder the server fills in");
        // no `ws=` (or any other) override from the URL: a link cannot point the socket elsewhere
        assert!(!SHOP_HTML.contains(r#"get("ws")"#));
    }
}
