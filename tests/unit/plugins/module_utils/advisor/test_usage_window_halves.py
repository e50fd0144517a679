# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor's two halves of the window and the stability check between them, on small
hourly histories whose answers are worked out by hand: which grid points each half holds, and
what the kind and choice are in each (the MIG User Guide's H200 profiles; Settings' documented
defaults).
"""

from __future__ import annotations

import numpy as np

import usage_synth
from usage_cases import GIB, HOUR, LARGER, SMALL, VLLM_POD, hourly_history, hours_up, vllm_advice


def test_a_service_seen_only_in_the_first_half_is_unstable_with_the_second_half_absent():
    # 14 days, vllm-chat up for the first 168 hours only (min_days 7: its 7 days are enough).
    # Over the window it is up half the time in one run of 168 h: training (presence 0.5 < 0.9,
    # runs of 2 h or longer). Its halves are hours 0-167 (up throughout: serving on 1g.18gb) and
    # 168-335 (absent).
    usage = hourly_history(14, up=hours_up(14, 0, 168), anchor_up=np.ones(14 * 24, dtype=bool))
    vllm, _advice = vllm_advice(usage, min_days=7)
    assert vllm["kind"] == "training"
    assert vllm["halves"] == [SMALL, "absent"]
    assert vllm["status"] == "unstable"
    assert vllm["reason"] == ("the choice differs between the two halves of the window (%s / absent): the current "
                              "entry is kept" % SMALL)


def test_the_halves_split_the_window_from_its_first_sample():
    # 16 days of grid, nothing in the first 48 hours; then 14 days of samples: the window is hours
    # 48-383 and its halves 48-215 and 216-383. vllm-chat holds 8 GiB in the first half and 24 GiB
    # in the second: 1g.18gb, then 1g.35gb.
    days = 16
    memory = np.where(np.arange(days * 24) < 216, 8 * GIB, 24 * GIB)
    usage = hourly_history(days, up=hours_up(days, 48, days * 24), memory=memory)
    vllm, advice = vllm_advice(usage)
    assert advice["window"]["days"] == 14.0
    assert vllm["halves"] == [SMALL, LARGER]
    assert vllm["status"] == "unstable"


def test_the_settings_decide_the_kind_in_the_window_and_in_each_half():
    # Up 11 hours of every 12 (presence 11/12 = 0.917, runs of 11 h): serving under the default
    # serving_presence 0.9; under 0.95 a training run (runs of 2 h or longer), given a whole GPU.
    up = (np.arange(14 * 24) % 12) != 11
    usage = hourly_history(14, up=up, anchor_up=np.ones(14 * 24, dtype=bool))
    default, _advice = vllm_advice(usage)
    assert (default["kind"], default["halves"]) == ("serving", [SMALL, SMALL])
    strict, _advice = vllm_advice(usage, serving_presence=0.95)
    assert (strict["status"], strict["kind"], strict["sharing"], strict["gpus"], strict["mig_profile"]) == \
        ("ok", "training", "whole", 1, None)
    assert strict["halves"] == ["training ok whole 1", "training ok whole 1"]


def test_a_choice_that_is_not_ok_is_not_checked_for_stability():
    # No FB_USED sample on a whole GPU: the memory need is unknown, so no choice and no halves.
    b = usage_synth.Builder(days=14, step=HOUR)
    b.pod("prod-serving", VLLM_POD, "ReplicaSet", "vllm-chat-6c9f7d8b5d")
    b.device("gpu01", 0, "prod-serving", VLLM_POD, None, np.full(b.steps, 0.1))
    vllm, _advice = vllm_advice(b.usage())
    assert vllm["status"] == "not_enough_data"
    assert vllm["reason"] == "vllm-chat has no DCGM_FI_DEV_FB_USED samples: its memory need is unknown"
    assert "halves" not in vllm
