#!/usr/bin/env bash
# `make checkov`: checkov on template.yaml from its own pinned virtualenv (.venv-checkov).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-checkov"
REQ="$ROOT/infra/emulator/requirements-checkov.txt"
STAMP="$VENV/.stamp"
# shellcheck source=scripts/venv-lib.sh
source "$ROOT/scripts/venv-lib.sh"
REAL="$(venv_link "$VENV" "$REQ")"
if [[ ! -x "$VENV/bin/python" ]]; then
  rm -rf "$REAL"
  "${PYTHON:-python3}" -m venv "$REAL"
fi
if ! stamp_current "$STAMP" "$REQ"; then
  echo "checkov.sh: installing $(basename "$REQ") into .venv-checkov" >&2
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$REAL/bin/python" -m pip install --quiet --requirement "$REQ"
  stamp_write "$STAMP" "$REQ"
fi
cd "$ROOT"
# --skip-download: no call home for guideline links (the machine may have no route there)
exec "$VENV/bin/checkov" --config-file .checkov.yaml -f template.yaml -f infra/edge-waf.yaml --quiet --skip-download
