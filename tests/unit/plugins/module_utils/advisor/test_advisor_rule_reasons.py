# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reasons and notes the advisor's rules give a person, with their figures worked out by
hand: every choice says why, with the measured shares, sizes and limits.
From the NVIDIA MIG User Guide's H200 profile table (1g.18gb: 1 of 8 memory slices and 1 of 7
compute slices, 16384 MiB; 1g.35gb: 2 and 1, 33024 MiB; 2g.35gb: 2 and 2; 3g.71gb: 4 and 3, 71168
MiB; 4g.71gb: 4 and 4; 7g.141gb: 8 and 7, 143104 MiB), the cards' memory as nvidia-smi reports it
(H200 143771 MiB, L40S 46068 MiB) and the default Settings (20 % headroom, reservation above 60 %
of the card when flat above 97 % of the peak, saturation factor 1.01).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import rules
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from test_advisor_rules import _choose, _features  # the one-service harness of the rule tests


H200, L40S = CATALOG["h200-141gb"], CATALOG["l40s"]


def test_the_compute_note_names_the_percentile_and_the_figure():
    assert _choose(_features())["compute_note"] == "p95 of activity 0.10 of a GPU"


# One service per rule whose choice a person reads the reason of (the rule table of test_advisor_rules).
EVERY_RULE = [
    (_features(), "serving", False),                                        # mig-fits
    (_features(compute=0.95), "serving", False),                            # no-slice-fits
    (_features(), "serving", True),                                         # dra-server
    (_features(model="l40s", capacity_mib=46068.0), "serving", False),      # no-mig-card
    (_features(gpus_per_replica=2), "serving", False),                      # whole-default
    (_features(replicas=4), "notebook", False),                             # notebook-pool
    (_features(), "training", False),                                       # runs-whole
]


@pytest.mark.parametrize("features, kind, dra", EVERY_RULE)
def test_every_choice_says_why(features, kind, dra):
    why = _choose(features, kind, dra)["why"]
    assert isinstance(why, str) and why


# The reasons a person reads, with their figures worked out by hand (each figure chosen so that a
# factor off by one, 101 for 100 or 1025 for 1024, changes the printed digits).

def test_the_kind_reasons_give_the_measured_shares():
    notebook = _features(presence=0.5, idle_share=0.6, idle_memory_mib=100000.0, active_share=0.02, day_concentration=0.9)
    # 100000 MiB / 1024 = 97.66 GiB.
    assert rules.detect_kind(notebook) == \
        ("notebook", "idle 60 % of its time holding 97.7 GiB, 90 % of its activity within 08:00-20:00")
    assert rules.detect_kind(_features(presence=0.95, idle_share=0.1, active_share=0.8)) == \
        ("serving", "always up (95 % of the time), active 80 % of it")
    batch = _features(presence=0.6, idle_share=0.1, runs=4, median_run_hours=1.5, active_share=0.7)
    assert rules.detect_kind(batch) == \
        ("batch", "up 60 % of the time in 4 runs (median 1.5 h), active 70 % while up: runs, then releases the GPU")


def test_the_slice_reason_gives_its_size_and_the_need():
    # 50000 MiB + 20 % = 60000 MiB = 58.59 GiB and 0.4 of a GPU: 3g.71gb, 71168 MiB = 69.5 GiB, 3 of 7 compute slices.
    assert _choose(_features(memory_peak_mib=50000.0, compute=0.4))["why"] == \
        "3g.71gb holds 69.5 GiB (needs 58.6) and 3/7 of the compute (needs 0.40 of a GPU)"


def test_the_saturation_note_gives_the_slice_and_the_time_at_its_limit():
    assert _choose(_features(saturated_share=0.9, saturated_fraction=1 / 7))["compute_note"] == \
        ("its MIG slice (0.14 of a GPU) was busy at its limit 90 % of the time, so the measured activity is a "
         "lower bound: the next larger compute is proposed")


def test_the_pool_reason_gives_sharers_cards_and_the_measured_switching_loss(monkeypatch):
    # A calibration where five heavy loops together did 0.4 of one alone: 60 % lost to switching.
    monkeypatch.setattr(rules.calibration_file, "DEFAULT",
                        dataclasses.replace(rules.calibration_file.DEFAULT, timeslice_heavy_total=0.4))
    lost = "time-slicing (each of k sharers gets 1/k of the card, about 60 % lost to switching)"
    l40s = dict(model="l40s", capacity_mib=46068.0)
    # 2 x 9600 MiB (9.4 GiB) on one 46068 MiB L40S.
    assert _choose(_features(replicas=2, **l40s), kind="notebook")["why"] == \
        "2 sharers of 9.4 GiB each fit 1 l40s card; " + lost
    # 33333 MiB + 20 % = 39999.6 MiB = 39.06 GiB; 5 of them need ceil(5 x 39999.6 / 46068) = 5 cards.
    assert _choose(_features(replicas=5, memory_peak_mib=33333.0, **l40s), kind="notebook")["why"] == \
        "5 sharers of 39.1 GiB each fit 5 l40s cards; " + lost
    # An unknown card: each sharer's need is all that is known of a card.
    assert _choose(_features(model=None, replicas=2), kind="notebook")["why"] == \
        "2 sharers of 9.4 GiB each fit 2 GPU cards; " + lost


