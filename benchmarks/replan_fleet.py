"""Re-plan a fleet after each of many small edits: how many GPUs are re-partitioned (drained).

Starts from the plan of mig_solver.fleet (servers of 8 GPUs of ten MIG-capable models, GPUs
0-1 declared MIG, 2-7 auto), then applies random edits one after the other, each re-planned
by mig_planner.plan_mig with the previous plan as the current state (stable re-planning):

- add: a new service of one replica needing 6-20 GiB (70 % any model, 27 % one model, 3 % a
  pinned profile, the proportions of the fleet), the case measured in issue 18;
- remove: a service goes;
- resize: a service needs a new size (1-40 GiB);
- server+ / server-: a server of 8 GPUs joins (not in MIG mode) or leaves.

Per edit: GPUs re-partitioned, next to a lower bound (the declared GPUs not in MIG mode now,
as a new server's; where there are none, 0 if every replica fits the current slices as they
are, by a maximum flow independent of the planner, else 1), replicas moved to another slice
(those of a server that left included), and the re-plan's wall and CPU seconds, with the
seconds of each objective (GPUs re-partitioned, auto GPUs, GPUs used, memory, replicas kept). With --scratch N, every Nth edit is also planned from
scratch (no current state) to count what that would re-partition. With --independent every
edit is applied to the first plan (as issue 18 measured), else to the previous one. Peak RSS
at the end.
Checks every plan (layouts place, every replica on a slice that holds it).

With --playbook the same re-planning goes through ansible-playbook, as a person runs it:
plan_fleet.fleet(NODES, SERVICES) (--plan-fleet, default 1,000 servers and 20,000 services)
written as an inventory, playbooks/plan.yml for the first plan, then five edits of the
inventory in sequence, each planned against the plan directory's current state (the last
plan.json, or applied-plan.json once a re-plan has kept it, docs/day-two.md): a MIG service
added, one removed, one resized, one given more replicas, a server leaving; then a run with no
edit. GPUs re-partitioned are counted between consecutive plan.json files.
Per run: CPU seconds (user and system of ansible-playbook and its workers, as GNU time counts
them), wall seconds, peak RSS and the GPUs re-partitioned (read from the two plan.json files).

    make venv collection-link
    .venv/bin/python benchmarks/replan_fleet.py --gpus 1000 --replicas 2500 --sizes 250 --edits 100
    .venv/bin/python benchmarks/replan_fleet.py --edits 100                  # 16,000 GPUs, 40,000 replicas
    .venv/bin/python benchmarks/replan_fleet.py --plan-fleet 100 2000 --edits 100 --scratch 1   # issue 18's fleet
    .venv/bin/python benchmarks/replan_fleet.py --plan-fleet 100 2000 --edits 100 --scratch 1 --independent
    .venv/bin/python benchmarks/replan_fleet.py --playbook                 # 1,000 servers through plan.yml
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".collections"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mig_solver import fleet  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import mig_geometry  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (  # noqa: E402
    MigCandidate, MigDemand, MigSolve, plan_mig)

GIB = 1024


def with_current(candidates, layouts):
    """The candidates in the state ``layouts`` left them (a GPU not in it: not in MIG mode)."""
    not_mig = {"current": None, "current_slices": ()}
    return [replace(c, **(layouts[(c.node, c.index)].as_current() if (c.node, c.index) in layouts else not_mig))
            for c in candidates]


def fits(d: MigDemand, model_key: str, name: str) -> bool:
    profile = CATALOG[model_key].profile(name)
    if model_key not in d.models or profile.memory_mib < d.need_mib:
        return False
    return name == d.profile if d.profile else not profile.variant


def fit_in_place(demands, candidates, layouts) -> bool:
    """Whether every replica can have a slice of the current layouts of these candidates,
    the slices taken as they are (a maximum flow: replicas by need, slices by profile)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    present = {(c.node, c.index) for c in candidates}
    slices = Counter((layout.model, s.profile) for key, layout in layouts.items() if key in present
                     for s in layout.slices)
    needs = Counter((d.models, d.profile, d.need_mib) for d in demands)
    kinds, groups = sorted(slices), sorted(needs, key=repr)
    source, sink = 0, 1 + len(groups) + len(kinds)
    rows, cols, caps = [], [], []
    for i, (models, profile, need) in enumerate(groups):
        rows.append(source), cols.append(1 + i), caps.append(needs[(models, profile, need)])
        probe = MigDemand("", "", 0, need, models, profile)
        for j, (model, name) in enumerate(kinds):
            if fits(probe, model, name):
                rows.append(1 + i), cols.append(1 + len(groups) + j), caps.append(len(demands))
    for j, kind in enumerate(kinds):
        rows.append(1 + len(groups) + j), cols.append(sink), caps.append(slices[kind])
    graph = csr_matrix((np.array(caps, dtype=np.int32), (rows, cols)), shape=(sink + 1, sink + 1))
    return maximum_flow(graph, source, sink).flow_value == len(demands)


