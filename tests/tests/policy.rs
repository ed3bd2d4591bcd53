//! The template's IAM policies and environments against the declared map of what each
//! function's code uses (`holdfast::permissions`). No emulator: the emulator does not evaluate
//! IAM, so this is the only test that would notice a missing grant before a real deploy, and
//! the only one that notices a grant nobody needs.
//!
//! [`check`] reads a template's text and returns every disagreement as a sentence. The tests
//! run it on `template.yaml` (expecting none) and on mutated copies (expecting the mutation to
//! be named), so a checker that silently accepts everything cannot pass.

use holdfast::handlers::FUNCTIONS;
use holdfast::permissions::{is_write_action, Resource, DEFAULTED_ENV, ENV, PUSH_CONNECTIONS_ARN, USES};
use holdfast_local::template::{expr, get, Expr, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

fn template_text() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

// ---------- reading the template ----------

/// A string or a list of them (`Action`, `Resource`).
fn one_or_many(v: &Value) -> Vec<&Value> {
    match v {
        Value::Sequence(s) => s.iter().collect(),
        other => vec![other],
    }
}

struct FunctionModel {
    logical_id: String,
    binary: String,
    /// Effective Allow grants the checker could map.
    grants: BTreeSet<(String, Resource)>,
    /// The function's own `Environment.Variables`.
    env: BTreeMap<String, Expr>,
}

struct Model {
    functions: Vec<FunctionModel>,
    globals_env: BTreeSet<String>,
    problems: Vec<String>,
}

/// `(logical id → type)` and `(table → index names)`.
struct Resources {
    types: BTreeMap<String, String>,
    indexes: BTreeMap<String, BTreeSet<String>>,
}

impl Resources {
    fn read(doc: &Value) -> Resources {
        let mut types = BTreeMap::new();
        let mut indexes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        // A parameter can be the ARN of something outside the stack (the webhook secret).
        for (k, _) in get(doc, "Parameters").and_then(Value::as_mapping).into_iter().flatten() {
            if let Some(id) = k.as_str() {
                types.insert(id.to_owned(), "Parameter".to_owned());
            }
        }
        for (k, r) in get(doc, "Resources").and_then(Value::as_mapping).into_iter().flatten() {
            let Some(id) = k.as_str() else { continue };
            let ty = get(r, "Type").and_then(Value::as_str).unwrap_or("").to_owned();
            if ty == "AWS::DynamoDB::Table" {
                let props = get(r, "Properties");
                let mut names = BTreeSet::new();
                for key in ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"] {
                    for ix in props.and_then(|p| get(p, key)).and_then(Value::as_sequence).into_iter().flatten() {
                        if let Some(n) = get(ix, "IndexName").and_then(Value::as_str) {
                            names.insert(n.to_owned());
                        }
                    }
                }
                indexes.insert(id.to_owned(), names);
            }
            types.insert(id.to_owned(), ty);
        }
        Resources { types, indexes }
    }

    /// The declared resource an ARN resolves to, or why it does not resolve to one.
    fn resource_of(&self, e: &Expr) -> Result<Resource, String> {
        let whole = |id: &str| {
            Resource::ALL
                .into_iter()
                .find(|r| !r.is_index() && r.logical_id() == id)
                .ok_or_else(|| format!("{e} is not one of the resources the permission map knows"))
        };
        match e {
            Expr::GetAtt(id, attr) if attr == "Arn" => whole(id),
            Expr::GetAtt(..) => Err(format!("{e} is not an ARN the permission map knows")),
            Expr::Ref(id) if Resource::ALL.iter().any(|r| r.cfn_type() == "Parameter" && r.logical_id() == id) => {
                whole(id)
            }
            Expr::Ref(id) => Err(format!(
                "{e} is the name or URL of {id}, not its ARN (IAM would match nothing); grant on !GetAtt {id}.Arn"
            )),
            // the push API's connections (the one wildcard: connection ids are not known)
            Expr::Sub(s) if s == PUSH_CONNECTIONS_ARN => Ok(Resource::PushConnections),
            Expr::Sub(s) => {
                let Some((inner, rest)) = s.strip_prefix("${").and_then(|t| t.split_once('}')) else {
                    return Err(format!("{e} is not an ARN the permission map knows"));
                };
                let Some(id) = inner.strip_suffix(".Arn") else {
                    return Err(format!("{e} is not an ARN the permission map knows"));
                };
                if rest.is_empty() {
                    return whole(id);
                }
                let Some(index) = rest.strip_prefix("/index/") else {
                    return Err(format!("{e} is not an ARN the permission map knows"));
                };
                let Some(known) = self.indexes.get(id) else {
                    return Err(format!("{e}: {id} is not a DynamoDB table of the template"));
                };
                if index != "*" && !known.contains(index) {
                    return Err(format!("{e}: table {id} has no index {index:?}"));
                }
                Resource::ALL
                    .into_iter()
                    .find(|r| r.is_index() && r.logical_id() == id)
                    .ok_or_else(|| format!("{e} is not one of the resources the permission map knows"))
            }
            Expr::Literal(_) | Expr::Other(_) => Err(format!("{e} is not an ARN the permission map knows")),
        }
    }
}

/// A wildcard anywhere but the `/index/*` suffix of a table ARN.
fn wildcard_in_resource(e: &Expr) -> bool {
    match e {
        Expr::Literal(s) | Expr::Other(s) => s.contains('*'),
        Expr::Sub(s) if s == PUSH_CONNECTIONS_ARN => false,
        Expr::Sub(s) => s.strip_suffix("/index/*").unwrap_or(s).contains('*'),
        Expr::Ref(_) | Expr::GetAtt(..) => false,
    }
}

fn read_statement(
    binary: &str,
    st: &Value,
    res: &Resources,
    grants: &mut BTreeSet<(String, Resource)>,
    problems: &mut Vec<String>,
) {
    for k in ["NotAction", "NotResource", "NotPrincipal"] {
        if get(st, k).is_some() {
            problems.push(format!("{binary} has a statement with {k}, which grants more than it names"));
        }
    }
    let effect = get(st, "Effect").and_then(Value::as_str).unwrap_or("");
    if effect != "Allow" {
        problems.push(format!("{binary} has a statement with Effect {effect:?}; only Allow statements are understood"));
        return;
    }
    let actions: Vec<String> = match get(st, "Action") {
        Some(a) => one_or_many(a)
            .into_iter()
            .map(|v| match expr(v) {
                Expr::Literal(s) => s,
                other => other.to_string(),
            })
            .collect(),
        None => {
            problems.push(format!("{binary} has a statement without Action"));
            Vec::new()
        }
    };
    for a in &actions {
        if a.contains('*') {
            problems.push(format!("{binary} is granted the wildcard action {a:?}"));
        }
    }
    let resources: Vec<Expr> = match get(st, "Resource") {
        Some(r) => one_or_many(r).into_iter().map(expr).collect(),
        None => {
            problems.push(format!("{binary} has a statement without Resource"));
            Vec::new()
        }
    };
    for r in &resources {
        if wildcard_in_resource(r) {
            problems.push(format!("{binary} is granted {} on the wildcard resource {r}", actions.join(", ")));
            continue;
        }
        match res.resource_of(r) {
            Ok(resource) => {
                for a in &actions {
                    grants.insert((a.clone(), resource));
                }
            }
            Err(why) => problems.push(format!("{binary} is granted {}: {why}", actions.join(", "))),
        }
    }
}

