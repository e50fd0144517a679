#!/usr/bin/env bash
# Stops the Prometheus that tests/prometheus/up.sh DATA_DIR started (its pid file); a no-op
# when none runs. Leaves DATA_DIR in place (its log is there); pass --purge to delete it.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DATA_DIR [--purge]" >&2; exit 2; }
data=$1
pidfile="$data/prometheus.pid"
if [ -s "$pidfile" ]; then
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$pidfile"
fi
if [ "${2:-}" = "--purge" ]; then rm -rf "$data"; fi
