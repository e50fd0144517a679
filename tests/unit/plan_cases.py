# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventories and look-ups shared by the planner's hand-worked tests (test_plan_refusals.py,
test_plan_gpu_assignment.py), built from the four-GPU example inventory."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import load_example


def pinned_to_the_whole_card(neighbour_mode):
    """The four-GPU example with embeddings alone on MIG, pinned to 7g.141gb, GPU 1 auto and
    GPU 2 of data-science in ``neighbour_mode``."""
    variables = load_example("four-gpu-server")
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    gpus[1]["mode"] = "auto"
    gpus[2] = {"index": 2, "mode": neighbour_mode, "team": "data-science",
               **({"replicas": 5} if neighbour_mode == "timeslice" else {})}
    # embeddings alone on MIG, pinned to the whole-card instance (the notebooks only where a card is sliced).
    dropped = ("classifier", "speech-to-text") + (() if neighbour_mode == "timeslice" else ("notebooks",))
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] not in dropped]
    for w in variables["gpushare_workloads"]:
        if w["name"] == "embeddings":
            w["mig_profile"] = "7g.141gb"
    return variables


def plan_problems(variables) -> dict:
    """path -> problem; each says what is allowed and what to do (the project's rule for errors)."""
    with pytest.raises(PlanInvalid) as refused:
        plan.build_plan(variables)
    for p in refused.value.problems:
        assert p.allowed and p.hint, p
    return {p.path: p for p in refused.value.problems}


def embeddings_entry(variables) -> tuple[int, dict]:
    """(index, entry) of the embeddings workload."""
    return next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if w["name"] == "embeddings")
