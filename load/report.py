"""Writes the load run's report (bench/LOAD.md) from locust's CSV stats and the scenario's
counts. Usage: report.py STATS_PREFIX COUNTS_JSON OUT_MD "what was run" """

import csv
import json
import sys
from datetime import datetime, timezone

prefix, counts_path, out, what = sys.argv[1:5]
with open(f"{prefix}_stats.csv") as f:
    rows = list(csv.DictReader(f))
with open(counts_path) as f:
    counts = json.load(f)
failures = []
try:
    with open(f"{prefix}_failures.csv") as f:
        failures = list(csv.DictReader(f))
except FileNotFoundError:
    pass


def num(r, k):
    v = r.get(k, "")
    try:
        return float(v)
    except ValueError:
        return 0.0


lines = [
    "# Load run (`make load`)",
    "",
    f"{what}. Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by load/report.py from locust's",
    "statistics (latencies in ms, measured by the load generator on the same machine).",
    "",
    "| request | count | failures | req/s | p50 | p95 | p99 | max |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
]
for r in rows:
    name = "**all**" if r["Name"] == "Aggregated" else f'`{r["Type"]} {r["Name"]}`'.replace("`POST POST", "`POST").replace("`GET GET", "`GET")
    lines.append(
        f'| {name} | {int(num(r, "Request Count"))} | {int(num(r, "Failure Count"))} | {num(r, "Requests/s"):.1f} '
        f'| {num(r, "50%"):.0f} | {num(r, "95%"):.0f} | {num(r, "99%"):.0f} | {num(r, "Max Response Time"):.0f} |'
    )
checkouts = counts.get("created", 0) + counts.get("replayed", 0)
lines += [
    "",
    f'Checkout attempts {counts.get("checkouts", 0)}: orders created {counts.get("created", 0)} '
    f'(replays answered with the same order: {counts.get("replayed", 0)}), paid {counts.get("paid", 0)}.',
    "",
    "| refusal (409/422/429 `code`) | count |",
    "|---|---:|",
]
for k, v in sorted(counts.get("refused", {}).items(), key=lambda kv: -kv[1]):
    lines.append(f"| `{k}` | {v} |")
if not counts.get("refused"):
    lines.append("| (none) | 0 |")
for k, v in sorted(counts.get("pay_refused", {}).items()):
    lines.append(f"| payment callback `{k}` | {v} |")
lines += ["", "| error | count |", "|---|---:|"]
errs = dict(counts.get("errors", {}))
for f in failures:
    errs.setdefault(f'{f.get("Method", "")} {f.get("Name", "")}: {f.get("Error", "")}', int(num(f, "Occurrences")))
for k, v in sorted(errs.items(), key=lambda kv: -kv[1]):
    lines.append(f"| {k} | {v} |")
if not errs:
    lines.append("| (none) | 0 |")
lines.append("")
with open(out, "w") as f:
    f.write("\n".join(lines))
print("\n".join(lines))
