"""Sharing windows applied on a clock: which state is in force, the objects of that state and
window validation (the pods a MIG change between two states can disturb: cluster/test_pods.py;
the flavors no state prunes: cluster/test_prune.py)."""
from __future__ import annotations

import copy
import datetime

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window, build_plan, local_clock
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render
from inventories import EXAMPLE_NAMES, example_mig_configs, load_example

DAY, NIGHT = example_mig_configs(build_plan(load_example("four-gpu-server")))


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_example("four-gpu-server"))


@pytest.mark.parametrize("clock, expected", [
    ("07:00", None), ("12:00", None), ("18:59", None),
    ("19:00", "night"), ("23:59", "night"), ("00:00", "night"), ("06:59", "night")])
def test_the_window_in_force_runs_past_midnight(plan, clock, expected):
    window = active_window(plan, clock)
    assert (window["name"] if window else None) == expected


def test_local_clock_uses_the_policy_time_zone(plan):
    noon_utc = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
    assert local_clock(plan, noon_utc) == "12:00"
    berlin = copy.deepcopy(plan)
    berlin["cluster"]["timezone"] = "Europe/Berlin"
    assert local_clock(berlin, noon_utc) == "13:00"  # CET in December


def test_the_night_state_relabels_the_node_and_swaps_the_cluster_queues(plan):
    night = active_window(plan, "20:00")
    day_objects, night_objects = render(plan)["kueue"], render(plan, window=night)["kueue"]
    assert render(plan)["node_labels"][0]["metadata"]["labels"]["nvidia.com/mig.config"] == DAY
    assert render(plan, window=night)["node_labels"][0]["metadata"]["labels"]["nvidia.com/mig.config"] == NIGHT
    kinds = [o["kind"] for o in night_objects]
    assert kinds == sorted(kinds, key=[o["kind"] for o in day_objects].index)  # flavors before queues
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in night_objects}
    for obj in night["kueue"]["objects"]:
        assert by_key[(obj["kind"], obj["metadata"]["name"])] == obj
    for obj in day_objects:
        if obj["kind"] in ("LocalQueue", "WorkloadPriorityClass"):
            assert by_key[(obj["kind"], obj["metadata"]["name"])] == obj
    # The ConfigMaps hold both states' configs whichever is applied.
    assert render(plan)["gpu_operator"] == render(plan, window=night)["gpu_operator"]


def _with_windows(*schedules, policy=None):
    variables = load_example("four-gpu-server")
    node = variables["gpushare_nodes"]["gpu01"]
    for index, schedule in schedules:
        gpu = next(g for g in node["gpus"] if g["index"] == index)
        gpu["schedule"] = schedule
    variables["gpushare_policy"] = dict(variables.get("gpushare_policy") or {}, **(policy or {}))
    return variables


def _problems(variables):
    with pytest.raises(PlanInvalid) as err:
        build_plan(variables)
    return [(p.path, p.message) for p in err.value.problems]


def test_two_windows_in_force_at_once_are_refused():
    variables = _with_windows(
        (2, [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]),
        (3, [{"name": "evening", "from": "17:00", "until": "20:00", "mode": "mig"}]))
    problems = _problems(variables)
    assert any("overlaps window" in message and "evening" in message for _path, message in problems), problems


def test_one_window_name_means_the_same_hours_everywhere():
    variables = _with_windows(
        (2, [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]),
        (3, [{"name": "night", "from": "20:00", "until": "07:00", "mode": "mig"}]))
    problems = _problems(variables)
    assert any(path.endswith("gpus[3].schedule[0]") and "same hours" in message for path, message in problems), problems


def test_back_to_back_windows_do_not_overlap():
    build_plan(_with_windows(
        (2, [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]),
        (3, [{"name": "morning", "from": "07:00", "until": "09:00", "mode": "mig"}])))


def test_unknown_time_zone_and_reserved_window_names():
    variables = _with_windows((2, [{"name": "auto", "from": "19:00", "until": "07:00", "mode": "whole"}]),
                              policy={"timezone": "Mars/Olympus"})
    paths = [path for path, _message in _problems(variables)]
    assert "gpushare_policy.timezone" in paths
    assert any(path.endswith("schedule[0].name") for path in paths), paths


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_a_window_never_repartitions_a_gpu_it_does_not_name(example):
    """GPUs outside the window keep their base MIG layout (same profiles at the same
    places), so a 19:00 switch leaves the running MIG services alone."""
    plan = build_plan(load_example(example))
    base = {(n["name"], g["index"]): g for n in plan["nodes"] for g in n["gpus"]}
    for window in plan["windows"]:
        named = {(g["node"], g["index"]) for g in window["gpus"]}
        for node in window["nodes"]:
            for g in node["gpus"]:
                key = (node["name"], g["index"])
                if key not in named and base[key]["mig"]:
                    assert g["mig"] is not None, key
                    assert [(s["profile"], s["start"]) for s in g["mig"]["slices"]] == \
                        [(s["profile"], s["start"]) for s in base[key]["mig"]["slices"]], key
