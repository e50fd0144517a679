#!/usr/bin/env bash
# kubeadm for real: `playbooks/kubernetes.yml` (host_prep + kubeadm, as a user runs it)
# against two node containers built like kind's (systemd as PID 1, containerd from Debian,
# kubelet/kubeadm/kubectl packages built from k8s.io/kubernetes, control-plane images
# imported under the names kubeadm asks for from a private-mirror image repository):
#   1st run: kubeadm init on cp1, join of gpu-worker1 (node names from the inventory, not
#            the containers' hostnames), bridge CNI; both Ready, CoreDNS Ready; no bootstrap
#            token or certificate key in the verbose log nor in any process's arguments
#            sampled during the join; afterwards no bootstrap token and no kubeadm-certs left
#   2nd run: changed=0
#   preflight: swap on, br_netfilter missing, a third machine claiming gpu-worker1's name,
#            containerd on cgroupfs: each refused with its fix
#   3rd run: the worker's kubelet.conf deleted; it rejoins and is Ready; no token left
# Builds (or reuses) everything it needs in ~/.cache/gpushare-twin and docker images;
# fails, never skips, when anything cannot run. Logs: $GPUSHARE_KUBEADM_STATE (kept on failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
[ ! -x "$root/.venv/bin/python" ] || export PATH="$root/.venv/bin:$PATH"
if [ ! -e .collections/ansible_collections/gpushare/cluster ]; then
  mkdir -p .collections/ansible_collections/gpushare
  ln -sfn ../../.. .collections/ansible_collections/gpushare/cluster
