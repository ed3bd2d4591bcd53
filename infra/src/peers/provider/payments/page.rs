//! The simulated provider's payment page as a browser sees it: `GET /pay/{id}` asked for HTML
//! (`Accept: text/html`, as a browser following `redirect_url` asks) answers a small page with
//! the amount and two buttons, "Pay" and "Decline", which `POST /pay/{id}` on the same peer
//! (`{"outcome":"succeed"|"fail"}`, the webhook delivered once). Asked for anything else, the
//! route answers the payment as JSON, as before. The storefront's browser test pays here
//! (docs/shop.md).

use super::SimPayment;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::HeaderValue;

/// Whether the caller is a browser asking for a page.
pub(super) fn wants_html(headers: &hyper::HeaderMap) -> bool {
    headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.split(',').any(|t| t.trim().starts_with("text/html")))
}

fn esc(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// The page for payment `p`.
pub(super) fn render(p: &SimPayment) -> super::super::super::Response {
    use holdfast::adapters::provider::WireStatus;
    let status = serde_json::to_value(p.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    // as `move_to` allows: the buyer may still pay an open, processing or failed payment
    let open = matches!(p.status, WireStatus::Open | WireStatus::Processing | WireStatus::Failed);
    let amount = format!("{}.{:02} {}", p.amount / 100, p.amount % 100, esc(&p.currency));
    let html = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Simulated payment provider</title>
<style>body{{font:15px/1.5 system-ui,sans-serif;max-width:520px;margin:40px auto;padding:0 16px;color:#1d2330}}
.box{{border:1px solid #d9dde5;border-radius:8px;padding:16px 20px}}button{{font:inherit;padding:8px 16px;border-radius:5px;border:1px solid #1a7f37;background:#1a7f37;color:#fff;cursor:pointer;margin-right:8px}}
button.no{{background:#fff;color:#1d2330;border-color:#d9dde5}}button:disabled{{opacity:.45}}#result{{margin-top:14px;font-weight:600}}</style></head>
<body><main class="box"><h1 style="font-size:18px;margin-top:0">Simulated payment provider</h1>
<p>Order <code id="order-id">{order}</code></p>
<p>Amount: <strong id="amount">{amount}</strong></p>
<p>Status: <strong id="status" data-status="{status}">{status}</strong></p>
<p><button id="pay" type="button"{disabled}>Pay {amount}</button><button id="decline" class="no" type="button"{disabled}>Decline</button></p>
<p id="result" role="status" aria-live="polite"></p>
<p style="color:#5f6b7a;font-size:13px">The local stack's stand-in for a payment provider's page: paying sends the signed
webhook to the shop's backend. You may close this tab afterwards.</p></main>
<script>
"use strict";
function pay(outcome) {{
  document.getElementById("pay").disabled = true; document.getElementById("decline").disabled = true;
  fetch(location.pathname, {{method: "POST", headers: {{"Content-Type": "application/json"}}, body: JSON.stringify({{outcome: outcome}})}})
    .then(function (r) {{ return r.json().then(function (j) {{ return [r.status, j]; }}); }})
    .then(function (a) {{
      var p = a[1].payment || a[1], s = String(p.status || "").toUpperCase();
      var st = document.getElementById("status"); st.textContent = s; st.setAttribute("data-status", s);
      document.getElementById("result").textContent = a[0] === 200
        ? (s === "SUCCEEDED" ? "Payment succeeded. You can close this tab." : "Payment declined.")
        : "The payment can no longer move (" + s + ").";
    }}, function (e) {{ document.getElementById("result").textContent = "Network error: " + e.message; }});
}}
document.getElementById("pay").onclick = function () {{ pay("succeed"); }};
document.getElementById("decline").onclick = function () {{ pay("fail"); }};
</script></body></html>"#,
        order = esc(p.order_id.as_deref().unwrap_or("")),
        amount = amount,
        status = esc(&status),
        disabled = if open { "" } else { " disabled" },
    );
    let mut r = hyper::Response::new(Full::new(Bytes::from(html)));
    r.headers_mut().insert("content-type", HeaderValue::from_static("text/html; charset=utf-8"));
    r.headers_mut().insert("cache-control", HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast::adapters::provider::WireStatus;
    use http_body_util::BodyExt;

    fn payment(status: WireStatus) -> SimPayment {
        SimPayment {
            payment_id: "sim_pay_1".into(),
            attempt_key: None,
            order_id: Some("o<1>".into()),
            amount: 1999,
            currency: "EUR".into(),
            status,
            captured_day: None,
            forgotten: false,
        }
    }

    async fn text(p: &SimPayment) -> String {
        let body = render(p).into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[test]
    fn a_browser_asks_for_the_page_and_a_client_for_json() {
        let mut h = hyper::HeaderMap::new();
        assert!(!wants_html(&h));
        h.insert(hyper::header::ACCEPT, HeaderValue::from_static("text/html,application/xhtml+xml,*/*;q=0.8"));
        assert!(wants_html(&h));
        h.insert(hyper::header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!wants_html(&h));
    }

    #[tokio::test]
    async fn the_page_shows_the_amount_escapes_the_order_and_disables_a_settled_payment() {
        let open = text(&payment(WireStatus::Open)).await;
        assert!(open.contains("Pay 19.99 EUR") && open.contains("o&lt;1&gt;") && !open.contains(" disabled>"));
        let paid = text(&payment(WireStatus::Succeeded)).await;
        assert!(paid.contains("data-status=\"SUCCEEDED\"") && paid.contains(" disabled>"));
    }
}
