#!/usr/bin/env bash
# Prints a directory inside the source of a Go module at a pinned version, taken with
# `go mod download` into the twin's own module cache (the one build.sh builds from), so the
# unit tests and the twin read the same files. Fails (exit 1, with the reason on stderr) when
# Go or the module proxy is missing, or the module has no such directory.
#
# usage: tests/twin/go-module-dir.sh MODULE VERSION SUBDIR [FILE_THAT_MUST_EXIST_IN_SUBDIR]
set -euo pipefail
module=$1 version=$2 subdir=$3 probe=${4:-}
me="go-module-dir.sh ($module@$version)"

CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
# The same Go environment as build.sh: everything stays in the cache, no other toolchain.
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local
export GOFLAGS=-modcacherw
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "$me: no go in PATH; the files come from that Go module" >&2; exit 1; }
mkdir -p "$GOMODCACHE"
if ! json=$(go mod download -json "$module@$version"); then
  echo "$me: go mod download failed (GOPROXY=$GOPROXY)" >&2
  [ -z "$json" ] || echo "$json" >&2
  exit 1
fi
dir=$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir", ""))')
if [ -z "$dir" ] || [ ! -d "$dir/$subdir" ] || { [ -n "$probe" ] && [ ! -f "$dir/$subdir/$probe" ]; }; then
  echo "$me: no $subdir${probe:+/$probe} in the module (Dir=$dir)" >&2
  exit 1
fi
echo "$dir/$subdir"
