# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each switch between the states of the day does to running work, in report.md and in
split.svg (day_states.switches). Expected by hand from the example day's inventory and
docs/sharing-windows.md: GPU 2 is time-sliced for the notebooks by day (as one 7g.141gb MIG
instance) and whole at night, where training's 2-GPU fine-tune borrows it beside GPU 3."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.day_states import switches
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg
from inventories import example_day


def test_the_example_days_switches_name_the_pods_that_must_end_and_what_blocks_the_way_back():
    found = switches(build_plan(example_day()))
    assert [(s["at"], s["old"], s["new"], s["into"]) for s in found] == [
        ("07:00", "night", None, False), ("19:00", None, "night", True)]
    back, into = found
    assert [(g["gpu"], g["recut"], g["old"], g["new"]) for g in into["gpus"]] == [
        (("gpu01", 2), True, ("timeslice", "data-science"), ("whole", "data-science"))]
    assert into["gpus"][0]["pods"] == ["the pods of notebooks (data-science, timeslice)"]
    assert [(g["gpu"], g["recut"]) for g in back["gpus"]] == [(("gpu01", 2), True)]
    assert back["gpus"][0]["pods"] == ["fine-tune (training, borrowed from data-science)"]


def test_report_and_picture_say_what_each_switch_does():
    plan = build_plan(example_day())
    report = report_markdown(plan)
    section = report[report.index("## What each switch does to running work"):]
    assert ("At 19:00 UTC (the base state -> window night): gpu01 GPU 2 timeslice -> whole, re-cut: the pods of "
            "notebooks (data-science, timeslice) must have ended, or the switch waits for them.") in section
    assert ("At 07:00 UTC (window night -> the base state): gpu01 GPU 2 whole -> timeslice, re-cut: the switch back "
            "waits while fine-tune (training, borrowed from data-science) runs there.") in section
    assert "PodDisruptionBudgets are not honoured" in section
    picture = render_svg(plan)
    assert "notebooks (data-science, timeslice) must have ended" in picture
    assert "waits while fine-tune (training, borrowed from data-science) runs" in picture


def test_a_window_that_only_hands_a_whole_gpu_to_another_team_recuts_nothing():
    """Production's GPU 0 is training's at night (same mode, docs/sharing-windows.md): no re-cut,
    so the switch waits for nothing; vLLM, on it by day, keeps its device."""
    variables = example_day()
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    del gpus[2]["schedule"]
    gpus[0]["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole", "team": "training"}]
    into = next(s for s in switches(build_plan(variables)) if s["into"])
    assert [(g["gpu"], g["recut"], g["pods"]) for g in into["gpus"]] == [(("gpu01", 0), False, ["vllm-chat (production)"])]
