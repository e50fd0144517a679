#!/usr/bin/env bash
# Prints the directory holding the Kueue CRDs (config/components/crd/bases) of the Kueue
# release the twin runs (TWIN_KUEUE_VERSION in versions.sh), taken from the Go module
# sigs.k8s.io/kueue with `go mod download`. The module lands in the twin's own module cache,
# the same one build.sh uses, so the unit tests and the twin read the same CRD files.
# Fails (exit 1, with the reason on stderr) when Go or the module proxy is missing.
#
# usage: tests/twin/kueue-crds.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"

CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
# The same Go environment as build.sh: everything stays in the cache, no other toolchain.
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local
export GOFLAGS=-modcacherw
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || {
  echo "kueue-crds.sh: no go in PATH; the Kueue CRDs come from the Go module sigs.k8s.io/kueue@$TWIN_KUEUE_VERSION" >&2
  exit 1
}
mkdir -p "$GOMODCACHE"
if ! json=$(go mod download -json "sigs.k8s.io/kueue@$TWIN_KUEUE_VERSION"); then
  echo "kueue-crds.sh: go mod download sigs.k8s.io/kueue@$TWIN_KUEUE_VERSION failed (GOPROXY=$GOPROXY)" >&2
  [ -z "$json" ] || echo "$json" >&2
  exit 1
fi
dir=$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir", ""))')
bases=$dir/config/components/crd/bases
if [ -z "$dir" ] || [ ! -d "$bases" ]; then
  echo "kueue-crds.sh: no config/components/crd/bases in the module (Dir=$dir)" >&2
  exit 1
fi
echo "$bases"
