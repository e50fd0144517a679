# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes distribution is decided once, by the planner (model.py reads and validates
gpushare_policy.kubernetes_distribution, the Plan carries cluster.kubernetes_distribution):
playbooks/kubernetes.yml gets the Plan (its own, or site.yml's without computing it again)
and its host plays read the distribution from it; nothing else reads the inventory's value.

What differs between distributions is one entry of the distributions table
(plugins/module_utils/inventory/distributions.py) and the distribution's own role, which sets
the one fact gpushare_distribution; no playbook or other role branches on a distribution's name."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLES, ROOT, example_day
from playbooks import run_playbook

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))
FROM_THE_PLAN = "{{ hostvars['localhost'].common_plan.plan.cluster.kubernetes_distribution }}"
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
    assert kubernetes["vars"]["_gpushare_distribution"] == (
        FROM_THE_PLAN[:-3] + " | gpushare.cluster.distribution }}")
    # the role of the Plan's distribution's entry in the table, under no condition, after only
    # the feature gates the Plan needs (set as that role's variable: test_kubernetes_feature_gates.py)
    *before, task = kubernetes["tasks"]
    assert [list(t)[1] for t in before] == ["ansible.builtin.set_fact"]
    assert task["ansible.builtin.include_role"]["name"] == "gpushare.cluster.{{ _gpushare_distribution.role }}"
    assert "when" not in task


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
               and "common_plan.plan.cluster.kubernetes_distribution" not in e]
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
    assert len(runs) == 1 and "plan" not in runs[0]
    stops = [task["hosts"]["localhost"] for play in result["plays"] for task in play["tasks"]
             if task["task"]["name"].endswith("Stop on the problems above")]
    assert [stop["failed"] for stop in stops] == [True]
    assert [p["path"] for p in runs[0]["problems"]] == ["gpushare_policy.kubernetes_distribution"]
    assert "(got 'k3s'); allowed: kubeadm, microk8s" in runs[0]["msg"]
    assert set(result["stats"]) == {"localhost"}, "a host was contacted although the plan failed"


def test_site_computes_the_plan_once(tmp_path):
    rc, result, err = run_playbook("site.yml", EXAMPLES / "four-gpu-server" / "hosts.yml", "--check", "--tags", "plan",
                                   "-e", "gpushare_window=none", "-e", "gpushare_render_only=true",
                                   "-e", "gpushare_artifacts_dir=%s" % tmp_path)
    assert rc == 0, err
    ran = [r["play"] for r in plan_runs(result) if not r.get("skipped")]
    assert len(ran) == 1 and ran[0].startswith("Plan how the GPUs are shared"), ran
    # kubernetes.yml's plan play skips its include of the plan tasks (nothing registered over
    # site.yml's common_plan, which the later plays read).
    skipped = [play["play"]["name"] for play in result["plays"] for task in play["tasks"]
               if task["task"]["name"].startswith("Compute the plan when site.yml has not")
               and task["hosts"]["localhost"].get("skipped")]
    assert len(skipped) == 1 and skipped[0].startswith("The plan (site.yml's"), skipped


# --- one table, one fact ----------------------------------------------------------------------

ROLES = ROOT / "roles"
FACT_TASK = re.compile(r"^\s*%s:\s*>?-?\s*\n?\s*\{\{\s*'(\w+)'\s*\|\s*gpushare\.cluster\.distribution_fact\("
                       % distributions.FACT, re.M)


def role_facts() -> dict[str, list[str]]:
    """Role -> the distributions whose fact gpushare_distribution its tasks set."""
    found = {}
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        text = path.read_text()
        if re.search(r"^\s*%s:" % distributions.FACT, text, re.M):
            found.setdefault(path.parts[-3], []).extend(FACT_TASK.findall(text) or ["(not from distribution_fact)"])
    return found


