"""Solve one large MIG programme: 16,000 GPUs of 10 models, 40,000 replicas of 4,000 sizes.

Calls mig_planner.plan_mig directly (no inventory validation, sharing or rendering: see
plan_fleet.py for the whole plan). Reports wall time, peak memory, the programme's size and
each objective's solver status, then checks that every replica got a slice that holds it.
Target on 2 cores: under 10 s and 500 MB, every stage optimal.

    make venv collection-link
    .venv/bin/python benchmarks/mig_solver.py [--gpus 16000] [--replicas 40000] [--sizes 4000] [--seed 11]
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

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import mig_geometry  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (  # noqa: E402
    MigCandidate, MigDemand, MigSolve, plan_mig)

# Ten of the catalogue's MIG-capable models, both odd grids (A30: 4 units, RTX PRO 6000: 12) included.
MODELS = ["a100-40gb", "a100-80gb", "h100-80gb", "h100-94gb", "gh200-144gb", "h200-141gb", "b200", "b300",
          "a30", "rtx-pro-6000"]


def fleet(gpus: int, replicas: int, sizes: int, seed: int = 11):
    """Servers of 8 GPUs, models in turn: GPUs 0-1 declared MIG, 2-7 auto. Replicas: 70 % may
    run on any model, 27 % on one model, 3 % pin one of that model's profiles."""
    rng = random.Random(seed)
    candidates = [MigCandidate("gpu%05d" % (i // 8), i % 8, MODELS[(i // 8) % len(MODELS)], i % 8 < 2)
                  for i in range(gpus)]
    needs = sorted(rng.sample(range(1024, 40 * 1024), sizes))   # MiB, all distinct
    largest = {m: max(p.memory_mib for p in CATALOG[m].base_profiles) for m in MODELS}
    demands = []
    for i in range(replicas):
        need = needs[i % sizes]
        kind = rng.random()
        if kind < 0.70:
            demands.append(MigDemand("svc-%05d" % i, "team", 0, need, tuple(MODELS)))
        elif kind < 0.97:
            model = rng.choice([m for m in MODELS if largest[m] >= need])
            demands.append(MigDemand("svc-%05d" % i, "team", 0, need, (model,)))
        else:
            model = rng.choice(MODELS)
            profile = rng.choice(CATALOG[model].mig_profiles)
            demands.append(MigDemand("svc-%05d" % i, "team", 0, 0, (model,), profile.name))
    return candidates, demands


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=16000)
    parser.add_argument("--replicas", type=int, default=40000)
    parser.add_argument("--sizes", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--time-limit", type=float, default=20.0, help="safety limit per objective, seconds")
    args = parser.parse_args()
    candidates, demands = fleet(args.gpus, args.replicas, args.sizes, args.seed)
    solve = MigSolve()
    start = time.perf_counter()
    layouts = plan_mig(demands, candidates, carve_leftover=True, solve=solve, time_limit=args.time_limit)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # Not timed: every layout has a placement and every replica a slice that holds it.
    need = {(d.workload, d.replica): d for d in demands}
    placed = 0
    for layout in layouts.values():
        assert mig_geometry.feasible(CATALOG[layout.model], layout.counts()), layout
        for s in layout.slices:
            if s.workload:
                d = need[(s.workload, s.replica)]
                assert s.memory_mib >= d.need_mib and layout.model in d.models and s.profile == (d.profile or s.profile)
                placed += 1
    assert placed == len(demands), (placed, len(demands))
    print(json.dumps({
        "gpus": args.gpus, "models": len(MODELS), "replicas": args.replicas,
        "distinct_sizes": len({d.need_mib for d in demands if not d.profile}),
        "classes": solve.classes, "columns": solve.columns, "rows": solve.rows,
        "stages": solve.stages, "exact": solve.exact, "stage_seconds": [round(t, 2) for t in solve.stage_seconds],
        "solved_again_with_whole_gpus": solve.whole_patterns,
        "mig_gpus": len(layouts),
        "gpus_hosting_replicas": sum(1 for layout in layouts.values() if any(s.workload for s in layout.slices)),
        "solver_seconds": round(solve.seconds, 2), "plan_mig_seconds": round(seconds, 2),
        "peak_rss_mib": round(peak_mib),
    }, indent=2))


if __name__ == "__main__":
    main()
