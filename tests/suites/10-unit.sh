#!/usr/bin/env bash
# Unit and property tests of the model, catalogue, planners and renderers.
# The Kueue objects are validated against the CRDs of the Kueue release the twin runs, which
# tests/twin/kueue-crds.sh takes from the Go module sigs.k8s.io/kueue: this needs `go` and a
# Go module proxy (GOPROXY), and fails without them. The admission policies' CEL is judged
# by tests/unit/cel_subset.py and again by cel-go at the twin's version (tests/twin/celcheck.sh
# builds it once into the twin's cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The split picture is rendered to PNG (cairosvg), which loads the system's Cairo library.
ldconfig -p | grep -q 'libcairo\.so\.2' || { apt-get update -qq && apt-get install -y -qq libcairo2 >/dev/null; }
python -m pytest tests/unit -q -p no:cacheprovider
