# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a scheduled sharing-window switch takes: playbooks/site.yml --tags gpu_operator,kueue
against the cluster twin, as cron/AWX runs it at a window's boundary.

1. The example day (inventory-examples/four-gpu-server): the base state at 08:00 (not timed),
   then the 19:00 switch (GPU 2 of gpu01 time-sliced -> whole: node relabelled, MIG Manager
   stand-in, Kueue flavors and quotas) and the 07:00 switch back, each timed.
2. A 100-node plan (the example's server copied to gpu001..gpu100): base, then the 19:00
   switch of all 100 nodes, timed.

Each switch reports two times: the whole run (`seconds`: start-up, plan, apply, waits and the
closing summary) and `in_place_s`, from the run's start to the new quotas and labels in place.
For the latter a thread lists the Nodes and ClusterQueues every 0.1 s during the run; the
state the run ends with (the nodes' nvidia.com/ and gpushare.cluster/ labels, the ClusterQueues'
specs) is the target, and `in_place_s` is the first list from which on every list showed it.
It is read from the cluster, not from the Plan or the run's output.

Targets (docs/performance.md): the example's switches in place within 5 s, whole runs under
15 s, the 100-node switch under 60 s. Needs the twin up (tests/twin/up.sh;
GPUSHARE_TWIN_STATE). Writes build/twin/window-switch.json.

    tests/twin/up.sh && .venv/bin/python benchmarks/window_switch.py [--nodes 100]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
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


OURS = ("nvidia.com/", "gpushare.cluster/")


def cluster_state(twin: Twin) -> tuple:
    """What a switch changes, as the API server holds it: each Node's labels of the GPU stack,
    each ClusterQueue's spec (its quotas, flavors, cohort)."""
    nodes = twin.get("/api/v1/nodes")["items"]
    queues = twin.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues")["items"]
    labels = {n["metadata"]["name"]: {k: v for k, v in n["metadata"].get("labels", {}).items() if k.startswith(OURS)}
              for n in nodes}
    return (json.dumps(labels, sort_keys=True),
            json.dumps({q["metadata"]["name"]: q["spec"] for q in queues}, sort_keys=True))


class InPlaceWatch:
    """Lists the cluster every ``interval`` seconds from start() to stop(); in_place() is the
    time (from start) of the first list from which on every list equals the last one."""

    def __init__(self, twin: Twin, interval: float = 0.1):
        self.twin, self.interval, self.seen, self._stop = twin, interval, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.started = 0.0

    def start(self) -> "InPlaceWatch":
        self.started = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append((time.monotonic() - self.started, cluster_state(self.twin)))
            self._stop.wait(self.interval)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        final = cluster_state(self.twin)
        at = None
        for t, state in reversed(self.seen):
            if state != final:
                break
            at = t
        return round(at if at is not None else time.monotonic() - self.started, 2)


def switch(inventory: Path, at: str, twin: Twin) -> dict:
    watch = InPlaceWatch(twin).start()
    run = site_playbook(inventory, STAGES, NO_INSTALL, at=at, timeout=1200)
    in_place = watch.stop()
    return {"at": at, "seconds": run["seconds"], "in_place_s": in_place, "changed": run["counts"].get("changed"),
            "lists": len(watch.seen)}


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
        base = switch(inventory, "08:00", twin)
        night = switch(inventory, "19:00", twin)
        morning = switch(inventory, "07:00", twin) if label == "example" else None
        again = switch(inventory, "07:00", twin) if label == "example" else None
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
    parser.add_argument("--runs", type=int, default=1, help="times the example's switches are measured")
    args = parser.parse_args()
    twin = Twin()
    results = {"load_average_start": os.getloadavg()}
    results["example"] = [measure(EXAMPLE, twin, "example") for _round in range(args.runs)]
    if args.nodes:
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
