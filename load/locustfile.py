"""Holdfast flash-sale load scenario (`make load`, scripts/load.sh; bench/LOAD.md).

Each simulated buyer: browse (GET /skus/{sku}) -> availability (GET /skus/{sku}/availability)
-> checkout (POST /orders with an Idempotency-Key; a timeout or 5xx is retried once with the
same key, as a real client must) -> pay (POST /payments/callback signed with the webhook
secret: `X-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, the wire format of
holdfast_local's client). Most buyers go for the one hot SKU (the burst); the rest spread over
the catalogue. The ramp is locust's spawn rate.

Configuration (environment):
  HOLDFAST_URL          base URL (default http://127.0.0.1:3000)
  HOLDFAST_TOKENS       file with one buyer JWT per line (scope orders:read orders:write)
  HOLDFAST_WEBHOOK_SECRET  the payment webhook's HMAC secret (unset: nobody pays)
  HOLDFAST_HOT_SKU      the hot SKU (default load-hot); HOLDFAST_SKUS: comma-separated others
  HOLDFAST_HOT_SHARE    share of buyers after the hot SKU (default 0.8)
  HOLDFAST_PAY_SHARE    share of successful checkouts that pay (default 0.7)
  HOLDFAST_MAX_CHECKOUTS  stop the run after this many checkout attempts (default 2000)
  HOLDFAST_LOAD_OUT     where the per-reason counts go as JSON (default .local/load-counts.json)
"""

import hashlib
import hmac
import json
import os
import random
import threading
import time
import uuid

from locust import HttpUser, between, events, task

URL = os.environ.get("HOLDFAST_URL", "http://127.0.0.1:3000")
HOT = os.environ.get("HOLDFAST_HOT_SKU", "load-hot")
OTHERS = [s for s in os.environ.get("HOLDFAST_SKUS", "").split(",") if s]
HOT_SHARE = float(os.environ.get("HOLDFAST_HOT_SHARE", "0.8"))
PAY_SHARE = float(os.environ.get("HOLDFAST_PAY_SHARE", "0.7"))
MAX_CHECKOUTS = int(os.environ.get("HOLDFAST_MAX_CHECKOUTS", "2000"))
SECRET = os.environ.get("HOLDFAST_WEBHOOK_SECRET", "")
OUT = os.environ.get("HOLDFAST_LOAD_OUT", ".local/load-counts.json")

with open(os.environ["HOLDFAST_TOKENS"]) as f:
    TOKENS = [t.strip() for t in f if t.strip()]

_lock = threading.Lock()
COUNTS = {"checkouts": 0, "created": 0, "replayed": 0, "refused": {}, "errors": {}, "paid": 0, "pay_refused": {}}
_next_token = [0]


def bump(kind, key):
    with _lock:
        COUNTS[kind][key] = COUNTS[kind].get(key, 0) + 1


def sign(body: bytes) -> str:
    t = int(time.time())
    mac = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


class Buyer(HttpUser):
    host = URL
    wait_time = between(0.05, 0.5)

    def next_buyer(self):
        # each checkout is the next buyer of the pool (a crowd, not a few very busy accounts)
        with _lock:
            token = TOKENS[_next_token[0] % len(TOKENS)]
            _next_token[0] += 1
        return {"authorization": f"Bearer {token}"}

    @task
    def flash_sale(self):
        with _lock:
            if COUNTS["checkouts"] >= MAX_CHECKOUTS:
                done = True
            else:
                COUNTS["checkouts"] += 1
                done = False
        if done:
            self.environment.runner.quit()
            return
        sku = HOT if (not OTHERS or random.random() < HOT_SHARE) else random.choice(OTHERS)
        self.client.get(f"/skus/{sku}", name="GET /skus/{sku}")
        self.client.get(f"/skus/{sku}/availability?quantity=1", name="GET /skus/{sku}/availability")
        key = uuid.uuid4().hex
        body = json.dumps({"items": [{"sku": sku, "quantity": 1}]})
        headers = dict(self.next_buyer(), **{"idempotency-key": key, "content-type": "application/json"})
        order = None
        for attempt in range(2):
            with self.client.post("/orders", data=body, headers=headers, name="POST /orders", catch_response=True) as r:
                if r.status_code == 201:
                    order = r.json()
                    with _lock:
                        COUNTS["replayed" if r.headers.get("idempotent-replayed") else "created"] += 1
                    r.success()
                    break
                if r.status_code in (409, 422, 429):
                    # an answer, not a failure: sold out, limits, throttled ("busy")
                    reason = (r.json() or {}).get("code", str(r.status_code)) if r.text else str(r.status_code)
                    bump("refused", reason)
                    r.success()
                    break
                bump("errors", f"POST /orders {r.status_code}")
                r.failure(f"{r.status_code}")
                # retried once with the same key: the server answers the same order
        if order is None or not SECRET or random.random() >= PAY_SHARE:
            return
        pay = json.dumps({
            "payment_id": f"pay-{uuid.uuid4().hex}",
            "order_id": order["order_id"],
            "amount": order["amount"],
            "currency": order["currency"],
            "status": "SUCCEEDED",
        }).encode()
        with self.client.post("/payments/callback", data=pay, name="POST /payments/callback", catch_response=True,
                              headers={"x-signature": sign(pay), "content-type": "application/json"}) as r:
            if r.status_code == 200:
                with _lock:
                    COUNTS["paid"] += 1
                r.success()
            elif r.status_code in (404, 409):
                bump("pay_refused", (r.json() or {}).get("code", str(r.status_code)) if r.text else str(r.status_code))
                r.success()
            else:
                bump("errors", f"POST /payments/callback {r.status_code}")
                r.failure(f"{r.status_code}")


@events.quitting.add_listener
def _write_counts(environment, **_):
    os.makedirs(os.path.dirname(OUT) or ".", exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(COUNTS, f, indent=1, sort_keys=True)
