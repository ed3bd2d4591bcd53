//! The three lists of HTTP routes must agree: the OpenAPI document users integrate through
//! (docs/openapi.json), the handlers' route tables (`holdfast::handlers::ROUTES`) and
//! `template.yaml`, which decides what API Gateway routes and authorises in AWS. Each route must
//! be in all three with the same authorisation.

use crate::template::{self, Template};
use holdfast::api::spec::{JWT, SIGNATURE, STRIPE_SIGNATURE};
use holdfast::api::Auth;
use std::collections::BTreeMap;

/// Auth as text, so the three sources compare with one `==`.
fn describe(a: &Auth) -> String {
    match a {
        Auth::Public => "public".into(),
        Auth::User => "any JWT".into(),
        Auth::Scope(s) => format!("JWT with scope {s}"),
        Auth::AnyScope(s) => any_scope(s),
        Auth::Signed(_) => "webhook signature".into(),
    }
}

/// A JWT with one of several scopes (alternatives, in order).
fn any_scope(scopes: &[&str]) -> String {
    match scopes {
        [one] => format!("JWT with scope {one}"),
        more => format!("JWT with any scope of {}", more.join(", ")),
    }
}

/// Alternative security requirements that each name one JWT scope (OpenAPI: any one suffices).
fn jwt_alternatives(reqs: &[serde_json::Value]) -> Option<Vec<&str>> {
    reqs.iter()
        .map(|r| match r.as_object().map(|o| o.iter().collect::<Vec<_>>()).as_deref() {
            Some([(name, scopes)]) if *name == JWT => match scopes.as_array().map(Vec::as_slice) {
                Some([s]) => s.as_str(),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Route key → auth, as the OpenAPI document declares them.
pub fn spec_routes(spec: &serde_json::Value) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let paths = spec["paths"].as_object().ok_or("the document has no paths")?;
    for (path, item) in paths {
        let ops = item.as_object().ok_or(format!("{path} is not an object"))?;
        for (method, op) in ops {
            let key = format!("{} {path}", method.to_uppercase());
            let reqs = op["security"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let auth = match reqs {
                [] => "public".to_owned(),
                [one] => match one.as_object().map(|o| o.iter().collect::<Vec<_>>()).as_deref() {
                    Some([(name, scopes)]) if *name == JWT => match scopes.as_array().map(Vec::as_slice) {
                        Some([]) => "any JWT".to_owned(),
                        Some([s]) => format!("JWT with scope {}", s.as_str().unwrap_or("?")),
                        _ => format!("unreadable scopes {scopes}"),
                    },
                    Some([(name, _)]) if *name == SIGNATURE || *name == STRIPE_SIGNATURE => {
                        "webhook signature".to_owned()
                    }
                    Some([]) => "public".to_owned(),
                    _ => format!("unreadable security {one}"),
                },
                more => match jwt_alternatives(more) {
                    Some(scopes) => any_scope(&scopes),
                    None => {
                        format!("alternative security requirements {}", serde_json::Value::from(more.to_vec()))
                    }
                },
            };
            out.insert(key, auth);
        }
    }
    Ok(out)
}

/// What API Gateway does for a route the code describes: the webhook has no authorizer.
fn as_template(a: &Auth) -> template::Auth {
    match a {
        Auth::Public | Auth::Signed(_) => template::Auth::Public,
        Auth::User => template::Auth::Jwt { scopes: vec![] },
        Auth::Scope(s) => template::Auth::Jwt { scopes: vec![(*s).to_owned()] },
        Auth::AnyScope(s) => template::Auth::Jwt { scopes: s.iter().map(|s| (*s).to_owned()).collect() },
    }
}

/// Every disagreement between the document, the route tables and the template, as sentences.
pub fn problems(spec: &serde_json::Value, t: &Template) -> Vec<String> {
    let mut out = Vec::new();
    let spec = match spec_routes(spec) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let code: BTreeMap<&str, &Auth> =
        holdfast::handlers::ROUTES.iter().flat_map(|(_, rs)| rs.iter().map(|r| (r.key, &r.auth))).collect();
    for (key, auth) in &code {
        match spec.get(*key) {
            None => out.push(format!("{key} is handled but not in the OpenAPI document")),
            Some(s) if *s != describe(auth) => {
                out.push(format!("{key}: the OpenAPI document says {s}, the handler says {}", describe(auth)))
            }
            Some(_) => {}
        }
    }
    for key in spec.keys() {
        if !code.contains_key(key.as_str()) {
            out.push(format!("{key} is in the OpenAPI document but no handler serves it"));
        }
    }
    for (key, _, declared) in t.routes() {
        if let Some(auth) = code.get(key.as_str()) {
            if as_template(auth) != declared {
                out.push(format!("{key}: template.yaml authorises {declared:?}, the handler says {}", describe(auth)));
            }
        }
    }
    out
}
