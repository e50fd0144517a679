# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor's window, its two halves and its settings, on small hourly histories whose
answers are worked out by hand: which grid points the window and each half hold, and what the
kind and choice are in each (the MIG User Guide's H200 profiles; Settings' documented
defaults). They kill mutants of usage_advisor.py that survived `make mutation`
(docs/testing.md, "Mutation testing")."""

from __future__ import annotations

import numpy as np

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage as usage_module
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


def test_the_window_ends_at_the_last_sample_so_trailing_empty_grid_points_are_no_gap():
    # 15 days of grid, samples in the first 14 only (the exporter stopped a day before the query's
    # end). With max_gap 0, one grid point without a sample inside the window would be a gap; the
    # window is the 336 points from the first sample to the last, so none is.
    usage = _history(15, up=_hours(15, 0, 14 * 24))
    vllm, advice = _vllm(usage, max_gap=0.0)
    assert advice["gaps"] == {}
    assert advice["window"]["days"] == 14.0
    assert (vllm["status"], vllm["kind"], vllm["sharing"], vllm["mig_profile"]) == ("ok", "serving", "mig", "1g.18gb")
    assert vllm["halves"] == [SMALL, SMALL]


def test_a_node_missing_exactly_max_gap_is_no_gap():
    # Every point of the window has samples: 0 missing is not more than max_gap 0.
    vllm, advice = _vllm(_history(14), max_gap=0.0)
    assert advice["gaps"] == {} and vllm["status"] == "ok"


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


def test_a_series_with_no_memory_or_activity_sample_is_no_service():
    # vllm-chat's only series holds FB_FREE alone (dcgm-exporter's counters without FB_USED and
    # activity for it): nothing says its pod was there, so vllm-chat is seen in no pod. (This
    # crashed the advisor with numpy's "need at least one array to concatenate".)
    usage = _history(14)
    usage.series[0].fb_used = None
    usage.series[0].active = None
    usage.series[0].fb_free = np.full(usage.steps, 100.0 * GIB)
    vllm, advice = _vllm(usage)
    assert (vllm["status"], vllm["namespace"], vllm["identity"]) == ("no_data", None, {"rule": "name", "pods": 0})
    assert [s["name"] for s in advice["services"] if s["status"] == "ok"] == ["classifier"]


def _stray(usage, namespace, pod, owner=None, up=None):
    b_up = np.ones(usage.steps, dtype=bool) if up is None else up
    if owner is not None:
        usage.owners[(namespace, pod)] = owner
    usage.series.append(ua.GpuSeries(node="gpu02", gpu=0, uuid="GPU-gpu02-0", instance=None, profile=None,
                                     model="h200-141gb", namespace=namespace, pod=pod,
                                     fb_used=np.where(b_up, 4 * GIB, np.nan), active=np.where(b_up, 0.3, np.nan)))


def test_a_group_like_a_no_data_notebook_whose_pods_no_owner_lists_gets_a_name_prefix():
    # lab-0 in data-science: a GPU series, but kube-state-metrics never listed the pod, seen for
    # 2 of 14 days (not enough data, so no kind). notebooks (data-science) is seen in no pod: the
    # group looks like it and is suggested by namespace, no owner and its name prefix.
    usage = _history(14)
    _stray(usage, "data-science", "lab-0", up=_hours(14, 0, 48))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "data-science")
    assert (row["name"], row["duplicates"]) == ("lab-0", "notebooks")
    assert row["suggested_match"] == {"notebooks": {"namespace": "data-science", "owner_kind": "<none>",
                                                    "name_prefix": "lab-0-"}}


def test_a_group_whose_name_is_no_workload_name_is_proposed_under_its_rewritten_name():
    # A Deployment llama.cpp-server of team training (dots are allowed in its name, not in a
    # workload's), up all along: a serving service, and training's only no-data workload,
    # fine-tune, is of another kind, so it is proposed.
    usage = _history(14)
    _stray(usage, "training", "llama.cpp-server-6b7c8d9f5-abcde", ("ReplicaSet", "llama.cpp-server-6b7c8d9f5"))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "training")
    assert (row["name"], row["proposed"]) == ("llama-cpp-server", True)


def test_a_group_whose_rewritten_name_is_a_workload_is_not_proposed_and_says_which():
    # A Deployment vllm.chat: not vllm-chat's by name (no controller named vllm-chat or
    # vllm-chat-...), but its workload name would be vllm-chat, which the inventory has.
    usage = _history(14)
    _stray(usage, "prod-serving", "vllm.chat-6b7c8d9f5-abcde", ("ReplicaSet", "vllm.chat-6b7c8d9f5"))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "prod-serving")
    assert (row["name"], row["status"], row["proposed"]) == ("vllm.chat", "unmatched", False)
    assert row["reason"] == ("its pods match no workload, but the inventory has a workload named vllm-chat: not "
                             "proposed twice")


class _OwnerRows:
    """kube_pod_owner as Prometheus answers usage._owners' query."""
    url = "http://prometheus.test"

    def __init__(self, rows):
        self.rows = rows

    def query(self, q, _t):
        assert q.startswith("max by (namespace, pod, owner_kind, owner_name) (max_over_time(kube_pod_owner{"), q
        return [{"metric": m, "value": [0, "1"]} for m in self.rows]


def test_owner_rows_without_a_namespace_or_a_pod_are_left_out():
    # kube-state-metrics always sets both labels; a copy relabelled on the way may not.
    grid = usage_module._Grid(start=0, end=3600, step=300, steps=13, window="1h")
    rs = {"owner_kind": "ReplicaSet", "owner_name": "vllm-chat-6c9f7d8b5d"}
    rows = [dict(rs, namespace="prod-serving", pod=VLLM_POD), dict(rs, namespace="prod-serving"),
            dict(rs, pod=VLLM_POD), dict(rs, namespace="", pod="x")]
    assert usage_module._owners(_OwnerRows(rows), grid, ["prod-serving"]) == \
        {("prod-serving", VLLM_POD): ("ReplicaSet", "vllm-chat-6c9f7d8b5d")}


def test_a_series_with_a_namespace_and_no_pod_is_a_device_without_a_pod():
    # gpu02's GPU 0 reported under a namespace but no pod (the exporter attributed it half-way):
    # no pod, no service; noted as a device with samples but no pod.
    usage = _history(14)
    _stray(usage, "prod-serving", None)
    advice = ua.advise(usage, example_inventory(), check=False)
    assert [s["name"] for s in advice["services"] if s["status"] == "ok"] == ["classifier", "vllm-chat"]
    assert advice["notes"][-1] == ("devices with samples but no pod at times (idle, or not attributed by the exporter: "
                                   "DRA GPUs, shared resources missing from NVIDIA_RESOURCE_NAMES; counted per node "
                                   "only): gpu02 GPU 0")
