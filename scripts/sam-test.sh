#!/usr/bin/env bash
# `make test-sam`: the Lambda binaries in SAM CLI's containers, against the local emulator.
#
#   1. builds as `make sam-local` does (sam build, base image, emulator + resources);
#   2. `sam local invoke` of every function with each of its events/ fixtures
#      (events/<binary>.json, events/<binary>-*.json), checking what the function answered:
#      HTTP -> a statusCode below 500, SQS / stream -> an empty batchItemFailures, schedule ->
#      a JSON object; an errorType (a runtime or handler error) or no answer fails. A function
#      without a fixture fails too, so "every function" cannot shrink silently. One fixture is
#      expected to be refused (EXPECT_REJECTED: it names an order the emulator does not hold);
#   3. `sam local start-api` and the README's checkout through it (scripts/sam-checkout.py);
#   4. what SAM does not emulate, played by hand: the OrderPaid message the bus would deliver to
#      stock-events (events/stock-events.json retargeted at the paid order) through
#      `sam local invoke`, then the SKU read through start-api must show the units sold.
# Prints the wall time of each phase. Exit status 0 only if everything passed.
set -euo pipefail
# shellcheck source=scripts/sam-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/sam-lib.sh"

API_PID=""
stop_api() {
  if [[ -n "$API_PID" ]] && kill -0 "$API_PID" 2>/dev/null; then
    # SIGTERM: SAM's service handler stops and removes its warm containers (SIGINT would be
    # ignored: bash starts background jobs with SIGINT ignored).
    kill -TERM "$API_PID" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$API_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$API_PID" 2>/dev/null || true
  fi
  API_PID=""
}
trap 'stop_api; sam_cleanup' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

T0=$SECONDS
sam_venv --build
sam_build
T_BUILD=$((SECONDS - T0))
sam_base_image
sam_emulator
sam_env_file
T_SETUP=$((SECONDS - T0))

