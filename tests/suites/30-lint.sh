#!/usr/bin/env bash
# yamllint, ansible-lint (production profile), argument specs in step with defaults,
# changelog fragments, and an installable collection tarball.
set -euo pipefail
cd "$(dirname "$0")/../.."
yamllint -s .
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# ansible-lint puts its cache's collections (ANSIBLE_HOME, default ~/.ansible) first on the
# collection path: an own cache keeps a gpushare.cluster installed there by another tool
# (Molecule, ansible-galaxy) from standing in for this checkout.
ANSIBLE_HOME="$out/ansible-home" ansible-lint --profile production --offline
python tests/molecule/check-argument-specs.py roles/*/
antsibull-changelog lint
ansible-galaxy collection build --force --output-path "$out" >/dev/null
tarball=$(ls "$out"/gpushare-cluster-*.tar.gz)
ansible-galaxy collection install --force --offline --no-deps -p "$out/installed" "$tarball" >/dev/null
test -f "$out/installed/ansible_collections/gpushare/cluster/plugins/modules/plan.py"
echo "collection tarball $(basename "$tarball") builds and installs"
