# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts and host_prep on the H200 test server, replayed.

tests/fixtures/nvidia/h200-real/ holds what the real card's nvidia-smi printed for the
module's own query (``query-gpu-noheader.csv``) and what the module and the host_prep role
returned on that server (docs/testing.md, "The H200 test server"). Here the module runs
again with a fake nvidia-smi that prints the recorded query output, and its result must be
the recorded one: the facts, and each refusal message word for word. host_prep's GPU check is
this module called with an ``expect`` built from the inventory's gpushare_node, so the
role's refusals are replayed the same way, with ``expect`` rendered from the role's own task.
"""

import json
import os
import subprocess
import sys

import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from inventories import ROOT
from test_gpu_facts import COLLECTIONS, MODULE

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_facts import query_gpu_args

REAL = ROOT / "tests" / "fixtures" / "nvidia" / "h200-real"
HOST_PREP_RUN = REAL / "host_prep-run"
HOST = "gpu-host-01"
GPU_CHECK_TASK = "gpushare.cluster.host_prep : Host driver | GPUs and driver, checked against the inventory's gpushare_node"
# Keys of the module's result that do not depend on where nvidia-smi lives.
COMPARED = ("ansible_facts", "changed", "host_driver", "mismatches", "msg")

# The `-a` of each recorded ad-hoc gpu_facts run (docs/testing.md, "The H200 test server").
GPU_FACTS_RUNS = {
    "h200": None,
    "h200-expect-match": {"gpu_model": "h200", "gpu_count": 1, "host_driver": True},
    "h200-expect-h100": {"gpu_model": "h100", "gpu_count": 1, "host_driver": True},
    "h200-expect-h100-80gb": {"gpu_model": "h100-80gb", "gpu_count": 1, "host_driver": True},
    "h200-expect-8-gpus": {"gpu_model": "h200", "gpu_count": 8, "host_driver": True},
    "h200-expect-default-host-driver": {"gpu_model": "h200", "gpu_count": 1},
}


def _json(name):
    return json.loads((REAL / name).read_text())


@pytest.fixture()
def fake_smi(tmp_path):
    """nvidia-smi that answers the module's query, and only it, with the recorded output."""
    expected = " ".join(query_gpu_args("nvidia-smi")[1:])
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\n"
                      "if [ \"$*\" != '%s' ]; then echo \"unexpected arguments: $*\" >&2; exit 64; fi\n"
                      "cat '%s'\n" % (expected, REAL / "query-gpu-noheader.csv"))
    script.chmod(0o755)
    return str(script)


def _run(tmp_path, smi, expect):
    args = {"nvidia_smi_path": smi, "_ansible_check_mode": True}
    if expect is not None:
        args["expect"] = expect
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(COLLECTIONS)] + sys.path))
    proc = subprocess.run([sys.executable, str(MODULE), str(args_file)], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), check=False)
    return proc.returncode, json.loads(proc.stdout)


def _same(result, recorded):
    return ({k: result.get(k) for k in COMPARED}, {k: recorded.get(k) for k in COMPARED})


# --- gpu_facts, the ad-hoc runs ------------------------------------------------------

def test_facts_equal_the_recorded_device_output(tmp_path, fake_smi):
    recorded = _json("gpu_facts-h200.json")
    rc, result = _run(tmp_path, fake_smi, None)
    assert rc == 0 and result.get("failed") is not True
    assert result["ansible_facts"] == recorded["ansible_facts"]
    assert result["host_driver"] == recorded["host_driver"] == {"installed": True, "version": "580.159.04"}
    assert result["changed"] is recorded["changed"] is False
    assert recorded["ansible_facts"]["gpushare_gpus_detected"][0]["name"] == "NVIDIA H200"


def test_matching_expectation_passes_as_on_the_device(tmp_path, fake_smi):
    recorded = _json("gpu_facts-h200-expect-match.json")
    rc, result = _run(tmp_path, fake_smi, GPU_FACTS_RUNS["h200-expect-match"])
    assert rc == 0 and "mismatches" not in recorded
    left, right = _same(result, recorded)
    assert left == right


