#!/usr/bin/env bash
# Create/refresh the repo-local Python virtualenv (.venv) used by the emulator
# and lint tooling. Idempotent: requirements are (re)installed only when
# .venv/.stamp is missing or older than infra/emulator/requirements.txt.
#
# Usage: scripts/venv.sh            (prints the venv path on success)
# Env:   PYTHON=python3.11          interpreter used to create the venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/infra/emulator/requirements.txt"
STAMP="$VENV/.stamp"
PYTHON="${PYTHON:-python3}"

log() { echo "venv.sh: $*" >&2; }

if [[ ! -f "$REQ" ]]; then
  log "missing $REQ"
  exit 1
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  # A half-created venv (e.g. interrupted run) is discarded.
  rm -rf "$VENV"
  if ! "$PYTHON" -m venv "$VENV"; then
    log "'$PYTHON -m venv' failed (on Debian: apt-get install python3-venv)"
    rm -rf "$VENV"
    exit 1
  fi
  rm -f "$STAMP"
fi

if [[ ! -f "$STAMP" || "$REQ" -nt "$STAMP" ]]; then
  log "installing $(basename "$REQ") into .venv"
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  if ! "$VENV/bin/python" -m pip install --quiet --requirement "$REQ"; then
    log "pip install failed"
    exit 1
  fi
  touch "$STAMP"
fi

echo "$VENV"
