//! Import circles between the library's modules, two levels deep (`service::orders`,
//! `handlers::stock_api`, `domain::order`): the strongly connected groups of the graph of
//! `crate::`/`super::` imports that [`super`] resolves (test items left out, as there).

use super::{crate_paths, drop_test_items, module_of, source_files, strip};
use std::collections::{BTreeMap, BTreeSet};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// A module path cut to its first two names (`adapters::dynamo::stock` → `adapters::dynamo`).
fn node(path: &[String]) -> String {
    path.iter().take(2).cloned().collect::<Vec<_>>().join("::")
}

/// The import graph of the files `(rel, src)`, leaving out test modules (`#[cfg(test)] mod x;`).
fn graph(files: &[(String, String)]) -> Graph {
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for (rel, src) in files {
        for m in drop_test_items(&strip(src)).1 {
            let mut path = module_of(rel);
            path.push(m);
            test_only.insert(path);
        }
    }
    let mut g = Graph::new();
    for (rel, src) in files {
        let module = module_of(rel);
        if module.is_empty() || test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let from = node(&module);
        let (clean, _) = drop_test_items(&strip(src));
        for (_, target) in crate_paths(&clean, &module) {
            let to = node(&target);
            if to != from && !target.is_empty() {
                g.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    g
}

/// The groups of modules that import each other, each sorted, biggest first (Tarjan).
fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut group = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                group.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                t.out.push(group);
            }
        }
    }
    let mut t =
        T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    t.out
}

/// The circles still there, each a group of modules that import each other: none since issue 38
/// broke the last one. The check holds the line: a new circle fails it until it is broken (or,
/// knowingly, listed here).
const KNOWN: &[&[&str]] = &[];

/// What differs between the circles `found` and [`KNOWN`], as sentences.
fn unexpected(found: &[Vec<String>]) -> Vec<String> {
    let known: Vec<Vec<String>> = KNOWN.iter().map(|g| g.iter().map(|m| (*m).to_owned()).collect()).collect();
    let mut out: Vec<String> = found
        .iter()
        .filter(|g| !known.contains(g))
        .map(|g| format!("a circle not in KNOWN: {}", g.join(" ↔ ")))
        .collect();
    out.extend(
        known
            .iter()
            .filter(|g| !found.contains(g))
            .map(|g| format!("KNOWN lists a circle that changed or went: {}", g.join(" ↔ "))),
    );
    out
}

#[test]
fn no_two_modules_import_each_other_beyond_the_known_circles() {
    let files = source_files();
    let found = circles(&graph(&files));
    let p = unexpected(&found);
    assert!(p.is_empty(), "import circles (see KNOWN):\n{}", p.join("\n"));
}

#[test]
fn a_planted_circle_is_found() {
    let files = vec![
        ("service/a.rs".to_owned(), "use crate::service::b::x;".to_owned()),
        ("service/b.rs".to_owned(), "use super::a::y;".to_owned()),
        ("service/c.rs".to_owned(), "use crate::service::a::z;".to_owned()),
    ];
    let found = circles(&graph(&files));
    assert_eq!(found, vec![vec!["service::a".to_owned(), "service::b".to_owned()]]);
    assert!(unexpected(&found).iter().any(|p| p.starts_with("a circle not in KNOWN: service::a ↔ service::b")));
}