def test_the_table_has_an_entry_per_distribution_role():
    # a distribution role is one that publishes the fact gpushare_distribution
    facts = role_facts()
    assert set(facts) == {d.role for d in distributions.TABLE.values()}, (
        "every role that sets %s needs an entry in plugins/module_utils/inventory/distributions.py, "
        "and every entry a role that sets it" % distributions.FACT)
    for name, d in distributions.TABLE.items():
        assert (ROLES / d.role / "meta" / "argument_specs.yml").exists()
        assert facts[d.role] == [name], "%s must set %s once, with '%s' | gpushare.cluster.distribution_fact(...)" % (
            d.role, distributions.FACT, name)


@pytest.mark.parametrize("name", distributions.NAMES)
def test_the_entry_agrees_with_its_role_and_host_prep(name):
    d = distributions.entry(name)
    role_defaults = yaml.safe_load((ROLES / d.role / "defaults" / "main.yml").read_text())
    # plan_fact's kubeconfig without the role is the role's default path
    default = role_defaults[d.kubeconfig_var].strip()
    assert default.endswith("/" + d.kubeconfig_file.format(**{v: "{{ %s }}" % v for v in d.kubeconfig_file_vars}))
    assert default.startswith("{{ lookup('gpushare.cluster.artifacts_dir', secret=true) }}/")
    for var, value in d.kubeconfig_file_vars.items():
        assert role_defaults[var] == value
    # host_prep has every port variable the entry names
    host_prep = yaml.safe_load((ROLES / "host_prep" / "defaults" / "main.yml").read_text())
    for var in d.firewall_ports + d.control_plane_firewall_ports:
        assert isinstance(host_prep.get(var), list), var


def distribution_roles() -> set[str]:
    return {d.role for d in distributions.TABLE.values()}


def text_files() -> list[Path]:
    """The playbooks and every role's YAML and templates, except the distribution roles."""
    files = sorted((ROOT / "playbooks").rglob("*.yml"))
    for role in sorted(ROLES.iterdir()):
        if role.name not in distribution_roles():
            files += sorted(p for p in role.rglob("*") if p.suffix in (".yml", ".yaml", ".j2"))
    return files


CONDITION_KEYS = ("when", "that", "failed_when", "changed_when", "until")
NAME = re.compile(r"(?<![\w-])(%s)(?![\w-])" % "|".join(map(re.escape, distributions.NAMES)))


def conditions(value, key=None):
    """Every string under a condition key (when:, that:, failed_when:, ...) of parsed YAML."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from conditions(v, k if k in CONDITION_KEYS else key)
    elif isinstance(value, list):
        for v in value:
            yield from conditions(v, key)
    elif isinstance(value, str) and key in CONDITION_KEYS:
        yield value


def jinja_conditions(text: str) -> list[str]:
    """{% if/elif %} tags, and expressions with an inline if or a comparison."""
    found = re.findall(r"\{%-?\s*(?:el)?if\b.*?%\}", text, re.S)
    found += [e for e in re.findall(r"\{\{.*?\}\}", text, re.S)
              if re.search(r"\bif\b|==|!=|\bin\b|\bis\b", e)]
    return found


class AnsibleYaml(yaml.SafeLoader):
    """YAML with Ansible's tags (!unsafe, !vault) read as plain values."""


AnsibleYaml.add_multi_constructor("!", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))


def distribution_conditions(path: Path) -> list[str]:
    text = path.read_text()
    found = jinja_conditions(text)
    if path.suffix in (".yml", ".yaml"):
        for document in yaml.load_all(text, Loader=AnsibleYaml):  # noqa: S506 (a SafeLoader)
            found += list(conditions(document))
    return [c for c in found if NAME.search(c)]


def test_no_playbook_or_other_role_branches_on_a_distribution_name():
    offenders = {str(p.relative_to(ROOT)): distribution_conditions(p) for p in text_files()}
    offenders = {p: c for p, c in offenders.items() if c}
    assert not offenders, (
        "conditions on a distribution's name outside its role (put what differs in the distributions "
        "table, plugins/module_utils/inventory/distributions.py, or in the distribution's role): %s" % offenders)