fn read_model(template_text: &str) -> Result<Model, String> {
    let doc = holdfast_local::template::yaml(template_text).map_err(|e| format!("{e:#}"))?;
    let res = Resources::read(&doc);
    let mut problems = Vec::new();
    for r in Resource::ALL {
        match res.types.get(r.logical_id()) {
            Some(t) if t == r.cfn_type() => {}
            Some(t) => {
                problems.push(format!("{} is a {t}, but the permission map says {}", r.logical_id(), r.cfn_type()))
            }
            None => {
                problems.push(format!("the template has no resource {} (the permission map names it)", r.logical_id()))
            }
        }
    }
    let globals_env: BTreeSet<String> = get(&doc, "Globals")
        .and_then(|g| get(g, "Function"))
        .and_then(|f| get(f, "Environment"))
        .and_then(|e| get(e, "Variables"))
        .and_then(Value::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.as_str().map(str::to_owned))
        .collect();
    let mut functions = Vec::new();
    for (k, r) in get(&doc, "Resources").and_then(Value::as_mapping).into_iter().flatten() {
        if get(r, "Type").and_then(Value::as_str) != Some("AWS::Serverless::Function") {
            continue;
        }
        let logical_id = k.as_str().unwrap_or("?").to_owned();
        let Some(binary) = get(r, "Metadata")
            .and_then(|m| get(m, "BuildProperties"))
            .and_then(|b| get(b, "Binary"))
            .and_then(Value::as_str)
        else {
            problems.push(format!("{logical_id} has no Metadata.BuildProperties.Binary"));
            continue;
        };
        let binary = binary.to_owned();
        let props = get(r, "Properties").cloned().unwrap_or(Value::Null);
        if get(&props, "Role").is_some() {
            problems.push(format!("{binary} names its own Role, whose policies this test cannot see"));
        }
        let mut grants = BTreeSet::new();
        for p in get(&props, "Policies").map(one_or_many).unwrap_or_default() {
            match get(p, "Statement") {
                Some(sts) => {
                    for st in one_or_many(sts) {
                        read_statement(&binary, st, &res, &mut grants, &mut problems);
                    }
                }
                None => problems.push(format!(
                    "{binary} uses the managed policy or policy template {}, which this test cannot check; use inline statements",
                    match p {
                        Value::String(s) => s.clone(),
                        Value::Mapping(m) => m.keys().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
                        other => format!("{other:?}"),
                    }
                )),
            }
        }
        let env = get(&props, "Environment")
            .and_then(|e| get(e, "Variables"))
            .and_then(Value::as_mapping)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), expr(v))))
            .collect();
        functions.push(FunctionModel { logical_id, binary, grants, env });
    }
    key_policy_grants(&doc, &mut functions, &mut problems);
    Ok(Model { functions, globals_env, problems })
}

/// Grants a KMS key's policy gives a function's role by naming it (`!GetAtt <Function>Role.Arn`):
/// the code key's use is granted there, not in the role's own policy (which cannot name the key
/// while the key names the role). The account root's administration statement grants no function
/// anything; a statement naming anyone else, or any use for the root, is reported.
fn key_policy_grants(doc: &Value, functions: &mut [FunctionModel], problems: &mut Vec<String>) {
    for (k, r) in get(doc, "Resources").and_then(Value::as_mapping).into_iter().flatten() {
        if get(r, "Type").and_then(Value::as_str) != Some("AWS::KMS::Key") {
            continue;
        }
        let key = k.as_str().unwrap_or("?");
        let Some(resource) = Resource::ALL.into_iter().find(|r| r.logical_id() == key) else {
            problems.push(format!("the KMS key {key} is not one of the resources the permission map knows"));
            continue;
        };
        let statements = get(r, "Properties").and_then(|p| get(p, "KeyPolicy")).and_then(|p| get(p, "Statement"));
        for st in statements.map(one_or_many).unwrap_or_default() {
            let actions: Vec<String> = get(st, "Action")
                .map(one_or_many)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            if get(st, "Effect").and_then(Value::as_str) != Some("Allow") {
                continue;
            }
            let principals = get(st, "Principal").and_then(|p| get(p, "AWS")).map(one_or_many).unwrap_or_default();
            for p in principals {
                match expr(p) {
                    Expr::GetAtt(role, attr) if attr == "Arn" && role.ends_with("Role") => {
                        let id = role.trim_end_matches("Role");
                        match functions.iter_mut().find(|f| f.logical_id == id) {
                            Some(f) => {
                                for a in &actions {
                                    if a.contains('*') {
                                        problems.push(format!("{} is granted the wildcard action {a:?} by {key}'s policy", f.binary));
                                    }
                                    f.grants.insert((a.clone(), resource));
                                }
                            }
                            None => problems.push(format!("{key}'s policy names {role}, which is no function's role")),
                        }
                    }
                    Expr::Sub(s) if s.ends_with(":root") => {
                        for a in actions.iter().filter(|a| is_key_use(a)) {
                            problems.push(format!("{key}'s policy lets the account root {a}: any IAM policy could then hand the key out"));
                        }
                    }
                    other => problems.push(format!("{key}'s policy names the principal {other}, which is neither a function's role nor the account root")),
                }
            }
        }
    }
}

/// Whether a KMS action uses a key's material (rather than administering the key).
fn is_key_use(action: &str) -> bool {
    action == "*"
        || action == "kms:*"
        || [
            "kms:Encrypt",
            "kms:Decrypt",
            "kms:ReEncrypt",
            "kms:GenerateDataKey",
            "kms:CreateGrant",
            "kms:Generate",
            "kms:Sign",
        ]
        .iter()
        .any(|p| action.starts_with(p) || (action.ends_with('*') && p.starts_with(action.trim_end_matches('*'))))
}

// ---------- the checker ----------

fn declared_uses(binary: &str) -> Option<BTreeSet<(String, Resource)>> {
    USES.iter().find(|(f, _)| *f == binary).map(|(_, u)| u.iter().map(|(a, r)| ((*a).to_owned(), *r)).collect())
}

fn declared_env(binary: &str) -> Option<BTreeSet<&'static str>> {
    ENV.iter().find(|(f, _)| *f == binary).map(|(_, e)| e.iter().copied().collect())
}

fn write_note(action: &str) -> &'static str {
    if is_write_action(action) {
        " (a write)"
    } else {
        ""
    }
}

/// Every disagreement between the template and the permission map, as sentences.
fn check(template_text: &str) -> Vec<String> {
    let model = match read_model(template_text) {
        Ok(m) => m,
        Err(e) => return vec![e],
    };
    let mut problems = model.problems.clone();
    problems.extend(iam_problems(&model));
    problems.extend(env_problems(&model));
    problems.sort();
    problems.dedup();
    problems
}

fn iam_problems(model: &Model) -> Vec<String> {
    let mut problems = Vec::new();
    let in_template: BTreeSet<&str> = model.functions.iter().map(|f| f.binary.as_str()).collect();
    for (f, _) in USES {
        if !in_template.contains(f) {
            problems
                .push(format!("the permission map declares {f}, but the template has no function with that binary"));
        }
    }
    for f in &model.functions {
        let b = f.binary.as_str();
        match declared_uses(b) {
            None => problems.push(format!("{b} ({}) is not in holdfast::permissions::USES", f.logical_id)),
            Some(declared) => {
                for (a, r) in f.grants.difference(&declared) {
                    problems.push(format!("{b} may {a} on {r:?}{} but its code never does", write_note(a)));
                }
                for (a, r) in declared.difference(&f.grants) {
                    problems.push(format!("{b}'s code calls {a} on {r:?} but the template does not grant it"));
                }
            }
        }
    }
    problems
}

fn env_problems(model: &Model) -> Vec<String> {
    let mut problems = Vec::new();
    for g in &model.globals_env {
        if !DEFAULTED_ENV.contains(&g.as_str()) {
            problems.push(format!("Globals give every function {g}, which is not a variable every function may have"));
        }
    }
    for f in &model.functions {
        let b = f.binary.as_str();
        match declared_env(b) {
            None => problems.push(format!("{b} ({}) is not in holdfast::permissions::ENV", f.logical_id)),
            Some(declared) => {
                for var in f.env.keys() {
                    if !declared.contains(var.as_str()) && !DEFAULTED_ENV.contains(&var.as_str()) {
                        problems.push(format!("{b} is given {var} but its code never reads it"));
                    }
                }
                for var in &declared {
                    if !f.env.contains_key(*var) && !model.globals_env.contains(*var) {
                        problems.push(format!("{b}'s code reads {var} but the template does not set it"));
                    }
                }
            }
        }
        for (var, value) in &f.env {
            for r in Resource::ALL.into_iter().filter(|r| r.env_var() == Some(var.as_str())) {
                let want = Expr::Ref(r.logical_id().to_owned());
                if *value != want {
                    problems.push(format!("{b}'s {var} is {value}, not {want}"));
                }
            }
        }
    }
    problems
}

/// The grants the template gives each function (only what the checker could map).
fn grants(template_text: &str) -> BTreeMap<String, BTreeSet<(String, Resource)>> {
    let model = read_model(template_text).expect("template parses");
    model.functions.into_iter().map(|f| (f.binary, f.grants)).collect()
}

fn writes_to(grants: &BTreeMap<String, BTreeSet<(String, Resource)>>, binary: &str, table: Resource) -> Vec<String> {
    let idx = match table {
        Resource::StockTable => Resource::StockTableIndexes,
        Resource::OrderTable => Resource::OrderTableIndexes,
        other => other,
    };
    grants
        .get(binary)
        .unwrap_or_else(|| panic!("no function {binary} in the template"))
        .iter()
        .filter(|(a, r)| (*r == table || *r == idx) && is_write_action(a))
        .map(|(a, _)| a.clone())
        .collect()
}

