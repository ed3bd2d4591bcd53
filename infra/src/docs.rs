//! The local stack's API pages: `GET /openapi.json` (the document generated from the API types)
//! and `GET /docs`, a plain HTML page listing every operation from that document. The page has
//! no scripts, so it works without any network.

use serde_json::Value;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn schema_name(v: &Value) -> String {
    let r = v["content"].as_object().and_then(|c| c.values().next()).map(|m| &m["schema"]["$ref"]);
    r.and_then(Value::as_str).map(|r| r.rsplit('/').next().unwrap_or(r).to_owned()).unwrap_or_default()
}

fn security(op: &Value) -> String {
    let reqs = op["security"].as_array().cloned().unwrap_or_default();
    if reqs.is_empty() {
        return "public".into();
    }
    reqs.iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.iter())
        .map(|(k, scopes)| {
            let s: Vec<&str> = scopes.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if s.is_empty() {
                k.clone()
            } else {
                format!("{k} ({})", s.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The HTML page for a document.
pub fn page(spec: &Value) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Holdfast API</title><style>\
         body{font-family:sans-serif;max-width:60em;margin:2em auto}code{background:#eee;padding:0 .2em}\
         td,th{border-bottom:1px solid #ccc;padding:.3em;text-align:left;vertical-align:top}</style></head><body>",
    );
    h += &format!(
        "<h1>{}</h1><p>{}</p><p>Machine-readable: <a href=\"/openapi.json\">openapi.json</a> (OpenAPI {}).</p>",
        esc(spec["info"]["title"].as_str().unwrap_or("API")),
        esc(spec["info"]["description"].as_str().unwrap_or("")),
        esc(spec["openapi"].as_str().unwrap_or("")),
    );
    h += "<table><tr><th>Route</th><th>Auth</th><th>Body</th><th>Answers</th></tr>";
    for (path, item) in spec["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let answers: Vec<String> = op["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(status, r)| {
                    let body = schema_name(r);
                    let d = esc(r["description"].as_str().unwrap_or(""));
                    if body.is_empty() {
                        format!("<b>{status}</b> {d}")
                    } else {
                        format!("<b>{status}</b> {d} <code>{}</code>", esc(&body))
                    }
                })
                .collect();
            h += &format!(
                "<tr><td><code>{} {}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                method.to_uppercase(),
                esc(path),
                esc(&security(op)),
                esc(&schema_name(&op["requestBody"])),
                answers.join("<br>"),
            );
        }
    }
    h += "</table><h2>Schemas</h2>";
    for (name, s) in spec["components"]["schemas"].as_object().into_iter().flatten() {
        h += &format!(
            "<h3 id=\"{0}\">{0}</h3><pre>{1}</pre>",
            esc(name),
            esc(&serde_json::to_string_pretty(s).unwrap_or_default())
        );
    }
    h + "</body></html>"
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_lists_every_operation_with_its_auth() {
        let spec: serde_json::Value = serde_json::from_str(&holdfast::handlers::routes::openapi_json()).unwrap();
        let p = super::page(&spec);
        for (_, routes) in holdfast::handlers::ROUTES {
            for r in *routes {
                let (m, path) = r.key.split_once(' ').unwrap();
                assert!(p.contains(&format!("<code>{m} {}</code>", super::esc(path))), "{}", r.key);
            }
        }
        assert!(p.contains("jwt (stock:admin)") && p.contains("webhook_signature") && p.contains("public"));
    }
}
