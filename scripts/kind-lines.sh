#!/usr/bin/env bash
# Lines of service/, handlers/ and adapters/ (tests excluded) that decide by a SKU's kind
# themselves instead of asking its seam (domain/src/kind.rs): the model's parts, the
# model predicates, and a line's kind flags. `bash scripts/kind-lines.sh [git-rev]`.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-}"
pattern='is_code_pool\(|is_supplier\(|has_own_stock\(|can_be_child\(|Management::|Deduct::|Unit::|\.model\.(deduct|management|unit)\b|\.at_payment\b|\.codes\.is_some\(\)'
files() {
  if [ -n "$rev" ]; then git ls-tree -r --name-only "$rev" -- shared/src/service shared/src/handlers shared/src/adapters aws/src/adapters
  else git ls-files shared/src/service shared/src/handlers shared/src/adapters aws/src/adapters; fi
}
show() { if [ -n "$rev" ]; then git show "$rev:$1"; else cat "$1"; fi; }
total=0
for f in $(files | grep '\.rs$' | grep -v -E '(tests|contract|matrix_tests|contract_tests)\.rs$'); do
  # stop at the first `#[cfg(test)]`: unit tests name kinds on purpose
  n=$(show "$f" | awk '/^#\[cfg\(test\)\]/{exit} {print}' | grep -c -E "$pattern" || true)
  if [ "$n" -gt 0 ]; then echo "$n $f"; total=$((total + n)); fi
done
echo "total $total"
