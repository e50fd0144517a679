# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes distribution is decided once, by the planner (model.py reads and validates
gpushare_policy.kubernetes_distribution, the Plan carries cluster.kubernetes_distribution):
playbooks/kubernetes.yml gets the Plan (its own, or site.yml's without computing it again)
and its host plays read the distribution from it; nothing else reads the inventory's value."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLES, ROOT, example_day
from playbooks import run_playbook

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))
FROM_THE_PLAN = "{{ hostvars['localhost'].gpushare_plan.plan.cluster.kubernetes_distribution }}"
PLAN_TASK = "Compute the plan from the inventory"


def planner_problem(distribution) -> dict:
    variables = example_day()
    variables["gpushare_policy"]["kubernetes_distribution"] = distribution
    with pytest.raises(PlanInvalid) as caught:
        build_plan(variables)
    problems = caught.value.problems
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_a_bad_distribution_is_refused_with_path_value_and_fix():
    problem = planner_problem("k3s")
    assert problem.path == "gpushare_policy.kubernetes_distribution"
    assert problem.value == "k3s"
    assert problem.allowed == "kubeadm, microk8s"
    assert "allowed values" in problem.message
    assert "gpushare_policy.kubernetes_distribution" in str(problem) and "'k3s'" in str(problem)


def test_a_near_miss_gets_a_suggestion():
    assert "Did you mean 'microk8s'?" in planner_problem("microk8").hint


def test_a_distribution_that_is_not_a_string_is_refused():
    assert planner_problem(["kubeadm"]).path == "gpushare_policy.kubernetes_distribution"


@pytest.mark.parametrize("policy, expected", [({}, "kubeadm"), ({"kubernetes_distribution": "microk8s"}, "microk8s")])
def test_the_plan_carries_the_decision(policy, expected):
    variables = example_day()
    variables["gpushare_policy"] = dict(policy, timezone=variables["gpushare_policy"].get("timezone", "UTC"))
    assert build_plan(variables)["cluster"]["kubernetes_distribution"] == expected


# --- playbooks/kubernetes.yml -----------------------------------------------------------------

def playbook_plays(name: str) -> list[dict]:
    return yaml.safe_load((ROOT / "playbooks" / name).read_text())


def test_the_host_plays_read_the_distribution_from_the_plan():
    plays = playbook_plays("kubernetes.yml")
    assert plays[0]["hosts"] == "localhost" and "always" in plays[0]["tags"]
    host_prep = next(p for p in plays if "host_prep" in p.get("tags", []))
    # the role under roles: or through include_role
    uses = host_prep.get("roles", []) + [t for t in host_prep.get("tasks", []) if "ansible.builtin.include_role" in t]
    assert len(uses) == 1
    assert uses[0]["vars"]["host_prep_kubernetes_distribution"] == FROM_THE_PLAN
    kubernetes = next(p for p in plays if "kubernetes" in p.get("tags", []))
    assert kubernetes["vars"]["_gpushare_distribution"] == FROM_THE_PLAN
    assert {t["when"] for t in kubernetes["tasks"]} == {
        "_gpushare_distribution == 'microk8s'", "_gpushare_distribution == 'kubeadm'"}


def expressions(path: Path) -> list[str]:
    """Every Jinja expression and conditional of a YAML file (comments and descriptions may
    name the inventory variable; only templates read it)."""
    text = path.read_text()
    return re.findall(r"\{\{.*?\}\}", text, re.S) + re.findall(r"^\s*-?\s*(?:when|that):.*$", text, re.M)


@pytest.mark.parametrize("path", ["playbooks/kubernetes.yml", "playbooks/site.yml", "roles/host_prep/defaults/main.yml",
                                  "roles/host_prep/meta/argument_specs.yml", "roles/host_prep/vars/main.yml",
                                  "roles/kubeadm/defaults/main.yml", "roles/microk8s/defaults/main.yml"])
