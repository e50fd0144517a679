#!/usr/bin/env bash
# AWX without an AWX server (none can run here; docs/awx.md):
#   1. ansible-lint on playbooks/awx.yml and its role roles/awx with the `args` rule fatal
#      (tests/awx/ansible-lint.yml), and proof that it checks every awx.awx task: a copy of the
#      role's tasks with a misspelt option in each must give one args[module] finding per task;
#   2. the job templates, surveys and schedules awx.yml makes from each example inventory's
#      Plan (and from the example day in Europe/Berlin), checked offline against AWX's rules
#      and their next runs computed as AWX does, across daylight-saving changes; every template
#      launchable through the API with no extra vars; no SCM inventory source on a manual
#      project, one on a git project;
#   3. the role run against a stand-in for AWX 24.6.1's API (tests/awx/fake_awx.py): names
#      checked before any write, one project sync and nothing created before it succeeded, a
#      manual project's left-over SCM inventory source removed (tests/awx/test_role_against_fake_api.py);
#   4. the execution environment built with ansible-builder from meta/execution-environment.yml
#      (local Debian 12 base; Docker's layer cache makes an unchanged rebuild take seconds);
#   5. the plan job and a render-mode GPU stack job run through it the way AWX runs them:
#      ansible-runner transmit | docker run -i EE ansible-runner worker | ansible-runner process,
#      with the survey answers and the 19:00 schedule's extra data; job events asserted.
# Never skips: anything that cannot run fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
source tests/suite-env.sh
export ANSIBLE_CONFIG="$root/ansible.cfg"
require_tools 60-awx ansible-builder ansible-runner ansible-lint ansible-playbook
python -c 'import dateutil.rrule' || { echo "60-awx: python-dateutil missing; run make dev-venv" >&2; exit 1; }
work=$(mktemp -d /tmp/gpushare-awx.XXXXXX)
trap 'rm -rf "$work"' EXIT
step() { echo "--- 60-awx: $* ($(date +%T)) ---"; }

step "ansible-lint playbooks/awx.yml and roles/awx, args rule fatal"
# ansible-lint puts the collections of its cache (ANSIBLE_HOME, default ~/.ansible, also where
# ansible-galaxy installs by default) first on the collection path: a cache of its own keeps a
# gpushare.cluster installed there from standing in for this checkout's roles/awx.
lint_home="$work/ansible-home"
ANSIBLE_HOME=$lint_home ansible-lint -c tests/awx/ansible-lint.yml playbooks/awx.yml roles/awx
tasks=$(grep -cE '^ +awx\.awx\.[a-z_]+:$' roles/awx/tasks/main.yml)
mutant="$work/roles/awx/tasks/main.yml"
mkdir -p "$work/roles/awx/tasks"
sed -E 's/^( +)(awx\.awx\.[a-z_]+:)$/\1\2\n\1  gpushare_misspelt_option: 1/' roles/awx/tasks/main.yml >"$mutant"
rc=0
ANSIBLE_HOME=$lint_home ansible-lint -c tests/awx/ansible-lint.yml -f pep8 --nocolor "$mutant" \
  >"$work/lint-mutant.log" 2>&1 || rc=$?
found=$(grep -c 'args\[module\].*Unsupported parameters .*gpushare_misspelt_option' "$work/lint-mutant.log" || true)
if [ "$rc" -eq 0 ] || [ "$found" -ne "$tasks" ]; then
  cat "$work/lint-mutant.log" >&2
  echo "60-awx: a misspelt option in each of the $tasks awx.awx tasks gave $found args[module] findings (rc $rc)" >&2
  exit 1
fi
echo "args rule: $found of $tasks awx.awx tasks with a misspelt option refused (rc $rc)"

step "AWX definitions from each inventory's plan, checked offline"
cp -r inventory-examples/four-gpu-server "$work/example-day-berlin"
rm -rf "$work/example-day-berlin/artifacts"
sed -i -E 's|^(  timezone: )UTC( .*)?$|\1Europe/Berlin\2|' "$work/example-day-berlin/group_vars/all/policy.yml"
grep -q '^  timezone: Europe/Berlin' "$work/example-day-berlin/group_vars/all/policy.yml" \
  || { echo "60-awx: could not set the Berlin variant's time zone" >&2; exit 1; }
for inv in inventory-examples/*/ "$work/example-day-berlin/"; do
  name=$(basename "$inv")
  ansible-playbook -i "$inv" playbooks/awx.yml -e gpushare_awx_render_only=true \
    -e "gpushare_awx_render_dir=$work/defs/$name" >"$work/awx-$name.log" 2>&1 \
    || { tail -n 40 "$work/awx-$name.log" >&2; exit 1; }
  extra=(--project manual)
  [ "$name" = example-day-berlin ] && extra+=(--expect-dst)
  python tests/awx/validate.py "$work/defs/$name/definitions.json" --inventory "$inv" "${extra[@]}"
done
# A git project gets the SCM inventory source that a manual one cannot have.
ansible-playbook -i inventory-examples/four-gpu-server/hosts.yml playbooks/awx.yml -e gpushare_awx_render_only=true \
  -e gpushare_awx_project_scm_url=https://git.example.com/platform/gpushare.git \
  -e "gpushare_awx_render_dir=$work/defs/git-project" >"$work/awx-git-project.log" 2>&1 \
  || { tail -n 40 "$work/awx-git-project.log" >&2; exit 1; }
python tests/awx/validate.py "$work/defs/git-project/definitions.json" --inventory inventory-examples/four-gpu-server --project git

step "roles/awx against a stand-in for AWX's API"
python -m pytest tests/awx/test_role_against_fake_api.py -q -p no:cacheprovider

step "execution environment (ansible-builder)"
tests/awx/build-ee.sh

step "jobs through ansible-runner transmit | worker | process"
python tests/awx/run_jobs.py --image "${EE_IMAGE:-gpushare-ee:latest}" \
  --definitions "$work/defs/four-gpu-server/definitions.json" \
  --inventory inventory-examples/four-gpu-server --work "$work/jobs"
echo "60-awx: EE built, plan and render-mode site jobs ran in it, AWX definitions valid"
