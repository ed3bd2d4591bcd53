//! Usage spans are taken before the request they measure. A span (`usage::call`, `usage::call_of`, `charge`) marks
//! a request's start when created and its end when dropped; one taken after the request's
//! `.await` measures nothing, and the round-trip counts of the benchmark go wrong silently (the
//! bug fixed at five sites of the stock adapter). This reads every metered adapter's source and
//! fails when
//!
//! - a span statement has no request (`.send()`, or a paginator's `pages.next().await`) after it
//!   in its block: it was taken after the
//!   request it was meant for, or
//! - a request has no span statement before it in its own or an enclosing block.
//!
//! Comments, strings and `#[cfg(test)]` items are ignored (the stripping of the layering check).

use crate::layering_tests::{drop_test_items, is_ident, matching, strip};
use std::path::Path;

/// Requests deliberately not metered: (file, enclosing fn, why). (The stock table's dump lives
/// in `dynamo/stock/audit.rs`, which meters nothing, so it is not read.)
const UNMETERED: &[(&str, &str, &str)] =
    &[("adapters/dynamo/orders.rs", "dump", "a whole-table Scan for tests and the demo, never on a request path")];

/// Offsets of every occurrence of `pat` in `clean` (one starting with a letter: as a whole word).
fn tokens(clean: &str, pat: &str) -> Vec<usize> {
    let s = clean.as_bytes();
    let word = pat.bytes().next().is_some_and(is_ident);
    clean.match_indices(pat).map(|(i, _)| i).filter(|&i| !word || i == 0 || !is_ident(s[i - 1])).collect()
}

/// Offsets of the span statements: `let _x = …charge(` or `let _x = …usage::call(`.
fn span_lets(clean: &str) -> Vec<usize> {
    tokens(clean, "let ")
        .into_iter()
        .filter(|&at| {
            let rest = clean[at + 4..].trim_start();
            let Some((binding, value)) = rest.split_once('=') else { return false };
            let binding = binding.trim();
            if !binding.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return false;
            }
            let value = value.trim_start();
            let path: String = value.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            value[path.len()..].starts_with('(')
                && (path == "charge"
                    || path.ends_with("::charge")
                    || path.ends_with("usage::call")
                    || path.ends_with("usage::call_of"))
        })
        .collect()
}

/// Every `{ … }` of `clean`: (open, end exclusive).
fn blocks(clean: &str) -> Vec<(usize, usize)> {
    let s = clean.as_bytes();
    (0..s.len()).filter(|&i| s[i] == b'{').map(|i| (i, matching(s, i, (b'{', b'}')))).collect()
}

fn innermost(blocks: &[(usize, usize)], at: usize) -> (usize, usize) {
    blocks.iter().copied().filter(|(a, b)| *a < at && at < *b).min_by_key(|(a, b)| b - a).unwrap_or((0, usize::MAX))
}

/// The name of the innermost `fn` whose body holds `at`.
fn enclosing_fn(clean: &str, at: usize) -> Option<String> {
    let s = clean.as_bytes();
    tokens(clean, "fn ")
        .into_iter()
        .filter_map(|f| {
            let name: String =
                clean[f + 3..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let open = f + s[f..].iter().position(|&b| b == b'{' || b == b';')?;
            (s[open] == b'{').then(|| (name, open, matching(s, open, (b'{', b'}'))))
        })
        .filter(|(_, a, b)| *a < at && at < *b)
        .min_by_key(|(_, a, b)| b - a)
        .map(|(name, _, _)| name)
}

/// Offsets of the requests: every `.send()` but a paginator's (building the stream sends
/// nothing), and every page a paginator fetches (`pages.next().await`: the adapters name an SDK
/// paginator's stream `pages`).
fn requests(clean: &str) -> Vec<usize> {
    let mut at: Vec<usize> = tokens(clean, ".send()")
        .into_iter()
        .filter(|&i| !clean[..i].trim_end().ends_with(".into_paginator()"))
        .collect();
    at.extend(tokens(clean, "pages.next().await"));
    at.sort_unstable();
    at
}

/// The span problems of one file: (line, what).
fn check(rel: &str, src: &str) -> Vec<(usize, String)> {
    let (clean, _) = drop_test_items(&strip(src));
    let line = |at: usize| 1 + clean[..at].matches('\n').count();
    let blocks = blocks(&clean);
    let spans = span_lets(&clean);
    let sends = requests(&clean);
    let mut out = Vec::new();
    for &sp in &spans {
        let (_, end) = innermost(&blocks, sp);
        if !sends.iter().any(|&x| sp < x && x < end) {
            out.push((
                line(sp),
                "a usage span with no request after it in its block (taken after the `.await`?)".to_owned(),
            ));
        }
    }
    for &x in &sends {
        let covered = spans.iter().any(|&sp| {
            let (a, b) = innermost(&blocks, sp);
            sp < x && a < x && x < b
        });
        let exempt =
            enclosing_fn(&clean, x).is_some_and(|f| UNMETERED.iter().any(|(file, n, _)| *file == rel && *n == f));
        if !covered && !exempt {
            out.push((line(x), "a request with no usage span taken before it".to_owned()));
        }
    }
    out
}

fn metered_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for p in entries.filter_map(Result::ok).map(|e| e.path()) {
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).unwrap_or_default()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root.join("adapters"), &root, &mut files);
    files.retain(|(_, src)| {
        let clean = strip(src);
        clean.contains("usage::") || clean.contains("charge(")
    });
    files.sort();
    files
}

