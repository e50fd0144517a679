#!/usr/bin/env bash
# Removes the kubeadm test's node containers (with their /var volumes) and network.
set -euo pipefail
for c in gpushare-kubeadm-cp1 gpushare-kubeadm-worker1 gpushare-kubeadm-intruder; do
  docker rm -f -v "$c" >/dev/null 2>&1 || true
done
docker network rm gpushare-kubeadm >/dev/null 2>&1 || true
