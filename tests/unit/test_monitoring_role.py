# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role is wired like the other GPU stack roles: its plan check is
gpushare.cluster.common's preflight.yml, and the managed-by label comes from the
managed_label filter (names.MANAGED_LABEL), never written out in the role."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.names import MANAGED_BY_KEY, MANAGED_LABEL

from inventories import EXAMPLES, ROOT
from playbooks import run_playbook

ROLE = ROOT / "roles" / "monitoring"


def role_code() -> dict[str, str]:
    """Each YAML file of the role without its comments."""
    return {str(p.relative_to(ROOT)): "\n".join(re.sub(r"(^|\s)#.*", "", line) for line in p.read_text().splitlines())
            for p in sorted(ROLE.rglob("*.yml"))}


def test_the_plan_check_is_the_common_one():
    first = yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text())[0]
    assert first["ansible.builtin.include_role"]["name"] == "gpushare.cluster.common"
    assert first["ansible.builtin.include_role"]["tasks_from"] == "preflight.yml"
    assert first["vars"] == {"common_plan_input": "{{ monitoring_plan }}", "common_plan_role": "monitoring"}


@pytest.mark.parametrize("literal", [MANAGED_BY_KEY, "gpushare.cluster/plan-v1"])
def test_no_literal_defined_elsewhere_is_repeated(literal):
    assert not [path for path, text in role_code().items() if literal in text]


def test_a_plan_that_is_not_the_modules_result_is_refused_by_the_common_check(tmp_path):
    playbook = tmp_path / "monitoring.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [{"ansible.builtin.include_role": {"name": "gpushare.cluster.monitoring"},
                   "vars": {"monitoring_plan": {"plan": {"format": "something else"}},
                            "monitoring_render_only": True, "monitoring_render_dir": str(tmp_path / "out")}}]}]))
    rc, result, err = run_playbook(playbook, "localhost,")
    assert rc != 0
    failed = [t for t in result["plays"][0]["tasks"] if t["hosts"]["localhost"].get("failed")]
    assert [t["task"]["name"] for t in failed] == ["gpushare.cluster.common : Preflight | The plan is the result of gpushare.cluster.plan"]
    assert failed[0]["hosts"]["localhost"]["msg"].startswith("monitoring_plan must be the registered result")
    assert not (tmp_path / "out").exists()


def test_rendered_secret_carries_the_one_managed_label(tmp_path):
    rc, result, err = run_playbook("site.yml", EXAMPLES / "four-gpu-server" / "hosts.yml", "--check", "--tags", "plan,monitoring",
                                   "-e", "gpushare_render_only=true", "-e", "gpushare_window=none",
                                   "-e", "gpushare_plan_dir=%s" % tmp_path)
    assert rc == 0, err
    secret = yaml.safe_load((tmp_path / "rendered" / "monitoring" / "grafana-admin-secret.yaml").read_text())
    assert secret["metadata"] == {"name": "gpushare-grafana-admin", "namespace": "monitoring", "labels": MANAGED_LABEL}
    assert secret["stringData"]["admin-password"].startswith("<generated")


def test_artifacts_go_under_the_inventory_not_the_playbook(tmp_path):
    """The role's own defaults put the Grafana password file and the rendered files in the
    inventory's artifacts directory, as the other roles' defaults do; they used to say
    {{ playbook_dir }}/artifacts, inside the installed collection for gpushare.cluster.site."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    playbooks = tmp_path / "playbooks"
    playbooks.mkdir()
    playbook = playbooks / "monitoring.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [{"ansible.builtin.import_role": {"name": "gpushare.cluster.common", "tasks_from": "plan.yml"},
                   "vars": {"common_plan_write": False}},
                  {"ansible.builtin.include_role": {"name": "gpushare.cluster.monitoring"},
                   "vars": {"monitoring_plan": "{{ common_plan }}", "monitoring_render_only": True}}]}]))
    rc, result, err = run_playbook(playbook, inventory / "hosts.yml", "-e", "gpushare_window=none")
    assert rc == 0, err
    assert not (playbooks / "artifacts").exists()
    artifacts = inventory / "artifacts"
    secret = yaml.safe_load((artifacts / "rendered" / "monitoring" / "grafana-admin-secret.yaml").read_text())
    assert secret["stringData"]["admin-password"] == "<generated into %s on apply>" % (artifacts / "secrets" / "grafana-admin-password")
