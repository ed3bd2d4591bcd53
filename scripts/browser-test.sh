#!/usr/bin/env bash
# Real-browser tests of the operator console (console/index.html at GET /console/) and the
# storefront (shop/index.html at GET /shop/): installs headless Chromium + chromedriver (Debian)
# and selenium (into .venv) when missing, starts the local stack, mints the tokens and runs
# tests/browser/test_console.py (docs/console/*.png) and tests/browser/test_shop.py
# (docs/shop/*.png), both even when the first fails.
#
# Usage (needs the emulator):
#   bash scripts/with-emulator.sh bash scripts/browser-test.sh
# Env:
#   CARGO_TARGET_DIR            where target/debug/holdfast-local is (default ./target)
#   HOLDFAST_LOCAL_PORT         the stack's port (default 3057)
#   HOLDFAST_CONSOLE_FROM_FILE  =1: serve console/index.html through the test's own proxy
#                               (for a binary that does not embed the console yet)
#   HOLDFAST_BROWSER_TESTS      which tests to run (default "console shop")
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SELENIUM_VERSION=4.51.0
PORT="${HOLDFAST_LOCAL_PORT:-3057}"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/holdfast-local"

log() { echo "browser-test: $*" >&2; }

if [[ -z "${HOLDFAST_EMULATOR_ENDPOINT:-}" ]]; then
  log "no emulator: run as  bash scripts/with-emulator.sh bash scripts/browser-test.sh"
  exit 2
fi
if [[ ! -x "$BIN" ]]; then
  log "missing $BIN (cargo build -p holdfast-local, or set CARGO_TARGET_DIR)"
  exit 2
fi

# --- browser and driver (Debian packages; no downloaded browser builds)
if [[ ! -x /usr/bin/chromium || ! -x /usr/bin/chromedriver ]]; then
  log "installing chromium and chromium-driver"
  SUDO=""
  [[ "$(id -u)" -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# --- selenium in the project virtualenv (.venv, made by scripts/venv.sh)
bash "$ROOT/scripts/venv.sh" >/dev/null
PY="$ROOT/.venv/bin/python"
if [[ "$("$PY" -c 'import selenium; print(selenium.__version__)' 2>/dev/null || true)" != "$SELENIUM_VERSION" ]]; then
  log "installing selenium==$SELENIUM_VERSION into .venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install --quiet "selenium==$SELENIUM_VERSION"
fi

# --- the local stack
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  log "port $PORT is already in use (set HOLDFAST_LOCAL_PORT)"
  exit 2
fi
mkdir -p "$ROOT/.local"
STACK_LOG="$ROOT/.local/browser-test-stack.log"
STACK=""
stop_stack() {
  if [[ -n "$STACK" ]] && kill -0 "$STACK" 2>/dev/null; then
    kill -TERM "$STACK" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$STACK" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$STACK" 2>/dev/null || true
    wait "$STACK" 2>/dev/null || true
  fi
}
trap stop_stack EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

HOLDFAST_LOCAL_PORT="$PORT" "$BIN" run >"$STACK_LOG" 2>&1 </dev/null &
STACK=$!
URL="http://127.0.0.1:$PORT"
up=""
for _ in $(seq 600); do
  if ! kill -0 "$STACK" 2>/dev/null; then
    log "the stack exited during startup; $STACK_LOG:"
    tail -n 40 "$STACK_LOG" >&2 || true
    exit 1
  fi
  if curl -s -o /dev/null --max-time 2 "$URL/skus/none"; then up=1; break; fi
  sleep 0.1
done
if [[ -z "$up" ]]; then
  log "the stack is not answering on $URL after 60 s; $STACK_LOG:"
  tail -n 40 "$STACK_LOG" >&2 || true
  exit 1
fi
log "stack up on $URL (log: $STACK_LOG)"

export HOLDFAST_URL="$URL"
export HOLDFAST_BIN="$BIN"
ADMIN_TOKEN="$("$BIN" token --sub admin --scope stock:admin)"
BUYER_TOKEN="$("$BIN" token --sub alice --scope "orders:read orders:write")"
export ADMIN_TOKEN BUYER_TOKEN
if [[ "${HOLDFAST_CONSOLE_FROM_FILE:-}" == 1 ]]; then
  export CONSOLE_FILE="$ROOT/console/index.html"
fi

rc=0
for t in ${HOLDFAST_BROWSER_TESTS:-console shop}; do
  log "tests/browser/test_$t.py"
  "$PY" -u "$ROOT/tests/browser/test_$t.py" || rc=1
done
exit "$rc"
