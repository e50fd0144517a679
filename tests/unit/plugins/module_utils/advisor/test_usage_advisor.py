# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's pure logic: profile choice (property tests on every catalogue model), kind
detection, the example day's proposal, not enough data, stability, windows, what to buy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import usage_synth
from inventories import example_day as example_inventory, load_example
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

MIG_MODELS = sorted(k for k, m in gpu_catalog.CATALOG.items() if m.mig_capable)
ALL_MODELS = sorted(gpu_catalog.CATALOG)


def _order(p):
    return (p.size, p.compute_slices, p.memory_mib, p.name)


def _fits(card, p, memory, compute):
    return p.memory_mib >= memory and p.compute_slices / ua.compute_slices_of(card) >= compute - 1e-9


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(ALL_MODELS), memory=st.floats(0, 300000, allow_nan=False),
       compute=st.floats(0, 1.2, allow_nan=False))
def test_chosen_profile_fits_and_is_the_smallest(key, memory, compute):
    card = gpu_catalog.CATALOG[key]
    chosen = ua.choose_profile(card, memory, compute)
    fitting = [p for p in card.base_profiles if _fits(card, p, memory, compute)]
    if not card.mig_capable or not fitting:
        assert chosen is None
        return
    assert chosen is not None
    assert chosen.memory_mib >= memory, (chosen, memory)
    assert chosen.compute_slices / ua.compute_slices_of(card) >= compute - 1e-9, (chosen, compute)
    assert not chosen.variant
    assert all(_order(chosen) <= _order(p) for p in fitting), [p.name for p in fitting]


@pytest.mark.parametrize("key", MIG_MODELS)
def test_every_base_profile_is_chosen_for_its_own_size(key):
    """Asking for exactly a profile's memory and compute never gives a bigger placement."""
    card = gpu_catalog.CATALOG[key]
    for p in card.base_profiles:
        chosen = ua.choose_profile(card, p.memory_mib, p.compute_slices / ua.compute_slices_of(card))
        assert chosen.size <= p.size and chosen.memory_mib >= p.memory_mib


def _features(**kw):
    base = {"presence": 1.0, "idle_share": 0.2, "idle_memory_mib": 2000.0, "active_share": 0.8,
            "day_concentration": 0.6, "busy_from": "08:00", "busy_until": "20:00", "runs": 1,
            "median_run_hours": 24 * 28.0, "gpus_per_replica": 1}
    base.update(kw)
    return base


@pytest.mark.parametrize("features, kind", [
    (_features(), "serving"),
    (_features(idle_share=0.996, active_share=0.004), "serving"),              # a rarely used model is still served
    (_features(presence=0.5, idle_share=0.7, active_share=0.3, day_concentration=0.99), "notebook"),
    (_features(presence=1.0, idle_share=0.7, active_share=0.3, day_concentration=0.95), "notebook"),
    (_features(presence=0.45, runs=28, median_run_hours=11, idle_share=0.02, active_share=0.98), "training"),
    (_features(presence=0.3, runs=120, median_run_hours=1.5, idle_share=0.05, active_share=0.95), "batch"),
    (_features(presence=0.3, runs=120, median_run_hours=1.5, gpus_per_replica=4), "training"),
])
def test_detect_kind(features, kind):
    assert ua.detect_kind(features)[0] == kind


@pytest.fixture(scope="module")
def advice():
    return ua.advise(usage_synth.example_day(), example_inventory())


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def test_example_day_kinds_and_choices(advice):
    got = {s["name"]: (s["status"], s["kind"], s["sharing"]) for s in advice["services"]}
    assert got == {"vllm-chat": ("ok", "serving", "whole"), "embeddings": ("ok", "serving", "mig"),
                   "classifier": ("ok", "serving", "mig"), "speech-to-text": ("ok", "serving", "mig"),
                   "notebooks": ("ok", "notebook", "timeslice"), "fine-tune": ("ok", "training", "whole")}
    assert _svc(advice, "fine-tune")["gpus"] == 2
    assert _svc(advice, "notebooks")["replicas"] == 5
    vllm = _svc(advice, "vllm-chat")
    assert vllm["reservation"] and "reservation" in vllm["memory_note"]


def test_mig_choices_hold_memory_and_compute(advice):
    card = gpu_catalog.CATALOG["h200-141gb"]
    for name in ("embeddings", "classifier", "speech-to-text"):
        s = _svc(advice, name)
        p = card.profile(s["mig_profile"])
        assert p.memory_mib >= s["memory_need_mib"]
        assert p.compute_slices / 7 >= s["compute_need"] - 1e-9
        assert ua.choose_profile(card, s["memory_need_mib"], s["compute_need"]) == p
        assert s["memory_gib"] * 1024 <= p.memory_mib


