#!/usr/bin/env bash
# Create/refresh the Python virtualenv (.venv) used by the emulator and lint
# tooling. Idempotent: requirements are (re)installed only when .venv/.stamp
# does not record the current infra/emulator/requirements.txt. .venv is a
# symlink into a cache outside the clone (scripts/venv-lib.sh).
#
# Usage: scripts/venv.sh            (prints the venv path on success)
# Env:   PYTHON=python3.11          interpreter used to create the venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/infra/emulator/requirements.txt"
STAMP="$VENV/.stamp"
PYTHON="${PYTHON:-python3}"
# shellcheck source=scripts/venv-lib.sh
source "$ROOT/scripts/venv-lib.sh"

log() { echo "venv.sh: $*" >&2; }

if [[ ! -f "$REQ" ]]; then
  log "missing $REQ"
  exit 1
fi

REAL="$(venv_link "$VENV" "$REQ")"
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $REAL"
  # A half-created venv (e.g. interrupted run) is discarded.
  rm -rf "$REAL"
  if ! "$PYTHON" -m venv "$REAL"; then
    log "'$PYTHON -m venv' failed (on Debian: apt-get install python3-venv)"
    rm -rf "$REAL"
    exit 1
  fi
  rm -f "$STAMP"
fi

if ! stamp_current "$STAMP" "$REQ"; then
  log "installing $(basename "$REQ") into .venv"
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  if ! "$REAL/bin/python" -m pip install --quiet --requirement "$REQ"; then
    log "pip install failed"
    exit 1
  fi
  stamp_write "$STAMP" "$REQ"
fi

echo "$VENV"
