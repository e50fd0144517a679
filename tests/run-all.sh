#!/usr/bin/env bash
# Runs every suite in tests/suites/ in name order. A suite that cannot run fails; none is
# skipped. Prints one closing line: "suites: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0; failed_names=()
# The Go builds of 45-kubeadm and 50-twin (about 18 minutes on 2 idle cores when the cache is
# cold) start now, at low priority, on the core the first suites leave idle (pytest, ansible-test
# and Molecule mostly use one). tests/twin/build.sh takes a lock, so those suites wait for this
# build and then reuse what it made; if it fails, their own build.sh call fails visibly.
prebuild_log=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}/prebuild.log
mkdir -p "$(dirname "$prebuild_log")"
nice -n 10 tests/twin/build.sh etcd kube kube-node coredns pause kwok kueue helm kueue-chart prometheus-crds \
  > "$prebuild_log" 2>&1 &
prebuild=$!
echo "=== Go builds for 45-kubeadm and 50-twin started in the background (log: $prebuild_log) ==="
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
wait "$prebuild" || true   # its outcome was the suites' to judge
[ "$failed" -eq 0 ] || echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
