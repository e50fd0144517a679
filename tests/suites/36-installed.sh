#!/usr/bin/env bash
# The playbooks both ways users run them: from the installed collection tarball
# (ansible-playbook gpushare.cluster.plan / gpushare.cluster.site) and from a checkout
# (playbooks/plan.yml). Asserts that the artifacts land under the inventory
# (<inventory>/artifacts), or under gpushare_artifacts_dir when set, and never in the
# installed collection's folder. No cluster: plan.yml fully, site.yml's render-only check.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
source tests/suite-env.sh
require_tools 36-installed ansible-galaxy
work=$(mktemp -d /tmp/gpushare-installed.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "36-installed: $*" >&2; exit 1; }

# Build and install the tarball into an empty collections path (dependencies: kubernetes.core
# from the venv's site-packages, which ansible-galaxy cannot reach offline, so --no-deps).
ansible-galaxy collection build --force --output-path "$work/dist" . >/dev/null
# --force: this checkout is on the configured collections path as gpushare.cluster too.
ansible-galaxy collection install --force --no-deps -p "$work/collections" "$work"/dist/gpushare-cluster-*.tar.gz >/dev/null
installed="$work/collections/ansible_collections/gpushare/cluster"
[ -f "$installed/playbooks/site.yml" ] || fail "the tarball has no playbooks/site.yml"
cp -r inventory-examples/four-gpu-server "$work/inv"
rm -rf "$work/inv/artifacts"
# Run from an unrelated directory, with only the installed copy on the collections path
# (no ansible.cfg of this checkout), read-only as in an execution environment.
chmod -R a-w "$installed"
cd "$work"
export ANSIBLE_COLLECTIONS_PATH="$work/collections:$root/.venv/lib/python3.11/site-packages"
printf '[defaults]\nretry_files_enabled = false\n' > "$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg" ANSIBLE_FORCE_COLOR=0

echo "--- installed: ansible-playbook -i inv gpushare.cluster.plan"
ansible-playbook -i inv/hosts.yml gpushare.cluster.plan -e gpushare_window=none > plan.log || { cat plan.log; fail "gpushare.cluster.plan failed"; }
for f in plan.json report.md split.svg manifests/20-node-labels.yaml; do
  [ -s "inv/artifacts/$f" ] || { ls -R inv/artifacts || true; fail "inv/artifacts/$f missing after gpushare.cluster.plan"; }
done
[ -z "$(find "$installed" -name artifacts -o -name plan.json)" ] || fail "artifacts written into the installed collection"

echo "--- installed: gpushare.cluster.site --check, render only"
ansible-playbook -i inv/hosts.yml gpushare.cluster.site --check --tags plan,gpu_operator,dra_driver,kueue \
  -e gpushare_render_only=true -e gpushare_window=none > site.log || { tail -50 site.log; fail "gpushare.cluster.site --check failed"; }
[ -s inv/artifacts/rendered/kueue/values.yaml ] || fail "inv/artifacts/rendered/kueue/values.yaml missing after gpushare.cluster.site"

echo "--- installed: -i <directory> with the artifacts inside it is refused with the fix"
if ansible-playbook -i inv gpushare.cluster.plan -e gpushare_window=none > refused.log; then
  fail "plan files written inside the -i directory were accepted"
fi
grep -q "Pass the inventory file instead (-i .*/inv/hosts.yml" refused.log || { tail -20 refused.log; fail "no clear message for -i <directory>"; }

echo "--- installed: -i <directory>, gpushare_artifacts_dir elsewhere"
ansible-playbook -i inv gpushare.cluster.plan -e gpushare_window=none -e "gpushare_artifacts_dir=$work/elsewhere" > plan2.log || { cat plan2.log; fail "plan with gpushare_artifacts_dir failed"; }
[ -s "$work/elsewhere/plan.json" ] || fail "gpushare_artifacts_dir not honoured"

echo "--- checkout: playbooks/plan.yml"
cd "$root"
rm -rf "$work/inv/artifacts"
env -u ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG="$root/ansible.cfg" ansible-playbook -i "$work/inv/hosts.yml" playbooks/plan.yml -e gpushare_window=none > "$work/plan3.log" \
  || { cat "$work/plan3.log"; fail "playbooks/plan.yml failed"; }
[ -s "$work/inv/artifacts/plan.json" ] || fail "playbooks/plan.yml wrote no $work/inv/artifacts/plan.json"
chmod -R u+w "$installed"
echo "36-installed: gpushare.cluster.plan/site from the tarball and playbooks/plan.yml from the checkout write to <inventory>/artifacts"
