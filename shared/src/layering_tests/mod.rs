//! The layering rule, checked on this crate's own source on every `make test` (`make unit` runs
//! the library's tests): a module imports only from its own floor or a floor below, no adapter
//! imports another adapter, and a handler reaches adapters only through the composition root
//! ([`crate::app`]).
//!
//! The checker reads every file under `src/`, blanks comments, string and character literals
//! and `#[cfg(test)]` items (tests are composition too: they wire memory adapters under the
//! services they test), and resolves each `crate::…` and `super::…` path, `use` groups
//! included, to the module it names. Exported macros (`crate::fault!`) count as an import of the
//! module that defines them. A top-level module missing from [`FLOORS`] fails the check, so a
//! new module has to be placed.
//!
//! `super::` is resolved through inline modules (`mod audit { … }`) as well as files. A path in a
//! macro body other than `$crate::…` is read like any other path.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

/// The floors, lowest first: a module may import from its own floor and the floors below.
const FLOORS: &[(&str, u8)] = &[
    // pure: no I/O, no AWS types; its own crate (domain/), read here as `domain::…` (see
    // [`source_files`]), with `domain::mutation`, the `mutant!` switch the domain is tested with
    ("domain", 0),
    // commons every layer may read: time, settings, fault injection, metrics, the function list
    ("clock", 1),
    ("config", 1),
    ("faults", 1),
    ("telemetry", 1),
    ("registry", 1),
    // the traits the use cases need, and the context (ports + config + caches) they run in
    ("ports", 2),
    ("context", 3),
    ("service", 4),
    // the HTTP contract as types (it names service types)
    ("api", 5),
    ("http", 5),
    ("permissions", 5),
    // the ports' implementations
    ("adapters", 6),
    // the composition root: picks the adapters
    ("app", 7),
    ("handlers", 8),
    // process entry points
    ("lambda", 9),
    ("sam_local", 9),
    ("edge", 9),
];

/// Adapter modules every adapter may use: request metering, the outbound HTTP client and the
/// HTTP connections under both HTTP clients.
const ADAPTER_COMMONS: &[&str] = &["usage", "outbound", "https"];

/// Known exceptions: (importing file, imported module prefix, why). Every entry must still be
/// needed, or the check fails. These four files are being edited by other engineers as this
/// check lands; each entry names the one-line fix that removes it.
const ALLOWED: &[(&str, &str, &str)] = &[];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    target: String,
    why: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: imports crate::{}: {}", self.file, self.line, self.target, self.why)
    }
}

fn floor(top: &str) -> Option<u8> {
    FLOORS.iter().find(|(n, _)| *n == top).map(|(_, r)| *r)
}

pub(crate) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether an `r` at `i` can open a raw string (`r"…"`, `br"…"`), not end an identifier.
fn raw_start(s: &[u8], i: usize) -> bool {
    match i {
        0 => true,
        _ if !is_ident(s[i - 1]) => true,
        1 => s[0] == b'b',
        _ => s[i - 1] == b'b' && !is_ident(s[i - 2]),
    }
}

