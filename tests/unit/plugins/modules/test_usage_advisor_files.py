# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the usage advisor writes of an inventory: only the files it rewrites, at 0600 in 0700
directories; every other file (passwords, tokens) a link to the original, never a copy; check
mode writes nothing, a second run changes nothing, and an earlier copy is replaced, not
written through."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat

import yaml

from ansible_collections.gpushare.cluster.plugins.modules.usage_advisor import inventory_copy, write_files

from inventories import EXAMPLES
from playbooks import run_playbook

SECRET = "become-password-4711"
PROPOSAL = {"workloads": [{"name": "proposed", "team": "training", "kind": "training", "gpus": 1}],
            "nodes": {"gpu01": {"gpu_model": "h200", "gpu_count": 4}}}


def _inventory(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    (inventory / "group_vars" / "all" / "secrets.yml").write_text("ansible_become_password: %s\n" % SECRET)
    return inventory


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _regular_files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_only_rewritten_files_are_written_the_rest_are_links(tmp_path):
    inventory = _inventory(tmp_path)
    dest = tmp_path / "advise"
    files = inventory_copy(str(inventory), PROPOSAL, {})
    assert all("content" not in f for f in files if "secrets" in f["path"])
    assert write_files(str(dest), files, check_mode=False) is True
    copy = dest / "inventory"
    # The files that define gpushare_workloads and gpu01's gpushare_node, found by grep here.
    defining = sorted(str(p.relative_to(inventory)) for p in inventory.rglob("*.yml")
                      if "gpushare_workloads:" in p.read_text() or
                      (p.name == "gpu01.yml" and "gpushare_node:" in p.read_text()))
    assert _regular_files(copy) == defining
    for name in defining:
        assert _mode(copy / name) == 0o600
        assert yaml.safe_load((copy / name).read_text()).get("gpushare_workloads", PROPOSAL["workloads"]) == \
            PROPOSAL["workloads"]
    secret = copy / "group_vars" / "all" / "secrets.yml"
    assert secret.is_symlink() and os.readlink(secret) == str(inventory / "group_vars" / "all" / "secrets.yml")
    assert (copy / "hosts.yml").is_symlink()
    assert {_mode(d) for d in [copy, *[p for p in copy.rglob("*") if p.is_dir() and not p.is_symlink()]]} == {0o700}
    assert not any(SECRET in (copy / name).read_text() for name in defining)


def test_check_mode_writes_nothing_and_a_second_run_changes_nothing(tmp_path):
    inventory = _inventory(tmp_path)
    dest = tmp_path / "advise"
    files = inventory_copy(str(inventory), PROPOSAL, {})
    assert write_files(str(dest), files, check_mode=True) is True
    assert not dest.exists()
    assert write_files(str(dest), files, check_mode=False) is True
    assert write_files(str(dest), files, check_mode=False) is False
    assert write_files(str(dest), files, check_mode=True) is False


def test_an_earlier_world_readable_copy_is_replaced_not_written_through(tmp_path):
    """An advice directory from before: a 0644 copy of the secrets file and a link where the
    rewritten file goes. The copy becomes a link; the link is replaced, the original untouched."""
    inventory = _inventory(tmp_path)
    dest = tmp_path / "advise"
    old = dest / "inventory" / "group_vars" / "all"
    old.mkdir(parents=True)
    (old / "secrets.yml").write_text("ansible_become_password: %s\n" % SECRET)
    (old / "secrets.yml").chmod(0o644)
    original = inventory / "group_vars" / "all" / "workloads.yml"
    before = original.read_text()
    (old / "workloads.yml").symlink_to(original)
    assert write_files(str(dest), inventory_copy(str(inventory), PROPOSAL, {}), check_mode=False) is True
    assert (old / "secrets.yml").is_symlink()
    assert original.read_text() == before
    assert not (old / "workloads.yml").is_symlink() and _mode(old / "workloads.yml") == 0o600
    assert _mode(dest / "inventory") == 0o700


def test_the_password_in_the_url_is_masked_in_the_result(tmp_path):
    """The module fails (an empty inventory); its result, the invocation included, shows no password."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    playbook = tmp_path / "advise.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
        {"gpushare.cluster.usage_advisor": {"prometheus_url": "http://alice:pa55word@127.0.0.1:%d" % port, "teams": [],
                                            "nodes": {}, "dest": str(tmp_path / "advise"), "timeout": 5}}]}]))
    rc, result, err = run_playbook(playbook, "localhost,")
    task = result["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert rc != 0 and task.get("failed"), task
    assert "alice:********@127.0.0.1" in task["invocation"]["module_args"]["prometheus_url"]
    assert "pa55word" not in json.dumps(result)
