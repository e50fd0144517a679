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
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua


HOUR = 3600


GIB = 1024.0


VLLM_POD = "vllm-chat-6c9f7d8b5d-x2k9p"


def _history(days: int, up=None, memory=8 * GIB, activity=0.1, anchor_up=None):
    """``days`` of hourly grid points on gpu01: vllm-chat (production, declared serving) on GPU 0
    where ``up``, holding ``memory`` MiB at ``activity``; classifier on GPU 1 where
    ``anchor_up`` (default: wherever vllm-chat is), so that the node reports all along."""
    b = usage_synth.Builder(days=days, step=HOUR)
    up = np.ones(b.steps, dtype=bool) if up is None else up
    anchor_up = up if anchor_up is None else anchor_up
    b.pod("prod-serving", VLLM_POD, "ReplicaSet", "vllm-chat-6c9f7d8b5d", up=up)
    b.device("gpu01", 0, "prod-serving", VLLM_POD, np.broadcast_to(memory, b.steps), np.full(b.steps, activity), up=up)
    b.pod("prod-serving", "classifier-5f6d8c7b9-h7j3k", "ReplicaSet", "classifier-5f6d8c7b9", up=anchor_up)
    b.device("gpu01", 1, "prod-serving", "classifier-5f6d8c7b9-h7j3k", np.full(b.steps, 2 * GIB),
             np.full(b.steps, 0.1), up=anchor_up)
    return b.usage()


def _hours(days: int, start: int, stop: int):
    mask = np.zeros(days * 24, dtype=bool)
    mask[start:stop] = True
    return mask


def _vllm(usage, **settings) -> dict:
    advice = ua.advise(usage, example_inventory(), settings=ua.Settings(**settings), check=False)
    return next(s for s in advice["services"] if s["name"] == "vllm-chat"), advice


# 8 GiB peak + 20 % headroom = 9.6 GiB at 0.1 of the card: the H200's smallest profile,
# 1g.18gb (one of seven compute slices, 0.143), holds both. 24 GiB + 20 % = 28.8 GiB: 1g.35gb
# (one compute slice, 35 GB). The halves print kind, status, sharing, profile and GPUs.
SMALL = "serving ok mig 1g.18gb 1"


LARGER = "serving ok mig 1g.35gb 1"


def test_a_service_seen_only_in_the_first_half_is_unstable_with_the_second_half_absent():
    # 14 days, vllm-chat up for the first 168 hours only (min_days 7: its 7 days are enough).
    # Over the window it is up half the time in one run of 168 h: training (presence 0.5 < 0.9,
    # runs of 2 h or longer). Its halves are hours 0-167 (up throughout: serving on 1g.18gb) and
    # 168-335 (absent).
    usage = _history(14, up=_hours(14, 0, 168), anchor_up=np.ones(14 * 24, dtype=bool))
    vllm, _advice = _vllm(usage, min_days=7)
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
    usage = _history(days, up=_hours(days, 48, days * 24), memory=memory)
    vllm, advice = _vllm(usage)
    assert advice["window"]["days"] == 14.0
    assert vllm["halves"] == [SMALL, LARGER]
    assert vllm["status"] == "unstable"


def test_the_settings_decide_the_kind_in_the_window_and_in_each_half():
    # Up 11 hours of every 12 (presence 11/12 = 0.917, runs of 11 h): serving under the default
    # serving_presence 0.9; under 0.95 a training run (runs of 2 h or longer), given a whole GPU.
    up = (np.arange(14 * 24) % 12) != 11
    usage = _history(14, up=up, anchor_up=np.ones(14 * 24, dtype=bool))
    default, _advice = _vllm(usage)
    assert (default["kind"], default["halves"]) == ("serving", [SMALL, SMALL])
    strict, _advice = _vllm(usage, serving_presence=0.95)
    assert (strict["status"], strict["kind"], strict["sharing"], strict["gpus"], strict["mig_profile"]) == \
        ("ok", "training", "whole", 1, None)
    assert strict["halves"] == ["training ok whole 1", "training ok whole 1"]


def test_a_choice_that_is_not_ok_is_not_checked_for_stability():
    # No FB_USED sample on a whole GPU: the memory need is unknown, so no choice and no halves.
    b = usage_synth.Builder(days=14, step=HOUR)
    b.pod("prod-serving", VLLM_POD, "ReplicaSet", "vllm-chat-6c9f7d8b5d")
    b.device("gpu01", 0, "prod-serving", VLLM_POD, None, np.full(b.steps, 0.1))
    vllm, _advice = _vllm(b.usage())
    assert vllm["status"] == "not_enough_data"
    assert vllm["reason"] == "vllm-chat has no DCGM_FI_DEV_FB_USED samples: its memory need is unknown"
    assert "halves" not in vllm
