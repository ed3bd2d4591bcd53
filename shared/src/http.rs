//! The HTTP edge: reading API Gateway HTTP API (payload v2) requests and answering with JSON or
//! RFC 9457 problem+json. Handlers stay thin: parse here, decide in the services.

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use base64::Engine;
use http::header::{HeaderValue, CONTENT_TYPE};
use serde_json::{json, Map, Value};

pub type Request = ApiGatewayV2httpRequest;
pub type Response = ApiGatewayV2httpResponse;

/// An error answer. `code` is stable and documented (DESIGN §7).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub status: u16,
    pub code: &'static str,
    pub title: &'static str,
    pub detail: String,
    pub extra: Map<String, Value>,
}

impl Problem {
    pub fn new(status: u16, code: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        Problem { status, code, title, detail: detail.into(), extra: Map::new() }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    pub fn malformed(detail: impl Into<String>) -> Self {
        Self::new(400, "malformed_json", "Request body is not valid JSON", detail)
    }
    pub fn validation(detail: impl Into<String>) -> Self {
        Self::new(422, "validation_failed", "Request failed validation", detail)
    }
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(404, "not_found", "Not found", detail)
    }
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(401, "unauthorized", "Unauthorized", detail)
    }
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(503, "temporarily_unavailable", "Temporarily unavailable, retry", detail)
    }
    pub fn invalid_transition(detail: impl Into<String>) -> Self {
        Self::new(409, "invalid_transition", "Invalid state transition", detail)
    }

    pub fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("type".into(), json!(format!("https://holdfast.dev/problems/{}", self.code)));
        body.insert("title".into(), json!(self.title));
        body.insert("status".into(), json!(self.status));
        body.insert("code".into(), json!(self.code));
        body.insert("detail".into(), json!(self.detail));
        let retry_after = self.extra.get("retry_after").and_then(Value::as_u64);
        body.extend(self.extra);
        let mut r = respond(self.status, "application/problem+json", Value::Object(body).to_string());
        if let Some(s) = retry_after {
            r.headers.insert(http::header::RETRY_AFTER, HeaderValue::from(s));
        }
        r
    }
}

impl Problem {
    /// 429 `busy`: the store is throttling (a hot SKU past its partitions' limits); the same
    /// request succeeds a moment later. `retry_after` is also sent as the `Retry-After` header.
    pub fn busy() -> Self {
        Self::new(
            429,
            "busy",
            "Busy, retry shortly",
            "the stock store is at capacity for this SKU; retry after a moment",
        )
        .with("retry_after", 1)
    }

    /// A dependency failure: [`Problem::busy`] when the store throttled, else the generic 503.
    pub fn from_store(e: anyhow::Error) -> Self {
        if crate::ports::is_throttled(&e) {
            tracing::warn!(error = format!("{e:#}"), "throttled");
            return Self::busy();
        }
        Self::from(e)
    }
}

impl From<anyhow::Error> for Problem {
    fn from(e: anyhow::Error) -> Self {
        tracing::error!(error = format!("{e:#}"), "request failed");
        Problem::internal("a dependency failed; the request may be retried with the same Idempotency-Key")
    }
}

pub fn respond(status: u16, content_type: &'static str, body: String) -> Response {
    let mut r = Response { status_code: i64::from(status), ..Default::default() };
    r.headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.body = Some(Body::Text(body));
    r
}

pub fn json_response(status: u16, v: &Value) -> Response {
    respond(status, "application/json", v.to_string())
}

/// Collapses a handler result into the response API Gateway returns.
pub fn finish(r: Result<Response, Problem>) -> Response {
    r.unwrap_or_else(Problem::into_response)
}

pub fn route(req: &Request) -> &str {
    req.route_key.as_deref().or(req.request_context.route_key.as_deref()).unwrap_or("")
}

pub fn path_param<'a>(req: &'a Request, name: &str) -> Result<&'a str, Problem> {
    req.path_parameters
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| Problem::not_found(format!("missing path parameter {name}")))
}

pub fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

pub fn query<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.query_string_parameters.first(name)
}

/// The raw body bytes (API Gateway may base64-encode them), refused above `max` bytes.
pub fn body_bytes(req: &Request, max: usize) -> Result<Vec<u8>, Problem> {
    let raw = req.body.as_deref().unwrap_or("");
    let bytes = if req.is_base64_encoded {
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map_err(|_| Problem::malformed("body is not valid base64"))?
    } else {
        raw.as_bytes().to_vec()
    };
    if bytes.len() > max {
        return Err(Problem::new(413, "payload_too_large", "Payload too large", format!("body exceeds {max} bytes")));
    }
    Ok(bytes)
}

/// The body as a JSON object.
pub fn json_body(req: &Request, max: usize) -> Result<Map<String, Value>, Problem> {
    let bytes = body_bytes(req, max)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::malformed("body is empty"));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Problem::validation("body must be a JSON object")),
        Err(e) => Err(Problem::malformed(e.to_string())),
    }
}

/// Refuses fields a route does not know, so a typo is an error and not a silent default.
pub fn only_fields(m: &Map<String, Value>, allowed: &[&str]) -> Result<(), Problem> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Problem::validation(format!("unknown field {k:?}")).with("field", k.as_str())),
        None => Ok(()),
    }
}

pub fn str_field<'a>(m: &'a Map<String, Value>, name: &str) -> Result<&'a str, Problem> {
    match m.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Problem::validation(format!("{name} must be a string")).with("field", name)),
        None => Err(Problem::validation(format!("{name} is required")).with("field", name)),
    }
}

/// The authenticated principal: `sub` of the JWT the authorizer validated.
pub fn subject(req: &Request) -> Result<crate::domain::UserId, Problem> {
    let sub = req
        .request_context
        .authorizer
        .as_ref()
        .and_then(|a| a.jwt.as_ref())
        .and_then(|j| j.claims.get("sub"))
        .ok_or_else(|| Problem::unauthorized("no authenticated subject"))?;
    crate::domain::UserId::parse(sub).map_err(|e| Problem::unauthorized(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Request {
        Request { body: Some(body.into()), ..Default::default() }
    }

    #[test]
    fn bodies_are_objects_within_the_size_limit() {
        assert!(json_body(&req("{\"a\":1}"), 100).is_ok());
        assert_eq!(json_body(&req("{"), 100).unwrap_err().code, "malformed_json");
        assert_eq!(json_body(&req(""), 100).unwrap_err().code, "malformed_json");
        assert_eq!(json_body(&req("[1]"), 100).unwrap_err().code, "validation_failed");
        assert_eq!(json_body(&req(&"x".repeat(101)), 100).unwrap_err().status, 413);
        let deep = "[".repeat(10_000);
        assert_eq!(json_body(&req(&deep), 100_000).unwrap_err().status, 400);
    }

    #[test]
    fn problems_render_as_rfc9457() {
        let r = Problem::validation("x").with("sku", "A").into_response();
        assert_eq!(r.status_code, 422);
        assert_eq!(r.headers.get(CONTENT_TYPE).unwrap(), "application/problem+json");
        let Some(Body::Text(b)) = r.body else { panic!() };
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["code"], "validation_failed");
        assert_eq!(v["sku"], "A");
        assert_eq!(v["status"], 422);
    }
}
