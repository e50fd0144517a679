# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hints that name the real mistake, once (issue 33 item 3): a window's hours written as one
range, more gpus entries than gpu_count, and the shared formatting of a problem (a message
that ends its own sentence or already gives the fix). Each expected message is written out
here in full, as a person reads it."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import InventoryProblem, PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day

GPU01 = "hostvars[gpu01].gpushare_node"
FORMAT = 'allowed: from: "HH:MM" and until: "HH:MM", each quoted; a window may cross midnight (from: "20:00", until: "06:00")'


def problems(variables: dict) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        build_plan(variables)
    return [str(p) for p in caught.value.problems]


def test_hours_written_as_one_range_under_three_gpus_is_one_problem_that_gives_the_window_format():
    v = example_day()
    gpus = v["gpushare_nodes"]["gpu01"]["gpus"]
    # The night window pasted under GPUs 0, 2 and 3 with its hours as one key.
    for i in (0, 2, 3):
        gpus[i]["schedule"] = [{"name": "night", "hours": "20:00-06:00", "mode": "timeslice" if i != 2 else "whole",
                                "replicas": 2, "team": "training"}]
    assert problems(v) == [
        GPU01 + ".gpus[0].schedule[0].hours: is a range of hours; a window gives its start and its end as from and "
        "until (the same at gpus[2].schedule[0].hours, gpus[3].schedule[0].hours) (got '20:00-06:00'); " + FORMAT
        + '. Write from: "20:00" and until: "06:00" instead']


def test_a_range_in_from_gives_the_window_format_not_the_digits_of_the_hour():
    v = example_day()
    window = v["gpushare_nodes"]["gpu01"]["gpus"][2]["schedule"][0]
    window["from"] = "20:00-06:00"
    del window["until"]
    assert problems(v) == [
        GPU01 + ".gpus[2].schedule[0].from: is a range of hours; a window gives its start and its end as from and "
        "until (got '20:00-06:00'); " + FORMAT + '. Write from: "20:00" and until: "06:00" instead']


def test_more_gpus_entries_than_gpu_count_blames_gpu_count_once():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpus"] += [{"index": i, "mode": "whole"} for i in range(4, 8)]
    assert problems(v) == [
        GPU01 + ".gpu_count: is 4 but gpus lists 8 GPUs (got 4); allowed: at least 8: one gpus entry per GPU, "
        "index 0..gpu_count-1. Set gpu_count: 8 if the server has 8 GPUs (nvidia-smi -L lists them), or remove "
        "the extra gpus entries"]


def test_a_message_that_ends_its_sentence_and_gives_the_fix_gets_neither_twice():
    p = InventoryProblem("gpushare_workloads", "the services do not fit:\n  - a\n  Add GPUs.", allowed="services that fit",
                         hint="Add GPUs")
    assert str(p) == "gpushare_workloads: the services do not fit:\n  - a\n  Add GPUs; allowed: services that fit"
    assert str(InventoryProblem("x", "is wrong.", 1, hint="Fix it")) == "x: is wrong (got 1). Fix it"


def test_the_mig_shortfall_gives_its_fix_once_without_a_stray_full_stop():
    v = example_day()
    v["gpushare_workloads"].append({"name": "big", "team": "production", "kind": "serving", "sharing": "mig",
                                    "memory_gib": 60, "replicas": 3})
    text = "\n".join(problems(v))
    assert ".;" not in text
    assert text.count("Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model)") == 1


def test_a_range_written_with_words_and_one_digit_hours_suggests_the_quoted_clocks():
    v = example_day()
    window = v["gpushare_nodes"]["gpu01"]["gpus"][2]["schedule"][0]
    del window["from"], window["until"]
    window["time"] = "9:00 to 17:00"
    assert problems(v) == [
        GPU01 + ".gpus[2].schedule[0].time: is a range of hours; a window gives its start and its end as from and "
        "until (got '9:00 to 17:00'); " + FORMAT + '. Write from: "09:00" and until: "17:00" instead']
