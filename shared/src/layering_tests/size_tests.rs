//! The size rule (README, "House rules"): no source file under `src/` is over
//! [`MAX_LINES`] lines; a file that grows past it is split along its seams, not let grow.

use super::{rust_files, src_root};

/// The most lines a source file under `src/` may have.
const MAX_LINES: usize = 600;

/// Every file of `files` (path relative to `src/`, text) over `max` lines, with its count.
fn over(files: &[(String, String)], max: usize) -> Vec<String> {
    files
        .iter()
        .map(|(rel, src)| (rel, src.lines().count()))
        .filter(|&(_, lines)| lines > max)
        .map(|(rel, lines)| format!("{rel}: {lines} lines"))
        .collect()
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let mut files = Vec::new();
    rust_files(&src_root(), &src_root(), &mut files);
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
