# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history the usage advisor reads: how much is enough (usage_synth's example day, 5-minute
samples, 288 a day; default Settings: min_days 14, min_days_slack_hours 1), where the window
ends, gaps, what the advice says it read, and what it refuses to read; worked out by hand.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

import usage_synth
from inventories import example_day as example_inventory
from usage_cases import SMALL, advice_of, hourly_history, hours_up, speech_of, vllm_advice
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


def test_exactly_min_days_of_history_is_enough():
    # 14 days x 288 samples, the first and the last present (vLLM is always up): 14.0 days, min_days exactly.
    advice = ua.advise(usage_synth.example_day(days=14), example_inventory(), check=False)
    assert advice["window"]["days"] == 14.0


def test_a_service_seen_an_hour_short_of_min_days_still_counts():
    # 20 days = 5760 grid points. Seen from point 1740: 5760 - 1740 = 4020 points = 13 days 23 hours, and the hour
    # of slack makes it 14. Seen from point 1741 (5 minutes less) it is short.
    days = 20
    assert days * STEPS_PER_DAY - 1740 == 14 * STEPS_PER_DAY - 12
    enough = speech_of(ua.advise(_seen_from(usage_synth.example_day(days=days), "speech-to-text", 1740),
                                 example_inventory(), check=False))
    assert enough["status"] != "not_enough_data", enough
    short = speech_of(ua.advise(_seen_from(usage_synth.example_day(days=days), "speech-to-text", 1741),
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


def test_a_node_with_gaps_is_reported_with_its_share_missing():
    # gpu01 reports nothing strictly between day 3 and day 8 of 28: 5 x 288 - 1 = 1439 of 8064 grid points,
    # 0.1784 (18 %), more than max_gap (10 %).
    advice = advice_of(usage_synth.example_day(gap_node="gpu01"))
    assert advice["gaps"] == {"gpu01": 0.178}
    assert {s["reason"] for s in advice["services"]} == {"samples missing on gpu01 (18 %); the advisor allows 10 %"}


def _blank_first(usage, steps: int):
    """``usage`` with every series' first ``steps`` grid points holding no sample."""
    for s in usage.series:
        for name in ("fb_used", "active"):
            values = getattr(s, name)
            if values is not None:
                values[:steps] = np.nan
    return usage


def test_a_history_an_hour_short_of_min_days_is_read_and_five_minutes_more_is_refused():
    # 14 days = 4032 grid points of 5 minutes. Without the first 12: 4020 points = 13 days 23 hours
    # = 13.958 days (13.96 rounded to 2 places), and the hour of slack makes 14.0 = min_days: read.
    advice = ua.advise(_blank_first(usage_synth.example_day(days=14), 12), example_inventory(), check=False)
    assert advice["window"]["days"] == 13.96
    # The stamp the usage_advisor module documents; without check no repair is tried.
    assert (advice["format"], advice["repairs"]) == ("gpushare.cluster/advice-v1", [])
    # Without the first 13: 4019 points = 13.955 days (14.0 to one place), 5 minutes short: refused,
    # from 01:05 of the first day (13 x 5 minutes) until 23:55 of the 14th.
    start = datetime.fromtimestamp(usage_synth.START, timezone.utc)
    first, last = start + timedelta(minutes=65), start + timedelta(days=14, minutes=-5)
    short = _blank_first(usage_synth.example_day(days=14), 13)
    short.source = None          # no name: "the data"
    with pytest.raises(ua.AdviceError) as refused:
        ua.advise(short, example_inventory(), check=False)
    assert str(refused.value) == (
        "not enough data: the data holds 14.0 days of GPU history (%s to %s), the advisor needs at least 14 "
        "(min_days); wait, or lower min_days knowingly"
        % (first.strftime("%Y-%m-%dT%H:%MZ"), last.strftime("%Y-%m-%dT%H:%MZ")))


def test_nothing_to_advise_from_names_the_source():
    usage = usage_synth.example_day(days=14)
    with pytest.raises(ua.AdviceError) as empty:
        ua.advise(_blank_first(usage, usage.steps), example_inventory(), check=False)
    assert str(empty.value) == "the GPU series in synthetic hold no samples: nothing to advise from"
    usage.series = []
    with pytest.raises(ua.AdviceError) as none:
        ua.advise(usage, example_inventory(), check=False)
    assert str(none.value) == "no GPU series in synthetic: nothing to advise from"
    usage.source = ""
    with pytest.raises(ua.AdviceError) as unnamed:
        ua.advise(usage, example_inventory(), check=False)
    assert str(unnamed.value) == "no GPU series in the data: nothing to advise from"
    unnamed_empty = _blank_first(usage_synth.example_day(days=14), usage.steps)
    unnamed_empty.source = None
    with pytest.raises(ua.AdviceError) as unnamed:
        ua.advise(unnamed_empty, example_inventory(), check=False)
    assert str(unnamed.value) == "the GPU series in the data hold no samples: nothing to advise from"


def test_an_invalid_inventory_is_refused_as_such():
    inventory = example_inventory()
    inventory["gpushare_workloads"].append(dict(inventory["gpushare_workloads"][0]))    # vllm-chat twice
    with pytest.raises(ua.AdviceError, match=r"(?s)^the current inventory is invalid, fix it first \(plan.yml "
                                             r"shows the same\):\n.*workload name used twice \(got 'vllm-chat'\)"):
        ua.advise(usage_synth.example_day(days=14), inventory, check=False)


def test_the_window_ends_at_the_last_sample_so_trailing_empty_grid_points_are_no_gap():
    # 15 days of grid, samples in the first 14 only (the exporter stopped a day before the query's
    # end). With max_gap 0, one grid point without a sample inside the window would be a gap; the
    # window is the 336 points from the first sample to the last, so none is.
    usage = hourly_history(15, up=hours_up(15, 0, 14 * 24))
    vllm, advice = vllm_advice(usage, max_gap=0.0)
    assert advice["gaps"] == {}
    assert advice["window"]["days"] == 14.0
    assert (vllm["status"], vllm["kind"], vllm["sharing"], vllm["mig_profile"]) == ("ok", "serving", "mig", "1g.18gb")
    assert vllm["halves"] == [SMALL, SMALL]


def test_a_node_missing_exactly_max_gap_is_no_gap():
    # Every point of the window has samples: 0 missing is not more than max_gap 0.
    vllm, advice = vllm_advice(hourly_history(14), max_gap=0.0)
    assert advice["gaps"] == {} and vllm["status"] == "ok"
