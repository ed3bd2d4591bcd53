#!/usr/bin/env python3
"""Holdfast local AWS emulator: moto's server app behind a DynamoDB lock.

moto's threaded server does not apply DynamoDB writes atomically: concurrent
conditional UpdateItems both pass their condition, and concurrent
TransactWriteItems can fail with HTTP 500. This launcher serves the same WSGI
app moto's own server builds (``DomainDispatcherApplication(create_backend_app)``)
but wraps it in a middleware that runs every DynamoDB request (``X-Amz-Target``
starting with ``DynamoDB``: ``DynamoDB_20120810.*`` and
``DynamoDBStreams_20120810.*``) under one global lock, including the
consumption of the response body. Everything else (SQS long polls,
EventBridge, ...) stays concurrent. It also patches three moto DynamoDB
defects and two SQS costs that grow with queue length in-process (see
apply_moto_patches and MOTO_NOTES.md).

Usage:
    python infra/emulator/launcher.py [--host 127.0.0.1] [--port PORT]

Environment:
    HOLDFAST_EMULATOR_PORT   port when --port is not given (default 4566;
                             0 = pick a free one, reported on the ready line)
    HOLDFAST_EMULATOR_LOG=1  log each request (werkzeug access log) to stderr
    HOLDFAST_EMULATOR_NO_DYNAMODB_LOCK=1
                             disable the lock (diagnostics only; equivalent
                             to --no-dynamodb-lock)
    HOLDFAST_EMULATOR_MOTO_PATCHES=0
                             serve moto unpatched (by default
                             apply_moto_patches() fixes a memory leak, a
                             slowdown and stale stream iterators in DynamoDB,
                             and SQS's per-message clock and attribute costs)
    HOLDFAST_EMULATOR_SQS_PATCHES=0
                             keep the DynamoDB patches, serve moto's SQS code
                             unpatched (diagnostics)
    HOLDFAST_EMULATE=conflicts[=W],throttle[=R],index-lag[=L],stream-split
                             DynamoDB as it is under load, for every table
                             (off by default, and in `make run`): see
                             EmulateDynamoDB. A test scopes the same switches
                             to its own tables with POST /_holdfast/emulate.
                             stream-split is the local stack's (its stream
                             poller reads the same variable).

Once listening, prints exactly one line on stdout:
    holdfast-emulator listening on http://127.0.0.1:PORT
SIGTERM / SIGINT shut it down with exit status 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterable

DEFAULT_PORT = 4566

# Backends created up front so the first real request does not pay moto's
# import/app-construction cost (seconds for dynamodb) and risk an SDK timeout.
WARM_BACKENDS = ("dynamodb", "dynamodbstreams", "sqs", "events", "sts", "moto_api")


class SerialiseDynamoDB:
    """WSGI middleware: one global lock around DynamoDB(-Streams) requests."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            result = self.app(environ, start_response)
            try:
                # Materialise the body while still holding the lock: the
                # backend may do its work lazily while the body is iterated.
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