/// Replaces the first `from` after `anchor` with `to`; panics if either is missing, so a
/// mutation that no longer applies fails loudly instead of testing nothing.
fn mutate(text: &str, anchor: &str, from: &str, to: &str) -> String {
    let at = text.find(anchor).unwrap_or_else(|| panic!("anchor {anchor:?} not in the template"));
    let rel = text[at..].find(from).unwrap_or_else(|| panic!("{from:?} not found after {anchor:?}"));
    let start = at + rel;
    let mut out = String::with_capacity(text.len() + to.len());
    out.push_str(&text[..start]);
    out.push_str(to);
    out.push_str(&text[start + from.len()..]);
    assert_ne!(out, text, "the mutation changed nothing");
    out
}

/// The problems a mutation adds to those of the real template.
fn new_problems(mutated: &str) -> Vec<String> {
    let before: BTreeSet<String> = check(&template_text()).into_iter().collect();
    check(mutated).into_iter().filter(|p| !before.contains(p)).collect()
}

fn assert_reports(mutated: &str, expected: &[&str]) {
    let added = new_problems(mutated);
    for e in expected {
        assert!(added.iter().any(|p| p == e), "expected the checker to report {e:?}; it added {added:#?}");
    }
}

// ---------- the real template ----------

#[test]
fn every_function_grants_exactly_what_its_code_uses() {
    let problems = check(&template_text());
    assert!(problems.is_empty(), "template.yaml disagrees with holdfast::permissions:\n  {}", problems.join("\n  "));
}

#[test]
fn no_statement_uses_a_wildcard_action_or_resource() {
    let problems: Vec<String> = check(&template_text()).into_iter().filter(|p| p.contains("wildcard")).collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // and the declared map itself names no wildcard action
    for (f, uses) in USES {
        for (a, _) in *uses {
            assert!(!a.contains('*'), "{f} declares the wildcard action {a}");
        }
    }
}

#[test]
fn the_payment_callback_cannot_write_the_stock_table() {
    let g = grants(&template_text());
    assert_eq!(writes_to(&g, "payment-callback", Resource::StockTable), Vec::<String>::new());
    assert!(g["payment-callback"]
        .iter()
        .all(|(_, r)| !matches!(r, Resource::StockTable | Resource::StockTableIndexes)));
    let declared = holdfast::permissions::uses("payment-callback").unwrap();
    assert!(declared.iter().all(|(_, r)| !matches!(r, Resource::StockTable | Resource::StockTableIndexes)));
}

#[test]
fn stock_events_cannot_write_the_order_table() {
    let g = grants(&template_text());
    assert_eq!(writes_to(&g, "stock-events", Resource::OrderTable), Vec::<String>::new());
    // It reads the order only to cross-check an event against the order's status.
    let on_orders: Vec<&str> = g["stock-events"]
        .iter()
        .filter(|(_, r)| matches!(r, Resource::OrderTable | Resource::OrderTableIndexes))
        .map(|(a, _)| a.as_str())
        .collect();
    assert_eq!(on_orders, vec!["dynamodb:GetItem"]);
}

#[test]
fn only_the_stock_service_functions_write_the_stock_table() {
    let g = grants(&template_text());
    let writers: BTreeSet<&str> =
        g.keys().map(String::as_str).filter(|b| !writes_to(&g, b, Resource::StockTable).is_empty()).collect();
    // orders-api writes one attribute of lock records only (a code lock's fate), fenced by a
    // LeadingKeys condition: see the next test
    let expected: BTreeSet<&str> = [
        "create-order",
        "reservations",
        "stock-api",
        "stock-events",
        "reservation-check",
        "reconcile-worker",
        "orders-api",
        // the waiting rooms' tickets, counters and clocks, and the queued checkout's freeze
        "queue-api",
        // the room's clock only (QR#…), moved when a watched ticket is read: see below
        "push-api",
        // the sale room's items only (SALE#…): see the next tests
        "stock-journal",
        "publish-events",
        "reconcile",
    ]
    .into();
    assert_eq!(writers, expected);
}

/// The stream consumers and the schedule write the sale room's items (live counters, low-stock
/// marks; docs/operations.md) and nothing else of the stock table: every such write statement
/// is fenced to `SALE#` keys.
#[test]
fn the_sale_room_writers_may_write_sale_items_only() {
    let text = template_text();
    for function in ["StockJournalFunction", "PublishEventsFunction", "ReconcileFunction"] {
        let start = text.find(&format!("  {function}:")).expect(function);
        let block = &text[start..];
        let end = block.match_indices("\n  ").map(|(i, _)| i).find(|i| block[i + 3..].starts_with(|c: char| c != ' '));
        let block = &block[..end.unwrap_or(block.len())];
        let statements: Vec<&str> = block.split("- Effect").skip(1).collect();
        let writes: Vec<&&str> = statements
            .iter()
            .filter(|s| {
                s.contains("StockTable.Arn")
                    && (s.contains("PutItem") || s.contains("UpdateItem") || s.contains("DeleteItem"))
            })
            .collect();
        assert!(!writes.is_empty(), "{function}: no stock-table write statement found");
        for s in writes {
            // stock-journal also tells waitlisted buyers (docs/waitlist.md): waitlist items only
            let waitlist = function == "StockJournalFunction"
                && s.contains("dynamodb:LeadingKeys: [\"WLH#*\", \"WLE#*\", \"WLU#*\"]");
            assert!(
                s.contains("dynamodb:LeadingKeys: [\"SALE#*\"]") || waitlist,
                "{function} may write more than SALE# items:\n{s}"
            );
        }
    }
}

#[test]
fn orders_api_may_update_lock_records_only() {
    let text = template_text();
    let start = text.find("  OrdersApiFunction:").expect("OrdersApiFunction");
    let block = &text[start..];
    // up to the next resource (a line indented by exactly two spaces)
    let end = block.match_indices("\n  ").map(|(i, _)| i).find(|i| block[i + 3..].starts_with(|c: char| c != ' '));
    let block = &block[..end.unwrap_or(block.len())];
    let update = block.find("Action: dynamodb:UpdateItem").expect("orders-api's UpdateItem statement");
    let statement = &block[update..block[update..].find("- Effect").map_or(block.len(), |i| update + i)];
    assert!(
        statement.contains("dynamodb:LeadingKeys: [\"RES#*\"]"),
        "orders-api's UpdateItem on the stock table must be limited to lock records:\n{statement}"
    );
}

/// Security review L5: the anonymous reads run in `stock-read`, which can write nothing, read no
/// secret, is not told the keyring's name, and may read SKU, shard and campaign items only —
/// never a code, a fingerprint, a batch or a lock. And no anonymous route is left elsewhere.
#[test]
fn the_public_read_function_cannot_write_read_the_keyring_or_reach_code_items() {
    let text = template_text();
    let model = read_model(&text).expect("template parses");
    let f = model.functions.iter().find(|f| f.binary == "stock-read").expect("stock-read in the template");
    assert_eq!(f.logical_id, "StockReadFunction");
    for (a, r) in &f.grants {
        assert!(!is_write_action(a), "stock-read may {a} on {r:?}");
        assert!(!a.starts_with("secretsmanager:"), "stock-read may {a}");
        assert!(!a.starts_with("kms:"), "stock-read may {a}");
        assert_ne!(*r, Resource::CodeKeySecret, "stock-read is granted {a} on the keyring");
    }
    let declared: BTreeSet<(String, Resource)> =
        [("dynamodb:BatchGetItem".to_owned(), Resource::StockTable)].into_iter().collect();
    assert_eq!(f.grants, declared, "stock-read: BatchGetItem on the stock table, nothing else");
    assert!(!f.env.contains_key("CODE_KEY_SECRET_ARN"), "stock-read is told the keyring's name");
    assert!(!holdfast::permissions::env("stock-read").unwrap().contains(&"CODE_KEY_SECRET_ARN"));
    // the one statement is fenced to the public items' keys (dynamodb:LeadingKeys)
    let start = text.find("  StockReadFunction:").expect("StockReadFunction");
    let block = &text[start..];
    let end = block.match_indices("\n  ").map(|(i, _)| i).find(|i| block[i + 3..].starts_with(|c: char| c != ' '));
    let block = &block[..end.unwrap_or(block.len())];
    let policies =
        &block[block.find("      Policies:").expect("stock-read's policies")..block.find("      Events:").unwrap()];
    assert_eq!(policies.matches("- Effect: Allow").count(), 1, "{policies}");
    let keys = policies.lines().find(|l| l.contains("dynamodb:LeadingKeys:")).expect("a LeadingKeys condition");
    assert!(policies.contains("ForAllValues:StringLike:"), "{policies}");
    let patterns: Vec<&str> = keys
        .split_once(':')
        .unwrap()
        .1
        .split_once(':')
        .unwrap()
        .1
        .trim()
        .trim_matches(['[', ']'])
        .split(',')
        .map(|p| p.trim().trim_matches('"'))
        .collect();
    assert_eq!(patterns, vec!["SKU#*", "CMP#*", "CQ#*"]);
    for forbidden in ["CODE#", "CFP#", "CBATCH#", "RES#", "LIM#", "PEND#"] {
        assert!(!patterns.iter().any(|p| forbidden.starts_with(p.trim_end_matches('*'))), "{forbidden} readable");
    }
    // every anonymous route is stock-read's, and stock-read serves nothing else
    for (function, routes) in holdfast::handlers::ROUTES {
        for r in *routes {
            let public = matches!(r.auth, holdfast::api::Auth::Public);
            if *function == "stock-read" {
                assert!(public, "stock-read serves the non-public {}", r.key);
            } else if r.key.starts_with("GET ") {
                assert!(!public, "{function} still serves the anonymous {}", r.key);
            }
        }
    }
}