def test_missing_mig_memory_is_bounded_by_the_slice_it_ran_in(advice):
    classifier = _svc(advice, "classifier")
    assert "not reported" in classifier["memory_note"] and classifier["memory_need_mib"] == 16384
    measured = ua.advise(usage_synth.example_day(classifier_memory=True), example_inventory())
    assert _svc(measured, "classifier")["memory_need_mib"] < 2000


def test_night_window_for_the_notebooks_gpu(advice):
    (window,) = advice["windows"]
    assert window["name"] == "night" and window["gpus"] == [["gpu01", 2]] and window["for"] == ["training"]
    start, until = int(window["from"][:2]), int(window["until"][:2])
    assert 17 <= start <= 20 and 6 <= until <= 9
    gpu = advice["proposal"]["nodes"]["gpu01"]["gpus"][2]
    assert gpu["mode"] == "timeslice" and gpu["schedule"][0]["mode"] == "whole"


def test_team_quotas_from_concurrent_use(advice):
    teams = {t["team"]: t for t in advice["teams"]}
    assert teams["production"]["gpus_in_use_p"] == pytest.approx(1.5)      # vLLM + half a MIG grid
    assert teams["training"]["gpus_in_use_max"] == 2
    assert teams["data-science"]["quota_proposed"] == 1
    assert set(range(0, 5)) <= set(teams["data-science"]["idle_hours"])


def test_example_day_proposal_is_accepted_by_the_planner(advice):
    variables = dict(example_inventory(), gpushare_workloads=advice["proposal"]["workloads"],
                     gpushare_nodes=advice["proposal"]["nodes"])
    plan = build_plan(variables)
    modes = [g["mode"] for g in plan["nodes"][0]["gpus"]]
    assert modes == ["whole", "mig", "timeslice", "whole"]
    assert plan["windows"][0]["name"] == "night"


def test_compact_series_give_the_same_advice(advice):
    """Series trimmed to their samples as float32 (what fetch_usage keeps) advise the same."""
    compact = ua.advise(usage_synth.example_day(compact=True), example_inventory())
    for s in advice["services"]:
        c = _svc(compact, s["name"])
        assert (c["status"], c.get("sharing"), c.get("mig_profile"), c.get("gpus"), c.get("replicas")) == \
            (s["status"], s.get("sharing"), s.get("mig_profile"), s.get("gpus"), s.get("replicas"))
        assert c.get("memory_need_mib") == pytest.approx(s.get("memory_need_mib"), rel=1e-3)
    assert compact["windows"] == advice["windows"]


def test_duplicated_time_slice_reporting_reads_as_one_pool():
    dup = ua.advise(usage_synth.example_day(duplicate_shared=True), example_inventory())
    once = ua.advise(usage_synth.example_day(), example_inventory())
    a, b = _svc(dup, "notebooks"), _svc(once, "notebooks")
    assert (a["sharing"], a["replicas"], a["pool_gpus"]) == (b["sharing"], b["replicas"], b["pool_gpus"])
    assert a["memory_need_mib"] == pytest.approx(b["memory_need_mib"], rel=0.05)


def test_too_little_history_is_not_enough_data():
    with pytest.raises(ua.AdviceError, match="not enough data: .* 5.0 days .* at least 14"):
        ua.advise(usage_synth.example_day(days=5), example_inventory())


def test_gaps_give_not_enough_data_and_keep_the_current_entries():
    out = ua.advise(usage_synth.example_day(gap_node="gpu01"), example_inventory())
    assert {s["status"] for s in out["services"]} == {"not_enough_data"}
    assert all("samples missing on gpu01" in s["reason"] for s in out["services"])
    current = {w["name"]: w for w in example_inventory()["gpushare_workloads"]}
    for w in out["proposal"]["workloads"]:
        assert w["sharing"] == current[w["name"]]["sharing"] if "sharing" in current[w["name"]] else True
        assert w.get("memory_gib") == current[w["name"]].get("memory_gib")


def test_a_choice_that_differs_between_halves_is_unstable():
    out = ua.advise(usage_synth.example_day(change_after_day=14), example_inventory())
    speech = _svc(out, "speech-to-text")
    assert speech["status"] == "unstable" and "halves" in speech["reason"]
    entry = next(w for w in out["proposal"]["workloads"] if w["name"] == "speech-to-text")
    assert entry == {"name": "speech-to-text", "team": "production", "kind": "serving", "sharing": "mig",
                     "memory_gib": 20.0}