def test_nothing_else_reads_the_inventory_value(path):
    readers = [e for e in expressions(ROOT / path)
               if "kubernetes_distribution" in e.replace("host_prep_kubernetes_distribution", "")
               and "gpushare_plan.plan.cluster.kubernetes_distribution" not in e]
    assert not readers, "%s decides the distribution itself: %s" % (path, readers)


def test_host_prep_on_its_own_prepares_for_kubeadm():
    defaults = yaml.safe_load((ROOT / "roles/host_prep/defaults/main.yml").read_text())
    spec = yaml.safe_load((ROOT / "roles/host_prep/meta/argument_specs.yml").read_text())
    assert defaults["host_prep_kubernetes_distribution"] == "kubeadm"
    assert spec["argument_specs"]["main"]["options"]["host_prep_kubernetes_distribution"]["default"] == "kubeadm"


def plan_runs(result: dict) -> list[dict]:
    """Every run of the plan module, skipped or not: (play name, localhost's result)."""
    return [dict(task["hosts"]["localhost"], play=play["play"]["name"])
            for play in result["plays"] for task in play["tasks"]
            if task["task"]["name"].endswith(PLAN_TASK) and "localhost" in task["hosts"]]


def test_on_its_own_it_computes_the_plan_and_writes_no_files(tmp_path):
    # --tags plan: a tag no host play has, so only the plan play runs (it is tagged always).
    rc, result, err = run_playbook("kubernetes.yml", EXAMPLES / "four-gpu-server" / "hosts.yml", "--tags", "plan",
                                   "-e", "gpushare_window=none", "-e", "gpushare_artifacts_dir=%s" % tmp_path)
    assert rc == 0, err
    runs = plan_runs(result)
    assert len(runs) == 1 and not runs[0].get("skipped")
    assert runs[0]["plan"]["cluster"]["kubernetes_distribution"] == "kubeadm"
    assert not list(tmp_path.iterdir())
    # the host plays match no task (at most the role's argument validation, run on the controller)
    host_tasks = {t["task"]["name"] for play in result["plays"][1:] for t in play["tasks"]}
    assert all(name.startswith("gpushare.cluster.host_prep : Validating arguments") for name in host_tasks), host_tasks
    assert all(counts["changed"] == counts["failures"] == counts["unreachable"] == 0
               for counts in result["stats"].values())


def test_a_bad_distribution_fails_in_the_planner_before_any_host(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory, ignore=shutil.ignore_patterns("artifacts"))
    policy = inventory / "group_vars" / "all" / "policy.yml"
    policy.write_text(re.sub(r"kubernetes_distribution: kubeadm", "kubernetes_distribution: k3s", policy.read_text()))
    rc, result, err = run_playbook("kubernetes.yml", inventory / "hosts.yml", "-e", "gpushare_window=none")
    assert rc != 0
    runs = plan_runs(result)
    assert len(runs) == 1 and runs[0]["failed"]
    assert [p["path"] for p in runs[0]["problems"]] == ["gpushare_policy.kubernetes_distribution"]
    assert "(got 'k3s'); allowed: kubeadm, microk8s" in runs[0]["msg"]
    assert set(result["stats"]) == {"localhost"}, "a host was contacted although the plan failed"


def test_site_computes_the_plan_once(tmp_path):
    rc, result, err = run_playbook("site.yml", EXAMPLES / "four-gpu-server" / "hosts.yml", "--check", "--tags", "plan",
                                   "-e", "gpushare_window=none", "-e", "gpushare_render_only=true",
                                   "-e", "gpushare_artifacts_dir=%s" % tmp_path)
    assert rc == 0, err
    ran = [r["play"] for r in plan_runs(result) if not r.get("skipped")]
    skipped = [r["play"] for r in plan_runs(result) if r.get("skipped")]
    assert len(ran) == 1 and ran[0].startswith("Plan how the GPUs are shared"), ran
    assert len(skipped) == 1 and skipped[0].startswith("The plan (site.yml's"), skipped
