#!/usr/bin/env bash
# Builds tests/twin/celcheck (cel-go at the version the twin's kube-apiserver uses) into the
# twin's cache and prints the binary's path; tests/unit compares tests/unit/cel_subset.py
# with it. Go, its module and build caches as kueue-crds.sh sets them. Fails (exit 1, the
# reason on stderr) when Go or the module proxy is missing.
#
# usage: tests/twin/celcheck.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local
export GOFLAGS="-modcacherw -mod=readonly"
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "celcheck.sh: no go in PATH (cel-go is built from its Go module)" >&2; exit 1; }
src=$HERE/celcheck
# One binary per source: a changed main.go or go.mod builds a new one.
sum=$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)
out=$CACHE/bin/celcheck-$sum
if [ ! -x "$out" ]; then
  mkdir -p "$CACHE/bin"
  (cd "$src" && go build -trimpath -o "$out.tmp" .) >&2 || { echo "celcheck.sh: go build failed" >&2; exit 1; }
  mv "$out.tmp" "$out"
fi
echo "$out"
