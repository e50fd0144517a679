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
# Volumes with mount propagation (kubelet, CSI) need a shared root mount.
mount --make-rshared /
exec "$@"
