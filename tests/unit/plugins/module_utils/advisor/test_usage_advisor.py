# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's pure logic: profile choice (property tests on every catalogue model), kind
detection, the example day's proposal, not enough data, stability, windows, what to buy."""

from __future__ import annotations

import math
from fractions import Fraction as F

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

# The oracle: NVIDIA's MIG User Guide, "Supported MIG Profiles"
# (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html), written here
# from its tables, not from the catalogue. Per base profile: fraction of memory, fraction of
# SMs, number of instances available. Every 7-way product (A100, H100, H200, GH200, B200,
# GB200, B300, GB300) has the same six shapes in the same order; only the names change with
# the memory ("For A100-SXM4-80GB, the profile names will change according to the memory
# proportion").
SEVEN_WAY_SHAPES = ((F(1, 8), F(1, 7), 7), (F(2, 8), F(1, 7), 4), (F(2, 8), F(2, 7), 3),
                    (F(4, 8), F(3, 7), 2), (F(4, 8), F(4, 7), 1), (F(1), F(7, 7), 1))
FOUR_WAY_SHAPES = ((F(1, 4), F(1, 4), 4), (F(2, 4), F(2, 4), 2), (F(1), F(4, 4), 1))  # A30, RTX PRO 6000 Blackwell
PUBLISHED_NAMES = {
    "a100-40gb": ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "a100-80gb": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "h100-80gb": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "h100-94gb": ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "h100-96gb": ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    "h200-141gb": ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "gh200-144gb": ("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
    "b200": ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
    "gb200": ("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
    "b300": ("1g.34gb", "1g.67gb", "2g.67gb", "3g.135gb", "4g.135gb", "7g.269gb"),
    "gb300": ("1g.35gb", "1g.70gb", "2g.70gb", "3g.139gb", "4g.139gb", "7g.278gb"),
    "a30": ("1g.6gb", "2g.12gb", "4g.24gb"),
    "rtx-pro-6000": ("1g.24gb", "2g.48gb", "4g.96gb"),
}
PUBLISHED = {key: dict(zip(names, SEVEN_WAY_SHAPES if len(names) == 6 else FOUR_WAY_SHAPES))
             for key, names in PUBLISHED_NAMES.items()}


def published_choice(key: str, memory_mib: float, compute: float) -> str | None:
    """The smallest published profile holding ``memory_mib`` and ``compute`` (a fraction of
    the whole GPU's SMs): least memory fraction (placement), then SM fraction, then usable
    memory. Usable MiB per profile is the catalogue's cited reading (data, not the code
    under test); the SM fraction is the guide's."""
    usable = {p.name: p.memory_mib for p in gpu_catalog.CATALOG[key].base_profiles}
    fitting = [(memory, sms, usable[name], name) for name, (memory, sms, _count) in PUBLISHED.get(key, {}).items()
               if usable[name] >= memory_mib and sms >= F(compute) - F(1, 10 ** 9)]
    return min(fitting)[3] if fitting else None


def test_the_catalogue_matches_the_published_tables():
    assert sorted(PUBLISHED) == MIG_MODELS
    for key, rows in PUBLISHED.items():
        card = gpu_catalog.CATALOG[key]
        assert sorted(p.name for p in card.base_profiles) == sorted(rows), key
        for p in card.base_profiles:
            memory, sms, count = rows[p.name]
            assert (F(p.size, card.mig_grid), p.max_count) == (memory, count), (key, p.name)
            assert F(p.compute_slices, ua.compute_slices_of(card)) == sms, (key, p.name)
            assert p.memory_mib <= int(p.name.split(".")[1][:-2]) * 1024, (key, p.name)  # never more than the name says


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(ALL_MODELS), memory=st.floats(0, 300000, allow_nan=False),
       compute=st.floats(0, 1.2, allow_nan=False))
def test_chosen_profile_is_the_published_smallest_fit(key, memory, compute):
    chosen = ua.choose_profile(gpu_catalog.CATALOG[key], memory, compute)
    assert (chosen.name if chosen else None) == published_choice(key, memory, compute)


@pytest.mark.parametrize("key", MIG_MODELS)
def test_every_base_profile_is_chosen_for_its_own_size(key):
    """Asking for exactly a profile's usable memory and published SM fraction gives that
    profile, or one with the same placement and SMs (1g.10gb and 2g.10gb share 10 GB)."""
    card = gpu_catalog.CATALOG[key]
    for p in card.base_profiles:
        memory, sms, _count = PUBLISHED[key][p.name]
        chosen = ua.choose_profile(card, p.memory_mib, float(sms))
        assert PUBLISHED[key][chosen.name][:2] <= (memory, sms), (p.name, chosen.name)
        assert chosen.name == published_choice(key, p.memory_mib, float(sms))


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
        # The inventory's own words (workloads.yml): isolation full -> whole, hardware -> mig, none -> timeslice.
        entry = current[w["name"]]
        assert w["sharing"] == entry.get("sharing", {"full": "whole", "hardware": "mig", "none": "timeslice"}.get(
            entry.get("isolation"))), (w, entry)
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
