#!/usr/bin/env bash
# Unit and property tests of the model, catalogue, planners and renderers.
set -euo pipefail
cd "$(dirname "$0")/../.."
python -m pytest tests/unit -q -p no:cacheprovider
