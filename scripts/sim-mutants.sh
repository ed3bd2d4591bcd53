#!/usr/bin/env bash
# Runs the simulator once per planted bug (domain/src/mutation.rs) over a bounded seed range and
# prints, for each, how many seeds it took to catch it and the invariant it broke
# (docs/simulator.md, "Planted bugs"). Exits non-zero if any planted bug goes uncaught.
set -uo pipefail
seeds=${SIM_SEEDS:-0..100}
steps=${STEPS:-300}
first=${seeds%%..*}
cargo build -q -p holdfast-sim --features mutations || exit 1
# the mutations build must not be left where `make sim` runs its binary
bin="${CARGO_TARGET_DIR:-target}/debug/holdfast-sim-mutants"
cp "${CARGO_TARGET_DIR:-target}/debug/holdfast-sim" "$bin"
list() { sed -n "/pub const $1/,/];/p" domain/src/mutation.rs | grep -v '^ *//' | grep -o '"[a-z0-9-]*"' | tr -d '"'; }
mutants="$(list ALL)"
# the known misses take a whole seed range each: only with SIM_UNCAUGHT=1
uncaught="$(list UNCAUGHT)"
[ "${SIM_UNCAUGHT:-0}" = 1 ] || uncaught=""
missed=0
printf '| mutation | seeds to catch it (first catching seed) | violation |\n|---|---|---|\n'
for m in $mutants $uncaught; do
  out=$(HOLDFAST_MUTATION="$m" "$bin" --seeds "$seeds" --steps "$steps" --no-shrink 2>&1)
  seed=$(grep -m1 '^seed=' <<<"$out" | cut -d= -f2)
  what=$(grep -A1 -m1 '^violation' <<<"$out" | tail -1 | sed 's/^ *//; s/ {.*//; s/(.*//')
  if [ -n "$seed" ]; then
    printf '| %s | %s (%s) | %s |\n' "$m" "$((seed - first + 1))" "$seed" "$what"
  elif [ -n "$uncaught" ] && grep -qx "$m" <<<"$uncaught"; then
    printf '| %s | not caught in %s (known, docs/simulator.md) | |\n' "$m" "$seeds"
  else
    printf '| %s | not caught in %s | |\n' "$m" "$seeds"
    missed=$((missed + 1))
  fi
done
# rebuild the plain simulator so later runs of target/debug/holdfast-sim carry no mutation
cargo build -q -p holdfast-sim || exit 1
if [ "$missed" -gt 0 ]; then
  echo "sim-mutants: $missed planted bug(s) not caught" >&2
  exit 1
fi
echo "sim-mutants: every planted bug caught"
