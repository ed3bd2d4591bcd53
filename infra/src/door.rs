//! The API's door as AWS keeps it, on the local stack: API Gateway's throttle per route (a token
//! bucket of `ThrottlingRateLimit` tokens per second holding at most `ThrottlingBurstLimit`; a
//! request finding it empty gets 429 `Too Many Requests`) and each function's
//! `ReservedConcurrentExecutions` (Lambda refuses an invocation above it; the HTTP API answers 500
//! `Internal Server Error`). Both are read from `template.yaml` with its parameters — the
//! defaults, or a deployment's overrides (`HOLDFAST_PARAMETERS="Name=value ..."`) — so the local
//! stack's door is the one `sam deploy` would build (docs/waiting-room.md, "Isolation").

use crate::template::{get, scalar, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A route's token bucket, as API Gateway keeps it.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: std::time::Instant,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Self {
        Bucket { rate, burst, tokens: burst, at: std::time::Instant::now() }
    }

    fn take(&mut self, now: std::time::Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Why the door turned a request away.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The route's throttle (429).
    Throttled,
    /// The function's reserved concurrency is in use (500, as the HTTP API answers a Lambda throttle).
    NoConcurrency,
}

#[derive(Default)]
pub struct Door {
    routes: HashMap<String, Mutex<Bucket>>,
    default: Option<(f64, f64)>,
    defaults: Mutex<HashMap<String, Bucket>>,
    functions: HashMap<String, Arc<Semaphore>>,
    /// What the door was built from, for `make run` to print.
    pub summary: Vec<String>,
}

/// A pass through the door: holds the function's concurrency (the permit, released on drop)
/// until the response is made.
pub struct Pass {
    _permit: Option<OwnedSemaphorePermit>,
}

impl Door {
    /// A door that lets everything through.
    pub fn open() -> Door {
        Door::default()
    }

    /// Reads the throttles of the template's `AWS::Serverless::HttpApi` and the reserved
    /// concurrency of its functions, with `overrides` over the parameters' defaults.
    pub fn from_template(doc: &Value, overrides: &BTreeMap<String, String>) -> anyhow::Result<Door> {
        let cfn = Cfn::new(doc, overrides)?;
        let mut door = Door::default();
        let resources = get(doc, "Resources").and_then(Value::as_mapping).into_iter().flatten();
        for (id, r) in resources {
            let id = id.as_str().unwrap_or_default();
            let props = get(r, "Properties");
            match get(r, "Type").and_then(Value::as_str) {
                Some("AWS::Serverless::HttpApi") => {
                    let props = props.ok_or_else(|| anyhow::anyhow!("{id}: no Properties"))?;
                    if let Some(s) = get(props, "DefaultRouteSettings") {
                        door.default = cfn.throttle(s)?;
                    }
                    for (key, s) in get(props, "RouteSettings").and_then(Value::as_mapping).into_iter().flatten() {
                        let key = key.as_str().unwrap_or_default().to_owned();
                        if let Some((rate, burst)) = cfn.throttle(s)? {
                            door.summary.push(format!("{key}: {rate}/s, burst {burst}"));
                            door.routes.insert(key, Mutex::new(Bucket::new(rate, burst)));
                        }
                    }
                }
                Some("AWS::Serverless::Function") => {
                    let binary = get(r, "Metadata")
                        .and_then(|m| get(m, "BuildProperties"))
                        .and_then(|b| get(b, "Binary"))
                        .and_then(Value::as_str)
                        .unwrap_or(id);
                    let reserved = props.and_then(|p| get(p, "ReservedConcurrentExecutions"));
                    if let Some(n) = reserved.map(|v| cfn.value(v)).transpose()?.flatten() {
                        let n: usize = n.parse().map_err(|_| anyhow::anyhow!("{id}: reserved concurrency {n}"))?;
                        door.summary.push(format!("{binary}: reserved concurrency {n}"));
                        door.functions.insert(binary.to_owned(), Arc::new(Semaphore::new(n)));
                    }
                }
                _ => {}
            }
        }
        Ok(door)
    }

    /// Lets a request for `route_key` (served by `function`) in, or says why not.
    pub fn admit(&self, route_key: &str, function: &str) -> Result<Pass, Refused> {
        let now = std::time::Instant::now();
        let ok = match self.routes.get(route_key) {
            Some(b) => b.lock().map(|mut b| b.take(now)).unwrap_or(true),
            None => match self.default {
                Some((rate, burst)) => self
                    .defaults
                    .lock()
                    .map(|mut m| m.entry(route_key.to_owned()).or_insert_with(|| Bucket::new(rate, burst)).take(now))
                    .unwrap_or(true),
                None => true,
            },
        };
        if !ok {
            return Err(Refused::Throttled);
        }
        match self.functions.get(function) {
            Some(s) => {
                s.clone().try_acquire_owned().map(|p| Pass { _permit: Some(p) }).map_err(|_| Refused::NoConcurrency)
            }
            None => Ok(Pass { _permit: None }),
        }
    }
}

