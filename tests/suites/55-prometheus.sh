#!/usr/bin/env bash
# A real Prometheus (Debian bookworm's 2.42, unpacked into ~/.cache/gpushare-prometheus) with
# seeded dcgm-exporter/kube-state-metrics/Kueue history of every example inventory and the
# monitoring role's rules: promtool test rules for every rule and alert, then every recording
# rule and dashboard panel must return data for every team (tests/prometheus/). Fails, never
# skips, when Prometheus cannot be installed or started.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(tests/prometheus/install.sh)
work=$(mktemp -d /tmp/gpushare-prometheus-rules.XXXXXX)
trap 'rm -rf "$work"' EXIT
for inventory in four-gpu-server mixed-fleet; do
  python tests/prometheus/rules.py --inventory "inventory-examples/$inventory" --out "$work/rules-$inventory.yml"
  cp "tests/prometheus/rules_test_$inventory.yml" "$work/"
  "$bin/promtool" check rules "$work/rules-$inventory.yml"
  (cd "$work" && "$bin/promtool" test rules "rules_test_$inventory.yml")
done
python -m pytest tests/prometheus/test_monitoring_prometheus.py -q -p no:cacheprovider
