#!/usr/bin/env bash
# Builds every binary of the cluster twin from Go modules (the Go module proxy is the only
# source: no GitHub, no image registry, no release downloads), at the versions pinned in
# versions.sh, into ${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}/bin.
# A binary whose version stamp matches is reused. Each build prints one "measure:" line
# (wall time, peak RSS of the biggest compiler/linker process) to build.log in the cache.
#
# usage: tests/twin/build.sh [component ...]
#   components: etcd kube kwok kueue helm kueue-chart prometheus-crds (the default: the twin)
#               kube-node coredns pause (the kubeadm test's nodes)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"

CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
SRC=$CACHE/src
SHARE=$CACHE/share
mkdir -p "$BIN" "$SRC" "$SHARE"
LOG=$CACHE/build.log

# One build at a time per cache: tests/run-all.sh starts one in the background while the
# first suites run, and a suite that needs the binaries waits here for it, then reuses them.
exec {lock}>"$CACHE/build.lock"
flock -n "$lock" || { echo "build.sh: another build.sh holds $CACHE/build.lock; waiting" >&2; flock "$lock"; }

# Everything the Go tool writes stays in the cache, outside the repository.
export GOMODCACHE=${GPUSHARE_TWIN_GOMODCACHE:-$CACHE/gomod}
export GOCACHE=${GPUSHARE_TWIN_GOCACHE:-$CACHE/go-build}
export GOPATH=$CACHE/gopath
export GOTOOLCHAIN=local          # never fetch another toolchain
export CGO_ENABLED=0              # static binaries, no C compiler needed
export GOFLAGS="-trimpath -p=2 -buildvcs=false"
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}

# The go.dev tarball's usual place, for shells whose PATH lacks it (Debian 12's own golang
# package is 1.19, too old).
command -v go >/dev/null || [ ! -x /usr/local/go/bin/go ] || PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "build.sh: no go in PATH (need $TWIN_GO_MIN or newer)" >&2; exit 1; }
gover=$(go env GOVERSION)
case "$(printf '%s\n%s\n' "$TWIN_GO_MIN" "$gover" | sort -V | head -1)" in
  "$TWIN_GO_MIN") ;;
  *) echo "build.sh: $gover is older than $TWIN_GO_MIN" >&2; exit 1 ;;
esac
PY=$(command -v python3)

say() { echo "build.sh: $*" | tee -a "$LOG" >&2; }
measure() { "$PY" "$HERE/measure.py" "$@" 2> >(tee -a "$LOG" >&2); }

stamp_of() { echo "$1 $2 $gover $(go env GOOS)/$(go env GOARCH)"; }
is_current() {  # name version binary...
  local name=$1 version=$2; shift 2
  [ "$(cat "$BIN/.$name.stamp" 2>/dev/null)" = "$(stamp_of "$name" "$version")" ] || return 1
  local b; for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done
}
mark_current() { stamp_of "$1" "$2" > "$BIN/.$1.stamp"; }

