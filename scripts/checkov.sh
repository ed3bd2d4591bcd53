#!/usr/bin/env bash
# `make checkov`: checkov on template.yaml from its own pinned virtualenv (.venv-checkov).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-checkov"
REQ="$ROOT/infra/emulator/requirements-checkov.txt"
STAMP="$VENV/.stamp"
if [[ ! -x "$VENV/bin/python" ]]; then
  rm -rf "$VENV"
  "${PYTHON:-python3}" -m venv "$VENV"
fi
if [[ ! -f "$STAMP" || "$REQ" -nt "$STAMP" ]]; then
  echo "checkov.sh: installing $(basename "$REQ") into .venv-checkov" >&2
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet --requirement "$REQ"
  touch "$STAMP"
fi
cd "$ROOT"
# --skip-download: no call home for guideline links (the machine may have no route there)
exec "$VENV/bin/checkov" --config-file .checkov.yaml -f template.yaml -f infra/edge-waf.yaml --quiet --skip-download
