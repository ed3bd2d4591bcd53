#!/usr/bin/env bash
# `make package`: build every Lambda function for deployment and check the binaries.
#
#   1. installs cargo-lambda (+ ziglang, which its wheel requires) from PyPI into .venv,
#      pinned in infra/emulator/requirements-package.txt (idempotent: .venv/.stamp-package);
#   2. builds the function crates only (one -p per dir under functions/), never the whole
#      workspace: with the `infra`/`tests` crates in the same cargo invocation, cargo's feature
#      unification would switch on holdfast's `faults` feature in the Lambda binaries too;
#   3. lays them out as cargo-lambda does: $CARGO_TARGET_DIR/lambda/<name>/bootstrap,
#      and prints function -> size;
#   4. fails if any bootstrap contains a fault-injection string (the point names of
#      core/src/faults.rs `ALL`, or the "unknown point" parse error of the faults build);
#   5. fails if any bootstrap is over the size limit (6,000,000 bytes, DESIGN's ≤ 6 MB, met by all
#      sixteen since the SDK's HTTP client is ours: README, "Deploying with SAM"; each links only
#      the ports its main wires: docs/architecture.md, "How a function is wired").
#
# Usage:
#   bash scripts/package.sh                     build + size table + fault-string check
#   bash scripts/package.sh --check-faults BIN  only the fault-string check, on any binary(ies);
#                                               exit 1 if found (e.g. target/debug/holdfast-local,
#                                               which is built with faults, to see the check fail)
#   bash scripts/package.sh --check-size BIN    only the size check, on any binary(ies); exit 1 if
#                                               one is over the limit (e.g. target/debug/holdfast-local)
# Env:
#   CARGO_TARGET_DIR=...          default: <repo>/target
#   HOLDFAST_ARM64=1              build for aarch64-unknown-linux-gnu (Lambda arm64/Graviton);
#                                 needs that Rust target installed (`rustup target add
#                                 aarch64-unknown-linux-gnu`); zig does the cross-linking.
#   HOLDFAST_PACKAGE_BUILDER=cargo  skip cargo-lambda: plain `cargo build --release -p ...` and
#                                 copy each binary to target/lambda/<name>/bootstrap (host arch only).
#                                 Used automatically, with a warning, if cargo-lambda can't be installed.
#   HOLDFAST_MAX_BOOTSTRAP_BYTES=N  the size limit (default 6000000); only to try the check
#   CARGO_LAMBDA_COMPILER=cargo   cargo-lambda backend (default cargo-zigbuild; `cargo` = the
#                                 host toolchain's linker, no zig; native x86_64 only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
CARGO="${CARGO:-cargo}"
VENV="$ROOT/.venv"
REQ="$ROOT/infra/emulator/requirements-package.txt"
STAMP="$VENV/.stamp-package"
LAMBDA_DIR="$CARGO_TARGET_DIR/lambda"

