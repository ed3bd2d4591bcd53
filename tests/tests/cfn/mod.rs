//! A small CloudFormation evaluator for the static tests: the template with a given set of
//! parameter values, its conditions decided, `Fn::If` / `AWS::NoValue` / `Fn::Sub` / `Ref` /
//! `Fn::GetAtt …Arn` resolved to plain JSON, so a test can look at what a stack with the edge on
//! (or off) would have, and evaluate the queue policies' statements for a principal.
//!
//! ARNs of resources of the stack resolve to fixed, readable forms (`arn:aws:sqs:us-east-1:
//! 123456789012:<LogicalId>`, `arn:aws:iam::123456789012:role/holdfast-<LogicalId>` …), since a
//! test only compares them with each other.
#![allow(dead_code)]

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub const ACCOUNT: &str = "123456789012";
pub const REGION: &str = "us-east-1";

pub fn template_text() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The template as JSON, intrinsics as `{"Ref": …}` / `{"Fn::X": …}`.
pub fn json_of(text: &str) -> Value {
    holdfast_local::template::to_json(&holdfast_local::template::yaml(text).expect("template parses"))
}

pub fn role_arn(logical_id: &str) -> String {
    format!("arn:aws:iam::{ACCOUNT}:role/holdfast-{logical_id}")
}

pub fn root_arn() -> String {
    format!("arn:aws:iam::{ACCOUNT}:root")
}

/// The ARN `!GetAtt <id>.Arn` stands for, by the resource's type.
fn arn_of(doc: &Value, id: &str) -> String {
    let ty = doc["Resources"][id]["Type"].as_str().unwrap_or("");
    match ty {
        "AWS::SQS::Queue" => format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{id}"),
        "AWS::Events::Rule" => format!("arn:aws:events:{REGION}:{ACCOUNT}:rule/{id}"),
        "AWS::Events::EventBus" => format!("arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{id}"),
        "AWS::DynamoDB::Table" => format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{id}"),
        "AWS::WAFv2::WebACL" => format!("arn:aws:wafv2:{REGION}:{ACCOUNT}:global/webacl/{id}"),
        "AWS::Logs::LogGroup" => format!("arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{id}"),
        // SAM's generated roles (<Function>Role) are not in the template before the transform
        _ if id.ends_with("Role") => role_arn(id),
        _ => format!("arn:aws:cloudformation:::{id}"),
    }
}

/// A stack: the template with parameter values (defaults unless overridden).
pub struct Stack {
    pub doc: Value,
    params: BTreeMap<String, String>,
    conditions: BTreeMap<String, bool>,
}

