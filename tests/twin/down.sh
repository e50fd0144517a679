#!/usr/bin/env bash
# Stops every process of the cluster twin that up.sh started (by the PIDs it recorded, and
# only if the PID still runs the twin's binary). Idempotent: nothing running is fine.
# Logs stay in $STATE/logs; `down.sh --purge` removes the whole state directory too.
set -uo pipefail
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
STATE=${GPUSHARE_TWIN_STATE:-/tmp/gpushare-twin}
PIDS=$STATE/pids

# Is PID still the twin's NAME process (not a recycled PID)?
ours() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$BIN/$2")" ]; }

stop() {
  local name=$1 f=$PIDS/$1.pid pid
  [ -e "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null && ours "$pid" "$name"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "down.sh: $name ($pid) ignored SIGTERM; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
    echo "down.sh: stopped $name ($pid)" >&2
  fi
  rm -f "$f"
}

# Clients first, etcd last.
for name in kueue kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  stop "$name"
done
# Kueue's metrics certificate at its fixed path (up.sh): this twin's marker goes, and the
# certificate with the last twin's.
M=/etc/kueue/metrics/certs
marker=$(cat "$STATE/kueue-metrics-marker" 2>/dev/null) && rm -f "$marker" "$STATE/kueue-metrics-marker"
if [ -e "$M/tls.crt" ] && ! compgen -G "$M/.gpushare-twin.*" >/dev/null; then
  rm -f "$M/tls.crt" "$M/tls.key"
  rmdir "$M" /etc/kueue/metrics /etc/kueue 2>/dev/null
fi
if [ "${1:-}" = "--purge" ]; then
  rm -rf "$STATE"
fi
exit 0