/// The code key (issue 26, security review L5/L6): its policy lets stock-api make data keys and
/// orders-api open them — each only that, and only with Holdfast's encryption context — and no
/// other function anything; the account root administers it but cannot use it, so no IAM policy
/// can hand it to stock-read (or anyone). Evaluated on the stack as deployed (the policy's
/// `!GetAtt …Role.Arn` resolved).
#[test]
fn only_the_sealing_and_revealing_functions_can_use_the_code_key_and_stock_read_cannot() {
    let s = stack_with_ops();
    let key = s.properties("CodeKey").expect("a CodeKey");
    assert_eq!(key["EnableKeyRotation"], serde_json::json!(true), "rotation on");
    let statements = key["KeyPolicy"]["Statement"].as_array().expect("a key policy").clone();
    // what the policy lets `principal` do with `action`, given the encryption context `context`
    let allows = |principal: &str, action: &str, context: &[(&str, &str)]| {
        statements.iter().any(|st| {
            let listed = |v: &serde_json::Value| match v {
                serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
                serde_json::Value::String(x) => vec![x.clone()],
                _ => Vec::new(),
            };
            let acts = listed(&st["Action"]);
            let action_ok = acts.iter().any(|a| a == action || a == "kms:*" || a == "*");
            let principal_ok = listed(&st["Principal"]["AWS"]).iter().any(|p| p == principal || p == "*");
            let cond = &st["Condition"];
            let ctx =
                |k: &str| context.iter().find(|(n, _)| format!("kms:EncryptionContext:{n}") == k).map(|(_, v)| *v);
            let equals_ok =
                cond["StringEquals"].as_object().is_none_or(|m| m.iter().all(|(k, v)| ctx(k) == v.as_str()));
            let null_ok = cond["Null"]
                .as_object()
                .is_none_or(|m| m.iter().all(|(k, v)| (v.as_str() == Some("false")) == ctx(k).is_some()));
            st["Effect"] == "Allow" && action_ok && principal_ok && equals_ok && null_ok
        })
    };
    let ours = [("purpose", holdfast::domain::codes::KEY_PURPOSE), ("sku", "GIFT")];
    let t = holdfast_local::template::Template::parse(&template_text()).unwrap();
    const USE: [&str; 6] = [
        "kms:Decrypt",
        "kms:GenerateDataKey",
        "kms:Encrypt",
        "kms:ReEncryptFrom",
        "kms:CreateGrant",
        "kms:GenerateDataKeyWithoutPlaintext",
    ];
    for f in &t.functions {
        let role = cfn::role_arn(&format!("{}Role", f.logical_id));
        for a in USE {
            // stock-api seals uploads; a supplier's codes are sealed where they arrive (the issue
            // message, the sweep, the manual reissue); orders-api opens codes for paid buyers
            let want = matches!(
                (f.binary.as_str(), a),
                ("stock-api" | "payment-timeout" | "reconcile-worker" | "orders-api", "kms:GenerateDataKey")
                    | ("orders-api", "kms:Decrypt")
            );
            assert_eq!(allows(&role, a, &ours), want, "{} {a}", f.binary);
        }
    }
    let read = cfn::role_arn("StockReadFunctionRole");
    assert!(USE.iter().all(|a| !allows(&read, a, &ours)), "stock-read can use the code key");
    // the sealing and revealing roles only with Holdfast's context (naming a SKU)
    let (api, orders) = (cfn::role_arn("StockApiFunctionRole"), cfn::role_arn("OrdersApiFunctionRole"));
    assert!(allows(&api, "kms:GenerateDataKey", &ours) && allows(&orders, "kms:Decrypt", &ours));
    for other in [
        &[][..],
        &[("purpose", "other"), ("sku", "GIFT")][..],
        &[("purpose", holdfast::domain::codes::KEY_PURPOSE)][..],
    ] {
        assert!(!allows(&api, "kms:GenerateDataKey", other), "{other:?}");
        assert!(!allows(&orders, "kms:Decrypt", other), "{other:?}");
    }
    // the account root: administration, never use (so IAM policies cannot delegate use)
    let root = cfn::root_arn();
    for a in ["kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:EnableKeyRotation", "kms:DescribeKey"] {
        assert!(allows(&root, a, &[]), "root {a}");
    }
    assert!(USE.iter().all(|a| !allows(&root, a, &ours)), "the root may use the key");
    let stranger = "arn:aws:iam::123456789012:role/stranger";
    assert!(USE.iter().all(|a| !allows(stranger, a, &ours)));
    // the checker sees these grants as the functions' own (and nobody else's)
    let g = grants(&template_text());
    let kms = |b: &str| -> Vec<String> {
        g[b].iter().filter(|(a, _)| a.starts_with("kms:")).map(|(a, _)| a.clone()).collect()
    };
    assert_eq!(kms("stock-api"), vec!["kms:GenerateDataKey"]);
    assert_eq!(kms("orders-api"), vec!["kms:Decrypt", "kms:GenerateDataKey"]);
    assert_eq!(kms("payment-timeout"), vec!["kms:GenerateDataKey"]);
    assert_eq!(kms("reconcile-worker"), vec!["kms:GenerateDataKey"]);
    let sealers = ["stock-api", "orders-api", "payment-timeout", "reconcile-worker"];
    assert!(g.keys().filter(|b| !sealers.contains(&b.as_str())).all(|b| kms(b).is_empty()));
}

#[test]
fn a_code_key_policy_that_names_stock_read_or_lets_the_root_use_the_key_is_reported() {
    let t = template_text();
    let m = mutate(
        &t,
        "  CodeKey:",
        "Principal: {AWS: !GetAtt OrdersApiFunctionRole.Arn}",
        "Principal: {AWS: [!GetAtt OrdersApiFunctionRole.Arn, !GetAtt StockReadFunctionRole.Arn]}",
    );
    assert_reports(&m, &["stock-read may kms:Decrypt on CodeKey but its code never does"]);
    let m = mutate(
        &t,
        "  CodeKey:",
        "              - kms:DescribeKey\n",
        "              - kms:DescribeKey\n              - kms:Decrypt\n",
    );
    assert_reports(
        &m,
        &["CodeKey's policy lets the account root kms:Decrypt: any IAM policy could then hand the key out"],
    );
}

#[test]
fn every_function_gets_exactly_the_environment_its_code_reads() {
    let model = read_model(&template_text()).unwrap();
    let problems = env_problems(&model);
    assert!(
        problems.is_empty(),
        "template.yaml environments disagree with holdfast::permissions::ENV:\n  {}",
        problems.join("\n  ")
    );
    assert_eq!(model.globals_env, BTreeSet::from([holdfast::app::AWS_ENDPOINT_VAR.to_owned()]));
}

#[test]
fn every_function_in_the_registry_is_in_the_maps_and_nothing_else_is() {
    let registry: BTreeSet<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
    let uses: Vec<&str> = USES.iter().map(|(n, _)| *n).collect();
    let env: Vec<&str> = ENV.iter().map(|(n, _)| *n).collect();
    assert_eq!(uses.iter().copied().collect::<BTreeSet<_>>(), registry, "USES vs handlers::FUNCTIONS");
    assert_eq!(env.iter().copied().collect::<BTreeSet<_>>(), registry, "ENV vs handlers::FUNCTIONS");
    assert_eq!(uses.len(), registry.len(), "a function appears twice in USES");
    assert_eq!(env.len(), registry.len(), "a function appears twice in ENV");
    let in_template: BTreeSet<String> = grants(&template_text()).into_keys().collect();
    assert_eq!(
        in_template,
        registry.iter().map(|s| (*s).to_owned()).collect(),
        "template functions vs handlers::FUNCTIONS"
    );
}