impl Stack {
    pub fn new(text: &str, overrides: &[(&str, &str)]) -> Stack {
        let doc = json_of(text);
        let mut params = BTreeMap::new();
        for (k, v) in doc["Parameters"].as_object().into_iter().flatten() {
            let d = match &v["Default"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            params.insert(k.clone(), d);
        }
        for (k, v) in overrides {
            assert!(params.contains_key(*k), "no parameter {k}");
            params.insert((*k).to_owned(), (*v).to_owned());
        }
        params.insert("AWS::AccountId".into(), ACCOUNT.into());
        params.insert("AWS::Region".into(), REGION.into());
        params.insert("AWS::Partition".into(), "aws".into());
        params.insert("AWS::URLSuffix".into(), "amazonaws.com".into());
        params.insert("AWS::StackName".into(), "holdfast".into());
        let mut s = Stack { doc, params, conditions: BTreeMap::new() };
        let names: Vec<String> =
            s.doc["Conditions"].as_object().into_iter().flatten().map(|(k, _)| k.clone()).collect();
        for n in names {
            let v = s.condition(&n);
            s.conditions.insert(n, v);
        }
        s
    }

    pub fn condition(&self, name: &str) -> bool {
        if let Some(v) = self.conditions.get(name) {
            return *v;
        }
        let c = self.doc["Conditions"][name].clone();
        assert!(!c.is_null(), "no condition {name}");
        self.cond_expr(&c)
    }

    fn cond_expr(&self, v: &Value) -> bool {
        let (k, arg) = single(v).unwrap_or_else(|| panic!("not a condition: {v}"));
        match k {
            "Fn::Equals" => {
                let a = arg.as_array().expect("Fn::Equals takes two values");
                self.resolve(&a[0]) == self.resolve(&a[1])
            }
            "Fn::Not" => !self.cond_expr(&arg[0]),
            "Fn::And" => arg.as_array().unwrap().iter().all(|c| self.cond_expr(c)),
            "Fn::Or" => arg.as_array().unwrap().iter().any(|c| self.cond_expr(c)),
            "Condition" | "Fn::Condition" => self.condition(arg.as_str().unwrap()),
            other => panic!("condition function {other} not understood"),
        }
    }

    /// Whether the resource is created (its `Condition` holds, or it has none).
    pub fn exists(&self, id: &str) -> bool {
        let r = &self.doc["Resources"][id];
        !r.is_null() && r["Condition"].as_str().is_none_or(|c| self.condition(c))
    }

    /// The resource's `Properties`, resolved; `None` if it is not created.
    pub fn properties(&self, id: &str) -> Option<Value> {
        self.exists(id).then(|| self.resolve(&self.doc["Resources"][id]["Properties"]).unwrap_or(Value::Null))
    }

    /// Logical ids of the created resources of a type.
    pub fn of_type(&self, ty: &str) -> Vec<String> {
        self.doc["Resources"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(id, r)| r["Type"] == ty && self.exists(id))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// An output's value, resolved; `None` if its condition does not hold.
    pub fn output(&self, name: &str) -> Option<Value> {
        let o = &self.doc["Outputs"][name];
        if o.is_null() || !o["Condition"].as_str().is_none_or(|c| self.condition(c)) {
            return None;
        }
        self.resolve(&o["Value"])
    }

    /// `v` with every intrinsic resolved; `None` for `AWS::NoValue`.
    pub fn resolve(&self, v: &Value) -> Option<Value> {
        if let Some((k, arg)) = single(v) {
            match k {
                "Ref" => {
                    let name = arg.as_str().unwrap();
                    if name == "AWS::NoValue" {
                        return None;
                    }
                    if let Some(p) = self.params.get(name) {
                        return Some(Value::String(p.clone()));
                    }
                    // a resource's Ref: its logical id stands for its name/URL/id
                    return Some(Value::String(format!("ref:{name}")));
                }
                "Fn::GetAtt" => {
                    let (id, attr) = match arg {
                        Value::String(s) => s.split_once('.').map(|(a, b)| (a.to_owned(), b.to_owned())).unwrap(),
                        Value::Array(a) => (a[0].as_str().unwrap().to_owned(), a[1].as_str().unwrap().to_owned()),
                        _ => panic!("GetAtt {arg}"),
                    };
                    return Some(Value::String(if attr == "Arn" {
                        arn_of(&self.doc, &id)
                    } else {
                        format!("getatt:{id}.{attr}")
                    }));
                }
                "Fn::Sub" => {
                    let s = arg.as_str().expect("only the one-argument Fn::Sub is used");
                    return Some(Value::String(self.sub(s)));
                }
                "Fn::If" => {
                    let a = arg.as_array().unwrap();
                    let branch = if self.condition(a[0].as_str().unwrap()) { &a[1] } else { &a[2] };
                    return self.resolve(branch);
                }
                _ => {}
            }
        }
        Some(match v {
            Value::Array(a) => Value::Array(a.iter().filter_map(|x| self.resolve(x)).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().filter_map(|(k, x)| Some((k.clone(), self.resolve(x)?))).collect::<Map<_, _>>())
            }
            other => other.clone(),
        })
    }

    fn sub(&self, s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let end = rest[i..].find('}').expect("unclosed ${") + i;
            let name = &rest[i + 2..end];
            let v = match name.split_once('.') {
                Some((id, "Arn")) => arn_of(&self.doc, id),
                Some((id, attr)) => format!("getatt:{id}.{attr}"),
                None => match self.params.get(name) {
                    Some(p) => p.clone(),
                    None => format!("ref:{name}"),
                },
            };
            out.push_str(&v);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// `{"Ref": x}` / `{"Fn::X": x}` / `{"Condition": x}` → (key, x).
fn single(v: &Value) -> Option<(&str, &Value)> {
    let m = v.as_object()?;
    if m.len() != 1 {
        return None;
    }
    let (k, x) = m.iter().next()?;
    (k == "Ref" || k == "Condition" || k.starts_with("Fn::")).then_some((k.as_str(), x))
}

// ---------- resource policies ----------

/// Who is calling.
#[derive(Debug, Clone)]
pub enum Caller {
    /// An IAM role (of this account) whose identity policy allows the action (`PrincipalArn`).
    Role(String),
    /// An AWS service principal (`events.amazonaws.com`) on behalf of `source_arn`.
    Service { name: String, source_arn: Option<String> },
    /// An unsigned request.
    Anonymous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    ImplicitDeny,
    ExplicitDeny,
}

/// The statements of the resource policies of the queue `queue` (logical id).
pub fn queue_statements(stack: &Stack, queue: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for id in stack.of_type("AWS::SQS::QueuePolicy") {
        let p = stack.properties(&id).unwrap();
        let queues: Vec<&str> = p["Queues"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        if !queues.contains(&format!("ref:{queue}").as_str()) {
            continue;
        }
        let statements = match &p["PolicyDocument"]["Statement"] {
            Value::Array(a) => a.clone(),
            one => vec![one.clone()],
        };
        out.extend(statements);
    }
    out
}

fn list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
        Value::String(s) => vec![s.clone()],
        _ => vec![],
    }
}

fn action_matches(pattern: &str, action: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => action.to_lowercase().starts_with(&prefix.to_lowercase()),
        None => pattern.eq_ignore_ascii_case(action),
    }
}

fn principal_matches(p: &Value, caller: &Caller) -> bool {
    if p == "*" || p == &json!({"AWS": "*"}) {
        return true;
    }
    match caller {
        Caller::Service { name, .. } => list(&p["Service"]).contains(name),
        Caller::Role(arn) => list(&p["AWS"]).contains(arn),
        Caller::Anonymous => false,
    }
}

/// The request context's value of a global condition key.
fn key_value(caller: &Caller, key: &str) -> Option<String> {
    match (key.to_lowercase().as_str(), caller) {
        ("aws:principalarn", Caller::Role(arn)) => Some(arn.clone()),
        ("aws:sourcearn", Caller::Service { source_arn, .. }) => source_arn.clone(),
        ("aws:principalisawsservice", Caller::Service { .. }) => Some("true".into()),
        ("aws:principalisawsservice", Caller::Role(_)) => Some("false".into()),
        _ => None,
    }
}

/// IAM's condition semantics for the operators the template uses: keys within an operator and
/// operators within a block are ANDed, values of one key ORed; a missing key makes a positive
/// operator false and a negated one (or `…IfExists`) true.
fn condition_holds(cond: &Value, caller: &Caller) -> bool {
    let Some(ops) = cond.as_object() else { return true };
    ops.iter().all(|(op, keys)| {
        keys.as_object().unwrap().iter().all(|(key, values)| {
            let values = list(values);
            let got = key_value(caller, key);
            let (base, if_exists) = match op.strip_suffix("IfExists") {
                Some(b) => (b, true),
                None => (op.as_str(), false),
            };
            let Some(got) = got else { return if_exists || base.contains("Not") };
            match base {
                "ArnEquals" | "StringEquals" => values.contains(&got),
                "ArnNotEquals" | "StringNotEquals" => !values.contains(&got),
                "Bool" => values.iter().any(|v| v.eq_ignore_ascii_case(&got)),
                other => panic!("condition operator {other} not understood by the test"),
            }
        })
    })
}

/// The decision for `caller` doing `action` on the queue `queue`: an explicit Deny of a
/// resource-policy statement wins; otherwise an Allow (a resource-policy statement, or for a
/// role of the account the identity policy the caller is assumed to have).
pub fn decide(stack: &Stack, queue: &str, action: &str, caller: &Caller) -> Decision {
    let queue_arn = arn_of(&stack.doc, queue);
    let mut allowed = matches!(caller, Caller::Role(_));
    for st in queue_statements(stack, queue) {
        let applies = list(&st["Action"]).iter().any(|a| action_matches(a, action))
            && list(&st["Resource"]).contains(&queue_arn)
            && principal_matches(&st["Principal"], caller)
            && condition_holds(&st["Condition"], caller);
        if !applies {
            continue;
        }
        match st["Effect"].as_str() {
            Some("Deny") => return Decision::ExplicitDeny,
            Some("Allow") => allowed = true,
            other => panic!("Effect {other:?}"),
        }
    }
    if allowed {
        Decision::Allow
    } else {
        Decision::ImplicitDeny
    }
}
