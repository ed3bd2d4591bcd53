# shellcheck shell=bash
# Shared steps of `make sam-validate`, `make sam-local` and `make test-sam` (sourced, not run).
#
#   sam_venv [--build]   SAM CLI into .venv (infra/emulator/requirements-sam.txt); --build adds
#                        cargo-lambda (requirements-package.txt). Stamps: .venv/.stamp-sam{,-build}.
#   sam_build            `sam build` of every function: debug mode, host architecture
#                        (Architecture=x86_64 on x86_64 while AWS stays arm64), into .aws-sam/.
#   sam_base_image       the function image base, from this machine's own files
#                        (scripts/sam-base-image.sh); sets SAM_BASE_IMAGE.
#   sam_emulator         the emulator on the Docker bridge address (never a public interface),
#                        stopped when the calling script exits; sets EMU_ENDPOINT.
#   sam_env_file         the template's resources in the emulator + the --env-vars file
#                        (.aws-sam/env.json, `holdfast-local sam-env`).
#   SAM_ARGS             what every `sam local` command gets: template, parameters, image, env.
#
# Everything SAM writes stays in .aws-sam/ (build, cache, env file, base image rootfs) and
# .local/ (logs).

SAM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SAM_VENV="$SAM_ROOT/.venv"
SAM_DIR="$SAM_ROOT/.aws-sam"
SAM_LOG_DIR="$SAM_ROOT/.local"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SAM_ROOT/target}"
# No telemetry or update checks (and no network for them); SAM runs offline here.
export SAM_CLI_TELEMETRY=0
export SAM_CLI_CONTAINER_CONNECTION_TIMEOUT="${SAM_CLI_CONTAINER_CONNECTION_TIMEOUT:-60}"
# The emulator takes any credentials; these never leave the machine. Keep the SDKs off IMDS.
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset AWS_SESSION_TOKEN AWS_PROFILE

sam_log() { echo "sam: $*" >&2; }
sam_die() {
  sam_log "error: $*"
  exit 1
}

case "$(uname -m)" in
  x86_64 | amd64) SAM_ARCH=x86_64 ;;
  aarch64 | arm64) SAM_ARCH=arm64 ;;
  *) sam_die "unsupported machine $(uname -m)" ;;
esac
SAM_BASE_IMAGE="holdfast-sam-base:$SAM_ARCH"
SAM_BUILT_TEMPLATE="$SAM_DIR/build/template.yaml"
SAM_HTTP_TEMPLATE="$SAM_DIR/build/template-http.yaml"
SAM_ENV_FILE="$SAM_DIR/env.json"
mkdir -p "$SAM_DIR" "$SAM_LOG_DIR"

_sam_pip() { # _sam_pip STAMP REQ...
  local stamp="$1" req
  shift
  # shellcheck source=scripts/venv-lib.sh
  source "$SAM_ROOT/scripts/venv-lib.sh"
  if ! stamp_current "$stamp" "$@"; then
    sam_log "installing $(for r in "$@"; do basename "$r"; done | tr '\n' ' ')into .venv"
    local args=()
    for req in "$@"; do args+=(--requirement "$req"); done
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$(readlink -f "$SAM_VENV")/bin/python" -m pip install --quiet "${args[@]}" ||
      sam_die "pip install failed"
    stamp_write "$stamp" "$@"
  fi
}

sam_venv() {
  bash "$SAM_ROOT/scripts/venv.sh" >/dev/null || sam_die "scripts/venv.sh failed"
  _sam_pip "$SAM_VENV/.stamp-sam" "$SAM_ROOT/infra/emulator/requirements-sam.txt"
  if [[ "${1:-}" == "--build" ]]; then
    _sam_pip "$SAM_VENV/.stamp-sam-build" "$SAM_ROOT/infra/emulator/requirements-package.txt"
  fi
  # `cargo lambda` (the builder SAM calls) and `sam` itself from the venv.
  export PATH="$SAM_VENV/bin:$PATH"
}

sam_build() {
  command -v docker >/dev/null || sam_die "sam local needs Docker (docker not on PATH)"
  mkdir -p "$SAM_DIR"
  local t0=$SECONDS
  sam_log "sam build (debug, $SAM_ARCH) -> ${SAM_DIR#"$SAM_ROOT"/}/build"
  # Debug mode: no --release (fast to build; the binaries are for local runs, not deploys).
  # CARGO_LAMBDA_COMPILER=cargo: the host toolchain links against the host glibc, which is the
  # glibc the base image carries (no zig cross-linking needed for a native build).
  (cd "$SAM_ROOT" && SAM_BUILD_MODE=debug CARGO_LAMBDA_COMPILER=cargo sam build \
    --build-dir "$SAM_DIR/build" --cache-dir "$SAM_DIR/cache" \
    --parameter-overrides "Architecture=$SAM_ARCH") >"$SAM_LOG_DIR/sam-build.log" 2>&1 || {
    tail -n 40 "$SAM_LOG_DIR/sam-build.log" >&2
    sam_die "sam build failed (full log: .local/sam-build.log)"
  }
  sam_log "sam build done in $((SECONDS - t0)) s"
}