class FaultHook:
    """WSGI middleware: test-settable slow or throttled AWS requests.

    ``POST /_holdfast/faults`` with ``{"owner": ID, "rules": [...]}``
    replaces that owner's rules (each local stack is one owner, so tests
    sharing the emulator do not undo each other's); ``DELETE`` clears all.
    A rule applies to a request
    whose ``X-Amz-Target`` starts with ``target`` (default: any) and whose
    body contains ``match`` (required, so a rule scoped to one test's table
    or SKU never touches another test sharing the emulator):

      {"match": "t123-StockTable", "target": "DynamoDB_20120810.Transact",
       "delay_ms": 3000}          -> the request is answered that much later
      {"match": "STOCK#HOT#", "throttle": "ThrottlingException",
       "remaining": 5}            -> answered 400 with that DynamoDB error code
      {"match": "BOOK", "fail": "InternalServerError"}
                                  -> answered 500 with that code: the store
                                     out of reach (the SDK retries it, then
                                     gives up; no throttle, no refusal)

    ``remaining`` (optional) counts down the requests the rule still
    applies to. Sits outside the DynamoDB lock: a delayed request does not
    hold up anyone else's.
    """

    PATH = "/_holdfast/faults"

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.owners: dict[str, list[dict[str, Any]]] = {}
        self.rules: list[dict[str, Any]] = []

    def _control(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        import json

        method = environ.get("REQUEST_METHOD", "GET")
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            req = json.loads(environ["wsgi.input"].read(size) or b"{}")
            rules = req.get("rules") if isinstance(req, dict) else None
            owner = req.get("owner") if isinstance(req, dict) else None
            if not isinstance(owner, str) or not isinstance(rules, list) or not all(
                isinstance(r, dict) and isinstance(r.get("match"), str) and r["match"] for r in rules
            ):
                start_response("400 Bad Request", [("Content-Type", "text/plain")])
                return [b'{"owner": ID, "rules": [...]}, each rule with a non-empty match\n']
            with self.lock:
                self.owners[owner] = rules
                self.rules = [r for rs in self.owners.values() for r in rs]
        elif method == "DELETE":
            with self.lock:
                self.owners = {}
                self.rules = []
        with self.lock:
            body = json.dumps(self.rules).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == self.PATH:
            return self._control(environ, start_response)
        if not self.rules:
            return self.app(environ, start_response)
        import io
        import time

        size = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(size) if size else b""
        environ["wsgi.input"] = io.BytesIO(body)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        text = body.decode("utf-8", "replace")
        rule = None
        with self.lock:
            for r in self.rules:
                if r["match"] in text and target.startswith(r.get("target", "")):
                    if r.get("remaining") is not None:
                        if r["remaining"] <= 0:
                            continue
                        r["remaining"] -= 1
                    rule = dict(r)
                    break
        if rule is None:
            return self.app(environ, start_response)
        if rule.get("delay_ms"):
            time.sleep(float(rule["delay_ms"]) / 1000.0)
        # "fail": the store out of reach (500); "throttle": capacity refused (400)
        answers = (("fail", "500 Internal Server Error"), ("throttle", "400 Bad Request"))
        failure = next(((k, status) for k, status in answers if rule.get(k)), None)
        if failure:
            import json

            code = str(rule[failure[0]])
            payload = json.dumps(
                {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected by the fault hook"}
            ).encode()
            start_response(failure[1], [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-ErrorType", code)])
            return [payload]
        return self.app(environ, start_response)


def parse_switches(spec: str) -> dict[str, float]:
    """``conflicts[=W ms],throttle[=R WCU/s],index-lag[=L ms],stream-split`` -> {name: value}; '' = all off.

    The same syntax and defaults as the in-memory switches (shared/src/adapters/emulate.rs).
    ``stream-split`` is accepted and left to the local stack's stream poller (it reshapes the
    batches it reads: infra/src/pollers.rs); nothing here acts on it.
    """
    defaults = {"conflicts": 5.0, "throttle": 1000.0, "index-lag": 1000.0, "stream-split": 1.0}
    out: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in defaults:
            raise ValueError(f"HOLDFAST_EMULATE: unknown switch {name!r} (conflicts, throttle, index-lag, stream-split)")
        out[name] = float(value) if value.strip() else defaults[name]
    return out


class EmulateDynamoDB:
    """WSGI middleware: DynamoDB's behaviours under load that moto lacks (DESIGN §23).

    Sits inside the DynamoDB lock, so a check and the write it admits are one step. Each
    switch is off unless ``HOLDFAST_EMULATE`` (every table) or a scope set with
    ``POST /_holdfast/emulate`` ``{"owner": ID, "match": TABLE-SUBSTRING, "switches": SPEC}``
    (the tables whose name contains ``match``; ``DELETE`` clears every scope, ``GET`` shows
    the scopes and what each switch did) turns it on:

    * ``conflicts=W``: a ``TransactWriteItems`` touching an item that another transaction
      committed less than W ms ago is cancelled: ``TransactionCanceledException`` whose
      ``CancellationReasons`` say ``TransactionConflict`` for that item and ``None`` for the
      others, as DynamoDB answers a transaction whose item another one is touching.
    * ``throttle=R``: each item (table and key) has a token bucket of R write units/s (a
      partition's 1,000 WCU/s by default) with 100 ms of burst; a transactional write costs 2
      units, any other write 1. Past it, a transaction is cancelled with ``ThrottlingError``
      for the throttled item (DynamoDB's reason code in transactions); a single write is
      answered ``ProvisionedThroughputExceededException`` with ``ThrottlingReasons``
      ``[{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": <table ARN>}]``.
    * ``index-lag=L``: a ``Query`` or ``Scan`` of a secondary index leaves out the items
      written less than L ms ago (a new entry is not in the index yet). Entries an item's
      write removed are not kept in view: moto has no old image to serve (MOTO_NOTES.md).
    """

    PATH = "/_holdfast/emulate"
    KEY_ATTRS = ("pk", "sk")

    def __init__(self, app: Callable[..., Iterable[bytes]], spec: str = "") -> None:
        self.app = app
        self.lock = threading.Lock()
        self.everywhere = parse_switches(spec)
        self.scopes: dict[str, tuple[str, dict[str, float]]] = {}
        self.committed: dict[str, float] = {}
        self.buckets: dict[str, tuple[float, float]] = {}
        self.written: dict[str, float] = {}
        self.stats = {"conflicts": 0, "throttles": 0, "hidden_by_lag": 0}

    # ---- control ----

    def _control(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        import json

        method = environ.get("REQUEST_METHOD", "GET")
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            try:
                req = json.loads(environ["wsgi.input"].read(size) or b"{}")
                owner, match, spec = req["owner"], req["match"], req.get("switches", "")
                if not (isinstance(owner, str) and isinstance(match, str) and match and isinstance(spec, str)):
                    raise ValueError("owner, match (non-empty) and switches are strings")
                switches = parse_switches(spec)
            except (ValueError, KeyError, TypeError) as e:
                start_response("400 Bad Request", [("Content-Type", "text/plain")])
                return [f"{e}\n".encode()]
            with self.lock:
                if switches:
                    self.scopes[owner] = (match, switches)
                else:
                    self.scopes.pop(owner, None)
        elif method == "DELETE":
            with self.lock:
                self.scopes = {}
        with self.lock:
            body = json.dumps(
                {
                    "everywhere": self.everywhere,
                    "scopes": {o: {"match": m, "switches": sw} for o, (m, sw) in self.scopes.items()},
                    "stats": self.stats,
                }
            ).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]

    def _switches(self, table: str) -> dict[str, float]:
        for match, switches in self.scopes.values():
            if match in table:
                return {**self.everywhere, **switches}
        return self.everywhere

    # ---- the model ----

    @classmethod
    def _key(cls, table: str, attrs: dict[str, Any]) -> str:
        import json

        return table + "|" + json.dumps({k: attrs.get(k) for k in cls.KEY_ATTRS if k in attrs}, sort_keys=True)

    @staticmethod
    def _error(start_response: Any, code: str, payload: dict[str, Any]) -> Iterable[bytes]:
        import json

        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", **payload}).encode()
        start_response(
            "400 Bad Request",
            [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-ErrorType", code)],
        )
        return [body]

    def _level(self, key: str, rate: float, now: float) -> float:
        burst = rate / 10.0
        tokens, at = self.buckets.get(key, (burst, now))
        return min(burst, tokens + (now - at) * rate / 1000.0)

    @staticmethod
    def _transact_items(req: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for ti in req.get("TransactItems", []):
            for kind in ("Put", "Update", "Delete", "ConditionCheck"):
                if kind in ti:
                    op = ti[kind]
                    out.append((op.get("TableName", ""), op.get("Item") if kind == "Put" else op.get("Key", {})))
        return out

    def _cancel(self, start_response: Any, codes: list[str | None], message: str) -> Iterable[bytes]:
        reasons = [{"Code": c, "Message": message} if c else {"Code": "None"} for c in codes]
        msg = "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]".format(
            ", ".join(c or "None" for c in codes)
        )
        return self._error(
            start_response, "TransactionCanceledException", {"CancellationReasons": reasons, "Message": msg}
        )

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == self.PATH:
            return self._control(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB_20120810.") or not (self.everywhere or self.scopes):
            return self.app(environ, start_response)
        import io
        import json

        op = target.split(".", 1)[1]
        if op not in ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"):
            return self.app(environ, start_response)
        size = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(size) if size else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            return self.app(environ, start_response)
        now = time.monotonic() * 1000.0
        if op in ("Query", "Scan"):
            return self._read(environ, start_response, req, now)
        if op == "TransactWriteItems":
            items = self._transact_items(req)
            cost = 2.0
        else:
            table = req.get("TableName", "")
            items = [(table, req.get("Item") if op == "PutItem" else req.get("Key", {}))]
            cost = 1.0
        keyed = [(t, self._key(t, attrs or {}), self._switches(t)) for t, attrs in items]
        with self.lock:
            # every bucket is checked before any pays: a throttled request takes no units
            levels = {k: self._level(k, sw["throttle"], now) for _, k, sw in keyed if "throttle" in sw}
            throttled = [k for k, level in levels.items() if level < cost]
            if not throttled:
                for k, level in levels.items():
                    self.buckets[k] = (level - cost, now)
            if throttled:
                self.stats["throttles"] += 1
                if op == "TransactWriteItems":
                    codes = ["ThrottlingError" if k in throttled else None for _, k, _ in keyed]
                    return self._cancel(start_response, codes, "Throughput exceeds the current capacity for one or more items")
                table = keyed[0][0]
                return self._error(
                    start_response,
                    "ProvisionedThroughputExceededException",
                    {
                        "message": "Throughput exceeds the current capacity of your table or index.",
                        "ThrottlingReasons": [
                            {
                                "reason": "TableWriteKeyRangeThroughputExceeded",
                                "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}",
                            }
                        ],
                    },
                )
            if op == "TransactWriteItems":
                conflicting = [
                    "TransactionConflict"
                    if "conflicts" in sw and now < self.committed.get(k, float("-inf")) + sw["conflicts"]
                    else None
                    for _, k, sw in keyed
                ]
                if any(conflicting):
                    self.stats["conflicts"] += 1
                    return self._cancel(start_response, conflicting, "Transaction is ongoing for the item")
        status: list[str] = []

        def recording_start_response(st: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(st)
            return start_response(st, headers, exc_info) if exc_info else start_response(st, headers)

        body = b"".join(self.app(environ, recording_start_response))
        if status and status[0].startswith("200"):
            with self.lock:
                for _, k, sw in keyed:
                    if "conflicts" in sw and op == "TransactWriteItems":
                        self.committed[k] = now
                    if "index-lag" in sw:
                        self.written[k] = now
        return [body]

    def _read(self, environ: dict[str, Any], start_response: Any, req: dict[str, Any], now: float) -> Iterable[bytes]:
        import json

        table = req.get("TableName", "")
        sw = self._switches(table)
        if "index-lag" not in sw or not req.get("IndexName"):
            return self.app(environ, start_response)
        status: list[Any] = []

        def recording_start_response(st: str, headers: Any, exc_info: Any = None) -> Any:
            status.append((st, headers))
            return lambda _data: None

        body = b"".join(self.app(environ, recording_start_response))
        st, headers = status[0]
        if st.startswith("200"):
            try:
                out = json.loads(body)
                lag = sw["index-lag"]
                with self.lock:
                    fresh = [i for i in out.get("Items", []) if now < self.written.get(self._key(table, i), float("-inf")) + lag]
                    self.stats["hidden_by_lag"] += len(fresh)
                if fresh:
                    out["Items"] = [i for i in out["Items"] if i not in fresh]
                    out["Count"] = len(out["Items"])
                    body = json.dumps(out).encode()
                    headers = [(h, v) for h, v in headers if h.lower() not in ("content-length", "x-amz-crc32")]
                    headers.append(("Content-Length", str(len(body))))
            except ValueError:
                pass
        start_response(st, headers)
        return [body]


def apply_moto_patches() -> None:
    """Small fixes for moto 5.2.5 DynamoDB defects and SQS costs (see MOTO_NOTES.md).

    TransactWriteItems deep-copies every table it touches (items *and* stream
    records) before running, and on cancellation puts the copy back in place.

    1. moto's ``BaseModel.__new__`` appends every instance to a class-level
       list that is only read by /moto-api/data.json and cleared by
       /moto-api/reset, so each transaction leaked a full copy of the table
       (~1.4 GB after 1000 transactions on a stream-enabled table). DynamoDB
       models are no longer tracked; other services keep moto's behaviour.
    2. Stream records are immutable once written, so copies share them: the
       cost of a transaction no longer grows with the stream's length.
    3. After a cancelled transaction, shard iterators obtained earlier kept
       reading the discarded shard: they returned a phantom record for the
       cancelled write and never saw a later one. Iterators now follow the
       table's current shard.
    """
    from moto.core.common_models import BaseModel
    from moto.dynamodb.models.table import StreamRecord
    from moto.dynamodbstreams.models import ShardIterator

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        instance = super(BaseModel, cls).__new__(cls)  # type: ignore[misc]
        if not cls.__module__.startswith("moto.dynamodb"):
            cls.instances_tracked.append(instance)  # type: ignore[attr-defined]
        return instance

    BaseModel.__new__ = staticmethod(__new__)  # type: ignore[assignment]

    StreamRecord.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]

    original_get = ShardIterator.get

    def get(self: Any, limit: int = 1000) -> dict[str, Any]:
        try:
            table = self.streams_backend.dynamodb.get_table(self.stream_shard.table.name)
            current = table.stream_shard
        except Exception:  # table deleted etc.: keep moto's behaviour
            current = None
        if current is not None and current is not self.stream_shard:
            self.stream_shard = current
        return original_get(self, limit)

    ShardIterator.get = get  # type: ignore[method-assign]

    if os.environ.get("HOLDFAST_EMULATOR_SQS_PATCHES") != "0":
        apply_sqs_patches()


def apply_sqs_patches() -> None:
    """Two moto 5.2.5 SQS costs that grew with queue length (see MOTO_NOTES.md, "j").

    4. The clock helpers the SQS models call for "now" build two datetimes per call (~4 µs),
       and they are called per message on every receive, send and attribute read (visibility
       and delay checks over the whole queue). "Now" is read from ``time.time()`` instead:
       the same epoch seconds, ~60x cheaper.
    5. Every message received re-read *all* queue attributes (each an approximate count over
       the whole queue) to learn the retention period. It is read from the queue directly.
    """
    import moto.sqs.models as sqs_models

    original_unix_time = sqs_models.unix_time
    original_unix_time_millis = sqs_models.unix_time_millis

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else original_unix_time(dt)

    def unix_time_millis(dt: Any = None) -> float:
        return time.time() * 1000.0 if dt is None else original_unix_time_millis(dt)

    sqs_models.unix_time = unix_time  # type: ignore[assignment]
    sqs_models.unix_time_millis = unix_time_millis  # type: ignore[assignment]

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        queue = self.get_queue(queue_name)
        return int(queue.message_retention_period) + message.sent_timestamp / 1000 > time.time()

    sqs_models.SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )


def build_app(serialise: bool = True) -> Any:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )

    dispatcher = DomainDispatcherApplication(create_backend_app)
    with dispatcher.lock:
        for backend in WARM_BACKENDS:
            if backend not in dispatcher.app_instances:
                dispatcher.app_instances[backend] = create_backend_app(backend)
    emulated = EmulateDynamoDB(dispatcher, os.environ.get("HOLDFAST_EMULATE", ""))
    return FaultHook(SerialiseDynamoDB(emulated) if serialise else emulated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("HOLDFAST_EMULATOR_PORT") or DEFAULT_PORT),
    )
    parser.add_argument(
        "--no-dynamodb-lock",
        action="store_true",
        default=os.environ.get("HOLDFAST_EMULATOR_NO_DYNAMODB_LOCK") == "1",
        help="do not serialise DynamoDB requests (diagnostics only)",
    )
    args = parser.parse_args(argv)

    verbose = os.environ.get("HOLDFAST_EMULATOR_LOG") == "1"
    logging.getLogger("werkzeug").setLevel(logging.INFO if verbose else logging.WARNING)

    def stop(signum: int, _frame: Any) -> None:
        # Raised in the main thread, out of serve_forever()'s select loop.
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    # Started in the background by a non-interactive shell, SIGINT arrives
    # ignored: keep it that way so a Ctrl-C aimed at the foreground command
    # does not take the emulator down under it (the wrapper stops us with
    # SIGTERM).
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, stop)

    from werkzeug.serving import make_server
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class RequestHandler(MotoRequestHandler):
        def log_request(self, *a: Any, **kw: Any) -> None:
            if verbose:
                super().log_request(*a, **kw)

    if os.environ.get("HOLDFAST_EMULATOR_MOTO_PATCHES") != "0":
        apply_moto_patches()
    app = build_app(serialise=not args.no_dynamodb_lock)
    server = make_server(
        args.host, args.port, app, threaded=True, request_handler=RequestHandler
    )
    port = server.server_address[1]
    # moto uses MOTO_PORT when it builds URLs pointing back at itself.
    os.environ["MOTO_PORT"] = str(port)

    if args.no_dynamodb_lock:
        print("holdfast-emulator: dynamodb lock DISABLED", file=sys.stderr, flush=True)
    print(f"holdfast-emulator listening on http://{args.host}:{port}", flush=True)
    try:
        server.serve_forever()
    except SystemExit:
        pass
    finally:
        server.server_close()
    # All state is throwaway: skip interpreter finalisation, which can take
    # tens of seconds once moto holds a large heap.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
