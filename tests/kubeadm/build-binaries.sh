#!/usr/bin/env bash
# Builds what the kubeadm test's node containers run, from Go modules and C source only
# (no registry, no release download), into the cluster twin's cache so the Go module and
# build caches are shared with tests/twin/build.sh:
#   kubelet, kubeadm, kube-proxy   k8s.io/kubernetes at TWIN_KUBE_VERSION (same wrapper
#                                  module and version stamps as tests/twin/build.sh)
#   coredns                        github.com/coredns/coredns at KUBEADM_TEST_COREDNS_VERSION
#   pause                          build/pause/linux/pause.c of the same k8s.io/kubernetes,
#                                  compiled statically with gcc
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd come from
# tests/twin/build.sh (run by the suite before this script).
# A binary whose stamp matches is reused.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../twin/versions.sh
. "$HERE/../twin/versions.sh"
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"

CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
SRC=$CACHE/src
mkdir -p "$BIN" "$SRC"
LOG=$CACHE/build.log
# The same Go environment as tests/twin/build.sh, so both share one module and build cache.
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-trimpath -p=2 -buildvcs=false"
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}
command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "build-binaries.sh: no go in PATH" >&2; exit 1; }
command -v gcc >/dev/null || { echo "build-binaries.sh: no gcc (apt-get install gcc libc6-dev) for the pause binary" >&2; exit 1; }
gover=$(go env GOVERSION)
PY=$(command -v python3)

say() { echo "kubeadm build-binaries.sh: $*" | tee -a "$LOG" >&2; }
measure() { "$PY" "$HERE/../twin/measure.py" "$@" 2> >(tee -a "$LOG" >&2); }
stamp_of() { echo "$1 $2 $gover $(go env GOOS)/$(go env GOARCH)"; }
is_current() {
  local name=$1 version=$2; shift 2
  [ "$(cat "$BIN/.$name.stamp" 2>/dev/null)" = "$(stamp_of "$name" "$version")" ] || return 1
  local b; for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done
}
mark_current() { stamp_of "$1" "$2" > "$BIN/.$1.stamp"; }
mod_json() { go mod download -json "$1@$2"; }
mod_dir() { mod_json "$1" "$2" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'; }
mod_commit() { mod_json "$1" "$2" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("Origin", {}).get("Hash", "unknown"))'; }

build_node() {
  local v=$TWIN_KUBE_VERSION sv=$TWIN_KUBE_STAGING_VERSION
  local cmds="kubelet kubeadm kube-proxy"
  # shellcheck disable=SC2086
  if is_current kube-node "$v" $cmds; then say "$cmds $v: reused"; return; fi
  # Same wrapper as tests/twin/build.sh: k8s.io/kubernetes replaces its staging modules with
  # ./staging/..., so each is pointed at its published release.
  local kdir; kdir=$(mod_dir k8s.io/kubernetes "$v")
  local d=$SRC/kube-node
  rm -rf "$d"; mkdir -p "$d"
  {
    printf 'module gpushare.local/kubeadm/node\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$v"
    sed -n '/^replace (/,/^)/p' "$kdir/go.mod" | awk -v sv="$sv" '$2 == "=>" {printf "\t%s => %s %s\n", $1, $1, sv}'
    printf ')\n\ntool (\n'
    for c in $cmds; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$c"; done
    printf ')\n'
  } > "$d/go.mod"
  local commit; commit=$(mod_commit k8s.io/kubernetes "$v")
  local minor=${v#v1.}; minor=${minor%%.*}
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ldf="" pkg c
  # kubeadm reads its own version to pick the control-plane image tags.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  (cd "$d" && go mod tidy)
  for c in $cmds; do
    (cd "$d" && measure "$c $v" go build -ldflags "-s -w $ldf" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c")
  done
  mark_current kube-node "$v"
}

build_coredns() {
  local v=$KUBEADM_TEST_COREDNS_VERSION
  if is_current coredns "$v" coredns; then say "coredns $v: reused"; return; fi
  GOBIN=$BIN measure "coredns $v" go install -ldflags "-s -w" "github.com/coredns/coredns@$v"
  mark_current coredns "$v"
}

build_pause() {
  local v=$TWIN_KUBE_VERSION
  if [ "$(cat "$BIN/.pause.stamp" 2>/dev/null)" = "pause $v $(gcc -dumpfullversion)" ] && [ -x "$BIN/pause" ]; then
    say "pause ($v): reused"; return
  fi
  local kdir; kdir=$(mod_dir k8s.io/kubernetes "$v")
  local ver; ver=$(sed -n 's/^TAG ?= //p' "$kdir/build/pause/Makefile")
  # The upstream Makefile's flags: static, VERSION baked in for `pause -v`.
  gcc -Os -Wall -Werror -static -DVERSION="v$ver-gpushare" -o "$BIN/pause" "$kdir/build/pause/linux/pause.c"
  echo "pause $v $(gcc -dumpfullversion)" > "$BIN/.pause.stamp"
  say "pause $ver from k8s.io/kubernetes@$v: built"
}

what=("$@")
[ ${#what[@]} -gt 0 ] || what=(node coredns pause)
for w in "${what[@]}"; do "build_$w"; done
