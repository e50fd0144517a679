# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small usage histories and look-ups shared by the usage advisor's hand-worked tests
(test_usage_history_window.py, test_usage_window_halves.py, test_usage_workload_matching.py):
hourly histories of vllm-chat and classifier on one server of the example inventory, whose
answers the tests work out by hand from Settings' documented defaults and the MIG User Guide's
H200 profiles."""

from __future__ import annotations

import numpy as np

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

HOUR = 3600
GIB = 1024.0
VLLM_POD = "vllm-chat-6c9f7d8b5d-x2k9p"
# 8 GiB peak + 20 % headroom = 9.6 GiB at 0.1 of the card: the H200's smallest profile,
# 1g.18gb (one of seven compute slices, 0.143), holds both. 24 GiB + 20 % = 28.8 GiB: 1g.35gb
# (one compute slice, 35 GB). The halves print kind, status, sharing, profile and GPUs.
SMALL = "serving ok mig 1g.18gb 1"
LARGER = "serving ok mig 1g.35gb 1"


def hourly_history(days: int, up=None, memory=8 * GIB, activity=0.1, anchor_up=None):
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


def hours_up(days: int, start: int, stop: int):
    """An hourly mask of ``days`` days, true from hour ``start`` to before ``stop``."""
    mask = np.zeros(days * 24, dtype=bool)
    mask[start:stop] = True
    return mask


def vllm_advice(usage, **settings) -> tuple[dict, dict]:
    """(vllm-chat's entry, the whole advice) for the example inventory with these Settings."""
    advice = ua.advise(usage, example_inventory(), settings=ua.Settings(**settings), check=False)
    return next(s for s in advice["services"] if s["name"] == "vllm-chat"), advice


def advice_of(usage, inventory=None) -> dict:
    """The advice for ``usage`` against ``inventory`` (default: the example inventory), unchecked."""
    return ua.advise(usage, inventory or example_inventory(), check=False)


def speech_of(advice: dict) -> dict:
    """speech-to-text's entry of an advice."""
    return next(s for s in advice["services"] if s["name"] == "speech-to-text")
