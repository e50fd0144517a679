#!/usr/bin/env bash
# kubeadm for real: `playbooks/kubernetes.yml` runs `kubeadm init` and `join` in two
# kind-like node containers (tests/kubeadm/suite.sh; docs/testing.md "kubeadm for real").
# Fails, never skips, when a part cannot be built or started.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash tests/kubeadm/suite.sh
