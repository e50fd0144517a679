#!/usr/bin/env bash
# The usage advisor end to end: seeded example-day history (tests/prometheus/generate.py),
# backfilled into Debian's Prometheus 2.42 (tests/prometheus/up.sh installs and starts it),
# playbooks/advise.yml over HTTP, the proposal checked and planned by playbooks/plan.yml;
# bad input against real servers (tests/prometheus/test_advise.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl >/dev/null; }
tests/prometheus/install.sh >/dev/null
python -m pytest tests/prometheus/test_advise.py -q -p no:cacheprovider
