//! The capacity plan in the template (docs/capacity.md): the defaults deploy on a small account
//! (nothing provisioned, reserved or pre-warmed), and each column of docs/capacity.md's
//! parameter table (1k, 5k, 20k checkouts/s) gives a stack with the settings it names, and only
//! those. These tests need no emulator.

mod cfn;

use cfn::{template_text, Stack};
use serde_json::Value;

/// The parameter rows of docs/capacity.md's table: (parameter, [value per target column]).
fn plan() -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/capacity.md");
    let text = std::fs::read_to_string(path).expect("docs/capacity.md");
    let section = text.split("## Template parameters by target").nth(1).expect("the parameter table's section");
    let cells = |l: &str| l.trim().trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect::<Vec<_>>();
    let mut lines = section.lines().filter(|l| l.trim_start().starts_with('|'));
    let header = cells(lines.next().expect("a table"));
    let mut rows = Vec::new();
    for l in lines {
        let c = cells(l);
        if let Some(p) = c[0].strip_prefix('`').and_then(|p| p.strip_suffix('`')) {
            rows.push((p.to_owned(), c[1..].iter().map(|v| v.replace(',', "")).collect()));
        }
    }
    (header[1..].to_vec(), rows)
}

fn num(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("not a number: {s}")),
        Value::Number(n) => n.as_i64().unwrap(),
        other => panic!("not a number: {other}"),
    }
}

fn create_order(s: &Stack) -> Value {
    s.properties("CreateOrderFunction").expect("create-order")
}

fn checkout_throttle(s: &Stack) -> (i64, i64) {
    let api = s.properties("HttpApi").expect("the API");
    let r = &api["RouteSettings"]["POST /orders"];
    (num(&r["ThrottlingRateLimit"]), num(&r["ThrottlingBurstLimit"]))
}

#[test]
fn the_defaults_deploy_on_a_small_account_nothing_provisioned_reserved_or_pre_warmed() {
    let s = Stack::new(&template_text(), &[]);
    let f = create_order(&s);
    assert!(f.get("ReservedConcurrentExecutions").is_none(), "{f}");
    assert!(f.get("ProvisionedConcurrencyConfig").is_none(), "{f}");
    // the alias SAM needs for provisioned concurrency exists either way (no condition on it)
    assert_eq!(f["AutoPublishAlias"], "live");
    for t in ["StockTable", "OrderTable", "JournalTable"] {
        let p = s.properties(t).unwrap();
        assert!(p.get("WarmThroughput").is_none(), "{t}: {}", p["WarmThroughput"]);
        assert_eq!(p["BillingMode"], "PAY_PER_REQUEST");
    }
    assert_eq!(checkout_throttle(&s), (5000, 10000));
}

#[test]
fn every_column_of_the_capacity_table_is_a_stack_with_exactly_its_settings() {
    let (targets, rows) = plan();
    assert_eq!(targets.len(), 3, "{targets:?}");
    let known = cfn::json_of(&template_text())["Parameters"].clone();
    for (p, _) in &rows {
        assert!(known.get(p).is_some(), "docs/capacity.md names {p}, which is no template parameter");
    }
    for want in [
        "CheckoutRateLimit",
        "CheckoutBurstLimit",
        "CreateOrderReservedConcurrency",
        "CreateOrderProvisionedConcurrency",
        "StockTableWarmWrites",
        "StockTableWarmReads",
        "OrderTableWarmWrites",
        "JournalTableWarmWrites",
    ] {
        assert!(rows.iter().any(|(p, _)| p == want), "the table has no row for {want}");
    }
    for (i, target) in targets.iter().enumerate() {
        let set: Vec<(&str, &str)> = rows.iter().map(|(p, v)| (p.as_str(), v[i].as_str())).collect();
        let value = |p: &str| -> i64 { set.iter().find(|(k, _)| *k == p).map_or(0, |(_, v)| v.parse().unwrap()) };
        let s = Stack::new(&template_text(), &set);
        let f = create_order(&s);
        // provisioned concurrency on the alias, within the function's reserved concurrency
        let reserved = num(&f["ReservedConcurrentExecutions"]);
        let provisioned = num(&f["ProvisionedConcurrencyConfig"]["ProvisionedConcurrentExecutions"]);
        assert_eq!(
            (reserved, provisioned),
            (value("CreateOrderReservedConcurrency"), value("CreateOrderProvisionedConcurrency"))
        );
        assert!(
            provisioned > 0 && provisioned <= reserved,
            "{target}: provisioned {provisioned} > reserved {reserved}"
        );
        // the checkout's throttle: the burst covers at least a second of the rate
        let (rate, burst) = checkout_throttle(&s);
        assert_eq!((rate, burst), (value("CheckoutRateLimit"), value("CheckoutBurstLimit")));
        assert!(burst >= rate, "{target}");
        // warm throughput only where the plan sets it, and then above what a new table has
        for (table, param, attr, floor) in [
            ("StockTable", "StockTableWarmWrites", "WriteUnitsPerSecond", 4000),
            ("StockTable", "StockTableWarmReads", "ReadUnitsPerSecond", 12000),
            ("OrderTable", "OrderTableWarmWrites", "WriteUnitsPerSecond", 4000),
            ("JournalTable", "JournalTableWarmWrites", "WriteUnitsPerSecond", 4000),
        ] {
            let w = s.properties(table).unwrap()["WarmThroughput"].get(attr).cloned();
            match value(param) {
                0 => assert!(w.is_none(), "{target}: {table}.{attr} set with {param} 0"),
                v => {
                    assert_eq!(w.map(|w| num(&w)), Some(v), "{target}: {table}.{attr}");
                    assert!(v > floor, "{target}: {param} {v} is not above a new table's {floor}");
                }
            }
        }
    }
}

#[test]
fn the_twenty_thousand_column_provisions_create_order_and_warms_every_table() {
    let (targets, rows) = plan();
    let i = targets.iter().position(|t| t.contains("20,000") || t.contains("20000")).expect("a 20k column");
    let set: Vec<(&str, &str)> = rows.iter().map(|(p, v)| (p.as_str(), v[i].as_str())).collect();
    let s = Stack::new(&template_text(), &set);
    let f = create_order(&s);
    assert_eq!(f["AutoPublishAlias"], "live");
    assert!(num(&f["ProvisionedConcurrencyConfig"]["ProvisionedConcurrentExecutions"]) >= 1000);
    // 20,000 checkouts/s: the route lets at least that through, steadily
    assert!(checkout_throttle(&s).0 >= 20_000);
    for t in ["StockTable", "OrderTable", "JournalTable"] {
        assert!(s.properties(t).unwrap()["WarmThroughput"]["WriteUnitsPerSecond"].is_string(), "{t}");
    }
    // one setting alone: provisioned concurrency without a reserved cap is a valid stack too
    let s = Stack::new(&template_text(), &[("CreateOrderProvisionedConcurrency", "5")]);
    let f = create_order(&s);
    assert!(f.get("ReservedConcurrentExecutions").is_none());
    assert_eq!(num(&f["ProvisionedConcurrencyConfig"]["ProvisionedConcurrentExecutions"]), 5);
    let s = Stack::new(&template_text(), &[("StockTableWarmReads", "20000")]);
    let w = &s.properties("StockTable").unwrap()["WarmThroughput"];
    assert!(w.get("WriteUnitsPerSecond").is_none() && num(&w["ReadUnitsPerSecond"]) == 20000, "{w}");
}
