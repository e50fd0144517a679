# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report never contradicts the proposal (issue 33, item 10): a kept service (not ``ok``)
keeps the GPUs it ran on, but not one it only borrowed in that GPU's window (the fine-tune on
the notebooks' GPU 2 at night), so the notebooks are not "short" of a GPU the proposed host_vars
give them; and the windows report.md states are read from the proposed nodes.

History (usage_synth.real_cluster_day): the fine-tune runs on GPUs 2 and 3 only 19:30-06:30;
with ``fine_tune_from_day=18`` it is seen over 10 days, less than min_days 14 (not enough data).
GPU 2 is time-sliced for data-science with a night window 19:00-07:00 (whole) in the inventory."""

from __future__ import annotations

import re

import pytest

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}
WINDOW_LINE = re.compile(r"^- \*\*(\S+)\*\* (\d\d:\d\d)-(\d\d:\d\d): GPUs (\S+(?:, \S+)*) become (\w+)\.", re.M)


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def _report_windows(report: str) -> set:
    section = report.split("## Sharing windows", 1)[1].split("\n## ", 1)[0]
    return {(m[0], m[1], m[2], m[4], tuple(sorted(m[3].split(", ")))) for m in WINDOW_LINE.findall(section)}


def _proposed_windows(nodes: dict) -> set:
    found = {}
    for host, node in nodes.items():
        for g in node["gpus"]:
            for w in g.get("schedule") or []:
                found.setdefault((w["name"], w["from"], w["until"], w["mode"]), []).append("%s/%d" % (host, g["index"]))
    return {k + (tuple(sorted(v)),) for k, v in found.items()}


def _short_pools(report: str) -> list:
    """(service, GPUs short, mode) for each 'X: n time-sliced ... GPUs short' the report states."""
    return [(m[0], int(m[1])) for m in re.findall(r"(\S+): (\d+) time-sliced \S+ GPUs? short", report)]


def check_report_agrees(advice: dict) -> str:
    """What report.md says of windows and time-sliced shortfalls holds in the proposed nodes."""
    report = render_advice.report_markdown(advice, [], advice["plan_check"]["text"])
    assert _report_windows(report) == _proposed_windows(advice["proposal"]["nodes"])
    for name, short in _short_pools(report):
        s = _svc(advice, name)
        have = sum(1 for node in advice["proposal"]["nodes"].values() for g in node["gpus"]
                   if g["mode"] == "timeslice" and g.get("team") == s["team"])
        assert have < s["pool_gpus"], "%s is said to be %d GPU(s) short but has %d of %d" % (
            name, short, have, s["pool_gpus"])
    if "None proposed" in report.split("## Sharing windows", 1)[1].split("\n## ", 1)[0]:
        assert not _proposed_windows(advice["proposal"]["nodes"])
    return report


@pytest.fixture(scope="module")
def kept_fine_tune():
    usage, _truth = usage_synth.real_cluster_day(fine_tune_from_day=18)
    return usage


def test_a_kept_service_does_not_take_a_gpu_it_only_borrowed_in_its_window(kept_fine_tune):
    advice = ua.advise(kept_fine_tune, dict(example_inventory(), gpushare_advise_match=MATCH))
    fine = _svc(advice, "fine-tune")
    assert fine["status"] == "not_enough_data"
    report = check_report_agrees(advice)
    assert "notebooks: 1 time-sliced" not in report and advice["buy"]["short"] == []
    gpus = advice["proposal"]["nodes"]["gpu01"]["gpus"]
    assert (gpus[2]["mode"], gpus[2]["team"], gpus[2]["replicas"]) == ("timeslice", "data-science", 5)
    assert (gpus[3]["mode"], gpus[3]["team"]) == ("whole", "training")       # the fine-tune's own GPU, kept
    # the kept fine-tune (kind training, team training borrows) still borrows GPU 2 at night: the
    # notebooks are idle 18:00-09:00 (logins 09:00-10:30, culled 17:30-19:00), so a night window is proposed
    (night,) = advice["windows"]
    assert (night["name"], night["gpus"], night["mode"], night["proposed"]) == ("night", [["gpu01", 2]], "whole", True)
    assert gpus[2]["schedule"] == [{"name": "night", "from": night["from"], "until": night["until"], "mode": "whole"}]
    assert "**night** %s-%s: GPUs gpu01/2 become whole." % (night["from"], night["until"]) in report
    assert advice["plan_check"]["status"] == "accepted"


def test_a_borrowed_gpu_keeps_its_window_where_none_is_proposed(kept_fine_tune):
    """data-science does not lend: no window is proposed, and GPU 2 keeps the night window the
    kept fine-tune borrows it in; the report says it is kept, not 'None proposed'."""
    inventory = example_inventory()
    inventory["gpushare_teams"][1]["lend"] = False
    advice = ua.advise(kept_fine_tune, dict(inventory, gpushare_advise_match=MATCH))
    report = check_report_agrees(advice)
    gpu2 = advice["proposal"]["nodes"]["gpu01"]["gpus"][2]
    assert gpu2["schedule"] == [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]
    (night,) = advice["windows"]
    assert night["proposed"] is False
    assert "- **night** 19:00-07:00: GPUs gpu01/2 become whole. kept as the current inventory has it" in report
    assert "None proposed" not in report
    assert advice["plan_check"]["status"] == "accepted"


@pytest.mark.parametrize("history", [{}, {"outage_day": 6.0}, {"fine_tune_shape": "changes"}])
def test_the_report_agrees_with_the_proposal_on_other_histories(history):
    usage, _truth = usage_synth.real_cluster_day(**history)
    check_report_agrees(ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH)))
