#!/usr/bin/env bash
# Run a command against a private, freshly started local AWS emulator.
#
# Usage: scripts/with-emulator.sh CMD [ARGS...]
#   e.g. scripts/with-emulator.sh cargo test -p holdfast-tests
#
# Ensures .venv (scripts/venv.sh), starts infra/emulator/launcher.py on a free
# port (or $HOLDFAST_EMULATOR_PORT) with its output in .local/emulator.log,
# waits until it answers, then runs CMD with
#   HOLDFAST_EMULATOR_ENDPOINT=http://127.0.0.1:PORT
#   AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
#   AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
# The emulator is stopped when this script exits, whatever the reason; the
# exit status is CMD's (1 if the emulator could not be started).
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
LOG_DIR="$ROOT/.local"
LOG="$LOG_DIR/emulator.log"
READY_TIMEOUT="${HOLDFAST_EMULATOR_READY_TIMEOUT:-30}"

log() { echo "with-emulator: $*" >&2; }

bash "$ROOT/scripts/venv.sh" >/dev/null
PY="$VENV/bin/python"

PORT="${HOLDFAST_EMULATOR_PORT:-}"
if [[ -z "$PORT" ]]; then
  PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
fi

mkdir -p "$LOG_DIR"
EMU_PID=""
cleanup() {
  if [[ -n "$EMU_PID" ]] && kill -0 "$EMU_PID" 2>/dev/null; then
    kill -TERM "$EMU_PID" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$EMU_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$EMU_PID" 2>/dev/null || true
    wait "$EMU_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$PY" -u "$ROOT/infra/emulator/launcher.py" --port "$PORT" >"$LOG" 2>&1 </dev/null &
EMU_PID=$!

ENDPOINT="http://127.0.0.1:$PORT"
probe() {
  if command -v curl >/dev/null 2>&1; then
    curl -fs -o /dev/null --max-time 2 "$ENDPOINT/moto-api/"
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
  fi
}
deadline=$((SECONDS + READY_TIMEOUT))
until probe; do
  if ! kill -0 "$EMU_PID" 2>/dev/null; then
    log "emulator exited during startup; $LOG:"
    tail -n 40 "$LOG" >&2 || true
    EMU_PID=""
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    log "emulator not answering on $ENDPOINT after ${READY_TIMEOUT}s; $LOG:"
    tail -n 40 "$LOG" >&2 || true
    exit 1
  fi
  sleep 0.1
done

export HOLDFAST_EMULATOR_ENDPOINT="$ENDPOINT"
export HOLDFAST_EMULATOR_PORT="$PORT"
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
# Keep the SDKs on the env credentials above and off IMDS.
unset AWS_SESSION_TOKEN AWS_PROFILE
export AWS_EC2_METADATA_DISABLED=true

# Run CMD as a child we wait on (rather than in the foreground) so that a
# SIGTERM/SIGINT to this script is acted on at once: it is passed on to CMD,
# and the emulator is stopped once CMD has exited. CMD keeps our stdin.
CMD_PID=""
forward() {
  if [[ -n "$CMD_PID" ]]; then
    kill "-$1" "$CMD_PID" 2>/dev/null || true
  else
    exit "$2"
  fi
}
trap 'forward INT 130' INT
trap 'forward TERM 143' TERM
exec 3<&0
"$@" <&3 3<&- &
CMD_PID=$!
exec 3<&-
set +e
while :; do
  wait "$CMD_PID"
  rc=$?
  # wait returns >128 when interrupted by a trapped signal; loop until CMD
  # has really exited.
  kill -0 "$CMD_PID" 2>/dev/null || break
done
set -e
exit "$rc"
