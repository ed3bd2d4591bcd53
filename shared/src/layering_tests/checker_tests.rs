//! The checker itself can fail: synthetic files with forbidden imports, and a mutated copy of a
//! real one, are reported; allowed edges, comments, strings and test code are not.

use super::*;

fn macros() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([
        ("fault".to_owned(), vec!["faults".to_owned()]),
        ("mutant".to_owned(), vec!["domain".to_owned(), "mutation".to_owned()]),
    ])
}

fn targets(rel: &str, src: &str) -> Vec<String> {
    check_source(rel, src, &macros()).into_iter().map(|v| v.target).collect()
}

#[test]
fn a_domain_file_importing_a_port_is_reported_with_its_line() {
    let v = check_source("domain/x.rs", "use super::Sku;\n\nuse crate::ports::FreezeLimits;\n", &macros());
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].line, v[0].target.as_str()), (3, "ports::FreezeLimits"));
    assert!(v[0].why.contains("runs up a floor"), "{}", v[0]);
}

#[test]
fn every_forbidden_edge_of_the_rule_is_reported() {
    let cases = [
        ("domain/plan.rs", "use crate::service::stock::freeze;"),
        ("domain/plan.rs", "fn f() -> crate::adapters::dynamo::item::Item { todo!() }"),
        ("ports.rs", "use crate::service::orders::OrderError;"),
        ("ports.rs", "use crate::handlers::Trigger;"),
        ("service/reconcile.rs", "use crate::adapters::dynamo::INDEX_BUCKETS;"),
        ("service/orders.rs", "use crate::app::App;"),
        ("service/orders.rs", "use crate::handlers::trigger_of;"),
        ("adapters/dynamo/stock.rs", "use crate::app::App;"),
        ("adapters/dynamo/stock.rs", "use crate::handlers::stream;"),
        ("adapters/memory/stock.rs", "use crate::adapters::dynamo::bucket_of;"),
        ("adapters/sweep.rs", "use super::dynamo::bucket_of;"),
        ("adapters/dynamo/orders.rs", "use super::super::memory::MemoryOrders;"),
        ("adapters/dynamo/stock.rs", "pub mod audit {\n    use super::super::super::memory;\n}"),
        ("handlers/stock_journal.rs", "use crate::adapters::dynamo::item::{get_n, opt_s, Item};"),
        ("app.rs", "let t = crate::handlers::trigger_of(function);"),
        ("domain/x.rs", "if crate::fault!(f, X) {}"),
        ("domain/x.rs", "use crate::nowhere::Thing;"),
    ];
    for (rel, src) in cases {
        let v = check_source(rel, src, &macros());
        assert!(!v.is_empty(), "{rel}: `{src}` not reported");
    }
}

#[test]
fn allowed_edges_pass() {
    let cases = [
        ("domain/plan.rs", "use super::reservation::{FreezeLimits, FreezeRejection};"),
        ("domain/plan.rs", "if crate::mutant!(\"x\") {}"),
        ("ports.rs", "use crate::domain::{Sku, OrderId};\nuse crate::config::Secret;"),
        ("service/reconcile.rs", "use crate::context::App;\nuse crate::ports::INDEX_BUCKETS;\nuse super::orders;"),
        ("adapters/dynamo/stock.rs", "use super::super::usage;\nuse super::item::Item;\nuse crate::ports::StockStore;"),
        ("adapters/memory/stock.rs", "use crate::domain::plan;\nuse super::lock;"),
        ("adapters/dynamo/stock.rs", "pub mod audit {\n    fn f() { super::super::campaigns::decode_item(); }\n}"),
        ("app.rs", "use crate::adapters::dynamo::stock::DynamoStock;\nuse crate::registry::trigger_of;"),
        ("handlers/stock_journal.rs", "use crate::app::table_images::counter_image;\nuse crate::service::stock;"),
        ("lambda.rs", "use crate::handlers::{self, Trigger};"),
    ];
    for (rel, src) in cases {
        let v = check_source(rel, src, &macros());
        assert!(v.is_empty(), "{rel}: `{src}` reported: {v:?}");
    }
}

#[test]
fn comments_strings_and_test_modules_are_not_imports() {
    let src = r##"
        //! Unlike [`crate::adapters::dynamo`], this is pure.
        /* use crate::app::App; /* nested */ use crate::handlers; */
        const A: &str = "crate::adapters::dynamo";
        const B: &str = r#"use crate::app::App; "quoted""#;
        const C: char = '"';
        fn f<'a>(x: &'a str) -> &'a str { x }
        #[cfg(test)]
        mod tests {
            use crate::app::memory_app;
            fn g() { let _ = "}"; }
        }
        #[cfg(test)]
        #[allow(dead_code)]
        fn helper() -> crate::app::App { todo!() }
        use crate::ports::Journal;
    "##;
    assert_eq!(targets("domain/x.rs", src), vec!["ports::Journal".to_owned()]);
}

#[test]
fn use_groups_are_resolved_item_by_item() {
    let src = "use crate::{domain::Sku, adapters::{memory::MemoryStock, dynamo::{self, item::Item}}, ports::*};";
    assert_eq!(
        targets("service/x.rs", src),
        vec![
            "adapters::memory::MemoryStock".to_owned(),
            "adapters::dynamo".to_owned(),
            "adapters::dynamo::item::Item".to_owned()
        ]
    );
}

#[test]
fn test_only_module_declarations_are_found() {
    let (_, mods) =
        drop_test_items(&strip("#[cfg(test)]\nmod tests;\nmod real;\n#[cfg(test)]\npub(crate) mod fuzz;\n"));
    assert_eq!(mods, vec!["tests".to_owned(), "fuzz".to_owned()]);
}

#[test]
fn a_mutated_copy_of_a_real_file_fails_the_check() {
    // the import this check was written to remove, put back into the real file
    let real = std::fs::read_to_string(src_root().join("service/reconcile/mod.rs")).unwrap_or_default();
    assert!(real.contains("use crate::ports::"), "service/reconcile/mod.rs not read");
    assert!(check_source("service/reconcile/mod.rs", &real, &macros()).is_empty());
    let mutated =
        real.replacen("use crate::ports::", "use crate::adapters::dynamo::INDEX_BUCKETS;\nuse crate::ports::", 1);
    let v = check_source("service/reconcile/mod.rs", &mutated, &macros());
    assert_eq!(v.iter().map(|v| v.target.as_str()).collect::<Vec<_>>(), vec!["adapters::dynamo::INDEX_BUCKETS"]);
}