#[test]
fn every_metered_request_is_spanned_from_before_its_await() {
    let files = metered_files();
    let names: Vec<&str> = files.iter().map(|(rel, _)| rel.as_str()).collect();
    for must in [
        "adapters/dynamo/stock/locks.rs",
        "adapters/dynamo/stock/codes.rs",
        "adapters/dynamo/stock/requests.rs",
        "adapters/dynamo/orders.rs",
    ] {
        assert!(names.contains(&must), "{must} not read: {names:?}");
    }
    let problems: Vec<String> = files
        .iter()
        .flat_map(|(rel, src)| check(rel, src).into_iter().map(move |(l, what)| format!("{rel}:{l}: {what}")))
        .collect();
    assert!(problems.is_empty(), "usage spans:\n{}", problems.join("\n"));
}

const BEFORE_THE_FIX: &str = r#"
    async fn mark_oversold(&self, r: &Reservation) -> anyhow::Result<bool> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .send()
            .await;
        let _span = charge("dynamodb:UpdateItem", 0.0, 1.0);
        match out {
            Ok(_) => Ok(true),
            Err(e) => Err(anyhow::Error::new(e).context("mark oversold")),
        }
    }
"#;

#[test]
fn the_span_after_the_await_is_reported_twice() {
    let found = check("adapters/dynamo/stock.rs", BEFORE_THE_FIX);
    assert_eq!(found.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![9, 7], "{found:?}");
}

#[test]
fn the_fixed_order_and_paging_loops_pass() {
    let fixed = BEFORE_THE_FIX.replace("        let _span = charge(\"dynamodb:UpdateItem\", 0.0, 1.0);\n", "").replace(
        "        let out = self\n",
        "        let _span = charge(\"dynamodb:UpdateItem\", 0.0, 1.0);\n        let out = self\n",
    );
    assert!(check("adapters/dynamo/stock.rs", &fixed).is_empty(), "{fixed}");
    let paging = r#"
        async fn keys(&self) -> anyhow::Result<()> {
            let mut start = None;
            loop {
                let _span = super::super::usage::call("dynamodb:Query");
                let r = self.client.query().set_exclusive_start_key(start).send().await?;
                match r.last_evaluated_key() { Some(k) => start = Some(k.clone()), None => break }
            }
            Ok(())
        }
    "#;
    assert!(check("adapters/dynamo/x.rs", paging).is_empty());
}

#[test]
fn a_paginator_is_metered_per_page_and_a_span_after_the_page_is_reported() {
    let good = r#"
        async fn keys(&self) -> anyhow::Result<()> {
            let mut pages = self.client.query().into_paginator().send();
            while let Some(page) = {
                let _span = usage::call("dynamodb:Query");
                pages.next().await
            } {
                page?;
            }
            Ok(())
        }
    "#;
    assert!(check("adapters/dynamo/x.rs", good).is_empty(), "{:?}", check("adapters/dynamo/x.rs", good));
    let late = good.replace(
        "let _span = usage::call(\"dynamodb:Query\");\n                pages.next().await",
        "let p = pages.next().await;\n                let _span = usage::call(\"dynamodb:Query\");\n                p",
    );
    assert_ne!(late, good);
    let found: Vec<String> = check("adapters/dynamo/x.rs", &late).into_iter().map(|(_, w)| w).collect();
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn a_span_between_two_requests_covers_only_the_second() {
    let src = r#"
        async fn two(&self) -> anyhow::Result<()> {
            let a = self.client.get_item().send().await?;
            let _span = usage::call("dynamodb:PutItem");
            self.client.put_item().send().await?;
            Ok(())
        }
    "#;
    let found = check("adapters/x.rs", src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("no usage span taken before it"));
}

#[test]
fn only_the_listed_dumps_go_unmetered() {
    let src =
        "async fn dump(c: &Client) { c.scan().send().await; }\nasync fn other(c: &Client) { c.scan().send().await; }";
    assert_eq!(check("adapters/dynamo/orders.rs", src).len(), 1);
    assert_eq!(check("adapters/dynamo/journal.rs", src).len(), 2);
}

#[test]
fn a_mutated_copy_of_the_real_adapter_fails() {
    // the five-site bug put back: the span of a conditional update moved after its `.await`
    const SPAN: &str = "        let _span = charge(\"dynamodb:UpdateItem\", 0.0, 1.0);\n";
    let files = metered_files();
    let (rel, src) = files
        .iter()
        .find(|(_, src)| src.contains(&format!("{SPAN}        let out = self")))
        .expect("a conditional UpdateItem with its span first");
    assert!(check(rel, src).is_empty());
    let at = src.find(&format!("{SPAN}        let out = self")).unwrap_or_default();
    let (head, tail) = src.split_at(at);
    let tail = tail.replacen(SPAN, "", 1).replacen("            .await;\n", &format!("            .await;\n{SPAN}"), 1);
    let found = check(rel, &format!("{head}{tail}"));
    assert_eq!(found.len(), 2, "{rel}: {found:?}");
}
