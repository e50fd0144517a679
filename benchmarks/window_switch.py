# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a scheduled sharing-window switch takes: playbooks/site.yml --tags gpu_operator,kueue
against the cluster twin, as cron/AWX runs it at a window's boundary.

1. The example day (inventory-examples/four-gpu-server): the base state at 08:00 (not timed),
   then the 19:00 switch (GPU 2 of gpu01 time-sliced -> whole: node relabelled, MIG Manager
   stand-in, Kueue flavors and quotas) and the 07:00 switch back, each timed.
2. A 100-node plan (the example's server copied to gpu001..gpu100): base, then the 19:00
   switch of all 100 nodes, timed.

Targets (docs/performance.md): example switches under 15 s each, the 100-node switch under 60 s.
Needs the twin up (tests/twin/up.sh; GPUSHARE_TWIN_STATE). Writes build/twin/window-switch.json.

    tests/twin/up.sh && .venv/bin/python benchmarks/window_switch.py [--nodes 100]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / ".collections", ROOT / "tests" / "unit", ROOT / "tests" / "twin"):
    sys.path.insert(0, str(extra))

import gpu_nodes  # noqa: E402
from conftest import EXAMPLE, NO_INSTALL, site_playbook  # noqa: E402
from inventories import load_dir  # noqa: E402
from twinclient import ApiError, Twin  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402

STAGES = ["gpu_operator", "kueue"]


def ensure_nodes(twin: Twin, plan: dict) -> None:
    missing = []
    for state in plan["nodes"]:
        try:
            twin.get(gpu_nodes.node_path(state["name"]))
        except ApiError as err:
            if err.status != 404:
                raise
            missing.append(state)
    if missing:
        gpu_nodes.create_nodes(twin, {"nodes": missing})


def switch(inventory: Path, at: str) -> dict:
    run = site_playbook(inventory, STAGES, NO_INSTALL, at=at, timeout=1200)
    return {"at": at, "seconds": run["seconds"], "changed": run["counts"].get("changed")}


def fleet_inventory(base: Path, nodes: int) -> Path:
    """The example inventory with its one server copied to ``nodes`` servers."""
    inv = base / "fleet"
    shutil.copytree(EXAMPLE, inv, ignore=shutil.ignore_patterns("artifacts"))
    host_vars = yaml.safe_load((EXAMPLE / "host_vars" / "gpu01.yml").read_text())
    hosts = yaml.safe_load((EXAMPLE / "hosts.yml").read_text())
    names = ["gpu%03d" % i for i in range(1, nodes + 1)]
    hosts["all"]["children"]["gpushare_gpu_nodes"]["hosts"] = {n: {"ansible_host": "192.0.2.%d" % (i % 250 + 1)}
                                                               for i, n in enumerate(names)}
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (inv / "host_vars" / "gpu01.yml").unlink()
    for n in names:
        (inv / "host_vars" / ("%s.yml" % n)).write_text(yaml.safe_dump(host_vars))
    return inv


def measure(inventory: Path, twin: Twin, label: str) -> dict:
    plan = build_plan(load_dir(inventory))
    ensure_nodes(twin, plan)
    sim = gpu_nodes.OperatorSim(twin, plan, interval=0.5).start()
    try:
        base = switch(inventory, "08:00")
        night = switch(inventory, "19:00")
        morning = switch(inventory, "07:00") if label == "example" else None
        again = switch(inventory, "07:00") if label == "example" else None
    finally:
        sim.stop()
    out = {"nodes": len(plan["nodes"]), "base": base, "switch_19_00": night}
    if morning:
        out["switch_07_00"] = morning
        out["rerun_07_00_unchanged"] = again
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, default=100)
    args = parser.parse_args()
    twin = Twin()
    results = {"load_average_start": os.getloadavg()}
    results["example"] = measure(EXAMPLE, twin, "example")
    with tempfile.TemporaryDirectory() as tmp:
        results["fleet"] = measure(fleet_inventory(Path(tmp), args.nodes), twin, "fleet")
    results["load_average_end"] = os.getloadavg()
    out = ROOT / "build" / "twin"
    out.mkdir(parents=True, exist_ok=True)
    (out / "window-switch.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
