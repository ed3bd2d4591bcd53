"""Schemathesis hooks for Holdfast's local stack (loaded through SCHEMATHESIS_HOOKS).

The payment webhook is authenticated by an HMAC over the exact body bytes, which no static
header can carry. The auth provider below marks each request to it with a placeholder
signature (so schemathesis knows the request carries its declared credential, and its
ignored-auth probes, which strip credentials and bypass hooks, test the refusal); the
`before_call` hook then serialises the body itself, signs exactly those bytes with the local
webhook secret and sends them.
"""

import hashlib
import hmac
import json
import os
import time

import schemathesis
from schemathesis.core import NOT_SET

SECRET = os.environ.get("PAYMENT_WEBHOOK_SECRET", "holdfast-local-webhook-secret").encode()
PLACEHOLDER = "to-be-signed"
WEBHOOK = "/payments/callback"


@schemathesis.auth().apply_to(path=WEBHOOK)
class WebhookSignature:
    def get(self, case, context):
        return PLACEHOLDER

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "X-Signature": data}


SWITCH = "/admin/sales-switch"


def keep_sales_open(case, kwargs):
    """A valid switch request sets OPEN: the switch is a global lever, and a fuzzer that closed
    the sales would turn every later write into a 503 `sales_closed` (tests/tests/e2e/sale.rs
    tests the modes). Invalid bodies are sent as generated."""
    if case.operation.path == SWITCH and isinstance(case.body, dict) and case.body.get("mode") in ("READ_ONLY", "CLOSED"):
        case.body = {**case.body, "mode": "OPEN"}
        if isinstance(kwargs.get("json"), dict):
            kwargs["json"] = case.body
        elif "data" in kwargs:
            kwargs["data"] = json.dumps(case.body).encode()


@schemathesis.hook
def before_call(context, case, kwargs):
    keep_sales_open(case, kwargs)
    if case.operation.path != WEBHOOK:
        return
    headers = dict(case.headers or {})
    if headers.get("X-Signature") != PLACEHOLDER:
        return
    if case.body is NOT_SET:
        raw = b""
    elif isinstance(case.body, bytes):
        raw = case.body
    else:
        raw = json.dumps(case.body, separators=(",", ":")).encode()
    t = int(time.time())
    mac = hmac.new(SECRET, f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    headers["X-Signature"] = f"t={t},v1={mac}"
    headers["Content-Type"] = "application/json"
    case.headers = headers
    kwargs["data"] = raw
