"""Shared fixtures of the twin tests: the client, the Plan of the example day, and the Plan
applied to the twin by the kueue role (ansible-playbook of tests/twin/apply-plan.yml)."""
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
    from ansible_collections.gpushare.cluster.plugins.module_utils.plan import build_plan
    from inventories import load_example
    return build_plan(load_example("four-gpu-server"))


def write_results(name: str, results: dict) -> None:
    """build/twin/NAME.json (or $GPUSHARE_TWIN_RESULTS/NAME.json): outside the twin's state
    directory, which 50-twin.sh deletes after a passing run."""
    out = Path(os.environ.get("GPUSHARE_TWIN_RESULTS", ROOT / "build" / "twin"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


def run_playbook(inventory: Path, at: str = "08:00", check: bool = True, roles: tuple = ()) -> dict:
    """ansible-playbook tests/twin/apply-plan.yml for the state in force at ``at`` (simulated
    time of day), with only ``roles`` if given. Returns the recap counts, stdout and seconds;
    asserts success if ``check``."""
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    cmd = [str(bindir / "ansible-playbook") if (bindir / "ansible-playbook").exists()
           else "ansible-playbook", "-i", str(inventory), "tests/twin/apply-plan.yml",
           "-e", f"twin_kubeconfig={state_dir() / 'admin.kubeconfig'}", "-e", f"gpushare_window_at={at}"]
    if roles:
        cmd += ["-e", json.dumps({"twin_roles": list(roles)})]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.monotonic() - start
    recap = re.search(r"^localhost\s+:\s+(.*)$", proc.stdout, re.M)
    if check:
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
        assert recap, proc.stdout[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", recap.group(1))} if recap else {}
    return {"counts": counts, "stdout": proc.stdout, "rc": proc.returncode, "seconds": round(seconds, 1)}


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
