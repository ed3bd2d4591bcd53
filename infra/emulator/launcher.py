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
EventBridge, ...) stays concurrent.

Usage:
    python infra/emulator/launcher.py [--host 127.0.0.1] [--port PORT]

Environment:
    HOLDFAST_EMULATOR_PORT   port when --port is not given (default 4566;
                             0 = pick a free one, reported on the ready line)
    HOLDFAST_EMULATOR_LOG=1  log each request (werkzeug access log) to stderr
    HOLDFAST_EMULATOR_NO_DYNAMODB_LOCK=1
                             disable the lock (diagnostics only; equivalent
                             to --no-dynamodb-lock)
    HOLDFAST_EMULATOR_TRACK_MODELS=1
                             keep moto's tracking of DynamoDB model instances
                             (off by default: it leaks a table copy per
                             TransactWriteItems, see stop_tracking_dynamodb_models)

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


def stop_tracking_dynamodb_models() -> None:
    """Stop moto from keeping every DynamoDB model instance alive forever.

    moto's ``BaseModel.__new__`` appends each instance to a class-level list
    (only used by /moto-api/data.json and cleared by /moto-api/reset).
    TransactWriteItems deep-copies every table it touches, items and stream
    records included, so with tracking on each transaction leaks a full copy
    of the table: ~1.4 GB after 1000 transactions on a stream-enabled table.
    Other services keep moto's behaviour (S3's reset relies on the lists).
    """
    from moto.core.common_models import BaseModel

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        instance = super(BaseModel, cls).__new__(cls)  # type: ignore[misc]
        if not cls.__module__.startswith("moto.dynamodb"):
            cls.instances_tracked.append(instance)  # type: ignore[attr-defined]
        return instance

    BaseModel.__new__ = staticmethod(__new__)  # type: ignore[assignment]


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
    return SerialiseDynamoDB(dispatcher) if serialise else dispatcher


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
        help="serve moto unmodified (diagnostics only)",
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

    if os.environ.get("HOLDFAST_EMULATOR_TRACK_MODELS") != "1":
        stop_tracking_dynamodb_models()
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
