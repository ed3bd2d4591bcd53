#!/usr/bin/env bash
# `make load`: the flash-sale load scenario (load/locustfile.py) with locust, in its own
# virtualenv (.local/venv-load, from load/requirements.txt); the report goes to bench/LOAD.md.
#
# Local (default): a fresh emulator and local stack on loopback ports, a hot SKU and a small
# catalogue seeded, buyer tokens minted; bounded in checkouts and time; everything stopped after.
#
# Deployed: HOLDFAST_URL=https://… HOLDFAST_TOKENS=file (one buyer JWT per line, scopes
# orders:read orders:write) HOLDFAST_WEBHOOK_SECRET=… (the payment webhook secret; unset: no one
# pays) [HOLDFAST_ADMIN_TOKEN=… to create the SKUs first] bash scripts/load.sh
#
# Knobs: HOLDFAST_LOAD_USERS (50) HOLDFAST_LOAD_SPAWN_RATE (10/s: the ramp) HOLDFAST_LOAD_TIME
# (120s) HOLDFAST_MAX_CHECKOUTS (1500) HOLDFAST_LOAD_UNITS (hot SKU units, 200) HOLDFAST_LOAD_BUYERS
# (distinct buyers, 1000) HOLDFAST_LOAD_REPORT (bench/LOAD.md)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.local/venv-load"
REQ="$ROOT/load/requirements.txt"
mkdir -p "$ROOT/.local"
if [[ ! -x "$VENV/bin/locust" || "$REQ" -nt "$VENV/.stamp" ]]; then
  echo "load.sh: installing $(basename "$REQ") into .local/venv-load" >&2
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet --requirement "$REQ"
  touch "$VENV/.stamp"
fi

export HOLDFAST_LOAD_USERS="${HOLDFAST_LOAD_USERS:-50}"
export HOLDFAST_LOAD_SPAWN_RATE="${HOLDFAST_LOAD_SPAWN_RATE:-10}"
export HOLDFAST_LOAD_TIME="${HOLDFAST_LOAD_TIME:-120s}"
export HOLDFAST_MAX_CHECKOUTS="${HOLDFAST_MAX_CHECKOUTS:-1500}"
export HOLDFAST_LOAD_UNITS="${HOLDFAST_LOAD_UNITS:-200}"
export HOLDFAST_LOAD_BUYERS="${HOLDFAST_LOAD_BUYERS:-1000}"
export HOLDFAST_LOAD_REPORT="${HOLDFAST_LOAD_REPORT:-bench/LOAD.md}"
export HOLDFAST_HOT_SKU="${HOLDFAST_HOT_SKU:-load-hot}"
export HOLDFAST_SKUS="${HOLDFAST_SKUS:-load-a,load-b,load-c,load-d,load-e}"
export HOLDFAST_LOAD_OUT="$ROOT/.local/load-counts.json"
export LOAD_VENV="$VENV"

# Creates the SKUs with an admin token ($1 = base URL, $2 = token); an existing SKU keeps its stock.
seed() {
  local url=$1 admin=$2 run
  run=$(date +%s)
  for sku in "$HOLDFAST_HOT_SKU" ${HOLDFAST_SKUS//,/ }; do
    local units=1000
    [[ "$sku" == "$HOLDFAST_HOT_SKU" ]] && units=$HOLDFAST_LOAD_UNITS
    curl -fsS -o /dev/null -XPUT "$url/admin/skus/$sku" -H "authorization: Bearer $admin" \
      -d '{"name":"'"$sku"'","price":1999,"currency":"EUR","shards":8,"per_user_limit":2}' || true
    curl -fsS -o /dev/null -XPOST "$url/admin/skus/$sku/adjustments" -H "authorization: Bearer $admin" \
      -d '{"adjustment_id":"load-'"$run"'","delta":'"$units"',"reason":"load run"}'
  done
}
export -f seed

# Runs locust headless against $HOLDFAST_URL and writes the report ($1 = what was run).
swarm() {
  local prefix="$ROOT/.local/load"
  rm -f "$prefix"_*.csv "$HOLDFAST_LOAD_OUT"
  "$LOAD_VENV/bin/locust" -f "$ROOT/load/locustfile.py" --headless --only-summary \
    -u "$HOLDFAST_LOAD_USERS" -r "$HOLDFAST_LOAD_SPAWN_RATE" -t "$HOLDFAST_LOAD_TIME" \
    --csv "$prefix" --exit-code-on-error 0 2>"$ROOT/.local/load-locust.log" || true
  "$LOAD_VENV/bin/python" "$ROOT/load/report.py" "$prefix" "$HOLDFAST_LOAD_OUT" "$ROOT/$HOLDFAST_LOAD_REPORT" "$1"
}
export -f swarm
export ROOT

if [[ -n "${HOLDFAST_URL:-}" ]]; then
  : "${HOLDFAST_TOKENS:?HOLDFAST_TOKENS: a file with one buyer JWT per line}"
  [[ -n "${HOLDFAST_ADMIN_TOKEN:-}" ]] && seed "$HOLDFAST_URL" "$HOLDFAST_ADMIN_TOKEN"
  swarm "Against $HOLDFAST_URL: $HOLDFAST_LOAD_USERS users spawned at $HOLDFAST_LOAD_SPAWN_RATE/s, at most $HOLDFAST_LOAD_TIME and $HOLDFAST_MAX_CHECKOUTS checkouts"
  exit 0
fi

: "${CARGO_TARGET_DIR:=$ROOT/target}"
export CARGO_TARGET_DIR
cargo build -q -p holdfast-local --bin holdfast-local
BIN="$CARGO_TARGET_DIR/debug/holdfast-local"
export BIN
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
export HOLDFAST_LOCAL_PORT="$PORT" HOLDFAST_QUIET_METRICS=1
exec bash scripts/with-emulator.sh bash -c '
  set -euo pipefail
  "$BIN" run >"$ROOT/.local/load-stack.log" 2>&1 &
  STACK=$!
  trap "kill -TERM $STACK 2>/dev/null; wait $STACK 2>/dev/null || true" EXIT INT TERM
  URL="http://127.0.0.1:$HOLDFAST_LOCAL_PORT"
  for _ in $(seq 300); do curl -s -o /dev/null "$URL/skus/none" && break; sleep 0.1; done
  seed "$URL" "$("$BIN" token --sub load-admin --scope stock:admin)"
  TOKENS="$ROOT/.local/load-tokens.txt"
  : >"$TOKENS"
  for i in $(seq "$HOLDFAST_LOAD_BUYERS"); do "$BIN" token --sub "buyer-$i" --scope "orders:read orders:write" --ttl 7200 >>"$TOKENS"; done
  export HOLDFAST_URL="$URL" HOLDFAST_TOKENS="$TOKENS" HOLDFAST_WEBHOOK_SECRET=holdfast-local-webhook-secret
  swarm "A fresh local stack on this $(nproc)-core machine (moto emulator, debug build; loopback only): $HOLDFAST_LOAD_USERS users spawned at $HOLDFAST_LOAD_SPAWN_RATE/s, at most $HOLDFAST_LOAD_TIME and $HOLDFAST_MAX_CHECKOUTS checkouts; hot SKU $HOLDFAST_HOT_SKU ($HOLDFAST_LOAD_UNITS units on 8 shards, 2 per buyer) takes 80% of buyers, 5 others 1,000 units each; 70% of orders paid"
'
