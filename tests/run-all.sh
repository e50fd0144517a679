#!/usr/bin/env bash
# Runs every suite in tests/suites/ in name order. A suite that cannot run fails; none is
# skipped. Prints one closing line: "suites: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0; failed_names=()
for suite in tests/suites/*.sh; do
  name=$(basename "$suite" .sh)
  echo "=== suite $name ==="
  start=$(date +%s)
  if bash "$suite"; then
    passed=$((passed + 1)); status=passed
  else
    failed=$((failed + 1)); status=FAILED; failed_names+=("$name")
  fi
  echo "=== suite $name $status in $(( $(date +%s) - start ))s ==="
done
[ "$failed" -eq 0 ] || echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