fi
suite_start=$(date +%s)
say() { echo "kubeadm suite: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

# shellcheck source-path=SCRIPTDIR/../.. source=tests/twin/versions.sh
. tests/twin/versions.sh
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
NET=gpushare-kubeadm
CP=gpushare-kubeadm-cp1 WORKER=gpushare-kubeadm-worker1 INTRUDER=gpushare-kubeadm-intruder

# Build --------------------------------------------------------------------------------
tests/molecule/ensure-docker.sh
tests/molecule/build-image.sh
# etcd, kube-apiserver, -controller-manager, -scheduler, kubectl; kubelet, kubeadm, kube-proxy,
# CoreDNS and pause for the nodes.
tests/twin/build.sh etcd kube kube-node coredns pause
node_image=$(tests/kubeadm/build-node-image.sh)

own_state=false
if [ -z "${GPUSHARE_KUBEADM_STATE:-}" ]; then
  GPUSHARE_KUBEADM_STATE=$(mktemp -d /tmp/gpushare-kubeadm.XXXXXX); own_state=true
fi
mkdir -p "$GPUSHARE_KUBEADM_STATE"
state=$GPUSHARE_KUBEADM_STATE
minor=${TWIN_KUBE_VERSION#v}; minor=${minor%.*}
export GPUSHARE_KUBEADM_STATE GPUSHARE_KUBEADM_MINOR=$minor GPUSHARE_KUBEADM_VERSION=${TWIN_KUBE_VERSION#v}
export GPUSHARE_KUBEADM_ETCD_TAG=${TWIN_ETCD_VERSION#v}-0 GPUSHARE_KUBEADM_COREDNS_TAG=$TWIN_COREDNS_VERSION
GPUSHARE_DEBIAN_MIRROR=$(tests/molecule/debian-mirror.sh); export GPUSHARE_DEBIAN_MIRROR

tests/kubeadm/build-repo.sh "$CACHE/kubeadm-repo/core:/stable:/v$minor"
# The stand-in repository's own key is the pinned one here (kubeadm_repo_key_fingerprints).
GPUSHARE_KUBEADM_REPO_FINGERPRINT=$(gpg --show-keys --with-colons "$CACHE/kubeadm-repo/core:/stable:/v$minor/deb/Release.key" \
  | awk -F: '$1 == "fpr" {print $10; exit}')
[ -n "$GPUSHARE_KUBEADM_REPO_FINGERPRINT" ] || fail "no fingerprint in the stand-in repository's Release.key"
export GPUSHARE_KUBEADM_REPO_FINGERPRINT
# The image names kubeadm derives from the inventory's repository and tags.
repo_name=$(sed -n 's/^kubeadm_image_repository: //p' tests/kubeadm/inventory/group_vars/all.yml)
cat > "$state/images-config.yaml" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $TWIN_KUBE_VERSION
imageRepository: $repo_name
etcd: {local: {imageTag: "$GPUSHARE_KUBEADM_ETCD_TAG"}}
dns: {imageTag: "$GPUSHARE_KUBEADM_COREDNS_TAG"}
EOF
images_tar=$CACHE/kubeadm-images/images.tar
tests/kubeadm/build-images.sh "$state/images-config.yaml" "$node_image" "$images_tar"
build_done=$(date +%s)
say "build/reuse: $((build_done - suite_start)) s"

# Node containers -----------------------------------------------------------------------
repo_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  [ -z "$repo_pid" ] || kill "$repo_pid" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    for c in $CP $WORKER; do
      docker exec "$c" journalctl -u kubelet --no-pager -n 60 > "$state/$c-kubelet.log" 2>&1 || true
    done
    say "logs in $state (node containers left running for inspection; tests/kubeadm/down.sh removes them)"
  else
    tests/kubeadm/down.sh
    [ "$own_state" != true ] || rm -rf "$state"
  fi
  exit "$rc"
}
trap cleanup EXIT
tests/kubeadm/down.sh
docker network create "$NET" >/dev/null
gateway=$(docker network inspect -f '{{(index .IPAM.Config 0).Gateway}}' "$NET")
port=$(python -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
python -m http.server "$port" --bind "$gateway" --directory "$CACHE/kubeadm-repo" > "$state/repo-http.log" 2>&1 &
repo_pid=$!
export GPUSHARE_KUBEADM_REPO=http://$gateway:$port

# The resolver pods get (tests/kubeadm/node/entrypoint.sh): this machine's first
# non-loopback one, else the network's gateway (CoreDNS then only serves cluster names).
node_dns=$(awk '$1 == "nameserver" && $2 !~ /^127\./ {print $2; exit}' /etc/resolv.conf)
node_dns=${node_dns:-$gateway}
node() {  # container hostname
  # kind's node flags without --privileged (refused here: CAP_SYS_RESOURCE is withheld):
  # every other capability, no seccomp/AppArmor profile, writable /proc/sys, a private
  # cgroup namespace (tests/kubeadm/node/entrypoint.sh remounts it read-write), /var on a
  # volume (containerd's overlayfs snapshots cannot live on the container's overlayfs),
  # tmpfs /run and /tmp, /dev/kmsg for kubelet's OOM watcher, and every device in the
  # devices cgroup (privileged pods such as kube-proxy ask runc for "a *:* rwm"; a cgroup v1
  # child cannot be given more than its parent).
  local modules=()
  [ ! -d /lib/modules ] || modules=(-v /lib/modules:/lib/modules:ro)
  docker run -d --name "$1" --hostname "$2" --network "$NET" \
    --cap-add=ALL --cap-drop=SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
    --cgroupns private --device-cgroup-rule "a *:* rwm" --tmpfs /run --tmpfs /tmp -v /var --device /dev/kmsg "${modules[@]}" \
    -e "GPUSHARE_NODE_DNS=$node_dns" \
    "$node_image" >/dev/null
}
node "$CP" node-a
node "$WORKER" node-b
for c in $CP $WORKER; do
  for _ in $(seq 1 60); do
    s=$(docker exec "$c" systemctl is-system-running 2>/dev/null || true)
    case "$s" in running|degraded) break ;; esac
    sleep 1
  done
  case "$s" in running|degraded) ;; *) fail "$c: systemd did not finish booting ($s)" ;; esac
done
# What `kubeadm config images pull` would fetch from the mirror, imported instead.
for c in $CP $WORKER; do
  docker exec -i "$c" ctr -n k8s.io images import - < "$images_tar" > /dev/null \
    || fail "$c: ctr images import"
done
nodes_up=$(date +%s)
say "node containers up, images imported: $((nodes_up - build_done)) s"

# Playbook runs ---------------------------------------------------------------------------
play() {  # log-name [ansible-playbook args...]
  local name=$1; shift
  local t0; t0=$(date +%s)
  set +e
  ANSIBLE_FORCE_COLOR=0 ANSIBLE_PIPELINING=true ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks \
    ansible-playbook -i "${INVENTORY:-tests/kubeadm/inventory}" playbooks/kubernetes.yml "$@" \
    > "$state/$name.log" 2>&1
  local rc=$?
  set -e
  say "$name: exit $rc in $(( $(date +%s) - t0 )) s (log $state/$name.log)"
  return "$rc"
}
recap_changed() {  # log -> sum of changed= over the recap
  awk '/^PLAY RECAP/ {r = 1; next} r && /changed=/ {for (i = 1; i <= NF; i++) if ($i ~ /^changed=/) {split($i, a, "="); s += a[2]}} END {print s + 0}' "$1"
}
kc() { docker exec "$CP" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }
wait_for() {  # seconds description command...
  local deadline=$(( $(date +%s) + $1 )) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out waiting for $what"
    sleep 3
  done
}
nodes_ready() {
  [ "$(kc get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | sort | tr '\n' ' ')" = "cp1=True gpu-worker1=True " ]
}
coredns_ready() {
  local ready
  ready=$(kc -n kube-system get pods -l k8s-app=kube-dns -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
  [ -n "$ready" ] && ! grep -qv True <<<"$ready"
}

# While the first run joins, the process list of both nodes (/proc/*/cmdline, what `ps -eo
# args` prints; the node image has no procps) and the bootstrap tokens that exist are sampled
# every 0.2 s, so a secret in any argv (kubeadm's, Ansible's) is caught.
sample_join() {  # output file; runs until killed
  set +e +o pipefail   # a sample that fails (kubeadm not installed yet) must not end the sampler
  while :; do
    for c in "$CP" "$WORKER"; do
      docker exec "$c" sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < "$f" 2>/dev/null; echo; done' 2>/dev/null \
        | sed -n "s/^\(..*\)$/$c: \1/p"
    done
    docker exec "$CP" kubeadm token list -o jsonpath='{.token}{"\n"}' 2>/dev/null \
      | sed -nE 's/^([a-z0-9]{6}\.[a-z0-9]{16})$/token: \1/p'
    sleep 0.2
  done >> "$1"
}
sample_join "$state/run1-processes.txt" &
sampler_pid=$!
play run1 -v || { kill "$sampler_pid" 2>/dev/null || true; tail -n 40 "$state/run1.log" >&2; fail "first run"; }
kill "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true
run1_done=$(date +%s)
nodes_ready || { kc get nodes -o wide >&2 || true; fail "nodes cp1 and gpu-worker1 are not both Ready"; }
say "nodes: $(kc get nodes -o jsonpath='{range .items[*]}{.metadata.name} ({.status.nodeInfo.kubeletVersion}, {.status.nodeInfo.containerRuntimeVersion}) {end}')"
wait_for 180 "CoreDNS Ready" coredns_ready
kc -n kube-system get pods -o wide > "$state/pods.txt"
grep -q "kube-proxy" "$state/pods.txt" || fail "no kube-proxy pod"
# Every image came from the local import: containerd pulled nothing from the mirror.
if docker exec "$CP" journalctl -u containerd --no-pager | grep -q 'PullImage "'; then
  fail "containerd was asked to pull an image (journalctl -u containerd)"
fi
# The join credentials are revoked: no bootstrap token left, no uploaded certificates.
no_join_credentials() {  # run name
  local left
  left=$(docker exec "$CP" kubeadm token list -o jsonpath='{.token}{"\n"}') || fail "$1: kubeadm token list failed"
  [ -z "$left" ] || fail "$1: bootstrap tokens left after the join: IDs $(cut -d. -f1 <<<"$left" | tr '\n' ' ')"
  [ -z "$(kc -n kube-system get secret kubeadm-certs --ignore-not-found -o name)" ] \
    || fail "$1: the kubeadm-certs Secret is still there after the join"
}
no_join_credentials run1
# The sampler saw the join and the tokens of the run; none of them, and no certificate key or
# kubeadm secret flag, is in a process's arguments or in the verbose (-v) log.
grep -qE "^$WORKER: kubeadm join --config=" "$state/run1-processes.txt" \
  || fail "the process samples never caught 'kubeadm join --config' on $WORKER ($state/run1-processes.txt)"
tokens=$(sed -n 's/^token: //p' "$state/run1-processes.txt" | sort -u)
[ -n "$tokens" ] || fail "the samples saw no bootstrap token to look for"
while read -r t; do
  ! grep -v '^token: ' "$state/run1-processes.txt" | grep -qF "$t" || fail "bootstrap token $t is in a process's arguments"
  ! grep -qF "$t" "$state/run1.log" || fail "bootstrap token $t is in the playbook log"
done <<<"$tokens"
if grep -E "^($CP|$WORKER): .*kubeadm" "$state/run1-processes.txt" \
    | grep -qE -- '--token|--certificate-key|--discovery-token|[a-z0-9]{6}\.[a-z0-9]{16}'; then
  fail "a kubeadm process had a secret in its arguments: $(grep -E "kubeadm.*(--token|--certificate-key)" "$state/run1-processes.txt" | head -1 | sed -E 's/[a-z0-9]{6}\.[a-z0-9]{16}/<token>/g')"
fi
if grep -qiE 'certificate[ -]key[^a-f0-9]{1,20}[a-f0-9]{64}' "$state/run1.log"; then
  fail "a certificate key is in the playbook log"
fi
say "first run: $(grep -c '^token: ' "$state/run1-processes.txt") token samples, $(grep -c "^$WORKER: kubeadm join --config=" "$state/run1-processes.txt") samples of the join with no secret in argv; no token left"
say "first run: both nodes Ready, CoreDNS Ready, no secret in the log"

play run2 || fail "second run"
changed=$(recap_changed "$state/run2.log")
[ "$changed" -eq 0 ] || { grep -B2 -E '^changed:' "$state/run2.log" | head -40 >&2; fail "second run changed $changed tasks"; }
run2_done=$(date +%s)
say "second run: changed=0"

# Preflight: each problem refused with its fix ------------------------------------------
expect_refusal() {  # log-name message [playbook args...]
  local name=$1 message=$2; shift 2
  if play "$name" "$@"; then fail "$name: the run succeeded; expected: $message"; fi
  grep -qF "$message" "$state/$name.log" || { tail -n 30 "$state/$name.log" >&2; fail "$name: no \"$message\""; }
}
docker exec "$WORKER" sh -c 'printf "Filename\tType\tSize\tUsed\tPriority\n/swapfile-test\tfile\t1048572\t0\t-2\n" > /run/fake-swaps &&
  mount --bind /run/fake-swaps /proc/swaps && mount -t tmpfs -o size=4k no-br-netfilter /proc/sys/net/bridge'
expect_refusal preflight-host "GPU-Worker1.lab.example: swap is on (/swapfile-test)" --tags kubernetes
grep -qF "kernel module br_netfilter is not loaded (no /proc/sys/net/bridge/bridge-nf-call-iptables)" "$state/preflight-host.log" \
  || fail "preflight-host: missing br_netfilter not reported"
docker exec "$WORKER" sh -c 'umount /proc/sys/net/bridge && umount /proc/swaps'
node "$INTRUDER" node-c
wait_for 60 "$INTRUDER booted" docker exec "$INTRUDER" systemctl is-system-running
INVENTORY=tests/kubeadm/intruder.yml expect_refusal preflight-name \
  "the Kubernetes node name gpu-worker1 is already taken by another machine" \
  -e @tests/kubeadm/inventory/group_vars/all.yml --tags kubernetes
docker rm -f -v "$INTRUDER" >/dev/null
docker exec "$WORKER" sh -c 'printf "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = false\n" \
  > /etc/containerd/conf.d/50-cgroupfs.toml && systemctl restart containerd'
expect_refusal preflight-cgroup "GPU-Worker1.lab.example: containerd runs containers with the cgroupfs cgroup driver" \
  --tags kubernetes
docker exec "$WORKER" sh -c 'rm /etc/containerd/conf.d/50-cgroupfs.toml && systemctl restart containerd'
preflight_done=$(date +%s)
say "preflight refusals: swap, br_netfilter, node name taken, cgroup driver"

# Rejoin ----------------------------------------------------------------------------------
uid_before=$(kc get node gpu-worker1 -o jsonpath='{.metadata.uid}')
docker exec "$WORKER" rm /etc/kubernetes/kubelet.conf
play run3 || { tail -n 40 "$state/run3.log" >&2; fail "third run (rejoin)"; }
[ "$(recap_changed "$state/run3.log")" -gt 0 ] || fail "third run changed nothing"
docker exec "$WORKER" test -s /etc/kubernetes/kubelet.conf || fail "worker has no kubelet.conf after the third run"
[ "$(kc get node gpu-worker1 -o jsonpath='{.metadata.uid}')" != "$uid_before" ] || fail "gpu-worker1 was not registered again"
no_join_credentials run3
wait_for 120 "both nodes Ready after the rejoin" nodes_ready
wait_for 180 "CoreDNS Ready after the rejoin" coredns_ready
end=$(date +%s)
say "third run: gpu-worker1 rejoined and Ready"
say "timings (s): build/reuse $((build_done - suite_start)), nodes $((nodes_up - build_done)), run1+checks $((run1_done - nodes_up)), run2 $((run2_done - run1_done)), preflight $((preflight_done - run2_done)), rejoin $((end - preflight_done)), total $((end - suite_start))"