sam_base_image() {
  bash "$SAM_ROOT/scripts/sam-base-image.sh" "$SAM_BASE_IMAGE" "$SAM_DIR/build"/*/bootstrap ||
    sam_die "could not build the base image"
}

# The address function containers reach the host on: the default bridge's gateway, which the
# default bridge often leaves out of its IPAM config; then the bridge interface's own address.
sam_bridge_ip() {
  local gw dev
  gw="$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null | head -n1)"
  if [[ -z "$gw" ]]; then
    dev="$(docker network inspect bridge --format '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null)"
    gw="$(ip -4 -o addr show dev "${dev:-docker0}" 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')"
  fi
  echo "$gw"
}

_SAM_EMU_PID=""
_sam_stop_emulator() {
  if [[ -n "$_SAM_EMU_PID" ]] && kill -0 "$_SAM_EMU_PID" 2>/dev/null; then
    kill -TERM "$_SAM_EMU_PID" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$_SAM_EMU_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$_SAM_EMU_PID" 2>/dev/null || true
  fi
}

sam_emulator() {
  local ip port
  ip="$(sam_bridge_ip)"
  [[ -n "$ip" ]] || sam_die "no Docker bridge network gateway found (docker network inspect bridge)"
  # Bound to the bridge address only: reachable from this host and its containers, not from
  # the network. A free port there unless HOLDFAST_SAM_EMULATOR_PORT says which.
  port="${HOLDFAST_SAM_EMULATOR_PORT:-}"
  if [[ -z "$port" ]]; then
    port="$("$SAM_VENV/bin/python" -c "import socket; s=socket.socket(); s.bind(('$ip', 0)); print(s.getsockname()[1])")"
  fi
  mkdir -p "$SAM_LOG_DIR"
  "$SAM_VENV/bin/python" -u "$SAM_ROOT/infra/emulator/launcher.py" --host "$ip" --port "$port" \
    >"$SAM_LOG_DIR/sam-emulator.log" 2>&1 </dev/null &
  _SAM_EMU_PID=$!
  EMU_ENDPOINT="http://$ip:$port"
  local deadline=$((SECONDS + 30))
  until curl -fs -o /dev/null --max-time 2 "$EMU_ENDPOINT/moto-api/"; do
    kill -0 "$_SAM_EMU_PID" 2>/dev/null || {
      tail -n 20 "$SAM_LOG_DIR/sam-emulator.log" >&2
      sam_die "emulator exited during startup"
    }
    ((SECONDS < deadline)) || sam_die "emulator not answering on $EMU_ENDPOINT"
    sleep 0.2
  done
  # SAM asks STS for the account id before every invoke; with no AWS reachable that call hangs
  # ~10 s to fail. The emulator answers it at once (boto3 reads AWS_ENDPOINT_URL_<SERVICE>).
  export AWS_ENDPOINT_URL_STS="$EMU_ENDPOINT"
  sam_log "emulator on $EMU_ENDPOINT (log .local/sam-emulator.log)"
}

sam_env_file() {
  (cd "$SAM_ROOT" && cargo build --quiet -p holdfast-local --bin holdfast-local) || sam_die "building holdfast-local failed"
  "$CARGO_TARGET_DIR/debug/holdfast-local" sam-env --endpoint "$EMU_ENDPOINT" --container-endpoint "$EMU_ENDPOINT" \
    --template "$SAM_ROOT/template.yaml" --prefix sam --out "$SAM_ENV_FILE" || sam_die "creating the resources failed"
  SAM_ARGS=(--template "$SAM_BUILT_TEMPLATE" --parameter-overrides "Architecture=$SAM_ARCH"
    --env-vars "$SAM_ENV_FILE" --invoke-image "$SAM_BASE_IMAGE" --skip-pull-image)
  # `sam local start-api` serves HTTP APIs only and fails on a WebSocket API's route keys
  # ($connect, ping): it gets the built template without the WebSocket API and its routes,
  # integration and stage (the push API is served by `make run`'s local stack, docs/push.md).
  "$SAM_VENV/bin/python" - "$SAM_BUILT_TEMPLATE" "$SAM_HTTP_TEMPLATE" <<'PY' || sam_die "writing the HTTP-only template failed"
import sys
from samcli.yamlhelper import yaml_parse, yaml_dump
src, dst = sys.argv[1], sys.argv[2]
t = yaml_parse(open(src).read())
res = t["Resources"]
ws = {k for k, r in res.items() if r.get("Type") == "AWS::ApiGatewayV2::Api"
      and r.get("Properties", {}).get("ProtocolType") == "WEBSOCKET"}
def api_of(r):
    a = r.get("Properties", {}).get("ApiId")
    return a.get("Ref") if isinstance(a, dict) else a
# the API itself too: SAM reads a template with any AWS::ApiGatewayV2::Api through its CloudFormation
# provider, which then ignores the AWS::Serverless::HttpApi
drop = [k for k, r in res.items() if r.get("Type", "").startswith("AWS::ApiGatewayV2::") and api_of(r) in ws]
assert ws and drop, "no WebSocket API routes found: update scripts/sam-lib.sh"
drop += sorted(ws)
for k in drop:
    del res[k]
open(dst, "w").write(yaml_dump(t))
PY
  SAM_API_ARGS=(--template "$SAM_HTTP_TEMPLATE" "${SAM_ARGS[@]:2}")
}

# Called by the scripts' EXIT trap.
sam_cleanup() {
  _sam_stop_emulator
}