#[test]
fn no_function_declares_one_use_twice() {
    for (f, uses) in USES {
        let set: BTreeSet<_> = uses.iter().collect();
        assert_eq!(set.len(), uses.len(), "{f} declares a use twice");
    }
    for (f, vars) in ENV {
        let set: BTreeSet<_> = vars.iter().collect();
        assert_eq!(set.len(), vars.len(), "{f} declares a variable twice");
    }
}

#[test]
fn a_function_is_told_the_name_of_exactly_the_resources_it_uses() {
    let resource_vars: BTreeSet<&str> = Resource::ALL.iter().filter_map(|r| r.env_var()).collect();
    for (f, uses) in USES {
        let needed: BTreeSet<&str> = uses.iter().filter_map(|(_, r)| r.env_var()).collect();
        let given: BTreeSet<&str> =
            holdfast::permissions::env(f).unwrap().iter().copied().filter(|v| resource_vars.contains(v)).collect();
        assert_eq!(given, needed, "{f}: resource-name variables in ENV vs resources in USES");
    }
}

#[test]
fn every_declared_variable_is_one_the_configuration_reads() {
    let seen = RefCell::new(BTreeSet::<String>::new());
    holdfast::config::Config::from_lookup(&|k| {
        seen.borrow_mut().insert(k.to_owned());
        None
    })
    .unwrap();
    let read = seen.into_inner();
    // read by app::from_env (the SDK endpoint) and by the edge's origin check in the
    // Lambda loop (holdfast::edge), not by Config
    let also_read = [holdfast::app::AWS_ENDPOINT_VAR, holdfast::edge::ORIGIN_VERIFY_VAR];
    let declared: BTreeSet<&str> =
        ENV.iter().flat_map(|(_, v)| v.iter().copied()).chain(DEFAULTED_ENV.iter().copied()).collect();
    for v in &declared {
        assert!(read.contains(*v) || also_read.contains(v), "{v} is declared but Config never reads it");
    }
    for v in &read {
        assert!(
            declared.contains(v.as_str()),
            "Config reads {v} but no function declares it and it is not in DEFAULTED_ENV"
        );
    }
}

// ---------- the checker can fail ----------

#[test]
fn an_extra_action_in_a_copy_of_the_template_is_reported() {
    let t = template_text();
    let m = mutate(
        &t,
        "Binary: payment-callback",
        "[dynamodb:GetItem, dynamodb:PutItem]",
        "[dynamodb:GetItem, dynamodb:PutItem, dynamodb:DeleteItem]",
    );
    assert_reports(&m, &["payment-callback may dynamodb:DeleteItem on OrderTable (a write) but its code never does"]);
    assert_eq!(new_problems(&m).len(), 1, "{:#?}", new_problems(&m));
}

#[test]
fn a_payment_callback_that_may_write_stock_is_reported() {
    let t = template_text();
    let m = mutate(
        &t,
        "Binary: payment-callback",
        "Resource: !GetAtt OrderTable.Arn",
        "Resource: [!GetAtt OrderTable.Arn, !GetAtt StockTable.Arn]",
    );
    assert_reports(
        &m,
        &[
            "payment-callback may dynamodb:PutItem on StockTable (a write) but its code never does",
            "payment-callback may dynamodb:GetItem on StockTable but its code never does",
        ],
    );
    // and the spot check itself would fail on it
    assert_eq!(writes_to(&grants(&m), "payment-callback", Resource::StockTable), vec!["dynamodb:PutItem".to_owned()]);
}

#[test]
fn stock_events_that_may_write_orders_is_reported() {
    let t = template_text();
    let m = mutate(
        &t,
        "Binary: stock-events",
        "            - Effect: Allow\n              Action: events:PutEvents",
        "            - Effect: Allow\n              Action: dynamodb:PutItem\n              Resource: !GetAtt OrderTable.Arn\n            - Effect: Allow\n              Action: events:PutEvents",
    );
    assert_reports(&m, &["stock-events may dynamodb:PutItem on OrderTable (a write) but its code never does"]);
    assert_eq!(writes_to(&grants(&m), "stock-events", Resource::OrderTable), vec!["dynamodb:PutItem".to_owned()]);
}

#[test]
fn a_missing_action_in_a_copy_of_the_template_is_reported() {
    let t = template_text();
    let m = mutate(&t, "Binary: create-order", ", dynamodb:UpdateItem,", ",");
    assert_reports(
        &m,
        &["create-order's code calls dynamodb:UpdateItem on StockTable but the template does not grant it"],
    );
    let m = mutate(
        &t,
        "Binary: reconcile-worker",
        "Resource: !GetAtt EventBus.Arn",
        "Resource: !GetAtt StockEventsQueue.Arn",
    );
    let added = new_problems(&m);
    assert!(
        added
            .iter()
            .any(|p| p
                == "reconcile-worker's code calls events:PutEvents on EventBus but the template does not grant it"),
        "{added:#?}"
    );
    assert!(added.iter().any(|p| p.contains("StockEventsQueue.Arn is not one of the resources")), "{added:#?}");
}

#[test]
fn wildcards_in_a_copy_of_the_template_are_reported() {
    let t = template_text();
    let m = mutate(&t, "Binary: publish-events", "Resource: !GetAtt EventBus.Arn", "Resource: \"*\"");
    assert_reports(
        &m,
        &[
            "publish-events is granted events:PutEvents on the wildcard resource \"*\"",
            "publish-events's code calls events:PutEvents on EventBus but the template does not grant it",
        ],
    );
    let m =
        mutate(&t, "Binary: orders-api", "[dynamodb:GetItem, dynamodb:PutItem, dynamodb:BatchGetItem]", "dynamodb:*");
    assert_reports(&m, &["orders-api is granted the wildcard action \"dynamodb:*\""]);
    let m = mutate(&t, "Binary: reconcile", "!Sub \"${StockTable.Arn}/index/*\"", "!Sub \"${StockTable.Arn}*\"");
    assert!(new_problems(&m).iter().any(|p| p.contains("wildcard resource")), "{:#?}", new_problems(&m));
}

#[test]
fn a_grant_on_a_name_instead_of_an_arn_is_reported() {
    let t = template_text();
    let m = mutate(&t, "Binary: stock-events", "Resource: !GetAtt EventBus.Arn", "Resource: !Ref EventBus");
    let added = new_problems(&m);
    assert!(
        added.iter().any(|p| p.contains("!Ref EventBus is the name or URL of EventBus, not its ARN")),
        "{added:#?}"
    );
    assert!(added
        .iter()
        .any(|p| p == "stock-events's code calls events:PutEvents on EventBus but the template does not grant it"));
}

#[test]
fn a_grant_on_an_index_that_does_not_exist_is_reported() {
    let t = template_text();
    // every index orders-api is granted, misspelt: none of its grants reaches a real index
    let mut m = mutate(&t, "Binary: orders-api", "/index/by-user", "/index/by-usr");
    m = mutate(&m, "Binary: orders-api", "/index/captured-by-time", "/index/captured-by-tme");
    m = mutate(&m, "Binary: orders-api", "/index/refunded-by-time", "/index/refunded-by-tme");
    m = mutate(&m, "Binary: orders-api", "/index/reviews-pending", "/index/reviews-pendng");
    let added = new_problems(&m);
    assert!(added.iter().any(|p| p.contains("table OrderTable has no index \"by-usr\"")), "{added:#?}");
    assert!(
        added
            .iter()
            .any(|p| p
                == "orders-api's code calls dynamodb:Query on OrderTableIndexes but the template does not grant it")
    );
}

#[test]
fn environment_mistakes_in_a_copy_of_the_template_are_reported() {
    let t = template_text();
    let m = mutate(
        &t,
        "Binary: orders-api",
        "ORDER_TABLE: !Ref OrderTable",
        "ORDER_TABLE: !Ref OrderTable\n          EVENT_BUS_NAME: !Ref EventBus",
    );
    assert_reports(&m, &["orders-api is given EVENT_BUS_NAME but its code never reads it"]);
    let m = mutate(&t, "Binary: reconcile", "          HOLDFAST_STALE_LOCK_SECONDS: !Ref StaleLockSeconds\n", "");
    assert_reports(&m, &["reconcile's code reads HOLDFAST_STALE_LOCK_SECONDS but the template does not set it"]);
    let m = mutate(&t, "Binary: stock-api", "STOCK_TABLE: !Ref StockTable", "STOCK_TABLE: !Ref OrderTable");
    assert_reports(&m, &["stock-api's STOCK_TABLE is !Ref OrderTable, not !Ref StockTable"]);
}