# ---- 1. every function, every fixture, through `sam local invoke` --------------------------
mapfile -t LOGICAL < <("$SAM_VENV/bin/python" -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))))' "$SAM_ENV_FILE")
[[ ${#LOGICAL[@]} -gt 0 ]] || sam_die "no functions in $SAM_ENV_FILE"
# CreateOrderFunction -> create-order (the template's naming: binary in PascalCase + Function)
binary_of() { sed -E 's/Function$//; s/([a-z0-9])([A-Z])/\1-\2/g' <<<"$1" | tr 'A-Z' 'a-z'; }
ALL_BINS=()
for id in "${LOGICAL[@]}"; do ALL_BINS+=("$(binary_of "$id")"); done
# events/<bin>.json and events/<bin>-*.json, except those of a longer binary name
# (events/reconcile-worker.json is reconcile-worker's, not reconcile's).
fixtures_of() {
  local bin="$1" f name other mine
  for f in "$SAM_ROOT/events/$bin.json" "$SAM_ROOT/events/$bin"-*.json; do
    [[ -f "$f" ]] || continue
    name="$(basename "$f" .json)"
    mine=1
    for other in "${ALL_BINS[@]}"; do
      if [[ ${#other} -gt ${#bin} && ( "$name" == "$other" || "$name" == "$other"-* ) ]]; then mine=0; fi
    done
    [[ $mine == 1 ]] && echo "$f"
  done
  return 0
}
# fixture -> the log line that shows it was refused for the expected reason.
declare -A EXPECT_REJECTED=([stock-events.json]="rejected event" [refunds.json]="rejected event")
fails=0
invoked=0
retried=0
for id in "${LOGICAL[@]}"; do
  bin="$(binary_of "$id")"
  mapfile -t fixtures < <(fixtures_of "$bin")
  if [[ ${#fixtures[@]} -eq 0 ]]; then
    echo "FAIL $id: no fixture events/$bin.json or events/$bin-*.json"
    fails=$((fails + 1))
    continue
  fi
  for f in "${fixtures[@]}"; do
    name="$(basename "$f")"
    out="$SAM_LOG_DIR/sam-invoke-${name%.json}.out"
    err="$SAM_LOG_DIR/sam-invoke-${name%.json}.log"
    invoked=$((invoked + 1))
    sam local invoke "$id" --event "$f" "${SAM_ARGS[@]}" >"$out" 2>"$err" || true
    # On a loaded machine a cold container can miss the template's 10 s Timeout before the
    # function has run at all; one more try, reported as such. Any other outcome counts.
    if grep -q "^Function '$id' timed out after" "$err"; then
      echo "     $id < $name: timed out in SAM (machine load?); one retry"
      retried=$((retried + 1))
      sam local invoke "$id" --event "$f" "${SAM_ARGS[@]}" >"$out" 2>"$err" || true
    fi
    if ! grep -q "^END RequestId" "$err"; then
      echo "FAIL $id < $name: the invocation did not complete (log: ${err#"$SAM_ROOT"/})"
      tail -n 15 "$err" | sed 's/^/    /'
      fails=$((fails + 1))
      continue
    fi
    expect="${EXPECT_REJECTED[$name]:-}"
    if verdict="$("$SAM_VENV/bin/python" - "$f" "$out" "$err" "$expect" 2>&1 <<'PY'
import json, sys
event = json.load(open(sys.argv[1]))
expect = sys.argv[4]
lines = [l for l in open(sys.argv[2]).read().splitlines() if l.strip()]
if not lines:
    sys.exit("no answer on stdout")
try:
    answer = json.loads(lines[-1])
except json.JSONDecodeError:
    sys.exit(f"answer is not JSON: {lines[-1][:200]}")
if not isinstance(answer, dict):
    sys.exit(f"answer is not an object: {lines[-1][:200]}")
if "errorType" in answer or "errorMessage" in answer:
    sys.exit(f"function error {answer.get('errorType')}: {answer.get('errorMessage')}")
if "routeKey" in event:
    status = answer.get("statusCode")
    if not isinstance(status, int) or status >= 500:
        sys.exit(f"HTTP answer without a status below 500: {lines[-1][:300]}")
    body = answer.get("body") or ""
    try:
        code = json.loads(body).get("code", "")
    except (ValueError, AttributeError):
        code = ""
    print(f"statusCode {status} {code}".rstrip())
elif "Records" in event:
    failures = answer.get("batchItemFailures")
    if failures is None:
        sys.exit(f"no batchItemFailures in {lines[-1][:300]}")
    ids = {r.get("messageId") or r.get("eventID") for r in event["Records"]}
    if expect:
        if not failures or not {f.get("itemIdentifier") for f in failures} <= ids:
            sys.exit(f"expected a refusal ({expect}), got batchItemFailures {failures}")
        if expect not in open(sys.argv[3]).read():
            sys.exit(f"refused, but not for the expected reason ({expect}); see the log")
        print(f"batchItemFailures {len(failures)} of {len(ids)}, as expected: {expect}")
    elif failures:
        sys.exit(f"batchItemFailures {failures}")
    else:
        print(f"batchItemFailures [] ({len(event['Records'])} records)")
else:
    print("answer " + lines[-1][:120])
PY
)"; then
      echo "ok   $id < $name: $verdict"
    else
      echo "FAIL $id < $name: $verdict (log: ${err#"$SAM_ROOT"/})"
      fails=$((fails + 1))
    fi
  done
done
T_INVOKE=$((SECONDS - T0 - T_SETUP))
echo "sam local invoke: $invoked fixtures over ${#LOGICAL[@]} functions, $fails failed, $retried retried after a timeout (${T_INVOKE} s)"

# ---- 2. the README's checkout through `sam local start-api` ---------------------------------
PORT="${HOLDFAST_SAM_PORT:-}"
if [[ -z "$PORT" ]]; then
  PORT="$("$SAM_VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi
API_LOG="$SAM_LOG_DIR/sam-start-api.log"
sam local start-api "${SAM_API_ARGS[@]}" --host 127.0.0.1 --port "$PORT" --warm-containers LAZY \
  >"$API_LOG" 2>&1 </dev/null &
API_PID=$!
deadline=$((SECONDS + 60))
# Any HTTP answer means SAM's server is up (a missing route is SAM's 403).
until curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; do
  kill -0 "$API_PID" 2>/dev/null || { tail -n 20 "$API_LOG" >&2; sam_die "sam local start-api exited"; }
  ((SECONDS < deadline)) || { tail -n 20 "$API_LOG" >&2; sam_die "sam local start-api not answering"; }
  sleep 0.5
done
T_API0=$SECONDS
checkout=0
STATE="$SAM_DIR/checkout.json"
rm -f "$STATE"
"$SAM_VENV/bin/python" "$SAM_ROOT/scripts/sam-checkout.py" "http://127.0.0.1:$PORT" \
  "$CARGO_TARGET_DIR/debug/holdfast-local" "$STATE" || checkout=1
if [[ $checkout == 0 ]]; then
  # The bus -> queue -> stock-events leg, by hand: the fixture's OrderPaid, for the paid order.
  PAID_EVENT="$SAM_DIR/stock-events-paid.json"
  "$SAM_VENV/bin/python" - "$SAM_ROOT/events/stock-events.json" "$STATE" "$PAID_EVENT" <<'PY'
import json, sys
event, state = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for rec in event["Records"]:
    body = json.loads(rec["body"])
    d = body["detail"]
    d.update({k: state[k] for k in ("order_id", "user_id", "amount", "currency", "payment_id")})
    d["lines"] = [{"sku": state["sku"], "quantity": state["quantity"]}]
    if state.get("version") is not None:
        d["version"] = state["version"]
    rec["body"] = json.dumps(body)
json.dump(event, open(sys.argv[3], "w"))
PY
  if sam local invoke StockEventsFunction --event "$PAID_EVENT" "${SAM_ARGS[@]}" \
    >"$SAM_LOG_DIR/sam-invoke-stock-events-paid.out" 2>"$SAM_LOG_DIR/sam-invoke-stock-events-paid.log" &&
    "$SAM_VENV/bin/python" - "$SAM_LOG_DIR/sam-invoke-stock-events-paid.out" "$STATE" "http://127.0.0.1:$PORT" <<'PY'
import json, sys, urllib.request
answer = json.loads([l for l in open(sys.argv[1]).read().splitlines() if l.strip()][-1])
state = json.load(open(sys.argv[2]))
if answer.get("batchItemFailures") != []:
    sys.exit(f"stock-events did not take the OrderPaid: {answer}")
with urllib.request.urlopen(f"{sys.argv[3]}/skus/{state['sku']}", timeout=120) as r:
    view = json.loads(r.read())
want = {"available": 8, "locked": 0, "sold": 2}
got = {k: view.get(k) for k in want}
if got != want:
    sys.exit(f"after stock-events, GET /skus/{state['sku']} shows {got}, wanted {want}")
print(f"  stock-events (sam local invoke) sold the units: GET /skus/{state['sku']} {got}")
PY
  then :; else
    echo "FAIL stock-events on the paid order (log: .local/sam-invoke-stock-events-paid.log)"
    checkout=1
  fi
fi
if [[ $checkout != 0 ]]; then
  echo "FAIL checkout through sam local start-api (log: ${API_LOG#"$SAM_ROOT"/})"
  tail -n 30 "$API_LOG" | sed 's/^/    /'
fi
T_API=$((SECONDS - T_API0))
stop_api

echo "test-sam: build ${T_BUILD} s, setup $((T_SETUP - T_BUILD)) s, invoke ${T_INVOKE} s, start-api checkout ${T_API} s, total $((SECONDS - T0)) s"
if [[ $fails != 0 || $checkout != 0 ]]; then
  echo "test-sam: FAILED ($fails invoke failures, checkout $([[ $checkout == 0 ]] && echo ok || echo failed))"
  exit 1
fi
echo "test-sam: ok"
