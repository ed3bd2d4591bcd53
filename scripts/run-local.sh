#!/usr/bin/env bash
# `make run`: the emulator and the local stack; Ctrl-C or SIGTERM stops both.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PORT="${HOLDFAST_LOCAL_PORT:-3000}"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/holdfast-local"
exec bash scripts/with-emulator.sh bash -c '
  "'"$BIN"'" run &
  STACK=$!
  trap "kill -TERM $STACK 2>/dev/null; wait $STACK 2>/dev/null" EXIT INT TERM
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:'"$PORT"'/skus/none" && break; sleep 0.1; done
  ADMIN=$("'"$BIN"'" token --sub admin --scope stock:admin)
  BUYER=$("'"$BIN"'" token --sub alice --scope "orders:read orders:write")
  cat <<MSG

Holdfast is running on http://127.0.0.1:'"$PORT"'  (emulator: $HOLDFAST_EMULATOR_ENDPOINT)

  console (paste \$ADMIN): http://127.0.0.1:'"$PORT"'/console/
  shop (as alice):         http://127.0.0.1:'"$PORT"'/shop/#token=$BUYER&campaign=<campaign id>   (docs/shop.md)
  pushed outcomes:         ws://127.0.0.1:'"$PORT"'/ws?token=$BUYER   (send {"action":"ping"}; docs/push.md)

  # tokens (HS256, LOCAL_JWT_SECRET): target/debug/holdfast-local token --sub alice --scope "orders:read orders:write" (admin: --scope stock:admin)
  export ADMIN=$ADMIN
  export BUYER=$BUYER
  curl -s -XPUT  http://127.0.0.1:'"$PORT"'/admin/skus/tee -H "authorization: Bearer \$ADMIN" -d '"'"'{"name":"T-shirt","price":1999,"currency":"EUR","shards":4}'"'"'
  curl -s -XPOST http://127.0.0.1:'"$PORT"'/admin/skus/tee/adjustments -H "authorization: Bearer \$ADMIN" -d '"'"'{"adjustment_id":"a1","delta":100,"reason":"first delivery"}'"'"'
  curl -s http://127.0.0.1:'"$PORT"'/skus/tee
  curl -s -XPOST http://127.0.0.1:'"$PORT"'/orders -H "authorization: Bearer \$BUYER" -H "idempotency-key: checkout-1" -d '"'"'{"items":[{"sku":"tee","quantity":1}]}'"'"'

Ctrl-C stops the stack and the emulator.
MSG
  wait $STACK
'