@pytest.mark.parametrize("text, caught", [
    ("when: _gpushare_distribution == 'microk8s'\n", True),
    ("that:\n  - host_prep_kubernetes_distribution in ['microk8s', 'kubeadm']\n", True),
    ("x: \"{{ a if d == 'kubeadm' else b }}\"\n", True),
    ("x: \"{{ a if d.kubelet_root == '/var/snap/microk8s/x' else b }}\"\n", True),
    ("t: \"{% if distribution == 'microk8s' %}x{% endif %}\"\n", True),
    ("x: \"{{ host_prep_firewall_ports_microk8s + [] }}\"\n", False),
    ("when: host_prep_firewall_ports_kubeadm_node | length > 0\n", False),
    ("msg: the microk8s and kubeadm roles pin node names\n", False),
])
def test_the_check_catches_a_branch(tmp_path, text, caught):
    path = tmp_path / "t.yml"
    path.write_text(text)
    assert bool(distribution_conditions(path)) == caught


SITE_VARS_PLAY = """
- name: Simulated distribution role (its one fact)
  hosts: gpushare_control_plane
  gather_facts: false
  tasks:
    - name: The fact
      ansible.builtin.set_fact:
        gpushare_distribution: "{{ '%(name)s' | gpushare.cluster.distribution_fact('/fetched/admin.conf', 'cp') }}"
      when: role_ran | default(false) | bool
"""


def site_kubeconfig(tmp_path, example: str, *extra: str) -> tuple[str, dict]:
    """The kubeconfig and runtime paths site.yml's GPU stack play hands to the roles: its plan
    play and its GPU stack play's variables, verbatim, with no distribution role run (as with
    --tags kueue) unless role_ran=true simulates the role's fact."""
    plays = playbook_plays("site.yml")
    gpu_stack = next(p for p in plays if p["name"].startswith("GPU stack"))
    name = distributions.NAMES[1] if example == "microk8s-lab" else distributions.NAMES[0]
    probe = [plays[0]] + yaml.safe_load(SITE_VARS_PLAY % {"name": name}) + [{
        "name": "Probe", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": gpu_stack["vars"],
        "tasks": [{"name": "Probe", "ansible.builtin.debug": {
            "msg": "{{ {'kubeconfig': _gpushare_kubeconfig, 'runtime': _gpushare_runtime_paths} }}"}}]}]
    playbook = tmp_path / "probe.yml"
    playbook.write_text(yaml.safe_dump(probe))
    rc, result, err = run_playbook(playbook, EXAMPLES / example / "hosts.yml", "--check", "-e", "gpushare_window=none",
                                   "-e", "gpushare_artifacts_dir=%s" % tmp_path, *extra)
    assert rc == 0, (err, result)
    msg = result["plays"][-1]["tasks"][0]["hosts"]["localhost"]["msg"]
    return msg["kubeconfig"], msg["runtime"]


# (the inventory overrides one by one: test_distributions.py; each case here is a playbook run)
@pytest.mark.parametrize("example, extra, kubeconfig", [
    ("four-gpu-server", ("-e", "kubeadm_cluster_name=lab", "-e", "gpushare_kubeconfig="), "{tmp}/secrets/lab-admin.conf"),
    ("four-gpu-server", ("-e", "role_ran=true"), "/fetched/admin.conf"),
    ("microk8s-lab", (), "{tmp}/secrets/microk8s-admin.conf"),
    ("microk8s-lab", ("-e", "role_ran=true", "-e", "gpushare_kubeconfig=/x/g.conf"), "/x/g.conf"),
])
def test_site_finds_the_kubeconfig_with_or_without_the_distribution_role(tmp_path, example, extra, kubeconfig):
    found, runtime = site_kubeconfig(tmp_path, example, *extra)
    assert found == kubeconfig.format(tmp=tmp_path)
    name = "microk8s" if example == "microk8s-lab" else "kubeadm"
    if "role_ran=true" in extra:
        assert runtime == distributions.entry(name).runtime
    else:
        assert runtime == distributions.assumed_runtime(name)
