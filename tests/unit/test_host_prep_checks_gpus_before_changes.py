"""host_prep refuses a host whose GPUs contradict its inventory entry before it changes
anything on it (issue 33, item 5): the gpu_facts check is part of the preflight, ahead of the
package sources, packages, swap, modules, sysctls, time, firewall and reboot tasks.

Two proofs: the role's task order read from its task files (every task before the check only
reads), and a real ansible-playbook run of the role on localhost in check mode with a stand-in
nvidia-smi that answers with a real H200's query row (tests/fixtures/nvidia/h200) while the
inventory says h100 x 8: the play fails at the check and no other task of the role started.
"""

from __future__ import annotations

import re

import yaml

from inventories import ROOT
from playbooks import run_playbook

TASKS = ROOT / "roles" / "host_prep" / "tasks"
# Modules that change nothing on the host.
READ_ONLY = {"ansible.builtin.assert", "ansible.builtin.set_fact", "ansible.builtin.debug", "gpushare.cluster.gpu_facts"}
GPU_CHECK = "gpushare.cluster.gpu_facts"


def _module(task: dict) -> str:
    return next(k for k in task if "." in k and k.split(".")[0] in ("ansible", "gpushare", "community", "ansible_posix"))


def flat_tasks(name: str = "main.yml", tasks: list | None = None) -> list[tuple[str, str]]:
    """(file, module) of every task of the role in the order it runs, blocks, imports and
    includes expanded (an include templated on the OS family gives each of its files)."""
    out = []
    for task in yaml.safe_load((TASKS / name).read_text()) if tasks is None else tasks:
        if "block" in task:
            out.extend(flat_tasks(name, task["block"] + task.get("rescue", []) + task.get("always", [])))
            continue
        module = _module(task)
        if module in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks"):
            target = task[module]
            pattern = re.escape(target).replace(re.escape("{{ _host_prep_os_family }}"), "(Debian|RedHat)")
            for path in sorted(TASKS.iterdir()):
                if re.fullmatch(pattern, path.name):
                    out.extend(flat_tasks(path.name))
        else:
            out.append((name, module))
    return out


def test_the_gpu_check_comes_before_every_change():
    tasks = flat_tasks()
    modules = [m for _file, m in tasks]
    assert modules.count(GPU_CHECK) == 1, tasks
    check = modules.index(GPU_CHECK)
    before = tasks[:check]
    assert {f for f, _module in before} <= {"preflight.yml"}, before
    assert {m for _file, m in before} <= READ_ONLY, before
    # the files that change the host all come after it
    assert {"packages.yml", "kernel.yml", "repositories_Debian.yml", "time.yml", "firewall.yml"} <= {f for f, _module in tasks[check:]}


def _fake_nvidia_smi(tmp_path):
    row = (ROOT / "tests" / "fixtures" / "nvidia" / "h200" / "query-gpu-noheader.csv").read_text().strip()
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\ncase \"$*\" in\n  *--query-gpu=*) echo '%s' ;;\n  *) echo 'NVIDIA-SMI stand-in' ;;\nesac\n" % row)
    script.chmod(0o755)
    return script


def test_a_wrong_inventory_fails_in_preflight_and_nothing_else_runs(tmp_path):
    """One H200 in the server, h100 x 8 in the inventory: the run stops at the GPU check
    naming the model and the count, and no task that installs, writes or turns off anything
    started. Check mode, so the run cannot change this machine even if the order broke."""
    nvidia_smi = _fake_nvidia_smi(tmp_path)
    playbook = tmp_path / "host_prep.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "host_prep on a one-H200 server described as h100 x 8", "hosts": "localhost", "gather_facts": True,
        "vars": {"gpushare_node": {"gpu_model": "h100", "gpu_count": 8, "host_driver": True},
                 "host_prep_nvidia_smi_path": str(nvidia_smi),
                 "host_prep_allow_unsupported_os_for_testing": True},
        "roles": ["gpushare.cluster.host_prep"]}]))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    rc, result, err = run_playbook(playbook, inventory, "--check")
    assert rc == 2, err
    ran = [(t["task"]["name"], t["hosts"]["localhost"]) for t in result["plays"][0]["tasks"]
           if "localhost" in t["hosts"]]
    role_tasks = [(name, res) for name, res in ran if name.startswith("gpushare.cluster.host_prep : ")
                  and "Validating arguments" not in name]
    failed = [name for name, res in role_tasks if res.get("failed")]
    assert failed == ["gpushare.cluster.host_prep : Host driver | GPUs and driver, checked against the inventory's gpushare_node"]
    assert role_tasks[-1][0] == failed[0]
    assert all(name.split(" : ", 1)[1].startswith("Preflight | ") for name, _result in role_tasks[:-1]), role_tasks
    message = role_tasks[-1][1]["msg"]
    assert "gpu_count is 8 but nvidia-smi lists 1 GPU" in message, message
    assert "h100" in message and "H200" in message, message
    assert all(not res.get("changed") for _name, res in ran)