def test_the_run_reason_counts_the_gpus():
    tail = " per run, queued in the team's Kueue queue (borrows idle GPUs of the cohort)"
    assert _choose(_features(), kind="batch")["why"] == "batch runs then releases: 1 whole GPU" + tail
    assert _choose(_features(memory_peak_mib=200000.0), kind="training")["why"] == \
        "training runs then releases: 2 whole GPUs" + tail


# A calibration with round figures, so that the reasons below can be written out by hand.
MEASURED = dataclasses.replace(rules.calibration_file.DEFAULT, source="a test card", mps_vs_timeslice=2.5,
                               mps_equal_cap_vs_timeslice=1.75, mps_equal_cap_heavier_service=0.375,
                               mps_unlimited_small_next_to_heavy=0.125)


def _inference(card, need, replicas=1, neighbours=(), mig_nodes=()):
    """Small co-located inference (0.05 of a GPU) on ``card``, as choose() would give the MPS rule."""
    f = _features(model=card.key, capacity_mib=float(card.memory_mib), pooled=True, replicas=replicas)
    return rules.Case(kind="serving", f=f, card=card, on_dra=False, need=need, compute=0.05,
                      memory_gib=rules._gib_up(need), calibration=MEASURED, neighbours=neighbours, mig_nodes=mig_nodes)


def test_the_mps_reason_gives_clients_limits_and_the_measurements():
    # 9576 MiB = 9.35 GiB; 4 clients of an L40S: 1/4, 25 % of the SMs, 46068 / 4 = 11517 MiB = 11.25 GiB.
    assert rules._mps(_inference(L40S, 9576.0))["why"] == (
        "co-located small inference (9.4 GiB, p95 0.05 of a card): MPS, 4 clients per l40s card, each limited to "
        "1/4 (25 % of the SMs, 11.2 GiB), which holds its need; measured on a test card: small inference services "
        "together served 2.50x the inferences of time-slicing under MPS (1.75x with equal limits); the limit follows "
        "the need because an equal limit below it cut a heavier service to 0.375 of its throughput without limits")
    # A T4 (15360 MiB) for 4 clients of 3600 MiB: 15360 / 4 = 3840 MiB = 3.75 GiB a client.
    assert "each limited to 1/4 (25 % of the SMs, 3.8 GiB)" in rules._mps(_inference(CATALOG["t4"], 3600.0))["why"]
    # Light neighbours are named, the busiest first.
    assert rules._mps(_inference(L40S, 9576.0, neighbours=(("chat", 0.3), ("ocr", 0.1))))["why"].endswith(
        "; its neighbours are light (busiest chat, p95 0.30 of the card)")


def test_the_mps_refusal_names_every_heavy_neighbour_and_every_mig_server():
    heavy = _inference(L40S, 9576.0, neighbours=(("train", 0.9), ("tune", 0.6), ("chat", 0.3)))
    assert heavy.mps_refusal() == (
        "not MPS: it shared its card with train (p95 0.90 of the card), tune (p95 0.60 of the card); next to heavy "
        "loops a light service served 0.125x its time-sliced throughput under MPS without limits, and equal limits cut "
        "a heavier service to 0.375 of its throughput without limits (measured on a test card)")
    mig = _inference(L40S, 9576.0, mig_nodes=("h200-01", "h200-02"))
    assert mig.mps_refusal() == (
        "not MPS: the cluster has MIG slices (on h200-01, h200-02), and the device plugin does not start MPS under the "
        "mixed MIG strategy they need")
    assert _inference(L40S, 9576.0).mps_refusal() is None


def test_a_refused_mps_keeps_the_reason_of_the_rule_that_decided():
    # An MPS candidate on an L40S while the cluster has MIG on h200-01: a whole card (no-mig-card), and the refusal.
    mig_gpu = SimpleNamespace(mode="mig", windows=[])
    inventory = SimpleNamespace(nodes=[SimpleNamespace(name="h200-01", gpus=[mig_gpu])])
    out = _choose(_features(model="l40s", capacity_mib=46068.0, pooled=True), inventory=inventory)
    refusal = ("not MPS: the cluster has MIG slices (on h200-01), and the device plugin does not start MPS under the "
               "mixed MIG strategy they need")
    assert (out["rule"], out["mps_refused"], out["why"]) == \
        ("no-mig-card", refusal, "l40s has no MIG: a whole card; " + refusal)
