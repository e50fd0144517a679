# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpushare.cluster.artifacts_dir lookup (plugins/lookup/artifacts_dir.py), the one
definition of the artifacts directory that role defaults and playbooks use."""

from __future__ import annotations

import yaml

from playbooks import run_playbook

SHOW = {"ansible.builtin.debug": {"msg": "{{ lookup('gpushare.cluster.artifacts_dir') }}"}}


def _artifacts_dirs(tmp_path, inventory: dict | str, *extra: str) -> dict:
    """host -> what the lookup says there, for a play on the implicit localhost and one on
    every inventory host, run from a playbook outside the inventory's directory."""
    if isinstance(inventory, dict):
        (tmp_path / "inventory").mkdir()
        path = tmp_path / "inventory" / "hosts.yml"
        path.write_text(yaml.safe_dump(inventory))
        inventory = str(path)
    (tmp_path / "playbooks").mkdir()
    playbook = tmp_path / "playbooks" / "show.yml"
    playbook.write_text(yaml.safe_dump([
        {"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [SHOW]},
        {"hosts": "all:!localhost", "connection": "local", "gather_facts": False, "tasks": [SHOW]}]))
    rc, result, err = run_playbook(playbook, inventory, *extra)
    assert rc == 0, err
    return {host: outcome["msg"] for play in result["plays"] for task in play["tasks"]
            for host, outcome in task["hosts"].items()}


def test_under_the_inventory_for_its_hosts_and_the_implicit_localhost(tmp_path):
    inventory = {"all": {"hosts": {"gpu01": None, "gpu02": None}}}
    expected = str(tmp_path / "inventory" / "artifacts")
    assert _artifacts_dirs(tmp_path, inventory) == {"localhost": expected, "gpu01": expected, "gpu02": expected}


def test_gpushare_artifacts_dir_wins_templated(tmp_path):
    inventory = {"all": {"hosts": {"gpu01": {"gpushare_artifacts_dir": "{{ inventory_dir }}/elsewhere"}}}}
    assert _artifacts_dirs(tmp_path, inventory)["gpu01"] == str(tmp_path / "inventory" / "elsewhere")


def test_gpushare_artifacts_dir_as_extra_var(tmp_path):
    dirs = _artifacts_dirs(tmp_path, {"all": {"hosts": {"gpu01": None}}}, "-e", "gpushare_artifacts_dir=/srv/arts")
    assert dirs == {"localhost": "/srv/arts", "gpu01": "/srv/arts"}


def test_an_inventory_without_hosts_means_the_playbook_directory(tmp_path):
    assert _artifacts_dirs(tmp_path, {"all": {}}) == {"localhost": str(tmp_path / "playbooks" / "artifacts")}


SHOW_SECRETS = {"ansible.builtin.debug": {"msg": "{{ lookup('gpushare.cluster.artifacts_dir', secret=true) }}"}}


def _secrets_dir(tmp_path, inventory: dict, *extra: str):
    (tmp_path / "inventory").mkdir(parents=True)
    path = tmp_path / "inventory" / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    (tmp_path / "playbooks").mkdir()
    playbook = tmp_path / "playbooks" / "show.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                         "tasks": [SHOW_SECRETS]}]))
    rc, result, err = run_playbook(playbook, str(path), *extra)
    return rc, result["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_the_secrets_directory_is_under_the_inventory_artifacts(tmp_path):
    rc, outcome = _secrets_dir(tmp_path, {"all": {"hosts": {"gpu01": None}}})
    assert rc == 0 and outcome["msg"] == str(tmp_path / "inventory" / "artifacts" / "secrets")


def test_the_secrets_directory_never_falls_back_to_the_playbook_directory(tmp_path):
    """No inventory host: plain artifacts go next to the playbook, secrets are refused."""
    rc, outcome = _secrets_dir(tmp_path, {"all": {}})
    assert rc != 0 and outcome.get("failed")
    assert "no inventory to keep secrets" in outcome["msg"] and "gpushare_artifacts_dir" in outcome["msg"]
    assert not (tmp_path / "playbooks" / "artifacts").exists()
    rc, outcome = _secrets_dir(tmp_path / "elsewhere", {"all": {}}, "-e", "gpushare_artifacts_dir=/srv/arts")
    assert rc == 0 and outcome["msg"] == "/srv/arts/secrets"