/// `src` with comments, string and character literals replaced by spaces (newlines kept, so
/// offsets and line numbers still match the file).
pub(crate) fn strip(src: &str) -> String {
    let s = src.as_bytes();
    let mut out = s.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to.min(s.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < s.len() {
        if s[i..].starts_with(b"//") {
            let end = s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if s[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if s[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if s[i] == b'r' && raw_start(s, i) && matches!(s.get(i + 1), Some(b'"' | b'#')) {
            // a raw string: r"…", r#"…"#, …
            let hashes = s[i + 1..].iter().take_while(|&&b| b == b'#').count();
            if s.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + 2 + hashes;
            let end = s[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(s.len(), |p| body + p);
            blank(&mut out, i, end + close.len());
            i = end + close.len();
        } else if s[i] == b'"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != b'"' {
                j += if s[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if s[i] == b'\'' {
            // a character literal, or a lifetime / label (kept)
            if s.get(i + 1) == Some(&b'\\') {
                let end = s[i + 2..].iter().position(|&b| b == b'\'').map_or(s.len(), |p| i + 2 + p);
                blank(&mut out, i, end + 1);
                i = end + 1;
            } else {
                let len = src[i + 1..].chars().next().map_or(0, char::len_utf8);
                if len > 0 && s.get(i + 1 + len) == Some(&b'\'') {
                    blank(&mut out, i, i + 2 + len);
                    i += 2 + len;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// End (exclusive) of the bracketed group opening at `open`.
pub(crate) fn matching(s: &[u8], open: usize, (o, c): (u8, u8)) -> usize {
    let mut depth = 0usize;
    for (j, &b) in s.iter().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        }
    }
    s.len()
}

/// `clean` (already stripped) with every `#[cfg(test)]` item blanked, and the names of the
/// modules declared `#[cfg(test)] mod name;` (their files are test code).
pub(crate) fn drop_test_items(clean: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let s = clean.as_bytes();
    let mut out = s.to_vec();
    let mut test_mods = Vec::new();
    let mut from = 0;
    while let Some(p) = clean[from..].find(ATTR) {
        let start = from + p;
        let mut j = start + ATTR.len();
        loop {
            while j < s.len() && s[j].is_ascii_whitespace() {
                j += 1;
            }
            if s[j..].starts_with(b"#[") {
                j = matching(s, j + 1, (b'[', b']'));
            } else {
                break;
            }
        }
        let item = j;
        let stop = s[item..].iter().position(|&b| b == b';' || b == b'{').map_or(s.len(), |q| item + q);
        let end = if s.get(stop) == Some(&b'{') { matching(s, stop, (b'{', b'}')) } else { stop + 1 };
        let head: Vec<&str> = clean[item..stop.min(s.len())].split_whitespace().collect();
        if s.get(stop) == Some(&b';') {
            if let Some(k) = head.iter().position(|w| *w == "mod") {
                if let Some(name) = head.get(k + 1) {
                    test_mods.push((*name).to_owned());
                }
            }
        }
        for b in &mut out[start..end.min(s.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = end.min(s.len());
    }
    (String::from_utf8(out).unwrap_or_default(), test_mods)
}

/// Parses a path (tree) at `pos` below `prefix`, pushing every full path it names.
fn path_tree(s: &[u8], mut pos: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        while pos < s.len() && s[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if s.get(pos) == Some(&b'{') {
            pos += 1;
            loop {
                while pos < s.len() && (s[pos].is_ascii_whitespace() || s[pos] == b',') {
                    pos += 1;
                }
                if pos >= s.len() || s[pos] == b'}' {
                    return pos + 1;
                }
                let before = pos;
                pos = path_tree(s, pos, prefix.clone(), out);
                if pos == before {
                    pos += 1;
                }
            }
        }
        let start = pos;
        while pos < s.len() && is_ident(s[pos]) {
            pos += 1;
        }
        if pos == start {
            out.push(prefix);
            return pos;
        }
        let ident = String::from_utf8_lossy(&s[start..pos]).into_owned();
        if ident != "self" {
            prefix.push(ident);
        }
        if s[pos..].starts_with(b"::") {
            pos += 2;
        } else {
            // `as` renames and trailing items end the path here
            if s.get(pos) == Some(&b'!') {
                prefix.push("!".to_owned());
            }
            out.push(prefix);
            return pos;
        }
    }
}

/// The inline modules (`mod name { … }`) of `clean`: (name, body start, body end).
fn inline_mods(clean: &str) -> Vec<(String, usize, usize)> {
    let s = clean.as_bytes();
    let mut mods = Vec::new();
    let mut from = 0;
    while let Some(p) = clean[from..].find("mod ") {
        let at = from + p;
        from = at + 4;
        if at > 0 && is_ident(s[at - 1]) {
            continue;
        }
        let name: String = clean[from..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let after = from + name.len();
        let open = after + s[after..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        if !name.is_empty() && s.get(open) == Some(&b'{') {
            mods.push((name, open, matching(s, open, (b'{', b'}'))));
        }
    }
    mods
}

/// Every crate path `clean` names, resolved from the module at `module`: (line, path).
fn crate_paths(clean: &str, file_module: &[String]) -> Vec<(usize, Vec<String>)> {
    let s = clean.as_bytes();
    let inline = inline_mods(clean);
    let mut found = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let boundary = i == 0 || !(is_ident(s[i - 1]) || s[i - 1] == b'$' || s[i - 1] == b':');
        let base = if !boundary {
            None
        } else if s[i..].starts_with(b"crate::") {
            Some((Vec::new(), i + 7))
        } else if s[i..].starts_with(b"super::") {
            let mut base = file_module.to_vec();
            base.extend(inline.iter().filter(|(_, a, b)| (*a..*b).contains(&i)).map(|(n, _, _)| n.clone()));
            let mut j = i;
            while s[j..].starts_with(b"super::") {
                base.pop();
                j += 7;
            }
            Some((base, j))
        } else {
            None
        };
        let Some((prefix, at)) = base else {
            i += 1;
            continue;
        };
        let line = 1 + s[..i].iter().filter(|&&b| b == b'\n').count();
        let mut paths = Vec::new();
        i = path_tree(s, at, prefix, &mut paths);
        found.extend(paths.into_iter().map(|p| (line, p)));
    }
    found
}

/// The module path of a file under `src/` (`adapters/dynamo/mod.rs` → `adapters::dynamo`).
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The rule broken by the file `rel` (module `module`) importing `target`, if any.
fn judge(module: &[String], target: &[String], macros: &BTreeMap<String, Vec<String>>) -> Option<String> {
    let mut target = target.to_vec();
    if target.len() == 2 && target[1] == "!" {
        match macros.get(&target[0]) {
            Some(m) => target = m.clone(),
            None => return Some(format!("`{}!` is not a macro exported by this crate", target[0])),
        }
    }
    let (Some(from), Some(to)) = (module.first(), target.first()) else { return None };
    let Some(from_floor) = floor(from) else {
        return Some(format!("module `{from}` is on no floor: add it to FLOORS"));
    };
    let Some(to_floor) = floor(to) else { return Some(format!("`{to}` is on no floor: add it to FLOORS")) };
    if to_floor > from_floor {
        return Some(format!("runs up a floor: `{from}` (floor {from_floor}) imports `{to}` (floor {to_floor})"));
    }
    if from == "adapters" && to == "adapters" {
        let (mine, theirs) = (module.get(1), target.get(1));
        if let (Some(mine), Some(theirs)) = (mine, theirs) {
            if mine != theirs && !ADAPTER_COMMONS.contains(&theirs.as_str()) {
                return Some(format!("adapter `{mine}` imports adapter `{theirs}`: move the shared part to a port"));
            }
        }
    }
    if from == "handlers" && to == "adapters" {
        return Some("a handler imports an adapter directly: go through the composition root (`app`)".to_owned());
    }
    None
}

/// The violations of one (non-test) file's source.
fn check_source(rel: &str, src: &str, macros: &BTreeMap<String, Vec<String>>) -> Vec<Violation> {
    let module = module_of(rel);
    let (clean, _) = drop_test_items(&strip(src));
    crate_paths(&clean, &module)
        .into_iter()
        .filter_map(|(line, target)| {
            let why = judge(&module, &target, macros)?;
            Some(Violation { file: rel.to_owned(), line, target: target.join("::"), why })
        })
        .collect()
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).unwrap_or_default()));
        }
    }
}

/// The exported macros of `files`: name → the module defining it.
fn exported_macros(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut macros = BTreeMap::new();
    for (rel, src) in files {
        let clean = strip(src);
        let mut rest = clean.as_str();
        while let Some(p) = rest.find("#[macro_export]") {
            rest = &rest[p..];
            let name = rest
                .split_once("macro_rules!")
                .map(|(_, after)| after.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_'))
                .map(|c| c.collect::<String>());
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                macros.insert(name, module_of(rel));
            }
            rest = &rest["#[macro_export]".len()..];
        }
    }
    macros
}

/// Every violation under `root` not covered by [`ALLOWED`], and every unused allowance.
fn check_tree(files: &[(String, String)]) -> (Vec<Violation>, Vec<String>) {
    let macros = exported_macros(files);
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for (rel, src) in files {
        let (_, mods) = drop_test_items(&strip(src));
        for m in mods {
            let mut path = module_of(rel);
            path.push(m);
            test_only.insert(path);
        }
    }
    let mut used = vec![false; ALLOWED.len()];
    let mut violations = Vec::new();
    for (rel, src) in files {
        let module = module_of(rel);
        if test_only.iter().any(|t| module.starts_with(t)) || module.is_empty() {
            continue;
        }
        for v in check_source(rel, src, &macros) {
            let allowed = ALLOWED.iter().position(|(f, prefix, _)| *f == v.file && v.target.starts_with(prefix));
            match allowed {
                Some(k) => used[k] = true,
                None => violations.push(v),
            }
        }
    }
    let unused = ALLOWED
        .iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|((f, p, why), _)| format!("{f} → crate::{p} ({why})"))
        .collect();
    (violations, unused)
}

fn src_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The pure domain's crate (`domain/src`), re-exported here as `crate::domain`.
fn domain_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../domain/src")
}

/// The crate of the commons, the ports and the context (`core/src`), re-exported here under the
/// modules' old names (`crate::ports`, `crate::context`, …).
fn core_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src")
}

/// The crate of the AWS adapters and the HTTP peers (`aws/src`), re-exported here under
/// `crate::adapters`.
fn aws_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../aws/src")
}

/// Every source file the checks read, as one tree of modules as before the split: this crate's
/// `src/`; the core and AWS crates' `src/` as they are (their modules are `clock`, `ports`,
/// `adapters::dynamo`, … here too; their `lib.rs` only declares them); and the domain crate's
/// `src/` as if it were still the module `domain` (`domain/order.rs`, its `crate::x` read as
/// `crate::domain::x`). So the floors, the circles and the size rules still see every module. The
/// compiler now holds the domain's, the core's and the AWS adapters' floors too (none of those
/// crates depends on this one).
pub(crate) fn source_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&src_root(), &src_root(), &mut files);
    for root in [core_root(), aws_root()] {
        let mut more = Vec::new();
        rust_files(&root, &root, &mut more);
        files.extend(more.into_iter().filter(|(rel, _)| rel != "lib.rs"));
    }
    let mut domain = Vec::new();
    rust_files(&domain_root(), &domain_root(), &mut domain);
    files.extend(
        domain.into_iter().map(|(rel, src)| (format!("domain/{rel}"), src.replace("crate::", "crate::domain::"))),
    );
    files
}

#[test]
fn no_module_imports_from_a_floor_above_it() {
    let (violations, unused) = check_tree(&source_files());
    let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(listed.is_empty(), "layering violations:\n{}", listed.join("\n"));
    assert!(unused.is_empty(), "allowances no longer needed (remove them from ALLOWED):\n{}", unused.join("\n"));
}

#[test]
fn the_tree_has_files_on_every_floor_it_names() {
    // guards against a checker that silently reads nothing
    let files = source_files();
    let tops: BTreeSet<String> = files.iter().filter_map(|(rel, _)| module_of(rel).first().cloned()).collect();
    for (name, _) in FLOORS {
        assert!(tops.contains(*name), "FLOORS names `{name}`, which has no file");
    }
    assert!(files.len() > 100, "only {} files read", files.len());
    for module in ["domain/order.rs", "ports.rs", "adapters/dynamo/mod.rs", "adapters/memory/mod.rs"] {
        assert!(files.iter().any(|(rel, _)| rel == module), "{module} not read: a crate of the split is missing");
    }
}

mod checker_tests;
mod circles_tests;
mod size_tests;
