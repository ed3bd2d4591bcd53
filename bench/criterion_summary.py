#!/usr/bin/env python3
"""Prints the latest criterion estimates as JSON: {"group/bench": {"mean_ns": .., "median_ns": ..}}.

Reads $CARGO_TARGET_DIR/criterion/**/new/estimates.json (default target dir: ./target), or the
criterion directory given as the first argument. Python 3 standard library only.
"""

import json
import os
import sys
from pathlib import Path


def criterion_dir() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    return Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"


def bench_name(root: Path, estimates: Path) -> str:
    """The benchmark id, from benchmark.json when present, else from the directory path."""
    meta = estimates.parent / "benchmark.json"
    try:
        with meta.open() as f:
            full_id = json.load(f).get("full_id")
        if full_id:
            return full_id
    except (OSError, ValueError):
        pass
    return estimates.parent.parent.relative_to(root).as_posix()


def main() -> int:
    root = criterion_dir()
    if not root.is_dir():
        print(f"no criterion results under {root}", file=sys.stderr)
        return 1
    out = {}
    for est in sorted(root.glob("**/new/estimates.json")):
        try:
            with est.open() as f:
                e = json.load(f)
            out[bench_name(root, est)] = {
                "mean_ns": e["mean"]["point_estimate"],
                "median_ns": e["median"]["point_estimate"],
            }
        except (OSError, ValueError, KeyError) as err:
            print(f"skipping {est}: {err}", file=sys.stderr)
    json.dump(dict(sorted(out.items())), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
