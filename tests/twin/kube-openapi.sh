#!/usr/bin/env bash
# Prints the directory holding Kubernetes' OpenAPI v3 documents (api/openapi-spec/v3) of the
# release the twin runs (TWIN_KUBE_VERSION in versions.sh), taken from the Go module
# k8s.io/kubernetes with `go mod download`, in the twin's own module cache (build.sh builds
# the twin's API server from the same module). The unit tests validate the team manifests
# (renderers/render_teams.py) against these schemas.
# Fails (exit 1, with the reason on stderr) when Go or the module proxy is missing.
#
# usage: tests/twin/kube-openapi.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"

CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local
export GOFLAGS=-modcacherw
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || {
  echo "kube-openapi.sh: no go in PATH; the OpenAPI documents come from the Go module k8s.io/kubernetes@$TWIN_KUBE_VERSION" >&2
  exit 1
}
mkdir -p "$GOMODCACHE"
if ! json=$(go mod download -json "k8s.io/kubernetes@$TWIN_KUBE_VERSION"); then
  echo "kube-openapi.sh: go mod download k8s.io/kubernetes@$TWIN_KUBE_VERSION failed (GOPROXY=$GOPROXY)" >&2
  [ -z "$json" ] || echo "$json" >&2
  exit 1
fi
dir=$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir", ""))')
spec=$dir/api/openapi-spec/v3
if [ -z "$dir" ] || [ ! -f "$spec/apis__apps__v1_openapi.json" ]; then
  echo "kube-openapi.sh: no api/openapi-spec/v3 in the module (Dir=$dir)" >&2
  exit 1
fi
echo "$spec"
