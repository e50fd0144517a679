"""Plan a fleet: 1,000 servers x 8 GPUs of mixed models and 20,000 services.

Reports wall time and peak memory of build_plan (validation, MIG programme, sharing, Kueue
objects, DRA claims) plus rendering. Target on 2 cores: under 5 s and 500 MB.
With --inventory DIR it writes the fleet as an Ansible inventory instead (hosts.yml,
group_vars/all, one host_vars file per server), for playbooks/plan.yml (replan_fleet.py
--playbook times that).

    make venv collection-link && .venv/bin/python benchmarks/plan_fleet.py [--nodes 1000] [--services 20000]
    .venv/bin/python benchmarks/plan_fleet.py --inventory build/fleet-1000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".collections"))

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_manifests, render_report  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402

MODELS = ["a100-80gb", "h100-80gb", "h200", "b200", "l40s"]
TEAMS = ["production", "inference", "research", "data-science", "training"]


def fleet(nodes: int, services: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    teams = [{"name": t, "namespaces": [t, t + "-dev"], "production": t == "production",
              "priority": 1000 - 100 * i, "borrow": True} for i, t in enumerate(TEAMS)]
    hosts = {}
    for n in range(nodes):
        model = MODELS[n % len(MODELS)]
        gpus = []
        if model == "l40s":
            gpus = [{"index": i, "mode": "timeslice", "team": rng.choice(TEAMS[2:]), "replicas": 4} for i in range(8)]
        else:
            # two GPUs declared MIG, two whole for production/research, four auto
            gpus = [{"index": 0, "mode": "mig", "team": "inference"}, {"index": 1, "mode": "mig"},
                    {"index": 2, "mode": "whole", "team": "production"},
                    {"index": 3, "mode": "whole", "team": rng.choice(TEAMS[2:])}]
        hosts["gpu%04d" % n] = {"gpu_model": model, "gpu_count": 8, "cpus": 128, "memory_gib": 1024, "gpus": gpus}
    workloads = []
    sizes = [4, 6, 8, 9, 12, 14, 16, 18, 20, 24, 30, 40]   # GiB: mostly small models
    for i in range(services):
        kind = rng.random()
        name = "svc-%05d" % i
        if kind < 0.45:
            workloads.append({"name": name, "team": rng.choice(["production", "inference"]), "kind": "serving",
                              "isolation": "hardware", "memory_gib": rng.choice(sizes),
                              "gpu_model": rng.choice(MODELS[:4])})
        elif kind < 0.70:
            workloads.append({"name": name, "team": rng.choice(TEAMS[2:]), "kind": "notebook", "sharing": "timeslice"})
        else:
            workloads.append({"name": name, "team": rng.choice(TEAMS), "kind": rng.choice(["training", "batch"]),
                              "sharing": "whole", "gpus": rng.choice([1, 2, 4])})
    return {"gpushare_teams": teams, "gpushare_nodes": hosts, "gpushare_workloads": workloads,
            "gpushare_policy": {"cluster_name": "bench", "cohort": "bench"}}


def write_inventory(variables: dict, base: Path) -> Path:
    """``variables`` (as fleet returns them) laid out as an Ansible inventory under ``base``,
    as inventory-examples/*: hosts.yml (every server in gpushare_gpu_nodes, the first also the
    control plane), group_vars/all/{teams,workloads,policy}.yml and host_vars/<server>.yml with
    its gpushare_node. JSON is YAML, and much faster to write and read at this size."""
    base = Path(base)
    hosts = sorted(variables["gpushare_nodes"])
    (base / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    (base / "host_vars").mkdir(exist_ok=True)
    groups = {"gpushare_control_plane": {"hosts": {hosts[0]: None}},
              "gpushare_gpu_nodes": {"hosts": {h: None for h in hosts}}}
    (base / "hosts.yml").write_text(json.dumps({"all": {"children": groups}}, indent=1) + "\n")
    for name in ("teams", "workloads", "policy"):
        key = "gpushare_" + name
        (base / "group_vars" / "all" / ("%s.yml" % name)).write_text(json.dumps({key: variables[key]}) + "\n")
    for host in hosts:
        (base / "host_vars" / ("%s.yml" % host)).write_text(json.dumps({"gpushare_node": variables["gpushare_nodes"][host]}) + "\n")
    return base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--services", type=int, default=20000)
    parser.add_argument("--inventory", type=Path, help="write the fleet as an Ansible inventory here and stop")
    args = parser.parse_args()
    variables = fleet(args.nodes, args.services)
    if args.inventory:
        print(write_inventory(variables, args.inventory) / "hosts.yml")
        return
    start = time.perf_counter()
    plan = build_plan(variables)
    planned = time.perf_counter()
    files = render_manifests.manifest_files(plan)
    report = render_report.report_markdown(plan)
    rendered = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mig_slices = sum(len(w.get("slices", [])) for w in plan["workloads"])
    print(json.dumps({
        "nodes": args.nodes, "gpus": args.nodes * 8, "services": args.services,
        "mig_replicas_placed": mig_slices,
        "mig_gpus": sum(1 for n in plan["nodes"] for g in n["gpus"] if g["mode"] == "mig"),
        "kueue_objects": len(plan["kueue"]["objects"]),
        "plan_seconds": round(planned - start, 2), "render_seconds": round(rendered - planned, 2),
        "total_seconds": round(rendered - start, 2), "peak_rss_mib": round(peak_mib),
        "manifest_bytes": sum(len(f["content"]) for f in files) + len(report),
    }, indent=2))


if __name__ == "__main__":
    main()
