#!/usr/bin/env bash
# Prints the directory holding the Kueue CRDs (config/components/crd/bases) of the Kueue
# release the twin runs (TWIN_KUEUE_VERSION in versions.sh), from the Go module sigs.k8s.io/kueue.
# usage: tests/twin/kueue-crds.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"
exec "$HERE/go-module-dir.sh" sigs.k8s.io/kueue "$TWIN_KUEUE_VERSION" config/components/crd/bases
