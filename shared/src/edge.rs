//! The origin check of the optional edge (template parameter `EdgeProtection`; docs/deploy.md,
//! "The edge"). With the edge on, CloudFront adds `X-Holdfast-Origin-Verify: <secret>` to every
//! request it forwards, and every HTTP function is given the same secret in
//! `HOLDFAST_ORIGIN_VERIFY`: a request without it did not pass CloudFront, and so not WAF, and is
//! answered 403 before any handler runs. With the edge off (and locally) the variable is empty
//! and the check is off.
//!
//! What this does not do: close the origin. By the time a Lambda sees the request, API Gateway
//! has matched the route, charged the route's throttle and invoked the function, so a flood sent
//! to the origin's host name still uses up throttles and concurrency that buyers share. The
//! origin is hidden, not closed (docs/deploy.md, "What stays open: the origin").
//!
//! It runs in the Lambda runtime loop (`lambda::run`), before the `sam local` gate; the local
//! stack calls the handlers directly and has no CloudFront in front.

use crate::http::{json_response, Request, Response};

/// The variable holding the expected value (empty or unset: no check).
pub const ORIGIN_VERIFY_VAR: &str = "HOLDFAST_ORIGIN_VERIFY";
/// The header CloudFront adds (template.yaml `OriginCustomHeaders`), as API Gateway passes
/// header names to Lambda: lower case.
pub const ORIGIN_VERIFY_HEADER: &str = "x-holdfast-origin-verify";

/// The check, configured once per process.
#[derive(Clone)]
pub struct OriginGate {
    expected: Option<Vec<u8>>,
}

impl std::fmt::Debug for OriginGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginGate").field("enabled", &self.enabled()).finish()
    }
}

impl OriginGate {
    pub fn from_env() -> OriginGate {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> OriginGate {
        OriginGate { expected: get(ORIGIN_VERIFY_VAR).filter(|v| !v.trim().is_empty()).map(|v| v.into_bytes()) }
    }

    pub fn enabled(&self) -> bool {
        self.expected.is_some()
    }

    /// Whether `req` came through CloudFront (always, when the check is off).
    pub fn admits(&self, req: &Request) -> bool {
        let Some(expected) = &self.expected else { return true };
        match crate::http::header(req, ORIGIN_VERIFY_HEADER) {
            Some(got) => constant_time_eq(got.as_bytes(), expected),
            None => false,
        }
    }

    /// The request to hand on, or the 403 a direct call to the origin gets. The answer says
    /// nothing about the header.
    pub fn check(&self, req: Request) -> Result<Request, Box<Response>> {
        if self.admits(&req) {
            Ok(req)
        } else {
            tracing::warn!(route = crate::http::route(&req), "request did not come through the edge; refused");
            Err(Box::new(json_response(403, &serde_json::json!({ "message": "Forbidden" }))))
        }
    }
}

/// Equal bytes, in time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(header: Option<&str>) -> Request {
        let mut r = Request { route_key: Some("POST /orders".into()), ..Default::default() };
        if let Some(v) = header {
            r.headers.insert(ORIGIN_VERIFY_HEADER, v.parse().unwrap());
        }
        r
    }

    fn gate(v: Option<&str>) -> OriginGate {
        let v = v.map(str::to_owned);
        OriginGate::from_lookup(&move |k| if k == ORIGIN_VERIFY_VAR { v.clone() } else { None })
    }

    #[test]
    fn off_when_the_variable_is_unset_or_empty() {
        for g in [gate(None), gate(Some("")), gate(Some("  "))] {
            assert!(!g.enabled());
            assert!(g.check(req(None)).is_ok());
        }
    }

    #[test]
    fn on_it_admits_only_the_exact_value() {
        let g = gate(Some("s3cret-value"));
        assert!(g.enabled());
        assert!(g.check(req(Some("s3cret-value"))).is_ok());
        for bad in [None, Some(""), Some("s3cret-valu"), Some("s3cret-value2"), Some("S3CRET-VALUE")] {
            let refused = g.check(req(bad)).unwrap_err();
            assert_eq!(refused.status_code, 403, "{bad:?}");
        }
        assert!(!format!("{g:?}").contains("s3cret"), "Debug does not print the value");
    }
}
