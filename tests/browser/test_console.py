#!/usr/bin/env python3
"""Real-browser test of the operator console (console/index.html, served at GET /console/).

Drives the Debian system Chromium headless through selenium 4 against a running local stack;
run it with scripts/browser-test.sh (which installs what is missing, starts the stack and mints
the tokens):

    bash scripts/with-emulator.sh bash scripts/browser-test.sh

Environment:
    HOLDFAST_URL      the stack, e.g. http://127.0.0.1:3057
    ADMIN_TOKEN       a token with scope stock:admin
    BUYER_TOKEN       a buyer token (orders:read orders:write)
    HOLDFAST_BIN      holdfast-local, to mint one token per simulated buyer
    CONSOLE_SHOTS     where the screenshots go (default docs/console)
    CONSOLE_FILE      optional: serve this file at /console/ through a small local proxy in
                      front of HOLDFAST_URL (for a stack binary that does not embed the console
                      yet); without it the stack's own GET /console/ is used.

Element ids / data-testid attributes the test reads or clicks (the console's test contract):
    #forbidden                      shown (display != none) when an admin route answers 401/403
    #status-line                    toast/status line of the last lever's answer
    #switch-badge[data-mode]        global sales-switch state
    #confirm-dialog .open           in-page confirmation modal; #confirm-text, #confirm-ok, #confirm-cancel
    #campaign-name                  campaign name on #/sale/{cid}
    #campaign-paused[data-paused]   "true" / "false"
    #pause-campaign, #resume-campaign
    #item-<sku>-available, -locked, -sold, -quota   per-item counters on #/sale/{cid}
    #stock-chart, #cps-chart        canvases
    #sku-id, #sku-available, #pause-sku, #resume-sku, #journal-table   on #/sku/{sku}
    #order-id-input, #order-open, #order-id, #order-status             on #/order/{id}
    #reconcile-violations, #queues-table, #dlqs-table                  on #/machinery
    [data-testid=error]             an error box (RFC 9457 code + detail) when a route fails
"""

import http.server as httpserver
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAILURES = []
PASSES = []
MEASUREMENTS = []


def ok(name, cond, detail=""):
    line = ("PASS" if cond else "FAIL") + f": {name}" + (f" — {detail}" if detail else "")
    print(line, flush=True)
    (PASSES if cond else FAILURES).append(name)
    return cond


def measure(name, value):
    MEASUREMENTS.append((name, value))
    print(f"MEASURE: {name} = {value}", flush=True)


# ---------------------------------------------------------------- HTTP helpers


def http(method, url, token=None, body=None, headers=None, timeout=15):
    """Returns (status, parsed JSON or raw text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("authorization", f"Bearer {token}")
    if body is not None:
        req.add_header("content-type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def rfc3339(dt):
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def mint(bin_path, sub):
    out = subprocess.run([bin_path, "token", "--sub", sub, "--scope", "orders:read orders:write"],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


# ---------------------------------------------------------------- optional console proxy


class ConsoleProxy:
    """Serves CONSOLE_FILE at /console/ and forwards everything else to the stack."""

    def __init__(self, upstream, path):
        self.upstream, self.path = upstream.rstrip("/"), path
        outer = self

        class Handler(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                if self.command == "GET" and urllib.parse.urlsplit(self.path).path in ("/console", "/console/"):
                    with open(outer.path, "rb") as f:
                        body = f.read()
                    self.send_response(200)
                    self.send_header("content-type", "text/html; charset=utf-8")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                n = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(n) if n else None
                req = urllib.request.Request(outer.upstream + self.path, data=data, method=self.command)
                for k in ("authorization", "content-type", "accept", "idempotency-key"):
                    if self.headers.get(k):
                        req.add_header(k, self.headers[k])
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        status, raw, ctype = r.status, r.read(), r.headers.get("content-type")
                except urllib.error.HTTPError as e:
                    status, raw, ctype = e.code, e.read(), e.headers.get("content-type")
                self.send_response(status)
                self.send_header("content-type", ctype or "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.server = httpserver.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


# ---------------------------------------------------------------- browser helpers


def new_driver():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,900", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_window_size(1280, 900)
    d.set_page_load_timeout(30)
    return d


def wait_for(fn, timeout, step=0.1):
    """Polls fn() until it returns a truthy value; returns it, or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = fn()
        except WebDriverException:
            v = None
        if v:
            return v
        if time.monotonic() >= deadline:
            return None
        time.sleep(step)


