#!/usr/bin/env bash
# MultiKueue on three cluster twins (a manager and two workers, docs/multikueue.md): builds (or
# reuses) the twin, starts three side by side (own state folders, ports and certificates; the
# manager's Kueue with a short workerLostTimeout), runs tests/multikueue, always stops them.
# Peak memory of the three twins' processes is sampled and written with the results.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${TWIN_PYTHON:-python}
export GPUSHARE_MK_LOST_TIMEOUT=${GPUSHARE_MK_LOST_TIMEOUT:-20s}
tests/twin/build.sh
declare -A STATES
for c in manager site-a site-b; do STATES[$c]=$(mktemp -d "/tmp/gpushare-mk-$c.XXXXXX"); done
export GPUSHARE_MK_MANAGER=${STATES[manager]} GPUSHARE_MK_SITE_A=${STATES[site-a]} GPUSHARE_MK_SITE_B=${STATES[site-b]}
results=${GPUSHARE_TWIN_RESULTS:-build/twin}
mkdir -p "$results"
sampler=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
finish() {
  local rc=$?
  [ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
  # The three twins stop side by side (an API server may take seconds to shut down).
  for c in manager site-a site-b; do
    if [ "$rc" -eq 0 ]; then
      GPUSHARE_TWIN_STATE=${STATES[$c]} tests/twin/down.sh --purge &
    else
      GPUSHARE_TWIN_STATE=${STATES[$c]} tests/twin/down.sh &
      echo "52-multikueue: $c logs in ${STATES[$c]}/logs" >&2
    fi
  done
  wait
  exit "$rc"
}
trap finish EXIT
start=$(date +%s)
GPUSHARE_TWIN_STATE=${STATES[manager]} GPUSHARE_TWIN_KUEUE_EXTRA_CONFIG="multiKueue: {workerLostTimeout: $GPUSHARE_MK_LOST_TIMEOUT}" \
  TWIN_PYTHON=$PY tests/twin/up.sh
for c in site-a site-b; do GPUSHARE_TWIN_STATE=${STATES[$c]} TWIN_PYTHON=$PY tests/twin/up.sh; done
echo "52-multikueue: three twins up in $(( $(date +%s) - start ))s"
# Peak resident memory of every twin process together (the pids up.sh and restarts record).
(
  peak=0
  while true; do
    total=0
    for p in "${STATES[manager]}"/pids/*.pid "${STATES[site-a]}"/pids/*.pid "${STATES[site-b]}"/pids/*.pid; do
      [ -e "$p" ] || continue
      kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$(cat "$p")/status" 2>/dev/null || true)
      total=$(( total + ${kb:-0} ))
    done
    if [ "$total" -gt "$peak" ]; then peak=$total; echo "$peak" > "$results/multikueue-peak-rss-kib"; fi
    sleep 2
  done
) &
sampler=$!
rc=0
"$PY" -m pytest tests/multikueue -q -x -p no:cacheprovider || rc=$?
echo "52-multikueue: peak RSS of the three twins $(( $(cat "$results/multikueue-peak-rss-kib" 2>/dev/null || echo 0) / 1024 )) MiB," \
  "$(( $(date +%s) - start ))s from the first start"
if [ "$rc" -ne 0 ]; then
  for c in manager site-a site-b; do
    echo "--- last lines of $c's kueue.log"
    tail -n 30 "${STATES[$c]}/logs/kueue.log" || true
  done
fi
exit "$rc"
