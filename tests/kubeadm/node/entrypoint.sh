#!/bin/sh
# Runs before systemd (PID 1) in the kubeadm test's node containers (what kind's node
# entrypoint does, for a container that is not --privileged).
set -eu
# The container has its own cgroup namespace: the cgroup mounts Docker made show this
# container's cgroup as "/", which is what systemd, kubelet and runc compute their paths
# against. Docker mounts them read-only for every container that is not --privileged
# (refused on the test machine); systemd, kubelet and runc create cgroups: remount rw.
for target in $(findmnt -rn -t cgroup,cgroup2 -o TARGET); do
  mount -o remount,bind,rw "$target"
done
# kubelet sets three kernel-wide sysctls when they differ from what it wants
# (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1). They are not
# namespaced: written from here they would change the test machine's kernel. Each node
# sees a file with kubelet's value instead (what lxcfs does for /proc files).
mkdir -p /etc/gpushare-node-sysctl
for setting in vm/overcommit_memory=1 kernel/panic=10 kernel/panic_on_oops=1; do
  file=/etc/gpushare-node-sysctl/$(echo "${setting%%=*}" | tr / .)
  echo "${setting#*=}" > "$file"
  mount --bind "$file" "/proc/sys/${setting%%=*}"
done
# Pods with the node's DNS (CoreDNS) must not get Docker's 127.0.0.11, which answers only
# in the node's own network namespace (CoreDNS stops on a forwarding loop): kubelet reads
# this file instead (resolvConf in the test inventory), with the resolver the suite passes.
echo "nameserver ${GPUSHARE_NODE_DNS:-192.0.2.53}" > /etc/gpushare-node-resolv.conf
# A machine-id of its own (kubelet reports it; the preflight tells machines apart by it):
# with an empty /etc/machine-id, systemd in a container derives it from the host's DMI
# product UUID, the same for every node.
[ -s /etc/machine-id ] || tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id
# Volumes with mount propagation (kubelet, CSI) need a shared root mount.
mount --make-rshared /
exec "$@"