@pytest.mark.parametrize("run, names", [
    ("h200-expect-h100", "gpu_model is 'h100' (not in the catalogue) but GPU 0 is NVIDIA H200"),
    ("h200-expect-h100-80gb", "gpu_model is 'h100-80gb' (h100-80gb) but GPU 0 is NVIDIA H200"),
    ("h200-expect-8-gpus", "gpu_count is 8 but nvidia-smi lists 1 GPU(s): 0 NVIDIA H200"),
    ("h200-expect-default-host-driver", "host_driver is false but the host has a working NVIDIA driver (580.159.04)"),
])
def test_refusal_equals_the_recorded_message(tmp_path, fake_smi, run, names):
    recorded = _json("gpu_facts-%s.json" % run)
    rc, result = _run(tmp_path, fake_smi, GPU_FACTS_RUNS[run])
    assert rc != 0 and result["failed"] is True
    assert result["msg"] == recorded["msg"]
    assert result["mismatches"] == recorded["mismatches"]
    left, right = _same(result, recorded)
    assert left == right
    assert names in recorded["msg"]
    # The CLI output of the same run carries the same message.
    assert recorded["msg"] in (REAL / ("gpu_facts-%s.stdout.txt" % run)).read_text()


# --- host_prep, the role's GPU check ---------------------------------------------------

def _role_expect(gpushare_node):
    """``expect`` as roles/host_prep/tasks/host_driver.yml builds it from gpushare_node."""
    tasks = yaml.safe_load((ROOT / "roles" / "host_prep" / "tasks" / "host_driver.yml").read_text())
    (task,) = [t for t in tasks if "gpushare.cluster.gpu_facts" in t]
    env = NativeEnvironment()
    return {key: env.from_string(template).render(gpushare_node=gpushare_node)
            for key, template in task["vars"]["_host_prep_gpu_expect"].items()}


def _inventory_node(inventory):
    inv = yaml.safe_load((HOST_PREP_RUN / ("inv-%s.yml" % inventory)).read_text())
    return inv["gpushare_nodes"]["hosts"][HOST]["gpushare_node"]


def _task_result(run, task_name):
    recorded = _json("host_prep-%s.json" % run)
    (task,) = [t for t in recorded["plays"][0]["tasks"] if t["task"]["name"] == task_name]
    return recorded, task["hosts"][HOST]


@pytest.mark.parametrize("run, inventory, refused", [
    ("h200-gpu-check", "h200", None),
    ("h200-skip-packages-time", "h200", None),
    ("h100-gpu-check", "h100", "gpushare_node.gpu_model is 'h100' (not in the catalogue) but GPU 0 is NVIDIA H200"),
    ("h100-skip-packages-time", "h100", "gpushare_node.gpu_model is 'h100' (not in the catalogue) but GPU 0 is NVIDIA H200"),
    ("h100-80gb-gpu-check", "h100-80gb", "gpushare_node.gpu_model is 'h100-80gb' (h100-80gb) but GPU 0 is NVIDIA H200"),
    ("8-gpus-gpu-check", "8-gpus", "gpushare_node.gpu_count is 8 but nvidia-smi lists 1 GPU(s): 0 NVIDIA H200"),
    ("default-host-driver-gpu-check", "default-host-driver",
     "gpushare_node.host_driver is false but the host has a working NVIDIA driver (580.159.04)"),
])
def test_host_prep_gpu_check_replayed(tmp_path, fake_smi, run, inventory, refused):
    recorded, task = _task_result(run, GPU_CHECK_TASK)
    expect = _role_expect(_inventory_node(inventory))
    # What the role sent on the device is what the role's task builds from the inventory.
    assert task["invocation"]["module_args"]["expect"] == expect
    rc, result = _run(tmp_path, fake_smi, expect)
    left, right = _same(result, task)
    assert left == right
    stdout = (REAL / ("host_prep-%s.stdout.txt" % run)).read_text()
    stats = recorded["stats"][HOST]
    if refused is None:
        assert rc == 0 and task.get("failed") is not True and stats["failures"] == 0
    else:
        assert rc != 0 and task["failed"] is True and result["failed"] is True
        assert task["msg"] == "The host does not match its inventory entry: " + task["mismatches"][0]
        assert task["mismatches"][0].startswith(refused)
        assert stats["failures"] == 1
        # The failing task is the GPU check, the last task the play ran on the host.
        assert recorded["plays"][0]["tasks"][-1]["task"]["name"] == GPU_CHECK_TASK
        assert "fatal: [%s]: FAILED!" % HOST in stdout and task["msg"] in stdout


