#!/usr/bin/env bash
# site.yml without a cluster: syntax check for every example inventory, then a check-mode
# run of the plan and GPU stack stages with gpushare_render_only=true, which makes the
# gpu_operator, dra_driver, kueue and monitoring roles write every Helm value file and
# object they would apply to a directory; the rendered files are then asserted. The real
# apply path runs against the cluster twin. Never skips: anything that cannot run fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
source tests/suite-env.sh
export ANSIBLE_CONFIG="$root/ansible.cfg"
require_tools 35-site-check ansible-playbook

python tests/molecule/check-argument-specs.py roles/gpu_operator roles/dra_driver roles/kueue roles/monitoring

work=$(mktemp -d /tmp/gpushare-site-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
examples=$(find inventory-examples -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr "\n" " ")
[ -n "$examples" ] || { echo "35-site-check: no example inventories" >&2; exit 1; }

for inv in $examples; do
  echo "--- syntax-check: $inv ---"
  ansible-playbook -i "inventory-examples/$inv" playbooks/site.yml --syntax-check
done

# gpushare_window=none: the base state whatever the hour (the checker compares with it;
# by default the roles apply the window in force now, e.g. the night window after 19:00).
for inv in $examples; do
  echo "--- check mode, render only: $inv ---"
  out="$work/$inv"
  ansible-playbook -i "inventory-examples/$inv" playbooks/site.yml --check \
    --tags plan,gpu_operator,dra_driver,kueue,monitoring \
    -e gpushare_render_only=true -e "gpushare_plan_dir=$out" \
    -e gpushare_window=none | tee "$work/$inv.log"
  python tests/unit/test_roles_render.py "$inv" "$out/rendered"
  # check mode wrote no plan files and generated no password
  if [ -e "$out/plan.json" ] || [ -e "$out/secrets" ]; then
    echo "35-site-check: --check wrote plan files or secrets under $out" >&2; exit 1
  fi
done
echo "35-site-check: site.yml syntax and render-only check mode passed for: $examples"
