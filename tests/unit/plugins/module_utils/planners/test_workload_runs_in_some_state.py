# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole-GPU workload that can run in no state of the day is refused (PlanInvalid with the
numbers and the fix), not a warning; one that can run only inside a window is planned.

Expected numbers are counted by hand from the example day's inventory (host_vars/gpu01.yml:
four H200s; GPU 0 production's, GPU 3 training's, GPU 2 data-science's, time-sliced by day
and whole at night)."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from inventories import example_day


def _team(variables, name):
    return next(t for t in variables["gpushare_teams"] if t["name"] == name)


def _nightly_four_gpu_fine_tune(borrowing_limit):
    """Training owns GPUs 1, 2 and 3 (whole, all day) and may borrow ``borrowing_limit``;
    its fine-tune wants 4 GPUs on one server."""
    variables = example_day()
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    gpus[1:3] = [{"index": 1, "mode": "whole", "team": "training"}, {"index": 2, "mode": "whole", "team": "training"}]
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] in ("vllm-chat", "fine-tune")]
    fine_tune = variables["gpushare_workloads"][1]
    fine_tune.update(gpus=4, memory_gib=400)
    _team(variables, "training")["borrowing_limit"] = borrowing_limit
    return variables


def test_a_workload_its_team_can_never_reach_is_refused_with_the_numbers_and_the_fix():
    with pytest.raises(PlanInvalid) as raised:
        build_plan(_nightly_four_gpu_fine_tune(0))
    [problem] = raised.value.problems
    assert problem.path == "gpushare_workloads[1].gpus"
    # 3 own GPUs on gpu01, 0 borrowed (borrowing_limit 0), the only state.
    assert "needs 4 whole GPUs on one server" in problem.message and "the base state at most 3 (gpu01)" in problem.message
    assert (problem.value, problem.allowed) == (4, "at most 3")
    assert "raise its borrowing_limit (0)" in problem.hint


def test_borrowing_one_gpu_makes_it_reachable():
    # 3 own + production's GPU 0 (production lends) = 4.
    plan = build_plan(_nightly_four_gpu_fine_tune(1))
    assert any(w["name"] == "fine-tune" for w in plan["workloads"])


def test_a_workload_that_can_run_only_inside_a_window_is_planned():
    """Production lends nothing: by day training reaches its own GPU 3 only (GPU 2 is time-sliced);
    at night data-science's GPU 2 is whole and lent, so the 2-GPU fine-tune can run then."""
    variables = example_day()
    _team(variables, "production")["lend"] = False
    build_plan(variables)
    del variables["gpushare_nodes"]["gpu01"]["gpus"][2]["schedule"]       # no night window: never
    with pytest.raises(PlanInvalid) as raised:
        build_plan(variables)
    assert any("the base state at most 1 (gpu01)" in p.message for p in raised.value.problems)


@pytest.mark.parametrize("order", [("on-h200", "on-h100"), ("on-h100", "on-h200")])
def test_each_workload_is_checked_against_the_servers_of_its_own_model(order):
    """The check looks each server up once for all workloads alike (issue 37): two workloads of
    one team that differ only in gpu_model still get each their own answer, in either order.
    Training owns 3 whole GPUs of gpu01 (h200) and 1 of gpu02 (h100-80gb, 4 GPUs, the others
    production's, which lends nothing): 3 GPUs on one h200 server are reachable, on an h100
    server at most 1."""
    variables = example_day()
    _team(variables, "production")["lend"] = False
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    gpus[1:3] = [{"index": 1, "mode": "whole", "team": "training"}, {"index": 2, "mode": "whole", "team": "training"}]
    variables["gpushare_nodes"]["gpu02"] = {
        "gpu_model": "h100-80gb", "gpu_count": 4, "cpus": 192, "memory_gib": 2048, "host_driver": False, "dra": False,
        "gpus": [{"index": i, "mode": "whole", "team": "training" if i == 3 else "production"} for i in range(4)]}
    models = {"on-h200": "h200", "on-h100": "h100-80gb"}
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] == "vllm-chat"] + [
        {"name": name, "team": "training", "kind": "training", "sharing": "whole", "memory_gib": 120, "gpus": 3,
         "gpu_model": models[name]} for name in order]
    with pytest.raises(PlanInvalid) as raised:
        build_plan(variables)
    [problem] = raised.value.problems
    assert problem.path == "gpushare_workloads[%d].gpus" % (1 + order.index("on-h100"))
    assert "workload on-h100 needs 3 whole GPUs" in problem.message
    assert "the base state at most 1 (gpu02)" in problem.message