def test_host_prep_expect_from_inventory():
    assert _role_expect(_inventory_node("8-gpus")) == {"gpu_model": "h200", "gpu_count": 8, "host_driver": True}
    # host_driver left out of gpushare_node: the role sends false.
    expect = _role_expect(_inventory_node("default-host-driver"))
    assert expect == {"gpu_model": "h200", "gpu_count": 1, "host_driver": False}


APT_CHECK_MODE = ("python3-apt must be installed to use check mode. If run normally this module can "
                  "auto-install it, see the auto_install_module_deps option.")
APT_TASK = "gpushare.cluster.host_prep : Packages | Install what Kubernetes nodes need (apt)"
CHRONY_TASK = "gpushare.cluster.host_prep : Time | chrony enabled and running"


@pytest.mark.parametrize("run, failed_task, msg_start, changed", [
    ("h200-full", APT_TASK, APT_CHECK_MODE, 0),
    ("h100-full", APT_TASK, APT_CHECK_MODE, 0),
    ("8-gpus-full", APT_TASK, APT_CHECK_MODE, 0),
    ("h200-skip-packages", CHRONY_TASK, 'Failed to find required executable "systemctl"', 3),
])
def test_host_prep_whole_role_stops_before_the_gpu_check(run, failed_task, msg_start, changed):
    """What the whole role met on the server (a container without python3-apt or systemd)."""
    recorded = _json("host_prep-%s.json" % run)
    tasks = recorded["plays"][0]["tasks"]
    assert tasks[-1]["task"]["name"] == failed_task
    result = tasks[-1]["hosts"][HOST]
    assert result["failed"] is True and result["msg"].startswith(msg_start)
    assert GPU_CHECK_TASK not in [t["task"]["name"] for t in tasks]
    assert (recorded["stats"][HOST]["failures"], recorded["stats"][HOST]["changed"]) == (1, changed)
    facts = tasks[0]["hosts"][HOST]["ansible_facts"]
    assert (facts["ansible_distribution"], facts["ansible_distribution_version"]) == ("Ubuntu", "24.04")
    assert facts["ansible_virtualization_type"] == "docker" and facts["ansible_virtualization_role"] == "guest"


def test_host_prep_check_run_on_the_real_card_passes():
    """The skip-packages-time run: everything else host_prep does, in check mode, then the GPU check."""
    recorded = _json("host_prep-h200-skip-packages-time.json")
    assert recorded["stats"][HOST] == {"changed": 3, "failures": 0, "ignored": 0, "ok": 16, "rescued": 0,
                                       "skipped": 9, "unreachable": 0}
    changed = [t["task"]["name"].split(" : ", 1)[1] for t in recorded["plays"][0]["tasks"]
               if t["hosts"].get(HOST, {}).get("changed")]
    assert changed == ["Kernel | Load the Kubernetes modules at boot", "Kernel | Kubernetes sysctls (file and live value)",
                       "Kernel | Blacklist nouveau"]
    _recorded, task = _task_result("h200-skip-packages-time", GPU_CHECK_TASK)
    assert task["ansible_facts"] == _json("gpu_facts-h200.json")["ansible_facts"]
