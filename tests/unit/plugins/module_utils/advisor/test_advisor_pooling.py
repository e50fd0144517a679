# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sharing read per device, not per service: a time-sliced device's series are read once
across every service on it and each sharer's memory and activity estimated from that pool;
expected numbers come from the ground truth of usage_synth.real_cluster_day (what each pod
was generated to hold), never from the advisor. Also: a node gone for two days, a DST change
in the window, and the estimators on their own."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import features, usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"owner_name": "eve-gpu"}]}


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def _inventory(timezone=None, labeler=False):
    inv = copy.deepcopy(example_inventory())
    inv["gpushare_advise_match"] = copy.deepcopy(MATCH)
    if timezone:
        inv["gpushare_policy"]["timezone"] = timezone
    if labeler:
        inv["gpushare_workloads"].append({"name": "labeler", "team": "data-science", "kind": "serving",
                                          "sharing": "timeslice"})
        inv["gpushare_nodes"]["gpu01"]["gpus"][2]["replicas"] = 6
    return inv


# --------------------------------------------------------------------------- one device, two services


@pytest.fixture(scope="module")
def shared():
    usage, truth = usage_synth.real_cluster_day(shared_service=True)
    return ua.advise(usage, _inventory(labeler=True)), truth


def test_each_service_on_a_shared_device_gets_its_own_memory(shared):
    """The notebooks (JupyterHub and Kubeflow pods) and the labeler (a Deployment) share GPU 2;
    the device's series are copied to all six pods. Read per service, each would hold the
    device's whole memory; read per device, each gets what it was generated with."""
    advice, truth = shared
    notebooks, labeler = _svc(advice, "notebooks"), _svc(advice, "labeler")
    per_sharer = max(truth["per_sharer_mib"][p] for p in truth["notebook_pods"])
    assert notebooks["evidence"]["memory_peak_mib"] == pytest.approx(per_sharer, rel=0.02)
    assert labeler["evidence"]["memory_peak_mib"] == pytest.approx(truth["labeler"]["memory_mib"], rel=0.02)
    device_peak = sum(truth["per_sharer_mib"].values())
    assert labeler["memory_need_mib"] < 0.2 * device_peak        # not the device's memory
    assert labeler["evidence"]["compute_mean"] == pytest.approx(truth["labeler"]["activity"], rel=0.25)
    for s, other in ((notebooks, "data-science/labeler"), (labeler, "data-science/notebooks")):
        (d,) = s["evidence"]["sharing"]
        assert d["device"] == "gpu01/2/0" and d["reporting"] == "duplicated" and d["with"] == [other]
        assert d["pods_max"] == truth["most_up_at_once"] == truth["notebooks_up_at_once"] + 1


def test_shared_device_advice_plans(shared):
    advice, _truth = shared
    assert (_svc(advice, "notebooks")["status"], _svc(advice, "labeler")["status"]) == ("ok", "ok")
    assert advice["plan_check"]["status"] in ("accepted", "repaired")
    inv = _inventory(labeler=True)
    build_plan(dict(inv, gpushare_workloads=advice["proposal"]["workloads"], gpushare_nodes=advice["proposal"]["nodes"]))


def test_device_reported_to_one_pod_counts_the_others_from_kube_state_metrics():
    """dcgm-exporter gives the device to the first pod only: the other notebooks are running
    (kube-state-metrics) and are its sharers."""
    usage, truth = usage_synth.real_cluster_day(duplicate_shared=False)
    notebooks = _svc(ua.advise(usage, _inventory(), check=False), "notebooks")
    assert notebooks["replicas"] == truth["notebooks_up_at_once"]
    per_sharer = max(truth["per_sharer_mib"].values())
    assert notebooks["evidence"]["memory_peak_mib"] == pytest.approx(per_sharer, rel=0.02)
    (d,) = notebooks["evidence"]["sharing"]
    assert d["reporting"] == "once" and d["pods_max"] == truth["most_up_at_once"]