/// The few intrinsics the door's settings use, evaluated as CloudFormation would.
struct Cfn<'a> {
    parameters: BTreeMap<String, String>,
    conditions: Option<&'a Value>,
}

impl<'a> Cfn<'a> {
    fn new(doc: &'a Value, overrides: &BTreeMap<String, String>) -> anyhow::Result<Cfn<'a>> {
        let mut parameters = BTreeMap::new();
        for (k, v) in get(doc, "Parameters").and_then(Value::as_mapping).into_iter().flatten() {
            let k = k.as_str().unwrap_or_default().to_owned();
            if let Some(d) = get(v, "Default").and_then(scalar) {
                parameters.insert(k, d);
            }
        }
        for (k, v) in overrides {
            anyhow::ensure!(parameters.contains_key(k), "HOLDFAST_PARAMETERS: the template has no parameter {k}");
            parameters.insert(k.clone(), v.clone());
        }
        Ok(Cfn { parameters, conditions: get(doc, "Conditions") })
    }

    fn throttle(&self, s: &Value) -> anyhow::Result<Option<(f64, f64)>> {
        let num = |k: &str| -> anyhow::Result<Option<f64>> {
            match get(s, k).map(|v| self.value(v)).transpose()?.flatten() {
                Some(n) => Ok(Some(n.parse().map_err(|_| anyhow::anyhow!("{k}: {n} is not a number"))?)),
                None => Ok(None),
            }
        };
        Ok(match (num("ThrottlingRateLimit")?, num("ThrottlingBurstLimit")?) {
            (Some(rate), Some(burst)) => Some((rate, burst)),
            (Some(rate), None) => Some((rate, rate)),
            _ => None,
        })
    }

    /// A value: a literal, `!Ref` of a parameter, or `!If` (`AWS::NoValue` = none).
    fn value(&self, v: &Value) -> anyhow::Result<Option<String>> {
        if let Some(s) = scalar(v) {
            return Ok(Some(s));
        }
        match intrinsic(v).as_ref().map(|(n, a)| (n.as_str(), *a)) {
            Some(("Ref", Value::String(name))) if name == "AWS::NoValue" => Ok(None),
            Some(("Ref", Value::String(name))) => self
                .parameters
                .get(name)
                .cloned()
                .map(Some)
                .ok_or_else(|| anyhow::anyhow!("!Ref {name}: not a parameter")),
            Some(("If", Value::Sequence(s))) if s.len() == 3 => {
                let name = s[0].as_str().ok_or_else(|| anyhow::anyhow!("!If needs a condition name"))?;
                self.value(if self.condition_named(name)? { &s[1] } else { &s[2] })
            }
            _ => anyhow::bail!("the door reads literals, !Ref and !If only: {v:?}"),
        }
    }

    fn condition_named(&self, name: &str) -> anyhow::Result<bool> {
        let c = self.conditions.and_then(|c| get(c, name)).ok_or_else(|| anyhow::anyhow!("no condition {name}"))?;
        self.condition(c)
    }

    fn condition(&self, v: &Value) -> anyhow::Result<bool> {
        let seq = |v: &Value| v.as_sequence().cloned().unwrap_or_default();
        match intrinsic(v).as_ref().map(|(n, a)| (n.as_str(), *a)) {
            Some(("Equals", args)) => {
                let a = seq(args);
                anyhow::ensure!(a.len() == 2, "!Equals takes two values");
                Ok(self.value(&a[0])? == self.value(&a[1])?)
            }
            Some(("Not", args)) => Ok(!self.condition(seq(args).first().unwrap_or(&Value::Null))?),
            Some(("And", args)) => seq(args).iter().try_fold(true, |acc, c| Ok(acc && self.condition(c)?)),
            Some(("Or", args)) => seq(args).iter().try_fold(false, |acc, c| Ok(acc || self.condition(c)?)),
            Some(("Condition", Value::String(name))) => self.condition_named(name),
            _ => anyhow::bail!("unsupported condition {v:?}"),
        }
    }
}

/// `!Name arg` as (Name, arg); the long form `{"Fn::Name": arg}` / `{"Ref": arg}` too.
fn intrinsic(v: &Value) -> Option<(String, &Value)> {
    match v {
        Value::Tagged(t) => Some((t.tag.to_string().trim_start_matches('!').to_owned(), &t.value)),
        Value::Mapping(m) if m.len() == 1 => {
            let (k, v) = m.iter().next()?;
            let k = k.as_str()?;
            Some((k.strip_prefix("Fn::").unwrap_or(k).to_owned(), v))
        }
        _ => None,
    }
}

/// `Name=value Name=value` (as `sam deploy --parameter-overrides` takes them).
pub fn parse_overrides(s: &str) -> anyhow::Result<BTreeMap<String, String>> {
    s.split_whitespace()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| anyhow::anyhow!("HOLDFAST_PARAMETERS: {kv:?} is not Name=value"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const T: &str = r#"
Parameters:
  JoinRate: {Type: Number, Default: 2}
  Reserved: {Type: Number, Default: 0}
  Rate: {Type: Number, Default: 100}
Conditions:
  Reserve: !Not [!Equals [!Ref Reserved, "0"]]
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      DefaultRouteSettings: {ThrottlingBurstLimit: !Ref Rate, ThrottlingRateLimit: !Ref Rate}
      RouteSettings:
        "POST /q": {ThrottlingBurstLimit: 3, ThrottlingRateLimit: !Ref JoinRate}
  Fn:
    Type: AWS::Serverless::Function
    Metadata: {BuildProperties: {Binary: queue-api}}
    Properties:
      ReservedConcurrentExecutions: !If [Reserve, !Ref Reserved, !Ref AWS::NoValue]
"#;

    fn door(over: &str) -> Door {
        let doc = crate::template::yaml(T).unwrap();
        Door::from_template(&doc, &parse_overrides(over).unwrap()).unwrap()
    }

    #[test]
    fn a_route_bucket_holds_its_burst_and_refills_at_its_rate() {
        let mut b = Bucket::new(2.0, 3.0);
        let t0 = Instant::now();
        assert!((0..3).all(|_| b.take(t0)));
        assert!(!b.take(t0));
        assert!(b.take(t0 + Duration::from_millis(500)), "half a second at 2/s is one token");
        assert!(!b.take(t0 + Duration::from_millis(600)));
        assert!((0..3).all(|_| b.take(t0 + Duration::from_secs(60))), "never more than the burst");
        assert!(!b.take(t0 + Duration::from_secs(60)));
    }

    #[test]
    fn routes_have_their_own_limits_and_the_rest_the_default() {
        let d = door("");
        assert!((0..3).all(|_| d.admit("POST /q", "queue-api").is_ok()));
        assert_eq!(d.admit("POST /q", "queue-api").err(), Some(Refused::Throttled));
        // another route is not touched by the first one's use
        assert!((0..100).all(|_| d.admit("POST /orders", "create-order").is_ok()));
        assert_eq!(d.admit("POST /orders", "create-order").err(), Some(Refused::Throttled));
        assert!(d.admit("GET /x", "create-order").is_ok(), "each route its own default bucket");
    }

    #[test]
    fn reserved_concurrency_only_when_the_condition_holds_and_released_with_the_pass() {
        let d = door("");
        let passes: Vec<_> = (0..3).map(|_| d.admit("POST /q", "queue-api")).collect();
        assert!(passes.iter().all(Result::is_ok), "0 = not set: no cap");
        let d = door("Reserved=1 JoinRate=1000");
        let first = d.admit("POST /q", "queue-api").ok();
        assert!(first.is_some());
        assert_eq!(d.admit("POST /q", "queue-api").err(), Some(Refused::NoConcurrency));
        assert!(d.admit("POST /orders", "create-order").is_ok(), "another function is not capped");
        drop(first);
        assert!(d.admit("POST /q", "queue-api").is_ok());
    }

    #[test]
    fn overrides_must_name_parameters() {
        let doc = crate::template::yaml(T).unwrap();
        assert!(Door::from_template(&doc, &parse_overrides("Nope=1").unwrap()).is_err());
        assert!(parse_overrides("JoinRate").is_err());
    }

    #[test]
    fn the_projects_template_builds_a_door() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../template.yaml");
        let doc = crate::template::yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
        let d = Door::from_template(&doc, &parse_overrides("QueueApiReservedConcurrency=2").unwrap()).unwrap();
        assert!(d.summary.iter().any(|s| s == "queue-api: reserved concurrency 2"), "{:?}", d.summary);
        assert!(d.summary.iter().any(|s| s.starts_with("POST /campaigns/{campaign_id}/queue: ")));
        assert!(!d.summary.iter().any(|s| s.starts_with("create-order:")), "0 = not set");
    }
}
