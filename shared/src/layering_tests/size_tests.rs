//! The size rules (README, "House rules"):
//! - no source file under `src/` is over [`MAX_LINES`] lines; a file that grows past it is split
//!   along its seams, not let grow;
//! - no function outside test code is over [`MAX_FN_LINES`] lines, from its `fn` to its closing
//!   brace; a longer one is split into named steps. [`LONG_ALLOWED`] names the few that wait.

use super::{drop_test_items, is_ident, matching, module_of, source_files, strip};
use std::collections::BTreeSet;

/// The most lines a source file under `src/` may have.
const MAX_LINES: usize = 600;

/// The most lines a non-test function under `src/` may have.
const MAX_FN_LINES: usize = 80;

/// Functions allowed over [`MAX_FN_LINES`] for now: (file under `src/`, function name). Every
/// entry must still be needed, or the check fails.
const LONG_ALLOWED: &[(&str, &str)] = &[];

/// Every file of `files` (path relative to `src/`, text) over `max` lines, with its count.
fn over(files: &[(String, String)], max: usize) -> Vec<String> {
    files
        .iter()
        .map(|(rel, src)| (rel, src.lines().count()))
        .filter(|&(_, lines)| lines > max)
        .map(|(rel, lines)| format!("{rel}: {lines} lines"))
        .collect()
}

/// A function over the limit: its name, the line its `fn` is on, and its length in lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LongFn {
    name: String,
    line: usize,
    lines: usize,
}

/// Where the body of the function whose name ends at `from` opens: the first `{` outside
/// parentheses and brackets (`[u8; 4]` holds a `;`), or `None` for a declaration without one.
fn body_start(s: &[u8], mut from: usize) -> Option<usize> {
    while let Some(&b) = s.get(from) {
        match b {
            b'(' => from = matching(s, from, (b'(', b')')),
            b'[' => from = matching(s, from, (b'[', b']')),
            b'{' => return Some(from),
            b';' => return None,
            _ => from += 1,
        }
    }
    None
}

/// Every function of `clean` (comments, literals and test items already blanked) over `max`
/// lines. Nested functions are measured on their own as well.
fn long_fns(clean: &str, max: usize) -> Vec<LongFn> {
    let s = clean.as_bytes();
    let line_of = |pos: usize| s[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(p) = clean[from..].find("fn") {
        let at = from + p;
        from = at + 2;
        let keyword = (at == 0 || !is_ident(s[at - 1])) && s.get(at + 2).is_some_and(|b| b.is_ascii_whitespace());
        if !keyword {
            continue;
        }
        let name_at = at + 2 + s[at + 2..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        let name_end = name_at + s[name_at..].iter().take_while(|&&b| is_ident(b)).count();
        // `fn(u8)` is a pointer type; `fn $name` a macro's template
        let Some(open) = body_start(s, name_end).filter(|_| name_end > name_at) else { continue };
        let close = matching(s, open, (b'{', b'}'));
        let (line, last) = (line_of(at), line_of(close.saturating_sub(1)));
        if last - line + 1 > max {
            found.push(LongFn { name: clean[name_at..name_end].to_owned(), line, lines: last - line + 1 });
        }
    }
    found
}

/// The modules that are test code: each `#[cfg(test)] mod name;` of a file, under its module.
fn test_modules(files: &[(String, String)]) -> BTreeSet<Vec<String>> {
    let mut test_only = BTreeSet::new();
    for (rel, src) in files {
        for m in drop_test_items(&strip(src)).1 {
            let mut path = module_of(rel);
            path.push(m);
            test_only.insert(path);
        }
    }
    test_only
}

/// Every non-test function of `files` over `max` lines: (file, function).
fn long_functions(files: &[(String, String)], max: usize) -> Vec<(String, LongFn)> {
    let test_only = test_modules(files);
    files
        .iter()
        .filter(|(rel, _)| !test_only.iter().any(|t| module_of(rel).starts_with(t)))
        .flat_map(|(rel, src)| {
            let (clean, _) = drop_test_items(&strip(src));
            long_fns(&clean, max).into_iter().map(move |f| (rel.clone(), f))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let files = source_files();
    // guards against a walk that silently reads nothing
    assert!(files.len() > 100, "only {} files read", files.len());
    let big = over(&files, MAX_LINES);
    assert!(big.is_empty(), "files over {MAX_LINES} lines (split them along their seams):\n{}", big.join("\n"));
}

#[test]
fn the_size_rule_names_every_file_over_the_limit() {
    let files: Vec<(String, String)> = [("a.rs", 601), ("b.rs", 600), ("c/d.rs", 700), ("e.rs", 0)]
        .into_iter()
        .map(|(rel, n)| (rel.to_owned(), "x\n".repeat(n)))
        .collect();
    assert_eq!(over(&files, 600), ["a.rs: 601 lines", "c/d.rs: 700 lines"]);
}

#[test]
fn no_function_outside_tests_is_over_the_line_limit() {
    let files = source_files();
    assert!(files.len() > 100, "only {} files read", files.len());
    let mut used = vec![false; LONG_ALLOWED.len()];
    let mut long = Vec::new();
    for (rel, f) in long_functions(&files, MAX_FN_LINES) {
        match LONG_ALLOWED.iter().position(|&(file, name)| file == rel && name == f.name) {
            Some(k) => used[k] = true,
            None => long.push(format!("{rel}:{} {}: {} lines", f.line, f.name, f.lines)),
        }
    }
    let unused: Vec<String> =
        LONG_ALLOWED.iter().zip(used).filter(|(_, u)| !u).map(|((file, name), _)| format!("{file} {name}")).collect();
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines (split them into named steps):\n{}", long.join("\n"));
    assert!(unused.is_empty(), "no longer over the limit (remove them from LONG_ALLOWED):\n{}", unused.join("\n"));
}

/// A function `name` of exactly `n` lines, indented by `indent`.
fn planted(name: &str, n: usize, indent: &str) -> String {
    let body = format!("{indent}    let s = \"{{\"; // }}}}\n").repeat(n - 2);
    format!("{indent}pub(crate) async fn {name}(x: [u8; 4], f: fn(u8) -> u8) -> u8 {{\n{body}{indent}}}\n")
}

#[test]
fn the_function_rule_names_an_81_line_function_and_skips_tests() {
    let main = [
        planted("long", 81, ""),
        planted("exact", 80, ""),
        "trait T {\n    fn declared(&self);\n}\n".to_owned(),
        format!("impl T for u8 {{\n{}}}\n", planted("method", 90, "    ")),
        format!("#[cfg(test)]\nmod tests {{\n{}}}\n", planted("in_test_module", 100, "    ")),
        "#[cfg(test)]\nmod more;\n".to_owned(),
    ]
    .concat();
    let files: Vec<(String, String)> = vec![
        ("a/mod.rs".into(), main),
        ("a/more.rs".into(), planted("in_test_file", 100, "")),
        ("b.rs".into(), planted("just_over", 81, "")),
    ];
    let named: Vec<(String, String, usize, usize)> =
        long_functions(&files, 80).into_iter().map(|(rel, f)| (rel, f.name, f.line, f.lines)).collect();
    assert_eq!(
        named,
        [
            ("a/mod.rs".into(), "long".into(), 1, 81),
            ("a/mod.rs".into(), "method".into(), 166, 90),
            ("b.rs".into(), "just_over".into(), 1, 81),
        ]
    );
}
