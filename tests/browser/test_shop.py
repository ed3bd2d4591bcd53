#!/usr/bin/env python3
"""Real-browser test of the storefront (shop/index.html, served at GET /shop/; docs/shop.md).

A buyer in headless Chromium goes through a queued drop of a code-pool SKU: sees the drop, joins
its queue behind three other buyers, watches the place and the ETA move, is admitted, checks out,
pays on the simulated provider's page (a second tab), and sees the PAID outcome arrive in the
shop's tab without a reload, marked as pushed over the WebSocket, then the codes. Run it with
scripts/browser-test.sh (which installs what is missing, starts the stack and mints the tokens):

    bash scripts/with-emulator.sh bash scripts/browser-test.sh

Environment:
    HOLDFAST_URL      the stack, e.g. http://127.0.0.1:3057
    ADMIN_TOKEN       a token with scope stock:admin
    HOLDFAST_BIN      holdfast-local, to mint the buyers' tokens
    SHOP_SHOTS        where the screenshots go (default docs/shop)

Element ids the test reads or clicks (the storefront's test contract):
    #drop-name, #drop-status[data-status], #item-<sku>-left      the drop
    #join-queue                                                 join button
    #queue-state[data-state], #queue-via[data-via]              WAITING / ADMITTED / …, and how it came
    #queue-ticket, #queue-position, #queue-ahead, #queue-eta, #queue-admitted
    #checkout-sku, #checkout-qty, #checkout                     the checkout form
    #order-id, #order-status[data-status][data-via]             the order; data-via: answer|polled|pushed
    #pay-link                                                   the provider's page (opens a new tab)
    #start-payment                                              a new payment attempt (after a decline)
    #codes li, #codes-via[data-via]                             the codes once paid
    #push-state[data-state]                                     open | connecting | closed
    #updates li[data-via][data-kind][data-status]               the update log (role=log)
    #live                                                       the live region (role=status)
    [data-testid=error]                                         an error box
The provider's page (GET {redirect_url} as a browser): #pay, #decline, #status[data-status].
"""

import os
import sys
import time
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_console import (  # noqa: E402 - the console test's HTTP and browser helpers
    displayed, http, js_exceptions, mint, new_driver, rfc3339, text_of, wait_for)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILURES, PASSES, MEASUREMENTS = [], [], []


def ok(name, cond, detail=""):
    line = ("PASS" if cond else "FAIL") + f": {name}" + (f" — {detail}" if detail else "")
    print(line, flush=True)
    (PASSES if cond else FAILURES).append(name)
    return cond


def measure(name, value):
    MEASUREMENTS.append((name, value))
    print(f"MEASURE: {name} = {value}", flush=True)


def attr(d, el_id, name):
    els = d.find_elements(By.ID, el_id)
    return els[0].get_attribute(name) if els else None


def shot(d, out_dir, name):
    d.set_window_size(1280, 900)
    path = os.path.join(out_dir, name)
    d.save_screenshot(path)
    ok(f"screenshot {name}", os.path.getsize(path) > 5000, path)


def updates(d):
    return [(li.get_attribute("data-kind"), li.get_attribute("data-status"), li.get_attribute("data-via"))
            for li in d.find_elements(By.CSS_SELECTOR, "#updates li")]


def unlabelled_controls(d):
    """Visible inputs, selects and buttons with no accessible name (label[for], aria-label or text)."""
    return d.execute_script("""
        var bad = [];
        document.querySelectorAll('input,select,button,a.button').forEach(function (e) {
          if (e.offsetParent === null) return;
          var named = (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.getAttribute('aria-label') ||
                      (e.tagName === 'BUTTON' || e.tagName === 'A') && e.textContent.trim();
          if (!named) bad.push(e.id || e.outerHTML.slice(0, 60));
        });
        return bad;""")


