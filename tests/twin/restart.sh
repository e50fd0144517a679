#!/usr/bin/env bash
# Crash and restart one process of a running twin, as a node reboot or an OOM kill would:
#   tests/twin/restart.sh kube-apiserver|kueue|kube-controller-manager|kube-scheduler [SECONDS_DOWN]
# SIGKILL (no graceful shutdown), SECONDS_DOWN (default 2) of downtime, then the same
# command up.sh ran ($PIDS/NAME.cmd), its output appended to the same log, and a wait until
# it is ready again (the apiserver's /readyz; Kueue's /readyz and its webhook through the
# apiserver).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${GPUSHARE_TWIN_STATE:-/tmp/gpushare-twin}
name=${1:?usage: restart.sh NAME [SECONDS_DOWN]}
down=${2:-2}
PIDS=$STATE/pids
LOGS=$STATE/logs
PY=${TWIN_PYTHON:-python3}
[ -s "$PIDS/$name.cmd" ] || { echo "restart.sh: no $PIDS/$name.cmd (is the twin up, and $name one of its processes?)" >&2; exit 1; }
# shellcheck disable=SC1091  # written by up.sh
. "$STATE/twin.env"
pid=$(cat "$PIDS/$name.pid")
if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$TWIN_BIN/$name")" ]; then
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
fi
echo "restart.sh: $(date +%T) killed $name ($pid); down for ${down}s" >&2
sleep "$down"
echo "--- restart.sh: restarted $(date -Is)" >> "$LOGS/$name.log"
bash "$PIDS/$name.cmd" >> "$LOGS/$name.log" 2>&1 < /dev/null &  # the script execs the binary
echo $! > "$PIDS/$name.pid"
probe() { "$PY" "$HERE/probe.py" "$@"; }
ready() {
  case $name in
    kube-apiserver) probe --ca "$TWIN_CA" --cert "$TWIN_CLIENT_CERT" --key "$TWIN_CLIENT_KEY" "$TWIN_APISERVER/readyz" ;;
    kueue) probe "$TWIN_KUEUE_HEALTH/readyz" &&
           probe --ca "$TWIN_CA" --post --any-status "$TWIN_KUEUE_WEBHOOK/validate-kueue-x-k8s-io-v1beta2-resourceflavor" ;;
    *) kill -0 "$(cat "$PIDS/$name.pid")" ;;
  esac
}
for _ in $(seq 1 240); do
  if ready >/dev/null 2>&1; then echo "restart.sh: $(date +%T) $name ready again" >&2; exit 0; fi
  kill -0 "$(cat "$PIDS/$name.pid")" 2>/dev/null || { echo "restart.sh: $name exited:" >&2; tail -n 30 "$LOGS/$name.log" >&2; exit 1; }
  sleep 0.5
done
echo "restart.sh: $name not ready after 120 s; last lines of $LOGS/$name.log:" >&2
tail -n 30 "$LOGS/$name.log" >&2
exit 1
