"""MIG geometry and the layout planner, checked against brute force on small instances."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from functools import lru_cache

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigShortfall, MigSolve, plan_mig)

H200 = CATALOG["h200-141gb"]
SMALL_MODELS = ["a100-40gb", "h200-141gb", "a30", "rtx-pro-6000"]


# ----------------------------------------------------------------------------- oracle

@lru_cache(maxsize=None)
def all_packings(model_key: str, names: tuple[str, ...]) -> frozenset:
    """Every multiset of profiles that some non-overlapping packing of the grid holds.

    Walks the grid cell by cell: each cell is left empty or starts an instance whose start
    list contains it. Independent of mig_geometry's search order and pruning.
    """
    model = CATALOG[model_key]
    profiles = [model.profile(n) for n in names]
    found = set()

    def fill(cell: int, chosen: tuple[str, ...]) -> None:
        if cell >= model.mig_grid:
            counts = Counter(chosen)
            if all(c <= model.profile(n).max_count for n, c in counts.items()) and \
                    sum(c for n, c in counts.items() if model.profile(n).media_extensions) <= 1:
                found.add(tuple(sorted(counts.items())))
            return
        fill(cell + 1, chosen)
        for p in profiles:
            if cell in p.starts and cell + p.size <= model.mig_grid:
                fill(cell + p.size, chosen + (p.name,))

    fill(0, ())
    return frozenset(found)


def brute_force_feasible(model, counts: dict[str, int]) -> bool:
    names = tuple(sorted(p.name for p in model.mig_profiles))
    return tuple(sorted((n, c) for n, c in counts.items() if c)) in all_packings(model.key, names)


@lru_cache(maxsize=None)
def oracle_patterns(model_key: str) -> list[dict[str, int]]:
    names = tuple(sorted(p.name for p in CATALOG[model_key].base_profiles))
    return [dict(p) for p in sorted(all_packings(model_key, names))]


def oracle_cost(model, patterns: tuple[dict, ...], needs: list[int]):
    """(GPUs hosting a replica, waste) for the best assignment to these patterns, or None."""
    slices = sorted((model.profile(n).memory_mib, g) for g, p in enumerate(patterns) for n, c in p.items()
                    for _copy in range(c))
    used_gpus, waste = set(), 0
    for need in sorted(needs, reverse=True):
        # Largest need first takes the smallest slice that holds it: optimal on a threshold order.
        fit = next((s for s in slices if s[0] >= need), None)
        if fit is None:
            return None
        slices.remove(fit)
        used_gpus.add(fit[1])
        waste += fit[0] - need
    return len(used_gpus), waste


def oracle(model_key: str, gpus: int, needs: list[int]):
    model = CATALOG[model_key]
    best = None
    for combo in itertools.combinations_with_replacement(range(len(oracle_patterns(model_key))), gpus):
        cost = oracle_cost(model, tuple(oracle_patterns(model_key)[i] for i in combo), needs)
        if cost is not None and (best is None or cost < best):
            best = cost
    return best


def planner_cost(layouts, needs_by_name):
    used = {key for key, layout in layouts.items() if any(s.workload for s in layout.slices)}
    waste = sum(s.memory_mib - needs_by_name[(s.workload, s.replica)]
                for layout in layouts.values() for s in layout.slices if s.workload)
    return len(used), waste


# ----------------------------------------------------------------------------- geometry

def test_two_3g_fit_but_a_3g_at_4_blocks_1g_starts_4_to_6():
    assert mig_geometry.place(H200, {"3g.71gb": 2}) == [("3g.71gb", 0), ("3g.71gb", 4)]
    assert mig_geometry.feasible(H200, {"3g.71gb": 1, "1g.18gb": 4})
    assert not mig_geometry.feasible(H200, {"3g.71gb": 2, "1g.18gb": 1})


def test_counting_slices_is_not_enough():
    # 3 x 2g (6 units) + 2 x 1g (2 units) = 8 units, but 2g never starts at 6 and 1g never at 7.
    assert not mig_geometry.feasible(H200, {"2g.35gb": 3, "1g.18gb": 2})
    assert mig_geometry.feasible(H200, {"2g.35gb": 3, "1g.18gb": 1})
    assert mig_geometry.feasible(H200, {"1g.35gb": 4})
    assert not mig_geometry.feasible(H200, {"1g.18gb": 8})
    assert mig_geometry.feasible(H200, {"1g.18gb": 7})


def test_4g_plus_3g_fits_and_one_media_extension_only():
    assert mig_geometry.feasible(H200, {"4g.71gb": 1, "3g.71gb": 1})
    assert mig_geometry.feasible(H200, {"1g.18gb+me": 1, "1g.18gb": 6})
    a100 = CATALOG["a100-40gb"]
    assert not mig_geometry.feasible(a100, {"1g.5gb+me": 2})


def test_rtx_pro_6000_uses_its_12_unit_grid():
    rtx = CATALOG["rtx-pro-6000"]
    assert mig_geometry.place(rtx, {"2g.48gb": 1, "1g.24gb": 2}) == [("2g.48gb", 0), ("1g.24gb", 6), ("1g.24gb", 9)]
    assert not mig_geometry.feasible(rtx, {"2g.48gb": 2, "1g.24gb": 1})


@settings(max_examples=150, deadline=None)
@given(model_key=st.sampled_from(SMALL_MODELS), data=st.data())
def test_place_agrees_with_brute_force(model_key, data):
    model = CATALOG[model_key]
    names = [p.name for p in model.mig_profiles][:7]
    counts = {n: data.draw(st.integers(0, 3), label=n) for n in names}
    counts = {n: c for n, c in counts.items() if c}
    assume(sum(counts.values()) <= 8)
    placement = mig_geometry.place(model, counts)
    assert (placement is not None) == brute_force_feasible(model, counts)
    if placement:
        cells = [c for name, start in placement for c in range(start, start + model.profile(name).size)]
        assert len(cells) == len(set(cells)) and max(cells) < model.mig_grid
        assert all(start in model.profile(name).starts for name, start in placement)


def test_patterns_are_exactly_the_feasible_multisets():
    for key in SMALL_MODELS:
        names = tuple(p.name for p in CATALOG[key].base_profiles)
        mine = {tuple(sorted(p)) for p in mig_geometry.patterns(key, names)}
        theirs = {tuple(sorted(p.items())) for p in oracle_patterns(key) if p}
        assert len(theirs) > 5
        assert mine == theirs, key


# ----------------------------------------------------------------------------- planner

def demands_for(needs, model_key):
    return [MigDemand("svc%d" % i, "team", 0, need, (model_key,)) for i, need in enumerate(needs)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_key=st.sampled_from(SMALL_MODELS), gpus=st.integers(1, 2), data=st.data())
def test_planner_equals_brute_force_optimum(model_key, gpus, data):
    model = CATALOG[model_key]
    memories = sorted({p.memory_mib for p in model.base_profiles})
    needs = data.draw(st.lists(st.sampled_from(memories).flatmap(lambda m: st.integers(max(1, m - 4096), m)),
                               min_size=1, max_size=6))
    candidates = [MigCandidate("n1", i, model_key, True) for i in range(gpus)]
    best = oracle(model_key, gpus, needs)
    demands = demands_for(needs, model_key)
    try:
        layouts = plan_mig(demands, candidates, carve_leftover=False)
    except MigShortfall:
        assert best is None
        return
    assert best is not None
    # Every layout is placement-feasible and every replica got a slice that holds it.
    for layout in layouts.values():
        assert brute_force_feasible(model, layout.counts())
    served = {(s.workload, s.replica): s for layout in layouts.values() for s in layout.slices if s.workload}
    assert len(served) == len(demands)
    for d in demands:
        assert served[(d.workload, d.replica)].memory_mib >= d.need_mib
    assert planner_cost(layouts, {(d.workload, d.replica): d.need_mib for d in demands}) == best


def test_fewest_auto_gpus_are_converted_and_declared_ones_stay_mig():
    candidates = [MigCandidate("n1", 0, "h200-141gb", True)] + [
        MigCandidate("n1", i, "h200-141gb", False) for i in (1, 2, 3)]
    needs = [70000] * 3     # three 3g/4g-sized services: two on one GPU, one more GPU
    layouts = plan_mig(demands_for(needs, "h200-141gb"), candidates, carve_leftover=False)
    assert sorted(layouts) == [("n1", 0), ("n1", 1)]


def test_leftover_is_carved_into_useful_profiles_or_left():
    candidates = [MigCandidate("n1", 0, "h200-141gb", True, team="ops")]
    demands = demands_for([10000], "h200-141gb")
    carved = plan_mig(demands, candidates, carve_leftover=True)[("n1", 0)]
    left = plan_mig(demands, candidates, carve_leftover=False)[("n1", 0)]
    assert left.counts() == {"1g.18gb": 1}
    assert sum(s.size for s in carved.slices) == 7    # slot 7 cannot hold a 1g next to the others
    assert all(s.team == "ops" for s in carved.slices if not s.workload)
    assert brute_force_feasible(H200, carved.counts())


def test_pinned_profile_is_honoured():
    d = [MigDemand("ocr", "t", 0, 0, ("h200-141gb",), profile="2g.35gb")]
    layout = plan_mig(d, [MigCandidate("n1", 0, "h200-141gb", True)], carve_leftover=False)[("n1", 0)]
    assert layout.counts() == {"2g.35gb": 1}


def test_pinned_and_memory_only_replicas_share_slices_of_one_size():
    # 2g.35gb and 1g.35gb hold the same memory: the pinned replicas must get 2g.35gb, the
    # other one either (on one GPU only the 1g.35gb is left for it).
    d = [MigDemand("ocr", "t", r, 0, ("h200-141gb",), profile="2g.35gb") for r in range(3)]
    d.append(MigDemand("chat", "t", 0, 30000, ("h200-141gb",)))
    one = plan_mig(d, [MigCandidate("n1", 0, "h200-141gb", True)], carve_leftover=False)[("n1", 0)]
    assert {(s.workload, s.replica): s.profile for s in one.slices} == {
        ("ocr", 0): "2g.35gb", ("ocr", 1): "2g.35gb", ("ocr", 2): "2g.35gb", ("chat", 0): "1g.35gb"}
    # A pinned media-extension slice does not fit next to them: a second GPU, pins kept.
    d.append(MigDemand("asr", "t", 0, 0, ("h200-141gb",), "1g.18gb+me"))
    two = plan_mig(d, [MigCandidate("n1", i, "h200-141gb", True) for i in range(2)], carve_leftover=False)
    slices = {(s.workload, s.replica): s for layout in two.values() for s in layout.slices}
    assert len(two) == 2 and len(slices) == 5 and slices[("asr", 0)].profile == "1g.18gb+me"
    assert all(slices[("ocr", r)].profile == "2g.35gb" for r in range(3)) and slices[("chat", 0)].memory_mib >= 30000


def test_the_same_services_get_the_same_profiles_whatever_else_is_allowed():
    # Day and night states differ in whether the full profile is allowed (time-slicing via
    # MIG forbids it): a GPU whose services did not change must not be re-cut.
    d = [MigDemand("stt", "t", 0, 30000, ("h200-141gb",)), MigDemand("big", "t", 0, 60000, ("h200-141gb",))]
    d += [MigDemand("emb", "t", r, 9000, ("h200-141gb",)) for r in range(2)]
    day = plan_mig(d, [MigCandidate("n1", 1, "h200-141gb", True, forbidden=("7g.141gb",))])
    night = plan_mig(d, [MigCandidate("n1", 1, "h200-141gb", True)])
    assert day == night
    assert {s.workload: s.profile for s in day[("n1", 1)].slices if s.workload} == {
        "stt": "1g.35gb", "big": "3g.71gb", "emb": "1g.18gb"}


def test_fixed_layout_is_used_as_given():
    fixed = MigCandidate("n1", 0, "h200-141gb", True, layout=(("3g.71gb", 2),))
    layouts = plan_mig(demands_for([60000, 60000], "h200-141gb"), [fixed], carve_leftover=True)
    assert layouts[("n1", 0)].counts() == {"3g.71gb": 2}
    assert all(s.workload for s in layouts[("n1", 0)].slices)


def test_shortfall_says_what_would_fit():
    try:
        plan_mig(demands_for([140000, 140000], "h200-141gb"), [MigCandidate("n1", 0, "h200-141gb", True)])
    except MigShortfall as err:
        text = str(err)
        # In GiB, as memory_gib is written: 140000 MiB / 1024 = 136.72 GiB.
        assert "2 replica(s) of svc0, svc1 need a slice with at least 136.72 GiB on h200-141gb" in text
        assert "h200-141gb: 1 GPU(s) free for MIG" in text and "1 x 7g.141gb" in text
    else:
        raise AssertionError("expected a shortfall")


def test_fleet_scale_is_one_small_programme():
    # 600 GPUs and 2,000 replicas of 40 distinct sizes (1- and 2-slot slices): one small
    # programme, because replicas that fit the same slices are one class.
    candidates = [MigCandidate("n%03d" % (i // 8), i % 8, "h200-141gb", i % 8 < 2) for i in range(600)]
    needs = [5000 + (i % 40) * 700 for i in range(2000)]
    layouts = plan_mig(demands_for(needs, "h200-141gb"), candidates, carve_leftover=False)
    served = sum(1 for layout in layouts.values() for s in layout.slices if s.workload)
    assert served == 2000
    for layout in layouts.values():
        assert mig_geometry.feasible(H200, layout.counts())


# ----------------------------------------------------------------------------- solver status and size

MIXED = ["h200-141gb", "a100-80gb", "a30"]


def mixed_fleet(gpus: int, replicas: int, seed: int = 3):
    """Servers of 8 GPUs (2 declared MIG, 6 auto) in turn of three models; replicas of many
    sizes, two in three allowed on any of the models."""
    rng = random.Random(seed)
    candidates = [MigCandidate("n%03d" % (i // 8), i % 8, MIXED[(i // 8) % 3], i % 8 < 2) for i in range(gpus)]
    demands = [MigDemand("svc%04d" % i, "team", 0, rng.randint(1000, 40000),
                         tuple(MIXED) if i % 3 else (MIXED[i % 2],)) for i in range(replicas)]
    return candidates, demands


def assert_every_replica_served(layouts, demands):
    served = {(s.workload, s.replica): (layout, s) for layout in layouts.values() for s in layout.slices if s.workload}
    assert len(served) == len(demands)
    for d in demands:
        layout, s = served[(d.workload, d.replica)]
        assert s.memory_mib >= d.need_mib and layout.model in d.models and s.profile == (d.profile or s.profile)
    for layout in layouts.values():
        assert mig_geometry.feasible(CATALOG[layout.model], layout.counts())


def test_the_same_inventory_gives_the_same_layouts():
    candidates, demands = mixed_fleet(240, 500)
    first, second = MigSolve(), MigSolve()
    one = plan_mig(demands, candidates, solve=first)
    two = plan_mig(demands, candidates, solve=second)
    assert one == two
    assert first.exact and first.as_dict() == second.as_dict()
    # An exact solve says nothing about time: plan.json must not change between runs.
    assert "seconds" not in first.as_dict() and mig_planner.summary_line(first.as_dict()) is None
    assert [s["status"] for s in first.stages] == ["optimal"] * 3
    assert_every_replica_served(one, demands)


def test_thousands_of_sizes_are_a_handful_of_classes():
    # 3,000 distinct needs on one model are as many classes as the model has slice sizes
    # (4 on an H200: 1g.18gb, 1g.35gb/2g.35gb, 3g.71gb/4g.71gb, 7g.141gb).
    memories = {p.memory_mib for p in H200.base_profiles}
    candidates = [MigCandidate("n%03d" % (i // 8), i % 8, "h200-141gb", False) for i in range(2400)]
    demands = demands_for([1000 + i * (max(memories) - 1000) // 3000 for i in range(3000)], "h200-141gb")
    assert len({d.need_mib for d in demands}) == 3000
    solve = MigSolve()
    layouts = plan_mig(demands, candidates, carve_leftover=False, solve=solve)
    assert solve.classes == len(memories) == 4 and solve.exact
    assert_every_replica_served(layouts, demands)


def test_a_time_limited_solve_keeps_a_layout_and_says_it_is_not_exact():
    candidates, demands = mixed_fleet(240, 500)
    solve = MigSolve()
    layouts = plan_mig(demands, candidates, time_limit=1e-9, solve=solve)
    assert_every_replica_served(layouts, demands)
    assert not solve.exact and "time limit" in [s["status"] for s in solve.stages]
    record = solve.as_dict()
    assert record["exact"] is False and "seconds" in record and record["time_limit_s"] == 1e-9
    line = mig_planner.summary_line(record, " inside window night")
    assert line.startswith("MIG layout inside window night: best found in") and "not proven optimal" in line


def test_layouts_are_cut_from_whole_gpus_when_the_fast_path_cannot_be(monkeypatch):
    # The fast path solves with fractional GPUs per pattern and then cuts whole GPUs; were
    # that impossible, the programme is solved again with whole GPUs: same optimum.
    candidates, demands = mixed_fleet(96, 200)
    fast = MigSolve()
    plan_mig(demands, candidates, solve=fast)
    monkeypatch.setattr(mig_planner._Programme, "whole_gpus", refuse_once(mig_planner._Programme.whole_gpus))
    again = MigSolve()
    layouts = plan_mig(demands, candidates, solve=again)
    assert again.whole_patterns and not fast.whole_patterns
    assert again.exact and again.stages == fast.stages
    assert_every_replica_served(layouts, demands)


def refuse_once(method):
    calls = []

    def wrapper(self, values):
        calls.append(1)
        return None if len(calls) == 1 else method(self, values)
    return wrapper


def test_no_gpu_that_can_hold_a_replica_is_a_shortfall_not_a_crash():
    too_big = demands_for([200000], "h200-141gb")
    for demands, candidates in [(too_big, [MigCandidate("n1", 0, "h200-141gb", True)]),
                                (demands_for([1000], "h200-141gb"), []),
                                (demands_for([1000], "a30"), [MigCandidate("n1", 0, "h200-141gb", True)])]:
        try:
            plan_mig(demands, candidates)
        except MigShortfall as err:
            assert "no GPU that may be cut with MIG has a slice that holds these replicas" in str(err)
            assert "1 replica(s) of svc0" in str(err)
        else:
            raise AssertionError("expected a shortfall")