def test_sharers_holding_different_memory():
    """Users holding 4 to 8 GiB: each sharer's share of the pool lies between the mean user and
    the largest one (what the generator gave each), never the pool's sum."""
    mib = {"alice": 4096, "bob": 6144, "chen": 8192, "dana": 5120, "eve": 7168}
    usage, truth = usage_synth.real_cluster_day(user_mib=mib)
    notebooks = _svc(ua.advise(usage, _inventory(), check=False), "notebooks")
    values = list(truth["per_sharer_mib"].values())
    assert np.mean(values) <= notebooks["evidence"]["memory_peak_mib"] <= max(values) * 1.01


def test_the_estimators_on_their_own():
    """Per-pod weights by non-negative least squares recover the weights a device was made
    of; the independent busy share recovers the p the idle samples were drawn with."""
    rng = np.random.default_rng(5)
    counts = np.vstack([rng.integers(0, 4, 500), rng.integers(0, 2, 500)]).astype(float)
    values = counts[0] * 6624.0 + counts[1] * 3552.0
    assert features._weights(counts, values) == pytest.approx([6624.0, 3552.0], rel=1e-6)  # pylint: disable=protected-access
    together = np.vstack([counts[0], counts[0]])
    assert features._weights(together, values).tolist() == [1.0, 1.0]     # pylint: disable=protected-access
    k = np.array([1] * 100 + [3] * 200 + [5] * 300, dtype=float)
    p = 0.2
    idle = float(100 * 0.8 + 200 * 0.8 ** 3 + 300 * 0.8 ** 5)
    assert features._independent_busy_share(k, idle) == pytest.approx(p, abs=1e-3)  # pylint: disable=protected-access


# --------------------------------------------------------------------------- a node gone for two days


def test_a_node_gone_two_days_is_not_the_services_absence():
    usage, truth = usage_synth.real_cluster_day(outage_day=9.5)
    advice = ua.advise(usage, _inventory())
    got = {s["name"]: (s["status"], s.get("kind"), s.get("sharing")) for s in advice["services"]}
    assert got == {"vllm-chat": ("ok", "serving", "whole"), "embeddings": ("ok", "serving", "mig"),
                   "classifier": ("ok", "serving", "mig"), "speech-to-text": ("ok", "serving", "mig"),
                   "notebooks": ("ok", "notebook", "timeslice"), "fine-tune": ("ok", "training", "whole")}
    vllm = _svc(advice, "vllm-chat")["evidence"]
    assert vllm["presence"] == 1.0
    assert vllm["observed_share"] == pytest.approx(1 - truth["outage"]["steps"] / usage.steps, abs=0.002)
    assert advice["gaps"] == {}                      # 2 of 28 days missing: within max_gap
    assert advice["plan_check"]["status"] == "accepted"


# --------------------------------------------------------------------------- a DST change in the window


@pytest.mark.parametrize("policy_timezone, idle", [
    # people in Berlin, hours read in Berlin: busy 09:00-18:00 on both sides of the change
    ("Europe/Berlin", set(range(0, 9)) | set(range(18, 24))),
    # the same people, hours read in UTC: busy 07:00-16:00 in summer time, 08:00-17:00 after
    ("UTC", set(range(0, 7)) | set(range(17, 24))),
])
def test_a_dst_change_inside_the_window(policy_timezone, idle):
    usage, truth = usage_synth.real_cluster_day(people_timezone="Europe/Berlin", start=usage_synth.DST_START)
    assert truth["people_timezone"] == "Europe/Berlin"
    advice = ua.advise(usage, _inventory(timezone=policy_timezone))
    notebooks = _svc(advice, "notebooks")
    assert (notebooks["status"], notebooks["kind"], notebooks["sharing"]) == ("ok", "notebook", "timeslice")
    assert set(notebooks["idle_hours"]) == idle
    (window,) = advice["windows"]
    start, until = int(window["from"][:2]), int(window["until"][:2])
    hours = {(start + k) % 24 for k in range((until - start) % 24)}
    assert hours <= idle and {0, 1, 2, 3, 4} <= hours