def text_of(d, el_id):
    els = d.find_elements(By.ID, el_id)
    return els[0].text.strip() if els else None


def int_of(d, el_id):
    t = text_of(d, el_id)
    try:
        return int(t.replace(",", "")) if t not in (None, "", "–") else None
    except ValueError:
        return None


def displayed(d, el_id):
    els = d.find_elements(By.ID, el_id)
    return bool(els) and els[0].is_displayed()


def shot(d, out_dir, name):
    d.set_window_size(1280, 900)
    path = os.path.join(out_dir, name)
    d.save_screenshot(path)
    ok(f"screenshot {name}", os.path.getsize(path) > 5000, path)


def error_boxes(d):
    return [e.text for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=error]") if e.text.strip()]


def js_exceptions(d):
    try:
        logs = d.get_log("browser")
    except WebDriverException:
        return []
    return [l["message"] for l in logs if l.get("level") == "SEVERE" and "Uncaught" in l.get("message", "")]


# ---------------------------------------------------------------- buyers


class Buyers:
    """Background checkouts at about `rate` per second, spread over many buyer tokens."""

    def __init__(self, url, tokens, sku, cid, rate=5.0, threads=4):
        self.url, self.tokens, self.sku, self.cid = url, tokens, sku, cid
        self.interval = threads / rate
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.n = 0
        self.ordered = []           # order ids (201)
        self.statuses = {}          # status/code -> count
        self.first_paused_at = None  # monotonic time of the first 409 sale_paused
        self.threads = [threading.Thread(target=self._run, args=(i, threads), daemon=True) for i in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def _run(self, i, stride):
        time.sleep(i * self.interval / stride)
        k = i
        while not self.stop_ev.is_set():
            t0 = time.monotonic()
            tok = self.tokens[k % len(self.tokens)]
            k += stride
            try:
                status, body = http("POST", f"{self.url}/orders", tok,
                                    {"items": [{"sku": self.sku, "quantity": 1, "campaign_id": self.cid}]},
                                    {"idempotency-key": f"console-{uuid.uuid4()}"})
            except Exception as e:  # noqa: BLE001 - a network hiccup is counted, not fatal
                status, body = 0, str(e)
            code = body.get("code") if isinstance(body, dict) else None
            with self.lock:
                key = f"{status}" + (f" {code}" if code else "")
                self.statuses[key] = self.statuses.get(key, 0) + 1
                if status == 201 and isinstance(body, dict) and body.get("order_id"):
                    self.ordered.append(body["order_id"])
                if status == 409 and code == "sale_paused" and self.first_paused_at is None:
                    self.first_paused_at = time.monotonic()
            self.stop_ev.wait(max(0.0, self.interval - (time.monotonic() - t0)))

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout=20)


# ---------------------------------------------------------------- the test


