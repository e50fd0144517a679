# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor's boundaries of history, worked out by hand on usage_synth's example day
(5-minute samples, 288 a day; default Settings: min_days 14, min_days_slack_hours 1). They
kill mutants of usage_advisor.py that survived `make mutation` (docs/testing.md, "Mutation
testing")."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import numpy as np

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

STEPS_PER_DAY = 24 * 12


def _seen_from(usage: ua.UsageData, pod_prefix: str, step: int) -> ua.UsageData:
    """``usage`` with the samples of the pods named ``pod_prefix...`` before grid point ``step`` removed."""
    for s in usage.series:
        if s.pod.startswith(pod_prefix):
            for name in ("fb_used", "active"):
                values = getattr(s, name)
                if values is not None:
                    values[:max(0, step - s.offset)] = np.nan
    return usage


def _speech(advice: dict) -> dict:
    return next(s for s in advice["services"] if s["name"] == "speech-to-text")


def test_exactly_min_days_of_history_is_enough():
    # 14 days x 288 samples, the first and the last present (vLLM is always up): 14.0 days, min_days exactly.
    advice = ua.advise(usage_synth.example_day(days=14), example_inventory(), check=False)
    assert advice["window"]["days"] == 14.0


def test_a_service_seen_an_hour_short_of_min_days_still_counts():
    # 20 days = 5760 grid points. Seen from point 1740: 5760 - 1740 = 4020 points = 13 days 23 hours, and the hour
    # of slack makes it 14. Seen from point 1741 (5 minutes less) it is short.
    days = 20
    assert days * STEPS_PER_DAY - 1740 == 14 * STEPS_PER_DAY - 12
    enough = _speech(ua.advise(_seen_from(usage_synth.example_day(days=days), "speech-to-text", 1740),
                               example_inventory(), check=False))
    assert enough["status"] != "not_enough_data", enough
    short = _speech(ua.advise(_seen_from(usage_synth.example_day(days=days), "speech-to-text", 1741),
                              example_inventory(), check=False))
    assert short["status"] == "not_enough_data" and short["reason"].endswith("; needs 14"), short


def test_the_advice_says_what_it_read_and_with_which_settings():
    advice = ua.advise(usage_synth.example_day(days=14), example_inventory(), check=False)
    # usage_synth's first sample, and 14 days of 5-minute steps later its last one.
    start = datetime.fromtimestamp(usage_synth.START, timezone.utc)
    assert (advice["window"]["from"], advice["window"]["until"]) == \
        (start.strftime("%Y-%m-%dT%H:%MZ"), (start + timedelta(days=14, minutes=-5)).strftime("%Y-%m-%dT%H:%MZ"))
    assert advice["settings"] == dataclasses.asdict(ua.Settings())
    assert advice["plan_check"] == {"status": "not checked", "text": "not checked", "problems": []}
    # Each service under the team of the inventory's workload of that name (workloads.yml).
    teams = {w["name"]: w["team"] for w in example_inventory()["gpushare_workloads"]}
    assert {s["name"]: s["team"] for s in advice["services"]} == teams


def _advice(usage, inventory=None):
    return ua.advise(usage, inventory or example_inventory(), check=False)


def test_a_node_with_gaps_is_reported_with_its_share_missing():
    # gpu01 reports nothing strictly between day 3 and day 8 of 28: 5 x 288 - 1 = 1439 of 8064 grid points,
    # 0.1784 (18 %), more than max_gap (10 %).
    advice = _advice(usage_synth.example_day(gap_node="gpu01"))
    assert advice["gaps"] == {"gpu01": 0.178}
    assert {s["reason"] for s in advice["services"]} == {"samples missing on gpu01 (18 %); the advisor allows 10 %"}


def test_each_service_carries_the_inventorys_entry_and_its_halves():
    speech = _speech(_advice(usage_synth.example_day(change_after_day=14)))
    # As in workloads.yml (replicas 1 and gpus 1 where it says none); speech-to-text's halves, kind and status first, no empty field.
    assert speech["status"] == "unstable"
    assert all(h.split()[:3] == ["serving", "ok", "mig"] and "None" not in h for h in speech["halves"]), speech["halves"]
    declared = {s["name"]: s["declared"] for s in _advice(usage_synth.example_day(days=14))["services"]}
    assert declared["notebooks"] == {"kind": "notebook", "sharing": "timeslice", "replicas": 5, "gpus": 1}
    assert declared["fine-tune"] == {"kind": "training", "sharing": "whole", "replicas": 1, "gpus": 2, "memory_gib": 240}


def test_a_service_in_another_teams_namespace_is_noted_and_one_in_no_teams_is_reported():
    inventory = example_inventory()
    for w in inventory["gpushare_workloads"]:
        if w["name"] == "vllm-chat":
            w["team"] = "data-science"       # its pods run in prod-serving, production's namespace
    assert _advice(usage_synth.example_day(days=14), inventory)["notes"] == \
        ["service vllm-chat runs in namespace prod-serving (team production) but the inventory gives it to team "
         "data-science"]
    usage = usage_synth.example_day(days=14)
    for s in usage.series:
        if s.namespace == "training":
            s.namespace = "somebody-else"
    stray = [s for s in _advice(usage)["services"] if s["namespace"] == "somebody-else"]
    assert stray and {(s["status"], s["reason"]) for s in stray} == \
        {("unknown_namespace", "namespace somebody-else belongs to no team of gpushare_teams")}


def test_a_row_of_pods_that_match_no_workload_names_their_namespace():
    # real_cluster_day's JupyterHub runs its users' pods in data-science, under no workload's name.
    usage, _truth = usage_synth.real_cluster_day()
    rows = {u["name"]: u for u in _advice(usage)["unmatched"]}
    assert rows["jupyter"]["namespace"] == "data-science"
