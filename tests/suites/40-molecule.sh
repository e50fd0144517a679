#!/usr/bin/env bash
# Molecule scenarios of the host roles (docker driver): host_prep, kubeadm (prerequisites
# stage against a local pkgs.k8s.io stand-in) and microk8s (snap/microk8s stand-ins).
# Each: check mode, converge, idempotence, verify. Installs and starts the Docker engine
# when none answers and builds the Debian 12 systemd image locally (cached).
# Needs root on a Debian/Ubuntu machine the first time (apt-get, dockerd). Never skips:
# anything that cannot run fails the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."

source tests/suite-env.sh
python -c 'import molecule, molecule_plugins.docker' || {
  echo "40-molecule: molecule / molecule-plugins[docker] missing; run make dev-venv" >&2; exit 1; }

tests/molecule/ensure-docker.sh
tests/molecule/build-image.sh
GPUSHARE_DEBIAN_MIRROR=$(tests/molecule/debian-mirror.sh)
export GPUSHARE_DEBIAN_MIRROR

python tests/molecule/check-argument-specs.py roles/host_prep roles/kubeadm roles/microk8s

failed=()
for role in host_prep kubeadm microk8s; do
  start=$(date +%s)
  echo "--- molecule test: $role (default) ---"
  if (cd "roles/$role" && python -m molecule test -s default); then
    echo "--- molecule $role passed in $(( $(date +%s) - start ))s ---"
  else
    echo "--- molecule $role FAILED after $(( $(date +%s) - start ))s ---"
    failed+=("$role")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "40-molecule: failed scenarios: ${failed[*]}" >&2
  exit 1
fi
echo "40-molecule: host_prep, kubeadm, microk8s passed"
