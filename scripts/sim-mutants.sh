#!/usr/bin/env bash
# Runs the simulator once per planted bug (shared/src/mutation.rs) and prints, for each, the
# first seed that catches it and the invariant it broke (docs/simulator.md, "Planted bugs").
set -uo pipefail
seeds=${SIM_SEEDS:-0..300}
steps=${STEPS:-300}
cargo build -q -p holdfast-sim --features mutations
bin="${CARGO_TARGET_DIR:-target}/debug/holdfast-sim"
mutants=$(sed -n '/pub const ALL/,/];/p' shared/src/mutation.rs | grep -o '"[a-z-]*"' | tr -d '"')
printf '| mutation | first seed that catches it | violation |\n|---|---|---|\n'
for m in $mutants; do
  out=$(HOLDFAST_MUTATION="$m" "$bin" --seeds "$seeds" --steps "$steps" 2>&1)
  seed=$(grep -m1 '^seed=' <<<"$out" | cut -d= -f2)
  what=$(grep -A1 -m1 '^violation' <<<"$out" | tail -1 | sed 's/^ *//; s/ {.*//')
  printf '| %s | %s | %s |\n' "$m" "${seed:-not caught in $seeds}" "${what:-}"
done