def lower_bound(candidates, demands, layouts) -> int:
    """GPUs that must be re-partitioned: declared GPUs not in MIG mode now, and one more if
    there are none and the replicas do not fit the current slices as they are."""
    forced = sum(1 for c in candidates if c.declared and (c.node, c.index) not in layouts)
    return forced or (0 if fit_in_place(demands, candidates, layouts) else 1)


def new_service(rng: random.Random, name: str, models: list[str]) -> MigDemand:
    kind = rng.random()
    if kind < 0.97:
        need = rng.randint(6 * GIB, 20 * GIB)
        allowed = tuple(models) if kind < 0.70 else (rng.choice([m for m in models if max(
            p.memory_mib for p in CATALOG[m].base_profiles) >= need]),)
        return MigDemand(name, "team", 0, need, allowed)
    model = rng.choice(models)
    return MigDemand(name, "team", 0, 0, (model,), rng.choice(CATALOG[model].mig_profiles).name)


def edit(rng: random.Random, step: int, candidates, demands, layouts):
    """(kind, candidates, demands)."""
    models = sorted({c.model for c in candidates})
    roll = rng.random()
    if roll < 0.35:
        d = new_service(rng, "new-%03d" % step, models)
        return "add", candidates, demands + [d]
    if roll < 0.65:
        gone = rng.randrange(len(demands))
        return "remove", candidates, demands[:gone] + demands[gone + 1:]
    if roll < 0.90:
        i = rng.randrange(len(demands))
        old = demands[i]
        models = old.models if not old.profile else tuple(models)
        largest = max(p.memory_mib for m in models for p in CATALOG[m].base_profiles)
        d = MigDemand(old.workload, old.team, old.replica, rng.randint(GIB, min(40 * GIB, largest)), models)
        return "resize", candidates, demands[:i] + [d] + demands[i + 1:]
    if roll < 0.95:
        node = "new%03d" % step
        model = rng.choice(models)
        return "server+", candidates + [MigCandidate(node, i, model, i < 2) for i in range(8)], demands
    nodes = sorted({c.node for c in candidates})
    gone = rng.choice(nodes)
    return "server-", [c for c in candidates if c.node != gone], demands


def where(layouts) -> dict:
    return {(s.workload, s.replica): (key, s.profile, s.start) for key, layout in layouts.items()
            for s in layout.slices if s.workload is not None}


def moved(before, after) -> int:
    """Replicas on a slice before and after, not on the same one (a GPU gone included)."""
    was, now = where(before), where(after)
    return sum(1 for replica, place in now.items() if replica in was and was[replica] != place)


def check(layouts, before, demands) -> None:
    """Every layout places, every replica has a slice that holds it, kept GPUs keep their slices."""
    for key, layout in layouts.items():
        if key in before and before[key].counts() == layout.counts():
            assert [(s.profile, s.start) for s in before[key].slices] == [(s.profile, s.start) for s in layout.slices]
    need = {(d.workload, d.replica): d for d in demands}
    placed = 0
    for layout in layouts.values():
        assert mig_geometry.feasible(CATALOG[layout.model], layout.counts()), layout
        for s in layout.slices:
            if s.workload:
                assert fits(need[(s.workload, s.replica)], layout.model, s.profile)
                placed += 1
    assert placed == len(demands), (placed, len(demands))


def summary(values):
    return {"median": statistics.median(values), "max": max(values)} if values else None