#[test]
fn a_function_the_map_does_not_know_is_reported() {
    let t = template_text();
    let m = mutate(&t, "Binary: reconcile", "Binary: reconcile", "Binary: reconcile-v2");
    let added = new_problems(&m);
    assert!(
        added.iter().any(|p| p.starts_with("reconcile-v2 (ReconcileFunction) is not in holdfast::permissions::USES")),
        "{added:#?}"
    );
    assert!(added
        .iter()
        .any(|p| p == "the permission map declares reconcile, but the template has no function with that binary"));
}

#[test]
fn managed_policies_are_reported_as_uncheckable() {
    let t = template_text();
    let m =
        mutate(&t, "Binary: stock-api", "      Policies:\n", "      Policies:\n        - AmazonDynamoDBFullAccess\n");
    assert_reports(&m, &["stock-api uses the managed policy or policy template AmazonDynamoDBFullAccess, which this test cannot check; use inline statements"]);
}

// ---------- the map against the adapters ----------

/// The IAM actions the AWS adapters' source can issue: SDK calls and transaction item kinds.
fn adapter_actions() -> BTreeMap<&'static str, Vec<String>> {
    const CALLS: &[(&str, &str)] = &[
        (".get_item()", "dynamodb:GetItem"),
        (".put_item()", "dynamodb:PutItem"),
        (".update_item()", "dynamodb:UpdateItem"),
        (".delete_item()", "dynamodb:DeleteItem"),
        (".query()", "dynamodb:Query"),
        (".scan()", "dynamodb:Scan"),
        (".batch_get_item()", "dynamodb:BatchGetItem"),
        (".batch_write_item()", "dynamodb:BatchWriteItem"),
        (".execute_statement()", "dynamodb:PartiQLSelect"),
        ("Put::builder()", "dynamodb:PutItem"),
        ("Update::builder()", "dynamodb:UpdateItem"),
        ("Delete::builder()", "dynamodb:DeleteItem"),
        ("ConditionCheck::builder()", "dynamodb:ConditionCheckItem"),
        (".send_message()", "sqs:SendMessage"),
        (".send_message_batch()", "sqs:SendMessage"),
        (".delete_message()", "sqs:DeleteMessage"),
        (".get_queue_attributes()", "sqs:GetQueueAttributes"),
        (".put_events()", "events:PutEvents"),
        (".get_secret_value()", "secretsmanager:GetSecretValue"),
        (".generate_data_key()", "kms:GenerateDataKey"),
        (".decrypt()", "kms:Decrypt"),
        (".post_to_connection()", "execute-api:ManageConnections"),
    ];
    let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../aws/src/adapters/"));
    // every source file of the DynamoDB adapter (however it is split into modules) and the
    // other AWS adapters
    let mut files = Vec::new();
    let mut dirs = vec![root.join("dynamo")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.extend(["sqs.rs", "eventbridge.rs", "secrets.rs", "kms.rs", "push.rs"].map(|f| root.join(f)));
    assert!(files.len() > 4, "the adapters' sources: {files:?}");
    let mut out: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
        for (call, action) in CALLS {
            if text.contains(call) {
                out.entry(*action).or_default().push(file.clone());
            }
        }
    }
    out
}

#[test]
fn every_aws_call_the_adapters_can_make_is_declared_for_some_function() {
    let issued = adapter_actions();
    let declared: BTreeSet<&str> = USES.iter().flat_map(|(_, u)| u.iter().map(|(a, _)| *a)).collect();
    for (action, files) in &issued {
        assert!(
            declared.contains(action),
            "{files:?} can issue {action}, but no function in holdfast::permissions::USES declares it"
        );
    }
    for action in &declared {
        assert!(issued.contains_key(action), "USES declares {action}, which no adapter issues");
    }
    // the audit dumps are the one Scan: the tests' invariant checks and the daily ledger report
    // (orders-api, capped: docs/operations.md, "Daily ledger report"); no other function scans
    let scanners: Vec<&str> =
        USES.iter().filter(|(_, u)| u.iter().any(|(a, _)| *a == "dynamodb:Scan")).map(|(f, _)| *f).collect();
    assert_eq!(scanners, ["orders-api"], "only the ledger report may Scan");
}

/// The push channel (docs/push.md): only push-api may post to connections, only on its own
/// API's stage, and the only stock-table item it may write is a waiting room's clock.
#[test]
fn only_push_api_posts_to_connections_and_it_writes_nothing_but_connections_and_a_rooms_clock() {
    let g = grants(&template_text());
    for (binary, grants) in &g {
        let posts = grants.iter().any(|(a, r)| a == "execute-api:ManageConnections" || *r == Resource::PushConnections);
        assert_eq!(posts, binary == "push-api", "{binary} may post to connections: {posts}");
    }
    let push = &g["push-api"];
    for (a, r) in push.iter().filter(|(a, _)| is_write_action(a)) {
        assert!(
            *r == Resource::ConnectionTable || (*r == Resource::StockTable && a == "dynamodb:PutItem"),
            "push-api may {a} on {r:?}"
        );
    }
    for table in [Resource::OrderTable, Resource::JournalTable] {
        assert!(!push.iter().any(|(_, r)| *r == table), "push-api reaches {table:?}");
    }
    let text = template_text();
    let block = &text[text.find("  PushApiFunction:").expect("PushApiFunction")..];
    let end = block.match_indices("\n  ").map(|(i, _)| i).find(|i| block[i + 3..].starts_with(|c: char| c != ' '));
    let block = &block[..end.unwrap_or(block.len())];
    let put =
        block.split("- Effect").find(|s| s.contains("StockTable.Arn") && s.contains("PutItem")).expect("a stock put");
    assert!(put.contains("dynamodb:LeadingKeys: [\"QR#*\"]"), "push-api may write more than a room's clock:\n{put}");
    // the endpoint it posts through is this API's stage, the one its grant names
    assert!(
        block.contains(r#"PUSH_ENDPOINT: !Sub "https://${PushApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/live""#),
        "push-api's PUSH_ENDPOINT is not the push API's stage"
    );
    // no other table of the stack is reached through the connection table's grant
    assert!(g.iter().all(|(b, gs)| b == "push-api" || !gs.iter().any(|(_, r)| *r == Resource::ConnectionTable)));
}

#[test]
fn a_wider_connections_grant_in_a_copy_of_the_template_is_reported() {
    let wider = template_text().replace("${PushApi}/live/POST/@connections/*", "${PushApi}/*");
    assert!(
        new_problems(&wider).iter().any(|p| p.contains("push-api") && p.contains("wildcard")),
        "{:?}",
        new_problems(&wider)
    );
}

// ---------- queue resource policies (security review L3) ----------

mod cfn;
use cfn::{decide, Caller, Decision, Stack};

const OPS_ROLE: &str = "arn:aws:iam::123456789012:role/holdfast-operators";

fn stack_with_ops() -> Stack {
    Stack::new(&template_text(), &[("OpsRoleArn", OPS_ROLE)])
}

/// (DLQ, the queue its messages are redriven to): the queues' redrive policies and the
/// EventBridge targets' dead-letter queues.
fn redrives(s: &Stack) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for q in s.of_type("AWS::SQS::Queue") {
        if let Some(dlq) = s.properties(&q).unwrap()["RedrivePolicy"]["deadLetterTargetArn"].as_str() {
            out.push((dlq.rsplit(':').next().unwrap().to_owned(), q.clone()));
        }
    }
    for r in s.of_type("AWS::Events::Rule") {
        for t in s.properties(&r).unwrap()["Targets"].as_array().unwrap() {
            if let (Some(dlq), Some(target)) = (t["DeadLetterConfig"]["Arn"].as_str(), t["Arn"].as_str()) {
                out.push((dlq.rsplit(':').next().unwrap().to_owned(), target.rsplit(':').next().unwrap().to_owned()));
            }
        }
    }
    out
}

const REDRIVE_ON_DLQ: &[&str] =
    &["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:StartMessageMoveTask", "sqs:CancelMessageMoveTask"];

#[test]
fn the_operators_role_can_redrive_every_dlq_and_no_one_else_can() {
    let s = stack_with_ops();
    let pairs = redrives(&s);
    // … PushDLQ → PushQueue (docs/push.md)
    assert_eq!(pairs.len(), 8, "{pairs:?}");
    let ops = Caller::Role(OPS_ROLE.into());
    let other = Caller::Role("arn:aws:iam::123456789012:role/some-admin".into());
    for (dlq, target) in &pairs {
        for a in REDRIVE_ON_DLQ {
            assert_eq!(decide(&s, dlq, a, &ops), Decision::Allow, "ops {a} on {dlq}");
            assert_eq!(decide(&s, dlq, a, &other), Decision::ExplicitDeny, "other role {a} on {dlq}");
            assert_ne!(decide(&s, dlq, a, &Caller::Anonymous), Decision::Allow, "anonymous {a} on {dlq}");
        }
        assert_eq!(decide(&s, target, "sqs:SendMessage", &ops), Decision::Allow, "ops redrive {dlq} → {target}");
        assert_eq!(decide(&s, target, "sqs:SendMessage", &other), Decision::ExplicitDeny, "{target}");
        assert_ne!(decide(&s, target, "sqs:SendMessage", &Caller::Anonymous), Decision::Allow, "{target}");
        // the account root is the break-glass principal
        assert_eq!(decide(&s, target, "sqs:SendMessage", &Caller::Role(cfn::root_arn())), Decision::Allow);
    }
}

