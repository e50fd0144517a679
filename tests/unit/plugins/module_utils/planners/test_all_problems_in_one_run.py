# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every problem one run can find, in that run (issue 33 item 2): an inventory with three
semantic problems, each in a different step (the inventory's device rules, the MIG planner,
a sharing window's state), reports all three in one PlanInvalid, not one per run.

The inventory: the example day plus two L40S servers. l40s-a time-slices GPU 0 and keeps
GPU 1 whole: an L40S has no MIG, so the device plugin time-slices every GPU of the node or
none. A MIG service wants 200 GiB, more than any H200 slice. l40s-b is whole by day, but its
GPU 0 is time-sliced in the night window: the same rule, broken inside the window."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day


def three_problems() -> dict:
    v = example_day()
    v["gpushare_nodes"]["l40s-a"] = {"gpu_model": "l40s", "gpu_count": 2, "gpus": [
        {"index": 0, "mode": "timeslice", "team": "data-science", "replicas": 4},
        {"index": 1, "mode": "whole", "team": "training"}]}
    v["gpushare_nodes"]["l40s-b"] = {"gpu_model": "l40s", "gpu_count": 2, "gpus": [
        {"index": 0, "mode": "whole", "team": "training", "schedule": [
            {"name": "night", "from": "19:00", "until": "07:00", "mode": "timeslice", "team": "data-science",
             "replicas": 4}]},
        {"index": 1, "mode": "whole", "team": "training"}]}
    v["gpushare_workloads"].append({"name": "big-mig", "team": "production", "kind": "serving", "sharing": "mig",
                                    "memory_gib": 200})
    return v


def test_three_semantic_problems_in_one_run():
    with pytest.raises(PlanInvalid) as caught:
        build_plan(three_problems())
    found = [(p.path, p.message.split("\n")[0]) for p in caught.value.problems]
    assert found == [
        ("hostvars[l40s-a].gpushare_node.gpus",
         "l40s has no MIG, so time-slicing applies to every GPU of the node; GPUs [1] are not timeslice"),
        ("gpushare_workloads", "no GPU that may be cut with MIG has a slice that holds these replicas:"),
        ("hostvars[l40s-b].gpushare_node.gpus",
         "inside sharing window night: l40s has no MIG, so time-slicing applies to every GPU of the node; "
         "GPUs [1] are not timeslice"),
    ]
    assert "big-mig need a slice with at least 200 GiB" in caught.value.problems[1].message


def test_each_problem_alone_is_reported_alone():
    """The same three, fixed in turn: what is left is still found (no problem hides behind another)."""
    for fixed in ("l40s-a", "big-mig", "l40s-b"):
        v = three_problems()
        if fixed == "big-mig":
            v["gpushare_workloads"].pop()
        else:
            v["gpushare_nodes"].pop(fixed)
        with pytest.raises(PlanInvalid) as caught:
            build_plan(v)
        assert len(caught.value.problems) == 2, (fixed, [str(p) for p in caught.value.problems])
