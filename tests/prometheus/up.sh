#!/usr/bin/env bash
# Starts a real Prometheus (Debian's 2.42, tests/prometheus/install.sh) on history backfilled
# from OpenMetrics files, with the monitoring role's rules loaded.
#
#   tests/prometheus/up.sh DATA_DIR FILE.om...      # prints http://127.0.0.1:PORT
#   tests/prometheus/down.sh DATA_DIR
#
# 1. promtool tsdb create-blocks-from openmetrics (through backfill.py) into DATA_DIR/tsdb;
# 2. the rule groups render_monitoring gives the inventory the files were generated for
#    (FILE.om.json, written by generate.py; GPUSHARE_RULES_INVENTORY overrides) into
#    DATA_DIR/rules.yml, checked with promtool check rules;
# 3. Prometheus on a free loopback port, retention 400d (else backfilled blocks are deleted
#    at once), waiting until /-/ready answers. The recording rules are evaluated from then
#    on (every 1m); over backfilled history, query a rule's expression instead (promtool's
#    rule backfill writes one block per rule and 2 hours: minutes for a day of history).
# Everything is logged to DATA_DIR/prometheus.log; the process id is in DATA_DIR/prometheus.pid.
# GPUSHARE_PROMETHEUS_ARGS adds flags (e.g. --query.lookback-delta=15m for 5-minute samples).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 DATA_DIR FILE.om..." >&2; exit 2; }
data=$(mkdir -p "$1" && cd "$1" && pwd); shift
PY=${PYTHON:-python}
for f in "$@"; do
  [ -s "$f" ] || { echo "up.sh: $f: no such OpenMetrics file (write one with generate.py)" >&2; exit 2; }
done
if [ -s "$data/prometheus.pid" ] && kill -0 "$(cat "$data/prometheus.pid")" 2>/dev/null; then
  echo "up.sh: a Prometheus from $data is running (pid $(cat "$data/prometheus.pid")); run down.sh $data first" >&2
  exit 1
fi
bin=$("$here/install.sh")
: > "$data/prometheus.log"
rm -rf "$data/tsdb"
mkdir -p "$data/tsdb"

meta="$1.json"
inventory=${GPUSHARE_RULES_INVENTORY:-}
if [ -z "$inventory" ]; then
  [ -s "$meta" ] || { echo "up.sh: $meta missing: set GPUSHARE_RULES_INVENTORY=inventory-examples/NAME" >&2; exit 2; }
  inventory=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["inventory"])' "$meta")
fi
"$PY" "$here/backfill.py" "$bin/promtool" "$data/tsdb" "$@" >&2
"$PY" "$here/rules.py" --inventory "$inventory" --out "$data/rules.yml"
"$bin/promtool" check rules "$data/rules.yml" >&2
cat > "$data/prometheus.yml" <<YAML
global:
  scrape_interval: 1m
  evaluation_interval: 1m
rule_files:
  - $data/rules.yml
YAML
"$bin/promtool" check config "$data/prometheus.yml" >&2

port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
url="http://127.0.0.1:$port"

start_prometheus() {
  # shellcheck disable=SC2086  # GPUSHARE_PROMETHEUS_ARGS is a list of flags
  "$bin/prometheus" --config.file="$data/prometheus.yml" --storage.tsdb.path="$data/tsdb" \
    --storage.tsdb.retention.time=400d --web.listen-address="127.0.0.1:$port" \
    --web.enable-lifecycle ${GPUSHARE_PROMETHEUS_ARGS:-} >>"$data/prometheus.log" 2>&1 &
  echo $! > "$data/prometheus.pid"
  for _ in $(seq 1 240); do
    if curl -fsS "$url/-/ready" >/dev/null 2>&1; then return 0; fi
    kill -0 "$(cat "$data/prometheus.pid")" 2>/dev/null || break
    sleep 0.5
  done
  echo "up.sh: Prometheus did not become ready on $url; last log lines:" >&2
  tail -n 20 "$data/prometheus.log" >&2
  "$here/down.sh" "$data" >&2 || true
  return 1
}

start_prometheus
echo "up.sh: Prometheus $("$bin/prometheus" --version 2>&1 | awk 'NR == 1 {print $3}') at $url, data $data, rules for $inventory" >&2
echo "$url"