#[test]
fn without_an_operators_role_only_the_account_root_can_redrive() {
    let s = Stack::new(&template_text(), &[]);
    for (dlq, target) in redrives(&s) {
        assert_eq!(decide(&s, &target, "sqs:SendMessage", &Caller::Role(OPS_ROLE.into())), Decision::ExplicitDeny);
        assert_eq!(decide(&s, &dlq, "sqs:ReceiveMessage", &Caller::Role(OPS_ROLE.into())), Decision::ExplicitDeny);
        assert_eq!(decide(&s, &target, "sqs:SendMessage", &Caller::Role(cfn::root_arn())), Decision::Allow);
        assert_eq!(decide(&s, &dlq, "sqs:StartMessageMoveTask", &Caller::Role(cfn::root_arn())), Decision::Allow);
    }
}

#[test]
fn every_queue_and_dlq_has_a_policy_that_denies_unknown_principals() {
    let s = stack_with_ops();
    let stranger = Caller::Role("arn:aws:iam::123456789012:role/stranger".into());
    let queues = s.of_type("AWS::SQS::Queue");
    // … PushQueue and PushDLQ (docs/push.md), StockFeedQueue (docs/operations.md)
    assert_eq!(queues.len(), 17, "{queues:?}");
    for q in &queues {
        for a in ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"] {
            assert_eq!(decide(&s, q, a, &stranger), Decision::ExplicitDeny, "{a} on {q}");
        }
        // queue metadata stays readable, so CloudFormation can update the stack
        assert_eq!(decide(&s, q, "sqs:GetQueueAttributes", &stranger), Decision::Allow, "{q}");
    }
}

#[test]
fn the_queue_policies_never_deny_a_function_what_its_role_grants() {
    let s = stack_with_ops();
    let t = holdfast_local::template::Template::parse(&template_text()).unwrap();
    let mut checked = 0;
    for f in &t.functions {
        let role = Caller::Role(cfn::role_arn(&format!("{}Role", f.logical_id)));
        // what the function's code sends
        for (a, r) in declared_uses(&f.binary).unwrap() {
            if r.cfn_type() == "AWS::SQS::Queue" {
                assert_eq!(decide(&s, r.logical_id(), &a, &role), Decision::Allow, "{} {a} on {r:?}", f.binary);
                checked += 1;
            }
        }
        // what its event source mapping polls, with the function's role
        for (_, e) in &f.events {
            if let holdfast_local::template::Event::Sqs { queue, .. } = e {
                for a in ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"] {
                    assert_eq!(decide(&s, queue, a, &role), Decision::Allow, "{} polling {queue}", f.binary);
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "{checked}");
}

#[test]
fn the_stock_feed_sample_queue_is_read_by_its_consumer_only_and_fed_by_its_rule_only() {
    let consumer = "arn:aws:iam::123456789012:role/search-indexer";
    let s = Stack::new(&template_text(), &[("StockFeedConsumerRoleArn", consumer), ("OpsRoleArn", OPS_ROLE)]);
    for a in ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"] {
        assert_eq!(decide(&s, "StockFeedQueue", a, &Caller::Role(consumer.into())), Decision::Allow, "{a}");
        let holdfast_role = Caller::Role(cfn::role_arn("StockJournalFunctionRole"));
        assert_eq!(decide(&s, "StockFeedQueue", a, &holdfast_role), Decision::ExplicitDeny, "{a}");
    }
    let from = |rule: &str| Caller::Service {
        name: "events.amazonaws.com".into(),
        source_arn: Some(format!("arn:aws:events:{}:{}:rule/{rule}", cfn::REGION, cfn::ACCOUNT)),
    };
    assert_eq!(decide(&s, "StockFeedQueue", "sqs:SendMessage", &from("StockFeedRule")), Decision::Allow);
    assert_ne!(decide(&s, "StockFeedQueue", "sqs:SendMessage", &from("PushRule")), Decision::Allow);
    // the consumer reads, never writes into the feed
    let consumer_sends = decide(&s, "StockFeedQueue", "sqs:SendMessage", &Caller::Role(consumer.into()));
    assert_eq!(consumer_sends, Decision::ExplicitDeny);
    // without a consumer role, the operators and the root only
    let s = Stack::new(&template_text(), &[]);
    let a = decide(&s, "StockFeedQueue", "sqs:ReceiveMessage", &Caller::Role(consumer.into()));
    assert_eq!(a, Decision::ExplicitDeny);
}

#[test]
fn eventbridge_delivers_from_its_rule_only() {
    let s = stack_with_ops();
    let from = |rule: &str| Caller::Service {
        name: "events.amazonaws.com".into(),
        source_arn: Some(format!("arn:aws:events:{}:{}:rule/{rule}", cfn::REGION, cfn::ACCOUNT)),
    };
    for (q, rule) in [
        ("StockEventsQueue", "StockEventsRule"),
        ("StockEventsRuleDLQ", "StockEventsRule"),
        ("RefundsQueue", "RefundsRule"),
        ("RefundsRuleDLQ", "RefundsRule"),
    ] {
        assert_eq!(decide(&s, q, "sqs:SendMessage", &from(rule)), Decision::Allow, "{rule} → {q}");
        assert_ne!(decide(&s, q, "sqs:SendMessage", &from("SomeoneElsesRule")), Decision::Allow, "{q}");
    }
    // and a function role cannot forge into the rule-fed queue
    let forger = Caller::Role(cfn::role_arn("CreateOrderFunctionRole"));
    assert_eq!(decide(&s, "StockEventsQueue", "sqs:SendMessage", &forger), Decision::ExplicitDeny);
}

#[test]
fn a_policy_without_the_operators_exemption_is_caught() {
    // the deny on aws:SourceArn alone (as it was) also denies the operators' redrive
    let t = template_text();
    let m = mutate(
        &t,
        "  StockEventsQueuePolicy:",
        "                aws:SourceArn: !GetAtt StockEventsRule.Arn\n                aws:PrincipalArn:\n                  - !Sub \"arn:${AWS::Partition}:iam::${AWS::AccountId}:root\"\n                  - !If [HasOpsRole, !Ref OpsRoleArn, !Ref AWS::NoValue]\n",
        "                aws:SourceArn: !GetAtt StockEventsRule.Arn\n",
    );
    let s = Stack::new(&m, &[("OpsRoleArn", OPS_ROLE)]);
    assert_eq!(
        decide(&s, "StockEventsQueue", "sqs:SendMessage", &Caller::Role(OPS_ROLE.into())),
        Decision::ExplicitDeny
    );
}

// ---------- every selectable provider × every function that may call it (security review L8) ----------

/// Every payment provider the configuration can select. The match makes a new variant fail to
/// compile here until it is added to the walk.
fn selectable_providers() -> Vec<holdfast::domain::order::Provider> {
    use holdfast::domain::order::Provider;
    let all = vec![Provider::Generic, Provider::Stripe];
    for p in &all {
        match p {
            Provider::Generic | Provider::Stripe => {}
        }
    }
    all
}

/// Every (provider, function) pair the template cannot serve: a variable not set or a grant not
/// given, for each function that may call a provider and for the webhook receiver.
fn provider_problems(template_text: &str) -> Vec<String> {
    use holdfast::permissions::{provider_needs, webhook_needs, PROVIDER_CALLERS};
    let model = match read_model(template_text) {
        Ok(m) => m,
        Err(e) => return vec![e],
    };
    let mut pairs: Vec<(&str, holdfast::domain::order::Provider, holdfast::permissions::Needs)> = Vec::new();
    for p in selectable_providers() {
        for f in PROVIDER_CALLERS {
            pairs.push((f, p, provider_needs(p)));
        }
        pairs.push(("payment-callback", p, webhook_needs(p)));
    }
    let mut problems = Vec::new();
    for (f, p, (vars, needed)) in pairs {
        let Some(fm) = model.functions.iter().find(|m| m.binary == f) else {
            problems.push(format!("{f} may call the {p:?} provider but is not in the template"));
            continue;
        };
        for v in vars {
            if !fm.env.contains_key(*v) {
                problems.push(format!("{f} may call the {p:?} provider but the template does not set {v}"));
            }
            // and the map agrees, so the permission test keeps it set
            if !declared_env(f).is_some_and(|e| e.contains(v)) {
                problems.push(format!("{f} may call the {p:?} provider but holdfast::permissions::ENV lacks {v}"));
            }
        }
        for (a, r) in needed {
            if !fm.grants.contains(&((*a).to_owned(), *r)) {
                problems.push(format!("{f} may call the {p:?} provider but the template does not grant {a} on {r:?}"));
            }
            if !declared_uses(f).is_some_and(|u| u.contains(&((*a).to_owned(), *r))) {
                problems.push(format!(
                    "{f} may call the {p:?} provider but holdfast::permissions::USES lacks {a} on {r:?}"
                ));
            }
        }
    }
    // No secret's value in any function's environment: ARNs only (security review V5, L8).
    for fm in &model.functions {
        for v in fm.env.keys() {
            if holdfast::permissions::SECRET_VALUE_ENV.contains(&v.as_str()) {
                problems.push(format!("{} is given the secret value {v} in its environment", fm.binary));
            }
        }
    }
    for v in &model.globals_env {
        if holdfast::permissions::SECRET_VALUE_ENV.contains(&v.as_str()) {
            problems.push(format!("Globals give every function the secret value {v}"));
        }
    }
    problems
}

#[test]
fn every_selectable_provider_is_wired_in_every_function_that_may_call_it() {
    let problems = provider_problems(&template_text());
    assert!(problems.is_empty(), "template.yaml cannot serve every provider:\n  {}", problems.join("\n  "));
    // the walk covers both providers and the four callers plus the receiver
    assert_eq!(selectable_providers().len(), 2);
    assert_eq!(holdfast::permissions::PROVIDER_CALLERS.len(), 4);
}

#[test]
fn a_provider_grant_or_variable_removed_from_one_function_turns_the_walk_red() {
    let t = template_text();
    let stripe_grant = "            - Effect: Allow\n              Action: secretsmanager:GetSecretValue\n              Resource: !Ref StripeApiKeySecretArn\n";
    let red = provider_problems(&mutate(&t, "  RefundsFunction:", stripe_grant, ""));
    assert!(
        red.contains(&"refunds may call the Stripe provider but the template does not grant secretsmanager:GetSecretValue on StripeApiKeySecret".to_owned()),
        "{red:#?}"
    );
    let generic_env = "          PROVIDER_CREDENTIAL_SECRET_ARN: !Ref ProviderCredentialSecretArn\n";
    let red = provider_problems(&mutate(&t, "  OrdersApiFunction:", generic_env, ""));
    assert!(
        red.contains(
            &"orders-api may call the Generic provider but the template does not set PROVIDER_CREDENTIAL_SECRET_ARN"
                .to_owned()
        ),
        "{red:#?}"
    );
    let refund_key = "              Resource: !Ref RefundWebhookSecretArn\n";
    let red = provider_problems(&mutate(
        &t,
        "  PaymentCallbackFunction:",
        refund_key,
        "              Resource: !Ref WebhookSecretArn\n",
    ));
    assert!(
        red.contains(&"payment-callback may call the Generic provider but the template does not grant secretsmanager:GetSecretValue on RefundWebhookSecret".to_owned()),
        "{red:#?}"
    );
    // a plain API key in a function's environment
    let plain = mutate(
        &t,
        "  ReconcileWorkerFunction:",
        "          STRIPE_API_KEY_SECRET_ARN: !Ref StripeApiKeySecretArn\n",
        "          STRIPE_API_KEY_SECRET_ARN: !Ref StripeApiKeySecretArn\n          STRIPE_API_KEY: sk_live_leaked\n",
    );
    assert!(provider_problems(&plain)
        .contains(&"reconcile-worker is given the secret value STRIPE_API_KEY in its environment".to_owned()));
}

// ---------- the event bus policy against the roles that publish (security review 3 L1) ----------

/// The statements of the `AWS::Events::EventBusPolicy` resources on `EventBus`.
fn bus_statements(s: &Stack) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for id in s.of_type("AWS::Events::EventBusPolicy") {
        let p = s.properties(&id).unwrap();
        if p["EventBusName"] != "ref:EventBus" {
            continue;
        }
        assert!(p.get("Action").is_none(), "{id}: use Statement, not the legacy Action/Principal form");
        match &p["Statement"] {
            serde_json::Value::Array(a) => out.extend(a.iter().cloned()),
            serde_json::Value::Null => {}
            one => out.push(one.clone()),
        }
    }
    out
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
        serde_json::Value::String(s) => vec![s.clone()],
        _ => vec![],
    }
}

