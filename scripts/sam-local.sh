#!/usr/bin/env bash
# `make sam-local`: the functions in SAM CLI's Lambda containers, against the local emulator.
#
#   1. `sam build` (cargo-lambda, debug, host architecture) into .aws-sam/build;
#   2. the base image from this machine's files (scripts/sam-base-image.sh);
#   3. the emulator on the Docker bridge address, with the template's resources created
#      (`holdfast-local sam-env`, which also writes the --env-vars file);
#   4. `sam local start-api` on 127.0.0.1:${HOLDFAST_SAM_PORT:-3001} until Ctrl-C, which stops
#      SAM, its containers and the emulator.
# What it does not emulate: see the README, "Local test with sam local".
set -euo pipefail
# shellcheck source=scripts/sam-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/sam-lib.sh"
trap sam_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT="${HOLDFAST_SAM_PORT:-3001}"
sam_venv --build
sam_build
sam_base_image
sam_emulator
sam_env_file
TOKEN_CMD="$CARGO_TARGET_DIR/debug/holdfast-local token"
cat >&2 <<MSG
sam: API on http://127.0.0.1:$PORT (first request per function starts its container: a few seconds)
sam:   admin token: $TOKEN_CMD --sub admin --scope stock:admin
sam:   user token:  $TOKEN_CMD --sub alice --scope "orders:read orders:write"
sam:   webhook secret: holdfast-local-webhook-secret (X-Signature, see README "API")
MSG
# Not exec: the EXIT trap must stop the emulator once SAM has stopped.
sam local start-api "${SAM_API_ARGS[@]}" --host 127.0.0.1 --port "$PORT" --warm-containers LAZY