def test_no_series_no_proposal():
    empty = ua.UsageData(start=0.0, step=300, steps=10, series=[], owners={}, source="http://x")
    with pytest.raises(ua.AdviceError, match="no GPU series"):
        ua.advise(empty, example_inventory())
    nan = usage_synth.example_day(days=15)
    for s in nan.series:
        s.fb_used = None
        s.active = np.full(nan.steps, np.nan)
    with pytest.raises(ua.AdviceError, match="hold no samples"):
        ua.advise(nan, example_inventory())


def test_unknown_namespace_is_reported_not_proposed():
    usage = usage_synth.example_day(days=15)
    for s in usage.series:
        if s.namespace == "training":
            s.namespace = "somebody-else"
    out = ua.advise(usage, example_inventory())
    stray = [s for s in out["services"] if s["namespace"] == "somebody-else"]
    assert stray and all(s["status"] == "unknown_namespace" for s in stray)
    assert _svc(out, "fine-tune")["status"] == "no_data"


def test_buy_with_prices():
    inv = example_inventory()
    inv["gpushare_policy"]["gpu_prices"] = {"h200": 32000, "l40s": 9000, "NVIDIA B200": 45000}
    out = ua.advise(usage_synth.example_day(days=15), inv)
    rows = {r["model"]: r for r in out["buy"]["options"]}
    assert out["buy"]["priced"]
    assert rows["h200-141gb"]["cards"] == 4 and rows["h200-141gb"]["cost"] == 4 * 32000
    assert rows["h200-141gb"]["owned"] == 4 and rows["h200-141gb"]["to_buy"] == 0
    assert rows["l40s"]["cards"] > rows["h200-141gb"]["cards"]         # 93 GiB of vLLM needs 3 L40S
    priced = [r for r in out["buy"]["options"] if "cost" in r]
    assert priced == sorted(priced, key=lambda r: r["cost"])


@pytest.mark.parametrize("prices, path", [
    ({"h2OO": 1000}, "gpushare_policy.gpu_prices.h2OO"),
    ({"h200": -5}, "gpushare_policy.gpu_prices.h200"),
    ({"h200": "lots"}, "gpushare_policy.gpu_prices.h200"),
    ({"h200": float("nan")}, "gpushare_policy.gpu_prices.h200"),
    ([32000], "gpushare_policy.gpu_prices"),
])
def test_bad_prices_are_refused_with_their_path(prices, path):
    inv = example_inventory()
    inv["gpushare_policy"]["gpu_prices"] = prices
    with pytest.raises(PlanInvalid) as err:
        load_inventory(inv)
    assert any(p.path == path for p in err.value.problems), str(err.value)


def test_prices_are_read_by_catalogue_key():
    inv = example_inventory()
    inv["gpushare_policy"]["gpu_prices"] = {"NVIDIA H200": 32000, "l40s": 9000.5}
    assert load_inventory(inv).policy.gpu_prices == (("h200-141gb", 32000.0), ("l40s", 9000.5))


def test_service_names_from_owners():
    assert ua.service_name("ReplicaSet", "vllm-chat-6c9f7d8b5d", "vllm-chat-6c9f7d8b5d-x2k9p") == "vllm-chat"
    assert ua.service_name("StatefulSet", "notebooks", "notebooks-3") == "notebooks"
    assert ua.service_name("Job", "fine-tune-29400012", "fine-tune-29400012-abcde") == "fine-tune"
    assert ua.service_name("Job", "fine-tune-3fa8b2c1", "fine-tune-3fa8b2c1-x7k2p") == "fine-tune"
    assert ua.service_name("Job", "train-v2", "train-v2-x7k2p") == "train-v2"
    assert ua.service_name("Job", "nightly-eval", "nightly-eval-x7k2p") == "nightly-eval"
    assert ua.service_name(None, None, "lonely") == "lonely"


def test_mixed_fleet_inventory_is_advised_without_error():
    """Advice on another inventory's shape: the example day's usage, read against the
    mixed fleet, has no team for its namespaces except production's and never crashes."""
    out = ua.advise(usage_synth.example_day(days=15), load_example("mixed-fleet"))
    assert out["services"] and all(s["status"] in ("ok", "unknown_namespace", "no_data", "not_enough_data",
                                                   "unstable") for s in out["services"])
    assert math.isfinite(out["window"]["days"])