def main():
    url = os.environ.get("HOLDFAST_URL", "http://127.0.0.1:3057").rstrip("/")
    admin = os.environ["ADMIN_TOKEN"]
    bin_path = os.environ.get("HOLDFAST_BIN", os.path.join(ROOT, "target/debug/holdfast-local"))
    out_dir = os.environ.get("SHOP_SHOTS", os.path.join(ROOT, "docs/shop"))
    os.makedirs(out_dir, exist_ok=True)

    # --- 0. the page itself
    status, body = http("GET", f"{url}/shop/")
    if not ok("GET /shop/ serves the storefront", status == 200 and isinstance(body, str) and "Holdfast shop" in body,
              f"status {status}"):
        print("BROWSER TEST FAILED: the stack does not serve /shop/ (stale binary? cargo build -p holdfast-local)")
        return 1
    with open(os.path.join(ROOT, "shop/index.html"), "rb") as f:
        if body.encode() != f.read():
            print("WARN: the served /shop/ differs from shop/index.html: stale binary?", flush=True)
    measure("page weight (bytes, served /shop/)", len(body.encode()))
    ok("page weight under 40 KB", len(body.encode()) < 40 * 1024, f"{len(body.encode())} B")

    # --- 1. a queued drop of a code pool, three buyers already in the queue
    run = uuid.uuid4().hex[:8]
    sku, cid = f"shop-card-{run}", f"shop-drop-{run}"
    s, b = http("PUT", f"{url}/admin/skus/{sku}", admin, {"name": "Gift card", "price": 1500, "currency": "EUR",
                                                          "shards": 1, "model": {"management": "CODE_POOL"}})
    ok("PUT a code-pool SKU", s == 201, f"{s} {b}")
    codes = [f"GIFT-{run}-{i:03d}" for i in range(8)]
    s, b = http("POST", f"{url}/admin/skus/{sku}/codes", admin, {"batch_id": f"b-{run}", "codes": codes})
    ok("upload 8 codes", s == 201 and isinstance(b, dict) and b.get("added") == 8, f"{s} {b}")
    start = datetime.now(timezone.utc) + timedelta(seconds=8)
    s, b = http("PUT", f"{url}/admin/campaigns/{cid}", admin, {
        "name": "Gift card drop", "starts_at": rfc3339(start), "ends_at": rfc3339(start + timedelta(hours=1)),
        "items": [{"sku": sku, "quota": 5}],
        "queue": {"rate": 1, "token_ttl_seconds": 120, "draw": "fifo", "counters": 1}})
    ok("PUT a queued campaign (1 admission/s, exact join order)", s == 201, f"{s} {b}")
    for i in range(3):
        s, b = http("POST", f"{url}/campaigns/{cid}/queue", mint(bin_path, f"shop-early-{run}-{i}"))
        ok(f"early buyer {i} joins", s == 201, f"{s} {b}")
    buyer = mint(bin_path, f"shop-buyer-{run}")

    d = new_driver()
    d2 = d3 = None
    try:
        # --- 2. open the shop with the token in the fragment
        d.get(f"{url}/shop/#campaign={urllib.parse.quote(cid)}&token={urllib.parse.quote(buyer)}")
        ok("token removed from the address bar", "token=" not in d.current_url, d.current_url)
        ok("campaign kept in the address bar", f"campaign={cid}" in d.current_url, d.current_url)
        ok("token kept in sessionStorage", d.execute_script("return sessionStorage.getItem('holdfast.shop.token')") == buyer)
        marker = f"shop-{run}"
        d.execute_script("window.__shopMarker = arguments[0]", marker)
        origin = d.execute_script("return performance.timeOrigin")
        ok("the drop is shown", wait_for(lambda: text_of(d, "drop-name") == "Gift card drop", 10) is not None,
           str(text_of(d, "drop-name")))
        ok("the drop is SCHEDULED", attr(d, "drop-status", "data-status") == "SCHEDULED", str(attr(d, "drop-status", "data-status")))
        ok("the item and what is left are shown", wait_for(lambda: text_of(d, f"item-{sku}-left") == "5", 5) is not None,
           str(text_of(d, f"item-{sku}-left")))
        ok("the signed-in buyer is named", f"shop-buyer-{run}" in (text_of(d, "who") or ""), str(text_of(d, "who")))
        ok("checkout is not possible before admission", not d.find_element(By.ID, "checkout").is_enabled())

        # --- 3. join and watch the place move
        join = wait_for(lambda: d.find_element(By.ID, "join-queue").is_enabled(), 5)
        ok("join button enabled", bool(join))
        d.find_element(By.ID, "join-queue").click()
        waiting = wait_for(lambda: attr(d, "queue-state", "data-state") == "WAITING", 10)
        ok("the buyer is WAITING", bool(waiting), str(attr(d, "queue-state", "data-state")))
        ok("fourth in the queue", text_of(d, "queue-position") == "4", str(text_of(d, "queue-position")))
        eta0, ahead0 = text_of(d, "queue-eta"), text_of(d, "queue-ahead")
        ok("an ETA is shown", bool(eta0) and eta0 not in ("–", "unknown"), str(eta0))
        moved_eta = wait_for(lambda: text_of(d, "queue-eta") != eta0 and text_of(d, "queue-eta"), 5)
        ok("the ETA moves", bool(moved_eta), f"{eta0} -> {moved_eta}")
        wait_for(lambda: text_of(d, "queue-ahead") not in (None, "–"), 5)
        ahead0 = text_of(d, "queue-ahead")
        ok("three buyers ahead", ahead0 == "3", str(ahead0))
        shot(d, out_dir, "queue.png")
        seen = []  # (ahead, let in so far, ETA) as the page shows them, each change once

        def look():
            now = (text_of(d, "queue-ahead"), text_of(d, "queue-admitted"), text_of(d, "queue-eta"))
            if not seen or seen[-1] != now:
                seen.append(now)
            return attr(d, "queue-state", "data-state") == "ADMITTED"
        admitted = wait_for(look, 40, step=0.2)
        print(f"queue as shown (ahead, let in, ETA): {seen}", flush=True)
        aheads = [int(a) for a, _, _ in seen if a and a.isdigit()]
        ok("the place moves: fewer buyers ahead as they are let in", len(set(aheads)) >= 2 and aheads == sorted(aheads, reverse=True),
           f"ahead: {aheads}")
        ok("the buyer is ADMITTED", bool(admitted), str(attr(d, "queue-state", "data-state")))
        measure("admission delivered by", attr(d, "queue-via", "data-via"))
        ok("checkout enabled once admitted", wait_for(lambda: d.find_element(By.ID, "checkout").is_enabled(), 3) is not None)
        shot(d, out_dir, "admitted.png")

        # --- 4. check out; the payment starts by itself
        Select(d.find_element(By.ID, "checkout-sku")).select_by_value(sku)
        d.find_element(By.ID, "checkout").click()
        oid = wait_for(lambda: text_of(d, "order-id"), 10)
        ok("an order is placed", bool(oid), str(oid))
        link = wait_for(lambda: displayed(d, "pay-link") and d.find_element(By.ID, "pay-link").get_attribute("href"), 10)
        ok("the provider's page is offered", bool(link) and "/pay/" in str(link), str(link))
        ok("the order is PAYING", wait_for(lambda: attr(d, "order-status", "data-status") == "PAYING", 5) is not None,
           str(attr(d, "order-status", "data-status")))
        ok("the amount is the SKU's price", text_of(d, "order-amount") == "15.00 EUR", str(text_of(d, "order-amount")))

        # --- 5a. decline on the provider's page first: the order stays payable, a new attempt starts
        shop_tab = d.current_window_handle
        before = set(d.window_handles)
        d.find_element(By.ID, "pay-link").click()
        new = wait_for(lambda: list(set(d.window_handles) - before), 5)
        if ok("the provider's page opens in a new tab (to decline)", bool(new)):
            d.switch_to.window(new[0])
            wait_for(lambda: d.find_elements(By.ID, "decline"), 10)
            d.find_element(By.ID, "decline").click()
            ok("the provider says FAILED", wait_for(lambda: attr(d, "status", "data-status") == "FAILED", 10) is not None,
               str(attr(d, "status", "data-status")))
            d.close()
            d.switch_to.window(shop_tab)
        again = wait_for(lambda: displayed(d, "start-payment"), 25)
        ok("after the decline the shop offers a new payment", bool(again),
           f"order {attr(d, 'order-status', 'data-status')} via {attr(d, 'order-status', 'data-via')}")
        measure("decline delivered by", attr(d, "order-status", "data-via"))
        if again:
            d.find_element(By.ID, "start-payment").click()
        relink = wait_for(lambda: displayed(d, "pay-link") and d.find_element(By.ID, "pay-link").get_attribute("href") != link
                          and d.find_element(By.ID, "pay-link").get_attribute("href"), 10)
        ok("a second payment page is offered", bool(relink), f"{link} -> {relink}")

        # --- 5b. pay on the provider's page, in a second tab
        before = set(d.window_handles)
        d.find_element(By.ID, "pay-link").click()
        new = wait_for(lambda: list(set(d.window_handles) - before), 5)
        ok("the provider's page opens in a new tab", bool(new))
        if new:
            d.switch_to.window(new[0])
            ok("the provider's page shows the amount",
               wait_for(lambda: text_of(d, "amount") == "15.00 EUR", 10) is not None, str(text_of(d, "amount")))
            shot(d, out_dir, "provider.png")
            d.find_element(By.ID, "pay").click()
            paid_at = time.monotonic()
            ok("the provider says SUCCEEDED", wait_for(lambda: attr(d, "status", "data-status") == "SUCCEEDED", 10) is not None,
               str(attr(d, "status", "data-status")))
            d.close()
            d.switch_to.window(shop_tab)
        else:
            paid_at = time.monotonic()

        # --- 6. the outcome arrives in the shop's tab, without a reload, pushed
        paid = wait_for(lambda: attr(d, "order-status", "data-status") == "PAID", 20, step=0.05)
        ok("the shop shows PAID", bool(paid), str(attr(d, "order-status", "data-status")))
        if paid:
            measure("pay click -> shop shows PAID (ms)", round((time.monotonic() - paid_at) * 1000))
        ok("no reload: the window marker survives", d.execute_script("return window.__shopMarker") == marker)
        ok("no navigation: the same document", d.execute_script("return performance.timeOrigin") == origin)
        how = attr(d, "order-status", "data-via")
        measure("PAID delivered by", how)
        frames = d.execute_script("return (window.__shopFrames || []).map(function (x) { return x.frame; })")
        print(f"frames received: {frames}", flush=True)
        ok("the PAID outcome was pushed over the WebSocket (not polled)", how == "pushed",
           f"data-via={how!r}; push state {attr(d, 'push-state', 'data-state')!r}")
        got = wait_for(lambda: [li.text.strip() for li in d.find_elements(By.CSS_SELECTOR, "#codes li[data-sku]")], 15)
        ok("one code shown", bool(got) and len(got) == 1 and got[0] in codes, str(got))
        s, b = http("GET", f"{url}/orders/{oid}/codes", buyer)
        ok("the shown code is the order's", s == 200 and [c["code"] for c in b.get("codes", [])] == (got or []), f"{s} {b}")
        s, b = http("GET", f"{url}/orders/{oid}", buyer)
        ok("the order is PAID on the server", s == 200 and b.get("status") == "PAID", f"{s} {b.get('status') if isinstance(b, dict) else b}")
        log = updates(d)
        print(f"updates: {log}", flush=True)
        ok("the log records PAID with its path", any(k == "order" and st == "PAID" and v for k, st, v in log))
        live = attr(d, "live", "textContent")
        ok("the live region announced the last update", bool(live) and "code" in live, str(live))
        shot(d, out_dir, "paid.png")

        # --- 7. the wire contract from the page's side: connected, ping answered
        ok("the page is connected to the push endpoint", attr(d, "push-state", "data-state") == "open",
           str(attr(d, "push-state", "data-state")))
        pong = d.execute_async_script("""
            var done = arguments[arguments.length - 1], t = sessionStorage.getItem('holdfast.shop.token');
            var ws; try { ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws?token=' + encodeURIComponent(t)); }
            catch (e) { done('no socket: ' + e.message); return; }
            var timer = setTimeout(function () { done('no pong in 5 s'); ws.close(); }, 5000);
            ws.onopen = function () { ws.send(JSON.stringify({action: 'ping'})); };
            ws.onmessage = function (m) { try { if (JSON.parse(m.data).type === 'pong') { clearTimeout(timer); done('pong'); ws.close(); } } catch (e) {} };
            ws.onerror = function () { clearTimeout(timer); done('socket error (no endpoint?)'); };""")
        ok('{"action":"ping"} is answered {"type":"pong"}', pong == "pong", str(pong))

        # --- 8. plain and accessible
        ok("every visible control has a label or a name", not unlabelled_controls(d), str(unlabelled_controls(d)))
        ok("a live region and a log for updates",
           attr(d, "live", "role") == "status" and attr(d, "updates", "role") == "log" and attr(d, "updates", "aria-live") == "polite")
        errs = [e.text for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=error]") if e.text.strip()]
        ok("no error shown", not errs, str(errs))
        ok("no JS exceptions", not js_exceptions(d), "; ".join(js_exceptions(d)))

        # --- 9. no token: the drop is visible, joining is not
        d2 = new_driver()
        d2.get(f"{url}/shop/#campaign={urllib.parse.quote(cid)}")
        ok("without a token the drop is still shown", wait_for(lambda: text_of(d2, "drop-name") == "Gift card drop", 10) is not None)
        ok("without a token joining is disabled", not d2.find_element(By.ID, "join-queue").is_enabled())
        ok("without a token the page says how to sign in", "Sign in" in (text_of(d2, "queue-help") or ""), str(text_of(d2, "queue-help")))

        # --- 10. a link naming another push host: the token goes to the served push URL only
        d3 = new_driver()
        evil = "ws://127.0.0.2:9/steal"
        d3.get(f"{url}/shop/#campaign={urllib.parse.quote(cid)}&token={urllib.parse.quote(mint(bin_path, f'shop-link-{run}'))}"
               f"&ws={urllib.parse.quote(evil, safe='')}")
        served = (url.replace("https://", "wss://", 1) if url.startswith("https://") else url.replace("http://", "ws://", 1)) + "/ws"
        wait_for(lambda: d3.execute_script("return window.__shopSocketUrl || null"), 10)
        used = d3.execute_script("return window.__shopSocketUrl || null")
        ok("#ws= to another host is not used: the socket goes to the served push URL", used == served, f"{used!r}")
        ok("the page's socket opens there", wait_for(lambda: attr(d3, "push-state", "data-state") == "open", 10) is not None,
           str(attr(d3, "push-state", "data-state")))
    finally:
        for drv in (d, d2, d3):
            if drv:
                try:
                    drv.quit()
                except Exception:  # noqa: BLE001
                    pass

    print("", flush=True)
    for name, value in MEASUREMENTS:
        print(f"  {name}: {value}")
    print(f"shop: {len(PASSES)} passed, {len(FAILURES)} failed")
    if FAILURES:
        print(f"BROWSER TEST FAILED (shop): {len(FAILURES)} failure(s): " + "; ".join(FAILURES))
        return 1
    print("BROWSER TEST PASSED (shop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
