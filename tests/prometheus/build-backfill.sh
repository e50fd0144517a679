#!/usr/bin/env bash
# Builds tests/prometheus/tsdb-backfill (Go, the TSDB library of Prometheus 2.42) into
# ${GPUSHARE_PROMETHEUS_CACHE:-~/.cache/gpushare-prometheus}/bin/tsdb-backfill and prints
# its path. Idempotent: when the binary is newer than its sources a second run only prints
# the path. Go's own caches (GOMODCACHE, GOCACHE) are used where they are, shared with other
# Go builds; modules come from GOPROXY (the default proxy.golang.org).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="$here/tsdb-backfill"
cache=${GPUSHARE_PROMETHEUS_CACHE:-$HOME/.cache/gpushare-prometheus}
out="$cache/bin/tsdb-backfill"

if [ -x "$out" ] && [ -z "$(find "$src" -newer "$out" -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \))" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "build-backfill.sh: go is needed (1.21 or later) to build $src" >&2; exit 1; }
mkdir -p "$cache/bin"
cd "$src"
# -mod=mod: go.sum is committed; a missing entry is fetched instead of failing the build.
GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" nice go build -trimpath -o "$out.tmp" . >&2
mv "$out.tmp" "$out"
echo "$out"
