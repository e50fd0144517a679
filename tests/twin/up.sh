#!/usr/bin/env bash
# Starts the cluster twin on loopback: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, KWOK (fake nodes and pods) and the Kueue controller manager with its
# webhooks, all from the binaries tests/twin/build.sh made. Every listener is on
# 127.0.0.1, on ports free at start time. A fresh cluster each time (new etcd data, new
# certificates).
#
# State in ${GPUSHARE_TWIN_STATE:-/tmp/gpushare-twin}: pki/, logs/<component>.log (kept
# after down.sh for post-mortems), pids/, admin.kubeconfig (0600), twin.env (addresses).
# On failure: prints the tail of the failing component's log, stops what it started, exits 1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
SHARE=$CACHE/share
STATE=${GPUSHARE_TWIN_STATE:-/tmp/gpushare-twin}
PKI=$STATE/pki LOGS=$STATE/logs PIDS=$STATE/pids CONF=$STATE/config
PY=${TWIN_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x "$REPO/.venv/bin/python" ]; then PY=$REPO/.venv/bin/python; else PY=$(command -v python3); fi
fi
KUEUE_FRAMEWORKS=(batch/job pod deployment statefulset)

die() { echo "up.sh: $*" >&2; exit 1; }
log() { echo "up.sh: $(date +%T) $*" >&2; }

for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kueue; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing: run tests/twin/build.sh first"
done
for f in "$SHARE/kueue/crds" "$SHARE/kueue/webhooks.yaml" "$SHARE/kwok/stage"; do
  [ -e "$f" ] || die "$f missing: run tests/twin/build.sh first"
done
command -v openssl >/dev/null || die "openssl is needed (apt-get install openssl)"
"$PY" -c 'import yaml' 2>/dev/null || die "$PY lacks PyYAML (use the repo venv or set TWIN_PYTHON)"