log() { echo "package.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# --- fault-string check ------------------------------------------------------------------
# Strings that only a `faults` build contains: every point name listed in faults.rs (the
# quoted "<fn>.<point>" constants) and the parse error for an unknown point. The error text is
# two literals at run time ("HOLDFAST_FAULTS: {0}" and "unknown point {name}"), so the binary
# holds "unknown point " -- with the space: the unwinder's "unknown pointer encoding" is in
# every Rust binary and must not match.
fault_patterns() {
  grep -o '"[a-z-]*\.[a-z-]*"' "$ROOT/core/src/faults.rs" | tr -d '"' | sort -u
  echo "unknown point "
}

# check_faults BIN...: prints one line per binary; returns 1 if any contains a pattern.
check_faults() {
  local pats bad=0 bin hits
  pats="$(fault_patterns)"
  [[ $(grep -c . <<<"$pats") -ge 2 ]] || die "no fault point names found in core/src/faults.rs"
  for bin in "$@"; do
    [[ -f "$bin" ]] || die "no such binary: $bin"
    # grep -a: treat the ELF as text; -F fixed strings; -o print each hit.
    hits="$(LC_ALL=C grep -a -o -F -f <(printf '%s\n' "$pats") "$bin" | sort | uniq -c | sort -rn || true)"
    if [[ -n "$hits" ]]; then
      bad=1
      echo "FAULT STRINGS FOUND in ${bin#"$ROOT"/}:"
      sed 's/^/    /' <<<"$hits"
    else
      echo "clean: ${bin#"$ROOT"/} (none of $(grep -c . <<<"$pats") fault strings)"
    fi
  done
  return "$bad"
}

# --- size check --------------------------------------------------------------------------
MAX_BYTES="${HOLDFAST_MAX_BOOTSTRAP_BYTES:-6000000}"
[[ "$MAX_BYTES" =~ ^[0-9]+$ ]] || die "HOLDFAST_MAX_BOOTSTRAP_BYTES must be a number of bytes, not '$MAX_BYTES'"

# check_size BIN...: prints one line per binary over the limit; returns 1 if any is.
check_size() {
  local bad=0 bin size
  for bin in "$@"; do
    [[ -f "$bin" ]] || die "no such binary: $bin"
    size="$(stat -c %s "$bin")"
    if (( size > MAX_BYTES )); then
      bad=1
      echo "OVER THE SIZE LIMIT: ${bin#"$ROOT"/} is $size bytes (limit $MAX_BYTES)"
    fi
  done
  (( bad == 0 )) && echo "all $# within $MAX_BYTES bytes"
  return "$bad"
}

if [[ "${1:-}" == "--check-size" ]]; then
  shift
  [[ $# -gt 0 ]] || die "--check-size needs at least one binary"
  check_size "$@"
  exit $?
fi

if [[ "${1:-}" == "--check-faults" ]]; then
  shift
  [[ $# -gt 0 ]] || die "--check-faults needs at least one binary"
  check_faults "$@"
  exit $?
fi
[[ $# -eq 0 ]] || die "unknown arguments: $* (see the header of scripts/package.sh)"

# --- the function crates -----------------------------------------------------------------
FUNCS=()
for d in "$ROOT"/functions/*/; do
  [[ -f "$d/Cargo.toml" ]] || continue
  FUNCS+=("$(basename "$d")")
done
[[ ${#FUNCS[@]} -gt 0 ]] || die "no function crates under functions/"
PKG_ARGS=()
for f in "${FUNCS[@]}"; do PKG_ARGS+=(-p "$f"); done

# --- target ------------------------------------------------------------------------------
HOST_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
if [[ "${HOLDFAST_ARM64:-0}" == "1" ]]; then
  TRIPLE=aarch64-unknown-linux-gnu
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$TRIPLE"; then
    die "HOLDFAST_ARM64=1 needs the $TRIPLE Rust target (rustup target add $TRIPLE); installed: $(rustup target list --installed | tr '\n' ' ')"
  fi
else
  TRIPLE="$HOST_TRIPLE"
fi

# --- tooling -----------------------------------------------------------------------------
BUILDER="${HOLDFAST_PACKAGE_BUILDER:-cargo-lambda}"
if [[ "$BUILDER" == "cargo-lambda" ]]; then
  bash "$ROOT/scripts/venv.sh" >/dev/null || die "scripts/venv.sh failed"
  if [[ ! -f "$STAMP" || "$REQ" -nt "$STAMP" || ! -x "$VENV/bin/cargo-lambda" ]]; then
    log "installing $(basename "$REQ") into .venv"
    if PIP_DISABLE_PIP_VERSION_CHECK=1 "$(readlink -f "$VENV")/bin/python" -m pip install --quiet --requirement "$REQ"; then
      touch "$STAMP"
    else
      log "WARNING: could not install cargo-lambda; falling back to plain cargo build (HOLDFAST_PACKAGE_BUILDER=cargo)"
      BUILDER=cargo
    fi
  fi
fi
[[ "$BUILDER" == "cargo-lambda" || "$BUILDER" == "cargo" ]] || die "HOLDFAST_PACKAGE_BUILDER must be cargo-lambda or cargo"

# --- build -------------------------------------------------------------------------------
if [[ "$BUILDER" == "cargo-lambda" ]]; then
  # .venv/bin first: `cargo lambda` finds cargo-lambda there, and cargo-zigbuild finds zig
  # through `python3 -m ziglang` (the venv's python has the ziglang wheel).
  export PATH="$VENV/bin:$PATH"
  ARCH_FLAG=(--x86-64)
  [[ "$TRIPLE" == aarch64-* ]] && ARCH_FLAG=(--arm64)
  log "cargo lambda build --release ${ARCH_FLAG[*]} ${PKG_ARGS[*]}  (compiler: ${CARGO_LAMBDA_COMPILER:-cargo-lambda default})"
  "$CARGO" lambda build --release "${ARCH_FLAG[@]}" "${PKG_ARGS[@]}"
else
  [[ "$TRIPLE" == "$HOST_TRIPLE" ]] || die "HOLDFAST_PACKAGE_BUILDER=cargo builds for the host ($HOST_TRIPLE) only"
  log "plain cargo: cargo build --release ${PKG_ARGS[*]}  (NOT cargo-lambda)"
  "$CARGO" build --release "${PKG_ARGS[@]}"
  for f in "${FUNCS[@]}"; do
    mkdir -p "$LAMBDA_DIR/$f"
    cp -f "$CARGO_TARGET_DIR/release/$f" "$LAMBDA_DIR/$f/bootstrap"
  done
fi

# --- report ------------------------------------------------------------------------------
BOOTSTRAPS=()
for f in "${FUNCS[@]}"; do
  b="$LAMBDA_DIR/$f/bootstrap"
  [[ -x "$b" ]] || die "missing $b after the build"
  BOOTSTRAPS+=("$b")
done

echo
echo "Lambda packages ($BUILDER, $TRIPLE, release) in ${LAMBDA_DIR}:"
python3 - "${BOOTSTRAPS[@]}" <<'PY'
import os, sys, zipfile, io
MACHINE = {0x3E: "x86_64", 0xB7: "arm64"}
rows, total = [], 0
for path in sys.argv[1:]:
    name = os.path.basename(os.path.dirname(path))
    data = open(path, "rb").read()
    arch = MACHINE.get(int.from_bytes(data[18:20], "little"), "?") if data[:4] == b"\x7fELF" else "not ELF"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("bootstrap", data)
    rows.append((name, arch, len(data), buf.tell()))
    total += len(data)
print(f"| {'function':<18} | {'arch':<6} | {'bytes':>10} | {'KiB':>8} | {'zip KiB':>8} |")
print(f"|{'-'*20}|{'-'*8}|{'-'*11}:|{'-'*9}:|{'-'*9}:|")
for name, arch, size, z in rows:
    print(f"| {name:<18} | {arch:<6} | {size:>10} | {size/1024:>8.1f} | {z/1024:>8.1f} |")
print(f"| {'total':<18} | {'':<6} | {total:>10} | {total/1024:>8.1f} | {'':>8} |")
PY
echo

echo "Fault-injection strings (must be absent from production binaries):"
if ! check_faults "${BOOTSTRAPS[@]}"; then
  die "fault-injection code reached a Lambda binary (was holdfast built with the \`faults\` feature?)"
fi
echo "Size (every bootstrap at most $MAX_BYTES bytes):"
if ! check_size "${BOOTSTRAPS[@]}"; then
  die "a Lambda binary is over the size limit: does its main wire a port it does not use (functions/<name>/src/main.rs), or did a dependency grow?"
fi
log "ok: ${#BOOTSTRAPS[@]} functions in ${LAMBDA_DIR#"$ROOT"/}"
