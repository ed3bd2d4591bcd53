#!/usr/bin/env python3
"""Lines per layer of the library (`shared/src`, and the crates split from it: `domain/src`,
`core/src`, `aws/src`), at a git revision or in the work tree.

  python3 scripts/layer-lines.py            # the work tree
  python3 scripts/layer-lines.py 8f748e9    # a commit

A layer is a top-level module of `shared/src` (a `name.rs` file and a `name/` directory count
together), grouped as the layering check's floors are (shared/src/layering_tests/mod.rs); every
file of `domain/src` is the domain's (it was `shared/src/domain` until 2026-12-07); `core/src` and
`aws/src` hold the modules they held in `shared/src` under the same paths (`aws/src/adapters/…`).
Lines are all lines of the files; `tests` counts files that hold only tests (`*tests*.rs`,
`tests/` directories), so the rest is the code and its inline unit tests. Also prints the
largest file and how many files are over 300 and over 600 lines.
"""

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOTS = ("shared/src", "domain/src", "core/src", "aws/src")

GROUPS = [
    ("domain", ["domain", "mutation"]),
    ("commons", ["clock", "config", "faults", "telemetry", "registry"]),
    ("ports", ["ports"]),
    ("context", ["context"]),
    ("service", ["service"]),
    ("api/http", ["api", "http", "permissions"]),
    ("adapters", ["adapters"]),
    ("app", ["app"]),
    ("handlers", ["handlers"]),
    ("entry points", ["lambda", "sam_local", "edge"]),
]


def files(rev):
    root = Path(__file__).resolve().parent.parent
    if rev:
        names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, *ROOTS], cwd=root,
                               check=True, capture_output=True, text=True).stdout.split()
        for n in names:
            if n.endswith(".rs"):
                text = subprocess.run(["git", "show", f"{rev}:{n}"], cwd=root, check=True,
                                      capture_output=True, text=True).stdout
                yield n, text
    else:
        for top in ROOTS:
            for p in sorted((root / top).rglob("*.rs")):
                yield str(p.relative_to(root)), p.read_text()


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    code, tests = defaultdict(int), defaultdict(int)
    sizes = []
    for name, text in files(rev):
        top_dir, rel = name.split("/src/", 1)
        if rel == "lib.rs" and top_dir in ("core", "aws"):
            continue  # a split crate's root only declares its modules
        if top_dir == "domain":
            rel = "domain/" + rel
        top = rel.split("/")[0].removesuffix(".rs")
        group = next((g for g, tops in GROUPS if top in tops), "other (" + top + ")")
        n = text.count("\n")
        sizes.append((n, name))
        if "tests" in Path(rel).name or "/tests/" in rel or rel.startswith("layering_tests"):
            tests[group] += n
        else:
            code[group] += n
    print(f"| layer | lines | test-only files |")
    print("|---|---|---|")
    order = [g for g, _ in GROUPS] + sorted(set(code) | set(tests) - {g for g, _ in GROUPS})
    for g in dict.fromkeys(order):
        if code[g] or tests[g]:
            print(f"| {g} | {code[g]:,} | {tests[g]:,} |")
    print(f"| **all** | {sum(code.values()):,} | {sum(tests.values()):,} |")
    sizes.sort(reverse=True)
    print(f"\nlargest file: {sizes[0][1]} ({sizes[0][0]:,} lines); "
          f"files over 300 lines: {sum(1 for n, _ in sizes if n > 300)}; "
          f"over 600: {sum(1 for n, _ in sizes if n > 600)}")


if __name__ == "__main__":
    main()