if [ -d "$PIDS" ]; then
  for p in "$PIDS"/*.pid; do
    [ -e "$p" ] || continue
    if kill -0 "$(cat "$p")" 2>/dev/null; then
      die "a twin is already running from $STATE ($(basename "$p" .pid)); run tests/twin/down.sh first"
    fi
  done
fi
rm -rf "$STATE/etcd-data" "$PKI" "$CONF" "$PIDS" "$STATE/kueue-webhook-certs"
[ -d "$LOGS" ] && rm -rf "$LOGS.previous" && mv "$LOGS" "$LOGS.previous"
mkdir -p "$PKI" "$LOGS" "$PIDS" "$CONF"
chmod 0700 "$STATE" "$PKI"

started_ok=false
on_exit() {
  if [ "$started_ok" != true ]; then
    echo "up.sh: start failed; logs kept in $LOGS" >&2
    "$HERE/down.sh" >&2 || true
  fi
}
trap on_exit EXIT

# ---- ports: all free loopback ports, taken at once so they differ --------------------
read -r P_ETCD P_ETCD_PEER P_API P_KCM P_SCHED P_KWOK P_KUEUE_HEALTH P_KUEUE_METRICS \
  P_KUEUE_WEBHOOK P_KUEUE_VIS < <("$PY" - <<'EOF'
import socket
socks = []
for _ in range(10):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)
API=https://127.0.0.1:$P_API

# ---- certificates ------------------------------------------------------------------
log "certificates"
openssl_q() { openssl "$@" 2>>"$LOGS/openssl.log"; }
openssl_q req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -days 30 -subj "/CN=gpushare-twin-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
# cert NAME "SUBJECT" serverAuth|clientAuth [SANs]
cert() {
  local name=$1 subj=$2 usage=$3 san=${4:-}
  openssl_q req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" -subj "$subj"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } > "$PKI/$name.ext"
  openssl_q x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 30 -out "$PKI/$name.crt" -extfile "$PKI/$name.ext"
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert kueue-webhook "/CN=kueue-webhook" serverAuth "IP:127.0.0.1,DNS:localhost"
cert kueue-metrics "/CN=kueue-metrics" serverAuth "IP:127.0.0.1,DNS:localhost"
cert admin "/O=system:masters/CN=gpushare-twin-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
# KWOK plays every kubelet at once, so no single system:node:<name> identity fits it.
cert kwok "/O=system:masters/CN=kwok-controller" clientAuth
# Kueue runs under its own ClusterRoles (from its module's config/components/rbac), as the
# user its chart's service account is (names.KUEUE_USER): the admission policies let only
# that user lift Kueue's scheduling gate and suspend.
KUEUE_USER=system:serviceaccount:kueue-system:kueue-controller-manager
cert kueue "/CN=$KUEUE_USER" clientAuth
openssl_q genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$PKI/sa.key"
openssl_q pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
# controller-runtime reads tls.crt/tls.key from the webhook certDir.
mkdir -p "$STATE/kueue-webhook-certs"
cp "$PKI/kueue-webhook.crt" "$STATE/kueue-webhook-certs/tls.crt"
cp "$PKI/kueue-webhook.key" "$STATE/kueue-webhook-certs/tls.key"
chmod 0600 "$PKI"/*.key "$STATE/kueue-webhook-certs/tls.key"
# With internalCertManagement disabled, Kueue v0.19 reads its metrics serving certificate
# from a fixed path, /etc/kueue/metrics/certs (cmd/kueue/main.go: metricsCertPath; the
# release mounts a Secret there), and exits if it is missing. That path is the twin's one
# write outside its state and cache directories, shared by every twin on the machine (52-multikueue
# runs three, and 50-twin may run beside them): each twin leaves a marker file there, the first
# one writes the certificate (nothing checks it against a CA), and down.sh removes it with the last
# marker. Certificates with no marker are someone else's and left alone.
KUEUE_METRICS_CERTS=/etc/kueue/metrics/certs
marker=$KUEUE_METRICS_CERTS/.gpushare-twin.$(printf %s "$STATE" | tr / _)
if [ -e "$KUEUE_METRICS_CERTS/tls.crt" ] && ! compgen -G "$KUEUE_METRICS_CERTS/.gpushare-twin.*" >/dev/null; then
  die "$KUEUE_METRICS_CERTS holds certificates that the twin did not write; not touching them"
fi
if ! mkdir -p "$KUEUE_METRICS_CERTS" 2>/dev/null || [ ! -w "$KUEUE_METRICS_CERTS" ]; then
  die "cannot write $KUEUE_METRICS_CERTS (Kueue's fixed metrics certificate path): run as root"
fi
touch "$marker"
echo "$marker" > "$STATE/kueue-metrics-marker"    # down.sh removes the marker named here
if [ ! -e "$KUEUE_METRICS_CERTS/tls.crt" ]; then
  install -m 0644 "$PKI/kueue-metrics.crt" "$KUEUE_METRICS_CERTS/tls.crt"
  install -m 0600 "$PKI/kueue-metrics.key" "$KUEUE_METRICS_CERTS/tls.key"
fi

kubeconfig() {  # NAME CERTNAME
  local out=$1 c=$2
  umask 077
  cat > "$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: twin
  cluster:
    server: $API
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: $c
  user:
    client-certificate-data: $(base64 -w0 < "$PKI/$c.crt")
    client-key-data: $(base64 -w0 < "$PKI/$c.key")
contexts:
- name: twin
  context: {cluster: twin, user: $c}
current-context: twin
EOF
  umask 022
}
kubeconfig "$STATE/admin.kubeconfig" admin
for c in controller-manager scheduler kwok kueue; do kubeconfig "$CONF/$c.kubeconfig" "$c"; done

cat > "$STATE/twin.env" <<EOF
# Written by tests/twin/up.sh; shell- and Python-readable (KEY=VALUE).
TWIN_STATE=$STATE
TWIN_BIN=$BIN
TWIN_APISERVER=$API
TWIN_KUBECONFIG=$STATE/admin.kubeconfig
TWIN_CA=$PKI/ca.crt
TWIN_CLIENT_CERT=$PKI/admin.crt
TWIN_CLIENT_KEY=$PKI/admin.key
TWIN_ETCD=http://127.0.0.1:$P_ETCD
TWIN_KWOK=http://127.0.0.1:$P_KWOK
TWIN_KUEUE_HEALTH=http://127.0.0.1:$P_KUEUE_HEALTH
TWIN_KUEUE_WEBHOOK=https://127.0.0.1:$P_KUEUE_WEBHOOK
TWIN_KUBE_VERSION=$TWIN_KUBE_VERSION
TWIN_KUEUE_VERSION=$TWIN_KUEUE_VERSION
TWIN_KWOK_VERSION=$TWIN_KWOK_VERSION
TWIN_ETCD_VERSION=$TWIN_ETCD_VERSION
EOF

# ---- process helpers ---------------------------------------------------------------
start() {  # NAME BINARY ARGS... (the command is kept in $PIDS/NAME.cmd for restart.sh)
  local name=$1; shift
  log "start $name"
  { [ -z "${KUBECONFIG:-}" ] || printf 'export KUBECONFIG=%q\n' "$KUBECONFIG"; printf 'exec'; printf ' %q' "$@"; echo; } > "$PIDS/$name.cmd"
  "$@" > "$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! > "$PIDS/$name.pid"
}
# wait_for NAME WHAT SECONDS CMD...: until CMD succeeds; fails early if NAME's process died.
wait_for() {
  local name=$1 what=$2 secs=$3; shift 3
  local pid; pid=$(cat "$PIDS/$name.pid")
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "up.sh: $name exited; last lines of $LOGS/$name.log:" >&2
      tail -n 40 "$LOGS/$name.log" >&2; return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "up.sh: $name not ready after ${secs}s (check: $*); last lines of $LOGS/$name.log:" >&2
      tail -n 40 "$LOGS/$name.log" >&2; return 1
    fi
    sleep 0.5
  done
  log "$name: $what"
}
probe() { "$PY" "$HERE/probe.py" "$@"; }
admin_probe() { probe --ca "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"; }
kubectl() { "$BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# ---- etcd --------------------------------------------------------------------------
# Plain HTTP on loopback, as envtest does; fsync off: a throwaway test store.
start etcd "$BIN/etcd" --name twin --data-dir "$STATE/etcd-data" \
  --listen-client-urls "http://127.0.0.1:$P_ETCD" --advertise-client-urls "http://127.0.0.1:$P_ETCD" \
  --listen-peer-urls "http://127.0.0.1:$P_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$P_ETCD_PEER" \
  --initial-cluster "twin=http://127.0.0.1:$P_ETCD_PEER" --unsafe-no-fsync --log-level warn
wait_for etcd "/health ok" 60 probe "http://127.0.0.1:$P_ETCD/health"

# ---- kube-apiserver ----------------------------------------------------------------
# resource.k8s.io/v1 (DRA) is GA and served by default since 1.34; no --runtime-config.
start kube-apiserver "$BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$P_ETCD" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$P_API" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
  --client-ca-file "$PKI/ca.crt" \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true --profiling=false \
  ${GPUSHARE_TWIN_KUBE_FEATURE_GATES:+--feature-gates=$GPUSHARE_TWIN_KUBE_FEATURE_GATES}
wait_for kube-apiserver "/readyz ok" 120 admin_probe "$API/readyz"

# ---- controller-manager and scheduler ----------------------------------------------
start kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig "$CONF/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$CONF/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$CONF/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$P_KCM" --leader-elect=false \
  --use-service-account-credentials=true \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
  --profiling=false ${GPUSHARE_TWIN_KUBE_FEATURE_GATES:+--feature-gates=$GPUSHARE_TWIN_KUBE_FEATURE_GATES}
start kube-scheduler "$BIN/kube-scheduler" \
  --kubeconfig "$CONF/scheduler.kubeconfig" \
  --authentication-kubeconfig "$CONF/scheduler.kubeconfig" \
  --authorization-kubeconfig "$CONF/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$P_SCHED" --leader-elect=false --profiling=false \
  ${GPUSHARE_TWIN_KUBE_FEATURE_GATES:+--feature-gates=$GPUSHARE_TWIN_KUBE_FEATURE_GATES}
# Their serving certificates are self-signed in memory; only /healthz is read, on loopback.
wait_for kube-controller-manager "/healthz ok" 60 probe --insecure "https://127.0.0.1:$P_KCM/healthz"
wait_for kube-scheduler "/healthz ok" 60 probe --insecure "https://127.0.0.1:$P_SCHED/healthz"

# ---- KWOK ---------------------------------------------------------------------------
# Node stages as kwokctl installs them by default (nodes initialise at once and keep a
# heartbeat lease), and KWOK's "general" pod stages: pods go Pending -> Running in ~1-6 s
# and a Job's pod completes after the delay in its annotation
# pod-complete.stage.kwok.x-k8s.io/delay (default ~1-6 s), so tests choose job run times.
{
  for s in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/general/pod-create.yaml pod/general/pod-init-container-running.yaml \
           pod/general/pod-init-container-completed.yaml pod/general/pod-ready.yaml \
           pod/general/pod-complete.yaml pod/general/pod-delete.yaml; do
    echo "---"; cat "$SHARE/kwok/stage/$s"
  done
} > "$CONF/kwok-stages.yaml"
start kwok "$BIN/kwok" --kubeconfig "$CONF/kwok.kubeconfig" --config "$CONF/kwok-stages.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --server-address "127.0.0.1:$P_KWOK" --node-ip 127.0.0.1 --node-port "$P_KWOK" \
  --node-lease-duration-seconds 40
wait_for kwok "/healthz ok" 60 probe "http://127.0.0.1:$P_KWOK/healthz"

# ---- Kueue ---------------------------------------------------------------------------
log "Kueue CRDs and RBAC"
kubectl apply --server-side --field-manager gpushare-twin -f "$SHARE/kueue/crds" > "$LOGS/kubectl.log"
kubectl wait --for condition=established --timeout 60s -f "$SHARE/kueue/crds" >> "$LOGS/kubectl.log"
kubectl create namespace kueue-system >> "$LOGS/kubectl.log"
"$PY" "$HERE/render.py" rbac "$SHARE/kueue/rbac" "$KUEUE_USER" "$CONF/kueue-rbac.yaml"
kubectl apply --server-side --field-manager gpushare-twin -f "$CONF/kueue-rbac.yaml" >> "$LOGS/kubectl.log"

{
  cat <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$P_KUEUE_HEALTH
metrics:
  bindAddress: 127.0.0.1:$P_KUEUE_METRICS
webhook:
  host: 127.0.0.1
  port: $P_KUEUE_WEBHOOK
  certDir: $STATE/kueue-webhook-certs
visibilityServer:
  bindAddress: 127.0.0.1
  bindPort: $P_KUEUE_VIS
leaderElection:
  leaderElect: false
# The twin makes the webhook certificate and CA itself (no Secret, no Service).
internalCertManagement:
  enable: false
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
EOF
  for fw in "${KUEUE_FRAMEWORKS[@]}"; do echo "  - \"$fw\""; done
} > "$CONF/kueue-config.yaml"
# GPUSHARE_TWIN_KUBE_FEATURE_GATES (above): Kubernetes feature gates of kube-apiserver,
# kube-controller-manager and kube-scheduler, e.g. DRAPartitionableDevices=true (test_dynamic_mig.py).
# GPUSHARE_TWIN_KUEUE_EXTRA_CONFIG: top-level keys appended to Kueue's Configuration, e.g. a
# MultiKueue manager's "multiKueue: {workerLostTimeout: 20s}" (tests/multikueue/three-twins.sh).
[ -z "${GPUSHARE_TWIN_KUEUE_EXTRA_CONFIG:-}" ] || printf '%s\n' "$GPUSHARE_TWIN_KUEUE_EXTRA_CONFIG" >> "$CONF/kueue-config.yaml"
# VisibilityOnDemand off: without internal cert management Kueue's visibility API server
# reads its certificate from the fixed path /visibility/tls.crt (pkg/visibility/server.go
# certDir), which the twin does not write; the twin does not serve pending-workload
# visibility (kubectl kueue list pending-workloads) for now.
KUBECONFIG=$CONF/kueue.kubeconfig start kueue "$BIN/kueue" --config "$CONF/kueue-config.yaml" \
  --feature-gates=VisibilityOnDemand=false --zap-log-level=2
wait_for kueue "/readyz ok" 120 probe "http://127.0.0.1:$P_KUEUE_HEALTH/readyz"
# The webhook server answers over TLS with the twin's CA (any HTTP status will do here).
wait_for kueue "webhook server answers TLS with the twin CA" 60 probe --ca "$PKI/ca.crt" --post --any-status \
  "https://127.0.0.1:$P_KUEUE_WEBHOOK/validate-kueue-x-k8s-io-v1beta2-resourceflavor"

"$PY" "$HERE/render.py" webhooks "$SHARE/kueue/webhooks.yaml" "$PKI/ca.crt" \
  "https://127.0.0.1:$P_KUEUE_WEBHOOK" "$CONF/kueue-webhooks.yaml" "${KUEUE_FRAMEWORKS[@]}"
kubectl apply --server-side --field-manager gpushare-twin -f "$CONF/kueue-webhooks.yaml" >> "$LOGS/kubectl.log"
# End to end through the apiserver: a server-side dry run passes Kueue's mutating and
# validating webhooks (failurePolicy Fail, so an unreachable webhook fails this).
probe_webhook() {
  kubectl create --dry-run=server -f - <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: twin-webhook-probe}
EOF
}
wait_for kueue "webhooks answer the apiserver (dry-run ResourceFlavor)" 60 probe_webhook
# Kueue's /readyz does not cover its informers: with missing RBAC its caches never sync
# and it exits minutes later. Its ResourceFlavor controller adds a finalizer to every
# flavor, so a flavor that gets it proves the controllers run.
probe_flavor() {
  [ "$(kubectl get resourceflavor twin-readiness-probe -o jsonpath='{.metadata.finalizers}')" = \
    '["kueue.x-k8s.io/resource-in-use"]' ]
}
kubectl create -f - >> "$LOGS/kubectl.log" <<'EOF'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: twin-readiness-probe}
EOF
wait_for kueue "controllers reconcile (ResourceFlavor finalizer)" 60 probe_flavor
kubectl delete resourceflavor twin-readiness-probe --wait=true --timeout 60s >> "$LOGS/kubectl.log"
log "Kubernetes $TWIN_KUBE_VERSION, Kueue $TWIN_KUEUE_VERSION, KWOK $TWIN_KWOK_VERSION up at $API"
log "export KUBECONFIG=$STATE/admin.kubeconfig"
started_ok=true