def plan_fleet_inputs(nodes: int, services: int):
    """The MIG candidates and demands that build_plan makes of plan_fleet.fleet's inventory
    (captured from its call of plan_mig; the fleet of issue 18 is --nodes 100 --services 2000)."""
    import plan_fleet
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner, plan

    captured = []
    real = mig_planner.plan_mig

    def capture(demands, candidates, *args, **kwargs):
        captured.append((list(demands), list(candidates)))
        return real(demands, candidates, *args, **kwargs)
    mig_planner.plan_mig = capture
    try:
        plan.build_plan(plan_fleet.fleet(nodes, services))
    finally:
        mig_planner.plan_mig = real
    demands, candidates = captured[0]
    return candidates, demands


ROOT = Path(__file__).resolve().parents[1]


def _edit_inventory(inventory: Path, kind: str) -> str:
    """Applies the edit ``kind`` to plan_fleet's inventory files; says what it did."""
    workloads_file = inventory / "group_vars" / "all" / "workloads.yml"
    workloads = json.loads(workloads_file.read_text())["gpushare_workloads"]
    mig = [w for w in workloads if w.get("isolation") == "hardware"]
    if kind == "server leaves":
        hosts_file = inventory / "hosts.yml"
        hosts = json.loads(hosts_file.read_text())
        gone = sorted(hosts["all"]["children"]["gpushare_gpu_nodes"]["hosts"])[-1]
        del hosts["all"]["children"]["gpushare_gpu_nodes"]["hosts"][gone]
        hosts_file.write_text(json.dumps(hosts, indent=1) + "\n")
        (inventory / "host_vars" / ("%s.yml" % gone)).unlink()
        return "%s leaves" % gone
    if kind == "add":
        workloads.append({"name": "svc-new", "team": "inference", "kind": "serving", "isolation": "hardware",
                          "memory_gib": 12, "gpu_model": "h100-80gb"})
        done = "svc-new (12 GiB, MIG) added"
    elif kind == "remove":
        workloads.remove(mig[0])
        done = "%s removed" % mig[0]["name"]
    elif kind == "resize":
        mig[1]["memory_gib"] = 20 if mig[1]["memory_gib"] != 20 else 30
        done = "%s resized to %s GiB" % (mig[1]["name"], mig[1]["memory_gib"])
    else:
        mig[2]["replicas"] = 3
        done = "%s to 3 replicas" % mig[2]["name"]
    workloads_file.write_text(json.dumps({"gpushare_workloads": workloads}) + "\n")
    return done


def _repartitioned(old_text: str | None, new_text: str) -> int | None:
    """GPUs whose MIG partition changes from one plan.json text to the next (changes.plan_changes)."""
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners import changes
    if old_text is None:
        return None
    new = json.loads(new_text)
    old = changes.parse_previous(old_text, new["cluster"]["name"])
    return len(changes.plan_changes(old, new)["repartitioned"])


