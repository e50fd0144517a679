#!/usr/bin/env bash
# MultiKueue on three cluster twins (a manager and two workers, each a real kube-apiserver
# with the real Kueue v0.19.2 and KWOK GPU nodes; tests/multikueue/three-twins.sh, reusing
# 50-twin's builds): playbooks/multikueue.yml wires them, a rerun changes nothing, workers
# leave and join the MultiKueueConfig with the inventory, Jobs submitted on the manager run
# once on a worker with room and report back, a lost worker's job runs again elsewhere after
# workerLostTimeout, bad input applies nothing (docs/multikueue.md). Fails, never skips.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/twin/shared-cert-check.sh   # twins side by side, as here and beside 50-twin
exec bash tests/multikueue/three-twins.sh
