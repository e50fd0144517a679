# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which shared resource a time-sliced or MPS workload asks for (workload_requests): its
team's own, else the cohort pool's, else any team's; the GPUs are indexed once per plan
(issue 37: 20,000 workloads each scanned 8,000 GPUs), every workload looked up by key. The
expected resources are read by hand from the GPUs below."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.workload_requests import (
    pod_requests, shared_owners, shared_resources)

GPUS = [
    {"index": 0, "mode": "timeslice", "team": "a", "resource": "nvidia.com/gpu.shared-a"},
    {"index": 1, "mode": "timeslice", "team": None, "resource": "nvidia.com/gpu.shared-pool"},
    {"index": 2, "mode": "timeslice", "team": "b", "resource": "nvidia.com/gpu.shared-b"},
    {"index": 3, "mode": "mps", "team": "b", "resource": "nvidia.com/gpu.mps-b"},
    {"index": 4, "mode": "mps", "team": "d", "resource": "nvidia.com/gpu.mps-d"},
    {"index": 5, "mode": "timeslice", "team": "a", "resource": "nvidia.com/gpu.shared-a2"},
    {"index": 6, "mode": "whole", "team": "c", "resource": "nvidia.com/gpu"},
]
PLAN = {"nodes": [{"name": "n1", "gpus": GPUS[:4]}, {"name": "n2", "gpus": GPUS[4:]}]}


@pytest.mark.parametrize("mode, team, expected", [
    ("timeslice", "a", ["nvidia.com/gpu.shared-a", "nvidia.com/gpu.shared-a2"]),   # its own, both servers
    ("timeslice", "c", ["nvidia.com/gpu.shared-pool"]),                              # none of its own: the pool's
    ("timeslice", None, ["nvidia.com/gpu.shared-pool"]),
    ("mps", "b", ["nvidia.com/gpu.mps-b"]),
    ("mps", "c", ["nvidia.com/gpu.mps-b", "nvidia.com/gpu.mps-d"]),                 # no pool: any team's (borrowed)
    ("whole", "a", ["nvidia.com/gpu"]),
    ("mig", "a", []),
])
def test_own_then_the_pool_then_any_team(mode, team, expected):
    assert shared_resources(PLAN, mode, team) == expected
    assert shared_resources(PLAN, mode, team, shared_owners(PLAN)) == expected


def test_each_workload_of_a_plan_asks_for_its_own_answer():
    teams = [{"name": t, "namespaces": [t]} for t in "abc"]
    workloads = [{"name": "w-%s-%s" % (mode, team), "team": team, "kind": "serving", "sharing": mode, "replicas": 2,
                  "queue": team} for mode in ("timeslice", "mps") for team in "abc"]
    requests = pod_requests(dict(PLAN, teams=teams, workloads=workloads))
    asked = {name: r["groups"][0]["resource"] for name, r in requests.items()}
    assert asked == {"w-timeslice-a": "nvidia.com/gpu.shared-a", "w-timeslice-b": "nvidia.com/gpu.shared-b",
                     "w-timeslice-c": "nvidia.com/gpu.shared-pool", "w-mps-a": "nvidia.com/gpu.mps-b",
                     "w-mps-b": "nvidia.com/gpu.mps-b", "w-mps-c": "nvidia.com/gpu.mps-b"}