def main():
    url = os.environ.get("HOLDFAST_URL", "http://127.0.0.1:3057").rstrip("/")
    admin = os.environ["ADMIN_TOKEN"]
    buyer = os.environ["BUYER_TOKEN"]
    bin_path = os.environ.get("HOLDFAST_BIN", os.path.join(ROOT, "target/debug/holdfast-local"))
    out_dir = os.environ.get("CONSOLE_SHOTS", os.path.join(ROOT, "docs/console"))
    os.makedirs(out_dir, exist_ok=True)
    console_file = os.path.join(ROOT, "console/index.html")

    proxy = None
    page_url = url
    if os.environ.get("CONSOLE_FILE"):
        proxy = ConsoleProxy(url, os.environ["CONSOLE_FILE"])
        page_url = proxy.url
        print(f"NOTE: console served from {os.environ['CONSOLE_FILE']} through a proxy at {page_url}", flush=True)

    # --- 0. the page itself
    status, body = http("GET", f"{page_url}/console/")
    if not ok("GET /console/ serves the console", status == 200 and isinstance(body, str) and "Holdfast" in body,
              f"status {status}"):
        print("BROWSER TEST FAILED: the stack does not serve /console/ (embed console/index.html, or run with "
              "HOLDFAST_CONSOLE_FROM_FILE=1 / CONSOLE_FILE=console/index.html to test the file through a proxy)")
        return 1
    served = body.encode()
    with open(console_file, "rb") as f:
        on_disk = f.read()
    if served != on_disk:
        print(f"WARN: the served console ({len(served)} B) differs from console/index.html ({len(on_disk)} B): stale binary?")
    measure("page weight (bytes, served /console/)", len(served))
    ok("page weight under 60 KB", len(served) < 60 * 1024, f"{len(served)} B")

    # --- 1. set up by HTTP (unique ids per run)
    run = uuid.uuid4().hex[:8]
    sku, cid = f"console-tee-{run}", f"console-sale-{run}"
    s, b = http("PUT", f"{url}/admin/skus/{sku}", admin, {"name": "Console tee", "price": 1999, "currency": "EUR", "shards": 2})
    ok("PUT /admin/skus/{sku}", s in (200, 201), f"{s} {b}")
    s, b = http("POST", f"{url}/admin/skus/{sku}/adjustments", admin, {"adjustment_id": f"a1-{run}", "delta": 500, "reason": "stock"})
    ok("POST stock adjustment +500", s in (200, 201), f"{s} {b}")
    now = datetime.now(timezone.utc)
    s, b = http("PUT", f"{url}/admin/campaigns/{cid}", admin, {
        "name": "Console sale", "starts_at": rfc3339(now - timedelta(seconds=60)),
        "ends_at": rfc3339(now + timedelta(hours=1)), "items": [{"sku": sku, "quota": 300, "price": 999}]})
    ok("PUT /admin/campaigns/{cid} (LIVE)", s in (200, 201), f"{s} {b}")
    s, b = http("GET", f"{url}/campaigns/{cid}")
    ok("campaign is LIVE", s == 200 and isinstance(b, dict) and b.get("status") == "LIVE", f"{s} {b and b.get('status') if isinstance(b, dict) else b}")

    print("minting buyer tokens…", flush=True)
    buyer_tokens = [mint(bin_path, f"buyer-{run}-{i}") for i in range(60)]

    d = new_driver()
    d2 = None
    buyers = None
    try:
        # --- 2. open the sale page with ?token=
        t_open = time.monotonic()
        d.get(f"{page_url}/console/?token={urllib.parse.quote(admin)}#/sale/{cid}")
        ok("token stripped from the URL", "token=" not in d.current_url, d.current_url)
        ok("token kept in sessionStorage",
           d.execute_script("return sessionStorage.getItem('holdfast.console.token')") == admin)
        sold_id, locked_id, avail_id = f"item-{sku}-sold", f"item-{sku}-locked", f"item-{sku}-available"
        first = wait_for(lambda: (int_of(d, sold_id), int_of(d, locked_id), int_of(d, avail_id))
                         if int_of(d, sold_id) is not None and int_of(d, avail_id) is not None else None, 15)
        ok("sale page shows the item counters", first is not None, f"sold/locked/available = {first}")
        measure("time to first item numbers (ms)", round((time.monotonic() - t_open) * 1000))
        ok("campaign name shown", text_of(d, "campaign-name") == "Console sale", str(text_of(d, "campaign-name")))
        ok("forbidden not shown for the admin", not displayed(d, "forbidden"))
        errs = error_boxes(d)
        if errs:
            print("NOTE: sale page degraded (routes not served yet?): " + " | ".join(errs), flush=True)
        badge = text_of(d, "switch-badge")
        if badge in ("n/a", "…", None):
            print(f"NOTE: sales switch not served yet (badge {badge!r})", flush=True)
        else:
            ok("sales-switch badge shows OPEN", badge == "OPEN" and
               d.find_element(By.ID, "switch-badge").get_attribute("data-mode") == "OPEN", str(badge))

        buyers = Buyers(url, buyer_tokens, sku, cid).start()

        # --- 3. watch the numbers move
        t_buy = time.monotonic()
        moved = wait_for(lambda: (int_of(d, sold_id), int_of(d, locked_id))
                         if first and (int_of(d, sold_id), int_of(d, locked_id)) != (first[0], first[1]) else None, 20)
        ok("locked/sold numbers move on the page", moved is not None,
           f"from sold/locked {first[:2] if first else None} to {moved}")
        if moved:
            measure("buyers start -> page shows a change (ms)", round((time.monotonic() - t_buy) * 1000))
        time.sleep(2.5)  # let the chart gather a few points
        shot(d, out_dir, "sale.png")

        # --- 4. pause with the lever
        ok("pause-campaign enabled", d.find_element(By.ID, "pause-campaign").is_enabled())
        d.find_element(By.ID, "pause-campaign").click()
        dialog_open = wait_for(lambda: "open" in d.find_element(By.ID, "confirm-dialog").get_attribute("class"), 3)
        ok("confirm dialog opens", bool(dialog_open), text_of(d, "confirm-text") or "")
        ok("confirm dialog describes the action", "Pause campaign" in (text_of(d, "confirm-text") or "") and cid in (text_of(d, "confirm-text") or ""))
        t_click = time.monotonic()
        d.find_element(By.ID, "confirm-ok").click()
        paused = wait_for(lambda: d.find_element(By.ID, "campaign-paused").get_attribute("data-paused") == "true", 10)
        ok("page shows the campaign paused", bool(paused), text_of(d, "campaign-paused") or "")
        measure("click -> page shows paused (ms)", round((time.monotonic() - t_click) * 1000))
        ok("status line reports the pause", "paused" in (text_of(d, "status-line") or ""), text_of(d, "status-line") or "")
        ok("resume-campaign enabled after the pause", d.find_element(By.ID, "resume-campaign").is_enabled())
        # give the buyers up to 5 s to hit the pause themselves, then stop them
        wait_for(lambda: buyers.first_paused_at, 5)
        buyers.stop()
        s, b = http("POST", f"{url}/orders", buyer_tokens[-1],
                    {"items": [{"sku": sku, "quantity": 1, "campaign_id": cid}]}, {"idempotency-key": f"console-after-{run}"})
        ok("checkout after the pause answers 409 sale_paused", s == 409 and isinstance(b, dict) and b.get("code") == "sale_paused", f"{s} {b}")
        if buyers.first_paused_at is not None:
            measure("click -> first refused checkout (ms)", round((buyers.first_paused_at - t_click) * 1000))
        else:
            measure("click -> first refused checkout (ms)", "no buyer was refused before they stopped (the explicit check above was)")
        print(f"buyers: {buyers.statuses}", flush=True)
        ok("some checkouts succeeded", len(buyers.ordered) > 0, f"{len(buyers.ordered)} orders")
        ok("no JS exceptions on the sale page", not js_exceptions(d), "; ".join(js_exceptions(d)))

        # --- 4b. a queued campaign: the waiting room's panel and its lever
        qcid = f"console-drop-{run}"
        qsku = f"console-cap-{run}"
        s, b = http("PUT", f"{url}/admin/skus/{qsku}", admin, {"name": "Console cap", "price": 2500, "currency": "EUR", "shards": 1})
        ok("PUT the drop's SKU", s in (200, 201), f"{s} {b}")
        s, b = http("POST", f"{url}/admin/skus/{qsku}/adjustments", admin, {"adjustment_id": f"q1-{run}", "delta": 10, "reason": "stock"})
        ok("stock the drop's SKU", s in (200, 201), f"{s} {b}")
        s, b = http("PUT", f"{url}/admin/campaigns/{qcid}", admin, {
            "name": "Console drop", "starts_at": rfc3339(now + timedelta(seconds=600)),
            "ends_at": rfc3339(now + timedelta(hours=1)), "items": [{"sku": qsku, "quota": 10}],
            "queue": {"rate": 5, "token_ttl_seconds": 60}})
        ok("PUT a queued campaign", s in (200, 201), f"{s} {b}")
        for i in range(3):
            s, b = http("POST", f"{url}/campaigns/{qcid}/queue", buyer_tokens[i])
            ok(f"buyer {i} joins the queue", s == 201, f"{s} {b}")
        d.get(f"{page_url}/console/#/sale/{qcid}")
        joined = wait_for(lambda: text_of(d, "queue-joined") == "3", 15)
        ok("the queue panel shows 3 joined", bool(joined), text_of(d, "queue-joined") or "")
        ok("admission running before the pause", text_of(d, "queue-halted") == "ADMITTING", text_of(d, "queue-halted") or "")
        d.find_element(By.ID, "pause-queue").click()
        wait_for(lambda: "open" in d.find_element(By.ID, "confirm-dialog").get_attribute("class"), 3)
        ok("the confirm dialog names the queue's campaign", qcid in (text_of(d, "confirm-text") or ""), text_of(d, "confirm-text") or "")
        d.find_element(By.ID, "confirm-ok").click()
        halted = wait_for(lambda: d.find_element(By.ID, "queue-halted").get_attribute("data-halted") == "paused", 10)
        ok("the panel shows admission paused", bool(halted), text_of(d, "queue-halted") or "")
        s, b = http("GET", f"{url}/admin/campaigns/{qcid}/queue", admin)
        ok("the server has admission paused", s == 200 and isinstance(b, dict) and b.get("halted") == "paused", f"{s} {b}")
        shot(d, out_dir, "queue.png")
        ok("no JS exceptions on the queue panel", not js_exceptions(d), "; ".join(js_exceptions(d)))

        # --- 5. other pages
        d.get(f"{page_url}/console/#/sku/{sku}")
        ok("sku page renders", wait_for(lambda: text_of(d, "sku-id") == sku, 5) is not None)
        wait_for(lambda: int_of(d, "sku-available") is not None or error_boxes(d), 5)
        wait_for(lambda: d.find_elements(By.ID, "journal-table"), 5)
        ok("sku page shows the journal", bool(d.find_elements(By.ID, "journal-table")))
        if int_of(d, "sku-available") is not None:
            ok("sku totals shown", True, f"available {int_of(d, 'sku-available')} sold {int_of(d, 'sku-sold')} locked {int_of(d, 'sku-locked')}")
        else:
            print("NOTE: sku page degraded: " + " | ".join(error_boxes(d)), flush=True)
        shot(d, out_dir, "sku.png")

        oid = buyers.ordered[0] if buyers.ordered else "none"
        d.get(f"{page_url}/console/#/order/{oid}")
        ok("order page renders", wait_for(lambda: text_of(d, "order-id") == oid, 5) is not None)
        status_txt = wait_for(lambda: text_of(d, "order-status"), 8)
        ok("order status shown", bool(status_txt), str(status_txt))
        ok("order lines shown", bool(wait_for(lambda: d.find_elements(By.ID, "order-lines"), 3)))
        ok("order locks shown", bool(d.find_elements(By.ID, "order-locks")))
        shot(d, out_dir, "order.png")

        d.get(f"{page_url}/console/#/machinery")
        got = wait_for(lambda: text_of(d, "reconcile-violations") not in (None, "–") or error_boxes(d), 6)
        ok("machinery page renders (data or an error code)", bool(got),
           f"violations {text_of(d, 'reconcile-violations')}" + (f"; errors {error_boxes(d)}" if error_boxes(d) else ""))
        shot(d, out_dir, "machinery.png")

        # a missing route degrades to a visible error code, not a blank page
        d.get(f"{page_url}/console/#/order/no-such-order-{run}")
        e = wait_for(lambda: error_boxes(d), 6)
        ok("an unknown order shows the error code", bool(e), str(e))
        ok("no JS exceptions on the other pages", not js_exceptions(d), "; ".join(js_exceptions(d)))

        # --- 7. load timings (a fresh load of the sale page)
        d.get(f"{page_url}/console/#/sale/{cid}")
        wait_for(lambda: d.execute_script("return document.readyState") == "complete", 10)
        nav = d.execute_script(
            "var n=performance.getEntriesByType('navigation')[0];"
            "return n?{dcl:n.domContentLoadedEventEnd,load:n.loadEventEnd,size:n.transferSize,body:n.decodedBodySize}:null")
        if ok("navigation timing available", bool(nav)):
            measure("domContentLoaded (ms)", round(nav["dcl"], 1))
            measure("load (ms)", round(nav["load"], 1))
            measure("decoded body size (bytes)", nav["body"])

        # --- 6. the buyer token: forbidden, no data
        d2 = new_driver()
        d2.get(f"{page_url}/console/?token={urllib.parse.quote(buyer)}#/sale/{cid}")
        shown = wait_for(lambda: displayed(d2, "forbidden"), 10)
        ok("buyer token: #forbidden shown", bool(shown), text_of(d2, "forbidden") or "")
        ok("buyer token: message names the admin token", "admin token" in (text_of(d2, "forbidden") or ""))
        time.sleep(2.2)  # two poll periods: nothing may appear later either
        body_text = d2.find_element(By.TAG_NAME, "body").text
        ok("buyer token: no campaign data displayed",
           not d2.find_elements(By.ID, sold_id) and "Console sale" not in body_text and sku not in body_text,
           f"item elements: {len(d2.find_elements(By.ID, sold_id))}")
    finally:
        if buyers:
            buyers.stop()
        for drv in (d, d2):
            if drv:
                try:
                    drv.quit()
                except Exception:  # noqa: BLE001
                    pass
        if proxy:
            proxy.close()

    print("", flush=True)
    for name, value in MEASUREMENTS:
        print(f"  {name}: {value}")
    print(f"browser: {len(PASSES)} passed, {len(FAILURES)} failed")
    if FAILURES:
        print(f"BROWSER TEST FAILED: {len(FAILURES)} failure(s): " + "; ".join(FAILURES))
        return 1
    print("BROWSER TEST PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