/// Whether a bus policy statement's `Condition` holds for a role of the account. Only the
/// `aws:PrincipalArn` operators the template uses are understood; anything else fails the test
/// rather than being guessed.
fn bus_condition_holds(cond: &serde_json::Value, role: &str) -> bool {
    let Some(ops) = cond.as_object() else { return true };
    ops.iter().all(|(op, keys)| {
        keys.as_object().unwrap().iter().all(|(key, values)| {
            assert!(key.eq_ignore_ascii_case("aws:PrincipalArn"), "bus policy condition key {key} not understood");
            let listed = strings(values).iter().any(|v| v == role);
            match op.as_str() {
                "ArnEquals" | "StringEquals" => listed,
                "ArnNotEquals" | "StringNotEquals" => !listed,
                other => panic!("bus policy condition operator {other} not understood by the test"),
            }
        })
    })
}

/// Whether the bus policy lets `role` (an ARN) put events: no Deny statement applies to it.
/// (An Allow in the bus policy is not needed for a role of the same account.)
fn bus_admits(s: &Stack, role: &str) -> bool {
    let bus = format!("arn:aws:events:{}:{}:event-bus/EventBus", cfn::REGION, cfn::ACCOUNT);
    !bus_statements(s).iter().any(|st| {
        st["Effect"] == "Deny"
            && strings(&st["Action"]).iter().any(|a| a == "events:PutEvents" || a == "events:*" || a == "*")
            && strings(&st["Resource"]).iter().any(|r| r == &bus || r == "*")
            && (st["Principal"] == "*" || st["Principal"] == serde_json::json!({"AWS": "*"}))
            && bus_condition_holds(&st["Condition"], role)
    })
}

/// Every function whose role is granted `events:PutEvents` on the bus but which the bus
/// policy denies (its explicit deny wins over the grant, so the function publishes nothing).
fn bus_problems(template_text: &str) -> Vec<String> {
    let model = read_model(template_text).expect("template parses");
    let s = Stack::new(template_text, &[("OpsRoleArn", OPS_ROLE)]);
    let mut out = Vec::new();
    for f in &model.functions {
        if !f.grants.contains(&("events:PutEvents".to_owned(), Resource::EventBus)) {
            continue;
        }
        if !bus_admits(&s, &cfn::role_arn(&format!("{}Role", f.logical_id))) {
            out.push(format!("{} is granted events:PutEvents on EventBus but EventBusPolicy denies it", f.binary));
        }
    }
    out
}

#[test]
fn every_function_granted_put_events_is_admitted_by_the_event_bus_policy() {
    let t = template_text();
    assert_eq!(bus_problems(&t), Vec::<String>::new());
    // the functions that publish, by the code's declared uses; the walk saw all of them
    let publishers: Vec<String> = read_model(&t)
        .unwrap()
        .functions
        .into_iter()
        .filter(|f| f.grants.contains(&("events:PutEvents".to_owned(), Resource::EventBus)))
        .map(|f| f.binary)
        .collect();
    assert_eq!(
        publishers,
        ["stock-api", "publish-events", "stock-journal", "stock-events", "reconcile-worker"],
        "{publishers:?}"
    );
    // and the policy still keeps everyone else out
    let s = stack_with_ops();
    for stranger in [cfn::role_arn("CreateOrderFunctionRole"), OPS_ROLE.to_owned(), cfn::root_arn()] {
        assert!(!bus_admits(&s, &stranger), "{stranger} may put events on the bus");
    }
}

#[test]
fn a_publisher_removed_from_the_event_bus_policy_turns_the_bus_check_red() {
    let t = template_text();
    let m = mutate(&t, "  EventBusPolicy:", "              - !GetAtt StockJournalFunctionRole.Arn\n", "");
    assert_eq!(
        bus_problems(&m),
        vec!["stock-journal is granted events:PutEvents on EventBus but EventBusPolicy denies it".to_owned()]
    );
    let m = mutate(&t, "  EventBusPolicy:", "              - !GetAtt PublishEventsFunctionRole.Arn\n", "");
    assert_eq!(
        bus_problems(&m),
        vec!["publish-events is granted events:PutEvents on EventBus but EventBusPolicy denies it".to_owned()]
    );
}