def playbook_runs(nodes: int, services: int) -> dict:
    """plan.yml on plan_fleet.fleet(nodes, services): the first plan, five edits, no edit."""
    import plan_fleet

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inventory = plan_fleet.write_inventory(plan_fleet.fleet(nodes, services), Path(tmp) / "inventory")
        plan_dir = Path(tmp) / "plan"
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
                   ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
        playbook = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))
        previous = None
        for kind in ["first plan", "add", "remove", "resize", "more replicas", "server leaves", "no edit"]:
            done = _edit_inventory(inventory, kind) if kind not in ("first plan", "no edit") else kind
            before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            proc = subprocess.run([playbook, "-i", str(inventory / "hosts.yml"), str(ROOT / "playbooks" / "plan.yml"),
                                   "-e", "gpushare_plan_dir=%s" % plan_dir], capture_output=True, text=True, env=env,
                                  check=False)
            wall, after = time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode:
                raise SystemExit("plan.yml failed after %s:\n%s%s" % (done, proc.stdout[-3000:], proc.stderr[-3000:]))
            text = (plan_dir / "plan.json").read_text()
            rows.append({"run": kind, "edit": done, "repartitioned": _repartitioned(previous, text),
                         "cpu_seconds": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
                         "user_seconds": round(after.ru_utime - before.ru_utime, 2),
                         "system_seconds": round(after.ru_stime - before.ru_stime, 2),
                         "wall_seconds": round(wall, 2), "load_average": " ".join("%.1f" % x for x in os.getloadavg())})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            previous = text
    return {"fleet": "plan_fleet.fleet(%d, %d) through ansible-playbook playbooks/plan.yml" % (nodes, services),
            "runs": rows, "peak_rss_mib_of_a_child": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
            "cpu_seconds": summary([r["cpu_seconds"] for r in rows])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=16000)
    parser.add_argument("--replicas", type=int, default=40000)
    parser.add_argument("--sizes", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--scratch", type=int, default=0, help="plan every Nth edit from scratch too (0: never)")
    parser.add_argument("--per-edit", action="store_true", help="print one line per edit")
    parser.add_argument("--independent", action="store_true",
                        help="apply each edit to the first plan, not to the previous one (issue 18's measure)")
    parser.add_argument("--plan-fleet", type=int, nargs=2, metavar=("NODES", "SERVICES"),
                        help="start from the MIG part of plan_fleet.fleet(NODES, SERVICES) instead")
    parser.add_argument("--playbook", action="store_true",
                        help="re-plan plan_fleet.fleet through ansible-playbook playbooks/plan.yml (five edits)")
    args = parser.parse_args()
    if args.playbook:
        print(json.dumps(playbook_runs(*(args.plan_fleet or (1000, 20000))), indent=2))
        return
    if args.plan_fleet:
        candidates, demands = plan_fleet_inputs(*args.plan_fleet)
        args.gpus, args.replicas, args.sizes = len(candidates), len(demands), len({d.need_mib for d in demands})
    else:
        candidates, demands = fleet(args.gpus, args.replicas, args.sizes, args.seed)
    started = time.perf_counter()
    layouts = plan_mig(demands, candidates)
    first_seconds = time.perf_counter() - started
    rng = random.Random(args.seed)
    rows = []
    base = candidates, demands, layouts
    for step in range(args.edits):
        if args.independent:
            candidates, demands, layouts = base
        kind, candidates, demands = edit(rng, step, candidates, demands, layouts)
        bound = lower_bound(candidates, demands, layouts)
        now = with_current(candidates, layouts)
        before = layouts
        solve = MigSolve()
        wall, cpu = time.perf_counter(), time.process_time()
        layouts = plan_mig(demands, now, solve=solve)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        check(layouts, before, demands)
        row = {"edit": kind, "repartitioned": solve.repartitioned, "lower_bound": bound, "moved": moved(before, layouts),
               "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "exact": solve.exact,
               "stable_status": solve.stable["status"],
               "stage_seconds": [round(x, 2) for x in [solve.stable["seconds"]] + solve.stage_seconds
                                 + [solve.stays["seconds"]]]}
        if args.scratch and step % args.scratch == 0:
            scratch = MigSolve()
            plan_mig(demands, now, solve=scratch, stable=False)
            row["scratch_repartitioned"] = scratch.repartitioned
        rows.append(row)
        if args.per_edit:
            print(json.dumps(row), flush=True)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    by_kind = {}
    for kind in sorted({r["edit"] for r in rows}):
        mine = [r for r in rows if r["edit"] == kind]
        by_kind[kind] = {"edits": len(mine), "repartitioned": summary([r["repartitioned"] for r in mine]),
                         "lower_bound": summary([r["lower_bound"] for r in mine]),
                         "moved": summary([r["moved"] for r in mine])}
        scratch = [r["scratch_repartitioned"] for r in mine if "scratch_repartitioned" in r]
        if scratch:
            by_kind[kind]["from_scratch_repartitioned"] = summary(scratch)
    print(json.dumps({
        "fleet": "plan_fleet.fleet(%d, %d)" % tuple(args.plan_fleet) if args.plan_fleet else "mig_solver.fleet",
        "edits_from": "the first plan" if args.independent else "the previous plan",
        "gpus": args.gpus, "replicas": args.replicas, "sizes": args.sizes, "seed": args.seed, "edits": len(rows),
        "first_plan_seconds": round(first_seconds, 2),
        "repartitioned": summary([r["repartitioned"] for r in rows]),
        "lower_bound": summary([r["lower_bound"] for r in rows]),
        "edits_above_lower_bound": sum(1 for r in rows if r["repartitioned"] > r["lower_bound"]),
        "moved": summary([r["moved"] for r in rows]),
        "by_edit": by_kind,
        "replan_seconds": summary([r["seconds"] for r in rows]),
        "replan_cpu_seconds": summary([r["cpu_seconds"] for r in rows]),
        "all_exact": all(r["exact"] and r["stable_status"] == "optimal" for r in rows),
        "peak_rss_mib": round(peak_mib),
    }, indent=2))


if __name__ == "__main__":
    main()
