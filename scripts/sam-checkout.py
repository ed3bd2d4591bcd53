#!/usr/bin/env python3
"""The README's checkout, driven through `sam local start-api` (run by scripts/sam-test.sh).

Create a SKU, add stock, place an order, read it back, pay it with a signed callback, read it
again as PAID; a replayed callback is a duplicate. Around it, the authorizer that
`holdfast::sam_local` plays under SAM: no token -> 401, a user token on an admin route -> 403.
Each step prints one line; the first unexpected answer exits 1 with the full response.

Usage: sam-checkout.py BASE_URL HOLDFAST_LOCAL_BINARY STATE_FILE
       (STATE_FILE: the paid order, as JSON, for the stock-events step of scripts/sam-test.sh)
Env:   PAYMENT_WEBHOOK_SECRET (default holdfast-local-webhook-secret, the local stack's)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

BASE, LOCAL, STATE = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
SECRET = os.environ.get("PAYMENT_WEBHOOK_SECRET", "holdfast-local-webhook-secret")


def token(sub: str, scope: str = "") -> str:
    args = [LOCAL, "token", "--sub", sub] + (["--scope", scope] if scope else [])
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def call(method: str, path: str, body: object = None, headers: dict | None = None, raw: bytes | None = None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("content-type", "application/json")
    # A cold container takes seconds to start; SAM answers only once the function has.
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, text


def step(name: str, want: int, got: tuple[int, object]):
    status, body = got
    print(f"  {name:<44} {status}", flush=True)
    if status != want:
        print(f"FAILED: {name}: wanted {want}, got {status}: {json.dumps(body)}", file=sys.stderr)
        sys.exit(1)
    return body


def expect(cond: bool, what: str, body: object):
    if not cond:
        print(f"FAILED: {what}: {json.dumps(body)}", file=sys.stderr)
        sys.exit(1)


# Scopes as template.yaml demands them: stock:admin for /admin, orders:read / orders:write for orders.
admin, alice = token("admin", "stock:admin"), token("alice", "orders:read orders:write")
bearer = lambda t: {"authorization": f"Bearer {t}"}  # noqa: E731
sku = f"SAM-{uuid.uuid4().hex[:8].upper()}"

step("POST /orders without a token -> 401", 401, call("POST", "/orders", {"items": []}))
step("POST /orders with only orders:read -> 403", 403,
     call("POST", "/orders", {"items": []}, bearer(token("alice", "orders:read"))))
step("PUT /admin/skus without stock:admin -> 403", 403,
     call("PUT", f"/admin/skus/{sku}", {"name": "x", "price": 1, "currency": "EUR"}, bearer(alice)))
step(f"PUT /admin/skus/{sku}", 201,
     call("PUT", f"/admin/skus/{sku}", {"name": "Sam mug", "price": 1250, "currency": "EUR"}, bearer(admin)))
view = step(f"POST /admin/skus/{sku}/adjustments +10", 201,
            call("POST", f"/admin/skus/{sku}/adjustments",
                 {"adjustment_id": f"adj-{sku}", "delta": 10, "reason": "first delivery"}, bearer(admin)))
expect(view.get("available") == 10, "10 units available after the adjustment", view)
public = step(f"GET /skus/{sku} (public)", 200, call("GET", f"/skus/{sku}"))
expect(public.get("available") == 10, "the public view shows the stock", public)

order = step("POST /orders (2 units)", 201,
             call("POST", "/orders", {"items": [{"sku": sku, "quantity": 2}]},
                  {**bearer(alice), "idempotency-key": f"idem-{sku}"}))
oid = order["order_id"]
expect(order.get("status") == "PENDING_PAYMENT" and order.get("amount") == 2500, "a 2500 pending order", order)
got = step(f"GET /orders/{oid}", 200, call("GET", f"/orders/{oid}", headers=bearer(alice)))
expect(got.get("status") == "PENDING_PAYMENT", "the order reads back pending", got)
step("GET the order as another user -> 404", 404, call("GET", f"/orders/{oid}", headers=bearer(token("bob", "orders:read"))))

payment = json.dumps({"payment_id": f"pay-{sku}", "order_id": oid, "amount": order["amount"],
                      "currency": order["currency"], "status": "SUCCEEDED"}).encode()
t = int(time.time())
sig = hmac.new(SECRET.encode(), f"{t}.".encode() + payment, hashlib.sha256).hexdigest()
signed = {"x-signature": f"t={t},v1={sig}"}
step("POST /payments/callback with a bad signature -> 401", 401,
     call("POST", "/payments/callback", headers={"x-signature": f"t={t},v1={'0' * 64}"}, raw=payment))
paid = step("POST /payments/callback (signed)", 200, call("POST", "/payments/callback", headers=signed, raw=payment))
expect(paid.get("result") == "applied", "the payment is applied", paid)
again = step("POST /payments/callback again", 200, call("POST", "/payments/callback", headers=signed, raw=payment))
expect(again.get("result") == "duplicate", "a replayed callback is a duplicate", again)
got = step(f"GET /orders/{oid}", 200, call("GET", f"/orders/{oid}", headers=bearer(alice)))
expect(got.get("status") == "PAID", "the order reads back PAID", got)
with open(STATE, "w") as f:
    json.dump({"order_id": oid, "sku": sku, "quantity": 2, "user_id": "alice", "amount": order["amount"],
               "currency": order["currency"], "payment_id": f"pay-{sku}", "version": got.get("version")}, f)
print(f"checkout through sam local start-api: order {oid} PAID")
