//! Reads `template.yaml` into the model the local stack runs: tables, queues, the bus and its
//! rules, and every function with its environment and event sources. Nothing here is a second
//! list of resources: if the template does not declare it, the local stack does not have it.

use anyhow::{anyhow, bail, Context};
pub use serde_norway::Value;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone)]
pub struct Template {
    pub parameters: BTreeMap<String, Option<String>>,
    pub tables: Vec<Table>,
    pub queues: Vec<Queue>,
    pub buses: Vec<String>,
    pub rules: Vec<Rule>,
    pub functions: Vec<Function>,
    /// Logical ids of the KMS keys (`AWS::KMS::Key`; the code key).
    pub kms_keys: Vec<String>,
    /// The WebSocket APIs (`AWS::ApiGatewayV2::Api` with `ProtocolType: WEBSOCKET`) with their
    /// routes, each resolved through its integration to the function it invokes (docs/push.md).
    pub websockets: Vec<WebSocketApi>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebSocketApi {
    pub logical_id: String,
    pub route_selection: String,
    /// (route key, function binary)
    pub routes: Vec<(String, String)>,
    /// The stage's name (`AWS::ApiGatewayV2::Stage`), if one is declared.
    pub stage: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub logical_id: String,
    /// The `Properties` of the resource, as CloudFormation has them.
    pub properties: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct Queue {
    pub logical_id: String,
    pub visibility_timeout: Option<i64>,
    pub delay_seconds: Option<i64>,
    pub retention: Option<i64>,
    /// (DLQ logical id, maxReceiveCount)
    pub redrive: Option<(String, i64)>,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub logical_id: String,
    pub bus: Option<String>,
    pub pattern: serde_json::Value,
    /// (target id, queue logical id)
    pub targets: Vec<(String, String)>,
}

/// A value in a function's environment, before the local stack resolves it.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvValue {
    Literal(String),
    Ref(String),
    GetAtt(String, String),
    /// Something only AWS can resolve (e.g. a Secrets Manager dynamic reference).
    Deferred(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    Public,
    Jwt { scopes: Vec<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Http {
        method: String,
        path: String,
        auth: Auth,
    },
    Sqs {
        queue: String,
        batch_size: i64,
        report_failures: bool,
    },
    Stream {
        table: String,
        batch_size: i64,
        max_retries: i64,
        /// `MaximumRecordAgeInSeconds` (-1 = no limit, the AWS default).
        max_record_age_s: i64,
        /// `BisectBatchOnFunctionError`.
        bisect: bool,
        on_failure: Option<String>,
        filters: Vec<serde_json::Value>,
    },
    Schedule {
        expression: String,
    },
}

#[derive(Debug, Clone)]
pub struct Function {
    pub logical_id: String,
    pub binary: String,
    pub env: BTreeMap<String, EnvValue>,
    pub events: Vec<(String, Event)>,
}

impl Event {
    /// `METHOD /path`: the API Gateway route key.
    pub fn route_key(&self) -> Option<String> {
        match self {
            Event::Http { method, path, .. } => Some(format!("{} {}", method.to_uppercase(), path)),
            _ => None,
        }
    }
}

/// The YAML parser keeps `!Ref X` as a tagged value; CloudFormation also accepts the long form
/// `{"Ref": "X"}` / `{"Fn::GetAtt": ...}`. This reads both: (function name, argument).
fn intrinsic(v: &Value) -> Option<(String, Value)> {
    match v {
        Value::Tagged(t) => Some((t.tag.to_string().trim_start_matches('!').to_owned(), t.value.clone())),
        Value::Mapping(m) if m.len() == 1 => {
            let (k, v) = m.iter().next()?;
            let k = k.as_str()?;
            match k {
                "Ref" => Some(("Ref".into(), v.clone())),
                _ if k.starts_with("Fn::") => Some((k.trim_start_matches("Fn::").to_owned(), v.clone())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A template value as the checks read it: a literal or one of the intrinsic functions the
/// template uses. This is the one reader of intrinsics, for the local stack and the policy tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(String),
    Ref(String),
    GetAtt(String, String),
    Sub(String),
    /// Anything else, as text for messages.
    Other(String),
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Literal(s) => write!(f, "{s:?}"),
            Expr::Ref(s) => write!(f, "!Ref {s}"),
            Expr::GetAtt(a, b) => write!(f, "!GetAtt {a}.{b}"),
            Expr::Sub(s) => write!(f, "!Sub {s:?}"),
            Expr::Other(s) => f.write_str(s),
        }
    }
}

pub fn expr(v: &Value) -> Expr {
    if let Some(s) = scalar(v) {
        return Expr::Literal(s);
    }
    let Some((name, inner)) = intrinsic(v) else { return Expr::Other(format!("{v:?}")) };
    match (name.as_str(), &inner) {
        ("Ref", Value::String(s)) => Expr::Ref(s.clone()),
        ("GetAtt", Value::String(s)) => match s.split_once('.') {
            Some((a, b)) => Expr::GetAtt(a.to_owned(), b.to_owned()),
            None => Expr::Other(format!("!GetAtt {s}")),
        },
        ("GetAtt", Value::Sequence(seq)) if seq.len() == 2 => match (seq[0].as_str(), seq[1].as_str()) {
            (Some(a), Some(b)) => Expr::GetAtt(a.to_owned(), b.to_owned()),
            _ => Expr::Other(format!("!GetAtt {seq:?}")),
        },
        ("Sub", Value::String(s)) => Expr::Sub(s.clone()),
        _ => Expr::Other(format!("!{name} {inner:?}")),
    }
}

fn ref_target(v: &Value) -> Option<String> {
    match expr(v) {
        Expr::Ref(s) => Some(s),
        _ => None,
    }
}

fn getatt_target(v: &Value) -> Option<(String, String)> {
    match expr(v) {
        Expr::GetAtt(a, b) => Some((a, b)),
        _ => None,
    }
}

/// The template as a YAML tree (tags kept).
pub fn yaml(text: &str) -> anyhow::Result<Value> {
    serde_norway::from_str(text).context("template.yaml is not YAML")
}

/// A literal as text (strings, numbers, booleans).
pub(crate) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Converts YAML to JSON, with intrinsics kept as `{"Ref": ...}` / `{"Fn::X": ...}`.
pub fn to_json(v: &Value) -> serde_json::Value {
    if let Some((name, inner)) = intrinsic(v) {
        let key = if name == "Ref" { "Ref".to_owned() } else { format!("Fn::{name}") };
        return serde_json::json!({ key: to_json(&inner) });
    }
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::to_value(n).unwrap_or(serde_json::Value::Null),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Sequence(s) => serde_json::Value::Array(s.iter().map(to_json).collect()),
        Value::Mapping(m) => serde_json::Value::Object(
            m.iter().filter_map(|(k, v)| Some((k.as_str()?.to_owned(), to_json(v)))).collect(),
        ),
        Value::Tagged(t) => to_json(&t.value),
    }
}

pub fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.as_mapping()?.get(k)
}

fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
}

impl Template {
    pub fn load(path: &Path) -> anyhow::Result<Template> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> anyhow::Result<Template> {
        let doc = yaml(text)?;
        let mut t = Template {
            parameters: BTreeMap::new(),
            tables: vec![],
            queues: vec![],
            buses: vec![],
            rules: vec![],
            functions: vec![],
            kms_keys: vec![],
            websockets: vec![],
        };
        let mut ws = WebSocketParts::default();
        if let Some(params) = get(&doc, "Parameters").and_then(Value::as_mapping) {
            for (k, v) in params {
                let name = k.as_str().ok_or_else(|| anyhow!("parameter name"))?.to_owned();
                t.parameters.insert(name, get(v, "Default").and_then(scalar));
            }
        }
        let globals_env = get(&doc, "Globals")
            .and_then(|g| get(g, "Function"))
            .and_then(|f| get(f, "Environment"))
            .and_then(|e| get(e, "Variables"))
            .cloned();
        let resources = get(&doc, "Resources").and_then(Value::as_mapping).ok_or_else(|| anyhow!("no Resources"))?;
        for (k, r) in resources {
            let id = k.as_str().ok_or_else(|| anyhow!("resource id"))?.to_owned();
            let ty = get(r, "Type").and_then(Value::as_str).unwrap_or("");
            let props = get(r, "Properties").cloned().unwrap_or(Value::Null);
            match ty {
                "AWS::DynamoDB::Table" => t.tables.push(Table { logical_id: id, properties: to_json(&props) }),
                "AWS::SQS::Queue" => {
                    let redrive = get(&props, "RedrivePolicy").map(|rp| {
                        let dlq = get(rp, "deadLetterTargetArn").and_then(getatt_target).map(|(a, _)| a);
                        let max = int(get(rp, "maxReceiveCount")).unwrap_or(1);
                        dlq.map(|d| (d, max))
                    });
                    let redrive = match redrive {
                        Some(Some(r)) => Some(r),
                        Some(None) => bail!("{id}: RedrivePolicy must name its DLQ with !GetAtt <Queue>.Arn"),
                        None => None,
                    };
                    t.queues.push(Queue {
                        logical_id: id,
                        visibility_timeout: int(get(&props, "VisibilityTimeout")),
                        delay_seconds: int(get(&props, "DelaySeconds")),
                        retention: int(get(&props, "MessageRetentionPeriod")),
                        redrive,
                    });
                }
                "AWS::Events::EventBus" => t.buses.push(id),
                "AWS::KMS::Key" => t.kms_keys.push(id),
                "AWS::Events::Rule" => {
                    let targets = get(&props, "Targets")
                        .and_then(Value::as_sequence)
                        .map(|ts| {
                            ts.iter()
                                .filter_map(|tg| {
                                    let tid = get(tg, "Id").and_then(scalar)?;
                                    let q = get(tg, "Arn").and_then(getatt_target)?.0;
                                    Some((tid, q))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    t.rules.push(Rule {
                        logical_id: id,
                        bus: get(&props, "EventBusName").and_then(ref_target),
                        pattern: get(&props, "EventPattern").map(to_json).unwrap_or_default(),
                        targets,
                    });
                }
                "AWS::Serverless::Function" => t.functions.push(parse_function(&id, r, &props, globals_env.as_ref())?),
                ty if ty.starts_with("AWS::ApiGatewayV2::") => ws.read(&id, ty, &props),
                _ => {}
            }
        }
        t.websockets = ws.resolve(&t.functions)?;
        Ok(t)
    }

    pub fn function(&self, binary: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.binary == binary)
    }

    /// Every HTTP route: (route key, function binary, auth).
    pub fn routes(&self) -> Vec<(String, String, Auth)> {
        let mut out = Vec::new();
        for f in &self.functions {
            for (_, e) in &f.events {
                if let (Some(k), Event::Http { auth, .. }) = (e.route_key(), e) {
                    out.push((k, f.binary.clone(), auth.clone()));
                }
            }
        }
        out
    }
}

/// The WebSocket API resources as read, before their references are followed.
#[derive(Default)]
struct WebSocketParts {
    /// (api, route selection expression)
    apis: Vec<(String, String)>,
    /// integration → function logical id (from `${F.Arn}` in its `IntegrationUri`)
    integrations: BTreeMap<String, String>,
    /// (api, route key, integration)
    routes: Vec<(String, String, String)>,
    /// api → stage name
    stages: BTreeMap<String, String>,
}

/// `${X}` or `${X.Attr}` inside a `!Sub` text that ends at `suffix`: `X`.
fn sub_reference(v: &Value, before: &str) -> Option<String> {
    let Expr::Sub(text) = expr(v) else { return None };
    let start = text.find(before)? + before.len();
    let rest = text[start..].strip_prefix("${")?;
    let name = &rest[..rest.find('}')?];
    Some(name.split('.').next().unwrap_or(name).to_owned())
}

impl WebSocketParts {
    fn read(&mut self, id: &str, ty: &str, props: &Value) {
        let api = get(props, "ApiId").and_then(ref_target);
        match ty {
            "AWS::ApiGatewayV2::Api" if get(props, "ProtocolType").and_then(Value::as_str) == Some("WEBSOCKET") => {
                let selection = get(props, "RouteSelectionExpression").and_then(scalar).unwrap_or_default();
                self.apis.push((id.to_owned(), selection));
            }
            "AWS::ApiGatewayV2::Integration" => {
                if let Some(f) = get(props, "IntegrationUri").and_then(|u| sub_reference(u, "/functions/")) {
                    self.integrations.insert(id.to_owned(), f);
                }
            }
            "AWS::ApiGatewayV2::Route" => {
                let key = get(props, "RouteKey").and_then(scalar);
                let target = get(props, "Target").and_then(|t| sub_reference(t, "integrations/"));
                if let (Some(api), Some(key), Some(target)) = (api, key, target) {
                    self.routes.push((api, key, target));
                }
            }
            "AWS::ApiGatewayV2::Stage" => {
                if let (Some(api), Some(name)) = (api, get(props, "StageName").and_then(scalar)) {
                    self.stages.insert(api, name);
                }
            }
            _ => {}
        }
    }

    fn resolve(self, functions: &[Function]) -> anyhow::Result<Vec<WebSocketApi>> {
        let mut out = Vec::new();
        for (api, route_selection) in &self.apis {
            let mut routes = Vec::new();
            for (_, key, integration) in self.routes.iter().filter(|(a, _, _)| a == api) {
                let f = self
                    .integrations
                    .get(integration)
                    .ok_or_else(|| anyhow!("{api} route {key}: integration {integration} invokes no function"))?;
                let binary = functions
                    .iter()
                    .find(|x| &x.logical_id == f)
                    .ok_or_else(|| anyhow!("{api} route {key}: {f} is not a function of the template"))?;
                routes.push((key.clone(), binary.binary.clone()));
            }
            out.push(WebSocketApi {
                logical_id: api.clone(),
                route_selection: route_selection.clone(),
                routes,
                stage: self.stages.get(api).cloned(),
            });
        }
        Ok(out)
    }
}

fn parse_env(vars: Option<&Value>, into: &mut BTreeMap<String, EnvValue>) {
    let Some(m) = vars.and_then(Value::as_mapping) else { return };
    for (k, v) in m {
        let Some(k) = k.as_str() else { continue };
        let val = if let Some(r) = ref_target(v) {
            EnvValue::Ref(r)
        } else if let Some((a, b)) = getatt_target(v) {
            EnvValue::GetAtt(a, b)
        } else if let Some(s) = scalar(v) {
            EnvValue::Literal(s)
        } else {
            EnvValue::Deferred(serde_json::to_string(&to_json(v)).unwrap_or_default())
        };
        into.insert(k.to_owned(), val);
    }
}

fn parse_function(id: &str, r: &Value, props: &Value, globals_env: Option<&Value>) -> anyhow::Result<Function> {
    let binary = get(r, "Metadata")
        .and_then(|m| get(m, "BuildProperties"))
        .and_then(|b| get(b, "Binary"))
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("{id}: Metadata.BuildProperties.Binary is required"))?
        .to_owned();
    let mut env = BTreeMap::new();
    parse_env(globals_env, &mut env);
    parse_env(get(props, "Environment").and_then(|e| get(e, "Variables")), &mut env);
    let mut events = Vec::new();
    if let Some(evs) = get(props, "Events").and_then(Value::as_mapping) {
        for (name, ev) in evs {
            let name = name.as_str().unwrap_or("").to_owned();
            let ty = get(ev, "Type").and_then(Value::as_str).unwrap_or("");
            let p = get(ev, "Properties").cloned().unwrap_or(Value::Null);
            let event = match ty {
                "HttpApi" => {
                    let auth = get(&p, "Auth");
                    let authorizer = auth.and_then(|a| get(a, "Authorizer")).and_then(Value::as_str);
                    let scopes: Vec<String> = auth
                        .and_then(|a| get(a, "AuthorizationScopes"))
                        .and_then(Value::as_sequence)
                        .map(|s| s.iter().filter_map(scalar).collect())
                        .unwrap_or_default();
                    Event::Http {
                        method: get(&p, "Method").and_then(scalar).ok_or_else(|| anyhow!("{id}.{name}: Method"))?,
                        path: get(&p, "Path").and_then(scalar).ok_or_else(|| anyhow!("{id}.{name}: Path"))?,
                        auth: if authorizer == Some("NONE") { Auth::Public } else { Auth::Jwt { scopes } },
                    }
                }
                "SQS" => Event::Sqs {
                    queue: get(&p, "Queue")
                        .and_then(getatt_target)
                        .map(|(a, _)| a)
                        .ok_or_else(|| anyhow!("{id}.{name}: Queue must be !GetAtt <Queue>.Arn"))?,
                    batch_size: int(get(&p, "BatchSize")).unwrap_or(10),
                    report_failures: get(&p, "FunctionResponseTypes")
                        .and_then(Value::as_sequence)
                        .is_some_and(|s| s.iter().any(|x| x.as_str() == Some("ReportBatchItemFailures"))),
                },
                "DynamoDB" => Event::Stream {
                    table: get(&p, "Stream")
                        .and_then(getatt_target)
                        .map(|(a, _)| a)
                        .ok_or_else(|| anyhow!("{id}.{name}: Stream must be !GetAtt <Table>.StreamArn"))?,
                    batch_size: int(get(&p, "BatchSize")).unwrap_or(100),
                    max_retries: int(get(&p, "MaximumRetryAttempts")).unwrap_or(-1),
                    max_record_age_s: int(get(&p, "MaximumRecordAgeInSeconds")).unwrap_or(-1),
                    bisect: get(&p, "BisectBatchOnFunctionError").and_then(Value::as_bool).unwrap_or(false),
                    on_failure: get(&p, "DestinationConfig")
                        .and_then(|d| get(d, "OnFailure"))
                        .and_then(|o| get(o, "Destination"))
                        .and_then(getatt_target)
                        .map(|(a, _)| a),
                    filters: get(&p, "FilterCriteria")
                        .and_then(|f| get(f, "Filters"))
                        .and_then(Value::as_sequence)
                        .map(|fs| {
                            fs.iter()
                                .filter_map(|f| get(f, "Pattern").and_then(Value::as_str))
                                .filter_map(|s| serde_json::from_str(s).ok())
                                .collect()
                        })
                        .unwrap_or_default(),
                },
                "Schedule" | "ScheduleV2" => Event::Schedule {
                    expression: get(&p, "Schedule")
                        .or_else(|| get(&p, "ScheduleExpression"))
                        .map(|v| format!("{:?}", to_json(v)))
                        .unwrap_or_default(),
                },
                other => bail!("{id}.{name}: event type {other} is not supported by the local stack"),
            };
            events.push((name, event));
        }
    }
    Ok(Function { logical_id: id.to_owned(), binary, env, events })
}
