#!/usr/bin/env python3
"""Cold-start timing of the packaged Lambda binaries against a stub Lambda Runtime API.

For every ``<lambda-dir>/<name>/bootstrap`` (``scripts/package.sh`` builds them), N times:
spawn the binary the way Lambda would (``AWS_LAMBDA_RUNTIME_API`` pointing at a stub served
here on 127.0.0.1), hand it one event on its first ``/invocation/next`` poll, and time

  * exec -> first ``GET /2018-06-01/runtime/invocation/next`` (process start, tokio, logging,
    config, ``aws_config::load_defaults``, SDK clients: the init phase),
  * exec -> first ``POST .../response`` or ``.../error`` (init + one invocation),

then kill the process. An error post (or an HTTP 5xx response body) counts as the first
response too: AWS calls go to ``AWS_ENDPOINT_URL=http://127.0.0.1:9`` where nothing listens,
so handlers that reach DynamoDB/SQS/EventBridge fail fast. ``AWS_MAX_ATTEMPTS=1`` is set so
the SDK's retry back-off (random sleeps of up to seconds) stays out of the measurement; pass
``--sdk-retries`` to keep the SDK's default retry policy.

Measured on this machine's native (x86_64) release build, not on Lambda's Firecracker
micro-VMs / arm64: treat the numbers as relative (function vs function, change vs change),
not as the init duration Lambda will bill.

Usage:
  python3 scripts/coldstart.py [--runs 20] [--json out.json] [--markdown out.md]
                               [--only stock-api,reconcile] [--lambda-dir target/lambda]
Only the standard library is used; any python3 >= 3.8 (e.g. .venv/bin/python) runs it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.server
import json
import math
import os
import platform
import shutil
import signal
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API = "/2018-06-01/runtime"

NOTE = (
    "Measured on this machine's x86_64 release build (stub Runtime API on 127.0.0.1, process "
    "spawned directly), not on Lambda's Firecracker micro-VMs or arm64: compare functions and "
    "changes with it, don't read it as Lambda's billed Init Duration."
)

# Which events/<fixture>.json each function gets (default: events/<name>.json).
DEFAULT_FIXTURE = {
    "orders-api": "orders-api-get",
    "queue-api": "queue-api-me",
    "stock-api": "stock-api-put",
    "stock-read": "stock-read-get",
}

# A route each HTTP function handles (shared/src/handlers/*.rs ROUTES), for the fallback event.
FALLBACK_ROUTE = {
    "create-order": ("POST", "/orders", "/orders", {}, '{"items":[{"sku":"TSHIRT-RED-M","quantity":1}]}'),
    "orders-api": ("GET", "/orders/{order_id}", "/orders/o1", {"order_id": "o1"}, None),
    "payment-callback": ("POST", "/payments/callback", "/payments/callback", {}, "{}"),
    "reservations": ("POST", "/reservations", "/reservations", {}, "{}"),
    "stock-api": ("GET", "/admin/skus/{sku}/codes", "/admin/skus/TSHIRT-RED-M/codes", {"sku": "TSHIRT-RED-M"}, None),
    "stock-read": ("GET", "/skus/{sku}", "/skus/TSHIRT-RED-M", {"sku": "TSHIRT-RED-M"}, None),
}
SQS_FUNCTIONS = {"stock-events", "payment-timeout", "reservation-check"}
STREAM_FUNCTIONS = {"publish-events"}
SCHEDULE_FUNCTIONS = {"reconcile"}


def apigw_v2_event(method: str, route: str, path: str, params: dict, body: str | None) -> dict:
    ev = {
        "version": "2.0",
        "routeKey": f"{method} {route}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"accept": "application/json", "content-type": "application/json"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "coldstart",
            "domainName": "coldstart.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "coldstart",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "coldstart"},
            "requestId": "coldstart",
            "routeKey": f"{method} {route}",
            "stage": "$default",
            "time": "01/Jan/2025:00:00:00 +0000",
            "timeEpoch": 1735689600000,
        },
        "isBase64Encoded": False,
    }
    if params:
        ev["pathParameters"] = params
    if body is not None:
        ev["body"] = body
    return ev


def fallback_event(name: str) -> dict:
    if name in FALLBACK_ROUTE:
        return apigw_v2_event(*FALLBACK_ROUTE[name])
    if name in SQS_FUNCTIONS or name in STREAM_FUNCTIONS:
        return {"Records": []}
    if name in SCHEDULE_FUNCTIONS:
        return {}
    raise SystemExit(f"coldstart: no fallback event for unknown function {name!r}; pass --event {name}=FILE")


def load_event(name: str, events_dir: Path, overrides: dict[str, Path]) -> tuple[bytes, str]:
    """The event body for a function and where it came from."""
    if name in overrides:
        p = overrides[name]
        return p.read_bytes(), str(p)
    p = events_dir / f"{DEFAULT_FIXTURE.get(name, name)}.json"
    if p.is_file():
        raw = p.read_bytes()
        json.loads(raw)  # fail early on a broken fixture
        try:
            return raw, str(p.relative_to(ROOT))
        except ValueError:
            return raw, str(p)
    return json.dumps(fallback_event(name)).encode(), "built-in minimal event"


# --- the stub Runtime API ------------------------------------------------------------------


class Run:
    """State of one spawned process: one event, first poll / first post timestamps."""

    def __init__(self, name: str, event: bytes):
        self.name = name
        self.event = event
        self.request_id = str(uuid.uuid4())
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.t_next: int | None = None
        self.t_post: int | None = None
        self.kind: str | None = None  # "response" | "error" | "init-error"
        self.body: bytes = b""
        self.error_type: str | None = None
        self.delivered = False


class Stub(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, run: "Run", stray: list[str]):
        super().__init__(("127.0.0.1", 0), Handler)
        # One server (and port) per spawned process: a request still buffered from the
        # previous, killed process can never be taken for this one's first poll.
        self.current: Run | None = run
        self.stray = stray

    def handle_error(self, request, client_address):
        pass  # the process is SIGKILLed mid long-poll: broken pipes are expected


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Stub

    def log_message(self, *args):  # quiet
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _reply(self, code: int, body: bytes = b"", headers: dict | None = None):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self):
        now = time.perf_counter_ns()
        run = self.server.current
        if self.path != f"{API}/invocation/next":
            self.server.stray.append(f"GET {self.path}")
            return self._reply(404, b'{"errorMessage":"not found"}')
        if run is None:  # a later poll, after the run ended (the process is being killed)
            return self._reply(500, b'{"errorMessage":"coldstart: run over"}')
        with run.lock:
            first = not run.delivered
            if first:
                run.delivered = True
                run.t_next = now
        if not first:
            # Later polls long-poll like the real API; the process is killed before this ends.
            run.done.wait(60)
            return self._reply(500, b'{"errorMessage":"coldstart: run over"}')
        deadline = int(time.time() * 1000) + 30_000
        self._reply(
            200,
            run.event,
            {
                "Lambda-Runtime-Aws-Request-Id": run.request_id,
                "Lambda-Runtime-Deadline-Ms": str(deadline),
                "Lambda-Runtime-Invoked-Function-Arn": f"arn:aws:lambda:us-east-1:123456789012:function:{run.name}",
                "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
            },
        )

    def do_POST(self):
        now = time.perf_counter_ns()
        body = self._read_body()
        run = self.server.current
        kind = None
        if run is not None:
            if self.path == f"{API}/invocation/{run.request_id}/response":
                kind = "response"
            elif self.path == f"{API}/invocation/{run.request_id}/error":
                kind = "error"
            elif self.path == f"{API}/init/error":
                kind = "init-error"
        if kind is None:
            self.server.stray.append(f"POST {self.path}")
            return self._reply(404, b'{"errorMessage":"not found"}')
        with run.lock:
            if run.kind is None:
                run.t_post, run.kind, run.body = now, kind, body
                run.error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
        self._reply(202, b'{"status":"OK"}')
        run.done.set()


# --- measuring -----------------------------------------------------------------------------


def child_env(name: str, port: int, home: str, sdk_retries: bool) -> dict:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,  # empty: no ~/.aws profile is read
        "LANG": "C.UTF-8",
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "1",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "coldstart",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "STOCK_TABLE": "t",
        "ORDER_TABLE": "t",
        "PAYMENT_TIMEOUT_QUEUE_URL": "http://127.0.0.1:9/q",
        "RESERVATION_CHECK_QUEUE_URL": "http://127.0.0.1:9/q",
        "EVENT_BUS_NAME": "b",
        "PAYMENT_WEBHOOK_SECRET": "s",
        "HOLDFAST_QUIET_METRICS": "1",
    }
    if not sdk_retries:
        env["AWS_MAX_ATTEMPTS"] = "1"
    return env


def peak_rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def outcome_of(run: Run) -> str:
    if run.kind == "response":
        try:
            v = json.loads(run.body or b"null")
        except ValueError:
            return "response (not JSON)"
        if isinstance(v, dict) and "statusCode" in v:
            return f"response HTTP {v['statusCode']}"
        if isinstance(v, dict) and "batchItemFailures" in v:
            return f"response ({len(v['batchItemFailures'])} batch failures)"
        return "response"
    if run.kind in ("error", "init-error"):
        etype = run.error_type
        try:
            v = json.loads(run.body or b"{}")
            etype = etype or v.get("errorType")
        except ValueError:
            pass
        return f"{run.kind} ({etype or '?'})"
    return run.kind or "none"


def one_run(name: str, binary: Path, event: bytes, timeout: float, home: str, sdk_retries: bool, log: Path, stray: list[str]) -> dict:
    run = Run(name, event)
    stub = Stub(run, stray)
    server = threading.Thread(target=stub.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    server.start()
    env = child_env(name, stub.server_address[1], home, sdk_retries)
    with open(log, "wb") as err:
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen([str(binary)], env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT, cwd=binary.parent)
        exited = None
        deadline = time.monotonic() + timeout
        while not run.done.wait(0.005):
            if proc.poll() is not None:
                exited = proc.returncode
                break
            if time.monotonic() > deadline:
                break
        rss = peak_rss_kib(proc.pid) if run.done.is_set() else None
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    stub.current = None
    run.done.set()  # release a blocked second /next
    stub.shutdown()
    stub.server_close()
    ms = lambda t: None if t is None else (t - t0) / 1e6  # noqa: E731
    return {
        "next_ms": ms(run.t_next),
        "response_ms": ms(run.t_post),
        "kind": run.kind,
        "outcome": outcome_of(run) if run.kind else (f"exited {exited} before responding" if exited is not None else f"timeout ({timeout}s)"),
        "peak_rss_kib": rss,
        "body": run.body[:300].decode("utf-8", "replace"),
    }


def pctl(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def summary(values: list[float]) -> dict | None:
    if not values:
        return None
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "p95": round(pctl(values, 0.95), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def machine_info() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "arch": platform.machine(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def fmt(s: dict | None, key: str) -> str:
    return "-" if not s else f"{s[key]:.1f}"


def markdown(report: dict) -> str:
    m = report["meta"]
    lines = [
        "# Cold start (stub Runtime API)",
        "",
        f"> {NOTE}",
        "",
        f"{m['generated']} · {m['machine']['cpu']} ({m['machine']['cpus']} CPUs, {m['machine']['arch']}, Linux {m['machine']['kernel']}, load {m['machine']['loadavg_1m_at_start']}) · "
        f"{m['runs']} runs per function after {m['warmup']} discarded warm-up, round-robin · "
        f"SDK retries {'default' if m['sdk_retries'] else 'off (AWS_MAX_ATTEMPTS=1)'} · times in ms from spawn",
        "",
        "| function | bootstrap KiB | exec→/next min | median | p95 | exec→response min | median | p95 | /next→response median | peak RSS KiB | outcome |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, f in report["functions"].items():
        a, b, c = f["exec_to_next_ms"], f["exec_to_response_ms"], f["next_to_response_ms"]
        rss = f["peak_rss_kib_median"]
        lines.append(
            f"| {name} | {f['size_bytes'] / 1024:.0f} | {fmt(a, 'min')} | {fmt(a, 'median')} | {fmt(a, 'p95')} | "
            f"{fmt(b, 'min')} | {fmt(b, 'median')} | {fmt(b, 'p95')} | {fmt(c, 'median')} | {rss if rss is not None else '-'} | {', '.join(f['outcomes'])} |"
        )
    lines += [
        "",
        "exec→/next: spawn to the runtime's first `GET /runtime/invocation/next` (init: tokio, logging, config, "
        "`aws_config::load_defaults`, SDK clients). exec→response: spawn to the first `POST .../response` or `.../error` "
        "(init plus one invocation of the event; AWS endpoints refuse connections, so handlers that call AWS answer with an error).",
        "",
        "Events: " + "; ".join(f"{n}: {f['event']}" for n, f in report["functions"].items()),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--lambda-dir", type=Path, default=target / "lambda", help="directory of <name>/bootstrap (default: $CARGO_TARGET_DIR/lambda)")
    ap.add_argument("--events-dir", type=Path, default=ROOT / "events")
    ap.add_argument("--event", action="append", default=[], metavar="NAME=FILE", help="event file for one function (repeatable)")
    ap.add_argument("--runs", "-n", type=int, default=20, help="measured runs per function (default 20)")
    ap.add_argument("--warmup", type=int, default=1, help="discarded runs per function first (page cache; default 1)")
    ap.add_argument("--only", default="", help="comma-separated function names")
    ap.add_argument("--timeout", type=float, default=15.0, help="seconds per run before giving up")
    ap.add_argument("--sdk-retries", action="store_true", help="keep the AWS SDK's default retries (don't set AWS_MAX_ATTEMPTS=1)")
    ap.add_argument("--json", type=Path, help="write the full report (incl. every sample) as JSON")
    ap.add_argument("--markdown", type=Path, help="write the markdown table")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")

    overrides = {}
    for spec in args.event:
        name, _, path = spec.partition("=")
        if not path:
            ap.error(f"--event wants NAME=FILE, got {spec!r}")
        overrides[name] = Path(path)

    bins = sorted(args.lambda_dir.glob("*/bootstrap"))
    only = {s for s in args.only.split(",") if s}
    if only:
        missing = only - {b.parent.name for b in bins}
        if missing:
            print(f"coldstart: no bootstrap for {', '.join(sorted(missing))} in {args.lambda_dir}", file=sys.stderr)
            return 2
        bins = [b for b in bins if b.parent.name in only]
    if not bins:
        print(f"coldstart: no */bootstrap under {args.lambda_dir}: run `bash scripts/package.sh` first", file=sys.stderr)
        return 2

    funcs = {b.parent.name: b for b in bins}
    events = {n: load_event(n, args.events_dir, overrides) for n in funcs}

    machine = machine_info()
    stray: list[str] = []
    home = tempfile.mkdtemp(prefix="coldstart-home-")
    logs = Path(tempfile.mkdtemp(prefix="coldstart-logs-"))
    samples: dict[str, list[dict]] = {n: [] for n in funcs}
    try:
        total = args.warmup + args.runs
        for i in range(total):
            for name, binary in funcs.items():
                r = one_run(name, binary, events[name][0], args.timeout, home, args.sdk_retries, logs / f"{name}.log", stray)
                if i >= args.warmup:
                    samples[name].append(r)
            print(f"coldstart: round {i + 1}/{total}{' (warm-up)' if i < args.warmup else ''} done", file=sys.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)

    report = {
        "meta": {
            "note": NOTE,
            "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine,
            "runs": args.runs,
            "warmup": args.warmup,
            "sdk_retries": args.sdk_retries,
            "lambda_dir": str(args.lambda_dir),
            "stray_requests": sorted(set(stray)),
        },
        "functions": {},
    }
    failed = []
    for name, runs in samples.items():
        nexts = [r["next_ms"] for r in runs if r["next_ms"] is not None]
        resps = [r["response_ms"] for r in runs if r["response_ms"] is not None]
        rss = [r["peak_rss_kib"] for r in runs if r["peak_rss_kib"] is not None]
        outcomes = sorted({r["outcome"] for r in runs})
        if len(resps) < len(runs):
            failed.append(name)
        report["functions"][name] = {
            "size_bytes": funcs[name].stat().st_size,
            "event": events[name][1],
            "exec_to_next_ms": summary(nexts),
            "exec_to_response_ms": summary(resps),
            "next_to_response_ms": summary([r["response_ms"] - r["next_ms"] for r in runs if r["response_ms"] is not None and r["next_ms"] is not None]),
            "peak_rss_kib_median": int(statistics.median(rss)) if rss else None,
            "outcomes": outcomes,
            "errors": sum(1 for r in runs if r["kind"] in ("error", "init-error")),
            "sample_body": runs[-1]["body"] if runs else "",
            "samples": [{k: r[k] for k in ("next_ms", "response_ms", "outcome", "peak_rss_kib")} for r in runs],
        }

    md = markdown(report)
    print(md)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(md)
    if failed:
        print(f"coldstart: no response in some runs of: {', '.join(failed)} (last logs in {logs})", file=sys.stderr)
        return 1
    shutil.rmtree(logs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
