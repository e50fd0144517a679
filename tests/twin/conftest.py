"""Shared fixtures of the twin tests: the client, the Plan of the example day, and the Plan
applied to the twin by ansible-playbook playbooks/site.yml (its plan play and GPU stack)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT / ".collections", ROOT / "tests" / "unit"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import gpu_nodes  # noqa: E402
from twinclient import Twin, state_dir  # noqa: E402

EXAMPLE = ROOT / "inventory-examples" / "four-gpu-server"
# A team the copied inventory adds and the example inventory does not have: applying the
# example after the copy must prune its objects.
EXTRA_TEAM = {"name": "research", "namespaces": ["research"], "priority": 50, "lend": True,
              "borrow": True, "members": ["researchers"]}


@pytest.fixture(scope="session")
def twin_session() -> Twin:
    try:
        client = Twin()
    except FileNotFoundError as exc:
        pytest.fail(f"the cluster twin is not up ({exc}); start it with tests/twin/up.sh")
    client.get("/readyz")
    return client


@pytest.fixture(scope="session")
def example_plan() -> dict:
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
    from inventories import load_example
    return build_plan(load_example("four-gpu-server"))


def write_results(name: str, results: dict) -> None:
    """build/twin/NAME.json (or $GPUSHARE_TWIN_RESULTS/NAME.json): outside the twin's state
    directory, which 50-twin.sh deletes after a passing run."""
    out = Path(os.environ.get("GPUSHARE_TWIN_RESULTS", ROOT / "build" / "twin"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


# What the twin cannot install (it runs Kueue as a process and has no GPU Operator, DRA driver
# or Prometheus): the install switches users set when those are installed another way.
NO_INSTALL = {"gpu_operator_install": False, "dra_driver_install": False, "kueue_install": False,
              "monitoring_install": False, "gpu_operator_mig_wait_delay": 1, "gpu_operator_mig_wait_retries": 60,
              "kueue_wait_delay": 1, "kueue_wait_retries": 60}
TWIN_BIN = Path(os.environ.get("GPUSHARE_TWIN_CACHE", Path.home() / ".cache" / "gpushare-twin")) / "bin"


def site_command(inventory: Path, tags: list, extra: dict, at: str | None = "08:00") -> tuple[list, dict]:
    """The command line and environment of ``ansible-playbook playbooks/site.yml`` (the
    playbook users run, not a copy) against the twin: the plan play and the GPU stack stages
    in ``tags``, the twin's kubeconfig, artifacts in the twin's state directory, the sharing
    window in force at ``at`` (simulated time of day), the twin's helm on PATH."""
    bindir = Path(sys.executable).parent
    prefix = os.environ.get("GPUSHARE_TWIN_PATH_PREFIX", "")  # e.g. test_site.py's helm shim
    env = dict(os.environ, PATH=":".join(p for p in (str(bindir), prefix, str(TWIN_BIN), os.environ.get("PATH", "")) if p),
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1")
    variables = {"gpushare_kubeconfig": str(state_dir() / "admin.kubeconfig"),
                 "gpushare_artifacts_dir": str(state_dir() / "artifacts" / inventory.name), **extra}
    if at is not None:
        variables["gpushare_window_at"] = at
    cmd = [str(bindir / "ansible-playbook") if (bindir / "ansible-playbook").exists()
           else "ansible-playbook", "-i", str(inventory / "hosts.yml"), "playbooks/site.yml",
           "--tags", ",".join(["plan"] + list(tags)), "-e", json.dumps(variables)]
    return cmd, env


def site_playbook(inventory: Path, tags: list, extra: dict, at: str | None = "08:00",
                  check: bool = True, timeout: int = 900) -> dict:
    """Runs site_command; returns the recap counts, stdout, rc and seconds; asserts success
    if ``check``."""
    cmd, env = site_command(inventory, tags, extra, at)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    seconds = time.monotonic() - start
    recap = re.search(r"^localhost\s+:\s+(.*)$", proc.stdout, re.M)
    if check:
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
        assert recap, proc.stdout[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", recap.group(1))} if recap else {}
    return {"counts": counts, "stdout": proc.stdout, "rc": proc.returncode, "seconds": round(seconds, 1)}


def twin_inventory(tmp_path_factory, name: str, policy: dict | None = None, extra_vars: dict | None = None) -> Path:
    """A copy of the example inventory with group_vars/all/twin.yml (what the twin needs)."""
    inv = tmp_path_factory.mktemp(name) / "four-gpu-server"
    shutil.copytree(EXAMPLE, inv, ignore=shutil.ignore_patterns("artifacts"))
    if policy:
        policy_file = inv / "group_vars" / "all" / "policy.yml"
        data = yaml.safe_load(policy_file.read_text())
        data["gpushare_policy"].update(policy)
        policy_file.write_text(yaml.safe_dump(data))
    (inv / "group_vars" / "all" / "twin.yml").write_text(yaml.safe_dump(extra_vars or {}))
    return inv


def run_playbook(inventory: Path, at: str = "08:00", check: bool = True, roles: tuple = ()) -> dict:
    """site.yml's GPU stack for the state in force at ``at``, with only ``roles`` if given
    (default gpu_operator, dra_driver, kueue), nothing installed (NO_INSTALL)."""
    return site_playbook(inventory, list(roles or ("gpu_operator", "dra_driver", "kueue")), NO_INSTALL,
                         at=at, check=check)


@pytest.fixture(scope="session")
def operator_sim(twin_session, example_plan):
    """The example Plan's GPU nodes as they are before the roles run, and the MIG Manager /
    device plugin stand-in running for the whole session (gpu_nodes.OperatorSim)."""
    gpu_nodes.create_nodes(twin_session, example_plan)
    sim = gpu_nodes.OperatorSim(twin_session, example_plan).start()
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def roles_apply(tmp_path_factory, twin_session, operator_sim) -> dict:
    """Three ansible-playbook runs: a copy of the example inventory with one more team, then
    the example inventory twice. The twin ends with exactly the example's Plan applied (the
    base state: 08:00)."""
    copy = tmp_path_factory.mktemp("inventory") / "four-gpu-server"
    shutil.copytree(EXAMPLE, copy)
    teams_file = copy / "group_vars" / "all" / "teams.yml"
    teams = yaml.safe_load(teams_file.read_text())
    teams["gpushare_teams"].append(EXTRA_TEAM)
    teams_file.write_text(yaml.safe_dump(teams))
    runs = {"with_extra_team": run_playbook(copy)}
    cq = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research"
    runs["extra_cluster_queue"] = twin_session.get(cq)
    runs["first"] = run_playbook(EXAMPLE)
    runs["second"] = run_playbook(EXAMPLE)
    runs["sim_advertised"] = list(operator_sim.advertised)
    return runs
