#!/usr/bin/env bash
# Runs every suite in tests/suites/ in name order (50-twin beside the ones after it). A suite
# that cannot run fails; none is skipped. Prints one closing line: "suites: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0; failed_names=(); run_start=$(date +%s)
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
# 50-twin mostly waits for controllers to reconcile (load about 1 on its own, 20 minutes), so
# it runs beside the suites after it instead of before them; its output is printed when it ends.
beside=" 50-twin "
logs=$(mktemp -d /tmp/gpushare-suites.XXXXXX)
# Each suite's wall time, for docs/testing.md's table (tests/timings_table.py --write).
timings=build/suite-timings.tsv
mkdir -p build
{
  printf '# commit %s, started %s, %s cores, %s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$(uptime | sed 's/.*load average/load average/')"
  printf 'suite\tseconds\tresult\n'
} > "$timings"
run_suite() {  # suite.sh: runs it between two marker lines; its status is the suite's
  local name start rc
  name=$(basename "$1" .sh); start=$(date +%s)
  echo "=== suite $name ==="
  bash "$1"; rc=$?
  echo "=== suite $name $([ "$rc" -eq 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - start ))s ==="
  printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - start ))" "$([ "$rc" -eq 0 ] && echo passed || echo failed)" >> "$timings"
  return "$rc"
}
count() {  # name rc
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$1"); fi
}
declare -A beside_pid=()
for suite in tests/suites/*.sh; do
  name=$(basename "$suite" .sh)
  if [[ "$beside" == *" $name "* ]]; then
    echo "=== suite $name started beside the next ones (log: $logs/$name.log, printed when it ends) ==="
    run_suite "$suite" < /dev/null > "$logs/$name.log" 2>&1 &
    beside_pid[$name]=$!
  else
    run_suite "$suite"; count "$name" $?
  fi
done
for name in "${!beside_pid[@]}"; do
  wait "${beside_pid[$name]}"; rc=$?
  cat "$logs/$name.log"; count "$name" "$rc"
done
rm -rf "$logs"
wait "$prebuild" || true   # its outcome was the suites' to judge
printf '# total %s s\n' "$(( $(date +%s) - run_start ))" >> "$timings"
[ "$failed" -eq 0 ] || echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