# Directory of a module's source in the module cache (downloads it if needed).
mod_dir() { go mod download -json "$1@$2" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'; }
mod_commit() {
  go mod download -json "$1@$2" | "$PY" -c \
    'import json,sys; print(json.load(sys.stdin).get("Origin", {}).get("Hash", "unknown"))'
}

build_etcd() {
  local v=$TWIN_ETCD_VERSION
  if is_current etcd "$v" etcd; then say "etcd $v: reused"; return; fi
  # The etcd main package lives in the root module go.etcd.io/etcd/v3, which carries
  # replace directives (so `go install` refuses it); its main only calls etcdmain.Main,
  # which is in go.etcd.io/etcd/server/v3. The wrapper repeats that main.
  local d=$SRC/etcd
  rm -rf "$d"; mkdir -p "$d"
  cat > "$d/go.mod" <<EOF
module gpushare.local/twin/etcd

go 1.26.0

require (
	go.etcd.io/etcd/api/v3 $v
	go.etcd.io/etcd/client/pkg/v3 $v
	go.etcd.io/etcd/client/v3 $v
	go.etcd.io/etcd/pkg/v3 $v
	go.etcd.io/etcd/server/v3 $v
)
EOF
  cat > "$d/main.go" <<'EOF'
// Same as the main of go.etcd.io/etcd/v3 (the etcd binary).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  local sha; sha=$(mod_commit go.etcd.io/etcd/server/v3 "$v")
  (cd "$d" && go mod tidy &&
    measure "etcd $v" go build -ldflags "-X go.etcd.io/etcd/api/v3/version.GitSHA=${sha:0:9}" \
      -o "$BIN/etcd" .)
  mark_current etcd "$v"
}

# Commands of k8s.io/kubernetes, built through one wrapper module per set (the name is the
# version stamp's and the source directory's).
build_kube_commands() {  # name "cmd ..."
  local name=$1 cmds=$2 v=$TWIN_KUBE_VERSION sv=$TWIN_KUBE_STAGING_VERSION
  # shellcheck disable=SC2086
  if is_current "$name" "$v" $cmds; then say "$cmds $v: reused"; return; fi
  # k8s.io/kubernetes replaces every k8s.io/* staging module with ./staging/..., so
  # `go install` refuses it. The wrapper requires it and points each staging module at
  # its published release instead (v1.35.5 <-> v0.35.5).
  local kdir; kdir=$(mod_dir k8s.io/kubernetes "$v")
  local d=$SRC/$name
  rm -rf "$d"; mkdir -p "$d"
  {
    printf 'module gpushare.local/twin/%s\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$name" "$v"
    sed -n '/^replace (/,/^)/p' "$kdir/go.mod" | awk -v sv="$sv" '$2 == "=>" {printf "\t%s => %s %s\n", $1, $1, sv}'
    printf ')\n\ntool (\n'
    for c in $cmds; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$c"; done
    printf ')\n'
  } > "$d/go.mod"
  local commit; commit=$(mod_commit k8s.io/kubernetes "$v")
  local minor=${v#v1.}; minor=${minor%%.*}
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ldf="" pkg
  # What hack/lib/version.sh sets, so the binaries report a real version (Kueue and
  # clients read /version; kubeadm picks the control-plane image tags from its own).
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  (cd "$d" && go mod tidy)
  local c
  for c in $cmds; do
    (cd "$d" && measure "$c $v" go build -ldflags "-s -w $ldf" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c")
  done
  mark_current "$name" "$v"
}

build_kube() { build_kube_commands kube "kube-apiserver kube-controller-manager kube-scheduler kubectl"; }

# What the kubeadm test's node containers run besides the above (tests/kubeadm/suite.sh).
build_kube-node() { build_kube_commands kube-node "kubelet kubeadm kube-proxy"; }

build_coredns() {
  local v=$TWIN_COREDNS_VERSION
  if is_current coredns "$v" coredns; then say "coredns $v: reused"; return; fi
  GOBIN=$BIN measure "coredns $v" go install -ldflags "-s -w" "github.com/coredns/coredns@$v"
  mark_current coredns "$v"
}

# pause from build/pause/linux/pause.c of the same k8s.io/kubernetes, static, with gcc.
build_pause() {
  local v=$TWIN_KUBE_VERSION
  command -v gcc >/dev/null || { echo "build.sh: no gcc (apt-get install gcc libc6-dev) for pause" >&2; return 1; }
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

build_kwok() {
  local v=$TWIN_KWOK_VERSION
  if is_current kwok "$v" kwok; then say "kwok $v: reused"; else
    # No replace directives in sigs.k8s.io/kwok: `go install` builds it from its own go.mod.
    GOBIN=$BIN measure "kwok $v" go install \
      -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${v#v}" "sigs.k8s.io/kwok/cmd/kwok@$v"
    mark_current kwok "$v"
  fi
  local kdir; kdir=$(mod_dir sigs.k8s.io/kwok "$v")
  rm -rf "$SHARE/kwok"; mkdir -p "$SHARE/kwok"
  cp -r "$kdir/kustomize/crd/bases" "$SHARE/kwok/crds"
  cp -r "$kdir/kustomize/stage" "$SHARE/kwok/stage"
  chmod -R u+w "$SHARE/kwok"
}

build_kueue() {
  local v=$TWIN_KUEUE_VERSION
  if is_current kueue "$v" kueue; then say "kueue $v: reused"; else
    local commit; commit=$(mod_commit sigs.k8s.io/kueue "$v")
    GOBIN=$BIN measure "kueue $v" go install -ldflags "-s -w \
      -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.GitCommit=$commit" \
      "sigs.k8s.io/kueue/cmd/kueue@$v"
    mark_current kueue "$v"
  fi
  # CRDs and webhook manifests come from the same module source as the binary.
  local kdir; kdir=$(mod_dir sigs.k8s.io/kueue "$v")
  rm -rf "$SHARE/kueue"; mkdir -p "$SHARE/kueue"
  cp -r "$kdir/config/components/crd/bases" "$SHARE/kueue/crds"
  cp "$kdir/config/components/webhook/manifests.yaml" "$SHARE/kueue/webhooks.yaml"
  cp -r "$kdir/config/components/rbac" "$SHARE/kueue/rbac"
  chmod -R u+w "$SHARE/kueue"
}

build_helm() {
  local v=$TWIN_HELM_VERSION
  if is_current helm "$v" helm; then say "helm $v: reused"; return; fi
  # helm.sh/helm/v4 has no replace directives: `go install` builds it from its own go.mod.
  # The version variable is what its Makefile sets, so `helm version` (which
  # kubernetes.core.helm parses) reports the release.
  local commit; commit=$(mod_commit helm.sh/helm/v4 "$v")
  GOBIN=$BIN measure "helm $v" go install -ldflags "-s -w \
    -X helm.sh/helm/v4/internal/version.version=$v -X helm.sh/helm/v4/internal/version.gitCommit=$commit \
    -X helm.sh/helm/v4/internal/version.gitTreeState=clean" "helm.sh/helm/v4/cmd/helm@$v"
  mark_current helm "$v"
}

# Kueue's own Helm chart, from the same module as the controller (no Helm repository).
build_kueue-chart() {
  local v=$TWIN_KUEUE_VERSION
  local kdir; kdir=$(mod_dir sigs.k8s.io/kueue "$v")
  [ -f "$kdir/charts/kueue/Chart.yaml" ] || { echo "no charts/kueue in sigs.k8s.io/kueue@$v" >&2; return 1; }
  rm -rf "$SHARE/charts/kueue"; mkdir -p "$SHARE/charts"
  cp -r "$kdir/charts/kueue" "$SHARE/charts/kueue"
  chmod -R u+w "$SHARE/charts/kueue"
  say "kueue chart $v: $SHARE/charts/kueue"
}

# The prometheus-operator CRDs (ServiceMonitor, PrometheusRule, ...) from its Go module.
build_prometheus-crds() {
  local v=$TWIN_PROMETHEUS_OPERATOR_VERSION
  local pdir; pdir=$(mod_dir github.com/prometheus-operator/prometheus-operator "$v")
  [ -d "$pdir/example/prometheus-operator-crd" ] || { echo "no example/prometheus-operator-crd in prometheus-operator@$v" >&2; return 1; }
  rm -rf "$SHARE/prometheus-operator"; mkdir -p "$SHARE/prometheus-operator"
  cp -r "$pdir/example/prometheus-operator-crd" "$SHARE/prometheus-operator/crds"
  chmod -R u+w "$SHARE/prometheus-operator"
  say "prometheus-operator CRDs $v: $SHARE/prometheus-operator/crds"
}

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube kwok kueue helm kueue-chart prometheus-crds)
say "start $(date -u +%FT%TZ) $gover, components: ${components[*]}"
failed=()
for c in "${components[@]}"; do
  case "$c" in
    etcd|kube|kwok|kueue|helm|kueue-chart|prometheus-crds|kube-node|coredns|pause) ;;
    *) echo "build.sh: unknown component $c" >&2; exit 2 ;;
  esac
  # One component failing does not stop the others; the script still fails at the end.
  set +e
  ( set -e; "build_$c" )
  rc=$?
  set -e
  [ "$rc" -eq 0 ] || { say "FAILED: $c (exit $rc; see the go output above)"; failed+=("$c"); }
done
if [ ${#failed[@]} -gt 0 ]; then
  say "failed components: ${failed[*]}"
  exit 1
fi
say "done; binaries in $BIN"
